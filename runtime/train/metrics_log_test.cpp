#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

#include "train/metrics_log.h"
#include "train/test_shards.h"

using namespace trainrt;

namespace {

std::string read(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

RoundRecord record(int round) {
  RoundRecord r;
  r.round = round;
  r.elapsed = round * 0.5;
  r.metrics = {{"train-logloss", 1.0 / round}};
  r.rows = 20000;
  r.ranks = 2;
  return r;
}

}  // namespace

TEST_CASE("XGBoost's evaluation line is parsed") {
  const auto m = parse_eval_line("[3]\ttrain-logloss:0.123456\teval-logloss:0.2\teval-auc:0.91");
  REQUIRE(m.size() == 3);
  CHECK(m[0].first == "train-logloss");
  CHECK(m[0].second == doctest::Approx(0.123456));
  CHECK(m[2].first == "eval-auc");
  CHECK(m[2].second == doctest::Approx(0.91));
  // metric names may carry '@' and '-', values may be in exponent form or nan
  const auto n = parse_eval_line("[0]\ttrain-ndcg@5-:1e-05\ttrain-rmse:nan");
  REQUIRE(n.size() == 2);
  CHECK(n[0].first == "train-ndcg@5-");
  CHECK(n[0].second == doctest::Approx(1e-05));
  CHECK(parse_eval_line("[0]").empty());
  CHECK(parse_eval_line("").empty());
}

TEST_CASE("one JSON object per line") {
  const std::string line = format_metrics_line(record(4));
  CHECK(line == R"({"round":4,"elapsed_s":2.0,"metrics":{"train-logloss":0.25},"rows":20000,"ranks":2})" "\n");
  auto r = record(1);
  r.metrics = {{"train-rmse", std::nan("")}};
  r.elapsed = 1.23456;
  CHECK(format_metrics_line(r).find(R"("elapsed_s":1.235,"metrics":{"train-rmse":null})") != std::string::npos);
}

TEST_CASE("resuming truncates the lines past the resumed round") {
  testdata::TempDir tmp;
  const std::string path = tmp / "metrics.jsonl";
  {
    MetricsLog log(path);
    for (int i = 1; i <= 7; ++i) log.append(record(i));
  }
  std::ofstream(path, std::ios::app) << R"({"round":8,"elapsed_s":4.0,"met)";  // killed mid-write

  SUBCASE("back to a checkpoint") {
    CHECK(truncate_metrics(path, 5) == doctest::Approx(2.5));
    const std::string text = read(path);
    CHECK(std::count(text.begin(), text.end(), '\n') == 5);
    CHECK(text.ends_with(format_metrics_line(record(5))));
    {
      MetricsLog log(path);
      log.append(record(6));
    }
    CHECK(read(path).ends_with(format_metrics_line(record(6))));
    CHECK(nlohmann::json::parse(format_metrics_line(record(6)))["round"] == 6);
  }
  SUBCASE("only the torn line goes when every whole line is kept") {
    CHECK(truncate_metrics(path, 7) == doctest::Approx(3.5));
    CHECK(read(path).ends_with(format_metrics_line(record(7))));
  }
  SUBCASE("from scratch") {
    CHECK(truncate_metrics(path, 0) == 0);
    CHECK(read(path).empty());
  }
  SUBCASE("no file yet") { CHECK(truncate_metrics(tmp / "none.jsonl", 3) == 0); }
}
