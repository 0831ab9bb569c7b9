#include "run/local_runner.h"

#include <unistd.h>

#include <chrono>
#include <fstream>
#include <cstdlib>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <thread>
#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "base/overloaded.h"
#include "commands/dask_command.h"
#include "quoting/shell.h"
#include "commands/trainrt_command.h"
#include "run/local_pods.h"
#include "run/local_ray.h"
#include "run/local_s3.h"
#include "run/local_services.h"
#include "run/process.h"

namespace fs = std::filesystem;

namespace trainc {
namespace {

/// A store path in the pod ("/mnt/stores/data/x") as a local folder.
fs::path local_path(const LocalRunOptions& opt, const StoreLoc& loc) {
  std::string rel = loc.path;
  while (!rel.empty() && rel.front() == '/') rel.erase(0, 1);
  return opt.workdir / "stores" / loc.store / rel;
}

/// trainrt's own command line (commands/trainrt_command.h) with this machine's paths and binary.
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

/// The tracker and the ranks start from `env` (clean_env: PATH and the loopback preload), nothing
/// of this shell's.
int run_distributed_train(const Step& step, const XGBoost& x, const LocalRunOptions& opt,
                          const std::map<std::string, std::string>& env) {
  const int world = step.nodes;
  if (opt.tracker.empty() || !fs::exists(opt.tracker)) {
    fmt::print(stderr, "trainc: step '{}' trains on {} ranks and needs XGBoost 1.7's tracker script, tracker17.py, "
                       "which trainc looks for in ../share/trainc/ beside its binary (meson install puts it there) and "
                       "in the source tree from a build tree{}; pass --tracker PATH to name another\n",
               step.name, world, opt.tracker.empty() ? "" : fmt::format(" (not found at '{}')", opt.tracker.string()));
    return 2;
  }
  const fs::path port_file = opt.workdir / fmt::format(".tracker-{}.port", step.name);
  fs::remove(port_file);
  std::vector<std::string> tracker{"/usr/bin/python3", opt.tracker.string(), "--host=127.0.0.1", "--port=0",
                                   fmt::format("--port-file={}", port_file.string()),
                                   fmt::format("--world-size={}", world), "--timeout=600"};
  fmt::print("  $ {} &\n", sh_join(tracker));
  std::string error;
  Child tracker_proc(tracker, error, env, {}, Inherit::nothing);
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
    ranks.emplace_back(argv, error, env, fs::path(), Inherit::nothing);
    if (!ranks.back().started()) {
      fmt::print(stderr, "trainc: {}\n", error);
      return 2;
    }
  }
  int rc = 0;
  for (auto& r : ranks) rc = std::max(rc, r.wait());
  return rc;
}

/// A Dask cluster on loopback: the scheduler and each group's workers, stopped when dropped.
struct LocalDask {
  std::vector<Child> procs;
  std::vector<std::string> names;  ///< what each process is, for messages
  std::string address;
};

/// Starts `c` with the command lines its pods run (commands/dask_command.h), listening on loopback
/// alone and scaled to this machine: one thread and 1GiB per worker unless --threads says otherwise,
/// GPU groups as CPU workers, at most two workers per group. Each process's environment is `env`
/// and a HOME of its own: the workers run the clients' code.
int start_dask(const ComputeCluster& c, const Dask& d, const LocalRunOptions& opt,
               const std::map<std::string, std::string>& env, LocalDask& out) {
  const int port = free_port(), dashboard = free_port();
  const std::string host = "127.0.0.1";
  std::string error;
  auto start = [&](const std::vector<std::string>& argv, const std::string& name) {
    fmt::print("  $ {} &\n", sh_join(argv));
    std::fflush(stdout);
    auto penv = env;
    penv["HOME"] = pod_home(fs::absolute(opt.workdir / "pods" / c.name / name)).string();
    fs::create_directories(penv["HOME"]);
    out.procs.emplace_back(argv, error, penv, fs::path(), Inherit::nothing);
    out.names.push_back(fmt::format("{} {}", argv[0], argv[1]));
    if (!out.procs.back().started()) fmt::print(stderr, "trainc: {}\n", error);
    return out.procs.back().started();
  };
  if (!start(trainrt::argv(dask::scheduler(port, dashboard, host)), "scheduler")) return 2;
  if (!accepts(port, 60)) {
    fmt::print(stderr, "trainc: the Dask scheduler of cluster '{}' did not listen on port {} within 60s "
                       "(is python3-distributed installed?)\n", c.name, port);
    return 2;
  }
  out.address = fmt::format("tcp://127.0.0.1:{}", port);
  Dask here = d;
  if (opt.threads > 0) here.threads = opt.threads;
  for (const auto& g : c.workers) {
    PodGroup local = g;
    if (g.gpus > 0) fmt::print("  (worker group '{}' has GPUs in the cluster; here it runs as CPU workers)\n", g.name);
    local.gpus = 0;
    local.resources.limits = {{"cpu", "1"}, {"memory", "1Gi"}};
    for (int i = 0; i < std::min(g.replicas, 2); ++i) {
      const std::string pod = fmt::format("{}-{}-{}", c.name, g.name, i);
      if (!start(trainrt::argv(dask::worker(here, local, out.address, host), {{std::string(dask::kPodNameVar), pod}}),
                 pod))
        return 2;
    }
  }
  return 0;
}

/// The folder a compute cluster's processes run in here: the build context of its image, whose
/// files the image holds in its working folder; else the spec's.
fs::path cluster_folder(const System& sys, const ComputeCluster& c, const LocalRunOptions& opt) {
  if (auto b = sys.builds.find(c.name); b != sys.builds.end() && b->second.of == std::string("cluster"))
    return opt.spec_dir / b->second.context;
  return opt.spec_dir;
}

/// The folder a client step's command runs in here: the build context of its own image, else its
/// cluster's (cluster_folder).
fs::path client_folder(const System& sys, const Step& s, const LocalRunOptions& opt) {
  if (auto b = sys.builds.find(s.name); b != sys.builds.end() && b->second.of == std::string("step"))
    return opt.spec_dir / b->second.context;
  const ComputeCluster* c = sys.compute_cluster(s.cluster);
  return c ? cluster_folder(sys, *c, opt) : opt.spec_dir;
}

/// Step `s` on Ray cluster `c` as it runs here: the words of its command that name a path under
/// one of the cluster's mounts (`/results`, `--results=/results/x`) name that store's local folder
/// instead. A Ray job has no pod folder of its own here, as a torchrun step's pods have: its
/// processes share this machine's filesystem, where the mount's path does not exist.
Step ray_step(const Step& s, const ComputeCluster& c, const LocalRunOptions& opt) {
  Step here = s;
  if (!s.command_line()) return here;
  std::vector<std::string> words = *s.command_line();
  for (auto& word : words)
    for (const auto& m : c.mounts) {
      // The path starts the word, or the value of a `--flag=` word.
      const size_t eq = word.find('=');
      const size_t at = word.compare(0, m.path.size(), m.path) == 0 ? 0 : eq == std::string::npos ? eq : eq + 1;
      if (at == std::string::npos || word.compare(at, m.path.size(), m.path) != 0) continue;
      const size_t end = at + m.path.size();
      if (end < word.size() && word[end] != '/') continue;  // /results2 is not under /results
      const fs::path local = fs::absolute(opt.workdir / "stores" / m.store);
      fs::create_directories(local);
      const std::string before = word;
      word = word.substr(0, at) + local.string() + word.substr(end);
      fmt::print("  (the mount {} of store '{}' is {} here: the entrypoint's '{}' is '{}')\n", m.path, m.store,
                 local.string(), before, word);
      break;
    }
  here.run = Command{words};  // a step on a compute cluster runs a command
  return here;
}

/// A step on a Dask cluster: its command in its build context (client_folder), with the
/// scheduler's address, its env on top of `base` and nothing else of this shell's but its secrets.
/// A cluster process that exits meanwhile fails the step at once, naming it.
int run_client(const System& sys, const Step& s, const Command& cmd, LocalDask& cluster, const LocalRunOptions& opt,
               const std::map<std::string, std::string>& base) {
  if (!s.mounts.empty() || !s.inputs.empty() || s.outputs)
    fmt::print("  (step '{}' reads or writes stores in the cluster; here they are not mounted)\n", s.name);
  std::map<std::string, std::string> env(s.env.begin(), s.env.end());
  env["DASK_SCHEDULER_ADDRESS"] = cluster.address;
  std::string shown;
  for (const auto& [k, v] : env) shown += sh_quote(k + "=" + v) + " ";
  // Secrets live in the cluster: here they come from this shell's environment, when set (and are
  // not printed).
  for (const auto& [k, _] : s.secret_env)
    if (const char* v = std::getenv(k.c_str())) env[k] = v;
  fmt::print("  $ {}{}\n", shown, sh_join(cmd.argv));
  std::fflush(stdout);
  for (const auto& [k, v] : base) env.emplace(k, v);
  env["HOME"] = pod_home(fs::absolute(opt.workdir / "pods" / s.name / "0")).string();
  fs::create_directories(env["HOME"]);
  std::string error;
  const fs::path folder = client_folder(sys, s, opt);
  if (folder != opt.spec_dir) fmt::print("  (in {}, the build context of its image)\n", folder.string());
  Child client(cmd.argv, error, env, folder, Inherit::nothing);
  if (!client.started()) {
    fmt::print(stderr, "trainc: {}\n", error);
    return 2;
  }
  while (true) {
    if (const int sig = interrupted()) return 128 + sig;
    if (auto rc = client.poll()) return *rc;
    for (size_t i = 0; i < cluster.procs.size(); ++i)
      if (auto rc = cluster.procs[i].poll()) {
        fmt::print(stderr, "trainc: `{}` of the Dask cluster exited (status {}) while step '{}' ran; its output is "
                           "above\n", cluster.names[i], *rc, s.name);
        return *rc == 0 ? 1 : *rc;
      }
    usleep(100000);
  }
}

/// The S3 stores the steps sync with, and those the seeds fill.
std::set<std::string> s3_stores_used(const System& sys, const std::vector<const Step*>& steps,
                                     const LocalRunOptions& opt) {
  std::set<std::string> used;
  auto note = [&](const std::string& name) {
    if (const Store* st = sys.store(name); st && st->kind == Store::Kind::s3) used.insert(name);
  };
  for (const Step* s : steps) {
    if (s->uses_trainrt() || !s->cluster.empty()) continue;  // these do not run the entry script here
    for (const auto& in : s->inputs) note(in.from.store);
    if (s->outputs) note(s->outputs->to.store);
  }
  for (const auto& seed : opt.seeds) note(seed.store);
  return used;
}

/// Uploads each seed folder into its store: an S3 store's through the local server, a GCS
/// store's folder by copying.
int plant_seeds(const System& sys, const LocalRunOptions& opt, LocalS3* s3) {
  for (const auto& seed : opt.seeds) {
    const Store* st = sys.store(seed.store);
    if (!fs::is_directory(seed.folder)) {
      fmt::print(stderr, "trainc: --seed {}: '{}' is not a folder\n", seed.store, seed.folder);
      return 2;
    }
    if (st->kind == Store::Kind::s3) {
      fmt::print("seeding {} from {}\n", s3_url(*st, seed.path), seed.folder);
      if (int rc = s3->sync(seed.folder, s3_url(*st, seed.path)); rc != 0) return rc;
    } else {
      const fs::path to = local_path(opt, {seed.store, seed.path, "", ""});
      fmt::print("seeding store '{}' ({}) from {}\n", seed.store, to.string(), seed.folder);
      fs::create_directories(to);
      fs::copy(seed.folder, to, fs::copy_options::recursive | fs::copy_options::overwrite_existing);
    }
  }
  return 0;
}

/// What runs here for a client of a compute cluster: its engine's cluster on loopback.
enum class LocalCluster { none, dask, ray };

/// The cluster `s` is a client of, as this machine runs it; none for a step on no cluster.
LocalCluster local_cluster(const System& sys, const Step& s) {
  const ComputeCluster* c = sys.compute_cluster(s.cluster);
  if (!c || !s.command_line()) return LocalCluster::none;
  return match(
      c->engine, [](const Ray&) { return LocalCluster::ray; }, [](const Dask&) { return LocalCluster::dask; });
}

/// What every process running the spec's code starts from instead of this shell's environment:
/// PATH (the python with torch, and Ray for Ray steps, first), and listeners kept on loopback (the
/// preload, gloo on lo). `python` is the one chosen ("" when no step needs one), `versions` what it
/// reports (python_versions). False, saying why, when a torchrun step has no python with torch or
/// a Ray step none with Ray.
bool clean_env(const System& sys, const std::vector<const Step*>& steps, const LocalRunOptions& opt,
               std::map<std::string, std::string>& env, fs::path& python,
               std::map<std::string, std::string>& versions) {
  const char* path = std::getenv("PATH");
  env["PATH"] = path ? path : "/usr/bin:/bin";
  // gloo listens on the address of the interface it is given, else on the one the host name has.
  env["GLOO_SOCKET_IFNAME"] = "lo";
  // trainrt's steps too: an XGBoost rank listens on every interface for its peers.
  if (!opt.loopback_preload.empty()) env["LD_PRELOAD"] = fs::absolute(opt.loopback_preload).string();
  else
    fmt::print("(libtrainc-loopback.so was not found beside trainc: a process that listens on every interface, as "
               "torchrun's rendezvous store and XGBoost's ranks do, is reachable from the network during this run)\n");
  if (std::all_of(steps.begin(), steps.end(), [](const Step* s) { return s->uses_trainrt(); })) return true;
  const bool any_torchrun = std::any_of(steps.begin(), steps.end(), [](const Step* s) { return s->runs_torchrun(); });
  const bool any_ray = std::any_of(steps.begin(), steps.end(), [&](const Step* s) { return local_cluster(sys, *s) == LocalCluster::ray; });
  if (!any_ray &&
      std::none_of(steps.begin(), steps.end(), [](const Step* s) { return !s->uses_trainrt() && s->cluster.empty(); }))
    return true;
  std::vector<std::string> modules{"torch"};
  if (any_ray) modules.push_back("ray");
  python = find_python(opt.python, modules);
  const std::string needs = any_ray ? "torch and ray" : "torch";
  if (!python.empty()) {
    versions = python_versions(python, modules);
    const fs::path bin = fs::absolute(opt.workdir / "bin");
    write_python_shims(bin, python, versions["torch"]);
    env["PATH"] = bin.string() + ":" + env["PATH"];
    fmt::print("python: {} (imports {}; --python or TRAINC_PYTHON picks another), as python3 and torchrun in {}\n",
               python.string(), needs, bin.string());
  } else if (any_torchrun || any_ray) {
    fmt::print(stderr, "trainc: {} steps need a python3 that imports {}{}: run tools/install-python.sh (it installs "
                       "PyTorch and Ray into {}), or pass --python or set TRAINC_PYTHON\n",
               any_ray ? "Ray" : "torchrun", needs,
               opt.python.empty() ? fmt::format(" and neither {} nor one on PATH does", project_python().string())
                                  : fmt::format(" ('{}' does not)", opt.python.string()),
               project_python().parent_path().parent_path().string());
    return false;
  }
  return true;
}

/// The versions of what runs the steps here, one phrase per program: the python (`v`, from
/// clean_env: Python, PyTorch, and Ray for Ray steps), Dask's `dask` for Dask clusters, trainrt's
/// XGBoost for trainrt steps.
std::string versions_used(const System& sys, const std::vector<const Step*>& steps, const LocalRunOptions& opt,
                          const fs::path& python, std::map<std::string, std::string> v,
                          const std::map<std::string, std::string>& env) {
  std::vector<std::string> parts;
  auto named = [](const std::string& x) { return x.empty() ? std::string("not found") : x; };
  if (!python.empty()) {
    std::string phrase = fmt::format("Python {} ({}), PyTorch {}", named(v["python"]), python.string(), named(v["torch"]));
    if (v.count("ray")) phrase += fmt::format(", Ray {}", named(v["ray"]));
    parts.push_back(phrase);
  }
  if (std::any_of(steps.begin(), steps.end(), [&](const Step* s) { return local_cluster(sys, *s) == LocalCluster::dask; })) {
    // `dask --version` prints "dask, version X".
    std::string v = capture({"dask", "--version"}, env, Inherit::nothing).value_or("");
    if (const auto at = v.rfind(' '); at != std::string::npos) v = v.substr(at + 1);
    while (!v.empty() && (v.back() == '\n' || v.back() == '\r')) v.pop_back();
    parts.push_back(fmt::format("Dask {} (the `dask` on PATH)", named(v)));
  }
  if (std::any_of(steps.begin(), steps.end(), [](const Step* s) { return s->uses_trainrt(); })) {
    // `trainrt --version` ends with the XGBoost it links: "xgboost: X".
    std::string v;
    const std::string text = capture({opt.trainrt.string(), "--version"}, env, Inherit::nothing).value_or("");
    if (const auto at = text.find("xgboost: "); at != std::string::npos) v = text.substr(at + 9);
    while (!v.empty() && (v.back() == '\n' || v.back() == '\r')) v.pop_back();
    parts.push_back(fmt::format("trainrt {} with XGBoost {}", opt.trainrt.string(), named(v)));
  }
  return parts.empty() ? "nothing versioned" : fmt::format("{}", fmt::join(parts, "; "));
}

/// Whether `s` runs here as its pods' entry scripts (run_pod_step): a torchrun or command step not
/// on a compute cluster.
bool runs_as_pods(const Step& s) { return !s.uses_trainrt() && s.cluster.empty(); }

/// The faults of --kill, --preempt and --chaos by the step they hit (a fault naming no step hits
/// the first of `steps` that runs as pods); false, saying why, when one names a step that does not
/// run as pods here or a pod the step does not have.
bool place_faults(const System& sys, const std::vector<const Step*>& steps, const LocalRunOptions& opt,
                  std::map<std::string, std::vector<Fault>>& out) {
  std::vector<const Step*> pod_steps;
  for (const Step* s : steps)
    if (runs_as_pods(*s)) pod_steps.push_back(s);
  std::vector<Fault> faults = opt.faults;
  if (opt.chaos_seed) {
    if (pod_steps.empty()) {
      fmt::print(stderr, "trainc: --chaos: no torchrun or command step of system '{}' runs here as pods\n", sys.name);
      return false;
    }
    const Fault f = chaos_fault(*opt.chaos_seed, pod_steps, opt.chaos_within);
    fmt::print("--chaos {} chose: {} (pass that instead of --chaos to run the same failure again)\n", *opt.chaos_seed,
               f.option());
    faults.push_back(f);
  }
  for (Fault f : faults) {
    const std::string given = f.option();
    if (f.step.empty()) {
      if (pod_steps.empty()) {
        fmt::print(stderr, "trainc: {}: no torchrun or command step of system '{}' runs here as pods\n", given, sys.name);
        return false;
      }
      f.step = pod_steps.front()->name;
    }
    const Step* step = nullptr;
    for (const auto& s : sys.steps)
      if (s.name == f.step) step = &s;
    if (!step) {
      std::vector<std::string> names;
      for (const auto& s : sys.steps) names.push_back(s.name);
      fmt::print(stderr, "trainc: {}: system '{}' has no step '{}' (its steps: {})\n", given, sys.name, f.step,
                 fmt::join(names, ", "));
      return false;
    }
    if (std::find(pod_steps.begin(), pod_steps.end(), step) == pod_steps.end()) {
      fmt::print(stderr, "trainc: {}: step '{}' does not run here as pods ({}): --kill, --preempt and --chaos hit the "
                         "pods of torchrun and command steps\n", given, f.step,
                 std::find(steps.begin(), steps.end(), step) == steps.end() ? "it is skipped, as said above"
                 : step->uses_trainrt() ? "trainrt steps run their program directly"
                                        : "a compute cluster's clients run beside it");
      return false;
    }
    if (f.pod >= step->nodes) {
      fmt::print(stderr, "trainc: {}: step '{}' has {} pod(s), ranks 0{}; RANK is a pod's index (its NODE_RANK), and a "
                         "pod's processes go with it\n", given, f.step, step->nodes,
                 step->nodes > 1 ? fmt::format(" to {}", step->nodes - 1) : " only");
      return false;
    }
    if (f.checkpoints > 0 && !(step->checkpoints && step->outputs)) {
      fmt::print(stderr, "trainc: {}: step '{}' keeps no checkpoints in a store (it needs `checkpoints:` and "
                         "`outputs.to:`); time the fault in seconds instead, e.g. {}@30\n",
                 given, f.step, f.pod);
      return false;
    }
    out[f.step].push_back(f);
  }
  return true;
}

int run_steps(const System& sys, const LocalRunOptions& given);

}  // namespace

