#pragma once
// The parts of Parquet's metadata (parquet.thrift in apache/parquet-format) that trainrt writes and
// reads: a flat schema of required columns, row groups of column chunks, data pages v1.
// Field ids below are parquet.thrift's.
#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace trainrt::parquet {

inline constexpr char kMagic[4] = {'P', 'A', 'R', '1'};

enum PhysicalType : int32_t { kBoolean = 0, kInt32 = 1, kInt64 = 2, kInt96 = 3, kFloat = 4, kDouble = 5, kByteArray = 6 };
enum Repetition : int32_t { kRequired = 0, kOptional = 1, kRepeated = 2 };
enum Encoding : int32_t {
  kPlain = 0,
  kPlainDictionary = 2,
  kRle = 3,
  kBitPacked = 4,
  kDeltaBinaryPacked = 5,
  kDeltaLengthByteArray = 6,
  kDeltaByteArray = 7,
  kRleDictionary = 8,
  kByteStreamSplit = 9,
};
/// "PLAIN", "RLE_DICTIONARY", ..., or "encoding N".
std::string encoding_name(int32_t encoding);
/// "BOOLEAN", "INT32", ..., or "type N".
std::string type_name(int32_t type);
enum Codec : int32_t { kUncompressed = 0, kSnappy = 1, kGzip = 2, kLzo = 3, kBrotli = 4, kLz4 = 5, kZstd = 6, kLz4Raw = 7 };
enum PageType : int32_t { kDataPage = 0, kIndexPage = 1, kDictionaryPage = 2, kDataPageV2 = 3 };

/// CRC-32 as in gzip/zlib (reflected polynomial 0xEDB88320): Parquet's page checksum (libdeflate's).
uint32_t crc32(const void* data, size_t bytes, uint32_t crc = 0);

struct PageHeader {
  int32_t type = kDataPage;
  int32_t uncompressed_size = 0, compressed_size = 0;
  bool has_crc = false;
  uint32_t crc = 0;
  // data_page_header (v1), data_page_header_v2 or dictionary_page_header, after `type`
  int32_t num_values = 0;
  int32_t encoding = kPlain, definition_level_encoding = kRle, repetition_level_encoding = kRle;
  bool has_body = false;  ///< the header for `type` was present
  // data_page_header_v2 only: levels are stored uncompressed before the (maybe compressed) values.
  int32_t num_nulls = 0, num_rows = 0;
  int32_t definition_levels_byte_length = 0, repetition_levels_byte_length = 0;
  bool is_compressed = true;
};

/// Serialises a page header (compact protocol), appending to `out`.
void encode_page_header(const PageHeader& h, std::vector<uint8_t>& out);
/// Parses a page header at data[0..size); sets `used` to its length. False when malformed.
bool decode_page_header(const uint8_t* data, size_t size, PageHeader& h, size_t& used);

struct SchemaElement {
  std::string name;
  int32_t type = -1;        ///< -1: a group (the root)
  int32_t repetition = -1;  ///< -1: not set
  int32_t num_children = -1;
  int32_t converted_type = -1;  ///< -1: not set
  int32_t logical_type = -1;    ///< the LogicalType union's field id; -1: not set
  int32_t logical_int_bits = 0;  ///< IntType: bitWidth
  bool logical_int_signed = true;  ///< IntType: isSigned
};

struct ColumnChunk {
  int32_t type = kFloat;
  std::vector<int32_t> encodings{kPlain};
  std::vector<std::string> path;
  int32_t codec = kUncompressed;
  int64_t num_values = 0, total_uncompressed_size = 0, total_compressed_size = 0;
  int64_t data_page_offset = 0;
  int64_t dictionary_page_offset = -1;  ///< -1: none
  int64_t file_offset = 0;              ///< ColumnChunk.file_offset
  bool has_min_max = false;
  std::string min_value, max_value;  ///< plain-encoded (4 little-endian bytes for FLOAT)
  int64_t null_count = -1;           ///< -1: not set
  bool external = false;             ///< ColumnChunk.file_path set: the data lives in another file
};

struct RowGroup {
  std::vector<ColumnChunk> columns;
  int64_t total_byte_size = 0, num_rows = 0;
  int64_t file_offset = -1, total_compressed_size = -1;  ///< -1: not set
};

struct FileMetaData {
  int32_t version = 1;
  std::vector<SchemaElement> schema;  ///< the root group first, then its leaf columns
  int64_t num_rows = 0;
  std::vector<RowGroup> row_groups;
  std::vector<std::pair<std::string, std::string>> key_values;
  std::string created_by;
};

void encode_file_metadata(const FileMetaData& m, std::vector<uint8_t>& out);
/// Parses a footer; "" or what is malformed in it.
std::string decode_file_metadata(const uint8_t* data, size_t size, FileMetaData& m);

}  // namespace trainrt::parquet
