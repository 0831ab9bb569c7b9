#include "common/parquet_writer.h"

#include <algorithm>
#include <cstring>
#include <stdexcept>

namespace trainrt::parquet {

namespace {

std::string float_bytes(float f) {
  std::string s(4, '\0');
  std::memcpy(s.data(), &f, 4);
  return s;
}

/// Parquet's rule for float statistics: a zero minimum is written -0.0 and a zero maximum +0.0,
/// so readers need not know which zero the column holds.
void set_min_max(ColumnChunk& c, float lo, float hi) {
  if (lo == 0.0f) lo = -0.0f;
  if (hi == 0.0f) hi = 0.0f;
  c.has_min_max = true;
  c.min_value = float_bytes(lo);
  c.max_value = float_bytes(hi);
}

}  // namespace

void encode_row_group(const float* column_major, uint64_t rows, size_t columns, EncodedRowGroup& out,
                      uint32_t page_values) {
  if (page_values == 0) throw std::invalid_argument("page_values must be positive");
  out.rows = rows;
  out.bytes.clear();
  out.chunks.clear();
  const uint64_t pages = rows == 0 ? 1 : (rows + page_values - 1) / page_values;
  out.bytes.reserve(rows * columns * sizeof(float) + pages * columns * 32);
  for (size_t c = 0; c < columns; ++c) {
    const float* col = column_major + c * rows;
    ColumnChunk chunk;
    chunk.encodings = {kPlain};
    chunk.num_values = static_cast<int64_t>(rows);
    chunk.data_page_offset = static_cast<int64_t>(out.bytes.size());
    chunk.file_offset = chunk.data_page_offset;
    chunk.null_count = 0;
    float lo = 0, hi = 0;
    for (uint64_t first = 0, page = 0; page < pages; ++page, first += page_values) {
      const uint64_t n = std::min<uint64_t>(page_values, rows - first);
      const size_t bytes = n * sizeof(float);
      PageHeader h;
      h.uncompressed_size = h.compressed_size = static_cast<int32_t>(bytes);
      h.num_values = static_cast<int32_t>(n);
      h.has_crc = true;
      h.crc = crc32(col + first, bytes);
      encode_page_header(h, out.bytes);
      const auto* values = reinterpret_cast<const uint8_t*>(col + first);
      out.bytes.insert(out.bytes.end(), values, values + bytes);
    }
    if (rows > 0) {
      lo = hi = col[0];
      for (uint64_t r = 1; r < rows; ++r) {  // branch-free, so it vectorises
        lo = col[r] < lo ? col[r] : lo;
        hi = col[r] > hi ? col[r] : hi;
      }
    }
    chunk.total_uncompressed_size = chunk.total_compressed_size =
        static_cast<int64_t>(out.bytes.size()) - chunk.data_page_offset;
    if (rows > 0) set_min_max(chunk, lo, hi);
    out.chunks.push_back(std::move(chunk));
  }
}

FileWriter::FileWriter(std::vector<std::string> column_names,
                       std::vector<std::pair<std::string, std::string>> key_values, std::string created_by) {
  SchemaElement root;
  root.name = "schema";
  root.num_children = static_cast<int32_t>(column_names.size());
  meta_.schema.push_back(root);
  for (auto& name : column_names) {
    SchemaElement leaf;
    leaf.name = std::move(name);
    leaf.type = kFloat;
    leaf.repetition = kRequired;
    meta_.schema.push_back(std::move(leaf));
  }
  meta_.key_values = std::move(key_values);
  meta_.created_by = std::move(created_by);
}

void FileWriter::add_row_group(const EncodedRowGroup& group, uint64_t file_offset) {
  RowGroup g;
  g.num_rows = static_cast<int64_t>(group.rows);
  for (size_t c = 0; c < group.chunks.size(); ++c) {
    ColumnChunk chunk = group.chunks[c];
    chunk.path = {meta_.schema.at(c + 1).name};
    chunk.data_page_offset += static_cast<int64_t>(file_offset);
    chunk.file_offset += static_cast<int64_t>(file_offset);
    g.total_byte_size += chunk.total_uncompressed_size;
    g.columns.push_back(std::move(chunk));
  }
  g.file_offset = static_cast<int64_t>(file_offset);
  g.total_compressed_size = g.total_byte_size;
  meta_.num_rows += g.num_rows;
  meta_.row_groups.push_back(std::move(g));
}

std::vector<uint8_t> FileWriter::footer() const {
  std::vector<uint8_t> out;
  encode_file_metadata(meta_, out);
  const auto len = static_cast<uint32_t>(out.size());
  for (int i = 0; i < 4; ++i) out.push_back(static_cast<uint8_t>(len >> (8 * i)));
  out.insert(out.end(), kMagic, kMagic + 4);
  return out;
}

}  // namespace trainrt::parquet
