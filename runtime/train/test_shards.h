#pragma once
// Writes native shards for tests and benchmarks, until `trainrt datagen` writes them: a synthetic
// binary classification table (labels from a fixed linear rule plus noise, so training learns
// something) laid out exactly as shard_format.h says.
#include <cstdint>
#include <string>
#include <vector>

#include "formats/shard_format.h"

namespace trainrt::testdata {

/// A fresh folder under $TMPDIR, removed with everything in it on destruction.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }
  std::string operator/(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

/// A whole table in memory: rows x features float32 row-major, and one label per row.
struct Table {
  uint64_t rows = 0;
  uint32_t features = 0;
  std::vector<float> x;
  std::vector<float> y;
};

/// The same seed gives the same table; row i does not depend on how the table is split.
Table make_table(uint64_t rows, uint32_t features, uint64_t seed);

/// Writes rows [first, first + rows) of `table` as one shard file at PATH (header + payload).
void write_shard(const std::string& path, const Table& table, uint64_t first, uint64_t rows, uint32_t index,
                 uint32_t count, uint64_t seed);

/// The same files as Parquet (`part-NNNNN-of-NNNNN.parquet`: columns f0.. and label, trainrt's
/// writer, row groups of `group_rows` rows); returns their paths.
std::vector<std::string> write_parquet_shards(const std::string& dir, const Table& table, uint32_t shards,
                                              uint64_t group_rows);

/// Splits `table` into `shards` files `part-NNNNN-of-NNNNN.trs` in DIR (created if missing); returns their paths.
std::vector<std::string> write_shards(const std::string& dir, const Table& table, uint32_t shards, uint64_t seed);

/// Writes `table` as NumPy .npy files: X_PATH (float32 rows x features) and Y_PATH (float32 rows).
void write_npy(const std::string& x_path, const std::string& y_path, const Table& table);

}  // namespace trainrt::testdata
