#include "frontend/jsonnet_loader.h"

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
#include <chrono>
#include <cstdint>
#include <cstring>
#include <deque>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <optional>
#include <regex>
#include <sstream>
#include <thread>
#include <vector>

extern "C" {
#include <libjsonnet.h>
}

#include "base/background.h"
#include "base/data_path.h"
#include "base/embedded.h"
#include "frontend/limits.h"

namespace fs = std::filesystem;

namespace trainc {
namespace {

constexpr std::string_view kStdlibPrefix = "<trainc-stdlib>/";

struct ImportJail {
  fs::path root;  ///< canonical folder of the spec
  JsonnetVm* vm = nullptr;
};

char* copy_to_vm(JsonnetVm* vm, std::string_view s) {
  char* buf = jsonnet_realloc(vm, nullptr, s.size() + 1);
  std::memcpy(buf, s.data(), s.size());
  buf[s.size()] = '\0';
  return buf;
}

bool inside(const fs::path& root, const fs::path& p) {
  auto r = root.begin(), e = root.end();
  auto q = p.begin();
  for (; r != e; ++r, ++q)
    if (q == p.end() || *q != *r) return false;
  return true;
}

char* import_callback(void* ctx, const char* base, const char* rel, char** found_here, int* success) {
  auto* jail = static_cast<ImportJail*>(ctx);
  *success = 0;
  const std::string_view rel_sv(rel), base_sv(base);
  const bool bare = rel_sv.find('/') == std::string_view::npos;
  const bool from_stdlib = base_sv.rfind(kStdlibPrefix, 0) == 0;
  // The embedded stdlib answers bare names ('trainc.libsonnet') unless a file of that name sits
  // beside the importing file, and every import made from inside the stdlib.
  if (bare || from_stdlib) {
    std::error_code ec;
    const auto* f = find_embedded(fmt::format("stdlib/{}", rel_sv));
    const bool shadowed = !from_stdlib && fs::exists(fs::path(base) / rel_sv, ec);
    if (f && !shadowed) {
      *found_here = copy_to_vm(jail->vm, fmt::format("{}{}", kStdlibPrefix, rel_sv));
      *success = 1;
      return copy_to_vm(jail->vm, f->data);
    }
  }
  std::error_code ec;
  fs::path p = fs::path(rel_sv).is_absolute() ? fs::path(rel_sv) : fs::path(base) / rel_sv;
  fs::path canon = fs::weakly_canonical(p, ec);
  if (from_stdlib || ec || !inside(jail->root, canon)) {
    return copy_to_vm(jail->vm, fmt::format("import '{}' is outside the spec's folder; a spec may import files "
                                            "in its own folder (or below it) and the trainc stdlib",
                                            rel_sv));
  }
  std::ifstream in(canon, std::ios::binary);
  if (!in) return copy_to_vm(jail->vm, fmt::format("cannot read import '{}'", rel_sv));
  std::ostringstream ss;
  ss << in.rdbuf();
  *found_here = copy_to_vm(jail->vm, p.lexically_normal().string());
  *success = 1;
  return copy_to_vm(jail->vm, ss.str());
}

/// Turns libjsonnet's error text into one diagnostic at the first location it names.
void report_jsonnet_error(const SourceFile& file, const std::string& raw, Diagnostics& diags) {
  // "RUNTIME ERROR: msg\n\tspec.jsonnet:3:5-10\t..." or "STATIC ERROR: spec.jsonnet:1:2: msg"
  static const std::regex static_re("^STATIC ERROR: (.*?):([0-9]+):([0-9]+)(-[0-9:()-]+)?: (.*)");
  static const std::regex loc_re("\\t(.*?):\\(?([0-9]+):([0-9]+)");
  std::string first_line = raw.substr(0, raw.find('\n'));
  std::smatch m;
  std::string file_name = file.name();
  Loc loc;
  std::string message;
  if (std::regex_search(first_line, m, static_re)) {
    file_name = m[1];
    loc = Loc{std::stoi(m[2]), std::stoi(m[3]), 1};
    message = "Jsonnet syntax error: " + m[5].str();
  } else {
    message = first_line;
    if (message.rfind("RUNTIME ERROR: ", 0) == 0) message = "Jsonnet error: " + message.substr(15);
    // The first frame in a file trainc can quote; frames in the stdlib fall through to the spec.
    std::string rest = raw.substr(std::min(raw.size(), first_line.size()));
    for (std::sregex_iterator it(rest.begin(), rest.end(), loc_re), end; it != end; ++it) {
      std::string f = (*it)[1];
      if (f.rfind(kStdlibPrefix, 0) == 0) continue;
      file_name = f;
      loc = Loc{std::stoi((*it)[2]), std::stoi((*it)[3]), 1};
      break;
    }
  }
  while (!message.empty() && (message.back() == '\n' || message.back() == ' ')) message.pop_back();
  diags.report({Severity::error, file_name, loc, "", message, {}});
}

/// Finds where each key of the evaluated document was written, searching forward from the parent.
class PositionFinder {
 public:
  PositionFinder(Document& doc) : doc_(doc), text_(doc.file->text()) {}

