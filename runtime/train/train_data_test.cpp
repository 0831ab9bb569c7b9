#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "train/test_shards.h"
#include "train/train_data.h"

using namespace trainrt;

namespace {

std::vector<char> train_model(const TrainData& d, int rounds) {
  xgb::Booster b({d.train.get()});
  for (const auto& [k, v] : std::vector<std::pair<std::string, std::string>>{
           {"tree_method", "hist"}, {"nthread", "2"}, {"objective", "binary:logistic"}, {"max_depth", "4"}}) {
    b.set_param(k, v);
  }
  for (int i = 0; i < rounds; ++i) b.update(i, d.train);
  return b.save();
}

}  // namespace

TEST_CASE("shard i goes to rank i % world size") {
  const std::vector<std::string> all{"a", "b", "c", "d", "e"};
  CHECK(shards_of_rank(all, 0, 1) == all);
  CHECK(shards_of_rank(all, 0, 2) == std::vector<std::string>{"a", "c", "e"});
  CHECK(shards_of_rank(all, 1, 2) == std::vector<std::string>{"b", "d"});
  CHECK(shards_of_rank(all, 2, 3) == std::vector<std::string>{"c"});
}

TEST_CASE("rows split into batches, the last fraction of each shard held out") {
  testdata::TempDir dir;
  const auto table = testdata::make_table(1000, 3, 2);
  testdata::write_shards(dir.path(), table, 2, 2);
  const auto shards = open_rank_shards(list_shard_files(dir.path()), true, 2);
  CHECK(shards.rows == 1000);
  CHECK(shards.features == 3);
  std::vector<RowRange> train;
  std::vector<RowRange> eval;
  split_rows(shards, 0.1, 200, train, eval);
  // 450 training rows per shard in batches of 200, then 50 held out
  REQUIRE(train.size() == 6);
  CHECK(train[0].begin == 0);
  CHECK(train[2].begin == 400);
  CHECK(train[2].end == 450);
  CHECK(train[3].shard == &shards.shards[1]);
  REQUIRE(eval.size() == 2);
  CHECK(eval[0].begin == 450);
  CHECK(eval[0].end == 500);
  const auto counts = count_rows(shards, 0.1);
  CHECK(counts.train == 900);
  CHECK(counts.eval == 100);
  CHECK(count_rows(shards, 0).eval == 0);
}

TEST_CASE("shards must agree on the number of features") {
  testdata::TempDir dir;
  testdata::write_shard(dir / "part-00000-of-00002.trs", testdata::make_table(10, 3, 1), 0, 10, 0, 2, 1);
  testdata::write_shard(dir / "part-00001-of-00002.trs", testdata::make_table(10, 4, 1), 0, 10, 1, 2, 1);
  CHECK_THROWS_WITH_AS(open_rank_shards(list_shard_files(dir.path()), true, 1), doctest::Contains("features"),
                       ShardError);
}

TEST_CASE("the zero-copy QuantileDMatrix trains the same model as a plain DMatrix") {
  testdata::TempDir dir;
  const auto table = testdata::make_table(3000, 6, 5);
  testdata::write_shards(dir.path(), table, 3, 5);
  const auto shards = open_rank_shards(list_shard_files(dir.path()), true, 2);

  DataOptions q;
  q.threads = 2;
  const TrainData quantile = build_train_data(shards, q);
  CHECK(quantile.train_rows == 3000);
  CHECK(quantile.train.rows() == 3000);
  CHECK_FALSE(quantile.eval);

  DataOptions d = q;
  d.quantile = false;
  const TrainData dense = build_train_data(shards, d);
  CHECK(dense.train.rows() == 3000);
  CHECK(train_model(quantile, 5) == train_model(dense, 5));

  DataOptions e = q;
  e.eval_fraction = 0.2;
  const TrainData held = build_train_data(shards, e);
  CHECK(held.train.rows() == 2400);
  CHECK(held.eval.rows() == 600);
}

TEST_CASE("a folder missing a shard is refused from the headers alone, naming a file") {
  testdata::TempDir dir;
  const auto table = testdata::make_table(900, 3, 2);
  testdata::write_shards(dir.path(), table, 3, 2);
  auto all = list_shard_files(dir.path());
  REQUIRE(all.size() == 3);
  CHECK_NOTHROW(check_shard_set(open_rank_shards(all, false, 1), all, 0, 1));
  for (int rank = 0; rank < 2; ++rank)
    CHECK_NOTHROW(check_shard_set(open_rank_shards(shards_of_rank(all, rank, 2), false, 1), all, rank, 2));
  for (size_t lost : {size_t{0}, size_t{2}}) {  // the first or the last shard gone
    auto rest = all;
    rest.erase(rest.begin() + static_cast<std::ptrdiff_t>(lost));
    CAPTURE(lost);
    CHECK_THROWS_WITH_AS(check_shard_set(open_rank_shards(rest, false, 1), rest, 0, 1),
                         doctest::Contains("the table is incomplete"), ShardError);
    CHECK_THROWS_WITH_AS(check_shard_set(open_rank_shards(rest, false, 1), rest, 0, 1),
                         doctest::Contains("part-0000"), ShardError);
  }
}
