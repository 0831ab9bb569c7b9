// The Parquet writer's row groups taken apart page by page, without the reader: every page's header,
// CRC and (de)compressed values, the column chunks' sizes and codec, the statistics, and the spans
// that refer to the caller's values rather than copying them.
#include "formats/parquet_writer.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "formats/parquet_codec.h"

namespace trainrt::parquet {

namespace {

/// The row group's bytes, span after span, as they would be written.
std::vector<uint8_t> flatten(const EncodedRowGroup& g) {
  std::vector<uint8_t> out;
  for (const auto& s : g.spans) {
    const auto* p = static_cast<const uint8_t*>(g.data(s));
    out.insert(out.end(), p, p + s.size);
  }
  return out;
}

/// Column-major test data: a few columns of rows values with repeats, so that codecs find something.
std::vector<float> columns_of(uint64_t rows, size_t columns) {
  std::vector<float> cm(rows * columns);
  for (size_t i = 0; i < cm.size(); ++i) cm[i] = static_cast<float>((i * 7919) % 1013) * 0.5f - 200.0f;
  return cm;
}

/// Decodes column chunk `c` of a flattened row group back into floats; checks headers and CRCs.
std::vector<float> read_chunk(const std::vector<uint8_t>& bytes, const ColumnChunk& c) {
  std::vector<float> values;
  int64_t at = c.data_page_offset, compressed = 0, uncompressed = 0;
  while (static_cast<int64_t>(values.size()) < c.num_values) {
    PageHeader h;
    size_t used = 0;
    REQUIRE(at < static_cast<int64_t>(bytes.size()));
    REQUIRE(decode_page_header(bytes.data() + at, bytes.size() - static_cast<size_t>(at), h, used));
    REQUIRE(h.type == kDataPage);
    REQUIRE(h.has_crc);
    const uint8_t* page = bytes.data() + at + used;
    REQUIRE(at + static_cast<int64_t>(used) + h.compressed_size <= static_cast<int64_t>(bytes.size()));
    CHECK(crc32(page, static_cast<size_t>(h.compressed_size)) == h.crc);
    CHECK(h.uncompressed_size == h.num_values * 4);
    std::vector<float> v(static_cast<size_t>(h.num_values));
    REQUIRE(decompress(c.codec, page, static_cast<size_t>(h.compressed_size), reinterpret_cast<uint8_t*>(v.data()),
                       static_cast<size_t>(h.uncompressed_size)) == "");
    values.insert(values.end(), v.begin(), v.end());
    compressed += static_cast<int64_t>(used) + h.compressed_size;
    uncompressed += static_cast<int64_t>(used) + h.uncompressed_size;
    at += static_cast<int64_t>(used) + h.compressed_size;
  }
  CHECK(compressed == c.total_compressed_size);
  CHECK(uncompressed == c.total_uncompressed_size);
  return values;
}

}  // namespace

TEST_CASE("row groups encode to pages that decode to the same values, with every codec") {
  const size_t columns = 3;
  for (int32_t codec : {kUncompressed, kSnappy, kZstd}) {
    for (uint64_t rows : {uint64_t{1}, uint64_t{299}, uint64_t{300}, uint64_t{1000}}) {
      CAPTURE(codec_name(codec));
      CAPTURE(rows);
      const std::vector<float> cm = columns_of(rows, columns);
      EncodedRowGroup g;
      EncodeOptions opt;
      opt.page_values = 300;  // several pages per column for the larger groups
      opt.codec = codec;
      encode_row_group(cm.data(), rows, columns, g, opt);
      const std::vector<uint8_t> bytes = flatten(g);
      CHECK(bytes.size() == g.size());
      REQUIRE(g.chunks.size() == columns);
      CHECK(g.rows == rows);
      int64_t next = 0;
      for (size_t c = 0; c < columns; ++c) {
        const ColumnChunk& chunk = g.chunks[c];
        CHECK(chunk.codec == codec);
        CHECK(chunk.data_page_offset == next);  // chunks follow each other
        next += chunk.total_compressed_size;
        const std::vector<float> back = read_chunk(bytes, chunk);
        CHECK(std::memcmp(back.data(), cm.data() + c * rows, rows * 4) == 0);
        float lo = cm[c * rows], hi = lo;
        for (uint64_t r = 0; r < rows; ++r) lo = std::min(lo, cm[c * rows + r]), hi = std::max(hi, cm[c * rows + r]);
        REQUIRE(chunk.has_min_max);
        float got_lo, got_hi;
        std::memcpy(&got_lo, chunk.min_value.data(), 4);
        std::memcpy(&got_hi, chunk.max_value.data(), 4);
        CHECK(got_lo == lo);
        CHECK(got_hi == hi);
      }
      CHECK(next == static_cast<int64_t>(bytes.size()));
      if (codec == kUncompressed) {
        // The values are referred to, not copied, and the bytes are those of the copying encoder.
        bool refers = false;
        for (const auto& s : g.spans) refers = refers || s.external != nullptr;
        CHECK(refers);
        CHECK(g.bytes.size() == g.size() - rows * columns * 4);  // headers only
        EncodedRowGroup copied;
        encode_row_group(cm.data(), rows, columns, copied, opt.page_values);
        CHECK(std::vector<uint8_t>(copied.bytes.begin(), copied.bytes.end()) == bytes);
      }
    }
  }
}

TEST_CASE("a footer records codecs and both sizes of compressed row groups") {
  const std::vector<float> cm = columns_of(5000, 2);
  EncodedRowGroup g;
  EncodeOptions opt;
  opt.codec = kZstd;
  encode_row_group(cm.data(), 5000, 2, g, opt);
  FileWriter fw({"a", "label"}, {}, "test");
  fw.add_row_group(g, 4);
  fw.add_row_group(g, 4 + g.size());
  const std::vector<uint8_t> footer = fw.footer();
  uint32_t len = 0;
  for (int i = 0; i < 4; ++i) len |= uint32_t{footer[footer.size() - 8 + i]} << (8 * i);
  FileMetaData m;
  REQUIRE(decode_file_metadata(footer.data(), len, m) == "");
  REQUIRE(m.row_groups.size() == 2);
  CHECK(m.num_rows == 10000);
  const RowGroup& second = m.row_groups[1];
  CHECK(second.file_offset == static_cast<int64_t>(4 + g.size()));
  CHECK(second.total_compressed_size == static_cast<int64_t>(g.size()));
  CHECK(second.total_byte_size > second.total_compressed_size);  // the repeats compress
  CHECK(second.columns[1].codec == kZstd);
  CHECK(second.columns[1].data_page_offset == static_cast<int64_t>(4 + g.size()) + g.chunks[1].data_page_offset);
}

TEST_CASE("the encoder refuses codecs it cannot write") {
  const std::vector<float> cm = columns_of(10, 1);
  EncodedRowGroup g;
  EncodeOptions opt;
  opt.codec = kGzip;
  CHECK_THROWS_AS(encode_row_group(cm.data(), 10, 1, g, opt), std::invalid_argument);
}

}  // namespace trainrt::parquet
