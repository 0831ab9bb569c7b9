#include <doctest/doctest.h>
#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "common/parquet_codec.h"
#include "common/parquet_reader.h"
#include "common/parquet_thrift.h"
#include "common/parquet_writer.h"

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

}  // namespace trainrt::parquet
