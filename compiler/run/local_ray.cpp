#include "run/local_ray.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <optional>
#include <string_view>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "k8s/clusters.h"
#include "quoting/shell.h"
#include "run/local_pods.h"

namespace fs = std::filesystem;

namespace trainc {
namespace {

/// Ray's command line, from `python`'s ray package (the `ray` console script's entry point). `ray
/// start` turns `--node-ip-address=127.0.0.1` into this machine's network address
/// (scripts.py: services.resolve_ip_for_localhost), and its raylet, agents and client server then
/// listen on that address, where the loopback preload cannot move them: here the address given
/// is kept. (RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0 would keep loopback too, but refuses worker nodes.)
constexpr std::string_view kRayCli = R"py(import sys
import ray._private.services as services
resolve = services.resolve_ip_for_localhost
services.resolve_ip_for_localhost = lambda host: host if host == "127.0.0.1" else resolve(host)
from ray.scripts.scripts import main
sys.argv[0] = "ray"
main()
)py";

std::vector<std::string> ray_cli(const fs::path& python, std::vector<std::string> args) {
  std::vector<std::string> argv{python.string(), "-c", std::string(kRayCli)};
  argv.insert(argv.end(), args.begin(), args.end());
  return argv;
}

/// The logical CPUs a node of `g` offers Ray: what its pods request (KubeRay derives num-cpus from
/// the container's CPU), at least one.
int ray_cpus(const PodGroup& g) { return std::max(1, static_cast<int>(std::ceil(g.resources.requested("cpu")))); }

/// Each node's Ray workers listen on ports of a range of its own (Ray's default, 10002-19999, for
/// every node, would be shared by the nodes here): node N's starts at 20000 + 100 N, below the
/// kernel's ephemeral ports (32768 up on Linux), from which free_port picks the nodes' other ports.
constexpr int kWorkerPortsPerNode = 100;
int worker_ports(int node) { return 20000 + kWorkerPortsPerNode * node; }

/// Each node's object store: Ray's default is 30% of the memory, for every node, which three
/// nodes on one machine (and its /dev/shm) cannot all have.
constexpr long long kObjectStoreBytes = 256LL << 20;

/// Waits until the cluster behind the dashboard at `address` has `want` nodes alive (Ray's state
/// API, as `ray list nodes` reads it); false after `seconds` or when a process ended.
constexpr std::string_view kWaitNodes = R"py(import sys, time
from ray.util.state import list_nodes
address, want, deadline = sys.argv[1], int(sys.argv[2]), time.time() + float(sys.argv[3])
alive = 0
while time.time() < deadline:
    try:
        alive = sum(1 for n in list_nodes(address=address, raise_on_missing_output=False) if n.state == "ALIVE")
    except Exception:
        alive = 0
    if alive >= want:
        sys.exit(0)
    time.sleep(0.5)
print(f"{alive} of {want} Ray node(s) joined", file=sys.stderr)
sys.exit(1)
)py";

/// Submits an entrypoint string with a runtime env through the job API of the dashboard at
/// `address`, as KubeRay's HTTP mode does (POST /api/jobs/ with the string as written) and as
/// `ray job submit` does it (JobSubmissionClient: submit_job, then tail_job_logs); then prints the
/// job's end and exits with its driver's exit code (1 for a failed job that has none, 0 when it
/// succeeded).
constexpr std::string_view kSubmit = R"py(import asyncio, json, sys, time
from ray.job_submission import JobStatus, JobSubmissionClient
address, sid, entrypoint, runtime_env = sys.argv[1], sys.argv[2], sys.argv[3], json.loads(sys.argv[4])
client = JobSubmissionClient(address)
client.submit_job(entrypoint=entrypoint, runtime_env=runtime_env or None, submission_id=sid)
print(f"  (Ray job '{sid}' submitted to {address})", flush=True)
async def tail():
    async for lines in client.tail_job_logs(sid):
        sys.stdout.write(lines)
        sys.stdout.flush()
asyncio.run(tail())
info = client.get_job_info(sid)
while not info.status.is_terminal():
    time.sleep(0.2)
    info = client.get_job_info(sid)
