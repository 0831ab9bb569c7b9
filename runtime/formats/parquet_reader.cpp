#include "formats/parquet_reader.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <limits>

#include "formats/parquet_codec.h"

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

// ConvertedType names (parquet.thrift), for messages; the integer ones (UINT_8..INT_64) are read.
std::string converted_name(int32_t c) {
  static const char* const names[] = {"UTF8",
                                      "MAP",
                                      "MAP_KEY_VALUE",
                                      "LIST",
                                      "ENUM",
                                      "DECIMAL",
                                      "DATE",
                                      "TIME_MILLIS",
                                      "TIME_MICROS",
                                      "TIMESTAMP_MILLIS",
                                      "TIMESTAMP_MICROS",
                                      "UINT_8",
                                      "UINT_16",
                                      "UINT_32",
                                      "UINT_64",
                                      "INT_8",
                                      "INT_16",
                                      "INT_32",
                                      "INT_64",
                                      "JSON",
                                      "BSON",
                                      "INTERVAL"};
  return c >= 0 && c < 22 ? names[c] : "converted type " + std::to_string(c);
}

// LogicalType union members (parquet.thrift field ids), for messages.
std::string logical_name(int32_t id) {
  static const char* const names[] = {"",     "STRING", "MAP",       "LIST",   "ENUM",    "DECIMAL",
                                      "DATE", "TIME",   "TIMESTAMP", "",       "INTEGER", "UNKNOWN",
                                      "JSON", "BSON",   "UUID",      "FLOAT16"};
  return id > 0 && id < 16 && names[id][0] != '\0' ? names[id] : "logical type " + std::to_string(id);
}

std::string check_schema(FileInfo& info) {
  const auto& schema = info.meta.schema;
  if (schema[0].num_children != static_cast<int32_t>(schema.size() - 1))
    return "unsupported schema: nested columns (only a flat list of columns is read)";
  for (size_t i = 1; i < schema.size(); ++i) {
    const auto& s = schema[i];
    const std::string col = "column '" + s.name + "'";
    if (s.num_children > 0 || s.type < 0) return "unsupported schema: " + col + " is a group (nested columns)";
    if (s.repetition == kRepeated) return "unsupported schema: " + col + " is REPEATED (a list)";
    ColumnInfo c;
    c.name = s.name;
    c.type = s.type;
    c.optional = s.repetition == kOptional;
    if (s.type != kFloat && s.type != kDouble && s.type != kInt32 && s.type != kInt64)
      return "unsupported column type: " + col + " is " + type_name(s.type) +
             " (FLOAT, DOUBLE, INT32 and INT64 are read)";
    if (s.logical_type >= 0 && s.logical_type != 10 && s.logical_type != 11)
      return "unsupported column type: " + col + " has logical type " + logical_name(s.logical_type) +
             " (plain numbers and INTEGER are read)";
    if (s.logical_type == 10 && !s.logical_int_signed) c.is_unsigned = true;
    if (s.converted_type >= 0) {
      if (s.converted_type < 11 || s.converted_type > 18)
        return "unsupported column type: " + col + " has converted type " + converted_name(s.converted_type) +
               " (plain numbers and integer types are read)";
      if (s.converted_type == 13 || s.converted_type == 14) c.is_unsigned = true;  // UINT_32, UINT_64
    }
    info.columns.push_back(s.name);
    info.column_info.push_back(c);
  }
  return "";
}

// Where a column chunk starts: its dictionary page when it has one, else its first data page.
int64_t chunk_start(const ColumnChunk& c) {
  return c.dictionary_page_offset > 0 && c.dictionary_page_offset < c.data_page_offset ? c.dictionary_page_offset
                                                                                       : c.data_page_offset;
}

