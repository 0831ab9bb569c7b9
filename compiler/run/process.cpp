#include "run/process.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <set>

#include <fmt/format.h>

#include "quoting/shell.h"

extern char** environ;

namespace fs = std::filesystem;

namespace trainc {

namespace {

/// `name` as the first executable in `path`'s folders, or `name` itself (posix_spawnp then looks
/// it up on this process's PATH).
std::string on_path(const std::string& name, const std::string& path) {
  if (name.find('/') != std::string::npos) return name;
  for (size_t start = 0; start <= path.size();) {
    size_t end = path.find(':', start);
    if (end == std::string::npos) end = path.size();
    const fs::path candidate = fs::path(path.substr(start, end - start)) / name;
    start = end + 1;
    if (access(candidate.c_str(), X_OK) == 0) return candidate.string();
  }
  return name;
}

std::vector<std::string> environment(const std::map<std::string, std::string>& env, Inherit inherit) {
  std::vector<std::string> vars;
  for (char** e = environ; inherit == Inherit::caller && *e; ++e) {
    std::string_view v(*e);
    if (!env.count(std::string(v.substr(0, v.find('='))))) vars.emplace_back(v);
  }
  for (const auto& [k, v] : env) vars.push_back(k + "=" + v);
  return vars;
}

/// What posix_spawnp takes for argv with env: the program (looked up on env's PATH when it names
/// one), and the argument and environment arrays, pointing into this object.
struct Spawn {
  std::string program;
  std::vector<std::string> vars;
  std::vector<char*> args, envp;
  Spawn(const std::vector<std::string>& argv, const std::map<std::string, std::string>& env, Inherit inherit)
      : vars(environment(env, inherit)) {
    const auto path = env.find("PATH");
    program = path == env.end() ? argv[0] : on_path(argv[0], path->second);
    for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    for (auto& v : vars) envp.push_back(v.data());
    envp.push_back(nullptr);
  }
};

}  // namespace

Child::Child(const std::vector<std::string>& argv, std::string& error, const std::map<std::string, std::string>& env,
             const fs::path& cwd, Inherit inherit) {
  const Spawn sp(argv, env, inherit);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  if (!cwd.empty()) posix_spawn_file_actions_addchdir_np(&actions, cwd.c_str());
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP);
  posix_spawnattr_setpgroup(&attr, 0);  // a group of its own, named by its pid
  if (int rc = posix_spawnp(&pid_, sp.program.c_str(), &actions, &attr, sp.args.data(), sp.envp.data()); rc != 0) {
    error = fmt::format("cannot start {}: {}", argv[0], std::strerror(rc));
    pid_ = -1;
  } else {
    group_ = pid_;
  }
  posix_spawnattr_destroy(&attr);
  posix_spawn_file_actions_destroy(&actions);
}

