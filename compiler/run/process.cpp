#include "run/process.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include <fmt/format.h>

#include "quoting/shell.h"

extern char** environ;

namespace fs = std::filesystem;

namespace trainc {

Child::Child(const std::vector<std::string>& argv, std::string& error, const std::map<std::string, std::string>& env,
             const fs::path& cwd) {
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  std::vector<std::string> vars;
  for (char** e = environ; *e; ++e) {
    std::string_view v(*e);
    if (!env.count(std::string(v.substr(0, v.find('='))))) vars.emplace_back(v);
  }
  for (const auto& [k, v] : env) vars.push_back(k + "=" + v);
  std::vector<char*> envp;
  for (auto& v : vars) envp.push_back(v.data());
  envp.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  if (!cwd.empty()) posix_spawn_file_actions_addchdir_np(&actions, cwd.c_str());
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP);
  posix_spawnattr_setpgroup(&attr, 0);  // a group of its own, named by its pid
  if (int rc = posix_spawnp(&pid_, args[0], &actions, &attr, args.data(), envp.data()); rc != 0) {
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

void Child::stop(int grace_ms) {
  if (group_ <= 0) return;
  ::kill(-group_, SIGTERM);
  int status = 0;
  for (int waited = 0; pid_ > 0 && waited < grace_ms; waited += 50) {
    if (waitpid(pid_, &status, WNOHANG) == pid_) {
      pid_ = -1;
      break;
    }
    usleep(50000);
  }
  ::kill(-group_, SIGKILL);
  if (pid_ > 0) waitpid(pid_, &status, 0);
  pid_ = -1;
  group_ = -1;
}

int run_one(const std::vector<std::string>& argv, const std::map<std::string, std::string>& env, const fs::path& cwd) {
  std::string shown;
  for (const auto& [k, v] : env) shown += sh_quote(k + "=" + v) + " ";
  fmt::print("  $ {}{}\n", shown, sh_join(argv));
  std::fflush(stdout);
  std::string error;
  Child child(argv, error, env, cwd);
  if (!child.started()) {
    fmt::print(stderr, "trainc: {}\n", error);
    return 2;
  }
  return child.wait();
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

}  // namespace trainc
