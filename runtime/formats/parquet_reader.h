#pragma once
// Reads flat numeric Parquet tables, as trainrt, DuckDB and pyarrow write them by default: a flat
// schema of FLOAT, DOUBLE, INT32 and INT64 columns, required or optional (a null reads as NaN,
// XGBoost's missing value); PLAIN, BYTE_STREAM_SPLIT, DELTA_BINARY_PACKED (integers) and dictionary
// encodings (PLAIN_DICTIONARY, RLE_DICTIONARY) with RLE/bit-packed definition levels; data pages v1 and v2;
// uncompressed, snappy or zstd pages; any number of row groups; page CRCs checked where present. Every value is
// converted to float32 (DOUBLE and INT64 beyond 2^24 lose precision). Anything else (nested
// schemas, BOOLEAN/INT96/BYTE_ARRAY/FIXED_LEN_BYTE_ARRAY or DECIMAL/DATE/TIME columns, other
// codecs or encodings) is reported as unsupported, naming the column and the construct, rather
// than misread. Every size is checked against the file's, so a hostile file cannot make it read
// outside its buffers or allocate without bound.
#include <cstdint>
#include <string>
#include <vector>

#include "formats/parquet_format.h"

namespace trainrt::parquet {

struct ColumnInfo {
  std::string name;
  int32_t type = kFloat;     ///< physical type
  bool optional = false;     ///< nulls possible (one definition level)
  bool is_unsigned = false;  ///< INT32/INT64 holding UINT_32/UINT_64
};

struct FileInfo {
  FileMetaData meta;
  std::vector<std::string> columns;     ///< leaf column names, in order
  std::vector<ColumnInfo> column_info;  ///< the same columns' types
  uint64_t file_size = 0;
  uint64_t footer_offset = 0;  ///< where the footer's FileMetaData starts
  /// The value stored under `key` in the footer's key/value metadata, or "".
  std::string key_value(const std::string& key) const;
};

/// Largest number of values (rows x columns) a row group may decode to: 2^26, or 1024 per byte of
/// the file when that is more. Bounds what a small hostile file can make the reader allocate.
uint64_t max_group_values(uint64_t file_size);

/// Parses the footer of the open file `fd`: magic at both ends, footer length, FileMetaData, a flat
/// schema of supported columns, row counts that add up, chunk ranges inside the file.
/// "" or what is wrong (naming the column and the construct when it is unsupported).
std::string read_footer(int fd, FileInfo& info);

/// Reads row group `group` into column-major floats (column c, row r at out[c * rows + r]; nulls
/// NaN), checking every page's CRC when it has one. "" or what is wrong.
std::string read_row_group(int fd, const FileInfo& info, size_t group, std::vector<float>& out);

}  // namespace trainrt::parquet
