#include "datagen/inspect.h"

#include <fcntl.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "commands.h"
#include "common/fnv.h"
#include "common/parquet_reader.h"
#include "common/philox.h"
#include "common/shard_format.h"
#include "datagen/row_generator.h"
#include "datagen/table.h"

namespace trainrt::datagen {

namespace fs = std::filesystem;

TableAccumulator::TableAccumulator(uint32_t features, bool stats) : stats_(stats) {
  summary_.features = features;
  if (stats) summary_.columns.resize(features + 1);
}

void TableAccumulator::add_stat(size_t column, float v) {
  ColumnStats& c = summary_.columns[column];
  c.sum += v;
  if (summary_.rows == 0 || v < c.min) c.min = v;
  if (summary_.rows == 0 || v > c.max) c.max = v;
}

uint64_t row_checksum(uint64_t row, const float* features, uint32_t count, float label) {
  using trainc::common::fnv1a_step, trainc::common::kFnvOffset;
  uint64_t lanes[4] = {kFnvOffset, kFnvOffset, kFnvOffset, kFnvOffset};
  uint32_t i = 0;
  for (; i + 4 <= count; i += 4)
    for (uint32_t t = 0; t < 4; ++t) lanes[t] = fnv1a_step(lanes[t], philox::float_bits(features[i + t]));
  for (; i < count; ++i) lanes[i % 4] = fnv1a_step(lanes[i % 4], philox::float_bits(features[i]));
  lanes[count % 4] = fnv1a_step(lanes[count % 4], philox::float_bits(label));  // the label is word `count`
  uint64_t h = kFnvOffset;
  for (uint64_t lane : lanes) h = fnv1a_step(h, lane);
  return mix64(h + row * 0x9E3779B97F4A7C15ull);
}

void TableAccumulator::add_row(uint64_t row, const float* features, float label) {
  summary_.checksum += row_checksum(row, features, summary_.features, label);
  if (stats_) {
    for (uint32_t i = 0; i < summary_.features; ++i) add_stat(i, features[i]);
    add_stat(summary_.features, label);
  }
  ++summary_.rows;
}

namespace {

struct Fd {
  int fd;
  explicit Fd(const std::string& path) : fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC)) {
    if (fd < 0) throw std::runtime_error(path + ": cannot open it");
  }
  ~Fd() { ::close(fd); }
  void read_at(void* buf, size_t bytes, uint64_t offset, const std::string& path) const {
    auto p = static_cast<char*>(buf);
    while (bytes > 0) {
      const ssize_t n = ::pread(fd, p, bytes, static_cast<off_t>(offset));
      if (n <= 0) throw std::runtime_error(path + ": read failed");
      p += n;
      bytes -= static_cast<size_t>(n);
      offset += static_cast<uint64_t>(n);
    }
  }
};

struct Expected {
  uint64_t first_row, rows, total_rows, seed;
  uint32_t features, index, shards;
  std::string fingerprint;
};

void read_native(const std::string& path, const Expected& e, TableAccumulator& acc) {
  ShardHeader h;
  if (auto err = check_native_shard(path, h, /*verify_payload=*/false); !err.empty())
    throw std::runtime_error(path + ": " + err);
  if (h.first_row != e.first_row || h.rows != e.rows || h.features != e.features || h.total_rows != e.total_rows ||
      h.seed != e.seed || h.shard_index != e.index || h.shard_count != e.shards)
    throw std::runtime_error(path + ": its header does not match " + kTableFile);
  const Fd fd(path);
  const uint64_t label_offset = sizeof h + h.rows * h.features * sizeof(float);
  const uint64_t block = std::max<uint64_t>(1, (4u << 20) / (4 * (uint64_t{h.features} + 1)));
  std::vector<float> features, labels;
  PayloadHasher hasher;
  for (uint64_t r = 0; r < h.rows; r += block) {
    const uint64_t n = std::min(block, h.rows - r);
    features.resize(n * h.features);
    labels.resize(n);
    fd.read_at(features.data(), features.size() * 4, sizeof h + r * h.features * 4, path);
    fd.read_at(labels.data(), n * 4, label_offset + r * 4, path);
    hasher.update(features.data(), features.size() * 4);
    for (uint64_t i = 0; i < n; ++i) acc.add_row(h.first_row + r + i, features.data() + i * h.features, labels[i]);
  }
  for (uint64_t r = 0; r < h.rows; r += block) {
    const uint64_t n = std::min(block, h.rows - r);
    labels.resize(n);
    fd.read_at(labels.data(), n * 4, label_offset + r * 4, path);
    hasher.update(labels.data(), n * 4);
  }
  if (hasher.digest() != h.payload_fnv)
    throw std::runtime_error(path + ": payload checksum mismatch (corrupt or altered)");
}

void read_parquet(const std::string& path, const Expected& e, TableAccumulator& acc) {
  const Fd fd(path);
  parquet::FileInfo info;
  if (auto err = parquet::read_footer(fd.fd, info); !err.empty()) throw std::runtime_error(path + ": " + err);
  if (static_cast<uint64_t>(info.meta.num_rows) != e.rows || info.columns != column_names(e.features) ||
      info.key_value("trainrt.first_row") != std::to_string(e.first_row) ||
      info.key_value("trainrt.table") != e.fingerprint)
    throw std::runtime_error(path + ": its rows, columns or table fingerprint do not match " + kTableFile);
  std::vector<float> columns, row(e.features);
  uint64_t next = e.first_row;
  for (size_t g = 0; g < info.meta.row_groups.size(); ++g) {
    if (auto err = parquet::read_row_group(fd.fd, info, g, columns); !err.empty())
      throw std::runtime_error(path + ": " + err);
    const auto rows = static_cast<uint64_t>(info.meta.row_groups[g].num_rows);
    for (uint64_t r = 0; r < rows; ++r) {
      for (uint32_t c = 0; c < e.features; ++c) row[c] = columns[c * rows + r];
      acc.add_row(next++, row.data(), columns[uint64_t{e.features} * rows + r]);
    }
  }
}

