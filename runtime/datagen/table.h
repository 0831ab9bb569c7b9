#pragma once
// A generated table on disk: its folder, its shard files and its metadata.
//
//   DIR/part-00000-of-00007.trs (or .parquet) ...  the shards, rows in order of their names
//   DIR/.part-00003-of-00007.trs.tmp                 a shard being written (renamed when complete)
//   DIR/.trainrt-params.json                         the spec, written first: a rerun with other
//                                                    parameters is refused instead of mixing tables
//   DIR/_trainrt_table.json                          written last, once every shard is complete:
//     {"rows", "features", "seed", "task", "params", "shards", "format",   (the spec, sorted keys;
//      "compression": "snappy" or "zstd" for compressed Parquet shards)
//      "columns": ["f0", ..., "label"], "files": [{"name", "first_row", "rows"}, ...],
//      "trainrt_table": 1}
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "datagen/spec.h"

namespace trainrt::datagen {

inline constexpr const char* kTableFile = "_trainrt_table.json";

/// The output storage failed: a write, fsync, close or rename of a file in the table's folder
/// (ENOSPC, EIO, ENOTCONN from a FUSE mount that went away, a folder removed mid-run). The text
/// names the file, what was done and the error.
struct StorageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};
inline constexpr const char* kParamsFile = ".trainrt-params.json";

std::string shard_path(const std::string& dir, uint32_t index, const Layout& layout);
std::string temp_shard_path(const std::string& dir, uint32_t index, const Layout& layout);

/// "f0", ..., "f{F-1}", "label".
std::vector<std::string> column_names(uint32_t features);

/// A short hash of the spec JSON, stored in Parquet shards so a shard can be matched to its table.
std::string fingerprint(const nlohmann::json& spec_json);

/// "" when the shard at `path` is a complete shard `index` of this table, else what is wrong.
/// Native: header fields, file size and (with `deep`) the payload checksum. Parquet: magic,
/// footer, row count, schema and the table fingerprint in its key/value metadata.
std::string check_shard(const std::string& path, const Spec& spec, const Layout& layout, uint32_t index, bool deep);

/// Refuses (throws std::runtime_error) when DIR already holds a different table; else records
/// this one's spec in DIR/.trainrt-params.json.
void claim_folder(const std::string& dir, const nlohmann::json& spec_json);

/// DIR/_trainrt_table.json as read back, every field checked.
struct TableMetadata {
  nlohmann::json spec_json;  ///< the spec's keys (rows, features, seed, task, params, shards, format)
  uint64_t rows = 0, seed = 0;
  uint32_t features = 0;
  Format format = Format::kNative;
  int32_t compression = 0;  ///< Parquet pages' codec (field "compression"; absent: 0, uncompressed)
  struct File {
    std::string name;
    uint64_t first_row = 0, rows = 0;
  };
  std::vector<File> files;
};

/// Reads and checks DIR/_trainrt_table.json: JSON, every field present with its type and range
/// (features 1..65536, rows up to 2^62, format native or parquet, shards = the number of files,
/// files named part-IIIII-of-NNNNN.EXT in order, each starting where the last ended, their rows
/// adding up to rows). Throws std::runtime_error naming the file and the field.
TableMetadata read_table_metadata(const std::string& dir);

/// Writes DIR/_trainrt_table.json atomically (write_file_atomically).
void write_table_metadata(const std::string& dir, const Spec& spec, const Layout& layout);

/// Writes `text` to PATH through a temporary file in the same folder, fsync and a rename; throws
/// StorageError when any step fails (the temporary file is removed).
void write_file_atomically(const std::string& path, const std::string& text);

/// fsyncs the folder DIR (after a rename into it); throws StorageError when that fails.
void sync_folder(const std::string& dir);

}  // namespace trainrt::datagen
