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
  std::string parquet_dir;
  uint64_t group_rows = 131072;
  app.add_option("--rows", rows)->required();
  app.add_option("--features", features)->required();
  app.add_option("--shards", shards);
  app.add_option("--seed", seed);
  app.add_option("--out", out, "folder for part-*.trs")->required();
  app.add_option("--npy", npy_prefix, "also write PREFIX.X.npy and PREFIX.y.npy");
  app.add_option("--parquet", parquet_dir, "also write the same shards as Parquet files in this folder");
  app.add_option("--row-group", group_rows, "rows per Parquet row group (default 131072)")->check(CLI::PositiveNumber);
  CLI11_PARSE(app, argc, argv);
  try {
    const auto table = trainrt::testdata::make_table(rows, features, seed);
    trainrt::testdata::write_shards(out, table, shards, seed);
    if (!parquet_dir.empty()) trainrt::testdata::write_parquet_shards(parquet_dir, table, shards, group_rows);
    if (!npy_prefix.empty()) trainrt::testdata::write_npy(npy_prefix + ".X.npy", npy_prefix + ".y.npy", table);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "trainrt-testdata: %s\n", e.what());
    return 1;
  }
  return 0;
}
