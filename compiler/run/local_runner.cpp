#include "run/local_runner.h"

#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <cmath>

#include <fmt/format.h>

#include "emit/shell.h"

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

std::vector<std::string> datagen_argv(const Step& step, const LocalRunOptions& opt, long long rows) {
  const Datagen& d = *step.datagen;
  std::vector<std::string> a{opt.trainrt.string(), "datagen", fmt::format("--rows={}", rows),
                             fmt::format("--features={}", d.features), fmt::format("--task={}", d.task),
                             fmt::format("--informative={}", d.informative), fmt::format("--seed={}", d.seed),
                             fmt::format("--shards={}", d.shards), fmt::format("--format={}", d.format),
                             fmt::format("--out={}", local_path(opt, d.to).string())};
  if (d.task == "classification") {
    a.insert(a.end(), {fmt::format("--redundant={}", d.redundant), fmt::format("--repeated={}", d.repeated),
                       fmt::format("--classes={}", d.classes), fmt::format("--clusters-per-class={}", d.clusters_per_class),
                       fmt::format("--class-sep={}", d.class_sep), fmt::format("--flip-y={}", d.flip_y)});
    if (!d.hypercube) a.push_back("--no-hypercube");
    if (!d.weights.empty()) a.push_back(fmt::format("--weights={}", fmt::join(d.weights, ",")));
  }
  if (opt.threads > 0) a.push_back(fmt::format("--threads={}", opt.threads));
  return a;
}

std::vector<std::string> train_argv(const Step& step, const LocalRunOptions& opt) {
  const XGBoost& x = *step.xgboost;
  std::vector<std::string> a{opt.trainrt.string(), "train", fmt::format("--data={}", local_path(opt, x.from).string()),
                             fmt::format("--model-dir={}", local_path(opt, x.to).string()),
                             fmt::format("--rounds={}", x.rounds), fmt::format("--checkpoint-every={}", x.checkpoint_every)};
  for (const auto& [k, v] : x.params)
    if (k != "device") a.push_back(fmt::format("--param={}={}", k, v));  // this machine has no GPU
  if (opt.threads > 0) a.push_back(fmt::format("--threads={}", opt.threads));
  return a;
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

int run_distributed_train(const Step& step, const LocalRunOptions& opt) {
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
  for (int r = 0; r < world; ++r) {
    auto argv = train_argv(step, opt);  // every rank trains the same model; rank 0 writes it
    argv.insert(argv.end(), {fmt::format("--rank={}", r), fmt::format("--world-size={}", world),
                             fmt::format("--tracker=127.0.0.1:{}", port)});
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
    if (s->datagen) {
      double bytes = scaled_rows(*s->datagen, opt.scale) * (s->datagen->features + 1) * 4.0;
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
    int rc = 0;
    if (s->datagen) {
      fs::create_directories(local_path(opt, s->datagen->to));
      rc = run_one(datagen_argv(*s, opt, scaled_rows(*s->datagen, opt.scale)));
    } else if (s->nodes > 1) {
      fs::create_directories(local_path(opt, s->xgboost->to));
      rc = run_distributed_train(*s, opt);
    } else {
      fs::create_directories(local_path(opt, s->xgboost->to));
      rc = run_one(train_argv(*s, opt));
    }
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