int Child::reap(int status) {
  pid_ = -1;
  // The leader is gone; what it started and left behind goes with it.
  if (group_ > 0) {
    if (::kill(-group_, SIGTERM) == 0) {
      usleep(200000);
      ::kill(-group_, SIGKILL);
    }
    group_ = -1;
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

namespace {
volatile sig_atomic_t g_signal = 0;
void on_signal(int sig) { g_signal = sig; }
}  // namespace

void catch_interrupts() {
  struct sigaction sa {};
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
}

int interrupted() { return g_signal; }

int Child::wait() {
  int status = 0;
  if (pid_ <= 0) return 2;
  while (true) {
    if (const int sig = interrupted()) {
      stop();
      return 128 + sig;
    }
    const pid_t got = waitpid(pid_, &status, WNOHANG);
    if (got == pid_) return reap(status);
    if (got < 0 && errno != EINTR) return 2;
    usleep(50000);
  }
}

std::optional<int> Child::poll() {
  int status = 0;
  if (pid_ <= 0) return 2;
  if (waitpid(pid_, &status, WNOHANG) != pid_) return std::nullopt;
  return reap(status);
}

void Child::signal(int sig) {
  if (group_ > 0) ::kill(-group_, sig);
}

void Child::terminate() {
  if (pid_ > 0) ::kill(pid_, SIGTERM);
}

std::optional<int> Child::stop(int grace_ms, Term term) {
  if (group_ <= 0) return std::nullopt;
  if (term == Term::group) ::kill(-group_, SIGTERM);
  if (term == Term::leader) terminate();
  int status = 0;
  std::optional<int> code;
  const bool interrupted_before = interrupted() != 0;
  for (int waited = 0; pid_ > 0 && waited < grace_ms; waited += 50) {
    if (waitpid(pid_, &status, WNOHANG) == pid_) {
      pid_ = -1;
      code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
      break;
    }
    if (!interrupted_before && interrupted()) break;  // Ctrl-C during a long grace: stop now
    usleep(50000);
  }
  ::kill(-group_, SIGKILL);
  if (pid_ > 0 && waitpid(pid_, &status, 0) == pid_)
    code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  pid_ = -1;
  group_ = -1;
  return code;
}

std::optional<std::string> capture(const std::vector<std::string>& argv, const std::map<std::string, std::string>& env,
                                   Inherit inherit) {
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) return std::nullopt;
  const Spawn sp(argv, env, inherit);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, fds[1], STDOUT_FILENO);
  posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, "/dev/null", O_WRONLY, 0);
  pid_t pid = -1;
  const int rc = posix_spawnp(&pid, sp.program.c_str(), &actions, nullptr, sp.args.data(), sp.envp.data());
  posix_spawn_file_actions_destroy(&actions);
  close(fds[1]);
  std::string out;
  if (rc == 0) {
    char buf[4096];
    ssize_t n;
    while ((n = read(fds[0], buf, sizeof buf)) != 0) {
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) break;
      out.append(buf, static_cast<size_t>(n));
    }
  }
  close(fds[0]);
  if (rc != 0) return std::nullopt;
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {}
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) return std::nullopt;
  return out;
}

