#include <fmt/format.h>

#include "base/data_path.h"
#include "base/units.h"
#include "checks/checks.h"
#include "model/catalog.h"

namespace trainc {
namespace {

void check_tpu_fit(const Step& step, const Pool& pool, const Document& doc, Diagnostics& diags) {
  if (step.gpus > 0)
    doc.error(diags, ptr_key(step.ptr, "gpus"),
              fmt::format("step '{}' asks for GPUs on pool '{}', a TPU {} slice; set gpus: 0", step.name, pool.name,
                          pool.tpu->topology));
  if (step.slices > pool.tpu->slices)
    doc.error(diags, ptr_key(step.ptr, "slices"),
              fmt::format("step '{}' spans {} slices ({} hosts) but pool '{}' is {} slice(s) of {} host(s); set the "
                          "pool's tpu.slices to {} or lower the step's",
                          step.name, step.slices, step.slices * pool.tpu->hosts, pool.name, pool.tpu->slices,
                          pool.tpu->hosts, step.slices),
              Anchor::value, {doc.note(ptr_key(pool.ptr, "tpu"), fmt::format("pool '{}' slices", pool.name), Anchor::key)});
  const int hosts = pool.tpu->hosts;
  // One pod per host of one slice: more pods would span slices that share no ICI (use `slices`).
  if (hosts > 0 && step.nodes != hosts)
    doc.error(diags, ptr_key(step.ptr, "nodes"),
              fmt::format("a TPU {} slice is {} host(s) and runs one pod per host, so step '{}' needs nodes: {}, not {}",
                          pool.tpu->topology, hosts, step.name, hosts, step.nodes),
              Anchor::value, {doc.note(ptr_key(pool.ptr, "tpu"), fmt::format("pool '{}' slice", pool.name), Anchor::key)});
}

/// CPU and memory requests must fit what a node leaves for pods, less the GCS FUSE sidecar.
void check_allocatable(const Step& step, const Pool& pool, const Document& doc, Diagnostics& diags) {
  if (pool.vcpus == 0) return;  // unknown machine, reported by lowering
  const auto& sidecar = catalog().gcsfuse_sidecar();
  const bool fuse = !step.mounts.empty();
  struct Resource {
    const char* key;
    double available, sidecar, slack;  // slack: a request of exactly the room, printed rounded, fits
    std::string unit(double v) const {
      return std::string(key) == "cpu" ? fmt::format("{:.2f} cores", v) : fmt::format("{:.2f}Gi", v / (1 << 30));
    }
  };
  const Resource resources[] = {
      {"cpu", pool.room_cpu(), fuse ? sidecar.cores : 0, 1e-9},
      {"memory", pool.room_memory(), fuse ? sidecar.bytes : 0, 0.5},
  };
  for (const auto& r : resources) {
    auto it = step.resources.requests.find(r.key);
    if (it == step.resources.requests.end()) continue;
    auto want = parse_quantity(it->second);
    if (!want || *want + r.sidecar <= r.available + r.slack) continue;
    doc.error(diags, ptr_key(ptr_key(ptr_key(step.ptr, "resources"), "requests"), r.key),
              fmt::format("{} request {} does not fit a node of pool '{}': {} leaves {} for pods after GKE's "
                          "reserve and its DaemonSets{}; the pod would stay Pending. Request at most {}",
                          r.key, it->second, pool.name, pool.machine, r.unit(r.available),
                          fuse ? fmt::format(", less {} for the GCS FUSE sidecar", r.unit(r.sidecar)) : "",
                          r.unit(r.available - r.sidecar)));
  }
}

void check_pool_fit(const Step& step, const Pool& pool, const Document& doc, Diagnostics& diags) {
  check_allocatable(step, pool, doc, diags);
  if (pool.tpu) {
    check_tpu_fit(step, pool, doc, diags);
    return;
  }
  const std::string gpus_ptr = ptr_key(step.ptr, "gpus");
  const int per_node = pool.accelerator ? pool.accelerator->count : 0;
  if (step.gpus > 0 && !pool.accelerator) {
    doc.error(diags, gpus_ptr,
              fmt::format("step '{}' asks for {} GPU(s) but pool '{}' has no accelerator; add 'accelerator' to the "
                          "pool or set gpus: 0",
                          step.name, step.gpus, pool.name),
              Anchor::value, {doc.note(pool.ptr, fmt::format("pool '{}' declared here", pool.name), Anchor::key)});
    return;
  }
  if (step.gpus > per_node) {
    doc.error(diags, gpus_ptr,
              fmt::format("step '{}' asks for {} GPUs per pod but a node of pool '{}' has {}; use gpus: {} and more "
                          "nodes, or a pool with bigger machines",
                          step.name, step.gpus, pool.name, per_node, per_node),
              Anchor::value,
              {doc.note(ptr_key(pool.ptr, "accelerator"), fmt::format("{} x {} per node", per_node, pool.accelerator->type))});
    return;
  }
}

void check_shm(const Step& step, const Document& doc, Diagnostics& diags) {
  auto limit_it = step.resources.limits.find("memory");
  if (limit_it == step.resources.limits.end()) return;
  auto shm = parse_quantity(step.shm);
  auto limit = parse_quantity(limit_it->second);
  if (!shm || !limit || *shm < *limit) return;
  const bool explicit_shm = doc.root.contains(nlohmann::json::json_pointer(ptr_key(step.ptr, "shm")));
  doc.error(diags, explicit_shm ? ptr_key(step.ptr, "shm") : ptr_key(ptr_key(ptr_key(step.ptr, "resources"), "limits"), "memory"),
            fmt::format("/dev/shm of {}{} is memory the pod uses, and it does not fit the memory limit of {}; "
                        "lower 'shm' or raise the limit",
                        step.shm, explicit_shm ? "" : " (the default: 2Gi per GPU)", limit_it->second),
            Anchor::value);
}

}  // namespace

/// A GPU step without a pool lands on any GPU node: some declared pool must hold it.
void check_unplaced(const System& sys, const Step& step, const Document& doc, Diagnostics& diags) {
  if (sys.pools.empty() || step.gpus == 0) return;
  for (const auto& [_, pool] : sys.pools)
    if (pool.accelerator && pool.accelerator->count >= step.gpus) return;
  doc.error(diags, ptr_key(step.ptr, "gpus"),
            fmt::format("step '{}' asks for {} GPU(s) per pod, and no pool in cluster.pools has nodes with that many; "
                        "the pod would stay Pending: add a GPU pool and set 'pool'",
                        step.name, step.gpus));
}

/// With a queue, Kueue admits a step only when all of its pods fit one flavor's quota at once; a
/// step larger than every pool it may run on would wait forever.
void check_queue_fit(const System& sys, const Step& step, const Document& doc, Diagnostics& diags) {
  if (!sys.queue || sys.pools.empty() || !step.cluster.empty()) return;
  const long long pods = static_cast<long long>(step.nodes) * step.slices;
  const double cpu = step.resources.requested("cpu") * static_cast<double>(pods);
  const double memory = step.resources.requested("memory") * static_cast<double>(pods);
  const long long gpus = pods * step.gpus;
  std::string largest;
  for (const auto& [name, pool] : sys.pools) {
    if (!step.pool.empty() && name != step.pool) continue;
    const PoolCapacity c = queue_capacity(sys, pool);
    const long long chips = pool.tpu ? pods * pool.tpu->chips_per_host : 0;
    if (cpu <= c.cpu + 1e-9 && memory <= c.memory && gpus <= c.gpus && chips <= c.tpu_chips) return;
    largest = name;
  }
  if (largest.empty()) return;  // unknown pool, reported by lowering
  doc.error(diags, step.pool.empty() ? step.ptr : ptr_key(step.ptr, "pool"),
            fmt::format("step '{}' needs {} pod(s){}{} at once, more than queue '{}' holds for {} (less what services "
                        "and clusters there take): Kueue admits a step whole or not at all, so it would wait forever; "
                        "lower 'nodes' or grow the pool",
                        step.name, pods, gpus ? fmt::format(" with {} GPUs", gpus) : "",
                        cpu > 0 ? fmt::format(" and {:.2f} CPU", cpu) : "", sys.queue->name,
                        step.pool.empty() ? "any single pool" : fmt::format("pool '{}'", step.pool)),
            step.pool.empty() ? Anchor::key : Anchor::value, {doc.note(sys.queue->ptr, "the queue is turned on here", Anchor::key)});
}

void check_resources(const System& sys, const Document& doc, Diagnostics& diags) {
  for (const auto& step : sys.steps) {
    check_queue_fit(sys, step, doc, diags);
    if (const Pool* pool = sys.pool(step.pool)) check_pool_fit(step, *pool, doc, diags);
    else check_unplaced(sys, step, doc, diags);
    if (step.procs_per_node > step.gpus && step.gpus > 0)
      doc.error(diags, ptr_key(step.ptr, "procsPerNode"),
                fmt::format("{} processes per node share {} GPU(s); torchrun gives each process one GPU: use "
                            "procsPerNode: {}",
                            step.procs_per_node, step.gpus, step.gpus));
    check_shm(step, doc, diags);
    for (const auto& [key, value] : step.resources.requests) {
      auto lim = step.resources.limits.find(key);
      auto r = parse_quantity(value);
      if (lim == step.resources.limits.end() || !r) continue;
      auto l = parse_quantity(lim->second);
      if (l && *r > *l)
        doc.error(diags, ptr_key(ptr_key(ptr_key(step.ptr, "resources"), "requests"), key),
                  fmt::format("{} request {} is above its limit {}; Kubernetes rejects the pod", key, value, lim->second));
    }
  }
}

}  // namespace trainc
