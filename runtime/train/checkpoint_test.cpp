#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "train/checkpoint.h"
#include "train/test_shards.h"
#include "train/xgb.h"

using namespace trainrt;
namespace fs = std::filesystem;

namespace {

/// Models after 1..n rounds of a tiny training run, as UBJ bytes.
std::vector<std::vector<char>> models(int n) {
  const auto t = testdata::make_table(300, 5, 4);
  DMatrixHandle h = nullptr;
  xgb::check(XGDMatrixCreateFromMat(t.x.data(), t.rows, t.features, -1e30f, &h), "create");
  xgb::DMatrix d(h);
  xgb::check(XGDMatrixSetFloatInfo(d.get(), "label", t.y.data(), t.rows), "label");
  xgb::Booster b({d.get()});
  b.set_param("tree_method", "hist");
  b.set_param("nthread", "1");
  std::vector<std::vector<char>> out;
  for (int i = 0; i < n; ++i) {
    b.update(i, d);
    out.push_back(b.save());
  }
  return out;
}

std::vector<std::string> names_in(const std::string& dir) {
  std::vector<std::string> out;
  for (const auto& e : fs::directory_iterator(dir)) out.push_back(e.path().filename().string());
  std::sort(out.begin(), out.end());
  return out;
}

void write_raw(const std::string& path, const std::vector<char>& bytes) {
  std::ofstream(path, std::ios::binary).write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

}  // namespace

TEST_CASE("checkpoint names") {
  CHECK(checkpoint_name(40) == "ckpt-000040.ubj");
  CHECK(checkpoint_name(1234567) == "ckpt-1234567.ubj");
  CHECK(checkpoint_rounds("ckpt-000040.ubj") == 40);
  CHECK(checkpoint_rounds("ckpt-1234567.ubj") == 1234567);
  CHECK_FALSE(checkpoint_rounds("ckpt-000040.ubj.tmp"));
  CHECK_FALSE(checkpoint_rounds("ckpt-40.ubj"));
  CHECK_FALSE(checkpoint_rounds("ckpt-00004x.ubj"));
  CHECK_FALSE(checkpoint_rounds("model.ubj"));
}

TEST_CASE("saving keeps the newest two, written atomically") {
  testdata::TempDir tmp;
  const std::string dir = tmp / "checkpoints";
  const auto m = models(6);
  save_checkpoint(dir, 2, m[1]);
  save_checkpoint(dir, 4, m[3]);
  CHECK(names_in(dir) == std::vector<std::string>{"ckpt-000002.ubj", "ckpt-000004.ubj"});
  save_checkpoint(dir, 6, m[5]);
  CHECK(names_in(dir) == std::vector<std::string>{"ckpt-000004.ubj", "ckpt-000006.ubj"});
  const auto listed = list_checkpoints(dir);
  REQUIRE(listed.size() == 2);
  CHECK(listed[0].rounds == 6);
  CHECK(listed[1].rounds == 4);
  CHECK(fs::file_size(listed[0].path) == m[5].size());
  CHECK(list_checkpoints(tmp / "missing").empty());
}

TEST_CASE("resume picks the newest checkpoint that loads, skipping torn and corrupt ones") {
  testdata::TempDir tmp;
  const std::string dir = tmp.path();
  const auto m = models(10);
  std::vector<std::string> warnings;
  auto warn = [&](const std::string& w) { warnings.push_back(w); };

  SUBCASE("nothing to resume from") {
    CHECK_FALSE(select_checkpoint(dir, xgb::model_problem, warn));
    CHECK(warnings.empty());
  }
  SUBCASE("the newest valid one") {
    save_checkpoint(dir, 4, m[3]);
    save_checkpoint(dir, 8, m[7]);
    const auto found = select_checkpoint(dir, xgb::model_problem, warn);
    REQUIRE(found);
    CHECK(found->rounds == 8);
    CHECK(found->bytes == m[7]);
    CHECK(warnings.empty());
  }
  SUBCASE("torn, empty, garbage and misnamed checkpoints are skipped with a warning") {
    save_checkpoint(dir, 4, m[3], 10);
    save_checkpoint(dir, 6, m[5], 10);
    // a torn write of round 10 that somehow got its final name
    write_raw(dir + "/ckpt-000010.ubj", std::vector<char>(m[9].begin(), m[9].begin() + m[9].size() / 2));
    write_raw(dir + "/ckpt-000009.ubj", {});
    write_raw(dir + "/ckpt-000008.ubj", std::vector<char>(100, 'x'));
    write_raw(dir + "/ckpt-000007.ubj", m[2]);  // 3 rounds under a name that says 7
    write_raw(dir + "/ckpt-000012.ubj.tmp", m[9]);  // an unfinished write is never considered
    const auto found = select_checkpoint(dir, xgb::model_problem, warn);
    REQUIRE(found);
    CHECK(found->rounds == 6);
    CHECK(found->bytes == m[5]);
    REQUIRE(warnings.size() == 4);
    CHECK(warnings[0].find("ckpt-000010.ubj") != std::string::npos);
    CHECK(warnings[1].find("ckpt-000009.ubj: is empty") != std::string::npos);
    CHECK(warnings[2].find("ckpt-000008.ubj") != std::string::npos);
    CHECK(warnings[3].find("holds 3 rounds, its name says 7") != std::string::npos);
  }
  SUBCASE("when none loads, start over") {
    write_raw(dir + "/ckpt-000005.ubj", std::vector<char>(10, '{'));
    CHECK_FALSE(select_checkpoint(dir, xgb::model_problem, warn));
    CHECK(warnings.size() == 1);
  }
}

TEST_CASE("stale temporaries are removed, finished files kept") {
  testdata::TempDir tmp;
  write_raw(tmp / "ckpt-000005.ubj.1234.tmp", {'a'});
  write_raw(tmp / "model.ubj.tmp", {'a'});
  write_raw(tmp / "ckpt-000004.ubj", {'a'});
  remove_stale_temporaries(tmp.path());
  CHECK(names_in(tmp.path()) == std::vector<std::string>{"ckpt-000004.ubj"});
  remove_stale_temporaries(tmp / "missing");
}

TEST_CASE("write_file_atomically replaces the whole file") {
  testdata::TempDir tmp;
  const std::string path = tmp / "model.ubj";
  write_file_atomically(path, std::vector<char>(1000, 'a'));
  write_file_atomically(path, std::vector<char>{'b', 'c'});
  CHECK(fs::file_size(path) == 2);
  CHECK(names_in(tmp.path()) == std::vector<std::string>{"model.ubj"});
  CHECK_THROWS(write_file_atomically(tmp / "no/such/dir/model.ubj", std::vector<char>{'x'}));
}