std::string check_row_groups(const FileInfo& info) {
  int64_t rows = 0;
  const uint64_t data_end = info.file_size - 8;  // the footer length and magic follow the metadata
  const uint64_t max_values = max_group_values(info.file_size);
  for (size_t g = 0; g < info.meta.row_groups.size(); ++g) {
    const auto& rg = info.meta.row_groups[g];
    const std::string where = "row group " + std::to_string(g);
    if (rg.columns.size() != info.columns.size()) return where + " has the wrong number of column chunks";
    if (rg.num_rows < 0) return where + " has a negative row count";
    if (!info.columns.empty() && static_cast<uint64_t>(rg.num_rows) > max_values / info.columns.size())
      return where + " has " + std::to_string(rg.num_rows) + " rows of " + std::to_string(info.columns.size()) +
             " columns, more values than a file of " + std::to_string(info.file_size) + " bytes can hold here (" +
             std::to_string(max_values) + ")";
    for (size_t c = 0; c < rg.columns.size(); ++c) {
      const ColumnChunk& cc = rg.columns[c];
      const std::string col = where + ", column '" + info.columns[c] + "'";
      if (cc.external) return col + ": unsupported: the column chunk lives in another file (ColumnChunk.file_path)";
      if (cc.type != info.column_info[c].type)
        return col + ": the chunk's type " + type_name(cc.type) + " differs from the schema's " +
               type_name(info.column_info[c].type);
      if (cc.num_values != rg.num_rows) return col + ": the chunk's value count differs from the row count";
      if (!codec_supported(cc.codec))
        return col + ": unsupported compression codec " + codec_name(cc.codec) + " (none, snappy and zstd are read)";
      const int64_t start = chunk_start(cc);
      if (start < 4 || cc.total_compressed_size < 0 ||
          static_cast<uint64_t>(start) + static_cast<uint64_t>(cc.total_compressed_size) > data_end)
        return col + ": the column chunk (bytes " + std::to_string(start) + " + " +
               std::to_string(cc.total_compressed_size) + ") lies outside the file's data (bytes 4.." +
               std::to_string(data_end) + "): torn or not this table's";
    }
    rows += rg.num_rows;
  }
  if (rows != info.meta.num_rows)
    return "row groups hold " + std::to_string(rows) + " rows but the footer says " +
           std::to_string(info.meta.num_rows);
  return "";
}

bool read_varint(const uint8_t*& p, const uint8_t* end, uint64_t& v) {
  v = 0;
  for (int shift = 0; shift < 64 && p < end; shift += 7) {
    const uint8_t b = *p++;
    v |= static_cast<uint64_t>(b & 0x7f) << shift;
    if (!(b & 0x80)) return true;
  }
  return false;
}

/// Decodes `n` values of `bit_width` (0..32) bits from the RLE/bit-packed hybrid at [p, end).
/// False when the data runs out or is malformed.
bool decode_hybrid(const uint8_t* p, const uint8_t* end, int bit_width, uint32_t* out, size_t n) {
  const size_t value_bytes = (static_cast<size_t>(bit_width) + 7) / 8;
  const uint64_t mask = bit_width == 32 ? 0xffffffffu : (uint64_t{1} << bit_width) - 1;
  size_t got = 0;
  while (got < n) {
    uint64_t header;
    if (!read_varint(p, end, header)) return false;
    if ((header & 1) == 0) {  // an RLE run: a count, then one value in value_bytes bytes
      if (value_bytes > static_cast<size_t>(end - p)) return false;
      uint32_t v = 0;
      for (size_t i = 0; i < value_bytes; ++i) v |= static_cast<uint32_t>(p[i]) << (8 * i);
      p += value_bytes;
      if (v > mask) return false;
      const size_t count = static_cast<size_t>(std::min<uint64_t>(header >> 1, n - got));
      std::fill(out + got, out + got + count, v);
      got += count;
    } else {  // bit-packed groups of 8 values, least significant bit first
      const uint64_t groups = header >> 1;
      const uint8_t* run_start = p;
      const size_t avail_bytes = static_cast<size_t>(end - p);
      // The last run may be cut short of its declared groups: take what the bytes hold.
      uint64_t values = groups > (uint64_t{1} << 58) ? uint64_t{1} << 61 : groups * 8;
      if (bit_width > 0)
        values = std::min<uint64_t>(values, uint64_t{avail_bytes} * 8 / static_cast<uint64_t>(bit_width));
      const size_t count = static_cast<size_t>(std::min<uint64_t>(values, n - got));
      if (count == 0 && groups > 0) return false;
      uint64_t acc = 0;
      int bits = 0;
      for (size_t i = 0; i < count; ++i) {
        while (bits < bit_width) {
          acc |= static_cast<uint64_t>(*p++) << bits;
          bits += 8;
        }
        out[got + i] = static_cast<uint32_t>(acc & mask);
        acc = bit_width == 64 ? 0 : acc >> bit_width;
        bits -= bit_width;
      }
      got += count;
      // Skip the rest of the run's bytes (padding of the last group).
      const auto width = static_cast<uint64_t>(bit_width);
      p = width == 0 ? run_start : groups <= avail_bytes / width ? run_start + groups * width : end;
      if (bit_width == 0 && groups == 0) return false;  // an empty run that would loop forever
    }
  }
  return true;
}

