#include "formats/shard_reader.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <csignal>
#include <cstdio>
#include <mutex>
#include <bit>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <utility>

#include <fmt/format.h>

#include "report.h"

namespace trainrt {

static_assert(std::endian::native == std::endian::little, "shards are little-endian and read in place");

std::string shard_header_problem(const ShardHeader& h, uint64_t file_size) {
  if (std::memcmp(h.magic, kShardMagic, sizeof h.magic) != 0) return "not a trainrt shard (bad magic)";
  if (h.version != kShardVersion) {
    return fmt::format("shard format version {}; this trainrt reads version {}", h.version, kShardVersion);
  }
  if (h.features == 0) return "the header says 0 features";
  if (h.shard_count == 0 || h.shard_index >= h.shard_count) {
    return fmt::format("shard index {} is not below shard count {}", h.shard_index, h.shard_count);
  }
  if (h.first_row > h.total_rows || h.rows > h.total_rows - h.first_row) {
    return fmt::format("rows {}..{} lie outside the table's {} rows", h.first_row, h.first_row + h.rows,
                       h.total_rows);
  }
  // 64 + rows * (features + 1) * 4, without overflowing on a hostile header.
  const uint64_t row_bytes = (uint64_t{h.features} + 1) * sizeof(float);
  if (h.rows > (UINT64_MAX - sizeof(ShardHeader)) / row_bytes) return "the header's row count is impossibly large";
  const uint64_t expected = sizeof(ShardHeader) + h.rows * row_bytes;
  if (expected != file_size) {
    return fmt::format("the file is {} bytes but its header ({} rows x {} features) needs {}", file_size, h.rows,
                       h.features, expected);
  }
  return {};
}

namespace {

// A mapped file that shrinks, or whose storage goes away (a FUSE mount), raises SIGBUS on the next
// touch of a page no longer backed. The handler names the shard from this table and exits 1 rather
// than dying with "Bus error": slots are claimed under a mutex and read without one (only
// async-signal-safe work in the handler).
struct MapSlot {
  std::atomic<const char*> begin{nullptr};
  std::atomic<size_t> size{0};
  char path[512] = {};
};
constexpr size_t kMapSlots = 1024;
MapSlot g_maps[kMapSlots];
std::mutex g_maps_mu;

void write_all(const char* s) {
  for (size_t n = std::strlen(s); n > 0;) {
    const ssize_t w = ::write(STDERR_FILENO, s, n);
    if (w <= 0) return;
    s += w;
    n -= static_cast<size_t>(w);
  }
}

void on_sigbus(int, siginfo_t* info, void*) {
  const char* addr = static_cast<const char*>(info->si_addr);
  const char* path = nullptr;
  for (auto& slot : g_maps) {
    const char* b = slot.begin.load(std::memory_order_relaxed);
    if (b != nullptr && addr >= b && addr < b + slot.size.load(std::memory_order_relaxed)) path = slot.path;
  }
  write_all(report_prefix());
  write_all("a shard became unreadable while it was being read");
  if (path != nullptr) {
    write_all(": ");
    write_all(path);
  }
  write_all(" (the file was truncated or replaced, or its storage went away, such as a GCS FUSE mount that was "
            "unmounted). Check the data folder and run the same command again: training resumes from the newest "
            "checkpoint.\n");
  ::_exit(1);
}

void register_map(const void* map, size_t size, const std::string& path) {
  static std::once_flag installed;
  std::call_once(installed, [] {
    struct sigaction sa {};
    sa.sa_sigaction = on_sigbus;
    sa.sa_flags = SA_SIGINFO;
    sigemptyset(&sa.sa_mask);
    ::sigaction(SIGBUS, &sa, nullptr);
  });
  std::lock_guard lock(g_maps_mu);
  for (auto& slot : g_maps) {
    if (slot.begin.load() != nullptr) continue;
    std::snprintf(slot.path, sizeof slot.path, "%s", path.c_str());
    slot.size.store(size);
    slot.begin.store(static_cast<const char*>(map));
    return;
  }  // all slots taken: the handler still exits with a message, without the file's name
}

void unregister_map(const void* map) {
  std::lock_guard lock(g_maps_mu);
  for (auto& slot : g_maps)
    if (slot.begin.load() == map) slot.begin.store(nullptr);
}

}  // namespace

MappedShard MappedShard::open(const std::string& path, bool verify) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw ShardError(fmt::format("{}: cannot open: {}", path, std::strerror(errno)));
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    const int err = errno;
    ::close(fd);
    throw ShardError(fmt::format("{}: cannot stat: {}", path, std::strerror(err)));
  }
  const auto size = static_cast<uint64_t>(st.st_size);
  if (size < sizeof(ShardHeader)) {
    ::close(fd);
    throw ShardError(fmt::format("{}: the file is {} bytes, shorter than the {}-byte header (a torn write?)", path,
                                 size, sizeof(ShardHeader)));
  }
  void* map = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
  const int map_err = errno;
  ::close(fd);  // the mapping keeps the file
  if (map == MAP_FAILED) throw ShardError(fmt::format("{}: cannot map: {}", path, std::strerror(map_err)));
  register_map(map, size, path);
  MappedShard shard(path, map, size);
  if (auto problem = shard_header_problem(shard.header(), size); !problem.empty()) {
    throw ShardError(fmt::format("{}: {}", path, problem));
  }
  if (verify) shard.verify_payload();
  return shard;
}

