#include "io/untrusted_folder.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include <fmt/format.h>

#include "frontend/limits.h"

namespace fs = std::filesystem;

namespace trainc {
namespace {

/// The components of a relative path; empty (and `error`) for an absolute one or one with "..".
std::vector<std::string> components(const std::string& rel, std::string& error) {
  std::vector<std::string> out;
  size_t begin = 0;
  while (begin <= rel.size()) {
    const size_t end = std::min(rel.find('/', begin), rel.size());
    const std::string part = rel.substr(begin, end - begin);
    if (part == "..") {
      error = fmt::format("'{}' leaves the folder", printable(rel));
      return {};
    }
    if (!part.empty() && part != ".") out.push_back(part);
    begin = end + 1;
  }
  return out;
}

/// A file descriptor closed when it goes.
struct Fd {
  int fd = -1;
  explicit Fd(int f = -1) : fd(f) {}
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  Fd(Fd&& o) noexcept : fd(o.fd) { o.fd = -1; }
  Fd& operator=(Fd&& o) noexcept {
    if (this != &o) {
      if (fd >= 0) ::close(fd);
      fd = o.fd;
      o.fd = -1;
    }
    return *this;
  }
};

}  // namespace

namespace {
int open_folder(int dir, const std::vector<std::string>& parts, size_t count);
}  // namespace

UntrustedFolder::UntrustedFolder(const fs::path& root, const std::string& sub, std::string& error)
    : root_(root / sub) {
  const int top = ::open(root.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (top < 0) {
    error = fmt::format("cannot read '{}': {}", printable(root.string()), std::strerror(errno));
    return;
  }
  const auto parts = components(sub, error);
  if (error.empty()) {
    fd_ = open_folder(top, parts, parts.size());
    if (fd_ < 0)
      error = fmt::format("cannot read '{}': {}", printable(root_.string()),
                          errno == ELOOP ? "it is a symbolic link, which is not followed in a folder read as untrusted input"
                                         : std::strerror(errno));
  }
  ::close(top);
}

UntrustedFolder::UntrustedFolder(const fs::path& root, std::string& error) : root_(root) {
  fd_ = ::open(root.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd_ < 0) error = fmt::format("cannot read '{}': {}", printable(root.string()), std::strerror(errno));
}

UntrustedFolder::~UntrustedFolder() {
  if (fd_ >= 0) ::close(fd_);
}

namespace {

/// The folder `parts` below `dir`, each component opened without following a link; -1 and errno
/// when one is missing, a link (ELOOP) or not a folder (ENOTDIR).
int open_folder(int dir, const std::vector<std::string>& parts, size_t count) {
  Fd cur(::dup(dir));
  if (cur.fd < 0) return -1;
  for (size_t i = 0; i < count; ++i) {
    Fd next(::openat(cur.fd, parts[i].c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (next.fd < 0) return -1;
    cur = std::move(next);
  }
  const int out = cur.fd;
  cur.fd = -1;
  return out;
}

}  // namespace

bool UntrustedFolder::is_folder(const std::string& rel) const {
  if (fd_ < 0) return false;
  std::string error;
  const auto parts = components(rel, error);
  if (!error.empty()) return false;
  Fd dir(open_folder(fd_, parts, parts.size()));
  return dir.fd >= 0;
}

std::vector<UntrustedFolder::Entry> UntrustedFolder::list(const std::string& rel, std::string& error) const {
  std::vector<Entry> out;
  if (fd_ < 0) return out;
  const auto parts = components(rel, error);
  if (!error.empty()) return out;
  std::string prefix;
  for (const auto& p : parts) prefix += p + "/";
  // An explicit stack of folders still to read, each opened from the root when its turn comes (so
  // no more than one is open at once): its path with '/', its depth.
  struct Todo {
    std::string path;
    int depth;
  };
  std::vector<Todo> todo{{prefix, 0}};
  while (!todo.empty() && error.empty()) {
    const Todo here = todo.back();
    todo.pop_back();
    std::string ignore;
    const auto here_parts = components(here.path, ignore);
    const int fd = open_folder(fd_, here_parts, here_parts.size());
    DIR* d = fd < 0 ? nullptr : ::fdopendir(fd);
    if (!d) {
      if (fd >= 0) ::close(fd);
      error = fmt::format("cannot read '{}': {}", printable((root_ / here.path).string()), std::strerror(errno));
      break;
    }
    std::vector<std::string> names;
    while (const dirent* e = ::readdir(d)) {
      const std::string name = e->d_name;
      if (name == "." || name == "..") continue;
      if (out.size() + names.size() >= kMaxEntries) break;
      names.push_back(name);
    }
    std::sort(names.begin(), names.end());
    for (const auto& name : names) {
      if (out.size() >= kMaxEntries) {
        error = fmt::format("'{}' holds more than {} entries; an output folder holds a few dozen",
                            printable(root_.string()), kMaxEntries);
        break;
      }
      struct stat st {};
      if (::fstatat(::dirfd(d), name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) {
        error = fmt::format("cannot read '{}': {}", printable((root_ / (here.path + name)).string()), std::strerror(errno));
        break;
      }
      Entry entry{here.path + name, Entry::Type::other};
      if (S_ISREG(st.st_mode)) entry.type = Entry::Type::file;
      else if (S_ISLNK(st.st_mode)) entry.type = Entry::Type::link;
      else if (S_ISDIR(st.st_mode)) entry.type = Entry::Type::folder;
      if (entry.type == Entry::Type::folder) {
        if (here.depth + 1 > kMaxDepth) {
          error = fmt::format("'{}' nests folders deeper than {}", printable(root_.string()), kMaxDepth);
          break;
        }
        todo.push_back({entry.path + "/", here.depth + 1});
      }
      out.push_back(std::move(entry));
    }
    ::closedir(d);  // closes fd
  }
  std::sort(out.begin(), out.end(), [](const Entry& a, const Entry& b) { return a.path < b.path; });
  return out;
}

std::optional<std::string> UntrustedFolder::read(const std::string& rel, std::string& error) const {
  error.clear();
  if (fd_ < 0) return std::nullopt;
  const std::string shown = printable((root_ / rel).string());
  const auto parts = components(rel, error);
  if (!error.empty() || parts.empty()) {
    if (error.empty()) error = fmt::format("'{}' is the folder itself", shown);
    return std::nullopt;
  }
  if (const auto bad = limits::invalid_utf8(rel)) {
    error = fmt::format("'{}': its name is not UTF-8 (byte {}); trainc names its files in ASCII", shown, *bad);
    return std::nullopt;
  }
  Fd dir(open_folder(fd_, parts, parts.size() - 1));
  if (dir.fd < 0) {
    if (errno == ENOENT) return std::nullopt;
    error = fmt::format("'{}': {} on the way is {}", shown, errno == ELOOP ? "a folder" : "an entry",
                        errno == ELOOP ? "a symbolic link, which is not followed in a folder read as untrusted input"
                                       : std::strerror(errno));
    return std::nullopt;
  }
  // O_NONBLOCK: a FIFO must not hold the open; O_NOCTTY: nor may a terminal become ours.
  Fd file(::openat(dir.fd, parts.back().c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC));
  if (file.fd < 0) {
    if (errno == ENOENT) return std::nullopt;
    error = errno == ELOOP ? fmt::format("'{}' is a symbolic link, which is not followed in a folder read as "
                                         "untrusted input (trainc writes no links)", shown)
                           : fmt::format("cannot read '{}': {}", shown, std::strerror(errno));
    return std::nullopt;
  }
  struct stat st {};
  if (::fstat(file.fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    error = fmt::format("'{}' is not a regular file", shown);
    return std::nullopt;
  }
  if (static_cast<unsigned long long>(st.st_size) > kMaxFileBytes) {
    error = fmt::format("'{}' is {} bytes, more than the {} bytes trainc reads of one file of an output folder",
                        shown, st.st_size, kMaxFileBytes);
    return std::nullopt;
  }
  if (total_ + static_cast<size_t>(st.st_size) > kMaxTotalBytes) {
    error = fmt::format("'{}' holds more than {} bytes in all; an output folder holds a few hundred KB",
                        printable(root_.string()), kMaxTotalBytes);
    return std::nullopt;
  }
  // Clear O_NONBLOCK for the reads; read no more than the bound even if the file grows meanwhile.
  ::fcntl(file.fd, F_SETFL, ::fcntl(file.fd, F_GETFL) & ~O_NONBLOCK);
  std::string text;
  char buf[65536];
  for (;;) {
    const ssize_t n = ::read(file.fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      error = fmt::format("cannot read '{}': {}", shown, std::strerror(errno));
      return std::nullopt;
    }
    if (n == 0) break;
    text.append(buf, static_cast<size_t>(n));
    if (text.size() > kMaxFileBytes) {
      error = fmt::format("'{}' grew past {} bytes as it was read", shown, kMaxFileBytes);
      return std::nullopt;
    }
  }
  total_ += text.size();
  if (const auto bad = limits::invalid_utf8(text)) {
    error = fmt::format("'{}' is not UTF-8 text (byte {} of it); trainc writes UTF-8", shown, *bad);
    return std::nullopt;
  }
  return text;
}

}  // namespace trainc