/// `w` (0..64) bits at bit `pos` of `p`, least significant first.
uint64_t get_bits(const uint8_t* p, uint64_t pos, int w) {
  uint64_t v = 0;
  for (int b = 0; b < w;) {
    const int shift = static_cast<int>(pos & 7);
    const int take = std::min(8 - shift, w - b);
    v |= static_cast<uint64_t>((p[pos >> 3] >> shift) & ((1u << take) - 1)) << b;
    b += take;
    pos += static_cast<uint64_t>(take);
  }
  return v;
}

/// DELTA_BINARY_PACKED: `n` integers (wrapping 64-bit arithmetic; INT32 columns take the low 32
/// bits). False when the data runs out or is malformed.
bool decode_delta(const uint8_t* p, const uint8_t* end, size_t n, std::vector<int64_t>& out) {
  uint64_t block, minis, total, first;
  if (!read_varint(p, end, block) || !read_varint(p, end, minis) || !read_varint(p, end, total) ||
      !read_varint(p, end, first))
    return false;
  if (block == 0 || block % 128 != 0 || block > (uint64_t{1} << 20) || minis == 0 || block % minis != 0 ||
      (block / minis) % 32 != 0 || total < n)
    return false;
  out.resize(n);
  if (n == 0) return true;
  uint64_t last = (first >> 1) ^ (~(first & 1) + 1);  // zigzag
  out[0] = static_cast<int64_t>(last);
  const uint64_t per_mini = block / minis;
  size_t got = 1;
  while (got < n) {
    uint64_t zz;
    if (!read_varint(p, end, zz)) return false;
    const uint64_t min_delta = (zz >> 1) ^ (~(zz & 1) + 1);
    if (minis > static_cast<uint64_t>(end - p)) return false;
    const uint8_t* widths = p;
    p += minis;
    for (uint64_t m = 0; m < minis && got < n; ++m) {
      const int w = widths[m];
      if (w > 64) return false;
      const uint64_t bytes = per_mini * static_cast<uint64_t>(w) / 8;
      if (bytes > static_cast<uint64_t>(end - p)) return false;
      const size_t take = static_cast<size_t>(std::min<uint64_t>(per_mini, n - got));
      for (size_t i = 0; i < take; ++i) {
        last += min_delta + get_bits(p, uint64_t{i} * static_cast<uint64_t>(w), w);
        out[got++] = static_cast<int64_t>(last);
      }
      p += bytes;
    }
  }
  return true;
}

size_t type_width(int32_t type) { return type == kDouble || type == kInt64 ? 8 : 4; }

