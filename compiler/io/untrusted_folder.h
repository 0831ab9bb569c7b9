#pragma once
// A folder read as untrusted input: the output folder `plan --against OLD` and `trainc diff`
// compare with is often a checked-out base branch or a pull request's own, which anyone who can
// open one can change. Every file is reached from the folder without following a symbolic link
// (so `model.yaml -> /dev/zero` or `k8s/x.yaml -> ~/.ssh/id_rsa` is refused, not opened), must be a
// regular file, and is read only up to a size bound; its path and text must be UTF-8.
#include <cstddef>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "base/printable.h"

namespace trainc {

class UntrustedFolder {
 public:
  /// One file's bytes at most: the largest generated file is well under 1 MB.
  static constexpr size_t kMaxFileBytes = size_t{8} << 20;
  /// All files read together.
  static constexpr size_t kMaxTotalBytes = size_t{128} << 20;
  /// Entries listed, and folders deep.
  static constexpr size_t kMaxEntries = 20000;
  static constexpr int kMaxDepth = 16;

  /// Opens `root` (itself reached as the user named it, links included); `error` says why not.
  UntrustedFolder(const std::filesystem::path& root, std::string& error);
  /// Opens folder `sub` ("a/b") of `root`, reached from it without following a link.
  UntrustedFolder(const std::filesystem::path& root, const std::string& sub, std::string& error);
  ~UntrustedFolder();
  UntrustedFolder(const UntrustedFolder&) = delete;
  UntrustedFolder& operator=(const UntrustedFolder&) = delete;

  bool open() const { return fd_ >= 0; }
  const std::filesystem::path& root() const { return root_; }

  /// Whether `rel` ("k8s", "a/b") is a folder below the root, reached without links.
  bool is_folder(const std::string& rel) const;

  /// Every entry below folder `rel` ("" = the root), recursively, as paths relative to the root
  /// with '/'; links and other entries that are neither files nor folders are listed as they are,
  /// never followed. Sets `error` (and returns what it listed) past kMaxEntries or kMaxDepth, or
  /// when a folder cannot be read.
  struct Entry {
    std::string path;
    enum class Type { file, folder, link, other } type = Type::file;
  };
  std::vector<Entry> list(const std::string& rel, std::string& error) const;

  /// The bytes of regular file `rel`: nullopt with `error` empty when there is no such entry;
  /// nullopt with `error` set when it is a link, not a regular file, larger than kMaxFileBytes,
  /// past kMaxTotalBytes for the folder, not UTF-8 (its path or its text), or unreadable.
  std::optional<std::string> read(const std::string& rel, std::string& error) const;

 private:
  std::filesystem::path root_;
  int fd_ = -1;
  mutable size_t total_ = 0;
};


}  // namespace trainc
