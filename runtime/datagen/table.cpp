#include "datagen/table.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include <fmt/format.h>

#include "common/fnv.h"
#include "formats/parquet_codec.h"
#include "formats/parquet_reader.h"
#include "formats/shard_format.h"

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

void sync_folder(const std::string& dir) {
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) throw StorageError(fmt::format("cannot open the folder {} to sync it: {}", dir, std::strerror(errno)));
  const int rc = ::fsync(fd), err = errno;
  ::close(fd);
  // EINVAL: a file system that cannot sync folders (some FUSE mounts); the rename is as durable as it gets there.
  if (rc != 0 && err != EINVAL) throw StorageError(fmt::format("cannot sync the folder {}: {}", dir, std::strerror(err)));
}

void write_file_atomically(const std::string& path, const std::string& text) {
  const std::string tmp = path + ".tmp." + std::to_string(::getpid());
  auto fail = [&](const char* what) {
    const int err = errno;
    ::unlink(tmp.c_str());
    throw StorageError(fmt::format("cannot {} {}: {}", what, tmp, std::strerror(err)));
  };
  ::unlink(tmp.c_str());  // a leftover of an earlier process with the same pid
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
  if (fd < 0) fail("create");
  for (size_t at = 0; at < text.size();) {
    const ssize_t n = ::write(fd, text.data() + at, text.size() - at);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      if (n == 0) errno = EIO;
      const int err = errno;
      ::close(fd);
      errno = err;
      fail("write");
    }
    at += static_cast<size_t>(n);
  }
  if (::fsync(fd) != 0) {
    const int err = errno;
    ::close(fd);
    errno = err;
    fail("fsync");
  }
  if (::close(fd) != 0) fail("close");
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    const int err = errno;
    ::unlink(tmp.c_str());
    throw StorageError(fmt::format("cannot rename {} to {}: {}", tmp, path, std::strerror(err)));
  }
  sync_folder(fs::path(path).parent_path().string());
}