/// `n` PLAIN values of the column's type at `p` into floats.
void plain_to_float(const ColumnInfo& c, const uint8_t* p, size_t n, float* out) {
  switch (c.type) {
    case kFloat:
      if (n > 0) std::memcpy(out, p, n * 4);  // a page of no values may come with no buffers at all
      return;
    case kDouble:
      for (size_t i = 0; i < n; ++i) {
        double v;
        std::memcpy(&v, p + 8 * i, 8);
        out[i] = static_cast<float>(v);
      }
      return;
    case kInt32:
      for (size_t i = 0; i < n; ++i) {
        int32_t v;
        std::memcpy(&v, p + 4 * i, 4);
        out[i] = c.is_unsigned ? static_cast<float>(static_cast<uint32_t>(v)) : static_cast<float>(v);
      }
      return;
    default:  // kInt64
      for (size_t i = 0; i < n; ++i) {
        int64_t v;
        std::memcpy(&v, p + 8 * i, 8);
        out[i] = c.is_unsigned ? static_cast<float>(static_cast<uint64_t>(v)) : static_cast<float>(v);
      }
  }
}

/// BYTE_STREAM_SPLIT: byte k of value i is at p[k * n + i].
void split_to_float(const ColumnInfo& c, const uint8_t* p, size_t n, float* out, std::vector<uint8_t>& tmp) {
  const size_t w = type_width(c.type);
  tmp.resize(n * w);
  for (size_t i = 0; i < n; ++i)
    for (size_t k = 0; k < w; ++k) tmp[i * w + k] = p[k * n + i];
  plain_to_float(c, tmp.data(), n, out);
}

/// Decodes one column chunk of a row group into out[0..rows).
class ChunkDecoder {
 public:
  ChunkDecoder(const ColumnInfo& col, const ColumnChunk& cc, uint64_t rows, std::string where)
      : col_(col), cc_(cc), rows_(rows), where_(std::move(where)) {}

  std::string decode(const uint8_t* chunk, size_t size, uint64_t chunk_at, float* out) {
    size_t pos = 0;
    uint64_t filled = 0;
    while (pos < size && filled < rows_) {
      PageHeader h;
      size_t used = 0;
      const std::string at = " (the page at byte " + std::to_string(chunk_at + pos) + ")";
      if (!decode_page_header(chunk + pos, size - pos, h, used)) return where_ + ": malformed page header" + at;
      pos += used;
      const auto bytes = static_cast<size_t>(h.compressed_size);
      if (bytes > size - pos) return where_ + ": the page runs past its column chunk" + at;
      const uint8_t* body = chunk + pos;
      pos += bytes;
      if (h.has_crc && crc32(body, bytes) != h.crc)
        return where_ + ": page CRC mismatch (corrupt data in bytes " + std::to_string(chunk_at + pos - bytes) + ".." +
               std::to_string(chunk_at + pos) + ")";
      if (h.type == kIndexPage) continue;
      if (h.type != kDataPage && h.type != kDataPageV2 && h.type != kDictionaryPage)
        return where_ + ": unsupported page type " + std::to_string(h.type) + at;
      if (!h.has_body) return where_ + ": the page header lacks its page type's header" + at;
      if (h.num_values < 0 || h.num_nulls < 0 || h.definition_levels_byte_length < 0 ||
          h.repetition_levels_byte_length < 0)
        return where_ + ": negative counts in the page header" + at;
      const uint64_t limit = h.type == kDictionaryPage ? rows_ : rows_ - filled;
      if (static_cast<uint64_t>(h.num_values) > limit)
        return where_ + ": the page holds " + std::to_string(h.num_values) + " values, more than the row group's " +
               std::to_string(limit) + " left" + at;
      // Levels, dictionary indices and values of a flat numeric column take at most 8 bytes a value
      // (plus run headers): a larger page is not one of this column's.
      if (static_cast<uint64_t>(h.uncompressed_size) > 64 + 24 * static_cast<uint64_t>(h.num_values))
        return where_ + ": the page's uncompressed size " + std::to_string(h.uncompressed_size) +
               " is impossible for " + std::to_string(h.num_values) + " values" + at;
      std::string err =
          h.type == kDictionaryPage ? dictionary_page(h, body, bytes, at) : data_page(h, body, bytes, at, out + filled);
      if (!err.empty()) return err;
      if (h.type != kDictionaryPage) filled += static_cast<uint64_t>(h.num_values);
    }
    if (filled != rows_)
      return where_ + ": pages hold " + std::to_string(filled) + " of " + std::to_string(rows_) + " values";
    return "";
  }

