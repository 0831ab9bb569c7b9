#include "frontend/jsonnet_sandbox.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <poll.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <mutex>

#include "base/background.h"
#include "frontend/limits.h"

namespace fs = std::filesystem;

namespace trainc::jsonnet {
namespace {

#if defined(__SANITIZE_ADDRESS__)
constexpr bool kSanitized = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
constexpr bool kSanitized = true;
#else
constexpr bool kSanitized = false;
#endif
#else
constexpr bool kSanitized = false;
#endif

/// The resident memory of process `pid` in bytes, from /proc; 0 when it cannot be read.
size_t resident_bytes(pid_t pid) {
  std::ifstream in(fmt::format("/proc/{}/statm", pid));
  size_t pages_total = 0, pages_resident = 0;
  if (!(in >> pages_total >> pages_resident)) return 0;
  return pages_resident * static_cast<size_t>(::sysconf(_SC_PAGESIZE));
}

bool write_all(int fd, const char* data, size_t n) {
  while (n > 0) {
    // MSG_NOSIGNAL: a server that died is reported by its exit status, not by SIGPIPE in trainc.
    ssize_t w = ::send(fd, data, n, MSG_NOSIGNAL);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return false;
    data += w;
    n -= static_cast<size_t>(w);
  }
  return true;
}

bool read_all(int fd, char* data, size_t n) {
  while (n > 0) {
    ssize_t r = ::read(fd, data, n);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return false;
    data += r;
    n -= static_cast<size_t>(r);
  }
  return true;
}

bool write_u64(int fd, uint64_t v) { return write_all(fd, reinterpret_cast<const char*>(&v), sizeof v); }

bool read_string(int fd, std::string& s, size_t max) {
  uint64_t n = 0;
  if (!read_all(fd, reinterpret_cast<char*>(&n), sizeof n) || n > max) return false;
  s.resize(n);
  return read_all(fd, s.data(), n);
}

/// The server's loop: one request (spec name, its text, the folder imports are jailed to) at a
/// time, answered with an outcome byte ('j' JSON, 'e' Jsonnet error, 's' stopped), the length of
/// the text and the text. Returns when trainc closes its end.
[[noreturn]] void serve(int fd) {
  // libjsonnet prints "FATAL ERROR" and aborts when an allocation fails; the parent says why.
  const int null_fd = ::open("/dev/null", O_RDWR);
  if (null_fd >= 0)
    for (int std_fd : {STDIN_FILENO, STDOUT_FILENO, STDERR_FILENO}) ::dup2(null_fd, std_fd);
  if (!kSanitized) {  // a sanitizer reserves terabytes of address space for its shadow memory
    const rlimit mem{limits::kJsonnetMemoryBytes, limits::kJsonnetMemoryBytes};
    ::setrlimit(RLIMIT_AS, &mem);
  }
  rlimit cpu{};
  ::getrlimit(RLIMIT_CPU, &cpu);
  for (;;) {
    std::string name, text, root;
    if (!read_string(fd, name, 4096) || !read_string(fd, text, limits::kSpecBytes) || !read_string(fd, root, 4096))
      ::_exit(0);
    // A backstop only, per spec: the parent's wall-clock deadline comes first and says why. The
    // soft limit's SIGXCPU ends the server; the hard limit is left as trainc found it.
    rusage used{};
    ::getrusage(RUSAGE_SELF, &used);
    const rlim_t soft =
        static_cast<rlim_t>(used.ru_utime.tv_sec + used.ru_stime.tv_sec) + 2 * limits::kJsonnetSeconds + 1;
    const rlimit spec_cpu{cpu.rlim_max == RLIM_INFINITY ? soft : std::min(soft, cpu.rlim_max), cpu.rlim_max};
    ::setrlimit(RLIMIT_CPU, &spec_cpu);
    char outcome = 's';
    std::string out;
    try {
      Evaluation e = evaluate_here(name, text, root);
      outcome = e.outcome == Evaluation::Outcome::json ? 'j' : 'e';
      out = std::move(e.text);
    } catch (const std::bad_alloc&) {
      out = "memory";
    } catch (...) {
      out = "exception";
    }
    if (!write_all(fd, &outcome, 1) || !write_u64(fd, out.size()) || !write_all(fd, out.data(), out.size())) ::_exit(1);
  }
}

std::string took_too_long(const std::string& what) {
  return fmt::format("{} took longer than {} s; trainc stops Jsonnet there (a loop that does not end?)", what,
                     limits::kJsonnetSeconds);
}
std::string needs_too_much_memory(const std::string& what) {
  return fmt::format(
      "{} needs more than {} MiB of memory; trainc stops Jsonnet there (std.range or std.repeat of a huge count?)",
      what, limits::kJsonnetMemoryBytes >> 20);
}

}  // namespace

std::optional<Evaluation> Server::submit(const std::string& name, const std::string& text, const fs::path& root) {
  what_ = fmt::format("evaluating '{}'", name);
  if (pid_ < 0) {
    if (auto error = start()) return Evaluation{Evaluation::Outcome::stopped, *error};
  }
  const std::string root_text = root.string();
  if (!write_u64(fd_, name.size()) || !write_all(fd_, name.data(), name.size()) || !write_u64(fd_, text.size()) ||
      !write_all(fd_, text.data(), text.size()) || !write_u64(fd_, root_text.size()) ||
      !write_all(fd_, root_text.data(), root_text.size()))
    return ended(what_);
  deadline_ = std::chrono::steady_clock::now() + std::chrono::seconds(limits::kJsonnetSeconds);
  busy_ = true;
  return std::nullopt;
}

Evaluation Server::collect() {
  busy_ = false;
  const std::string& what = what_;
  std::string data;
  bool too_long = false, too_big = false, too_much_memory = false;
  constexpr size_t kHeader = 1 + sizeof(uint64_t);
  char buf[1 << 16];
  for (;;) {
    if (data.size() >= kHeader) {
      uint64_t n = 0;
      std::memcpy(&n, data.data() + 1, sizeof n);
      if (n > limits::kJsonnetOutputBytes) {
        too_big = true;
        break;
      }
      if (data.size() == kHeader + n) break;
    }
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline_ - std::chrono::steady_clock::now());
    // The server's resident memory is watched as well as capped by RLIMIT_AS: a sanitizer build
    // cannot set that limit, and the cap must hold there too (the fuzzers run such builds).
    if (resident_bytes(pid_) > limits::kJsonnetMemoryBytes) {
      too_much_memory = true;
      break;
    }
    // Past the deadline, an answer already waiting (trainc was busy with other specs meanwhile)
    // is still read; only a server that has not answered is too late.
    pollfd p{fd_, POLLIN, 0};
    const int ready = ::poll(&p, 1, static_cast<int>(std::clamp<int64_t>(left.count(), 0, 50)));
    if (ready < 0 && errno == EINTR) continue;
    if (ready < 0) return ended(what);
    if (ready == 0) {
      if (left.count() <= 0) {
        too_long = true;
        break;
      }
      continue;
    }
    const ssize_t n = ::read(fd_, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return ended(what);
    data.append(buf, static_cast<size_t>(n));
    if (data.size() > kHeader + limits::kJsonnetOutputBytes) {
      too_big = true;
      break;
    }
  }
  if (too_long || too_big || too_much_memory) {
    stop(true);
    if (too_long) return {Evaluation::Outcome::stopped, took_too_long(what)};
    if (too_much_memory) return {Evaluation::Outcome::stopped, needs_too_much_memory(what)};
    return {Evaluation::Outcome::stopped, fmt::format("{} gives more than {} MiB of JSON; a spec is far smaller",
                                                      what, limits::kJsonnetOutputBytes >> 20)};
  }
  const char outcome = data[0];
  data.erase(0, kHeader);
  if (outcome == 'j') return {Evaluation::Outcome::json, std::move(data)};
  if (outcome == 'e') return {Evaluation::Outcome::jsonnet_error, std::move(data)};
  // The server caught an exception and goes on, but a failed allocation may have left libjsonnet
  // in any state: the next spec gets a fresh server.
  stop(true);
  if (data == "memory") return {Evaluation::Outcome::stopped, needs_too_much_memory(what)};
  return {Evaluation::Outcome::stopped, fmt::format("{} failed inside libjsonnet", what)};
}

std::optional<std::string> Server::start() {
  int fds[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) != 0)
    return fmt::format("cannot start Jsonnet: {}", std::strerror(errno));
  std::fflush(nullptr);
  // The child must not start with another thread inside malloc.
  wait_background();
  std::unique_lock gate(fork_gate());
  const pid_t pid = ::fork();
  if (pid < 0) {
    ::close(fds[0]);
    ::close(fds[1]);
    return fmt::format("cannot start Jsonnet: {}", std::strerror(errno));
  }
  if (pid == 0) {
    // The server keeps its end of the socket and nothing else trainc had open: holding another
    // server's socket would keep that server from seeing trainc close it.
    constexpr int kSocket = 3;
    if (fds[1] != kSocket && ::dup2(fds[1], kSocket) < 0) ::_exit(1);
    ::close_range(kSocket + 1, ~0U, 0);
    serve(kSocket);
  }
  ::close(fds[1]);
  pid_ = pid;
  fd_ = fds[0];
  return std::nullopt;
}

