#pragma once
// Helpers for the harnesses. The trainrt readers take a path or a file descriptor, so each input is
// put in an anonymous in-memory file (memfd) and named by its /proc/self/fd path; nothing is
// written to disk. Harnesses that need a folder make one private temporary folder per process.
#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <string>

namespace trainc_fuzz {

/// A fresh private folder under $TMPDIR (or /tmp), removed when the process exits normally.
inline std::string make_temp_dir(const char* name) {
  static std::string dir;
  const char* tmp = std::getenv("TMPDIR");
  dir = std::string(tmp && *tmp ? tmp : "/tmp") + "/" + name + "-XXXXXX";
  if (!::mkdtemp(dir.data())) __builtin_trap();
  std::atexit([] {
    std::error_code ec;
    std::filesystem::remove_all(dir, ec);
  });
  return dir;
}

class MemFile {
 public:
  MemFile(const void* data, size_t size) : fd_(::memfd_create("trainrt-fuzz", MFD_CLOEXEC)) {
    if (fd_ < 0) __builtin_trap();
    const auto* p = static_cast<const char*>(data);
    while (size > 0) {
      const ssize_t n = ::write(fd_, p, size);
      if (n <= 0) __builtin_trap();
      p += n;
      size -= static_cast<size_t>(n);
    }
  }
  MemFile(const MemFile&) = delete;
  MemFile& operator=(const MemFile&) = delete;
  ~MemFile() { ::close(fd_); }
  int fd() const { return fd_; }
  std::string path() const { return "/proc/self/fd/" + std::to_string(fd_); }

 private:
  int fd_;
};

}  // namespace trainc_fuzz