MappedShard::MappedShard(MappedShard&& other) noexcept
    : path_(std::move(other.path_)), map_(std::exchange(other.map_, nullptr)), size_(std::exchange(other.size_, 0)) {}

MappedShard& MappedShard::operator=(MappedShard&& other) noexcept {
  if (this != &other) {
    if (map_ != nullptr) {
      unregister_map(map_);
      ::munmap(map_, size_);
    }
    path_ = std::move(other.path_);
    map_ = std::exchange(other.map_, nullptr);
    size_ = std::exchange(other.size_, 0);
  }
  return *this;
}

MappedShard::~MappedShard() {
  if (map_ != nullptr) {
    unregister_map(map_);
    ::munmap(map_, size_);
  }
}

const float* MappedShard::feature_data() const {
  return reinterpret_cast<const float*>(static_cast<const char*>(map_) + sizeof(ShardHeader));
}

const float* MappedShard::label_data() const { return feature_data() + rows() * features(); }

void MappedShard::verify_payload() const {
  constexpr size_t kChunk = size_t{8} << 20;  // a multiple of 8: the hasher reads 64-bit words
  const auto* base = static_cast<const char*>(map_);
  PayloadHasher hasher;
  for (size_t at = sizeof(ShardHeader); at < size_;) {
    const size_t end = std::min(size_, at + kChunk);
    hasher.update(base + at, end - at);
    release_bytes(at, end);
    at = end;
  }
  if (hasher.digest() != header().payload_fnv) {
    throw ShardError(fmt::format("{}: payload checksum {:016x} does not match the header's {:016x} (a corrupt or "
                                 "altered file)",
                                 path_, hasher.digest(), header().payload_fnv));
  }
}

void MappedShard::release_bytes(size_t begin, size_t end) const {
  // madvise works on whole pages: keep the partial pages at both ends (one holds the header).
  const auto page = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
  const size_t first = (begin + page - 1) / page * page;
  const size_t last = end == size_ ? end : end / page * page;
  if (last > first) ::madvise(static_cast<char*>(map_) + first, last - first, MADV_DONTNEED);
}

void MappedShard::release_rows(uint64_t begin, uint64_t end) const {
  const size_t row_bytes = size_t{features()} * sizeof(float);
  release_bytes(sizeof(ShardHeader) + begin * row_bytes, sizeof(ShardHeader) + end * row_bytes);
}

void MappedShard::release_all() const { release_bytes(0, size_); }

namespace {

template <typename Keep>
std::vector<std::string> list_files(const std::string& dir, Keep keep) {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::directory_iterator it(dir, ec);
  if (ec) throw ShardError(fmt::format("{}: cannot read the data folder: {}", dir, ec.message()));
  std::vector<std::string> out;
  // increment(ec), not a range-for: a listing cut short (a storage mount that went away) is an
  // error, never a shorter list.
  for (; it != fs::directory_iterator(); it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (keep(name) && it->is_regular_file(ec)) {
      out.push_back(it->path().string());
    }
    if (ec) break;
  }
  if (ec) throw ShardError(fmt::format("{}: reading the data folder failed part way: {}", dir, ec.message()));
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace

std::vector<std::string> list_shard_files(const std::string& dir) {
  return list_files(dir, [](const std::string& name) { return name.starts_with("part-") && name.ends_with(".trs"); });
}

std::vector<std::string> list_parquet_files(const std::string& dir) {
  return list_files(dir, [](const std::string& name) {
    return name.ends_with(".parquet") && !name.starts_with(".") && !name.starts_with("_");
  });
}

}  // namespace trainrt
