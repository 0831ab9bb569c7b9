#include "common/shard_reader.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <utility>

#include <fmt/format.h>

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
    if (map_ != nullptr) ::munmap(map_, size_);
    path_ = std::move(other.path_);
    map_ = std::exchange(other.map_, nullptr);
    size_ = std::exchange(other.size_, 0);
  }
  return *this;
}

MappedShard::~MappedShard() {
  if (map_ != nullptr) ::munmap(map_, size_);
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

std::vector<std::string> list_shard_files(const std::string& dir) {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::directory_iterator it(dir, ec);
  if (ec) throw ShardError(fmt::format("{}: cannot read the data folder: {}", dir, ec.message()));
  std::vector<std::string> out;
  for (const auto& entry : it) {
    const std::string name = entry.path().filename().string();
    if (name.starts_with("part-") && name.ends_with(".trs") && entry.is_regular_file(ec)) {
      out.push_back(entry.path().string());
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace trainrt