Exchanged exchange(const std::vector<std::string>& argv, const std::string& input, int timeout_s, size_t limit) {
  Exchanged x;
  int in[2], out[2], err[2];
  if (pipe2(in, O_CLOEXEC) != 0) return {-1, "", std::strerror(errno)};
  if (pipe2(out, O_CLOEXEC) != 0 || pipe2(err, O_CLOEXEC) != 0) {
    close(in[0]);
    close(in[1]);
    return {-1, "", std::strerror(errno)};
  }
  const Spawn sp(argv, {}, Inherit::caller);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, in[0], STDIN_FILENO);
  posix_spawn_file_actions_adddup2(&actions, out[1], STDOUT_FILENO);
  posix_spawn_file_actions_adddup2(&actions, err[1], STDERR_FILENO);
  pid_t pid = -1;
  const int rc = posix_spawnp(&pid, sp.program.c_str(), &actions, nullptr, sp.args.data(), sp.envp.data());
  posix_spawn_file_actions_destroy(&actions);
  close(in[0]);
  close(out[1]);
  close(err[1]);
  if (rc != 0) {
    close(in[1]);
    close(out[0]);
    close(err[0]);
    return {-1, "", fmt::format("cannot start {}: {}", argv[0], std::strerror(rc))};
  }
  // stdin written and both outputs read in one loop: a child blocked writing a full pipe while
  // this one writes its stdin would otherwise wait for ever. A child that exits before reading all
  // of its stdin must not kill trainc with SIGPIPE: it is blocked in this thread while the loop
  // writes, and one it raised is taken back before the mask is restored.
  sigset_t pipe_only, before;
  sigemptyset(&pipe_only);
  sigaddset(&pipe_only, SIGPIPE);
  pthread_sigmask(SIG_BLOCK, &pipe_only, &before);
  fcntl(in[1], F_SETFL, O_NONBLOCK);
  size_t sent = 0;
  int fin = input.empty() ? -1 : in[1];
  if (fin < 0) close(in[1]);
  int fo = out[0], fe = err[0];
  struct timeval start;
  gettimeofday(&start, nullptr);
  bool timed_out = false;
  while (fo >= 0 || fe >= 0) {
    struct timeval now;
    gettimeofday(&now, nullptr);
    const long elapsed_ms = (now.tv_sec - start.tv_sec) * 1000 + (now.tv_usec - start.tv_usec) / 1000;
    if (elapsed_ms >= timeout_s * 1000L) {
      timed_out = true;
      kill(pid, SIGKILL);
      break;
    }
    fd_set rd, wr;
    FD_ZERO(&rd);
    FD_ZERO(&wr);
    int top = -1;
    for (int fd : {fo, fe})
      if (fd >= 0) FD_SET(fd, &rd), top = std::max(top, fd);
    if (fin >= 0) FD_SET(fin, &wr), top = std::max(top, fin);
    struct timeval wait {0, 200000};
    if (select(top + 1, &rd, &wr, nullptr, &wait) < 0) {
      if (errno == EINTR) continue;
      break;
    }
    if (fin >= 0 && FD_ISSET(fin, &wr)) {
      const ssize_t n = write(fin, input.data() + sent, input.size() - sent);
      if (n > 0) sent += static_cast<size_t>(n);
      if ((n < 0 && errno != EAGAIN && errno != EINTR) || sent == input.size()) {
        close(fin);
        fin = -1;
      }
    }
    for (auto [fd, into] : {std::pair{&fo, &x.out}, std::pair{&fe, &x.err}}) {
      if (*fd < 0 || !FD_ISSET(*fd, &rd)) continue;
      char buf[8192];
      const ssize_t n = read(*fd, buf, sizeof buf);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        close(*fd);
        *fd = -1;
        continue;
      }
      if (into->size() < limit) into->append(buf, std::min(static_cast<size_t>(n), limit - into->size()));
    }
  }
  for (int fd : {fin, fo, fe})
    if (fd >= 0) close(fd);
  sigset_t pending;
  sigpending(&pending);
  if (sigismember(&pending, SIGPIPE)) {
    const struct timespec now {0, 0};
    sigtimedwait(&pipe_only, nullptr, &now);
  }
  pthread_sigmask(SIG_SETMASK, &before, nullptr);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {}
  x.code = timed_out ? -2 : WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return x;
}

int run_one(const std::vector<std::string>& argv, const std::map<std::string, std::string>& env, const fs::path& cwd,
            Inherit inherit) {
  std::string shown;
  if (inherit == Inherit::caller)
    for (const auto& [k, v] : env) shown += sh_quote(k + "=" + v) + " ";
  fmt::print("  $ {}{}\n", shown, sh_join(argv));
  std::fflush(stdout);
  std::string error;
  Child child(argv, error, env, cwd, inherit);
  if (!child.started()) {
    fmt::print(stderr, "trainc: {}\n", error);
    return 2;
  }
  return child.wait();
}

