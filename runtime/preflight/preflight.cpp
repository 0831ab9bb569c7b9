#include "preflight/preflight.h"

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <regex>
#include <system_error>

#include <dlfcn.h>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "commands.h"
#include "preflight/bandwidth.h"
#include "report.h"

namespace trainrt::preflight {

namespace {

using Clock = std::chrono::steady_clock;

std::optional<int> to_int(std::string_view s) {
  int v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (s.empty() || ec != std::errc() || end != s.data() + s.size()) return std::nullopt;
  return v;
}

/// The flag if given, else the environment variable if set, else `fallback`.
std::variant<int, std::string> flag_or_env(std::optional<int> flag, const char* var, int fallback, const Env& env) {
  if (flag) return *flag;
  const char* value = env(var);
  if (value == nullptr) return fallback;
  if (auto v = to_int(value)) return *v;
  return fmt::format("{}='{}' is not an integer", var, value);
}

/// "13000" -> "13.0".
std::string cuda_version(int v) { return fmt::format("{}.{}", v / 1000, v % 1000 / 10); }

std::string describe(const GpuDevice& d) {
  return fmt::format("{} ({}, sm_{}{}, {})", d.name, format_bytes(d.memory_bytes), d.cc_major, d.cc_minor, d.pci_bus_id);
}

/// What a CUDA error usually means in a Kubernetes pod.
std::string hint_for(int cuda_error) {
  switch (cuda_error) {
    case 35:  // cudaErrorInsufficientDriver
      return "the NVIDIA driver is missing from the container or older than this CUDA runtime "
             "(CUDA 13 needs driver 580 or newer)";
    case 34:  // cudaErrorStubLibrary
      return "the CUDA stub library was loaded instead of the driver: remove .../cuda/lib64/stubs from "
             "LD_LIBRARY_PATH";
    case 100:  // cudaErrorNoDevice
      return "the driver sees no GPU in this container: the pod has no nvidia.com/gpu limit, or "
             "NVIDIA_VISIBLE_DEVICES / CUDA_VISIBLE_DEVICES hide them";
    case 803:  // cudaErrorSystemDriverMismatch
      return "the node's driver kernel module and its user-space library have different versions";
    case 3:    // cudaErrorInitializationError
    case 999:  // cudaErrorUnknown
      return "the driver could not initialise a GPU: check the node (nvidia-smi, Xid errors in its kernel log)";
    default:
      return "";
  }
}

std::string found_line(const GpuInventory& inv, const HostFacts& f) {
  std::vector<std::string> parts;
  parts.push_back(inv.runtime_version > 0 ? "CUDA runtime " + cuda_version(inv.runtime_version) : "CUDA runtime ?");
  parts.push_back(inv.driver_version > 0 ? "driver supports CUDA " + cuda_version(inv.driver_version)
                                         : "no NVIDIA driver answered");
  parts.push_back(f.driver_library ? "libcuda.so.1 loads" : "libcuda.so.1 not loadable (" + f.driver_library_error + ")");
  parts.push_back(f.device_nodes.empty() ? "no /dev/nvidia[0-9]* devices"
                                         : fmt::format("devices {}", fmt::join(f.device_nodes, " ")));
  auto env_part = [](const char* name, const std::optional<std::string>& v) {
    return v ? fmt::format("{}='{}'", name, *v) : fmt::format("{} unset", name);
  };
  parts.push_back(env_part("NVIDIA_VISIBLE_DEVICES", f.nvidia_visible_devices));
  parts.push_back(env_part("CUDA_VISIBLE_DEVICES", f.cuda_visible_devices));
  return fmt::format("found: {}", fmt::join(parts, "; "));
}

nlohmann::ordered_json device_json(const GpuDevice& d) {
  return {{"index", d.index},
          {"name", d.name},
          {"memory_bytes", d.memory_bytes},
          {"compute_capability", fmt::format("{}.{}", d.cc_major, d.cc_minor)},
          {"pci_bus_id", d.pci_bus_id}};
}

}  // namespace

std::variant<Plan, std::string> resolve(const Options& o, const Env& env) {
  Plan p;
  if (o.expect_gpus < -1) return std::string("--expect-gpus must be 0 (CPU only) or more");
  p.expect_gpus = o.expect_gpus;

  auto rank = flag_or_env(o.rank, "RANK", 0, env);
  if (auto* e = std::get_if<std::string>(&rank)) return *e;
  auto world = flag_or_env(o.world_size, "WORLD_SIZE", 1, env);
  if (auto* e = std::get_if<std::string>(&world)) return *e;
  p.rank = std::get<int>(rank);
  p.world_size = std::get<int>(world);
  if (p.world_size < 1) return fmt::format("the world size must be at least 1, not {}", p.world_size);
  if (p.rank < 0 || p.rank >= p.world_size)
    return fmt::format("rank {} is outside 0..{} (world size {})", p.rank, p.world_size - 1, p.world_size);

  std::string endpoint = o.coordinator;
  std::string source = "--coordinator";
  if (endpoint.empty() && env("MASTER_ADDR") != nullptr && env("MASTER_PORT") != nullptr) {
    const std::string addr = env("MASTER_ADDR");
    endpoint = (addr.find(':') != std::string::npos ? "[" + addr + "]" : addr) + ":" + env("MASTER_PORT");
    source = "MASTER_ADDR:MASTER_PORT";
  }
  if (!endpoint.empty()) {
    p.coordinator = parse_endpoint(endpoint);
    if (!p.coordinator) return fmt::format("{} '{}' is not HOST:PORT", source, endpoint);
  } else if (p.world_size > 1) {
    return fmt::format("world size {} needs rank 0's address: --coordinator HOST:PORT, or MASTER_ADDR and MASTER_PORT",
                       p.world_size);
  }

  auto bytes = parse_bytes(o.bytes);
  if (!bytes) return fmt::format("--bytes '{}' is not a size (examples: 256MiB, 1GiB, 64M)", o.bytes);
  p.bytes = *bytes / 4 * 4;  // whole uint32 elements
  if (p.bytes == 0) return std::string("--bytes must be at least 4");
  if (o.iters < 1) return std::string("--iters must be at least 1");
  if (o.warmup < 0) return std::string("--warmup must be 0 or more");
  if (!(o.timeout_seconds > 0)) return std::string("--timeout must be more than 0 seconds");
  p.iters = o.iters;
  p.warmup = o.warmup;
  p.timeout = Millis(static_cast<std::int64_t>(o.timeout_seconds * 1000));
  return p;
}

HostFacts host_facts(const Env& env) {
  HostFacts f;
  static const std::regex kGpuNode("nvidia[0-9]+");
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator("/dev", ec)) {
    const std::string name = entry.path().filename().string();
    if (std::regex_match(name, kGpuNode)) f.device_nodes.push_back(entry.path().string());
  }
  std::sort(f.device_nodes.begin(), f.device_nodes.end());
  if (void* h = ::dlopen("libcuda.so.1", RTLD_LAZY | RTLD_LOCAL)) {
    f.driver_library = true;
    ::dlclose(h);
  } else {
    const char* why = ::dlerror();
    f.driver_library_error = why != nullptr ? why : "unknown error";
  }
  if (const char* v = env("NVIDIA_VISIBLE_DEVICES")) f.nvidia_visible_devices = v;
  if (const char* v = env("CUDA_VISIBLE_DEVICES")) f.cuda_visible_devices = v;
  return f;
}

