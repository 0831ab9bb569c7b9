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
  uint64_t payload_fnv;  ///< FNV-1a 64 of everything after the header: a torn or altered file fails it
};
static_assert(sizeof(ShardHeader) == 64, "the header is 64 bytes on disk");

/// "part-00003-of-00007.trs" (native) or ".parquet": shard names sort in row order.
std::string shard_file_name(uint32_t index, uint32_t count, const std::string& extension);

}  // namespace trainrt