int Server::stop(bool kill) {
  if (pid_ < 0) return 0;
  ::close(fd_);  // a server waiting for the next spec exits at this end of its input
  if (kill) ::kill(pid_, SIGKILL);
  int status = 0;
  while (::waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
  }
  pid_ = -1;
  fd_ = -1;
  return status;
}

Evaluation Server::ended(const std::string& what) {
  const int status = stop(false);
  if (WIFSIGNALED(status)) {
    const int sig = WTERMSIG(status);
    if (sig == SIGXCPU || sig == SIGKILL) return {Evaluation::Outcome::stopped, took_too_long(what)};
    if (sig == SIGABRT)  // libjsonnet's answer to a failed allocation
      return {Evaluation::Outcome::stopped, needs_too_much_memory(what)};
    if (sig == SIGSEGV || sig == SIGBUS)
      return {Evaluation::Outcome::stopped,
              fmt::format("{} ran out of stack: the Jsonnet is nested too deeply (a spec needs a few levels; trainc "
                          "reads at most {})",
                          what, limits::kDepth)};
    return {Evaluation::Outcome::stopped, fmt::format("{} stopped with signal {}", what, sig)};
  }
  return {Evaluation::Outcome::stopped, fmt::format("{} failed", what)};
}

}  // namespace trainc::jsonnet