std::vector<std::string> gpu_problem(const GpuInventory& inv, int expect, const HostFacts& facts) {
  const std::string expected = expect > 0 ? fmt::format(" (expected {})", expect) : "";
  std::vector<std::string> lines;
  if (!inv.query_ok) {
    lines.push_back(fmt::format("no usable GPU{}: cudaGetDeviceCount failed with CUDA error {} {} ({})", expected,
                                inv.error_code, inv.error_name, inv.error_text));
  } else if (inv.devices.empty()) {
    lines.push_back(fmt::format("no usable GPU{}: CUDA sees no device", expected));
  } else if (expect > 0 && static_cast<int>(inv.devices.size()) != expect) {
    std::vector<std::string> names;
    for (const auto& d : inv.devices) names.push_back(fmt::format("{}: {}", d.index, describe(d)));
    lines.push_back(fmt::format("expected {} GPUs, found {}: {}", expect, inv.devices.size(), fmt::join(names, "; ")));
    lines.push_back(found_line(inv, facts));
    lines.push_back(
        "check: the pod's nvidia.com/gpu limit equals --expect-gpus, CUDA_VISIBLE_DEVICES hides none of them, "
        "and no GPU of the node has failed (nvidia-smi on the node; Xid errors in its kernel log)");
    return lines;
  } else {
    return lines;
  }
  lines.push_back(found_line(inv, facts));
  if (std::string hint = hint_for(inv.error_code); !inv.query_ok && !hint.empty()) lines.push_back("likely: " + hint);
  lines.push_back(
      "check: the pod requests its GPUs (resources.limits nvidia.com/gpu) and runs on a GPU node pool; the node's "
      "NVIDIA driver is installed and supports CUDA 13 (driver 580 or newer); on GKE the driver is mounted at "
      "/usr/local/nvidia (LD_LIBRARY_PATH includes /usr/local/nvidia/lib64)");
  return lines;
}

