#include <doctest/doctest.h>
#include <fcntl.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "formats/parquet_codec.h"
#include "formats/parquet_reader.h"
#include "formats/parquet_thrift.h"
#include "formats/parquet_writer.h"

namespace trainrt::parquet {

TEST_CASE("crc32 is zlib's") {
  const std::string s = "123456789";
  CHECK(crc32(s.data(), s.size()) == 0xCBF43926u);
  CHECK(crc32(s.data() + 4, 5, crc32(s.data(), 4)) == 0xCBF43926u);
  CHECK(crc32(nullptr, 0) == 0u);
}

TEST_CASE("codecs round-trip through snappy and zstd and refuse what is corrupt or unsupported") {
  std::vector<uint8_t> data(100000);
  for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<uint8_t>((i * 2654435761u) >> 13);
  for (int32_t codec : {kUncompressed, kSnappy, kZstd}) {
    CAPTURE(codec_name(codec));
    std::vector<uint8_t> packed = {0xAA};  // compress() appends
    const size_t n = compress(codec, data.data(), data.size(), packed);
    REQUIRE(packed.size() == n + 1);
    std::vector<uint8_t> back(data.size());
    CHECK(decompress(codec, packed.data() + 1, n, back.data(), back.size()) == "");
    CHECK(back == data);
    CHECK(decompress(codec, packed.data() + 1, n, back.data(), back.size() - 1) != "");  // a length other than the page's
    if (codec != kUncompressed) {
      packed[1 + n / 2] ^= 0xFF;
      packed.resize(1 + n - 3);
      CHECK(decompress(codec, packed.data() + 1, n - 3, back.data(), back.size()) != "");
    }
  }
  int32_t codec = -1;
  CHECK((parse_write_codec("zstd", codec) && codec == kZstd));
  CHECK((parse_write_codec("none", codec) && codec == kUncompressed));
  CHECK_FALSE(parse_write_codec("gzip", codec));
  uint8_t out[4];
  CHECK(decompress(kGzip, out, 4, out, 4).find("gzip") != std::string::npos);
  CHECK(codec_name(42) == "codec 42");
}

TEST_CASE("thrift compact: field deltas, long ids, lists and skipping") {
  std::vector<uint8_t> buf;
  thrift::Writer w(buf);
  w.field_i32(1, -3);
  w.field_i64(20, int64_t{1} << 40);  // a delta above 15: the long form
  w.begin_list_field(21, thrift::kBinary, 16);
  for (int i = 0; i < 16; ++i) w.element_binary(std::to_string(i));
  w.begin_struct_field(22);
  w.field_i32(1, 7);
  w.end_struct();
  w.field_i32(23, 5);
  w.end_struct();
  CHECK(buf[0] == 0x15);  // delta 1, type i32
  CHECK(buf[1] == 0x05);  // zigzag(-3)

  thrift::Reader r(buf.data(), buf.size());
  int16_t id;
  thrift::Type t;
  REQUIRE(r.next_field(id, t));
  CHECK((id == 1 && t == thrift::kI32 && r.read_i32() == -3));
  REQUIRE(r.next_field(id, t));
  CHECK((id == 20 && r.read_i64() == (int64_t{1} << 40)));
  REQUIRE(r.next_field(id, t));
  CHECK(id == 21);
  r.skip(t);
  REQUIRE(r.next_field(id, t));
  CHECK((id == 22 && t == thrift::kStruct));
  r.skip(t);
  REQUIRE(r.next_field(id, t));
  CHECK((id == 23 && r.read_i32() == 5));
  CHECK_FALSE(r.next_field(id, t));
  CHECK(r.ok());
  thrift::Reader truncated(buf.data(), 4);
  truncated.skip(thrift::kStruct);
  CHECK_FALSE(truncated.ok());
}

namespace {

std::string temp_path(const char* name) {
  return (std::filesystem::temp_directory_path() / (std::string(name) + "-" + std::to_string(::getpid()))).string();
}

/// Writes `groups` row groups of a 3-column table and returns the column-major data per group.
std::vector<std::vector<float>> write_file(const std::string& path, const std::vector<uint64_t>& groups,
                                           uint32_t page_values) {
  FileWriter fw({"a", "b", "label"}, {{"k", "v"}}, "test");
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  const std::string head = FileWriter::header();
  out.write(head.data(), 4);
  uint64_t offset = 4;
  std::vector<std::vector<float>> data;
  for (uint64_t rows : groups) {
    std::vector<float> cm(rows * 3);
    for (size_t i = 0; i < cm.size(); ++i) cm[i] = static_cast<float>(i) * 0.25f - 100.0f + static_cast<float>(rows);
    EncodedRowGroup g;
    encode_row_group(cm.data(), rows, 3, g, page_values);
    out.write(reinterpret_cast<const char*>(g.bytes.data()), static_cast<std::streamsize>(g.bytes.size()));
    fw.add_row_group(g, offset);
    offset += g.bytes.size();
    data.push_back(std::move(cm));
  }
  const auto footer = fw.footer();
  out.write(reinterpret_cast<const char*>(footer.data()), static_cast<std::streamsize>(footer.size()));
  return data;
}

}  // namespace

TEST_CASE("parquet writer round trip through the reader") {
  const std::string path = temp_path("trainrt-parquet");
  const auto data = write_file(path, {1000, 7, 300}, 300);
  const int fd = ::open(path.c_str(), O_RDONLY);
  REQUIRE(fd >= 0);
  FileInfo info;
  REQUIRE(read_footer(fd, info) == "");
  CHECK(info.columns == std::vector<std::string>{"a", "b", "label"});
  CHECK(info.meta.num_rows == 1307);
  CHECK(info.meta.row_groups.size() == 3);
  CHECK(info.key_value("k") == "v");
  CHECK(info.meta.created_by == "test");
  const ColumnChunk& c = info.meta.row_groups[0].columns[1];
  CHECK(c.path == std::vector<std::string>{"b"});
  REQUIRE(c.has_min_max);
  float lo, hi;
  std::memcpy(&lo, c.min_value.data(), 4);
  std::memcpy(&hi, c.max_value.data(), 4);
  CHECK(lo == data[0][1000]);
  CHECK(hi == data[0][1999]);
  for (size_t g = 0; g < 3; ++g) {
    std::vector<float> back;
    REQUIRE(read_row_group(fd, info, g, back) == "");
    CHECK(back == data[g]);
  }
  ::close(fd);

  // A flipped byte in a page fails its CRC; a cut-off file fails the footer.
  {
    std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(static_cast<std::streamoff>(info.meta.row_groups[2].columns[2].data_page_offset + 40));
    f.put('\x7f');
  }
  const int fd2 = ::open(path.c_str(), O_RDONLY);
  REQUIRE(read_footer(fd2, info) == "");
  std::vector<float> back;
  CHECK(read_row_group(fd2, info, 0, back) == "");
  CHECK(read_row_group(fd2, info, 2, back).find("CRC") != std::string::npos);
  ::close(fd2);
  std::filesystem::resize_file(path, std::filesystem::file_size(path) - 3);
  const int fd3 = ::open(path.c_str(), O_RDONLY);
  CHECK(read_footer(fd3, info).find("magic") != std::string::npos);
  ::close(fd3);
  std::remove(path.c_str());
}

namespace {

// A hand-built file of the constructs trainrt's writer never makes but other writers do: data
// pages v2, dictionary pages, definition levels, BYTE_STREAM_SPLIT, snappy and zstd, CRCs.
struct Built {
  std::vector<uint8_t> bytes;
  FileMetaData meta;
};

void put_u32(std::vector<uint8_t>& out, uint32_t v) {
  for (int i = 0; i < 4; ++i) out.push_back(static_cast<uint8_t>(v >> (8 * i)));
}

template <typename T>
std::vector<uint8_t> plain(const std::vector<T>& v) {
  std::vector<uint8_t> out(v.size() * sizeof(T));
  std::memcpy(out.data(), v.data(), out.size());
  return out;
}

struct PageSpec {
  int32_t type = kDataPage;
  int32_t encoding = kPlain;
  int32_t num_values = 0, num_nulls = 0;
  std::vector<uint8_t> levels;  ///< v1: with their 4-byte length; v2: without
  std::vector<uint8_t> values;
  bool crc = true;
};

void add_page(std::vector<uint8_t>& out, int32_t codec, const PageSpec& p) {
  std::vector<uint8_t> body;
  size_t uncompressed;
  if (p.type == kDataPageV2) {
    body = p.levels;
    compress(codec, p.values.data(), p.values.size(), body);
    uncompressed = p.levels.size() + p.values.size();
  } else {
    std::vector<uint8_t> raw = p.levels;
    raw.insert(raw.end(), p.values.begin(), p.values.end());
    compress(codec, raw.data(), raw.size(), body);
    uncompressed = raw.size();
  }
  thrift::Writer w(out);
  w.field_i32(1, p.type);
  w.field_i32(2, static_cast<int32_t>(uncompressed));
  w.field_i32(3, static_cast<int32_t>(body.size()));
  if (p.crc) w.field_i32(4, static_cast<int32_t>(crc32(body.data(), body.size())));
  if (p.type == kDataPage) {
    w.begin_struct_field(5);
    w.field_i32(1, p.num_values);
    w.field_i32(2, p.encoding);
    w.field_i32(3, kRle);
    w.field_i32(4, kRle);
    w.end_struct();
  } else if (p.type == kDictionaryPage) {
    w.begin_struct_field(7);
    w.field_i32(1, p.num_values);
    w.field_i32(2, p.encoding);
    w.end_struct();
  } else {
    w.begin_struct_field(8);
    w.field_i32(1, p.num_values);
    w.field_i32(2, p.num_nulls);
    w.field_i32(3, p.num_values);
    w.field_i32(4, p.encoding);
    w.field_i32(5, static_cast<int32_t>(p.levels.size()));
    w.field_i32(6, 0);
    w.end_struct();
  }
  w.end_struct();
  out.insert(out.end(), body.begin(), body.end());
}

/// Columns x (INT64, optional, one v2 page, zstd), d (INT32, dictionary, snappy), y (DOUBLE,
/// BYTE_STREAM_SPLIT), label (FLOAT, two v2 pages); 10 rows.
Built build_file(int32_t d_encoding = kRleDictionary, int32_t x_codec = kZstd) {
  Built b;
  b.bytes = {'P', 'A', 'R', '1'};
  b.meta.schema = {{"schema", -1, -1, 4}, {"x", kInt64, kOptional, -1}, {"d", kInt32, kRequired, -1},
                   {"y", kDouble, kRequired, -1}, {"label", kFloat, kRequired, -1}};
  b.meta.num_rows = 10;
  RowGroup g;
  g.num_rows = 10;
  auto chunk = [&](const char* name, int32_t type, int32_t codec, const std::vector<PageSpec>& pages, bool dict) {
    ColumnChunk c;
    c.type = type;
    c.path = {name};
    c.codec = codec;
    c.num_values = 10;
    const auto start = static_cast<int64_t>(b.bytes.size());
    for (size_t i = 0; i < pages.size(); ++i) {
      if (i == 1 && dict) c.data_page_offset = static_cast<int64_t>(b.bytes.size());
      add_page(b.bytes, codec_supported(codec) ? codec : kUncompressed, pages[i]);  // lz4: declared only
    }
    if (dict) c.dictionary_page_offset = start;
    else c.data_page_offset = start;
    c.total_compressed_size = c.total_uncompressed_size = static_cast<int64_t>(b.bytes.size()) - start;
    c.file_offset = start;
    g.columns.push_back(c);
  };
  // x: definition levels 1011011101 as one bit-packed run (bit width 1, LSB first), 7 values.
  PageSpec x{kDataPageV2, kPlain, 10, 3, {0x05, 0b11101101, 0b10}, plain<int64_t>({10, -20, 30, 40, 50, -60, 70})};
  chunk("x", kInt64, x_codec, {x}, false);
  // d: dictionary {5, 7, 9}; indices (bit width 2) 0 1 2 1 0 2 2 1 bit-packed, then a run of two 2s.
  PageSpec dict{kDictionaryPage, kPlain, 3, 0, {}, plain<int32_t>({5, 7, 9})};
  PageSpec d{kDataPage, d_encoding, 10, 0, {}, {2, 0x03, 0b01100100, 0b01101000, 0x04, 0x02}};
  chunk("d", kInt32, kSnappy, {dict, d}, true);
  // y: BYTE_STREAM_SPLIT doubles: byte k of value i at k * 10 + i.
  std::vector<double> ys;
  for (int i = 0; i < 10; ++i) ys.push_back(0.5 * i - 1);
  const auto yp = plain(ys);
  std::vector<uint8_t> split(yp.size());
  for (size_t i = 0; i < 10; ++i)
    for (size_t k = 0; k < 8; ++k) split[k * 10 + i] = yp[i * 8 + k];
  chunk("y", kDouble, kUncompressed, {{kDataPage, kByteStreamSplit, 10, 0, {}, split, false}}, false);
  PageSpec l1{kDataPageV2, kPlain, 5, 0, {}, plain<float>({0, 1, 0, 1, 1})};
  PageSpec l2{kDataPageV2, kPlain, 5, 0, {}, plain<float>({0, 0, 1, 1, 0})};
  chunk("label", kFloat, kUncompressed, {l1, l2}, false);
  b.meta.row_groups.push_back(g);
  std::vector<uint8_t> footer;
  encode_file_metadata(b.meta, footer);
  b.bytes.insert(b.bytes.end(), footer.begin(), footer.end());
  put_u32(b.bytes, static_cast<uint32_t>(footer.size()));
  b.bytes.insert(b.bytes.end(), {'P', 'A', 'R', '1'});
  return b;
}

/// Writes BYTES to a temporary file and reads it: read_footer's error, then read_row_group's.
std::string read_back(const std::vector<uint8_t>& bytes, std::vector<float>& out, FileInfo* info_out = nullptr) {
  const std::string path = temp_path("trainrt-parquet-built");
  {
    std::ofstream f(path, std::ios::binary | std::ios::trunc);
    f.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  }
  const int fd = ::open(path.c_str(), O_RDONLY);
  FileInfo info;
  std::string err = read_footer(fd, info);
  if (err.empty()) err = read_row_group(fd, info, 0, out);
  ::close(fd);
  std::remove(path.c_str());
  if (info_out != nullptr) *info_out = info;
  return err;
}

}  // namespace

TEST_CASE("reads v2 pages, dictionaries, nulls, BYTE_STREAM_SPLIT, snappy and zstd") {
  const Built b = build_file();
  if (const char* seed = std::getenv("TRAINRT_WRITE_PARQUET_SEED")) {  // regenerates the fuzz seed
    std::ofstream(seed, std::ios::binary).write(reinterpret_cast<const char*>(b.bytes.data()),
                                                static_cast<std::streamsize>(b.bytes.size()));
  }
  std::vector<float> out;
  FileInfo info;
  REQUIRE(read_back(b.bytes, out, &info) == "");
  CHECK(info.column_info[0].optional);
  REQUIRE(out.size() == 40);
  const std::vector<float> x = {10, NAN, -20, 30, NAN, 40, 50, -60, NAN, 70};
  for (size_t i = 0; i < 10; ++i) {
    CAPTURE(i);
    if (std::isnan(x[i])) CHECK(std::isnan(out[i]));
    else CHECK(out[i] == x[i]);
  }
  CHECK(std::vector<float>(out.begin() + 10, out.begin() + 20) == std::vector<float>{5, 7, 9, 7, 5, 9, 9, 7, 9, 9});
  for (size_t i = 0; i < 10; ++i) CHECK(out[20 + i] == static_cast<float>(0.5 * static_cast<double>(i) - 1));
  CHECK(std::vector<float>(out.begin() + 30, out.end()) == std::vector<float>{0, 1, 0, 1, 1, 0, 0, 1, 1, 0});
  // PLAIN_DICTIONARY (the older name) reads the same.
  std::vector<float> again;
  REQUIRE(read_back(build_file(kPlainDictionary).bytes, again) == "");
  CHECK(std::vector<float>(again.begin() + 10, again.begin() + 20) == std::vector<float>(out.begin() + 10, out.begin() + 20));
}

TEST_CASE("unsupported constructs are named with their column") {
  std::vector<float> out;
  CHECK(read_back(build_file(kDeltaByteArray).bytes, out).find("column 'd': unsupported encoding DELTA_BYTE_ARRAY") !=
        std::string::npos);
  CHECK(read_back(build_file(kRleDictionary, kLz4).bytes, out).find("column 'x': unsupported compression codec lz4") !=
        std::string::npos);
  // A text column, a nested schema: rewrite the footer of a good file.
  for (int which = 0; which < 3; ++which) {
    Built b = build_file();
    const size_t footer_len = b.bytes[b.bytes.size() - 8] | (b.bytes[b.bytes.size() - 7] << 8);
    b.bytes.resize(b.bytes.size() - 8 - footer_len);
    std::string want;
    if (which == 0) {
      b.meta.schema[2].type = kByteArray;
      want = "column 'd' is BYTE_ARRAY";
    } else if (which == 1) {
      b.meta.schema[0].num_children = 3;
      b.meta.schema[3].num_children = 1;
      want = "nested";
    } else {
      b.meta.schema[1].repetition = kRepeated;
      want = "column 'x' is REPEATED";
    }
    std::vector<uint8_t> footer;
    encode_file_metadata(b.meta, footer);
    b.bytes.insert(b.bytes.end(), footer.begin(), footer.end());
    put_u32(b.bytes, static_cast<uint32_t>(footer.size()));
    b.bytes.insert(b.bytes.end(), {'P', 'A', 'R', '1'});
    CAPTURE(want);
    CHECK(read_back(b.bytes, out).find(want) != std::string::npos);
  }
  // A corrupt compressed page fails its CRC before it is decompressed.
  Built b = build_file();
  b.bytes[40] ^= 0x55;
  CHECK(read_back(b.bytes, out) != "");
}

}  // namespace trainrt::parquet
