#include "train/test_shards.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <stdexcept>

#include <fmt/format.h>
#include <unistd.h>

#include "formats/parquet_writer.h"


namespace trainrt::testdata {
namespace {

uint64_t splitmix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

/// Roughly standard normal (Irwin-Hall of four 16-bit uniforms), from a counter.
float normal_at(uint64_t seed, uint64_t counter) {
  const uint64_t r = splitmix64(seed * 0x632be59bd9b4e019ull ^ counter);
  const double s = static_cast<double>(r & 0xffff) + static_cast<double>((r >> 16) & 0xffff) +
                   static_cast<double>((r >> 32) & 0xffff) + static_cast<double>(r >> 48);
  return static_cast<float>((s / 65536.0 - 2.0) * 1.7320508075688772);
}

class File {
 public:
  File(const std::string& path, const char* mode) : f_(std::fopen(path.c_str(), mode)), path_(path) {
    if (f_ == nullptr) throw std::runtime_error(fmt::format("{}: cannot open for writing", path));
  }
  ~File() {
    if (f_ != nullptr) std::fclose(f_);
  }
  void write(const void* p, size_t n) {
    if (n != 0 && std::fwrite(p, 1, n, f_) != n) throw std::runtime_error(fmt::format("{}: write failed", path_));
  }
  void close() {
    const bool ok = std::fclose(f_) == 0;
    f_ = nullptr;
    if (!ok) throw std::runtime_error(fmt::format("{}: close failed", path_));
  }

 private:
  std::FILE* f_;
  std::string path_;
};

void write_npy_array(const std::string& path, const float* data, uint64_t rows, uint32_t cols, bool matrix) {
  std::string header = matrix ? fmt::format("{{'descr': '<f4', 'fortran_order': False, 'shape': ({}, {}), }}", rows, cols)
                              : fmt::format("{{'descr': '<f4', 'fortran_order': False, 'shape': ({},), }}", rows);
  while ((10 + header.size() + 1) % 64 != 0) header += ' ';
  header += '\n';
  File f(path, "wb");
  const unsigned char preamble[8] = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0};
  f.write(preamble, sizeof preamble);
  const uint16_t len = static_cast<uint16_t>(header.size());
  f.write(&len, sizeof len);
  f.write(header.data(), header.size());
  f.write(data, rows * (matrix ? cols : 1) * sizeof(float));
  f.close();
}

}  // namespace

TempDir::TempDir() {
  const char* base = std::getenv("TMPDIR");
  std::string pattern = std::string(base != nullptr && *base != '\0' ? base : "/tmp") + "/trainrt-test.XXXXXX";
  if (::mkdtemp(pattern.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
  path_ = pattern;
}

TempDir::~TempDir() {
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
}

Table make_table(uint64_t rows, uint32_t features, uint64_t seed) {
  Table t;
  t.rows = rows;
  t.features = features;
  t.x.resize(rows * features);
  t.y.resize(rows);
  auto x = [&](uint64_t i, uint32_t j) { return j < features ? t.x[i * features + j] : 0.0f; };
  for (uint64_t i = 0; i < rows; ++i) {
    for (uint32_t j = 0; j < features; ++j) t.x[i * features + j] = normal_at(seed, i * features + j);
    const float score = x(i, 0) - 0.8f * x(i, 1) + 0.6f * x(i, 2) * x(i, 3) + 0.5f * std::fabs(x(i, 4)) - 0.4f +
                        0.5f * normal_at(~seed, i);
    t.y[i] = score > 0 ? 1.0f : 0.0f;
  }
  return t;
}

void write_shard(const std::string& path, const Table& table, uint64_t first, uint64_t rows, uint32_t index,
                 uint32_t count, uint64_t seed) {
  ShardHeader h = make_shard_header(table.features, rows, first, table.rows, seed, index, count);
  const float* x = table.x.data() + first * table.features;
  const float* y = table.y.data() + first;
  const size_t x_bytes = rows * table.features * sizeof(float);
  PayloadHasher hasher;
  hasher.update(x, x_bytes);
  hasher.update(y, rows * sizeof(float));
  h.payload_fnv = hasher.digest();
  const std::string tmp = path + ".tmp";
  File f(tmp, "wb");
  f.write(&h, sizeof h);
  f.write(x, x_bytes);
  f.write(y, rows * sizeof(float));
  f.close();
  std::filesystem::rename(tmp, path);
}

std::vector<std::string> write_shards(const std::string& dir, const Table& table, uint32_t shards, uint64_t seed) {
  std::filesystem::create_directories(dir);
  std::vector<std::string> paths;
  for (uint32_t s = 0; s < shards; ++s) {
    const uint64_t first = table.rows * s / shards;
    const uint64_t end = table.rows * (s + 1) / shards;
    paths.push_back((std::filesystem::path(dir) / shard_file_name(s, shards, "trs")).string());
    write_shard(paths.back(), table, first, end - first, s, shards, seed);
  }
  return paths;
}

std::vector<std::string> write_parquet_shards(const std::string& dir, const Table& table, uint32_t shards,
                                              uint64_t group_rows) {
  std::filesystem::create_directories(dir);
  std::vector<std::string> names;
  for (uint32_t c = 0; c < table.features; ++c) names.push_back(fmt::format("f{}", c));
  names.push_back("label");
  std::vector<std::string> paths;
  std::vector<float> columns;
  for (uint32_t s = 0; s < shards; ++s) {
    const uint64_t first = table.rows * s / shards;
    const uint64_t end = table.rows * (s + 1) / shards;
    paths.push_back((std::filesystem::path(dir) / shard_file_name(s, shards, "parquet")).string());
    std::FILE* f = std::fopen(paths.back().c_str(), "wb");
    if (f == nullptr) throw std::runtime_error("cannot write " + paths.back());
    parquet::FileWriter writer(names, {}, "trainrt-testdata");
    const std::string head = parquet::FileWriter::header();
    std::fwrite(head.data(), 1, head.size(), f);
    uint64_t offset = head.size();
    for (uint64_t at = first; at < end; at += group_rows) {
      const uint64_t rows = std::min(group_rows, end - at);
      columns.resize(rows * (table.features + 1));
      for (uint64_t r = 0; r < rows; ++r) {
        for (uint32_t c = 0; c < table.features; ++c) columns[c * rows + r] = table.x[(at + r) * table.features + c];
        columns[uint64_t{table.features} * rows + r] = table.y[at + r];
      }
      parquet::EncodedRowGroup group;
      parquet::encode_row_group(columns.data(), rows, table.features + 1, group);
      std::fwrite(group.bytes.data(), 1, group.bytes.size(), f);
      writer.add_row_group(group, offset);
      offset += group.bytes.size();
    }
    const auto footer = writer.footer();
    std::fwrite(footer.data(), 1, footer.size(), f);
    if (std::fclose(f) != 0) throw std::runtime_error("cannot write " + paths.back());
  }
  return paths;
}

void write_npy(const std::string& x_path, const std::string& y_path, const Table& table) {
  write_npy_array(x_path, table.x.data(), table.rows, table.features, true);
  write_npy_array(y_path, table.y.data(), table.rows, 1, false);
}

}  // namespace trainrt::testdata
