// trainrt-testdata: writes a synthetic classification table as native shards (and optionally as
// .npy files for Python peers). For tests and benchmarks until `trainrt datagen` is there.
#include <CLI/CLI.hpp>

#include <cstdio>
#include <exception>

#include "train/test_shards.h"

int main(int argc, char** argv) {
  CLI::App app{"trainrt-testdata: write synthetic native shards for the training tests and benchmark"};
  uint64_t rows = 0;
  uint32_t features = 0;
  uint32_t shards = 1;
  uint64_t seed = 1;
  std::string out;
  std::string npy_prefix;
  app.add_option("--rows", rows)->required();
  app.add_option("--features", features)->required();
  app.add_option("--shards", shards);
  app.add_option("--seed", seed);
  app.add_option("--out", out, "folder for part-*.trs")->required();
  app.add_option("--npy", npy_prefix, "also write PREFIX.X.npy and PREFIX.y.npy");
  CLI11_PARSE(app, argc, argv);
  try {
    const auto table = trainrt::testdata::make_table(rows, features, seed);
    trainrt::testdata::write_shards(out, table, shards, seed);
    if (!npy_prefix.empty()) trainrt::testdata::write_npy(npy_prefix + ".X.npy", npy_prefix + ".y.npy", table);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "trainrt-testdata: %s\n", e.what());
    return 1;
  }
  return 0;
}
