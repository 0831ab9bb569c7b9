#include "formats/parquet_format.h"

#include <libdeflate.h>

#include "formats/parquet_thrift.h"

namespace trainrt::parquet {

uint32_t crc32(const void* data, size_t bytes, uint32_t crc) {
  return bytes == 0 ? crc : libdeflate_crc32(crc, data, bytes);  // PCLMULQDQ-folded where the CPU has it
}

std::string encoding_name(int32_t e) {
  static const char* const names[] = {"PLAIN",       "GROUP_VAR_INT",           "PLAIN_DICTIONARY",
                                      "RLE",         "BIT_PACKED",              "DELTA_BINARY_PACKED",
                                      "DELTA_LENGTH_BYTE_ARRAY", "DELTA_BYTE_ARRAY", "RLE_DICTIONARY",
                                      "BYTE_STREAM_SPLIT"};
  return e >= 0 && e < 10 ? names[e] : "encoding " + std::to_string(e);
}

std::string type_name(int32_t t) {
  static const char* const names[] = {"BOOLEAN", "INT32",      "INT64", "INT96",
                                      "FLOAT",   "DOUBLE", "BYTE_ARRAY", "FIXED_LEN_BYTE_ARRAY"};
  return t >= 0 && t < 8 ? names[t] : "type " + std::to_string(t);
}

void encode_page_header(const PageHeader& h, std::vector<uint8_t>& out) {
  thrift::Writer w(out);
  w.field_i32(1, h.type);
  w.field_i32(2, h.uncompressed_size);
  w.field_i32(3, h.compressed_size);
  if (h.has_crc) w.field_i32(4, static_cast<int32_t>(h.crc));
  w.begin_struct_field(5);
  w.field_i32(1, h.num_values);
  w.field_i32(2, h.encoding);
  w.field_i32(3, h.definition_level_encoding);
  w.field_i32(4, h.repetition_level_encoding);
  w.end_struct();
  w.end_struct();
}

bool decode_page_header(const uint8_t* data, size_t size, PageHeader& h, size_t& used) {
  thrift::Reader r(data, size);
  h = PageHeader{};
  h.type = -1;
  int16_t id;
  thrift::Type t;
  while (r.next_field(id, t)) {
    if (id == 1 && t == thrift::kI32) h.type = r.read_i32();
    else if (id == 2 && t == thrift::kI32) h.uncompressed_size = r.read_i32();
    else if (id == 3 && t == thrift::kI32) h.compressed_size = r.read_i32();
    else if (id == 4 && t == thrift::kI32) {
      h.has_crc = true;
      h.crc = static_cast<uint32_t>(r.read_i32());
    } else if (id == 5 && t == thrift::kStruct) {  // DataPageHeader
      if (h.type == kDataPage) h.has_body = true;
      r.begin_struct();
      while (r.next_field(id, t)) {
        if (id == 1 && t == thrift::kI32) h.num_values = r.read_i32();
        else if (id == 2 && t == thrift::kI32) h.encoding = r.read_i32();
        else if (id == 3 && t == thrift::kI32) h.definition_level_encoding = r.read_i32();
        else if (id == 4 && t == thrift::kI32) h.repetition_level_encoding = r.read_i32();
        else r.skip(t);
      }
      r.end_struct();
    } else if (id == 7 && t == thrift::kStruct) {  // DictionaryPageHeader
      if (h.type == kDictionaryPage) h.has_body = true;
      r.begin_struct();
      while (r.next_field(id, t)) {
        if (id == 1 && t == thrift::kI32) h.num_values = r.read_i32();
        else if (id == 2 && t == thrift::kI32) h.encoding = r.read_i32();
        else r.skip(t);
      }
      r.end_struct();
    } else if (id == 8 && t == thrift::kStruct) {  // DataPageHeaderV2
      if (h.type == kDataPageV2) h.has_body = true;
      r.begin_struct();
      while (r.next_field(id, t)) {
        if (id == 1 && t == thrift::kI32) h.num_values = r.read_i32();
        else if (id == 2 && t == thrift::kI32) h.num_nulls = r.read_i32();
        else if (id == 3 && t == thrift::kI32) h.num_rows = r.read_i32();
        else if (id == 4 && t == thrift::kI32) h.encoding = r.read_i32();
        else if (id == 5 && t == thrift::kI32) h.definition_levels_byte_length = r.read_i32();
        else if (id == 6 && t == thrift::kI32) h.repetition_levels_byte_length = r.read_i32();
        else if (id == 7 && (t == thrift::kTrue || t == thrift::kFalse)) h.is_compressed = r.read_bool(t);
        else r.skip(t);
      }
      r.end_struct();
    } else {
      r.skip(t);
    }
  }
  used = r.position(data);
  return r.ok() && h.type >= 0 && h.compressed_size >= 0 && h.uncompressed_size >= 0;
}

namespace {

void encode_column_chunk(thrift::Writer& w, const ColumnChunk& c) {
  w.field_i64(2, c.file_offset);
  w.begin_struct_field(3);  // ColumnMetaData
  w.field_i32(1, c.type);
  w.begin_list_field(2, thrift::kI32, static_cast<uint32_t>(c.encodings.size()));
  for (int32_t e : c.encodings) w.element_i32(e);
  w.begin_list_field(3, thrift::kBinary, static_cast<uint32_t>(c.path.size()));
  for (const auto& p : c.path) w.element_binary(p);
  w.field_i32(4, c.codec);
  w.field_i64(5, c.num_values);
  w.field_i64(6, c.total_uncompressed_size);
  w.field_i64(7, c.total_compressed_size);
  w.field_i64(9, c.data_page_offset);
  if (c.dictionary_page_offset >= 0) w.field_i64(11, c.dictionary_page_offset);
  if (c.has_min_max || c.null_count >= 0) {
    w.begin_struct_field(12);  // Statistics
    if (c.null_count >= 0) w.field_i64(3, c.null_count);
    if (c.has_min_max) {
      w.field_binary(5, c.max_value);
      w.field_binary(6, c.min_value);
    }
    w.end_struct();
  }
  w.end_struct();
}

void encode_row_group(thrift::Writer& w, const RowGroup& g) {
  w.begin_list_field(1, thrift::kStruct, static_cast<uint32_t>(g.columns.size()));
  for (const auto& c : g.columns) {
    w.begin_struct_element();
    encode_column_chunk(w, c);
    w.end_struct();
  }
  w.field_i64(2, g.total_byte_size);
  w.field_i64(3, g.num_rows);
  if (g.file_offset >= 0) w.field_i64(5, g.file_offset);
  if (g.total_compressed_size >= 0) w.field_i64(6, g.total_compressed_size);
}

}  // namespace

void encode_file_metadata(const FileMetaData& m, std::vector<uint8_t>& out) {
  thrift::Writer w(out);
  w.field_i32(1, m.version);
  w.begin_list_field(2, thrift::kStruct, static_cast<uint32_t>(m.schema.size()));
  for (const auto& s : m.schema) {
    w.begin_struct_element();
    if (s.type >= 0) w.field_i32(1, s.type);
    if (s.repetition >= 0) w.field_i32(3, s.repetition);
    w.field_binary(4, s.name);
    if (s.num_children >= 0) w.field_i32(5, s.num_children);
    w.end_struct();
  }
  w.field_i64(3, m.num_rows);
  w.begin_list_field(4, thrift::kStruct, static_cast<uint32_t>(m.row_groups.size()));
  for (const auto& g : m.row_groups) {
    w.begin_struct_element();
    encode_row_group(w, g);
    w.end_struct();
  }
  if (!m.key_values.empty()) {
    w.begin_list_field(5, thrift::kStruct, static_cast<uint32_t>(m.key_values.size()));
    for (const auto& [k, v] : m.key_values) {
      w.begin_struct_element();
      w.field_binary(1, k);
      w.field_binary(2, v);
      w.end_struct();
    }
  }
  if (!m.created_by.empty()) w.field_binary(6, m.created_by);
  // column_orders: TYPE_ORDER for every leaf, which makes min_value/max_value trustworthy to readers.
  const auto leaves = static_cast<uint32_t>(m.schema.empty() ? 0 : m.schema.size() - 1);
  w.begin_list_field(7, thrift::kStruct, leaves);
  for (uint32_t i = 0; i < leaves; ++i) {
    w.begin_struct_element();  // union ColumnOrder
    w.begin_struct_field(1);   // TypeDefinedOrder {}
    w.end_struct();
    w.end_struct();
  }
  w.end_struct();
}

namespace {

using thrift::Reader;

// LogicalType is a union: one struct-valued field whose id says which type (INTEGER is 10).
void decode_logical_type(Reader& r, SchemaElement& s) {
  int16_t id;
  thrift::Type t;
  r.begin_struct();
  while (r.next_field(id, t)) {
    if (t != thrift::kStruct) {
      r.skip(t);
      continue;
    }
    s.logical_type = id;
    r.begin_struct();
    int16_t fid;
    thrift::Type ft;
    while (r.next_field(fid, ft)) {
      if (id == 10 && fid == 1 && ft == thrift::kByte) s.logical_int_bits = static_cast<int8_t>(r.read_byte());
      else if (id == 10 && fid == 2 && (ft == thrift::kTrue || ft == thrift::kFalse)) s.logical_int_signed = r.read_bool(ft);
      else r.skip(ft);
    }
    r.end_struct();
  }
  r.end_struct();
}

void decode_schema_element(Reader& r, SchemaElement& s) {
  int16_t id;
  thrift::Type t;
  r.begin_struct();
  while (r.next_field(id, t)) {
    if (id == 1 && t == thrift::kI32) s.type = r.read_i32();
    else if (id == 3 && t == thrift::kI32) s.repetition = r.read_i32();
    else if (id == 4 && t == thrift::kBinary) s.name = r.read_binary();
    else if (id == 5 && t == thrift::kI32) s.num_children = r.read_i32();
    else if (id == 6 && t == thrift::kI32) s.converted_type = r.read_i32();
    else if (id == 10 && t == thrift::kStruct) decode_logical_type(r, s);
    else r.skip(t);
  }
  r.end_struct();
}

void decode_statistics(Reader& r, ColumnChunk& c) {
  int16_t id;
  thrift::Type t;
  std::string min, max;
  bool have_min = false, have_max = false;
  r.begin_struct();
  while (r.next_field(id, t)) {
    if (id == 3 && t == thrift::kI64) c.null_count = r.read_i64();
    else if (id == 5 && t == thrift::kBinary) max = r.read_binary(), have_max = true;
    else if (id == 6 && t == thrift::kBinary) min = r.read_binary(), have_min = true;
    else r.skip(t);
  }
  r.end_struct();
  if (have_min && have_max) {
    c.has_min_max = true;
    c.min_value = min;
    c.max_value = max;
  }
}

void decode_column_metadata(Reader& r, ColumnChunk& c) {
  int16_t id;
  thrift::Type t, element;
  uint32_t n;
  r.begin_struct();
  while (r.next_field(id, t)) {
    if (id == 1 && t == thrift::kI32) c.type = r.read_i32();
    else if (id == 2 && t == thrift::kList) {
      r.read_list(element, n);
      c.encodings.clear();
      for (uint32_t i = 0; i < n && r.ok(); ++i) c.encodings.push_back(r.read_i32());
    } else if (id == 3 && t == thrift::kList) {
      r.read_list(element, n);
      for (uint32_t i = 0; i < n && r.ok(); ++i) c.path.push_back(r.read_binary());
    } else if (id == 4 && t == thrift::kI32) c.codec = r.read_i32();
    else if (id == 5 && t == thrift::kI64) c.num_values = r.read_i64();
    else if (id == 6 && t == thrift::kI64) c.total_uncompressed_size = r.read_i64();
    else if (id == 7 && t == thrift::kI64) c.total_compressed_size = r.read_i64();
    else if (id == 9 && t == thrift::kI64) c.data_page_offset = r.read_i64();
    else if (id == 11 && t == thrift::kI64) c.dictionary_page_offset = r.read_i64();
    else if (id == 12 && t == thrift::kStruct) decode_statistics(r, c);
    else r.skip(t);
  }
  r.end_struct();
}

void decode_row_group(Reader& r, RowGroup& g) {
  int16_t id;
  thrift::Type t, element;
  uint32_t n;
  r.begin_struct();
  while (r.next_field(id, t)) {
    if (id == 1 && t == thrift::kList) {
      r.read_list(element, n);
      for (uint32_t i = 0; i < n && r.ok(); ++i) {
        ColumnChunk c;
        c.encodings.clear();
        r.begin_struct();
        while (r.next_field(id, t)) {
          if (id == 1 && t == thrift::kBinary) c.external = !r.read_binary().empty();
          else if (id == 2 && t == thrift::kI64) c.file_offset = r.read_i64();
          else if (id == 3 && t == thrift::kStruct) decode_column_metadata(r, c);
          else r.skip(t);
        }
        r.end_struct();
        g.columns.push_back(std::move(c));
      }
    } else if (id == 2 && t == thrift::kI64) g.total_byte_size = r.read_i64();
    else if (id == 3 && t == thrift::kI64) g.num_rows = r.read_i64();
    else if (id == 5 && t == thrift::kI64) g.file_offset = r.read_i64();
    else if (id == 6 && t == thrift::kI64) g.total_compressed_size = r.read_i64();
    else r.skip(t);
  }
  r.end_struct();
}

}  // namespace

std::string decode_file_metadata(const uint8_t* data, size_t size, FileMetaData& m) {
  Reader r(data, size);
  m = FileMetaData{};
  m.version = -1;
  m.num_rows = -1;
  int16_t id;
  thrift::Type t, element;
  uint32_t n;
  while (r.next_field(id, t)) {
    if (id == 1 && t == thrift::kI32) m.version = r.read_i32();
    else if (id == 2 && t == thrift::kList) {
      r.read_list(element, n);
      for (uint32_t i = 0; i < n && r.ok(); ++i) decode_schema_element(r, m.schema.emplace_back());
    } else if (id == 3 && t == thrift::kI64) m.num_rows = r.read_i64();
    else if (id == 4 && t == thrift::kList) {
      r.read_list(element, n);
      for (uint32_t i = 0; i < n && r.ok(); ++i) decode_row_group(r, m.row_groups.emplace_back());
    } else if (id == 5 && t == thrift::kList) {
      r.read_list(element, n);
      for (uint32_t i = 0; i < n && r.ok(); ++i) {
        std::string k, v;
        r.begin_struct();
        while (r.next_field(id, t)) {
          if (id == 1 && t == thrift::kBinary) k = r.read_binary();
          else if (id == 2 && t == thrift::kBinary) v = r.read_binary();
          else r.skip(t);
        }
        r.end_struct();
        m.key_values.emplace_back(std::move(k), std::move(v));
      }
    } else if (id == 6 && t == thrift::kBinary) m.created_by = r.read_binary();
    else r.skip(t);
  }
  if (!r.ok()) return "malformed footer (Thrift decoding failed)";
  if (m.version < 0 || m.num_rows < 0 || m.schema.empty()) return "footer lacks version, schema or num_rows";
  return "";
}

}  // namespace trainrt::parquet
