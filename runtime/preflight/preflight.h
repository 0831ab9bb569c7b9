#pragma once
// `trainrt preflight`, step by step, in this order:
//   1. this pod's GPUs: count and describe them, compare with --expect-gpus  → exit 3 (kNoGpu)
//   2. the rendezvous: rank 0 hands out the ncclUniqueId over TCP             → exit 4 (kRankTimeout)
//   3. NCCL: one communicator per GPU of every pod, a checked, timed all-reduce → exit 1 (or 4 on a stall)
// The GPU check comes first so a pod without GPUs fails in seconds with the real cause; its peers
// then report it by rank as missing. --expect-gpus 0 (a CPU pod) runs only step 2, which checks
// that every rank can reach rank 0 — and lets the rendezvous be tested on machines without a GPU.
#include <cstdint>
#include <functional>
#include <optional>
#include <ostream>
#include <string>
#include <variant>
#include <vector>

#include "preflight/gpu.h"
#include "preflight/rendezvous.h"

namespace trainrt::preflight {

/// The flags as given; unset ones fall back to the environment in resolve().
struct Options {
  int expect_gpus = -1;  ///< -1: at least one, use all visible; 0: CPU pod, rendezvous only
  std::optional<int> rank, world_size;
  std::string coordinator;  ///< HOST:PORT
  std::string bytes = "256MiB";
  int iters = 20, warmup = 5;
  double timeout_seconds = 120;
};

/// What run() does, every value checked.
struct Plan {
  int expect_gpus = -1;
  int rank = 0, world_size = 1;
  std::optional<Endpoint> coordinator;  ///< set when world_size > 1
  std::uint64_t bytes = 256u << 20;
  int iters = 20, warmup = 5;
  Millis timeout{120'000};
};

/// Reads an environment variable; nullptr when unset (std::getenv, or a map in tests).
using Env = std::function<const char*(const char*)>;

/// Flags first, then RANK, WORLD_SIZE, and MASTER_ADDR + MASTER_PORT (what torchrun and the
/// generated Jobs set). Without either, a single pod: rank 0 of 1. A string is a usage error.
std::variant<Plan, std::string> resolve(const Options& options, const Env& env);

/// What the pod shows about its GPUs besides CUDA's answer: device nodes, driver library, env.
struct HostFacts {
  std::vector<std::string> device_nodes;  ///< /dev/nvidia0, /dev/nvidia1, ...
  bool driver_library = false;            ///< libcuda.so.1 loads
  std::string driver_library_error;
  std::optional<std::string> nvidia_visible_devices, cuda_visible_devices;
};
HostFacts host_facts(const Env& env);

/// The lines explaining why the pod has no usable GPU: what CUDA said, what was found, what to check.
/// Empty when `inventory` satisfies `expect_gpus`.
std::vector<std::string> gpu_problem(const GpuInventory& inventory, int expect_gpus, const HostFacts& facts);

/// Runs the plan, printing progress and a final JSON summary line to `out` and problems to `err`.
/// Returns the exit code.
int run(const Plan& plan, const Env& env, std::ostream& out, std::ostream& err);

}  // namespace trainrt::preflight
