#pragma once
// A generated table on disk: its folder, its shard files and its metadata.
//
//   DIR/part-00000-of-00007.trs (or .parquet) ...  the shards, rows in order of their names
//   DIR/.part-00003-of-00007.trs.tmp                 a shard being written (renamed when complete)
//   DIR/.trainrt-params.json                         the spec, written first: a rerun with other
//                                                    parameters is refused instead of mixing tables
//   DIR/_trainrt_table.json                          written last, once every shard is complete:
//     {"rows", "features", "seed", "task", "params", "shards", "format",   (the spec, sorted keys)
//      "columns": ["f0", ..., "label"], "files": [{"name", "first_row", "rows"}, ...],
//      "trainrt_table": 1}
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "datagen/spec.h"

namespace trainrt::datagen {

inline constexpr const char* kTableFile = "_trainrt_table.json";
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

/// Writes DIR/_trainrt_table.json atomically.
void write_table_metadata(const std::string& dir, const Spec& spec, const Layout& layout);

/// Writes `text` to PATH through a temporary file and a rename.
void write_file_atomically(const std::string& path, const std::string& text);

}  // namespace trainrt::datagen