std::string Fault::option() const {
  const std::string at = checkpoints > 0 ? fmt::format("checkpoint:{}{}", checkpoints,
                                                       seconds > 0 ? fmt::format("+{}", seconds) : "")
                                         : fmt::format("{}", seconds);
  return fmt::format("--{} {}{}@{}", kind == Kind::kill ? "kill" : "preempt", step.empty() ? "" : step + ":", pod, at);
}

std::string Fault::when() const {
  if (checkpoints == 0) return fmt::format("{} s after the pods of attempt 1 start", seconds);
  return fmt::format("{}when the store the step syncs its checkpoints to holds {} of them",
                     seconds > 0 ? fmt::format("{} s after ", seconds) : "", checkpoints);
}

bool parse_fault(const std::string& text, const std::string& flag, Fault& fault, std::string& error) {
  const auto at = text.rfind('@');
  const std::string target = text.substr(0, at == std::string::npos ? text.size() : at);
  const auto colon = target.rfind(':');
  fault.step = colon == std::string::npos ? "" : target.substr(0, colon);
  const std::string rank = colon == std::string::npos ? target : target.substr(colon + 1);
  std::string secs = at == std::string::npos ? "" : text.substr(at + 1);
  auto bad = [&](const std::string& why) {
    error = fmt::format("{} '{}': {}; expected [STEP:]RANK@SECONDS or [STEP:]RANK@checkpoint:N[+SECONDS], e.g. {} 1@30, "
                        "{} train:1@12.5 or {} 1@checkpoint:2",
                        flag, text, why, flag, flag, flag);
    return false;
  };
  if (at == std::string::npos) return bad("no '@'");
  if (colon != std::string::npos && fault.step.empty()) return bad("an empty step name before ':'");
  if (rank.empty() || rank.size() > 6 || rank.find_first_not_of("0123456789") != std::string::npos)
    return bad(fmt::format("the rank '{}' is not a pod index (0, 1, ...)", rank));
  fault.pod = std::stoi(rank);
  fault.checkpoints = 0;
  constexpr std::string_view kCheckpoint = "checkpoint:";
  if (secs.compare(0, kCheckpoint.size(), kCheckpoint) == 0) {
    const auto plus = secs.find('+');
    const std::string count = secs.substr(kCheckpoint.size(), plus == std::string::npos ? std::string::npos
                                                                                         : plus - kCheckpoint.size());
    if (count.empty() || count.size() > 6 || count.find_first_not_of("0123456789") != std::string::npos ||
        std::stoi(count) == 0)
      return bad(fmt::format("'{}' is not a number of checkpoints (1, 2, ...)", count));
    fault.checkpoints = std::stoi(count);
    secs = plus == std::string::npos ? "0" : secs.substr(plus + 1);
  }
  if (!secs.empty() && secs.back() == 's') secs.pop_back();
  char* end = nullptr;
  const double v = secs.empty() ? -1 : std::strtod(secs.c_str(), &end);
  if (secs.empty() || *end != '\0' || !std::isfinite(v) || v < 0 || v > 7 * 24 * 3600 ||
      secs.find_first_not_of("0123456789.") != std::string::npos)
    return bad(fmt::format("'{}' is not a number of seconds", text.substr(at + 1)));
  fault.seconds = v;
  return true;
}

