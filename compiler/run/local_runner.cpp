#include "run/local_runner.h"

#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <map>
#include <cmath>

#include <fmt/format.h>

#include "base/overloaded.h"
#include "emit/shell.h"
#include "emit/trainrt_command.h"

extern char** environ;

namespace fs = std::filesystem;

namespace trainc {
namespace {

/// A running child process; killed if still running when dropped.
class Child {
 public:
  Child(const std::vector<std::string>& argv, std::string& error) {
    std::vector<char*> args;
    for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    if (int rc = posix_spawn(&pid_, args[0], nullptr, nullptr, args.data(), environ); rc != 0) {
      error = fmt::format("cannot start {}: {}", argv[0], std::strerror(rc));
      pid_ = -1;
    }
  }
  Child(Child&& o) noexcept : pid_(o.pid_) { o.pid_ = -1; }
  ~Child() {
    if (pid_ > 0) {
      kill(pid_, SIGTERM);
      waitpid(pid_, nullptr, 0);
    }
  }
  /// Waits for the process; its exit code, or 128 + signal.
  int wait() {
    int status = 0;
    if (pid_ <= 0 || waitpid(pid_, &status, 0) < 0) return 2;
    pid_ = -1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  }
  bool started() const { return pid_ > 0; }

 private:
  pid_t pid_ = -1;
};

int run_one(const std::vector<std::string>& argv) {
  fmt::print("  $ {}\n", sh_join(argv));
  std::fflush(stdout);
  std::string error;
  Child child(argv, error);
  if (!child.started()) {
    fmt::print(stderr, "trainc: {}\n", error);
    return 2;
  }
  return child.wait();
}

/// A store path in the pod ("/mnt/stores/data/x") as a local folder.
fs::path local_path(const LocalRunOptions& opt, const StoreLoc& loc) {
  std::string rel = loc.path;
  while (!rel.empty() && rel.front() == '/') rel.erase(0, 1);
  return opt.workdir / "stores" / loc.store / rel;
}

/// trainrt's own command line (emit/trainrt_command.h) with this machine's paths and binary.
std::vector<std::string> local_argv(const trainrt::Command& cmd, const LocalRunOptions& opt,
                                    const std::map<std::string, std::string>& env = {}) {
  std::vector<std::string> a = trainrt::argv(cmd, env);
  a.front() = opt.trainrt.string();
  return a;
}

std::vector<std::string> datagen_argv(const Datagen& d, const LocalRunOptions& opt) {
  Datagen scaled = d;
  scaled.rows = scaled_rows(d, opt.scale);
  return local_argv(trainrt::datagen(scaled, [&](const StoreLoc& l) { return local_path(opt, l).string(); }, opt.threads),
                    opt);
}

trainrt::Command train_command(const Step& step, const XGBoost& x, const LocalRunOptions& opt) {
  XGBoost here = x;
  here.params.erase("device");  // this machine has no GPU
  return trainrt::train(here, step.distributed(), [&](const StoreLoc& l) { return local_path(opt, l).string(); },
                        opt.threads);
}

/// Waits for the tracker to write the port it listens on; 0 on timeout.
int wait_for_port(const fs::path& file, int seconds) {
  for (int i = 0; i < seconds * 10; ++i) {
    std::ifstream in(file);
    int port = 0;
    if (in >> port && port > 0) return port;
    usleep(100000);
  }
  return 0;
}

int run_distributed_train(const Step& step, const XGBoost& x, const LocalRunOptions& opt) {
  const int world = step.nodes;
  if (opt.tracker.empty() || !fs::exists(opt.tracker)) {
    fmt::print(stderr, "trainc: step '{}' trains on {} ranks and needs XGBoost's tracker script ({}); pass --tracker\n",
               step.name, world, opt.tracker.string());
    return 2;
  }
  const fs::path port_file = opt.workdir / fmt::format(".tracker-{}.port", step.name);
  fs::remove(port_file);
  std::vector<std::string> tracker{"/usr/bin/python3", opt.tracker.string(), "--host=127.0.0.1", "--port=0",
                                   fmt::format("--port-file={}", port_file.string()),
                                   fmt::format("--world-size={}", world), "--timeout=600"};
  fmt::print("  $ {} &\n", sh_join(tracker));
  std::string error;
  Child tracker_proc(tracker, error);
  if (!tracker_proc.started()) {
    fmt::print(stderr, "trainc: {}\n", error);
    return 2;
  }
  const int port = wait_for_port(port_file, 30);
  if (port == 0) {
    fmt::print(stderr, "trainc: XGBoost's tracker did not start within 30s (is python3-xgboost installed?)\n");
    return 2;
  }
  std::vector<Child> ranks;
  const trainrt::Command cmd = train_command(step, x, opt);
  for (int r = 0; r < world; ++r) {
    // Every rank trains the same model; rank 0 writes it.
    auto argv = local_argv(cmd, opt,
                           {{std::string(trainrt::kRankVar), std::to_string(r)},
                            {std::string(trainrt::kWorldVar), std::to_string(world)},
                            {std::string(trainrt::kAddrVar), "127.0.0.1"},
                            {std::string(trainrt::kPortVar), std::to_string(port)}});
    fmt::print("  $ {} &\n", sh_join(argv));
    ranks.emplace_back(argv, error);
    if (!ranks.back().started()) {
      fmt::print(stderr, "trainc: {}\n", error);
      return 2;
    }
  }
  int rc = 0;
  for (auto& r : ranks) rc = std::max(rc, r.wait());
  return rc;
}

}  // namespace

long long scaled_rows(const Datagen& d, double scale) {
  return std::max(1LL, static_cast<long long>(std::floor(static_cast<double>(d.rows) * scale)));
}

int run_local(const System& sys, const LocalRunOptions& opt) {
  std::vector<const Step*> steps;
  for (const auto& s : sys.steps)
    if (s.uses_trainrt()) steps.push_back(&s);
    else fmt::print("skipping step '{}': {} steps run only in the cluster\n", s.name, s.kind());
  if (steps.empty()) {
    fmt::print(stderr, "trainc: system '{}' has no datagen or xgboost steps to run locally\n", sys.name);
    return 2;
  }
  for (const Step* s : steps)
    if (const Datagen* d = s->as<Datagen>()) {
      double bytes = scaled_rows(*d, opt.scale) * (d->features + 1) * 4.0;
      if (bytes > opt.max_local_bytes) {
        fmt::print(stderr,
                   "trainc: step '{}' would write {:.1f} GiB here; pass --scale (e.g. --scale {:.0e}) to shrink it\n",
                   s->name, bytes / (1 << 30), opt.max_local_bytes / bytes / 4);
        return 2;
      }
    }
  int index = 0;
  for (const Step* s : steps) {
    ++index;
    auto start = std::chrono::steady_clock::now();
    fmt::print("[{}/{}] {} ({})\n", index, steps.size(), s->name, s->kind());
    std::fflush(stdout);
    const int rc = match(
        s->run, [](const Torchrun&) { return 0; }, [](const Command&) { return 0; },  // not selected above
        [&](const Datagen& d) {
          fs::create_directories(local_path(opt, d.to));
          return run_one(datagen_argv(d, opt));
        },
        [&](const XGBoost& x) {
          fs::create_directories(local_path(opt, x.to));
          return s->distributed() ? run_distributed_train(*s, x, opt) : run_one(local_argv(train_command(*s, x, opt), opt));
        });
    double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (rc != 0) {
      fmt::print(stderr, "trainc: step '{}' failed (exit {}) after {:.1f}s; its output is above\n", s->name, rc, secs);
      return rc;
    }
    fmt::print("[{}/{}] {} done in {:.1f}s\n", index, steps.size(), s->name, secs);
  }
  fmt::print("stores are in {}\n", (opt.workdir / "stores").string());
  return 0;
}

}  // namespace trainc