namespace {

/// Progress lines on `out`, problems on `err`, and the JSON summary that ends every run.
class Report {
 public:
  Report(const Plan& plan, std::ostream& out, std::ostream& err) : out_(out), err_(err) {
    summary["preflight"] = "ok";
    summary["exit"] = kOk;
    summary["rank"] = plan.rank;
    summary["world_size"] = plan.world_size;
    summary["expect_gpus"] = plan.expect_gpus;
  }
  /// One progress line, flushed: the pod's log shows how far it got even if it is killed.
  void line(const std::string& text) { out_ << text << std::endl; }
  int finish(int code, const std::vector<std::string>& problem = {}) {
    summary["preflight"] = code == kOk ? "ok" : code == kNoGpu ? "no_gpu" : code == kRankTimeout ? "rank_timeout" : "failed";
    summary["exit"] = code;
    if (!problem.empty()) {
      summary["error"] = problem.front();
      std::string text = problem.front();
      for (std::size_t i = 1; i < problem.size(); ++i) text += "\n" + problem[i];
      trainrt::report(err_, text);
    }
    out_ << summary.dump() << std::endl;
    return code;
  }

  nlohmann::ordered_json summary;

 private:
  std::ostream& out_;
  std::ostream& err_;
};

/// Step 1: this pod's GPUs. Sets `local_gpus`; an exit code when they do not do.
std::optional<int> check_gpus(const Plan& plan, const Env& env, Report& report, int& local_gpus) {
  if (!built_with_cuda()) {
    return report.finish(kNoGpu,
                         {"no usable GPU: trainrt was built without CUDA (no CUDA runtime or NCCL when it was compiled)",
                          "check: run the trainrt container image, which is built with CUDA; or pass --expect-gpus 0 "
                          "to check only that every rank reaches rank 0"});
  }
  const GpuInventory inv = list_gpus();
  report.summary["gpus"] = nlohmann::ordered_json::array();
  for (const auto& d : inv.devices) report.summary["gpus"].push_back(device_json(d));
  if (auto problem = gpu_problem(inv, plan.expect_gpus, host_facts(env)); !problem.empty())
    return report.finish(kNoGpu, problem);
  for (const auto& d : inv.devices) report.line(fmt::format("gpu {}: {}", d.index, describe(d)));
  local_gpus = static_cast<int>(inv.devices.size());
  return std::nullopt;
}

/// Step 2: every rank meets rank 0, which hands out `nccl_id`; every rank learns each one's GPUs.
RendezvousResult meet(const Plan& plan, int local_gpus, const std::string& nccl_id, Report& report) {
  const Hello self{plan.rank, plan.world_size, local_gpus};
  if (plan.rank != 0) {
    report.line(fmt::format("rendezvous: joining rank 0 at {}:{}", plan.coordinator->host, plan.coordinator->port));
    return join(*plan.coordinator, self, plan.timeout);
  }
  try {
    Coordinator coordinator(plan.coordinator->port);
    report.line(fmt::format("rendezvous: waiting on port {} for ranks 1..{}", coordinator.port(), plan.world_size - 1));
    return coordinator.serve(self, nccl_id, plan.timeout);
  } catch (const std::system_error& e) {
    RendezvousResult r;
    r.code = kFailed;
    r.error = fmt::format("rank 0 cannot accept the other ranks: {}", e.what());
    return r;
  }
}

/// Step 3: the timed all-reduce over every GPU of every pod.
int all_reduce(const Plan& plan, int local_gpus, const std::string& nccl_id, Report& report) {
  report.line(fmt::format("all-reduce: {} NCCL ranks ({} pod{} x {} GPU{}), {} per GPU, {} warm-up + {} timed iterations",
                          plan.world_size * local_gpus, plan.world_size, plan.world_size == 1 ? "" : "s", local_gpus,
                          local_gpus == 1 ? "" : "s", format_bytes(plan.bytes), plan.warmup, plan.iters));
  const AllReduceResult res = run_allreduce(
      {nccl_id, plan.rank, plan.world_size, local_gpus, plan.bytes, plan.warmup, plan.iters, plan.timeout});
  auto& s = report.summary;
  s["nccl_version"] = res.nccl_version;
  s["nccl_ranks"] = res.nranks;
  s["bytes"] = plan.bytes;
  s["iters"] = plan.iters;
  if (res.code != kOk) return report.finish(res.code, {res.error});
  const Bandwidth bw = allreduce_bandwidth(plan.bytes, res.seconds_per_iter, res.nranks);
  report.line(fmt::format("all-reduce: {:.1f} us per iteration, algbw {:.2f} GB/s, busbw {:.2f} GB/s (NCCL {})",
                          res.seconds_per_iter * 1e6, bw.algbw_gbps, bw.busbw_gbps, res.nccl_version));
  s["time_us"] = std::round(res.seconds_per_iter * 1e7) / 10;
  s["algbw_gbps"] = std::round(bw.algbw_gbps * 100) / 100;
  s["busbw_gbps"] = std::round(bw.busbw_gbps * 100) / 100;
  return report.finish(kOk);
}

}  // namespace

