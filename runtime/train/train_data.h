#pragma once
// From mapped shards to XGBoost matrices. The default (hist) builds a QuantileDMatrix through
// XGBoost's iterator API: each shard is handed over in batches that point straight into the
// mapping, and XGBoost keeps only its quantised bin index (1 byte per value at max_bin <= 256), so
// the float data is never copied and never resident all at once. `--dmatrix dense` builds a plain
// DMatrix instead (XGDMatrixCreateFromMat, which XGBoost copies into its own CSR pages): from the
// mapping directly when the rank has one range of rows, else from one contiguous buffer.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "common/shard_reader.h"
#include "train/xgb.h"

namespace trainrt {

/// Shard i goes to rank i % world_size.
std::vector<std::string> shards_of_rank(const std::vector<std::string>& all, int rank, int world_size);

/// One rank's shards, mapped and checked.
struct RankShards {
  std::vector<MappedShard> shards;
  uint64_t rows = 0;
  uint32_t features = 0;
};

/// The table description datagen writes beside its shards (_trainrt_table.json), as training checks
/// it: feature count, and the rows of each native shard by file name.
struct TableDescription {
  uint32_t features = 0;
  uint64_t rows = 0;
  std::map<std::string, uint64_t> shard_rows;  ///< .trs files only
};

/// Reads `dir`/_trainrt_table.json when it exists (nullopt when it does not: shards made by other
/// tools carry no description). Throws ShardError naming the file and the field when it is not
/// JSON, lacks a field or has one of the wrong type, or does not list exactly `shard_paths`.
std::optional<TableDescription> read_table_description(const std::string& dir,
                                                       const std::vector<std::string>& shard_paths);

/// Checks that the shards a rank opened belong to one complete table, from their headers alone (for
/// tables without a description): shard `rank + k * world_size` of `all` must say it is shard that
/// index of all.size(), of the same table size. Throws ShardError naming the file when a shard is
/// missing from the folder (a short listing: a lost copy, a storage mount that went away).
void check_shard_set(const RankShards& shards, const std::vector<std::string>& all, int rank, int world_size);

/// Checks opened shards against the description: the same features, and each shard's rows.
void check_against_description(const RankShards& shards, const TableDescription& table, const std::string& dir);

/// Maps PATHS and checks them (payload checksums too when `verify`), on up to `threads` threads.
/// All must have the same number of features. Throws ShardError.
RankShards open_rank_shards(const std::vector<std::string>& paths, bool verify, int threads);

/// Rows [begin, end) of one shard.
struct RowRange {
  const MappedShard* shard = nullptr;
  uint64_t begin = 0;
  uint64_t end = 0;
  uint64_t rows() const { return end - begin; }
};

struct DataOptions {
  bool quantile = true;
  double eval_fraction = 0;  ///< the last fraction of each shard's rows is held out for evaluation
  int max_bin = 256;
  int threads = 0;
};

struct TrainData {
  xgb::DMatrix train;
  xgb::DMatrix eval;  ///< empty without an evaluation fraction
  uint64_t train_rows = 0;
  uint64_t eval_rows = 0;
};

/// The training and evaluation row ranges of SHARDS, each cut into batches of at most
/// `max_batch_rows` rows.
void split_rows(const RankShards& shards, double eval_fraction, uint64_t max_batch_rows, std::vector<RowRange>& train,
                std::vector<RowRange>& eval);

/// Training and evaluation rows of SHARDS, without building anything.
struct RowCounts {
  uint64_t train = 0;
  uint64_t eval = 0;
};
RowCounts count_rows(const RankShards& shards, double eval_fraction);

/// Builds the matrices. The shards' pages are released from memory as they are consumed; the
/// returned matrices do not refer to the shards, which may be unmapped afterwards.
TrainData build_train_data(const RankShards& shards, const DataOptions& options);

}  // namespace trainrt
