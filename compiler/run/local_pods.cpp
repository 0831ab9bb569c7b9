#include "run/local_pods.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <thread>

#include <fmt/format.h>

#include "base/overloaded.h"
#include "k8s/entry_script.h"
#include "k8s/pod.h"
#include "k8s/preflight.h"
#include "quoting/shell.h"
#include "run/process.h"

namespace fs = std::filesystem;

namespace trainc {
namespace {

bool imports_torch(const fs::path& python) {
  std::string error;
  Child check({"sh", "-c", "exec \"$1\" -c 'import torch' >/dev/null 2>&1", "sh", python.string()}, error);
  return check.started() && check.wait() == 0;
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
  env["TRAINC_POD_ROOT"] = root.string();
  env["TRAINC_LOCAL"] = "1";
  return env;
}

/// What run_attempt returns for an attempt stopped at the step's timeout (not a process status).
constexpr int kTimedOut = -1;

/// One attempt at the step: its pods started fresh, waited for; the first failure's status, 0,
/// 128 + an interrupt's signal, or kTimedOut once `started` is further back than the timeout.
int run_attempt(const System& sys, const Step& step, const Step& here, const LocalRunOptions& opt,
                const std::map<std::string, std::string>& env, const fs::path& dir, const fs::path& script,
                std::chrono::steady_clock::time_point started);

}  // namespace

fs::path find_torch_python(const fs::path& given) {
  fs::path chosen = given;
  if (const char* env = std::getenv("TRAINC_PYTHON"); chosen.empty() && env && *env) chosen = env;
  // Every python3 on PATH in order, or the chosen one there when it names no folder: the shims
  // must name it by its full path, or the python3 shim would run itself.
  const std::string name = chosen.empty() ? "python3" : chosen.string();
  if (name.find('/') != std::string::npos) return imports_torch(chosen) ? fs::absolute(chosen) : fs::path();
  const char* path = std::getenv("PATH");
  std::string dirs = path ? path : "/usr/bin:/bin";
  for (size_t start = 0; start <= dirs.size();) {
    size_t end = dirs.find(':', start);
    if (end == std::string::npos) end = dirs.size();
    const fs::path candidate = fs::absolute(fs::path(dirs.substr(start, end - start)) / name);
    start = end + 1;
    if (access(candidate.c_str(), X_OK) != 0) continue;
    if (imports_torch(candidate)) return candidate;
    if (!chosen.empty()) return {};  // the one PATH names does not import torch
  }
  return {};
}

void write_python_shims(const fs::path& bin, const fs::path& python) {
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
  std::ofstream(bin / "torchrun") << "#!/usr/bin/env bash\n"
      "# trainc run --local: torchrun of the python3 with torch, its flags in the spelling every\n"
      "# torch version accepts (torch 1.x has no --node-rank).\n"
      "args=()\n"
      "script=\n"
      "for a in \"$@\"; do\n"
      "  if [ -z \"$script\" ]; then\n"
      "    case \"$a\" in\n"
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

bool runs_torchrun(const Step& step) {
  return match(
      step.run, [](const Torchrun&) { return true; }, [](const Command&) { return false; },
      [](const Datagen&) { return false; }, [](const XGBoost&) { return false; });
}

int local_procs_per_node(const Step& step, int max_ranks) {
  if (step.nodes * step.procs_per_node <= max_ranks) return step.procs_per_node;
  return std::max(1, max_ranks / step.nodes);
}

int run_pod_step(const System& sys, const Step& step, const LocalRunOptions& opt,
                 const std::map<std::string, std::string>& env) {
  Step here = step;
  here.procs_per_node = local_procs_per_node(step, opt.max_ranks);
  const bool torchrun = runs_torchrun(step);
  const int ranks = step.nodes * (torchrun ? here.procs_per_node : 1);
  if (torchrun && here.procs_per_node != step.procs_per_node)
    fmt::print("  ({} node(s) × {} processes is more than this machine runs at once (--max-ranks {}): each node runs {} "
               "here; the entry script's --nproc-per-node says so)\n",
               step.nodes, step.procs_per_node, opt.max_ranks, here.procs_per_node);
  if (step.gpus > 0) fmt::print("  (the step has {} GPU(s) per pod in the cluster; here PyTorch runs on the CPU, with gloo)\n", step.gpus);
  const fs::path dir = fs::absolute(opt.workdir / "pods" / step.name);
  fs::create_directories(dir);
  const fs::path script = dir / "entrypoint.sh";
  std::ofstream(script) << entry_script(sys, here);
  // As the Job: a failed attempt starts the step's pods again, fresh, up to `retries` times, all
  // within `timeout` (activeDeadlineSeconds spans the retries).
  const auto started = std::chrono::steady_clock::now();
  int rc = 0;
  for (int attempt = 0; attempt <= step.retries; ++attempt) {
    if (attempt > 0)
      fmt::print("  retrying step '{}' (attempt {} of {}: `retries: {}`), its pods fresh, as the Job would\n", step.name,
                 attempt + 1, step.retries + 1, step.retries);
    rc = run_attempt(sys, step, here, opt, env, dir, script, started);
    // Only trainc's own interruption (interrupted(): set when it caught SIGINT or SIGTERM and
    // stopped the pods) ends the retries; a pod killed from outside (137: SIGKILL, the OOM killer)
    // exits with the same status and is a failed pod like any other.
    if (rc == 0 || rc == kTimedOut || interrupted()) break;
    if (rc == k8s::kPreflightExit) {  // the image or the spec, which another attempt would not change
      fmt::print(stderr, "trainc: step '{}' stopped in its preflight (exit {}); it is not retried\n", step.name, rc);
      break;
    }
  }
  if (rc == kTimedOut) rc = 1;
  std::fflush(stdout);
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

namespace {

int run_attempt(const System& sys, const Step& step, const Step& here, const LocalRunOptions& opt,
                const std::map<std::string, std::string>& env, const fs::path& dir, const fs::path& script,
                std::chrono::steady_clock::time_point started) {
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
      return 2;
    }
  }
  // As an Indexed Job: the first pod that fails ends the attempt (the others would wait for it at
  // the rendezvous), and a step past its timeout is stopped, as its Job's deadline stops it.
  int rc = 0;
  for (size_t left = pods.size(); left > 0 && rc == 0;) {
    if (const int sig = interrupted()) return 128 + sig;
    if (step.timeout_seconds &&
        std::chrono::steady_clock::now() - started > std::chrono::seconds(*step.timeout_seconds)) {
      for (auto& p : pods) p.stop();
      fmt::print(stderr, "trainc: step '{}' ran past its timeout ({} s, the Job's activeDeadlineSeconds): its pods are "
                 "stopped and it is not retried\n", step.name, *step.timeout_seconds);
      return kTimedOut;
    }
    for (size_t i = 0; i < pods.size(); ++i)
      if (pods[i].started())
        if (auto done = pods[i].poll()) {
          --left;
          if (*done != 0) {
            fmt::print(stderr, "trainc: pod {} of step '{}' exited with status {}\n", i, step.name, *done);
            rc = *done;
          }
        }
    if (rc == 0 && left > 0) usleep(100000);
  }
  return rc;
}

}  // namespace

}  // namespace trainc
