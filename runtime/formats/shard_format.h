#pragma once
// trainrt's native shard format: one file per shard, written to a temporary name and renamed
// when complete. Row-major float32 features then float32 labels, so a reader can map the file and
// hand XGBoost the feature block without converting it.
//
//   offset 0   ShardHeader (64 bytes, little-endian)
//   offset 64  features: rows x features float32, row-major
//   then       labels: rows float32
#include <cstdint>
#include <string>

#include "common/fnv.h"

namespace trainrt {

inline constexpr char kShardMagic[8] = {'T', 'R', 'N', 'R', 'T', 'S', 'H', '1'};
inline constexpr uint32_t kShardVersion = 1;

struct ShardHeader {
  char magic[8];
  uint32_t version;
  uint32_t features;
  uint64_t rows;         ///< rows in this shard
  uint64_t first_row;    ///< global index of the shard's first row in the logical table
  uint64_t total_rows;   ///< rows in the whole table
  uint64_t seed;
  uint32_t shard_index, shard_count;
  uint64_t payload_fnv;  ///< payload_fnv() of everything after the header: a torn or altered file fails it
};
static_assert(sizeof(ShardHeader) == 64, "the header is 64 bytes on disk");

/// "part-00003-of-00007.trs" (native) or ".parquet": shard names sort in row order.
std::string shard_file_name(uint32_t index, uint32_t count, const std::string& extension);

/// Index of a shard's first row: shard i of m over n rows starts at i*(n/m) + min(i, n%m), so the
/// first n%m shards hold one row more than the others.
uint64_t shard_first_row(uint64_t total_rows, uint32_t index, uint32_t count);
uint64_t shard_row_count(uint64_t total_rows, uint32_t index, uint32_t count);

/// File size of a native shard.
uint64_t native_shard_bytes(uint64_t rows, uint32_t features);

/// The payload checksum: the FNV-1a 64 step (common/fnv.h) run over the payload read as
/// little-endian 64-bit words, in four interleaved lanes (word i feeds lane i % 4; a last partial
/// word is zero-padded), the four lane hashes then folded by the same step in lane order. Word-wise
/// and four lanes wide rather than byte-wise: about 20 GB/s on one core instead of 0.9, so checking
/// a shard costs no more than reading it. Fed in pieces of any size.
class PayloadHasher {
 public:
  void update(const void* data, size_t bytes);
  uint64_t digest() const;

 private:
  uint64_t lanes_[4] = {trainc::common::kFnvOffset, trainc::common::kFnvOffset, trainc::common::kFnvOffset,
                        trainc::common::kFnvOffset};
  unsigned char pending_[32] = {};
  size_t npending_ = 0;
};

/// payload_fnv of one buffer.
uint64_t payload_fnv(const void* data, size_t bytes);

/// A header for a shard; payload_fnv is left 0 until the payload is written.
ShardHeader make_shard_header(uint32_t features, uint64_t rows, uint64_t first_row, uint64_t total_rows,
                              uint64_t seed, uint32_t shard_index, uint32_t shard_count);

/// Reads a native shard's header and checks its magic, version and the file size it implies; with
/// `verify_payload`, also reads the payload and checks payload_fnv. "" when the shard is sound,
/// else what is wrong with it.
std::string check_native_shard(const std::string& path, ShardHeader& header, bool verify_payload);

}  // namespace trainrt
