#include "train/checkpoint.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <stdexcept>

#include <fmt/format.h>

namespace trainrt {
namespace fs = std::filesystem;
namespace {

constexpr std::string_view kPrefix = "ckpt-";
constexpr std::string_view kSuffix = ".ubj";

[[noreturn]] void fail_errno(const std::string& what, const std::string& path) {
  throw std::runtime_error(fmt::format("{}: {}: {}", path, what, std::strerror(errno)));
}

void fsync_dir(const std::string& dir) {
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) fail_errno("cannot open folder to sync it", dir);
  const int rc = ::fsync(fd);
  ::close(fd);
  if (rc != 0) fail_errno("cannot sync folder", dir);
}

}  // namespace

std::string checkpoint_name(int rounds) { return fmt::format("{}{:06d}{}", kPrefix, rounds, kSuffix); }

std::optional<int> checkpoint_rounds(std::string_view name) {
  if (!name.starts_with(kPrefix) || !name.ends_with(kSuffix)) return std::nullopt;
  const auto digits = name.substr(kPrefix.size(), name.size() - kPrefix.size() - kSuffix.size());
  if (digits.size() < 6 || !std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; })) {
    return std::nullopt;
  }
  int rounds = 0;
  auto [ptr, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), rounds);
  if (ec != std::errc() || ptr != digits.data() + digits.size()) return std::nullopt;
  return rounds;
}

std::vector<CheckpointFile> list_checkpoints(const std::string& dir) {
  std::vector<CheckpointFile> out;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    if (auto rounds = checkpoint_rounds(entry.path().filename().string())) {
      out.push_back({*rounds, entry.path().string()});
    }
  }
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.rounds > b.rounds; });
  return out;
}

void write_file_atomically(const std::string& path, std::span<const char> bytes, const BeforeRename& hook) {
  // The pid keeps two writers of one path (ranks sharing a folder) off each other's temporary file.
  const std::string tmp = fmt::format("{}.{}.tmp", path, ::getpid());
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) fail_errno("cannot create", tmp);
  size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      const int err = errno;
      ::close(fd);
      errno = err;
      fail_errno("write failed", tmp);
    }
    done += static_cast<size_t>(n);
  }
  if (::fsync(fd) != 0) {
    const int err = errno;
    ::close(fd);
    errno = err;
    fail_errno("fsync failed", tmp);
  }
  if (::close(fd) != 0) fail_errno("close failed", tmp);
  if (hook) hook();
  if (::rename(tmp.c_str(), path.c_str()) != 0) fail_errno("cannot rename into place", tmp);
  const std::string parent = fs::path(path).parent_path().string();
  fsync_dir(parent.empty() ? "." : parent);
}

void save_checkpoint(const std::string& dir, int rounds, std::span<const char> bytes, int keep,
                     const BeforeRename& hook) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) throw std::runtime_error(fmt::format("{}: cannot create the checkpoint folder: {}", dir, ec.message()));
  write_file_atomically((fs::path(dir) / checkpoint_name(rounds)).string(), bytes, hook);
  auto all = list_checkpoints(dir);
  for (size_t i = static_cast<size_t>(std::max(keep, 1)); i < all.size(); ++i) fs::remove(all[i].path, ec);
}

void remove_stale_temporaries(const std::string& dir) {
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    if (entry.path().extension() == ".tmp") fs::remove(entry.path(), ec);
  }
}

std::optional<LoadedCheckpoint> select_checkpoint(const std::string& dir, const CheckpointCheck& check,
                                                  const Warn& warn) {
  for (const auto& file : list_checkpoints(dir)) {
    std::ifstream in(file.path, std::ios::binary);
    std::vector<char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    std::string problem;
    if (!in.good() && !in.eof()) {
      problem = "cannot be read";
    } else if (bytes.empty()) {
      problem = "is empty";
    } else {
      problem = check(bytes, file.rounds);
    }
    if (problem.empty()) return LoadedCheckpoint{file.rounds, file.path, std::move(bytes)};
    warn(fmt::format("skipping checkpoint {}: {}", file.path, problem));
  }
  return std::nullopt;
}

}  // namespace trainrt