  void walk(const nlohmann::json& v, const std::string& ptr, size_t from) {
    if (v.is_object()) {
      for (const auto& [key, child] : v.items()) {
        std::string cptr = ptr_key(ptr, key);
        size_t at = find_key(key, from);
        if (at != std::string::npos) {
          Loc k = doc_.file->loc_of(at);
          k.len = static_cast<int>(key.size()) + (text_[at] == '"' || text_[at] == '\'' ? 2 : 0);
          doc_.spans[cptr] = Span{k, value_loc(at)};
          walk(child, cptr, at);
        } else {
          walk(child, cptr, from);
        }
      }
    } else if (v.is_array()) {
      size_t cursor = from;
      for (size_t i = 0; i < v.size(); ++i) {
        // Each array element's keys are looked for after the previous element's first key.
        std::string cptr = ptr_index(ptr, i);
        walk(v[i], cptr, cursor);
        size_t next = first_found_offset(cptr);
        if (next != std::string::npos) cursor = next + 1;
      }
    }
  }

 private:
  size_t find_key(const std::string& key, size_t from) const {
    for (size_t pos = text_.find(key, from); pos != std::string::npos; pos = text_.find(key, pos + 1)) {
      size_t start = pos, end = pos + key.size();
      if (start > 0 && (text_[start - 1] == '"' || text_[start - 1] == '\'')) {
        if (end >= text_.size() || text_[end] != text_[start - 1]) continue;
        --start;
        ++end;
      } else if ((start > 0 && is_ident(text_[start - 1])) || (end < text_.size() && is_ident(text_[end]))) {
        continue;
      }
      size_t colon = end;
      while (colon < text_.size() && (text_[colon] == ' ' || text_[colon] == '\t' || text_[colon] == '+')) ++colon;
      if (colon < text_.size() && text_[colon] == ':' && !in_comment(start)) return start;
    }
    return std::string::npos;
  }
  Loc value_loc(size_t key_at) const {
    size_t p = text_.find(':', key_at);
    while (p < text_.size() && (text_[p] == ':' || text_[p] == ' ' || text_[p] == '\t')) ++p;
    return doc_.file->loc_of(std::min(p, text_.size() ? text_.size() - 1 : 0));
  }
  size_t first_found_offset(const std::string& ptr) const {
    size_t best = std::string::npos;
    for (auto it = doc_.spans.lower_bound(ptr + "/"); it != doc_.spans.end() && it->first.rfind(ptr + "/", 0) == 0;
         ++it) {
      const Loc& k = it->second.key;
      if (!k.known()) continue;
      size_t off = offset_of(k);
      if (off < best) best = off;
    }
    return best;
  }
  size_t offset_of(const Loc& l) const {
    size_t line = 1, i = 0;
    for (; i < text_.size() && line < static_cast<size_t>(l.line); ++i)
      if (text_[i] == '\n') ++line;
    return i + l.col - 1;
  }
  bool in_comment(size_t pos) const {
    size_t bol = text_.rfind('\n', pos);
    bol = bol == std::string::npos ? 0 : bol + 1;
    std::string_view line(text_.data() + bol, pos - bol);
    return line.find("//") != std::string_view::npos || line.find('#') != std::string_view::npos;
  }
  static bool is_ident(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

  Document& doc_;
  const std::string& text_;
};

/// What evaluating a spec gave: its JSON, or libjsonnet's error text, or why the evaluation was
/// stopped (a limit of limits.h).
struct Evaluation {
  enum class Outcome { json, jsonnet_error, stopped } outcome = Outcome::stopped;
  std::string text;
};

/// Evaluates in this process. Only ever called in the Jsonnet server (see Server below).
Evaluation evaluate_here(const std::string& name, const std::string& text, const fs::path& root) {
  ImportJail jail;
  jail.root = root;
  JsonnetVm* vm = jsonnet_make();
  jail.vm = vm;
  jsonnet_import_callback(vm, import_callback, &jail);
  jsonnet_max_trace(vm, 4);
  jsonnet_max_stack(vm, limits::kJsonnetStackFrames);
  int error = 0;
  char* out = jsonnet_evaluate_snippet(vm, name.c_str(), text.c_str(), &error);
  Evaluation e{error ? Evaluation::Outcome::jsonnet_error : Evaluation::Outcome::json, out ? out : ""};
  jsonnet_realloc(vm, out, 0);
  jsonnet_destroy(vm);
  return e;
}

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

/// libjsonnet lexes, parses and desugars its standard library again for every file it evaluates
/// (twice for a spec importing trainc.libsonnet), about 13 ms each in millions of small
/// allocations; its API offers no way to keep the parsed library. trainc is linked with mimalloc
/// (meson.build), which takes a third off that against glibc's allocator, and evaluates the
/// Jsonnet specs of one invocation ahead, side by side (Pool below).
///
/// A server is a child process that evaluates Jsonnet specs, one at a time, with a memory cap, a
/// deadline and a bound on its output per spec, so that a runaway spec (std.range(0, 1e9), nesting
/// that overflows libjsonnet's parser) stops with an error instead of taking trainc, or the
/// machine, with it. A spec that is stopped takes the server with it; the next spec starts a fresh
/// one.
class Server {
 public:
  ~Server() { stop(busy_); }

