// Long-lived compute clusters: their pods fit the pools they are placed on, their buckets have an
// identity, and steps on a cluster use only what their engine can run.
#include <fmt/format.h>

#include "base/data_path.h"
#include "base/overloaded.h"
#include "checks/checks.h"
#include "model/catalog.h"

namespace trainc {
namespace {

/// Cores and bytes a node of `pool` leaves for one pod of the cluster.
std::pair<double, double> room(const Pool& pool, bool fuse) {
  const auto& sidecar = catalog().gcsfuse_sidecar();
  return {pool.room_cpu() - (fuse ? sidecar.cores : 0), pool.room_memory() - (fuse ? sidecar.bytes : 0)};
}

/// Whether the group's CPU and memory requests fit a node of `pool`.
bool fits(const PodGroup& g, const Pool& pool, bool fuse) {
  if (pool.vcpus == 0) return true;  // unknown machine, reported by lowering
  auto [cpu, mem] = room(pool, fuse);
  return g.resources.requested("cpu") <= cpu + 1e-9 && g.resources.requested("memory") <= mem;
}

std::string what(const ComputeCluster& c, const PodGroup& g, bool lead) {
  return lead ? fmt::format("the {} of cluster '{}'", g.name, c.name)
              : fmt::format("worker group '{}' of cluster '{}'", g.name, c.name);
}

void check_group(const System& sys, const ComputeCluster& c, const PodGroup& g, bool lead, const Document& doc,
                 Diagnostics& diags) {
  const bool fuse = !c.mounts.empty();
  const Pool* pool = sys.pool(g.pool);
  if (!pool) {
    if (!g.pool.empty() || sys.pools.empty()) return;  // unknown pool: reported by lowering
    for (const auto& [_, p] : sys.pools)
      if ((g.gpus == 0 || (p.accelerator && p.accelerator->count >= g.gpus)) && fits(g, p, fuse)) return;
    doc.error(diags, g.ptr,
              fmt::format("no pool in cluster.pools can hold {} ({} CPU, {} memory{}); its pod would stay Pending: "
                          "set 'pool' and size its 'resources' to fit",
                          what(c, g, lead), g.resources.requests.at("cpu"), g.resources.requests.at("memory"),
                          g.gpus ? fmt::format(", {} GPUs", g.gpus) : ""),
              Anchor::key);
    return;
  }
  const std::string gpus_ptr = ptr_key(g.ptr, "gpus");
  const int per_node = pool->accelerator ? pool->accelerator->count : 0;
  if (g.gpus > per_node) {
    doc.error(diags, gpus_ptr,
              per_node == 0 ? fmt::format("{} asks for {} GPU(s) but pool '{}' has no accelerator; set gpus: 0 or "
                                          "place it on a GPU pool",
                                          what(c, g, lead), g.gpus, pool->name)
                            : fmt::format("{} asks for {} GPUs per pod but a node of pool '{}' ({}) has {}; use gpus: {}",
                                          what(c, g, lead), g.gpus, pool->name, pool->machine, per_node, per_node),
              Anchor::value, {doc.note(pool->ptr, fmt::format("pool '{}' declared here", pool->name), Anchor::key)});
    return;
  }
  if (!fits(g, *pool, fuse)) {
    auto [cpu, mem] = room(*pool, fuse);
    doc.error(diags, g.ptr,
              fmt::format("{} asks for {} CPU and {} memory, but a node of pool '{}' ({}) leaves {:.2f} cores and "
                          "{:.2f}Gi for pods{}; its pods would stay Pending",
                          what(c, g, lead), g.resources.requests.count("cpu") ? g.resources.requests.at("cpu") : "no",
                          g.resources.requests.count("memory") ? g.resources.requests.at("memory") : "no", pool->name,
                          pool->machine, cpu, mem / (1 << 30), fuse ? " after the GCS FUSE sidecar" : ""),
              Anchor::key);
  }
}

/// A RayJob runs the step's command in the cluster's pods: what a Job's pod would carry does not apply.
void check_ray_step(const Step& step, const ComputeCluster& c, const Document& doc, Diagnostics& diags) {
  if (!step.command_line()) {
    doc.error(diags, ptr_key(step.ptr, step.kind()),
              fmt::format("step '{}' runs on Ray cluster '{}', which runs a command as a RayJob; write the launcher "
                          "as 'command' (e.g. [python, train.py])",
                          step.name, c.name),
              Anchor::key);
  }
  auto misplaced = [&](bool set, const char* key, const char* instead) {
    if (set)
      doc.error(diags, ptr_key(step.ptr, key),
                fmt::format("step '{}' is a RayJob on cluster '{}', which runs in the cluster's pods: '{}' does not "
                            "apply to it; {}",
                            step.name, c.name, key, instead),
                Anchor::key);
  };
  misplaced(!step.pool.empty(), "pool", "place the cluster's head and workers instead");
  misplaced(!step.mounts.empty(), "mounts", fmt::format("mount buckets under clusters.{}.mounts", c.name).c_str());
  misplaced(!step.inputs.empty(), "inputs", "read the data from the cluster's mounts");
  misplaced(step.outputs.has_value(), "outputs", "write results to the cluster's mounts");
  misplaced(step.checkpoints.has_value(), "checkpoints", "write checkpoints to the cluster's mounts");
  misplaced(!step.resources.requests.empty() || !step.resources.limits.empty(), "resources",
            "size the cluster's worker groups");
  // What ends an attempt of a step (model/failure.h) is judged on the step's own pods: a Job's
  // podFailurePolicy reads its container's exit code, and the liveness probe its heartbeat. A
  // RayJob has neither: KubeRay judges the Ray job's status, and retries it (backoffLimit, a job
  // that brings its own cluster only) whatever the entrypoint exited with.
  if (written(doc, ptr_key(step.ptr, "noRetryExitCodes")))
    doc.error(diags, ptr_key(step.ptr, "noRetryExitCodes"),
              c.per_job()
                  ? fmt::format("step '{}' is a RayJob on Ray cluster '{}', which has no pod failure policy: KubeRay "
                                "retries a failed job up to its 'retries' whatever its entrypoint exited with, so "
                                "'noRetryExitCodes' would be ignored; remove it, and set 'retries: 0' if no failure "
                                "should be retried",
                                step.name, c.name)
                  : fmt::format("step '{}' is a RayJob on the long-lived Ray cluster '{}', which has no pod failure "
                                "policy and retries no job: 'noRetryExitCodes' would be ignored; remove it (the job "
                                "already fails at its first failure)",
                                step.name, c.name),
              Anchor::key, {doc.note(ptr_key(step.ptr, "cluster"), "the cluster is named here")});
  if (written(doc, ptr_key(step.ptr, "heartbeat")))
    doc.error(diags, ptr_key(step.ptr, "heartbeat"),
              fmt::format("step '{}' is a RayJob on Ray cluster '{}': its entrypoint runs in the cluster's pods, "
                          "which have no liveness probe of the step's, so 'heartbeat' would be ignored; remove it, "
                          "and bound the job with 'timeout' (the RayJob's activeDeadlineSeconds)",
                          step.name, c.name),
              Anchor::key, {doc.note(ptr_key(step.ptr, "cluster"), "the cluster is named here")});
  // KubeRay (v1.6 on; ray-operator/controllers/ray/utils/validation.go, ValidateRayJobSpec) marks a
  // RayJob with clusterSelector and backoffLimit > 0 ValidationFailed: a retry would make a new
  // cluster, and a job on a long-lived one has none to make.
  const std::string retries = ptr_key(step.ptr, "retries");
  if (!c.per_job() && written(doc, retries) && step.retries > 0)
    doc.error(diags, retries,
              fmt::format("step '{}' is submitted to the long-lived Ray cluster '{}' (a RayJob with clusterSelector), "
                          "which KubeRay does not retry: it refuses backoffLimit {} there (\"BackoffLimit is "
                          "incompatible with ClusterSelector mode\"); remove 'retries', or give the cluster "
                          "'perJob: true' so each run brings its own cluster",
                          step.name, c.name, step.retries),
              Anchor::key);
}

}  // namespace

void check_clusters(const System& sys, const Document& doc, Diagnostics& diags) {
  for (const auto& entry : sys.clusters) {
    // Named, not structured bindings: lambdas below use them, which clang before 16 refuses.
    const auto& name = entry.first;
    const auto& c = entry.second;
    if (!c.mounts.empty() && sys.pod_service_account().empty())
      doc.error(diags, ptr_key(c.ptr, "mounts"),
                "GCS mounts need an identity the bucket trusts: add 'identity' (a service account bound with "
                "Workload Identity) or 'serviceAccount'",
                Anchor::key);
    check_group(sys, c, c.lead(), true, doc, diags);
    match(
        c.engine,
        [&](const Ray& r) {
          // Kueue's RayJob webhook refuses a queued job whose own cluster autoscales: the quota it
          // admits must be the pods the job will have.
          if (!sys.queue || !r.per_job) return;
          for (const auto& g : c.workers)
            if (g.autoscaled()) {
              doc.error(diags, ptr_key(g.ptr, "max"),
                        fmt::format("worker group '{}' of per-job Ray cluster '{}' autoscales ({} to {} pods), but with "
                                    "'queue' its RayJobs are admitted by Kueue, which refuses autoscaling RayJobs; "
                                    "set 'replicas' instead of min/max, or remove 'queue'",
                                    g.name, name, g.min, g.max),
                        Anchor::key, {doc.note(sys.queue->ptr, "the queue is turned on here", Anchor::key)});
              break;
            }
        },
        [&](const Dask&) {});
    for (const auto& g : c.workers) check_group(sys, c, g, false, doc, diags);
  }
  for (const auto& step : sys.steps) {
    const ComputeCluster* c = sys.compute_cluster(step.cluster);
    if (!c) continue;
    match(
        c->engine, [&](const Ray&) { check_ray_step(step, *c, doc, diags); },
        [&](const Dask&) {
          if (step.env.count("DASK_SCHEDULER_ADDRESS"))
            doc.error(diags, ptr_key(ptr_key(step.ptr, "env"), "DASK_SCHEDULER_ADDRESS"),
                      fmt::format("env 'DASK_SCHEDULER_ADDRESS' is set by trainc to the scheduler of cluster '{}'; remove it",
                                  c->name),
                      Anchor::key);
        });
  }
}

}  // namespace trainc
