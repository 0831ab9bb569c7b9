#include "run/local_pods.h"

#include <fnmatch.h>
#include <string.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <optional>
#include <thread>

#include <fmt/format.h>

#include "k8s/entry_script.h"
#include "k8s/names.h"
#include "k8s/pod.h"
#include "k8s/preflight.h"
#include "model/checkpoints.h"
#include "model/failure.h"
#include "quoting/shell.h"
#include "run/local_s3.h"
#include "run/process.h"

namespace fs = std::filesystem;

namespace trainc {
namespace {

/// Whether `python` imports every module of `modules`.
bool imports(const fs::path& python, const std::vector<std::string>& modules) {
  std::string code = "import sys";
  for (const auto& m : modules) code += ", " + m;
  return capture({python.string(), "-c", code}).has_value();
}

/// `rel` (an absolute pod path) under `root`.
fs::path under(const fs::path& root, const std::string& pod_path) {
  return root / fs::path(pod_path).relative_path();
}

}  // namespace

fs::path pod_home(const fs::path& root) { return root / ".home"; }

namespace {

/// The pod's filesystem before its entry script runs: the image's files in the working folder
/// (a build's context, what its Dockerfile copies) and the stores it mounts, as links to the
/// run's store folders.
void prepare_root(const System& sys, const Step& step, const LocalRunOptions& opt, const fs::path& root) {
  fs::remove_all(root);  // a new pod starts from its image, not from what an earlier one left
  const fs::path work = under(root, step.workdir);
  fs::create_directories(work);
  fs::create_directories(pod_home(root));
  if (auto b = sys.builds.find(step.name); b != sys.builds.end() && b->second.of == "step") {
    const fs::path context = opt.spec_dir / b->second.context;
    fs::copy(context, work, fs::copy_options::recursive | fs::copy_options::overwrite_existing);
  }
  for (const auto& m : step.mounts) {
    const fs::path store = fs::absolute(opt.workdir / "stores" / m.store);
    fs::create_directories(store);
    const fs::path at = under(root, m.path);
    fs::create_directories(at.parent_path());
    fs::remove_all(at);
    fs::create_directory_symlink(store, at);
  }
}

/// The environment of pod `index`: what its container's env holds, with loopback for the
/// rendezvous address, on top of `base` (the run's PATH and plumbing), and nothing of this shell
/// but the secrets the step names.
std::map<std::string, std::string> pod_env(const System& sys, const Step& step, int index, int port,
                                           const fs::path& root, const std::map<std::string, std::string>& base) {
  std::map<std::string, std::string> env = base;
  env["HOME"] = pod_home(root).string();
  env["PYTHONUNBUFFERED"] = "1";
  for (const auto& v : k8s::rendezvous_env(sys, step)) {
    if (!v.field.empty()) env[v.name] = std::to_string(index);  // the Job's completion index
    else if (v.name == "MASTER_ADDR") env[v.name] = "127.0.0.1";
    else if (v.name == "MASTER_PORT") env[v.name] = std::to_string(port);
    else env[v.name] = v.value;
  }
  for (const auto& [k, v] : step.env) env[k] = v;
  // Secrets live in the cluster: here they come from this shell's environment, when set.
  for (const auto& [k, _] : step.secret_env)
    if (const char* v = std::getenv(k.c_str())) env[k] = v;
  if (runs_keep_apart(step)) env["TRAINC_RUN"] = step.run_id;
  env["TRAINC_POD_ROOT"] = root.string();
  env["TRAINC_LOCAL"] = "1";
  return env;
}

/// How an attempt at a step ended.
struct AttemptEnd {
  enum class Why { succeeded, failed, disrupted, timed_out, interrupted, setup };
  Why why = Why::succeeded;
  int pod = -1;    ///< the pod whose failure or disruption ended it (the first, when several did)
  int status = 0;  ///< that pod's exit code, or 128 + its signal
};

/// A fault not yet inflicted; `reached` is when a checkpoint-timed one saw its checkpoints stored.
struct Pending {
  Fault fault;
  std::optional<std::chrono::steady_clock::time_point> reached;
};

/// The folder of this run's local stores where `step`'s checkpoints land when its outputs are
/// synced (`checkpoints.path` inside `outputs.path`, under `outputs.to`), and whether it is the
/// local S3 server's (whose objects end in `._S3rver_object`); "" when the step syncs none.
std::pair<fs::path, bool> stored_checkpoints(const System& sys, const Step& step, const LocalRunOptions& opt) {
  const auto in_outputs = checkpoints_in_outputs(step);
  if (!in_outputs) return {};
  const Store* store = sys.store(step.outputs->to.store);
  if (!store) return {};
  const fs::path rel(*in_outputs);
  if (store->kind == Store::Kind::gcs)
    return {fs::absolute(under(opt.workdir / "stores" / store->name, step.outputs->to.path) / rel).lexically_normal(), false};
  // s3rver keeps object KEY of BUCKET in <data>/BUCKET/KEY._S3rver_object.
  const std::string url = s3_url(*store, step.outputs->to.path);
  const std::string key = url.substr(std::string("s3://").size() + store->bucket.size());
  return {fs::absolute(under(opt.workdir / "s3" / store->bucket, key) / rel).lexically_normal(), true};
}

/// The names of `step`'s checkpoints (matching its pattern) that `folder` holds, with each one's
/// modification time: s3rver keeps an object as KEY._S3rver_object beside KEY._S3rver_metadata.json
/// and KEY._S3rver_object.md5, so only the first names an object there.
std::map<std::string, fs::file_time_type> stored(const Step& step, const std::pair<fs::path, bool>& folder) {
  std::map<std::string, fs::file_time_type> out;
  std::error_code ec;
  constexpr std::string_view kS3rver = "._S3rver_object";
  for (fs::directory_iterator it(folder.first, ec), end; !ec && it != end; it.increment(ec)) {
    std::string name = it->path().filename().string();
    if (folder.second && !it->is_directory(ec)) {
      if (name.size() <= kS3rver.size() || name.compare(name.size() - kS3rver.size(), kS3rver.size(), kS3rver) != 0)
        continue;
      name.resize(name.size() - kS3rver.size());
    }
    if (name.starts_with(k8s::kRunMarkerPrefix)) continue;  // a run's start marker, no checkpoint
    if (::fnmatch(step.checkpoints->pattern.c_str(), name.c_str(), 0) == 0) out[name] = it->last_write_time(ec);
  }
  return out;
}

/// How many of `now`'s checkpoints are new since `before` (the store when the step started: a
/// workdir kept from an earlier run holds that run's) or written again since.
int new_checkpoints(const std::map<std::string, fs::file_time_type>& before,
                    const std::map<std::string, fs::file_time_type>& now) {
  int n = 0;
  for (const auto& [name, time] : now)
    if (auto it = before.find(name); it == before.end() || it->second != time) ++n;
  return n;
}

/// One attempt at the step: its pods started fresh and waited for, `faults` inflicted on them as
/// they fall due (those fired are removed); the first pod that fails or is disrupted ends the
/// attempt and the gang is stopped. `started` is the first attempt's start, which the step's
/// timeout counts from.
AttemptEnd run_attempt(const System& sys, const Step& step, const Step& here, const LocalRunOptions& opt,
                       const std::map<std::string, std::string>& env, const fs::path& dir, const fs::path& script,
                       int attempt, std::chrono::steady_clock::time_point started, std::vector<Pending>& faults,
                       const std::map<std::string, fs::file_time_type>& before);

}  // namespace

fs::path project_python() {
  if (const char* home = std::getenv("TRAINC_PYTHON_HOME"); home && *home) return fs::path(home) / "current/bin/python3";
  const char* cache = std::getenv("XDG_CACHE_HOME");
  const char* home = std::getenv("HOME");
  const fs::path base = cache && *cache ? fs::path(cache) : fs::path(home ? home : ".") / ".cache";
  return base / "trainc/python/current/bin/python3";
}

fs::path find_python(const fs::path& given, const std::vector<std::string>& modules) {
  fs::path chosen = given;
  if (const char* env = std::getenv("TRAINC_PYTHON"); chosen.empty() && env && *env) chosen = env;
  if (chosen.empty()) {
    // The project's environment is named by its full path (the shims must not run themselves).
    if (const fs::path p = project_python(); access(p.c_str(), X_OK) == 0 && imports(p, modules)) return p;
  }
  // Every python3 on PATH in order, or the chosen one there when it names no folder: the shims
  // must name it by its full path, or the python3 shim would run itself.
  const std::string name = chosen.empty() ? "python3" : chosen.string();
  if (name.find('/') != std::string::npos) return imports(chosen, modules) ? fs::absolute(chosen) : fs::path();
  const char* path = std::getenv("PATH");
  std::string dirs = path ? path : "/usr/bin:/bin";
  for (size_t start = 0; start <= dirs.size();) {
    size_t end = dirs.find(':', start);
    if (end == std::string::npos) end = dirs.size();
    const fs::path candidate = fs::absolute(fs::path(dirs.substr(start, end - start)) / name);
    start = end + 1;
    if (access(candidate.c_str(), X_OK) != 0) continue;
    if (imports(candidate, modules)) return candidate;
    if (!chosen.empty()) return {};  // the one PATH names does not import them
  }
  return {};
}

std::map<std::string, std::string> python_versions(const fs::path& python, const std::vector<std::string>& modules) {
  std::map<std::string, std::string> out{{"python", ""}};
  for (const auto& m : modules) out[m] = "";
  std::string code = "import importlib, platform, sys\nprint('python', platform.python_version())\n"
                     "for m in sys.argv[1:]:\n"
                     "    try:\n        print(m, importlib.import_module(m).__version__)\n"
                     "    except Exception:\n        print(m, '')\n";
  std::vector<std::string> argv{python.string(), "-c", code};
  argv.insert(argv.end(), modules.begin(), modules.end());
  if (const auto text = capture(argv)) {
    size_t start = 0;
    while (start < text->size()) {
      size_t end = text->find('\n', start);
      if (end == std::string::npos) end = text->size();
      const std::string line = text->substr(start, end - start);
      start = end + 1;
      const auto sp = line.find(' ');
      if (sp != std::string::npos) out[line.substr(0, sp)] = line.substr(sp + 1);
    }
  }
  return out;
}

void write_python_shims(const fs::path& bin, const fs::path& python, const std::string& torch_version) {
  fs::create_directories(bin);
  auto shim = [&](const std::string& name, const std::string& args) {
    std::ofstream(bin / name) << "#!/bin/sh\n# trainc run --local: the python3 with torch\nexec " << sh_quote(python.string())
                              << args << " \"$@\"\n";
    fs::permissions(bin / name, fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec |
                                    fs::perms::others_read | fs::perms::others_exec);
  };
  shim("python3", "");
  shim("python", "");
  // The entry script spells torchrun's flags as torch 2 does (--node-rank); torch 1.x, Debian's,
  // knows only --node_rank, which torch 2 still accepts: the launcher's own flags are respelled.
  // A pod has its own ports, this machine has one set: --standalone is spelled out as torch 2 does
  // it, with a rendezvous store on a free port, where torch 1.x takes 29400 for every run.
  std::ofstream(bin / "torchrun") << "#!/usr/bin/env bash\n"
      "# trainc run --local: torchrun of the python3 with torch, its flags in the spelling every\n"
      "# torch version accepts (torch 1.x has no --node-rank), and --standalone on a free port.\n"
      "args=(" << (!torch_version.empty() && torch_version[0] >= '2' && torch_version[1] == '.'
                       // torch 2's agent gives its workers the store's address: loopback, not the
                       // host name, which need not resolve (a bare chroot, some containers).
                       ? "--local_addr=127.0.0.1" : "") << ")\n"
      "script=\n"
      "for a in \"$@\"; do\n"
      "  if [ -z \"$script\" ]; then\n"
      "    case \"$a\" in\n"
      "      --standalone) args+=(--rdzv_backend=c10d --rdzv_endpoint=localhost:0 \"--rdzv_id=local-$$\"); continue ;;\n"
      "      --node-rank=*) a=--node_rank=${a#*=} ;;\n"
      "      --master-addr=*) a=--master_addr=${a#*=} ;;\n"
      "      --master-port=*) a=--master_port=${a#*=} ;;\n"
      "      --nproc-per-node=*) a=--nproc_per_node=${a#*=} ;;\n"
      "      -*) ;;\n"
      "      *) script=$a ;;\n"
      "    esac\n"
      "  fi\n"
      "  args+=(\"$a\")\n"
      "done\n"
      "# Debian's torch 1.13 under Python 3.11 reads the default --redirects 0 as None (3.11's IntFlag\n"
      "# no longer lists its zero member) and fails: plain numbers are parsed here.\n"
      "exec " << sh_quote(python.string()) << " -c '\n"
      "import sys\n"
      "from torch.distributed.elastic.multiprocessing import api\n"
      "parse = api.Std.from_str\n"
      "api.Std.from_str = classmethod(lambda cls, v: cls(int(v)) if v.isdigit() else parse(v))\n"
      "from torch.distributed.run import main\n"
      "sys.argv[0] = \"torchrun\"\n"
      "main()\n"
      "' \"${args[@]}\"\n";
  fs::permissions(bin / "torchrun", fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec |
                                        fs::perms::others_read | fs::perms::others_exec);
}

int local_procs_per_node(const Step& step, int max_ranks) {
  if (step.nodes * step.procs_per_node <= max_ranks) return step.procs_per_node;
  return std::max(1, max_ranks / step.nodes);
}

int termination_grace_seconds(const Step& step) {
  return step.outputs || step.checkpoints ? kSyncGraceSeconds : kDefaultGraceSeconds;
}

int run_pod_step(const System& sys, const Step& step, const LocalRunOptions& opt,
                 const std::map<std::string, std::string>& env, std::vector<Fault> faults) {
  Step here = step;
  here.procs_per_node = local_procs_per_node(step, opt.max_ranks);
  const bool torchrun = step.runs_torchrun();
  // Processes per node are trainc's to set only on the torchrun line it writes, not a command's own.
  const bool sets_procs = torchrun && !step.command_line();
  const int ranks = step.nodes * (sets_procs ? here.procs_per_node : 1);
  if (sets_procs && here.procs_per_node != step.procs_per_node)
    fmt::print("  ({} node(s) × {} processes is more than this machine runs at once (--max-ranks {}): each node runs {} "
               "here; the entry script's --nproc-per-node says so)\n",
               step.nodes, step.procs_per_node, opt.max_ranks, here.procs_per_node);
  if (step.gpus > 0) fmt::print("  (the step has {} GPU(s) per pod in the cluster; here PyTorch runs on the CPU, with gloo)\n", step.gpus);
  const fs::path dir = fs::absolute(opt.workdir / "pods" / step.name);
  fs::create_directories(dir);
  const fs::path script = dir / "entrypoint.sh";
  std::ofstream(script) << entry_script(sys, here);
  std::stable_sort(faults.begin(), faults.end(), [](const Fault& a, const Fault& b) {
    return std::pair(a.checkpoints, a.seconds) < std::pair(b.checkpoints, b.seconds);
  });
  std::vector<Pending> pending;
  // What the store held before the step: checkpoint-timed faults count what this run writes.
  std::map<std::string, fs::file_time_type> before;
  if (step.checkpoints) before = stored(step, stored_checkpoints(sys, step, opt));
  for (const auto& f : faults) {
    fmt::print("  {}: {} pod {} {}{}\n", f.option(), f.kind == Fault::Kind::kill ? "SIGKILL to" : "preempting", f.pod,
               f.when(), f.checkpoints > 0 ? fmt::format(" ({})", stored_checkpoints(sys, step, opt).first.string()) : "");
    pending.push_back({f, std::nullopt});
  }
  // As the cluster runs it (model/failure.h): the pods are one gang, started again whole after a
  // failure, each time fresh; a disruption costs no retry, an exit code in noRetryExitCodes ends
  // the step, anything else spends one retry however many pods failed; `timeout` (the Job's
  // activeDeadlineSeconds) spans every attempt.
  const auto started = std::chrono::steady_clock::now();
  const auto& no_retry = step.no_retry_exit_codes;
  // What the next attempt resumes from: the newest checkpoint the store holds now (the entry
  // script looks there), not a promise.
  const auto ckpt_folder = stored_checkpoints(sys, step, opt);
  auto resume = [&]() -> std::string {
    if (!step.checkpoints) return "starting over (the step keeps no checkpoints)";
    if (ckpt_folder.first.empty())
      return fmt::format("resuming from the newest checkpoint in {}, if any (each pod's entry script says which)",
                         step.checkpoints->path);
    auto held = stored(step, ckpt_folder);
    if (!step.checkpoints->resume_previous) {
      // This run's own: written since its start marker (which the entry script stores at once).
      std::error_code ec;
      const fs::path mark = ckpt_folder.first / (std::string(k8s::kRunMarkerPrefix) + step.run_id +
                                                 (ckpt_folder.second ? "._S3rver_object" : ""));
      const auto since = fs::last_write_time(mark, ec);
      if (ec && !step.checkpoints->start_from.empty())
        return fmt::format("starting from {} (checkpoints.resumeFrom): run {} has stored no start marker, so no "
                           "checkpoint of its own", step.checkpoints->start_from, step.run_id);
      if (ec) return fmt::format("starting clean: run {} has stored no start marker, so no checkpoint of its own", step.run_id);
      std::erase_if(held, [&](const auto& c) {
        return std::chrono::floor<std::chrono::seconds>(c.second) < std::chrono::floor<std::chrono::seconds>(since);
      });
    }
    if (held.empty() && !step.checkpoints->start_from.empty())
      return fmt::format("starting from {} (checkpoints.resumeFrom): the store holds none of this run's checkpoints yet",
                         step.checkpoints->start_from);
    if (held.empty()) return "starting over: the store holds none of this run's checkpoints yet";
    // As the entry script picks it: the latest whole second, and within it the name last in
    // version order (a store's time is when a sync uploaded the file, in either order within one).
    auto newest = held.begin();
    for (auto it = held.begin(); it != held.end(); ++it) {
      const auto a = std::chrono::floor<std::chrono::seconds>(it->second);
      const auto b = std::chrono::floor<std::chrono::seconds>(newest->second);
      if (a > b || (a == b && ::strverscmp(it->first.c_str(), newest->first.c_str()) > 0)) newest = it;
    }
    return fmt::format("resuming from {}, the newest of the {} checkpoint(s) of this run the store holds", newest->first,
                       held.size());
  };
  int rc = 0, attempt = 0, spent = 0, disruptions = 0;
  while (true) {
    ++attempt;
    const AttemptEnd end = run_attempt(sys, step, here, opt, env, dir, script, attempt, started, pending, before);
    if (const int sig = interrupted()) {  // trainc's own Ctrl-C or SIGTERM: the run ends, nothing is retried
      rc = 128 + sig;
      break;
    }
    if (end.why == AttemptEnd::Why::succeeded) break;
    if (end.why == AttemptEnd::Why::setup || end.why == AttemptEnd::Why::timed_out ||
        end.why == AttemptEnd::Why::interrupted) {
      rc = end.why == AttemptEnd::Why::timed_out ? 1 : end.status;
      break;
    }
    if (end.why == AttemptEnd::Why::disrupted) {
      ++disruptions;
      fmt::print("  pod {} was disrupted (preempted; on the cluster its DisruptionTarget condition): this did not count "
                 "against the step's retries ({} of {} left)\n", end.pod, step.retries - spent, step.retries);
      fmt::print("  restarting step '{}' as one gang: attempt {}, its {} pod(s) fresh, {}\n", step.name, attempt + 1,
                 step.nodes, resume());
      continue;
    }
    if (std::binary_search(no_retry.begin(), no_retry.end(), end.status)) {
      fmt::print(stderr, "trainc: step '{}' failed: pod {} (NODE_RANK {}) exited with code {}{}, which the step's "
                         "noRetryExitCodes lists ({}): it is not retried\n", step.name, end.pod, end.pod, end.status,
                 end.status == kPreflightExit ? " (its preflight failed)" : "", fmt::join(no_retry, ", "));
      rc = end.status;
      break;
    }
    const char* why = end.status == kSyncFailedExit ? " (a sync with S3 failed)" : "";
    if (spent == step.retries) {
      fmt::print(stderr, "trainc: step '{}' failed: pod {} (NODE_RANK {}) exited with code {}{} and no retries are "
                         "left (`retries: {}`, {} spent)\n", step.name, end.pod, end.pod, end.status, why, step.retries,
                 spent);
      rc = end.status;
      break;
    }
    ++spent;
    fmt::print("  retrying step '{}' as one gang (attempt {}): pod {}'s failure (exit {}{}) spent retry {} of {} ({} "
               "left); its {} pod(s) start fresh, {}\n", step.name, attempt + 1, end.pod, end.status, why, spent,
               step.retries, step.retries - spent, step.nodes, resume());
  }
  std::fflush(stdout);
  if (attempt > 1 || !faults.empty() || disruptions > 0)
    fmt::print("  step '{}': {} attempt(s); {} failure(s) spent a retry ({} of {} left), {} disruption(s) did not\n",
               step.name, attempt, spent, step.retries - spent, step.retries, disruptions);
  for (const auto& p : pending) fmt::print("  ({} did not fire: the step ended first)\n", p.fault.option());
  fmt::print("  ran {} as {} pod(s) with {} rank(s) in all, each pod's files in {}/<index>\n",
             torchrun ? "torchrun" : "the command", step.nodes, ranks, dir.string());
  if (step.outputs)
    fmt::print("  outputs: {} synced to {}{} (pod 0's {})\n", step.outputs->path, step.outputs->to.url,
               sys.store(step.outputs->to.store) && !sys.store(step.outputs->to.store)->endpoint.empty()
                   ? " on " + sys.store(step.outputs->to.store)->endpoint
                   : "",
               under(dir / "0", step.outputs->path).string());
  return rc;
}

// Stops the pods still running as the kubelet stops a deleted pod: SIGTERM to each one's entry
// script alone (the container's PID 1; what it started hears nothing from the kubelet, only what
// the script forwards), all at once, and SIGKILL to every process of the pods still there after
// the termination grace. The entry script spends that grace stopping its trainer and syncing out
// what the trainer wrote.
void stop_gang(std::vector<Child>& pods, const std::vector<bool>& done, int grace_seconds) {
  for (size_t i = 0; i < pods.size(); ++i)
    if (!done[i]) pods[i].terminate();
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(grace_seconds);
  for (size_t i = 0; i < pods.size(); ++i) {
    if (done[i]) continue;
    const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    pods[i].stop(static_cast<int>(std::max<long long>(0, ms.count())), Child::Term::sent);
  }
}

namespace {

AttemptEnd run_attempt(const System& sys, const Step& step, const Step& here, const LocalRunOptions& opt,
                       const std::map<std::string, std::string>& env, const fs::path& dir, const fs::path& script,
                       int attempt, std::chrono::steady_clock::time_point started, std::vector<Pending>& faults,
                       const std::map<std::string, fs::file_time_type>& before) {
  using Why = AttemptEnd::Why;
  const auto folder = stored_checkpoints(sys, step, opt);
  const int port = free_port();
  std::vector<Child> pods;
  for (int i = 0; i < step.nodes; ++i) {
    const fs::path root = dir / std::to_string(i);
    prepare_root(sys, step, opt, root);
    auto penv = pod_env(sys, here, i, port, root, env);
    std::string shown;
    for (const char* k : {"NODE_RANK", "NNODES", "MASTER_ADDR", "MASTER_PORT"})
      if (penv.count(k)) shown += sh_quote(fmt::format("{}={}", k, penv[k])) + " ";
    fmt::print("  pod {}: $ {}TRAINC_POD_ROOT={} bash {} &\n", i, shown, sh_quote(root.string()), sh_quote(script.string()));
    std::fflush(stdout);
    std::string error;
    pods.emplace_back(std::vector<std::string>{"bash", script.string()}, error, penv, root, Inherit::nothing);
    if (!pods.back().started()) {
      fmt::print(stderr, "trainc: {}\n", error);
      return {Why::setup, i, 2};
    }
  }
  const auto begun = std::chrono::steady_clock::now();
  auto elapsed = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - begun).count(); };
  const int grace = termination_grace_seconds(step);
  std::vector<bool> done(pods.size(), false);
  size_t left = pods.size();
  AttemptEnd end;
  auto ended = [&](Why why, int pod, int status) {
    if (end.why == Why::succeeded) end = {why, pod, status};
  };
  // As a gang: the first pod that fails (or is disrupted) ends the attempt, and a step past its
  // timeout is stopped, as its Job's deadline stops it.
  while (left > 0 && end.why == Why::succeeded) {
    if (const int sig = interrupted()) {
      for (auto& p : pods) p.stop();
      return {Why::interrupted, -1, 128 + sig};
    }
    if (step.timeout_seconds &&
        std::chrono::steady_clock::now() - started > std::chrono::seconds(*step.timeout_seconds)) {
      stop_gang(pods, done, grace);
      fmt::print(stderr, "trainc: step '{}' ran past its timeout ({} s, the Job's activeDeadlineSeconds): its pods are "
                 "stopped and it is not retried\n", step.name, *step.timeout_seconds);
      return {Why::timed_out, -1, 1};
    }
    // Faults due now hit this attempt together (pods failing at once are one gang failure).
    const double now = elapsed();
    std::optional<int> held;  // the store's checkpoints, counted once per look
    for (auto it = faults.begin(); it != faults.end();) {
      if (it->fault.checkpoints > 0 && !it->reached) {
        if (!held) held = new_checkpoints(before, stored(step, folder));
        if (*held >= it->fault.checkpoints) {
          it->reached = std::chrono::steady_clock::now();
          fmt::print("  [{:.1f}s] {}: the store holds {} of step '{}''s checkpoints\n", now, it->fault.option(), *held,
                     step.name);
        }
      }
      const bool due = it->fault.checkpoints > 0
                           ? it->reached && std::chrono::duration<double>(std::chrono::steady_clock::now() - *it->reached)
                                                    .count() >= it->fault.seconds
                           : it->fault.seconds <= now;
      if (!due) {
        ++it;
        continue;
      }
      const Fault f = it->fault;
      it = faults.erase(it);
      const auto i = static_cast<size_t>(f.pod);
      if (done[i]) {
        fmt::print("  [{:.1f}s] {}: pod {} has already exited; there is nothing to stop\n", elapsed(), f.option(), f.pod);
        continue;
      }
      if (f.kind == Fault::Kind::kill) {
        fmt::print("  [{:.1f}s] {}: SIGKILL to pod {}'s process group in attempt {}, as when its node crashes\n", elapsed(),
                   f.option(), f.pod, attempt);
        std::fflush(stdout);
        pods[i].signal(SIGKILL);
        const int status = pods[i].wait();
        done[i] = true;
        --left;
        fmt::print(stderr, "trainc: pod {} of step '{}' exited with status {}\n", i, step.name, status);
        ended(Why::failed, f.pod, status);
      } else {
        fmt::print("  [{:.1f}s] {}: pod {} is preempted in attempt {}: SIGTERM to its entry script (the container's "
                   "PID 1), SIGKILL to all its processes after the step's {} s termination grace\n", elapsed(),
                   f.option(), f.pod, attempt, grace);
        std::fflush(stdout);
        const double at = elapsed();
        const std::optional<int> status = pods[i].stop(grace * 1000, Child::Term::leader);
        done[i] = true;
        --left;
        fmt::print("  pod {} stopped {:.1f}s later{}\n", f.pod, elapsed() - at,
                   status ? fmt::format(" (status {})", *status) : "");
        ended(Why::disrupted, f.pod, status.value_or(128 + SIGKILL));
      }
    }
    for (size_t i = 0; i < pods.size() && end.why == Why::succeeded; ++i)
      if (!done[i])
        if (auto status = pods[i].poll()) {
          done[i] = true;
          --left;
          if (*status != 0) {
            fmt::print(stderr, "trainc: pod {} of step '{}' exited with status {}\n", i, step.name, *status);
            ended(Why::failed, static_cast<int>(i), *status);
          }
        }
    if (left > 0 && end.why == Why::succeeded) usleep(100000);
  }
  if (end.why == Why::succeeded) return end;
  // The gang stops: every other pod at once, as JobSet deletes the attempt's pods.
  std::vector<size_t> rest;
  for (size_t i = 0; i < pods.size(); ++i)
    if (!done[i]) rest.push_back(i);
  if (!rest.empty()) {
    fmt::print("  the gang stops: SIGTERM to the entry script of pod(s) {} of step '{}' (SIGKILL after {} s)\n",
               fmt::join(rest, ", "), step.name, grace);
    std::fflush(stdout);
    const double at = elapsed();
    stop_gang(pods, done, grace);
    fmt::print("  the gang stopped in {:.1f}s\n", elapsed() - at);
  }
  return end;
}

}  // namespace

}  // namespace trainc