Fault chaos_fault(uint64_t seed, const std::vector<const Step*>& steps, double within) {
  uint64_t state = seed;
  auto next = [&state] {  // SplitMix64 (Steele, Lea and Flood 2014)
    uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  };
  Fault f;
  f.kind = Fault::Kind::kill;
  const Step& step = *steps.at(next() % steps.size());
  f.step = step.name;
  f.pod = static_cast<int>(next() % static_cast<uint64_t>(std::max(1, step.nodes)));
  const auto tenths = static_cast<uint64_t>(std::max(10.0, std::floor(within * 10)));
  f.seconds = static_cast<double>(10 + next() % (tenths - 9)) / 10;
  return f;
}

bool parse_seed(const std::string& text, LocalRunOptions::Seed& seed, std::string& error) {
  const auto eq = text.find('=');
  const std::string target = text.substr(0, eq);
  const auto colon = target.find(':');
  seed.store = target.substr(0, colon);
  seed.path = colon == std::string::npos ? "/" : target.substr(colon + 1);
  seed.folder = eq == std::string::npos ? "" : text.substr(eq + 1);
  if (seed.store.empty() || seed.folder.empty() || seed.path.empty() || seed.path.front() != '/') {
    error = fmt::format("--seed '{}': expected STORE[:/PATH]=FOLDER, e.g. bucket:/code/=./code", text);
    return false;
  }
  return true;
}

