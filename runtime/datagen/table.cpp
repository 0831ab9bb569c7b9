#include "datagen/table.h"

#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include <fmt/format.h>

#include "common/fnv.h"
#include "common/parquet_reader.h"
#include "common/shard_format.h"

namespace trainrt::datagen {

namespace fs = std::filesystem;

std::string shard_path(const std::string& dir, uint32_t index, const Layout& layout) {
  return (fs::path(dir) / shard_file_name(index, layout.shards, format_extension(layout.format))).string();
}

std::string temp_shard_path(const std::string& dir, uint32_t index, const Layout& layout) {
  std::string name = ".";  // appended piecewise: GCC 12 warns (-Wrestrict) on "." + string temporaries
  name += shard_file_name(index, layout.shards, format_extension(layout.format));
  name += ".tmp";
  return (fs::path(dir) / name).string();
}

std::vector<std::string> column_names(uint32_t features) {
  std::vector<std::string> names;
  names.reserve(features + 1);
  for (uint32_t i = 0; i < features; ++i) names.push_back(fmt::format("f{}", i));
  names.push_back("label");
  return names;
}

std::string fingerprint(const nlohmann::json& spec_json) {
  return fmt::format("{:016x}", trainc::common::fnv1a64(spec_json.dump()));
}

namespace {

std::string check_native(const std::string& path, const Spec& spec, const Layout& layout, uint32_t index, bool deep) {
  ShardHeader h;
  if (auto err = check_native_shard(path, h, deep); !err.empty()) return err;
  const uint64_t first = shard_first_row(spec.rows, index, layout.shards);
  const uint64_t rows = shard_row_count(spec.rows, index, layout.shards);
  if (h.features != spec.features || h.rows != rows || h.first_row != first || h.total_rows != spec.rows ||
      h.seed != spec.seed || h.shard_index != index || h.shard_count != layout.shards)
    return fmt::format("its header (shard {}/{}, rows {} from {} of {}, {} features, seed {}) is not this table's",
                       h.shard_index, h.shard_count, h.rows, h.first_row, h.total_rows, h.features, h.seed);
  return "";
}

std::string check_parquet(const std::string& path, const Spec& spec, const Layout& layout, uint32_t index) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return "cannot open it";
  parquet::FileInfo info;
  std::string err = parquet::read_footer(fd, info);
  ::close(fd);
  if (!err.empty()) return err;
  const auto rows = static_cast<int64_t>(shard_row_count(spec.rows, index, layout.shards));
  if (info.meta.num_rows != rows) return fmt::format("it holds {} rows, expected {}", info.meta.num_rows, rows);
  if (info.columns != column_names(spec.features)) return "its columns are not this table's";
  if (info.key_value("trainrt.table") != fingerprint(to_json(spec, layout)) ||
      info.key_value("trainrt.first_row") != std::to_string(shard_first_row(spec.rows, index, layout.shards)))
    return "it belongs to another table (trainrt.table / trainrt.first_row differ)";
  return "";
}

}  // namespace

std::string check_shard(const std::string& path, const Spec& spec, const Layout& layout, uint32_t index, bool deep) {
  if (!fs::exists(path)) return "missing";
  return layout.format == Format::kNative ? check_native(path, spec, layout, index, deep)
                                          : check_parquet(path, spec, layout, index);
}

void write_file_atomically(const std::string& path, const std::string& text) {
  const std::string tmp = path + ".tmp." + std::to_string(::getpid());
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out << text;
    if (!(out.flush())) throw std::runtime_error("cannot write " + tmp);
  }
  std::error_code ec;
  fs::rename(tmp, path, ec);
  if (ec) {
    fs::remove(tmp, ec);
    throw std::runtime_error("cannot rename " + tmp + " to " + path);
  }
}

namespace {

/// The stored spec keys that differ from ours ("" when none do).
std::string differences(const nlohmann::json& stored, const nlohmann::json& ours) {
  std::string diff;
  for (const auto& [key, value] : ours.items())
    if (!stored.contains(key) || stored[key] != value)
      diff += fmt::format("{}{}: {} here, {} there", diff.empty() ? "" : "; ", key, value.dump(),
                          stored.contains(key) ? stored[key].dump() : "nothing");
  return diff;
}

nlohmann::json read_json(const fs::path& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return nlohmann::json::parse(ss.str(), nullptr, /*allow_exceptions=*/false);
}

}  // namespace

void claim_folder(const std::string& dir, const nlohmann::json& spec_json) {
  for (const char* name : {kTableFile, kParamsFile}) {
    const fs::path p = fs::path(dir) / name;
    if (!fs::exists(p)) continue;
    const nlohmann::json stored = read_json(p);
    if (stored.is_discarded()) throw std::runtime_error(fmt::format("{} is not valid JSON; remove it", p.string()));
    if (auto diff = differences(stored, spec_json); !diff.empty())
      throw std::runtime_error(fmt::format("{} already holds a different table ({}); use another --out folder or empty "
                                           "this one",
                                           dir, diff));
  }
  const fs::path params = fs::path(dir) / kParamsFile;
  if (!fs::exists(params)) write_file_atomically(params.string(), spec_json.dump(2) + "\n");
}

void write_table_metadata(const std::string& dir, const Spec& spec, const Layout& layout) {
  nlohmann::json j = to_json(spec, layout);
  j["trainrt_table"] = 1;
  j["columns"] = column_names(spec.features);
  nlohmann::json files = nlohmann::json::array();
  for (uint32_t i = 0; i < layout.shards; ++i)
    files.push_back({{"name", shard_file_name(i, layout.shards, format_extension(layout.format))},
                     {"first_row", shard_first_row(spec.rows, i, layout.shards)},
                     {"rows", shard_row_count(spec.rows, i, layout.shards)}});
  j["files"] = files;
  write_file_atomically((fs::path(dir) / kTableFile).string(), j.dump(2) + "\n");
}

}  // namespace trainrt::datagen
