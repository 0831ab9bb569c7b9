#pragma once
// Reading native shards (shard_format.h) without copying them: each file is mapped read-only, its
// header checked against the file's size and its payload against payload_fnv, and the feature
// block handed out as a pointer into the mapping.
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "formats/shard_format.h"

namespace trainrt {

/// A shard that cannot be used: unreadable, a bad header, a size that disagrees, a bad checksum.
struct ShardError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/// What is wrong with a header for a file of `file_size` bytes; empty when nothing is.
std::string shard_header_problem(const ShardHeader& header, uint64_t file_size);

/// One shard mapped read-only. Move-only; unmaps on destruction.
class MappedShard {
 public:
  /// Maps PATH and checks its header; with `verify_payload`, also its payload checksum.
  /// Throws ShardError naming the file and what is wrong.
  static MappedShard open(const std::string& path, bool verify_payload = true);

  MappedShard(MappedShard&& other) noexcept;
  MappedShard& operator=(MappedShard&& other) noexcept;
  MappedShard(const MappedShard&) = delete;
  MappedShard& operator=(const MappedShard&) = delete;
  ~MappedShard();

  const std::string& path() const { return path_; }
  const ShardHeader& header() const { return *static_cast<const ShardHeader*>(map_); }
  uint64_t rows() const { return header().rows; }
  uint32_t features() const { return header().features; }
  /// rows x features float32, row-major.
  const float* feature_data() const;
  const float* label_data() const;

  /// Recomputes the payload checksum and throws ShardError when it differs from the header's.
  /// Pages are dropped from memory as they are hashed, so this does not raise the resident set.
  void verify_payload() const;

  /// Drops the pages of rows [begin, end) from this process's resident set; they stay in the page
  /// cache and are mapped in again on the next touch. Lets a reader stream over a shard larger
  /// than it wants resident.
  void release_rows(uint64_t begin, uint64_t end) const;
  /// Drops every page of the file from this process's resident set.
  void release_all() const;

 private:
  MappedShard(std::string path, void* map, size_t size) : path_(std::move(path)), map_(map), size_(size) {}
  void release_bytes(size_t begin, size_t end) const;

  std::string path_;
  void* map_ = nullptr;
  size_t size_ = 0;
};

/// The native shards in DIR (`part-*.trs`), sorted by name, which is row order.
/// Throws ShardError when DIR cannot be read.
std::vector<std::string> list_shard_files(const std::string& dir);

/// The Parquet files in DIR (`*.parquet`, not hidden: names starting with '.' or '_' are skipped,
/// as Spark's and Hive's readers do), sorted by name. Throws ShardError when DIR cannot be read.
std::vector<std::string> list_parquet_files(const std::string& dir);

}  // namespace trainrt
