#include "formats/shard_format.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <vector>

namespace trainrt {

static_assert(std::endian::native == std::endian::little, "shards are little-endian on disk");

std::string shard_file_name(uint32_t index, uint32_t count, const std::string& extension) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "part-%05u-of-%05u.%s", index, count, extension.c_str());
  return buf;
}

uint64_t shard_first_row(uint64_t total_rows, uint32_t index, uint32_t count) {
  const uint64_t base = total_rows / count, extra = total_rows % count;
  return index * base + (index < extra ? index : extra);
}

uint64_t shard_row_count(uint64_t total_rows, uint32_t index, uint32_t count) {
  return total_rows / count + (index < total_rows % count ? 1 : 0);
}

uint64_t native_shard_bytes(uint64_t rows, uint32_t features) {
  return sizeof(ShardHeader) + rows * (uint64_t{features} + 1) * sizeof(float);
}

namespace {

using trainc::common::fnv1a_step;
using trainc::common::kFnvOffset;

/// One 32-byte group: word t into lane t.
inline void hash_group(uint64_t (&lanes)[4], const unsigned char* p) {
  for (int t = 0; t < 4; ++t) {
    uint64_t w;
    std::memcpy(&w, p + 8 * t, 8);
    lanes[t] = fnv1a_step(lanes[t], w);
  }
}

}  // namespace

void PayloadHasher::update(const void* data, size_t bytes) {
  auto p = static_cast<const unsigned char*>(data);
  if (npending_ > 0) {  // complete the group left over from the last call
    const size_t take = std::min(bytes, sizeof pending_ - npending_);
    std::memcpy(pending_ + npending_, p, take);
    npending_ += take;
    p += take;
    bytes -= take;
    if (npending_ < sizeof pending_) return;
    hash_group(lanes_, pending_);
    npending_ = 0;
  }
  uint64_t lanes[4] = {lanes_[0], lanes_[1], lanes_[2], lanes_[3]};
  for (; bytes >= 32; bytes -= 32, p += 32) hash_group(lanes, p);
  std::memcpy(lanes_, lanes, sizeof lanes);
  std::memcpy(pending_, p, bytes);
  npending_ = bytes;
}

uint64_t PayloadHasher::digest() const {
  uint64_t lanes[4] = {lanes_[0], lanes_[1], lanes_[2], lanes_[3]};
  for (size_t at = 0, t = 0; at < npending_; at += 8, ++t) {  // the tail: whole words, then a padded one
    unsigned char word[8] = {};
    std::memcpy(word, pending_ + at, std::min<size_t>(8, npending_ - at));
    uint64_t w;
    std::memcpy(&w, word, 8);
    lanes[t] = fnv1a_step(lanes[t], w);
  }
  uint64_t h = kFnvOffset;
  for (uint64_t lane : lanes) h = fnv1a_step(h, lane);
  return h;
}

uint64_t payload_fnv(const void* data, size_t bytes) {
  PayloadHasher h;
  h.update(data, bytes);
  return h.digest();
}

ShardHeader make_shard_header(uint32_t features, uint64_t rows, uint64_t first_row, uint64_t total_rows,
                              uint64_t seed, uint32_t shard_index, uint32_t shard_count) {
  ShardHeader h{};
  std::memcpy(h.magic, kShardMagic, sizeof h.magic);
  h.version = kShardVersion;
  h.features = features;
  h.rows = rows;
  h.first_row = first_row;
  h.total_rows = total_rows;
  h.seed = seed;
  h.shard_index = shard_index;
  h.shard_count = shard_count;
  return h;
}

std::string check_native_shard(const std::string& path, ShardHeader& header, bool verify_payload) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return std::string("cannot open: ") + std::strerror(errno);
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{fd};
  if (::pread(fd, &header, sizeof header, 0) != static_cast<ssize_t>(sizeof header))
    return "shorter than the 64-byte shard header at byte 0";
  if (std::memcmp(header.magic, kShardMagic, sizeof header.magic) != 0)
    return "not a trainrt shard (bad magic at byte 0)";
  if (header.version != kShardVersion)
    return "shard format version " + std::to_string(header.version) + " at byte 8, expected " +
           std::to_string(kShardVersion);
  const off_t size = ::lseek(fd, 0, SEEK_END);
  if (size < 0 || static_cast<uint64_t>(size) != native_shard_bytes(header.rows, header.features))
    return "file size " + std::to_string(size) + " does not match its header (" + std::to_string(header.rows) +
           " rows x " + std::to_string(header.features) + " features): torn or altered";
  if (!verify_payload) return "";
  PayloadHasher hasher;
  std::vector<char> buf(8 << 20);
  uint64_t offset = sizeof header;
  for (;;) {
    const ssize_t n = ::pread(fd, buf.data(), buf.size(), static_cast<off_t>(offset));
    if (n < 0) return "read failed at byte " + std::to_string(offset) + ": " + std::strerror(errno);
    if (n == 0) break;
    hasher.update(buf.data(), static_cast<size_t>(n));
    offset += static_cast<uint64_t>(n);
  }
  if (hasher.digest() != header.payload_fnv)
    return "payload checksum mismatch over bytes 64.." + std::to_string(offset) +
           " (the header's payload_fnv at byte 56): torn or altered";
  return "";
}

}  // namespace trainrt