namespace {

/// The stored spec keys that differ from ours ("" when none do).
std::string differences(const nlohmann::json& stored, const nlohmann::json& ours) {
  std::string diff;
  for (const auto& [key, value] : ours.items())
    if (!stored.contains(key) || stored[key] != value)
      diff += fmt::format("{}{}: {} here, {} there", diff.empty() ? "" : "; ", key, value.dump(),
                          stored.contains(key) ? stored[key].dump() : "nothing");
  // A spec key that may be absent (uncompressed Parquet has no "compression"): absent here, present there.
  for (const char* key : {"compression"})
    if (!ours.contains(key) && stored.contains(key))
      diff += fmt::format("{}{}: nothing here, {} there", diff.empty() ? "" : "; ", key, stored[key].dump());
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

namespace {

[[noreturn]] void broken(const std::string& where, const std::string& what) {
  throw std::runtime_error(fmt::format("{}: {}. This table description is broken, so the table cannot be trusted: "
                                       "generate the table again (trainrt datagen with the same flags and --out "
                                       "keeps the shards that check out)",
                                       where, what));
}

const nlohmann::json& need(const std::string& where, const nlohmann::json& obj, const char* key,
                           const std::string& name) {
  if (!obj.is_object() || !obj.contains(key)) broken(where, fmt::format("field '{}' is missing", name));
  return obj[key];
}

uint64_t need_count(const std::string& where, const nlohmann::json& v, const std::string& name, uint64_t lo,
                    uint64_t hi) {
  if (!v.is_number_unsigned() || v.get<uint64_t>() < lo || v.get<uint64_t>() > hi)
    broken(where, fmt::format("field '{}' is {}, expected a whole number from {} to {}", name,
                              v.dump().substr(0, 60), lo, hi));
  return v.get<uint64_t>();
}

}  // namespace

TableMetadata read_table_metadata(const std::string& dir) {
  const fs::path p = fs::path(dir) / kTableFile;
  const std::string where = p.string();
  std::error_code ec;
  if (!fs::exists(p, ec)) {
    if (ec)
      throw std::runtime_error(fmt::format("{}: cannot read it: {} (is the folder's storage there?)", where,
                                           ec.message()));
    throw std::runtime_error(fmt::format("{}: no {} (not a trainrt table, or its generation has not finished: "
                                         "run trainrt datagen again to complete it)",
                                         dir, kTableFile));
  }
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  if (!in && !in.eof()) throw std::runtime_error(fmt::format("{}: cannot read it", where));
  const nlohmann::json j = nlohmann::json::parse(ss.str(), nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) broken(where, "it is not valid JSON");
  if (!j.is_object()) broken(where, "it is not a JSON object");
  TableMetadata m;
  for (const char* key : {"rows", "features", "seed", "task", "params", "shards", "format", "compression"})
    if (j.contains(key)) m.spec_json[key] = j[key];
  const auto& version = need(where, j, "trainrt_table", "trainrt_table");
  if (version != 1) broken(where, fmt::format("field 'trainrt_table' is {}, expected 1", version.dump()));
  m.features = static_cast<uint32_t>(need_count(where, need(where, j, "features", "features"), "features", 1, 65536));
  m.rows = need_count(where, need(where, j, "rows", "rows"), "rows", 1, uint64_t{1} << 62);
  m.seed = need_count(where, need(where, j, "seed", "seed"), "seed", 0, UINT64_MAX);
  const auto& format = need(where, j, "format", "format");
  if (format != "native" && format != "parquet")
    broken(where, fmt::format("field 'format' is {}, expected \"native\" or \"parquet\"", format.dump().substr(0, 60)));
  m.format = format == "parquet" ? Format::kParquet : Format::kNative;
  if (j.contains("compression")) {  // absent: uncompressed
    const auto& codec = j["compression"];
    if (m.format != Format::kParquet || !codec.is_string() ||
        !parquet::parse_write_codec(codec.get<std::string>(), m.compression))
      broken(where, fmt::format("field 'compression' is {}, expected \"snappy\" or \"zstd\" (Parquet only)",
                                codec.dump().substr(0, 60)));
  }
  const auto& task = need(where, j, "task", "task");
  if (task != "classification" && task != "regression")
    broken(where, fmt::format("field 'task' is {}, expected \"classification\" or \"regression\"",
                              task.dump().substr(0, 60)));
  if (!need(where, j, "params", "params").is_object()) broken(where, "field 'params' is not an object");
  const uint64_t shards = need_count(where, need(where, j, "shards", "shards"), "shards", 1, 99999);
  const auto& files = need(where, j, "files", "files");
  if (!files.is_array()) broken(where, "field 'files' is not a list");
  if (files.size() != shards)
    broken(where, fmt::format("field 'files' lists {} files but field 'shards' says {}", files.size(), shards));
  if (j.contains("columns") && j["columns"] != nlohmann::json(column_names(m.features)))
    broken(where, fmt::format("field 'columns' is not f0..f{} and label", m.features - 1));
  uint64_t next_row = 0;
  for (size_t i = 0; i < files.size(); ++i) {
    const std::string at = fmt::format("files[{}]", i);
    TableMetadata::File f;
    const auto& name = need(where, files[i], "name", at + ".name");
    const std::string expected =
        shard_file_name(static_cast<uint32_t>(i), static_cast<uint32_t>(shards), format_extension(m.format));
    if (name != expected)
      broken(where, fmt::format("field '{}.name' is {}, expected \"{}\"", at, name.dump().substr(0, 60), expected));
    f.name = expected;
    f.first_row = need_count(where, need(where, files[i], "first_row", at + ".first_row"), at + ".first_row", next_row,
                             next_row);
    f.rows = need_count(where, need(where, files[i], "rows", at + ".rows"), at + ".rows", 1, m.rows);
    if (f.rows > m.rows - next_row)
      broken(where, fmt::format("its files hold more rows than field 'rows' says ({})", m.rows));
    next_row += f.rows;
    m.files.push_back(f);
  }
  if (next_row != m.rows)
    broken(where, fmt::format("its files hold {} rows but field 'rows' says {}", next_row, m.rows));
  return m;
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