code = getattr(info, "driver_exit_code", None)
if code is None:
    code = 0 if info.status == JobStatus.SUCCEEDED else 1
# The message of a failed job repeats the end of its logs, which were streamed above.
why = (info.message or "").split(", last available logs")[0].split("\n")[0]
print(f"  (Ray job '{sid}' {info.status.value}, driver exit code {code}{': ' + why if info.status != JobStatus.SUCCEEDED and why else ''})", flush=True)
sys.exit(code)
)py";

}  // namespace

LocalRay::~LocalRay() {
  // Workers before the head, whose GCS they report to.
  for (auto it = procs_.rbegin(); it != procs_.rend(); ++it) it->stop(10000);
  if (!temp_.empty()) {
    std::error_code ec;
    fs::remove_all(temp_, ec);
  }
}

std::optional<int> LocalRay::ended() {
  for (size_t i = 0; i < procs_.size(); ++i)
    if (auto rc = procs_[i].poll()) {
      fmt::print(stderr, "trainc: `{}` of Ray cluster '{}' exited (status {}); its output is above\n", names_[i], cluster_,
                 *rc);
      return *rc == 0 ? 1 : *rc;
    }
  return std::nullopt;
}

int LocalRay::start(const ComputeCluster& c, const fs::path& python, const LocalRunOptions& opt,
                    const std::map<std::string, std::string>& env, const fs::path& cwd) {
  cluster_ = c.name;
  python_ = python;
  const Ray& ray = std::get<Ray>(c.engine);
  // Ray's sockets live in its temporary folder, and a Unix socket's path has at most 107 bytes: a
  // short folder of the run's own, not the work folder (nor /tmp/ray, which another run shares).
  std::string tmpl = "/tmp/trainc-ray-XXXXXX";
  if (!mkdtemp(tmpl.data())) {
    fmt::print(stderr, "trainc: cannot make a temporary folder for Ray in /tmp\n");
    return 2;
  }
  temp_ = tmpl;
  env_ = env;
  env_["RAY_TMPDIR"] = temp_.string();
  env_["RAY_USAGE_STATS_ENABLED"] = "0";  // no report to Ray's servers from a rehearsal
  const int gcs = free_port(), dash = free_port();
  dashboard_ = fmt::format("http://127.0.0.1:{}", dash);
  std::string error;
  auto launch = [&](std::vector<std::string> args, const std::string& name) {
    // Every port the node listens on is given, on a free port here, where Ray takes fixed ones by
    // default (the agent's 52365, the client server's 10001) that a second run would share.
    for (auto flag : {"--dashboard-agent-listen-port", "--metrics-export-port", "--node-manager-port",
                      "--object-manager-port", "--runtime-env-agent-port", "--dashboard-agent-grpc-port"})
      args.push_back(fmt::format("{}={}", flag, free_port()));
    args.push_back(fmt::format("--object-store-memory={}", kObjectStoreBytes));
    args.push_back("--disable-usage-stats");
    auto argv = ray_cli(python, args);
    fmt::print("  $ ray {} &\n", sh_join(args));
    std::fflush(stdout);
    auto penv = env_;
    penv["HOME"] = pod_home(fs::absolute(opt.workdir / "pods" / c.name / name)).string();
    fs::create_directories(penv["HOME"]);
    procs_.emplace_back(argv, error, penv, cwd, Inherit::nothing);
    names_.push_back(fmt::format("ray start ({})", name));
    if (!procs_.back().started()) fmt::print(stderr, "trainc: {}\n", error);
    return procs_.back().started();
  };
  if (ray.head.gpus > 0) fmt::print("  (the head has GPUs in the cluster; here it runs on the CPU)\n");
  if (!launch({"start", "--head", "--block", "--node-ip-address=127.0.0.1", fmt::format("--port={}", gcs),
               "--dashboard-host=127.0.0.1", fmt::format("--dashboard-port={}", dash),
               fmt::format("--ray-client-server-port={}", free_port()), fmt::format("--num-cpus={}", ray_cpus(ray.head)),
               // As the cluster's head: no GPUs, so Ray schedules none of the work there.
               "--num-gpus=0", fmt::format("--min-worker-port={}", worker_ports(0)),
               fmt::format("--max-worker-port={}", worker_ports(0) + kWorkerPortsPerNode - 1)},
              "head"))
    return 2;
  if (!accepts(gcs, 60) || !accepts(dash, 60)) {
    if (auto rc = ended()) return *rc;
    fmt::print(stderr, "trainc: the Ray head of cluster '{}' did not listen on ports {} and {} within 60s\n", c.name, gcs,
               dash);
    return 2;
  }
  // Ray gives a starting node 30 s to register (ray/_private/node.py), which several raylets and
  // their agents starting at once on a small machine exceed: one node at a time, each waited for.
  auto joined = [&](int want) {
    Child wait({python.string(), "-c", std::string(kWaitNodes), dashboard_, std::to_string(want), "120"}, error, env_,
               cwd, Inherit::nothing);
    return wait.started() && wait.wait() == 0;
  };
  // The head first: its raylet registering while a worker's starts beside it was what ran past
  // Ray's 30 s on two cores.
  if (!joined(1)) {
    if (auto rc = ended()) return *rc;
    fmt::print(stderr, "trainc: the head of Ray cluster '{}' did not register within 120s\n", c.name);
    return 2;
  }
  int nodes = 1;
  for (const auto& g : c.workers) {
    if (g.gpus > 0) fmt::print("  (worker group '{}' has {} GPU(s) a pod in the cluster; here it runs as CPU workers)\n", g.name, g.gpus);
    const int here = std::min(g.replicas, 2);
    if (here < g.replicas) fmt::print("  (worker group '{}' runs {} of its {} workers here)\n", g.name, here, g.replicas);
    for (int i = 0; i < here; ++i, ++nodes) {
      if (!launch({"start", "--block", fmt::format("--address=127.0.0.1:{}", gcs), "--node-ip-address=127.0.0.1",
                   fmt::format("--num-cpus={}", ray_cpus(g)), "--num-gpus=0",
                   fmt::format("--min-worker-port={}", worker_ports(nodes)),
                   fmt::format("--max-worker-port={}", worker_ports(nodes) + kWorkerPortsPerNode - 1)},
                  fmt::format("{}-{}", g.name, i)))
        return 2;
      if (!joined(nodes + 1)) {
        if (auto rc = ended()) return *rc;
        fmt::print(stderr, "trainc: worker {}-{} of Ray cluster '{}' did not join within 120s\n", g.name, i, c.name);
        return 2;
      }
    }
  }
  fmt::print("  (Ray cluster '{}': {} node(s) on loopback, dashboard {})\n", c.name, nodes, dashboard_);
  return 0;
}