long long scaled_rows(const Datagen& d, double scale) {
  return std::max(1LL, static_cast<long long>(std::floor(static_cast<double>(d.rows) * scale)));
}

namespace {

int run_here(const System& sys, const LocalRunOptions& opt) {
  catch_interrupts();
  const std::set<pid_t> before = adopt_orphans();
  const int rc = run_steps(sys, opt);
  // A pod's process group goes with it; this is for what left its group (setsid, a daemon).
  if (const auto left = end_descendants(before); !left.empty())
    fmt::print(stderr, "trainc: stopped {} process(es) that the run's steps had left running outside their pods (pids {})\n",
               left.size(), fmt::join(left, ", "));
  return rc;
}

}  // namespace

int run_local(const System& sys, const LocalRunOptions& opt) {
  // The run in a PID namespace of its own: whatever a step leaves behind, however it detached
  // itself, the kernel ends when the run does. TRAINC_LOCAL_CONTAIN=0 runs without it (as where
  // the namespaces cannot be made).
  std::string why_not = "TRAINC_LOCAL_CONTAIN=0";
  const char* contain = std::getenv("TRAINC_LOCAL_CONTAIN");
  if (!contain || std::string_view(contain) != "0")
    if (auto rc = run_in_pid_namespace([&] { return run_here(sys, opt); }, why_not)) return *rc;
  fmt::print("(the run is not contained in a PID namespace of its own ({}): what a step detaches is stopped at the "
             "end as far as a scan of /proc finds it, but a process that forks and exits in a loop can outlive the run)\n",
             why_not);
  return run_here(sys, opt);
}

