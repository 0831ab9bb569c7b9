#include "common/parquet_reader.h"

#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace trainrt::parquet {

namespace {

bool read_at(int fd, void* buf, size_t bytes, uint64_t offset) {
  auto p = static_cast<char*>(buf);
  while (bytes > 0) {
    const ssize_t n = ::pread(fd, p, bytes, static_cast<off_t>(offset));
    if (n <= 0) {
      if (n < 0 && errno == EINTR) continue;
      return false;
    }
    p += n;
    bytes -= static_cast<size_t>(n);
    offset += static_cast<uint64_t>(n);
  }
  return true;
}

std::string check_schema(FileInfo& info) {
  const auto& schema = info.meta.schema;
  if (schema[0].num_children != static_cast<int32_t>(schema.size() - 1))
    return "unsupported schema: only a flat list of columns is read";
  for (size_t i = 1; i < schema.size(); ++i) {
    const auto& s = schema[i];
    if (s.num_children > 0) return "unsupported schema: nested column '" + s.name + "'";
    if (s.type != kFloat) return "unsupported column type for '" + s.name + "': only FLOAT is read";
    if (s.repetition != kRequired) return "unsupported column '" + s.name + "': only required columns are read";
    info.columns.push_back(s.name);
  }
  return "";
}

std::string check_row_groups(const FileInfo& info) {
  int64_t rows = 0;
  const uint64_t data_end = info.file_size - 8;  // the footer length and magic follow the metadata
  for (size_t g = 0; g < info.meta.row_groups.size(); ++g) {
    const auto& rg = info.meta.row_groups[g];
    const std::string where = "row group " + std::to_string(g);
    if (rg.columns.size() != info.columns.size()) return where + " has the wrong number of column chunks";
    if (rg.num_rows < 0) return where + " has a negative row count";
    for (const auto& c : rg.columns) {
      if (c.num_values != rg.num_rows) return where + ": a column chunk's value count differs from its row count";
      if (c.codec != kUncompressed) return where + ": compressed column chunks are not supported";
      if (c.dictionary_page_offset >= 0) return where + ": dictionary pages are not supported";
      if (c.data_page_offset < 4 || c.total_compressed_size < 0 ||
          static_cast<uint64_t>(c.data_page_offset) + static_cast<uint64_t>(c.total_compressed_size) > data_end)
        return where + ": a column chunk (bytes " + std::to_string(c.data_page_offset) + " + " +
               std::to_string(c.total_compressed_size) + ") lies outside the file's data (bytes 4.." +
               std::to_string(data_end) + "): torn or not this table's";
    }
    rows += rg.num_rows;
  }
  if (rows != info.meta.num_rows)
    return "row groups hold " + std::to_string(rows) + " rows but the footer says " + std::to_string(info.meta.num_rows);
  return "";
}

}  // namespace

std::string FileInfo::key_value(const std::string& key) const {
  for (const auto& [k, v] : meta.key_values)
    if (k == key) return v;
  return "";
}

std::string read_footer(int fd, FileInfo& info) {
  info = FileInfo{};
  const off_t size = ::lseek(fd, 0, SEEK_END);
  if (size < 12) return "the file is " + std::to_string(size < 0 ? 0 : size) + " bytes, too short to be a Parquet file";
  info.file_size = static_cast<uint64_t>(size);
  char head[4], tail[8];
  if (!read_at(fd, head, 4, 0) || !read_at(fd, tail, 8, info.file_size - 8))
    return "read failed at byte 0 or " + std::to_string(info.file_size - 8);
  if (std::memcmp(head, kMagic, 4) != 0) return "no PAR1 magic at byte 0: not a Parquet file";
  if (std::memcmp(tail + 4, kMagic, 4) != 0)
    return "no PAR1 magic at byte " + std::to_string(info.file_size - 4) + " (the end): torn or not Parquet";
  uint32_t len = 0;
  for (int i = 0; i < 4; ++i) len |= static_cast<uint32_t>(static_cast<uint8_t>(tail[i])) << (8 * i);
  if (len == 0 || uint64_t{len} + 12 > info.file_size)
    return "footer length " + std::to_string(len) + " (at byte " + std::to_string(info.file_size - 8) +
           ") is impossible for a file of " + std::to_string(info.file_size) + " bytes";
  std::vector<uint8_t> footer(len);
  const uint64_t footer_at = info.file_size - 8 - len;
  info.footer_offset = footer_at;
  if (!read_at(fd, footer.data(), len, footer_at)) return "read failed at byte " + std::to_string(footer_at);
  if (auto err = decode_file_metadata(footer.data(), footer.size(), info.meta); !err.empty())
    return err + " (the footer, bytes " + std::to_string(footer_at) + ".." + std::to_string(footer_at + len) + ")";
  if (auto err = check_schema(info); !err.empty()) return err;
  return check_row_groups(info);
}

std::string read_row_group(int fd, const FileInfo& info, size_t group, std::vector<float>& out) {
  const RowGroup& rg = info.meta.row_groups.at(group);
  const auto rows = static_cast<uint64_t>(rg.num_rows);
  out.resize(rows * info.columns.size());
  std::vector<uint8_t> chunk;
  for (size_t c = 0; c < rg.columns.size(); ++c) {
    const ColumnChunk& cc = rg.columns[c];
    const std::string where = "row group " + std::to_string(group) + ", column '" + info.columns[c] + "'";
    chunk.resize(static_cast<size_t>(cc.total_compressed_size));
    const auto chunk_at = static_cast<uint64_t>(cc.data_page_offset);
    if (!read_at(fd, chunk.data(), chunk.size(), chunk_at)) return where + ": read failed at byte " + std::to_string(chunk_at);
    uint64_t filled = 0;
    size_t pos = 0;
    while (pos < chunk.size()) {
      PageHeader h;
      size_t used = 0;
      const std::string at = " at byte " + std::to_string(chunk_at + pos);
      if (!decode_page_header(chunk.data() + pos, chunk.size() - pos, h, used))
        return where + ": malformed page header" + at;
      pos += used;
      if (h.type != kDataPage) return where + ": only data pages v1 are supported (the page" + at + ")";
      if (h.encoding != kPlain) return where + ": only PLAIN encoding is supported (the page" + at + ")";
      const auto bytes = static_cast<size_t>(h.compressed_size);
      if (bytes > chunk.size() - pos || h.uncompressed_size != h.compressed_size ||
          bytes != static_cast<size_t>(h.num_values) * sizeof(float) || filled + h.num_values > rows)
        return where + ": page sizes do not add up (the page" + at + ")";
      if (h.has_crc && crc32(chunk.data() + pos, bytes) != h.crc)
        return where + ": page CRC mismatch (corrupt data in bytes " + std::to_string(chunk_at + pos) + ".." +
               std::to_string(chunk_at + pos + bytes) + ")";
      std::memcpy(out.data() + c * rows + filled, chunk.data() + pos, bytes);
      filled += static_cast<uint64_t>(h.num_values);
      pos += bytes;
    }
    if (filled != rows) return where + ": pages hold " + std::to_string(filled) + " of " + std::to_string(rows) + " values";
  }
  return "";
}

}  // namespace trainrt::parquet
