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

#include "formats/parquet_reader.h"
#include "formats/shard_reader.h"
#include "train/xgb.h"

namespace trainrt {

/// One Parquet file of a table, open, its footer read and checked; `label` names the label column,
/// every other column is a feature (in the file's order). Move-only; closes the file on destruction.
class ParquetShard {
 public:
  /// Opens PATH and reads its footer. Throws ShardError naming the file and what is wrong: not
  /// Parquet, an unsupported column or construct, no column named `label`.
  static ParquetShard open(const std::string& path, const std::string& label);

  ParquetShard(ParquetShard&& other) noexcept;
  ParquetShard& operator=(ParquetShard&& other) noexcept;
  ParquetShard(const ParquetShard&) = delete;
  ParquetShard& operator=(const ParquetShard&) = delete;
  ~ParquetShard();

  const std::string& path() const { return path_; }
  uint64_t rows() const { return static_cast<uint64_t>(info_.meta.num_rows); }
  uint32_t features() const { return static_cast<uint32_t>(info_.columns.size() - 1); }
  const parquet::FileInfo& info() const { return info_; }
  /// The feature columns' names, in order.
  std::vector<std::string> feature_names() const;
  size_t groups() const { return group_first_.size(); }
  uint64_t group_first_row(size_t g) const { return group_first_[g]; }
  uint64_t group_rows(size_t g) const { return static_cast<uint64_t>(info_.meta.row_groups[g].num_rows); }

  /// The row group last decoded, kept between calls to read_rows.
  struct GroupCache {
    const ParquetShard* file = nullptr;
    size_t group = 0;
    std::vector<float> columns;  ///< column-major, as parquet::read_row_group
  };
  /// Rows [begin, end) of the file (counted from its first): features row-major into x, labels into
  /// y, decoding the row groups they lie in (each once while `cache` holds it). Throws ShardError.
  void read_rows(uint64_t begin, uint64_t end, float* x, float* y, GroupCache& cache) const;

 private:
  ParquetShard() = default;
  std::string path_;
  int fd_ = -1;
  parquet::FileInfo info_;
  size_t label_ = 0;
  std::vector<uint64_t> group_first_;
};

/// Shard i goes to rank i % world_size.
std::vector<std::string> shards_of_rank(const std::vector<std::string>& all, int rank, int world_size);

/// One rank's shards, mapped and checked: native shards or Parquet files, never both.
struct RankShards {
  std::vector<MappedShard> shards;
  std::vector<ParquetShard> parquet;
  uint64_t rows = 0;
  uint32_t features = 0;
};

/// The table description datagen writes beside its shards (_trainrt_table.json), as training checks
/// it: feature count, and the rows of each native shard by file name.
struct TableDescription {
  uint32_t features = 0;
  uint64_t rows = 0;
  std::map<std::string, uint64_t> shard_rows;  ///< .trs and .parquet files
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

/// For Parquet tables without a description: when the files are named as trainrt names shards
/// (`part-NNNNN-of-MMMMM.parquet`), all MMMMM of them must be there. Throws ShardError naming the
/// first one missing. Files named otherwise (other tools' tables) are taken as they are.
void check_parquet_names(const std::vector<std::string>& all);

/// Checks opened shards against the description: the same features, and each shard's rows.
void check_against_description(const RankShards& shards, const TableDescription& table, const std::string& dir);

/// Maps PATHS and checks them (payload checksums too when `verify`), on up to `threads` threads.
/// All must have the same number of features. Throws ShardError.
RankShards open_rank_shards(const std::vector<std::string>& paths, bool verify, int threads);

/// Opens the Parquet files PATHS with `label` as the label column. All must have the same columns,
/// in the same order. Throws ShardError.
RankShards open_parquet_shards(const std::vector<std::string>& paths, const std::string& label);

/// Rows [begin, end) of one shard: of a native shard, or of a Parquet file.
struct RowRange {
  const MappedShard* shard = nullptr;
  uint64_t begin = 0;
  uint64_t end = 0;
  const ParquetShard* pq = nullptr;
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
/// `max_batch_rows` rows. Parquet files are cut exactly as native shards of the same rows, whatever
/// their row groups, so that a table is handed to XGBoost in the same batches, and trains to the
/// same model, in either format.
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