int run(const Plan& plan, const Env& env, std::ostream& out, std::ostream& err) {
  Report report(plan, out, err);
  report.line(fmt::format("preflight: rank {} of {}{}", plan.rank, plan.world_size,
                          plan.expect_gpus == 0  ? ", CPU only: rendezvous check"
                          : plan.expect_gpus > 0 ? fmt::format(", expecting {} GPUs", plan.expect_gpus)
                                                 : ""));
  int local_gpus = 0;
  if (plan.expect_gpus != 0)
    if (auto code = check_gpus(plan, env, report, local_gpus)) return *code;

  std::string nccl_id;
  if (plan.expect_gpus != 0 && plan.rank == 0) {
    std::string error;
    nccl_id = new_nccl_id(error);
    if (nccl_id.empty()) return report.finish(kFailed, {error});
  }
  std::vector<int> gpus_by_rank{local_gpus};
  if (plan.world_size > 1) {
    const auto t0 = Clock::now();
    RendezvousResult rv = meet(plan, local_gpus, nccl_id, report);
    if (rv.code != kOk) {
      if (!rv.missing.empty()) report.summary["missing_ranks"] = rv.missing;
      return report.finish(rv.code, {rv.error});
    }
    const double seconds = std::chrono::duration<double>(Clock::now() - t0).count();
    report.summary["rendezvous_seconds"] = std::round(seconds * 1000) / 1000;
    report.line(fmt::format("rendezvous: all {} ranks joined in {:.1f}s", plan.world_size, seconds));
    nccl_id = std::move(rv.payload);
    gpus_by_rank = std::move(rv.local_gpus);
  }
  if (plan.expect_gpus == 0) return report.finish(kOk);

  if (std::any_of(gpus_by_rank.begin(), gpus_by_rank.end(), [&](int n) { return n != local_gpus; })) {
    std::vector<std::string> counts;
    for (std::size_t r = 0; r < gpus_by_rank.size(); ++r) counts.push_back(fmt::format("rank {}: {}", r, gpus_by_rank[r]));
    return report.finish(kFailed, {fmt::format("the pods drive different numbers of GPUs ({}); NCCL needs the same "
                                               "count on every pod: pass --expect-gpus",
                                               fmt::join(counts, ", "))});
  }
  return all_reduce(plan, local_gpus, nccl_id, report);
}

}  // namespace trainrt::preflight