 private:
  /// The page's bytes [skip, end) uncompressed: `raw` when stored so, else decompressed into page_.
  std::string payload(const PageHeader& h, const uint8_t* body, size_t bytes, size_t skip, bool compressed,
                      const std::string& at, const uint8_t*& p, size_t& n) {
    const auto full = static_cast<size_t>(h.uncompressed_size);
    if (skip > bytes || skip > full) return where_ + ": the page's level lengths exceed its size" + at;
    if (!compressed || cc_.codec == kUncompressed) {
      if (bytes != full) return where_ + ": an uncompressed page whose two sizes differ" + at;
      p = body + skip;
      n = bytes - skip;
      return "";
    }
    page_.resize(full - skip);
    if (auto err = decompress(cc_.codec, body + skip, bytes - skip, page_.data(), full - skip); !err.empty())
      return where_ + ": " + err + at;
    p = page_.data();
    n = page_.size();
    return "";
  }

  std::string dictionary_page(const PageHeader& h, const uint8_t* body, size_t bytes, const std::string& at) {
    if (h.encoding != kPlain && h.encoding != kPlainDictionary)
      return where_ + ": unsupported dictionary encoding " + encoding_name(h.encoding) + at;
    const uint8_t* p;
    size_t n;
    if (auto err = payload(h, body, bytes, 0, true, at, p, n); !err.empty()) return err;
    const auto count = static_cast<size_t>(h.num_values);
    if (n < count * type_width(col_.type)) return where_ + ": the dictionary page is shorter than its values" + at;
    dict_.resize(count);
    plain_to_float(col_, p, count, dict_.data());
    have_dict_ = true;
    return "";
  }

