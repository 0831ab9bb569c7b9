// Parquet shards from the writer: the same bytes whatever the tile size (rows asked of a source at
// once, or whole row groups as a GPU makes them), and compressed shards holding, page by page, the
// same values as uncompressed ones. Read here from the footer and pages directly.
#include "datagen/shard_writer.h"

#include <doctest/doctest.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <stdexcept>
#include <string>
#include <vector>

#include "datagen/cpu_generator.h"
#include "datagen/model.h"
#include "datagen/table.h"
#include "formats/parquet_codec.h"
#include "formats/parquet_format.h"
#include "formats/shard_format.h"

namespace trainrt::datagen {

namespace fs = std::filesystem;

namespace {

struct Dir {
  explicit Dir(const std::string& name)
      : path(fs::temp_directory_path() / ("trainrt-writer-" + name + "-" + std::to_string(::getpid()))) {
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~Dir() { fs::remove_all(path); }
  fs::path path;
};

std::vector<uint8_t> read_bytes(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

/// Writes a 2-shard table of `spec` (Parquet unless `format` says otherwise) with `threads` sources;
/// returns the shards' bytes.
std::vector<std::vector<uint8_t>> write_parquet(const Spec& spec, int32_t codec, uint64_t tile_bytes,
                                                const std::string& name, size_t threads = 2,
                                                bool writer_generates = false, Format format = Format::kParquet) {
  Dir dir(name);
  const Model model = build_model(spec);
  WriteOptions opt;
  opt.dir = dir.path.string();
  opt.layout = Layout{2, format, codec};
  opt.writer_generates = writer_generates;
  opt.block_bytes = 300 * 4 * (spec.features + 1);      // native: 300-row blocks
  opt.row_group_bytes = 700 * 4 * (spec.features + 1);  // 700-row groups
  opt.page_values = 256;
  opt.tile_bytes = tile_bytes;
  std::vector<ShardTask> tasks;
  for (uint32_t i = 0; i < 2; ++i)
    tasks.push_back({i, shard_first_row(spec.rows, i, 2), shard_row_count(spec.rows, i, 2)});
  const ModelView v = model.view();
  std::vector<RowSource> sources(threads,
                                 [v](uint64_t f, uint64_t n, float* x, float* y) { generate_rows_cpu(v, f, n, x, y); });
  write_shards(model, tasks, sources, opt);
  std::vector<std::vector<uint8_t>> files;
  for (uint32_t i = 0; i < 2; ++i) files.push_back(read_bytes(shard_path(opt.dir, i, opt.layout)));
  return files;
}

/// Every column of every row group of a Parquet file, decoded: [row group][column] -> values.
std::vector<std::vector<std::vector<float>>> decode_file(const std::vector<uint8_t>& file, int32_t codec) {
  REQUIRE(file.size() > 12);
  uint32_t len = 0;
  for (int i = 0; i < 4; ++i) len |= uint32_t{file[file.size() - 8 + i]} << (8 * i);
  parquet::FileMetaData m;
  REQUIRE(parquet::decode_file_metadata(file.data() + file.size() - 8 - len, len, m) == "");
  std::vector<std::vector<std::vector<float>>> groups;
  for (const auto& g : m.row_groups) {
    auto& columns = groups.emplace_back();
    int64_t stored = 0;
    for (const auto& c : g.columns) {
      CHECK(c.codec == codec);
      auto& values = columns.emplace_back();
      size_t at = static_cast<size_t>(c.data_page_offset);
      while (static_cast<int64_t>(values.size()) < c.num_values) {
        parquet::PageHeader h;
        size_t used = 0;
        REQUIRE(parquet::decode_page_header(file.data() + at, file.size() - at, h, used));
        const uint8_t* page = file.data() + at + used;
        CHECK(parquet::crc32(page, static_cast<size_t>(h.compressed_size)) == h.crc);
        std::vector<float> v(static_cast<size_t>(h.num_values));
        REQUIRE(parquet::decompress(codec, page, static_cast<size_t>(h.compressed_size),
                                    reinterpret_cast<uint8_t*>(v.data()), v.size() * 4) == "");
        values.insert(values.end(), v.begin(), v.end());
        at += used + static_cast<size_t>(h.compressed_size);
      }
      stored += c.total_compressed_size;
    }
    CHECK(stored == g.total_compressed_size);
  }
  return groups;
}

Spec spec_of(uint64_t rows, uint32_t features) {
  Spec s;
  s.rows = rows;
  s.features = features;
  s.seed = 11;
  s.informative = 3;
  s.redundant = 2;
  return s;
}

}  // namespace

TEST_CASE("Parquet shards are the same bytes for any tile size, or whole row groups") {
  const Spec spec = spec_of(5003, 9);
  const auto tiles = write_parquet(spec, parquet::kUncompressed, 32u << 10, "tiles");
  CHECK(write_parquet(spec, parquet::kUncompressed, 1, "tiny-tiles") == tiles);  // 8-row tiles
  CHECK(write_parquet(spec, parquet::kUncompressed, 0, "whole") == tiles);
  CHECK(write_parquet(spec, parquet::kZstd, 1, "zstd-tiny") == write_parquet(spec, parquet::kZstd, 0, "zstd-whole"));
}

TEST_CASE("the same bytes whether the writing thread also generates or not, for any number of threads") {
  const Spec spec = spec_of(7001, 7);
  for (Format format : {Format::kParquet, Format::kNative}) {
    CAPTURE(static_cast<int>(format));
    const auto one = write_parquet(spec, parquet::kUncompressed, 32u << 10, "one", 1, false, format);
    for (size_t threads : {1, 2, 3, 5})
      for (bool helping : {false, true}) {
        CAPTURE(threads);
        CAPTURE(helping);
        CHECK(write_parquet(spec, parquet::kUncompressed, 32u << 10, "many", threads, helping, format) == one);
      }
  }
}

TEST_CASE("a source that fails stops the writer with its error, whichever thread made the piece") {
  const Spec spec = spec_of(9000, 5);
  const Model model = build_model(spec);
  const ModelView v = model.view();
  for (bool helping : {false, true}) {
    CAPTURE(helping);
    Dir dir("failing");
    WriteOptions opt;
    opt.dir = dir.path.string();
    opt.layout = Layout{1, Format::kNative, parquet::kUncompressed};
    opt.writer_generates = helping;
    opt.block_bytes = 100 * 4 * (spec.features + 1);  // 90 pieces
    const std::vector<ShardTask> tasks{{0, 0, spec.rows}};
    // Every source fails on the piece holding row 4000, so it is made by whichever thread claims
    // it: a worker, or the writer when it helps.
    const std::vector<RowSource> sources(3, [v](uint64_t f, uint64_t n, float* x, float* y) {
      if (f <= 4000 && 4000 < f + n) throw std::runtime_error("source failed at row " + std::to_string(f));
      generate_rows_cpu(v, f, n, x, y);
    });
    CHECK_THROWS_WITH(write_shards(model, tasks, sources, opt), "source failed at row 4000");
    CHECK_FALSE(fs::exists(shard_path(opt.dir, 0, opt.layout)));
  }
}

TEST_CASE("snappy and zstd shards hold the uncompressed shards' values, page by page") {
  const Spec spec = spec_of(3001, 6);
  const auto plain = write_parquet(spec, parquet::kUncompressed, 32u << 10, "plain");
  for (int32_t codec : {parquet::kSnappy, parquet::kZstd}) {
    CAPTURE(parquet::codec_name(codec));
    const auto packed = write_parquet(spec, codec, 32u << 10, parquet::codec_name(codec));
    for (size_t i = 0; i < plain.size(); ++i) {
      const auto want = decode_file(plain[i], parquet::kUncompressed);
      CHECK(want.size() == 3);  // 1500 or 1501 rows: three row groups
      CHECK(decode_file(packed[i], codec) == want);
    }
  }
}

}  // namespace trainrt::datagen