int LocalRay::submit(const System& sys, const Step& s) {
  if (!s.mounts.empty() || !s.inputs.empty() || s.outputs)
    fmt::print("  (step '{}' reads or writes stores in the cluster; here they are not mounted)\n", s.name);
  const std::string entrypoint = k8s::ray_job_entrypoint(s);
  const k8s::ojson runtime_env = k8s::ray_job_runtime_env(s);
  const std::string id = fmt::format("{}-{}-{}", sys.name, s.name, ++jobs_);
  fmt::print("  $ ray job submit --address {} --submission-id {}{} -- {}\n", dashboard_, id,
             runtime_env.is_null() ? "" : " --runtime-env-json " + sh_quote(runtime_env.dump()), entrypoint);
  std::fflush(stdout);
  std::string error;
  Child job({python_.string(), "-c", std::string(kSubmit), dashboard_, id, entrypoint,
             runtime_env.is_null() ? "{}" : runtime_env.dump()},
            error, env_, fs::path(), Inherit::nothing);
  if (!job.started()) {
    fmt::print(stderr, "trainc: {}\n", error);
    return 2;
  }
  while (true) {
    if (const int sig = interrupted()) return 128 + sig;
    if (auto rc = job.poll()) return *rc;
    if (auto rc = ended()) return *rc;
    usleep(100000);
  }
}

}  // namespace trainc