nlohmann::json read_table_json(const std::string& dir) {
  const fs::path p = fs::path(dir) / kTableFile;
  std::ifstream in(p);
  if (!in)
    throw std::runtime_error(fmt::format("{}: no {} (not a trainrt table, or its generation has not finished)", dir,
                                         kTableFile));
  std::stringstream ss;
  ss << in.rdbuf();
  auto j = nlohmann::json::parse(ss.str(), nullptr, false);
  if (j.is_discarded() || !j.is_object() || !j.contains("rows") || !j.contains("features") || !j.contains("files"))
    throw std::runtime_error(p.string() + ": not a valid table description");
  // Every field summarize_table reads, checked before it is read (a missing key of a const object
  // is undefined behaviour in nlohmann::json; found by the trainrt_config fuzzer).
  const auto bad = [&](const std::string& field, const std::string& what) {
    return std::runtime_error(fmt::format("{}: field '{}' {}; the table cannot be read (generate it again)", p.string(),
                                          field, what));
  };
  const auto count = [&](const nlohmann::json& obj, const std::string& key, const std::string& field, uint64_t max) {
    if (!obj.contains(key)) throw bad(field, "is missing");
    if (!obj[key].is_number_unsigned() || obj[key].get<uint64_t>() > max)
      throw bad(field, fmt::format("is {}, not a count up to {}", obj[key].dump(), max));
  };
  count(j, "rows", "rows", uint64_t{1} << 62);
  count(j, "features", "features", 65536);
  if (j.contains("seed")) count(j, "seed", "seed", ~uint64_t{0});
  if (j.contains("format") && !j["format"].is_string()) throw bad("format", "is not a string");
  if (!j["files"].is_array()) throw bad("files", "is not a list");
  for (size_t i = 0; i < j["files"].size(); ++i) {
    const auto& f = j["files"][i];
    const std::string at = fmt::format("files[{}]", i);
    if (!f.is_object()) throw bad(at, "is not an object");
    if (!f.contains("name") || !f["name"].is_string() || f["name"].get<std::string>().find('/') != std::string::npos)
      throw bad(at + ".name", "is missing or not a file name");
    count(f, "first_row", at + ".first_row", uint64_t{1} << 62);
    count(f, "rows", at + ".rows", uint64_t{1} << 62);
  }
  return j;
}

}  // namespace

TableSummary summarize_table(const std::string& dir, bool stats) {
  const nlohmann::json table = read_table_json(dir);
  nlohmann::json spec_json;
  for (const char* key : {"rows", "features", "seed", "task", "params", "shards", "format"})
    if (table.contains(key)) spec_json[key] = table[key];
  Expected e{};
  e.total_rows = table["rows"].get<uint64_t>();
  e.features = table["features"].get<uint32_t>();
  e.seed = table.value("seed", uint64_t{0});
  e.shards = static_cast<uint32_t>(table["files"].size());
  e.fingerprint = fingerprint(spec_json);
  const bool parquet = table.value("format", "native") == "parquet";
  TableAccumulator acc(e.features, stats);
  for (uint32_t i = 0; i < e.shards; ++i) {
    const auto& f = table["files"][i];
    e.index = i;
    e.first_row = f["first_row"].get<uint64_t>();
    e.rows = f["rows"].get<uint64_t>();
    if (e.first_row != acc.summary().rows)
      throw std::runtime_error(fmt::format("{}: shard {} starts at row {}, expected {}", kTableFile, i, e.first_row,
                                           acc.summary().rows));
    const std::string path = (fs::path(dir) / f["name"].get<std::string>()).string();
    if (!fs::exists(path)) throw std::runtime_error(path + ": missing");
    if (parquet) read_parquet(path, e, acc);
    else read_native(path, e, acc);
  }
  if (acc.summary().rows != e.total_rows)
    throw std::runtime_error(fmt::format("{}: the shards hold {} rows, the table {}", dir, acc.summary().rows,
                                         e.total_rows));
  return acc.summary();
}

std::string format_summary(const TableSummary& s, bool stats) {
  std::string out = fmt::format("rows: {}\ncolumns: {} ({} features + label)\nchecksum: {:016x}\n", s.rows,
                                s.features + 1, s.features, s.checksum);
  if (stats) {
    for (size_t c = 0; c < s.columns.size(); ++c)
      out += fmt::format("{}: sum {} min {} max {}\n", c < s.features ? "f" + std::to_string(c) : std::string("label"),
                         s.columns[c].sum, s.columns[c].min, s.columns[c].max);
  }
  return out;
}

int run_inspect(const std::string& dir, bool stats) {
  try {
    fmt::print("{}", format_summary(summarize_table(dir, stats), stats));
    return kOk;
  } catch (const std::exception& e) {
    fmt::print(stderr, "trainrt inspect: {}\n", e.what());
    return kFailed;
  }
}

}  // namespace trainrt::datagen