namespace {

/// The processes below this one outside `spare` and their subtrees: those still running, and its
/// own children that have exited and wait to be reaped.
struct Below {
  std::vector<pid_t> live, exited_children;
};

Below below(const std::set<pid_t>& spare) {
  std::map<pid_t, std::vector<pid_t>> children;
  std::set<pid_t> zombies;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator("/proc", ec)) {
    const std::string name = entry.path().filename().string();
    if (name.empty() || name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::ifstream in(entry.path() / "stat");
    std::string stat((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    const auto close = stat.rfind(')');  // the command name may hold spaces and parentheses
    char state = 0;
    pid_t ppid = 0;
    if (close == std::string::npos || std::sscanf(stat.c_str() + close + 1, " %c %d", &state, &ppid) != 2) continue;
    const pid_t pid = std::stoi(name);
    children[ppid].push_back(pid);
    if (state == 'Z' || state == 'X') zombies.insert(pid);
  }
  Below found;
  for (pid_t child : children[getpid()])
    if (zombies.count(child) && !spare.count(child)) found.exited_children.push_back(child);
  for (std::vector<pid_t> todo{getpid()}; !todo.empty();) {
    const pid_t pid = todo.back();
    todo.pop_back();
    for (pid_t child : children[pid]) {
      if (spare.count(child)) continue;
      if (!zombies.count(child)) found.live.push_back(child);
      todo.push_back(child);
    }
  }
  return found;
}

/// Reaps this process's exited children outside `spare` (a Child reaps its own by pid).
void reap_exited(const std::set<pid_t>& spare) {
  int status = 0;
  for (pid_t pid : below(spare).exited_children) waitpid(pid, &status, WNOHANG);
}

}  // namespace

namespace {

volatile sig_atomic_t g_namespace_child = 0;
void pass_on(int sig) {
  if (g_namespace_child > 0) ::kill(g_namespace_child, sig);
}

/// Writes `text` to /proc/self/FILE (a user namespace's uid and gid maps).
bool write_proc_self(const char* file, const std::string& text) {
  const int fd = ::open((std::string("/proc/self/") + file).c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0) return false;
  const bool ok = ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
  ::close(fd);
  return ok;
}

}  // namespace

std::optional<int> run_in_pid_namespace(const std::function<int()>& body, std::string& why_not) {
  std::fflush(stdout);
  std::fflush(stderr);
  // The namespaces are made in a child, so that this process keeps its own (a failure here leaves
  // it as it was, to run `body` uncontained).
  int ready[2];
  if (::pipe2(ready, O_CLOEXEC) != 0) {
    why_not = fmt::format("pipe: {}", std::strerror(errno));
    return std::nullopt;
  }
  const pid_t outer = ::fork();
  if (outer < 0) {
    why_not = fmt::format("fork: {}", std::strerror(errno));
    ::close(ready[0]);
    ::close(ready[1]);
    return std::nullopt;
  }
  if (outer == 0) {
    ::close(ready[0]);
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);  // trainc killed outright: its run goes too
    if (::getppid() == 1) ::_exit(125);  // it already was, before the line above took effect
    const uid_t uid = ::getuid();
    const gid_t gid = ::getgid();
    if (::unshare(CLONE_NEWPID | CLONE_NEWNS) != 0) {
      // Without CAP_SYS_ADMIN: a user namespace mapping this user to itself grants it there.
      if (::unshare(CLONE_NEWUSER | CLONE_NEWPID | CLONE_NEWNS) != 0 || !write_proc_self("setgroups", "deny") ||
          !write_proc_self("uid_map", fmt::format("{} {} 1\n", uid, uid)) ||
          !write_proc_self("gid_map", fmt::format("{} {} 1\n", gid, gid))) {
        const std::string why = fmt::format("unshare: {}", std::strerror(errno));
        (void)!::write(ready[1], why.data(), why.size());
        ::_exit(125);
      }
    }
    // The namespace's first process is the next child: this one waits for it and passes its status on.
    const pid_t init = ::fork();
    if (init < 0) ::_exit(125);
    if (init == 0) {
      ::prctl(PR_SET_PDEATHSIG, SIGKILL);
      // Its own /proc, so that scans of it (end_descendants) see this namespace's pids, and mounts
      // made here stay here.
      if (::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0 ||
          ::mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, nullptr) != 0) {
        const std::string why = fmt::format("mount /proc: {}", std::strerror(errno));
        (void)!::write(ready[1], why.data(), why.size());
        ::_exit(125);
      }
      (void)!::write(ready[1], "", 1);  // one NUL byte: contained, running
      ::close(ready[1]);
      int rc = 70;  // EX_SOFTWARE: what escaped body() must not unwind into main() as pid 1
      try {
        rc = body();
      } catch (const std::exception& e) {
        std::fprintf(stderr, "trainc: internal error in the contained run: %s\n", e.what());
      } catch (...) {
        std::fprintf(stderr, "trainc: internal error in the contained run\n");
      }
      std::fflush(nullptr);
      ::_exit(rc);
    }
    ::close(ready[1]);
    struct sigaction sa {};
    sa.sa_handler = pass_on;
    sigemptyset(&sa.sa_mask);
    g_namespace_child = init;
    sigaction(SIGINT, &sa, nullptr);
    sigaction(SIGTERM, &sa, nullptr);
    int status = 0;
    pid_t got;
    while ((got = ::waitpid(init, &status, 0)) < 0 && errno == EINTR) {
    }
    if (got < 0) ::_exit(70);
    ::_exit(WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status));
  }
  ::close(ready[1]);
  std::string said;
  char buf[256];
  for (ssize_t n; (n = ::read(ready[0], buf, sizeof buf)) != 0;) {
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) break;
    said.append(buf, static_cast<size_t>(n));
    if (said == std::string(1, '\0')) break;  // running: the rest of the pipe closes when it ends
  }
  ::close(ready[0]);
  struct sigaction sa {}, old_int {}, old_term {};
  sa.sa_handler = pass_on;
  sigemptyset(&sa.sa_mask);
  g_namespace_child = outer;
  sigaction(SIGINT, &sa, &old_int);
  sigaction(SIGTERM, &sa, &old_term);
  int status = 0;
  pid_t got;
  while ((got = ::waitpid(outer, &status, 0)) < 0 && errno == EINTR) {
  }
  if (got < 0) status = 70 << 8;
  sigaction(SIGINT, &old_int, nullptr);
  sigaction(SIGTERM, &old_term, nullptr);
  g_namespace_child = 0;
  if (said != std::string(1, '\0')) {
    why_not = said.empty() ? "the contained process did not start" : said;
    return std::nullopt;
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

std::set<pid_t> adopt_orphans() {
  prctl(PR_SET_CHILD_SUBREAPER, 1);
  const auto now = below({}).live;
  return {now.begin(), now.end()};
}

std::vector<pid_t> end_descendants(const std::set<pid_t>& spare, int grace_ms) {
  const std::vector<pid_t> left = below(spare).live;
  for (pid_t pid : left) ::kill(pid, SIGTERM);
  for (int waited = 0; waited < grace_ms && !below(spare).live.empty(); waited += 50) {
    reap_exited(spare);
    usleep(50000);
  }
  // What ignored TERM, and anything it started meanwhile.
  for (int round = 0; round < 20; ++round) {
    const std::vector<pid_t> still = below(spare).live;
    if (still.empty()) break;
    for (pid_t pid : still) ::kill(pid, SIGKILL);
    usleep(50000);
    reap_exited(spare);
  }
  reap_exited(spare);
  return left;
}

int free_port() {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof addr;
  int port = 0;
  if (fd >= 0 && bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0 &&
      getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0)
    port = ntohs(addr.sin_port);
  if (fd >= 0) close(fd);
  return port;
}

bool accepts(int port, int seconds) {
  for (int i = 0; i < seconds * 10; ++i) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<uint16_t>(port));
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    const bool ok = fd >= 0 && connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0;
    if (fd >= 0) close(fd);
    if (ok) return true;
    usleep(100000);
  }
  return false;
}

std::optional<int> http_status(int port, const std::string& path) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return std::nullopt;
  timeval timeout{5, 0};  // a server that accepts and never answers is not ready
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof timeout);
  setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, sizeof timeout);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  std::optional<int> status;
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0) {
    const std::string request = fmt::format("GET {} HTTP/1.0\r\nHost: 127.0.0.1:{}\r\n\r\n", path, port);
    char buf[64] = {};
    size_t got = 0;
    if (write(fd, request.data(), request.size()) == static_cast<ssize_t>(request.size()))
      while (got < sizeof buf - 1) {
        const ssize_t n = read(fd, buf + got, sizeof buf - 1 - got);
        if (n <= 0) break;
        got += static_cast<size_t>(n);
      }
    // "HTTP/1.x NNN ..."
    int code = 0;
    if (std::sscanf(buf, "HTTP/%*d.%*d %d", &code) == 1) status = code;
  }
  close(fd);
  return status;
}

}  // namespace trainc
