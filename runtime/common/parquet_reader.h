#pragma once
// Reads back what parquet_writer writes: a flat schema of required FLOAT columns, PLAIN,
// uncompressed data pages v1. Anything else is reported as unsupported rather than misread.
#include <cstdint>
#include <string>
#include <vector>

#include "common/parquet_format.h"

namespace trainrt::parquet {

struct FileInfo {
  FileMetaData meta;
  std::vector<std::string> columns;  ///< leaf column names, in order
  uint64_t file_size = 0;
  uint64_t footer_offset = 0;  ///< where the footer's FileMetaData starts
  /// The value stored under `key` in the footer's key/value metadata, or "".
  std::string key_value(const std::string& key) const;
};

/// Opens `path` and parses its footer: magic at both ends, footer length, FileMetaData, a flat
/// schema of required FLOAT columns, row counts that add up, chunk ranges inside the file.
/// "" or what is wrong.
std::string read_footer(int fd, FileInfo& info);

/// Reads row group `group` into column-major floats (column c, row r at out[c * rows + r]),
/// checking every page's CRC when it has one. "" or what is wrong.
std::string read_row_group(int fd, const FileInfo& info, size_t group, std::vector<float>& out);

}  // namespace trainrt::parquet