  std::string data_page(const PageHeader& h, const uint8_t* body, size_t bytes, const std::string& at, float* out) {
    const auto count = static_cast<size_t>(h.num_values);
    const uint8_t* p;
    size_t n;
    const uint8_t* levels = nullptr;
    size_t levels_bytes = 0;
    if (h.type == kDataPage) {
      if (auto err = payload(h, body, bytes, 0, true, at, p, n); !err.empty()) return err;
      if (col_.optional) {
        if (h.definition_level_encoding != kRle)
          return where_ + ": unsupported definition level encoding " + encoding_name(h.definition_level_encoding) + at;
        if (n < 4) return where_ + ": the page is too short for its definition levels" + at;
        uint32_t len = 0;
        for (int i = 0; i < 4; ++i) len |= static_cast<uint32_t>(p[i]) << (8 * i);
        if (len > n - 4) return where_ + ": the definition levels run past the page" + at;
        levels = p + 4;
        levels_bytes = len;
        p += 4 + len;
        n -= 4 + len;
      }
    } else {
      if (h.repetition_levels_byte_length != 0)
        return where_ + ": unsupported: repetition levels (a nested column)" + at;
      if (!col_.optional && h.definition_levels_byte_length != 0)
        return where_ + ": definition levels in a REQUIRED column" + at;
      const auto skip = static_cast<size_t>(h.definition_levels_byte_length);
      if (skip > bytes) return where_ + ": the page's level lengths exceed its size" + at;
      levels = body;
      levels_bytes = skip;
      if (auto err = payload(h, body, bytes, skip, h.is_compressed, at, p, n); !err.empty()) return err;
    }
    size_t present = count;
    if (col_.optional) {
      defs_.resize(count);
      if (!decode_hybrid(levels, levels + levels_bytes, 1, defs_.data(), count))
        return where_ + ": malformed definition levels" + at;
      present = static_cast<size_t>(std::count(defs_.begin(), defs_.end(), 1u));
    }
    float* dst = out;
    if (col_.optional) {
      values_.resize(present);
      dst = values_.data();
    }
    switch (h.encoding) {
      case kPlain:
        if (n < present * type_width(col_.type)) return where_ + ": the page is shorter than its values" + at;
        plain_to_float(col_, p, present, dst);
        break;
      case kByteStreamSplit:
        if (n < present * type_width(col_.type)) return where_ + ": the page is shorter than its values" + at;
        split_to_float(col_, p, present, dst, split_);
        break;
      case kPlainDictionary:
      case kRleDictionary: {
        if (!have_dict_) return where_ + ": a dictionary-encoded page without a dictionary page before it" + at;
        if (present > 0) {
          if (n < 1 || p[0] > 32) return where_ + ": malformed dictionary index bit width" + at;
          indices_.resize(present);
          if (!decode_hybrid(p + 1, p + n, p[0], indices_.data(), present))
            return where_ + ": malformed dictionary indices" + at;
          const size_t d = dict_.size();
          for (size_t i = 0; i < present; ++i) {
            if (indices_[i] >= d)
              return where_ + ": dictionary index " + std::to_string(indices_[i]) + " past the dictionary's " +
                     std::to_string(d) + " entries" + at;
            dst[i] = dict_[indices_[i]];
          }
        }
        break;
      }
      case kDeltaBinaryPacked:
        if (col_.type != kInt32 && col_.type != kInt64)
          return where_ + ": DELTA_BINARY_PACKED in a " + type_name(col_.type) + " column" + at;
        if (!decode_delta(p, p + n, present, ints_)) return where_ + ": malformed DELTA_BINARY_PACKED values" + at;
        for (size_t i = 0; i < present; ++i) {
          const int64_t v = ints_[i];
          if (col_.type == kInt32)
            dst[i] = col_.is_unsigned ? static_cast<float>(static_cast<uint32_t>(v))
                                      : static_cast<float>(static_cast<int32_t>(v));
          else
            dst[i] = col_.is_unsigned ? static_cast<float>(static_cast<uint64_t>(v)) : static_cast<float>(v);
        }
        break;
      default:
        return where_ + ": unsupported encoding " + encoding_name(h.encoding) +
               " (PLAIN, BYTE_STREAM_SPLIT, DELTA_BINARY_PACKED and dictionary encodings are read)" + at;
    }
    if (col_.optional) {
      const float nan = std::numeric_limits<float>::quiet_NaN();
      size_t j = 0;
      for (size_t i = 0; i < count; ++i) out[i] = defs_[i] ? values_[j++] : nan;
    }
    return "";
  }

  const ColumnInfo& col_;
  const ColumnChunk& cc_;
  uint64_t rows_;
  std::string where_;
  std::vector<uint8_t> page_, split_;
  std::vector<uint32_t> defs_, indices_;
  std::vector<float> values_, dict_;
  std::vector<int64_t> ints_;
  bool have_dict_ = false;
};

}  // namespace

uint64_t max_group_values(uint64_t file_size) {
  const uint64_t floor = uint64_t{1} << 26;
  return file_size > (uint64_t{1} << 40) ? uint64_t{1} << 50 : std::max(floor, file_size * 1024);
}

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
    const auto chunk_at = static_cast<uint64_t>(chunk_start(cc));
    if (!read_at(fd, chunk.data(), chunk.size(), chunk_at))
      return where + ": read failed at byte " + std::to_string(chunk_at);
    ChunkDecoder decoder(info.column_info[c], cc, rows, where);
    if (auto err = decoder.decode(chunk.data(), chunk.size(), chunk_at, out.data() + c * rows); !err.empty())
      return err;
  }
  return "";
}

}  // namespace trainrt::parquet
