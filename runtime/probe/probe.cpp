#include "probe/probe.h"

#include <cerrno>
#include <cstring>
#include <memory>

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fmt/format.h>

#include "commands.h"

namespace trainrt {

namespace {

std::chrono::system_clock::time_point mtime_of(const struct stat& st) {
  using namespace std::chrono;
  return system_clock::time_point(duration_cast<system_clock::duration>(seconds(st.st_mtim.tv_sec) +
                                                                        nanoseconds(st.st_mtim.tv_nsec)));
}

/// "" when `path` is readable (a directory: listable), else why not.
std::string unreadable_reason(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    if (errno == ENOENT) return "does not exist";
    return fmt::format("cannot be read: {}", std::strerror(errno));
  }
  if (S_ISDIR(st.st_mode)) {
    std::unique_ptr<DIR, int (*)(DIR*)> dir(::opendir(path.c_str()), ::closedir);
    if (!dir) return fmt::format("is a directory that cannot be listed: {}", std::strerror(errno));
    errno = 0;
    if (::readdir(dir.get()) == nullptr && errno != 0)
      return fmt::format("is a directory that cannot be listed: {}", std::strerror(errno));
    return "";
  }
  // O_NONBLOCK: opening a FIFO must not wait for a writer.
  int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return fmt::format("cannot be opened for reading: {}", std::strerror(errno));
  std::string reason;
  if (S_ISREG(st.st_mode)) {
    char byte;
    if (::read(fd, &byte, 1) < 0) reason = fmt::format("cannot be read: {}", std::strerror(errno));
  }
  ::close(fd);
  return reason;
}

}  // namespace

ProbeResult check_heartbeat(const std::string& heartbeat, Millis max_age, std::chrono::system_clock::time_point now) {
  struct stat st {};
  if (::stat(heartbeat.c_str(), &st) != 0) {
    const std::string why = errno == ENOENT ? "does not exist" : fmt::format("cannot be read: {}", std::strerror(errno));
    return {kProbeFailed, {fmt::format("heartbeat '{}' {} (max age {})", heartbeat, why, format_duration(max_age))}};
  }
  auto age = std::chrono::duration_cast<Millis>(now - mtime_of(st));
  if (age < Millis(0)) age = Millis(0);
  if (age > max_age)
    return {kProbeFailed, {fmt::format("heartbeat '{}' is {} old, older than the max age {}", heartbeat,
                                       format_duration(age), format_duration(max_age))}};
  return {kOk, {fmt::format("heartbeat '{}' is {} old (max age {})", heartbeat, format_duration(age),
                            format_duration(max_age))}};
}

ProbeResult check_ready(const std::vector<std::string>& paths) {
  ProbeResult r;
  for (const auto& p : paths) {
    std::string reason = unreadable_reason(p);
    if (!reason.empty()) r.lines.push_back(fmt::format("not ready: '{}' {}", p, reason));
  }
  if (!r.lines.empty()) {
    r.code = kProbeFailed;
  } else {
    r.lines.push_back(paths.size() == 1 ? fmt::format("ready: '{}' is readable", paths[0])
                                        : fmt::format("ready: all {} paths are readable", paths.size()));
  }
  return r;
}

}  // namespace trainrt