namespace {

int run_steps(const System& sys, const LocalRunOptions& given) {
  LocalRunOptions opt = given;
  if (opt.max_ranks <= 0) opt.max_ranks = std::max(4, static_cast<int>(std::thread::hardware_concurrency()));
  std::vector<const Step*> steps;
  for (const auto& s : sys.steps) {
    const Pool* pool = sys.pool(s.pool);
    // Dask and Ray clusters run here on loopback, with their clients.
    if (s.uses_trainrt() || local_cluster(sys, s) != LocalCluster::none) steps.push_back(&s);
    else if (!s.cluster.empty())
      fmt::print("skipping step '{}': it runs on {} cluster '{}', which runs only in Kubernetes\n", s.name,
                 sys.compute_cluster(s.cluster)->kind(), s.cluster);
    else if (pool && pool->tpu) fmt::print("skipping step '{}': it runs on TPUs, which only the cluster has\n", s.name);
    else if (pool && pool->rdma)
      fmt::print("skipping step '{}': its pool '{}' has RDMA, whose gIB NCCL setup its entry script sources exists only "
                 "on those nodes\n", s.name, s.pool);
    else steps.push_back(&s);  // a torchrun or command step: its pods' entry scripts run here
  }
  if (steps.empty() && sys.services.empty()) {
    fmt::print(stderr, "trainc: system '{}' has no steps that run locally\n", sys.name);
    return 2;
  }
  std::map<std::string, std::vector<Fault>> faults;
  if (!place_faults(sys, steps, opt, faults)) return 2;
  for (const auto& seed : opt.seeds)
    if (!sys.store(seed.store)) {
      fmt::print(stderr, "trainc: --seed: system '{}' has no store '{}'\n", sys.name, seed.store);
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
  // Pods run with the python that has torch first on PATH, and reach S3 stores on a local server.
  std::map<std::string, std::string> pod_env;
  fs::path python;
  std::map<std::string, std::string> python_reports;
  if (!clean_env(sys, steps, opt, pod_env, python, python_reports)) return 2;
  System here = sys;
  std::unique_ptr<LocalS3> s3;  // stopped on return
  if (const auto used = s3_stores_used(sys, steps, opt); !used.empty()) {
    const fs::path js = find_s3rver(opt.s3rver);
    if (js.empty()) {
      fmt::print(stderr, "trainc: S3 store(s) {} are served here by s3rver, which was not found{}: run "
                         "tools/install-deps.sh (it installs s3rver from npm into {}), or pass --s3rver or set "
                         "TRAINC_S3RVER to s3rver's bin/s3rver.js\n",
                 fmt::join(used, ", "), opt.s3rver.empty() ? "" : fmt::format(" at '{}'", opt.s3rver.string()),
                 s3rver_prefix().string());
      return 2;
    }
    std::string error;
    s3 = std::make_unique<LocalS3>(js, fs::absolute(opt.workdir / "s3"), error);
    if (!s3->running()) {
      fmt::print(stderr, "trainc: {}\n", error);
      return 2;
    }
    fmt::print("S3 store(s) {} are on a local S3 server at {} for this run (its data in {})\n", fmt::join(used, ", "),
               s3->endpoint(), fs::absolute(opt.workdir / "s3").string());
    std::string region;
    for (const auto& name : used) {
      Store& st = here.stores.at(name);
      st.endpoint = s3->endpoint();
      if (region.empty()) region = st.region;
      if (int rc = s3->ensure_bucket(st.bucket); rc != 0) return rc;
    }
    for (const auto& [k, v] : s3->env(region)) pod_env[k] = v;
  }
  for (const auto& [name, st] : sys.stores)
    if (st.kind == Store::Kind::gcs) {
      fmt::print("GCS stores are local folders under {} (no GCS emulator is packaged)\n",
                 fs::absolute(opt.workdir / "stores").string());
      break;
    }
  if (int rc = plant_seeds(sys, opt, s3.get()); rc != 0) return rc;
  // Said at the end, pass or fail: what ran here, to tell the rehearsal from the cluster's images.
  const std::string versions = versions_used(sys, steps, opt, python, python_reports, pod_env);
  std::map<std::string, std::unique_ptr<LocalDask>> dask_clusters;  // stopped on return
  std::map<std::string, std::unique_ptr<LocalRay>> ray_clusters;     // stopped on return
  int index = 0;
  for (const Step* s : steps) {
    ++index;
    auto start = std::chrono::steady_clock::now();
    fmt::print("[{}/{}] {} ({})\n", index, steps.size(), s->name, s->kind());
    if (s->schedule)  // the cluster's CronJob makes a Job at each time; here it runs once, in order
      fmt::print("  on schedule '{}' ({}) on the cluster; here it runs once\n", s->schedule->cron, s->schedule->time_zone);
    std::fflush(stdout);
    const int rc = match(
        s->run, [&](const Torchrun&) { return run_pod_step(here, *s, opt, pod_env, faults[s->name]); },
        [&](const Command& cmd) {
          if (s->cluster.empty()) return run_pod_step(here, *s, opt, pod_env, faults[s->name]);
          // A client of a compute cluster: the cluster starts before its first client and stays up.
          const ComputeCluster& c = *sys.compute_cluster(s->cluster);
          if (local_cluster(sys, *s) == LocalCluster::ray) {
            auto it = ray_clusters.find(c.name);
            if (it == ray_clusters.end()) {
              it = ray_clusters.emplace(c.name, std::make_unique<LocalRay>()).first;
              auto env = pod_env;
              env["TRAINC_LOCAL"] = "1";
              if (int started = it->second->start(c, python, opt, env, cluster_folder(sys, c, opt)); started != 0)
                return started;
            }
            return it->second->submit(here, ray_step(*s, c, opt));
          }
          auto it = dask_clusters.find(c.name);
          if (it == dask_clusters.end()) {
            it = dask_clusters.emplace(c.name, std::make_unique<LocalDask>()).first;
            if (int started = start_dask(c, std::get<Dask>(c.engine), opt, pod_env, *it->second); started != 0)
              return started;
          }
          return run_client(here, *s, cmd, *it->second, opt, pod_env);
        },
        [&](const Datagen& d) {
          fs::create_directories(local_path(opt, d.to));
          return run_one(datagen_argv(d, opt), pod_env, {}, Inherit::nothing);
        },
        [&](const XGBoost& x) {
          fs::create_directories(local_path(opt, x.to));
          return s->distributed() ? run_distributed_train(*s, x, opt, pod_env)
                                  : run_one(local_argv(train_command(*s, x, opt), opt), pod_env, {}, Inherit::nothing);
        });
    double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (rc != 0) {
      fmt::print(stderr, "trainc: step '{}' failed (exit {}) after {:.1f}s; its output is above\n", s->name, rc, secs);
      fmt::print("ran with: {}\n", versions);
      return rc;
    }
    fmt::print("[{}/{}] {} done in {:.1f}s\n", index, steps.size(), s->name, secs);
  }
  // Services after the steps (a service that needs none could start first; here all wait).
  if (int rc = run_services(here, opt); rc != 0) {
    fmt::print("ran with: {}\n", versions);
    return rc;
  }
  if (fs::exists(opt.workdir / "stores")) fmt::print("stores are in {}\n", (opt.workdir / "stores").string());
  if (s3) fmt::print("the local S3 server's data is in {}\n", fs::absolute(opt.workdir / "s3").string());
  fmt::print("ran with: {}\n", versions);
  return 0;
}

}  // namespace

}  // namespace trainc