  bool busy() const { return busy_; }

  /// Sends a spec to evaluate, starting the server if it is not running; collect() reads the
  /// answer. The deadline runs from here. Returns the outcome at once when the spec cannot be sent.
  std::optional<Evaluation> submit(const std::string& name, const std::string& text, const fs::path& root) {
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

  /// Waits for the answer to the spec submit() sent.
  Evaluation collect() {
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

 private:
  static std::string took_too_long(const std::string& what) {
    return fmt::format("{} took longer than {} s; trainc stops Jsonnet there (a loop that does not end?)", what,
                       limits::kJsonnetSeconds);
  }
  static std::string needs_too_much_memory(const std::string& what) {
    return fmt::format(
        "{} needs more than {} MiB of memory; trainc stops Jsonnet there (std.range or std.repeat of a huge count?)",
        what, limits::kJsonnetMemoryBytes >> 20);
  }

  std::optional<std::string> start() {
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

  /// Ends the server (`kill`: at once) and returns its wait status.
  int stop(bool kill) {
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

  /// The server ended in the middle of a spec: why, from how it ended.
  Evaluation ended(const std::string& what) {
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

  pid_t pid_ = -1;
  int fd_ = -1;
  bool busy_ = false;
  std::string what_;
  std::chrono::steady_clock::time_point deadline_;
};

/// A spec to evaluate: its name, its text and the folder its imports are jailed to.
struct Request {
  std::string name, text, root;
  bool operator==(const Request&) const = default;
};

Request request_for(const SourceFile& file) {
  std::error_code ec;
  const fs::path root = fs::weakly_canonical(fs::absolute(file.name(), ec).parent_path(), ec);
  return {file.name(), file.text(), root.string()};
}

/// The servers of one invocation. The Jsonnet specs it was told to expect are sent ahead, in order,
/// to as many servers as the machine has cores (at most 4), while trainc goes on with the specs
/// before them; evaluating one asks for its answer. A server answers one spec at a time, so at most
/// one answer per server waits to be asked for.
class Pool {
 public:
  void expect(std::vector<Request> requests) {
    const size_t cores = std::clamp<size_t>(std::thread::hardware_concurrency(), 1, 4);
    width_ = std::clamp<size_t>(requests.size(), 1, cores);
    for (auto& r : requests) queued_.push_back(std::move(r));
    dispatch();
  }

  Evaluation evaluate(const Request& r) {
    if (auto it = std::find_if(finished_.begin(), finished_.end(), [&](const auto& f) { return f.first == r; });
        it != finished_.end()) {
      Evaluation e = std::move(it->second);
      finished_.erase(it);
      dispatch();
      return e;
    }
    if (auto it = std::find_if(in_flight_.begin(), in_flight_.end(), [&](const auto& f) { return f.first == r; });
        it != in_flight_.end()) {
      Server* s = it->second;
      in_flight_.erase(it);
      Evaluation e = s->collect();
      dispatch();
      return e;
    }
    if (auto it = std::find(queued_.begin(), queued_.end(), r); it != queued_.end()) queued_.erase(it);
    Server* s = idle();
    if (!s) {  // every server holds a later spec: take the oldest answer to free one
      auto& [oldest, busy] = in_flight_.front();
      finished_.emplace_back(std::move(oldest), busy->collect());
      s = busy;
      in_flight_.erase(in_flight_.begin());
    }
    if (auto now = s->submit(r.name, r.text, r.root)) return std::move(*now);
    Evaluation e = s->collect();
    dispatch();
    return e;
  }

 private:
  /// An idle server, started if the pool is not at its width yet; nullptr when all are busy.
  Server* idle() {
    for (auto& s : servers_)
      if (!s->busy()) return s.get();
    if (servers_.size() < width_) return servers_.emplace_back(std::make_unique<Server>()).get();
    return nullptr;
  }

  /// Sends expected specs to idle servers.
  void dispatch() {
    while (!queued_.empty()) {
      Server* s = idle();
      if (!s) return;
      Request r = std::move(queued_.front());
      queued_.pop_front();
      if (auto now = s->submit(r.name, r.text, r.root))
        finished_.emplace_back(std::move(r), std::move(*now));
      else
        in_flight_.emplace_back(std::move(r), s);
    }
  }

  size_t width_ = 1;
  std::vector<std::unique_ptr<Server>> servers_;
  std::deque<Request> queued_;
  std::vector<std::pair<Request, Server*>> in_flight_;
  std::vector<std::pair<Request, Evaluation>> finished_;
};

Pool& pool() {
  static Pool p;
  return p;
}

/// Evaluates `file`. The last evaluation is kept: with --skip-non-specs every Jsonnet spec is
/// evaluated to tell whether it is a trainc spec (spec_detect.cpp) and then again to compile it,
/// and evaluating is most of what a Jsonnet spec costs. Jsonnet is hermetic but for its imports,
/// which cannot change between the two calls of one invocation. A stopped evaluation is not kept:
/// it may have been the machine's load.
Evaluation evaluate(const SourceFile& file) {
  static std::optional<std::pair<Request, Evaluation>> last;
  Request r = request_for(file);
  if (last && last->first == r) return last->second;
  Evaluation e = pool().evaluate(r);
  if (e.outcome == Evaluation::Outcome::stopped)
    last.reset();
  else
    last.emplace(std::move(r), e);
  return e;
}

/// Where `file` cannot be evaluated, and why, before libjsonnet sees it; nullopt when it can.
std::optional<std::pair<size_t, std::string>> not_evaluable(const SourceFile& file) {
  if (auto at = limits::invalid_utf8(file.text()))
    return std::pair{*at, fmt::format("byte 0x{:02X} is not valid UTF-8; trainc reads specs written in UTF-8",
                                      static_cast<unsigned char>(file.text()[*at]))};
  if (auto at = limits::jsonnet_too_deep(file.text()))
    return std::pair{*at,
                     fmt::format("more than {} brackets open at once; trainc reads Jsonnet nested at most that deep",
                                 limits::kJsonnetSourceDepth)};
  return std::nullopt;
}

}  // namespace

void expect_jsonnet(const std::vector<SourcePtr>& files) {
  std::vector<Request> requests;
  for (const auto& f : files) {
    if (not_evaluable(*f)) continue;
    // A spec given twice is evaluated once ahead; its second load evaluates it again then.
    Request r = request_for(*f);
    if (std::find(requests.begin(), requests.end(), r) == requests.end()) requests.push_back(std::move(r));
  }
  if (!requests.empty()) pool().expect(std::move(requests));
}

std::optional<Document> load_jsonnet(SourcePtr file, Diagnostics& diags) {
  if (auto why = not_evaluable(*file)) {
    diags.report({Severity::error, file->name(), file->loc_of(why->first), "", why->second, {}});
    return std::nullopt;
  }
  Evaluation e = evaluate(*file);
  if (e.outcome == Evaluation::Outcome::jsonnet_error) {
    report_jsonnet_error(*file, e.text, diags);
    return std::nullopt;
  }
  if (e.outcome == Evaluation::Outcome::stopped) {
    diags.report({Severity::error, file->name(), Loc{1, 1, 1}, "", e.text, {}});
    return std::nullopt;
  }
  Document doc;
  doc.file = file;
  // libjsonnet's output is JSON, but strings read with importstr pass any bytes through.
  doc.root = nlohmann::json::parse(e.text, nullptr, /*allow_exceptions=*/false);
  if (doc.root.is_discarded()) {
    diags.report({Severity::error,
                  file->name(),
                  Loc{1, 1, 1},
                  "",
                  fmt::format("evaluating '{}' gives text that is not JSON in UTF-8 (a file read with importstr "
                              "that is not UTF-8 text?)",
                              file->name()),
                  {}});
    return std::nullopt;
  }
  doc.spans[""] = Span{{}, Loc{1, 1, 1}};
  if (!limits::check_document(doc, diags)) return std::nullopt;
  PositionFinder(doc).walk(doc.root, "", 0);
  return doc;
}

}  // namespace trainc
