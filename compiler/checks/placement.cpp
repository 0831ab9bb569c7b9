// Placement: every pod, as the cluster runs it (sidecars and operators' containers included),
// must find room on its pool's nodes at the pool's largest, next to the DaemonSets every node runs
// and the other pods that run at the same time (model/placement.h). A pod that finds none would
// stay Pending; the error names the pods, what they ask for, what the nodes leave, and the nodes
// the pool would need.
#include <fmt/format.h>

#include <cmath>
#include <map>
#include <set>

#include <nlohmann/json.hpp>

#include "base/data_path.h"
#include "base/embedded.h"
#include "checks/checks.h"
#include "model/catalog.h"
#include "model/placement.h"

namespace trainc {
namespace {

std::string gib(double bytes) { return fmt::format("{:.2f}Gi", bytes / (1 << 30)); }

std::string asks(double cores, double bytes, long long gpus, long long chips) {
  cores = std::abs(cores) < 5e-3 ? 0 : cores;  // a whole-node pod leaves rounding dust: no "-0.00"
  bytes = std::abs(bytes) < 5e6 ? 0 : bytes;
  std::string s = fmt::format("{:.2f} cores and {}", cores, gib(bytes));
  if (gpus > 0) s += fmt::format(", {} GPU(s)", gpus);
  if (chips > 0) s += fmt::format(", {} TPU chip(s)", chips);
  return s;
}

/// The most nodes a pool may have: the schema's bound on its `nodes` (GKE's, per node pool).
long long most_nodes() {
  static const long long most = [] {
    const auto schema = nlohmann::json::parse(find_embedded("schemas/trainc.v1.schema.json")->data);
    return schema["definitions"]["pool"]["properties"]["nodes"]["maximum"].get<long long>();
  }();
  return most;
}

std::string containers(const FinalPod& p) {
  std::string s;
  for (const auto& c : p.containers)
    if (!c.added_by.empty()) s += fmt::format("{}{} {} ({})", s.empty() ? "" : ", ", c.name, asks(c.cores, c.bytes, 0, 0), c.added_by);
  return s.empty() ? "" : " with " + s;
}

/// The workloads that share the phase's nodes, other than `self`: "dask/scheduler (1 pod), ...".
std::string neighbours(const Phase& phase, const std::string& self) {
  std::map<std::string, long long> count;
  for (const auto& n : phase.nodes)
    for (const auto& p : n.pods)
      if (p.workload != self) count[p.workload] += p.count * n.count;
  std::string s;
  for (const auto& [w, c] : count) s += fmt::format("{}{} ({} pod{})", s.empty() ? "" : ", ", w, c, c == 1 ? "" : "s");
  return s;
}

/// The room the best node has left for one more pod: the node closest to holding it.
std::string best_left(const PoolPlacement& pp, const Phase& phase) {
  const NodeLoad* best = nullptr;
  for (const auto& n : phase.nodes)
    if (!best || pp.room_cores - n.cores > pp.room_cores - best->cores) best = &n;
  if (!best) return "the pool has no nodes";
  std::string s = "the node with most room left has " + asks(pp.room_cores - best->cores, pp.room_bytes - best->bytes, 0, 0);
  if (pp.room_gpus > 0) s += fmt::format(", {} GPU(s)", pp.room_gpus - best->gpus);
  if (pp.room_chips > 0) s += fmt::format(", {} TPU chip(s)", pp.room_chips - best->chips);
  return s + fmt::format(" and room for {} more pod(s)", pp.room_pods - best->slots);
}

void report(const System& sys, const PoolPlacement& pp, const Phase& phase, const Document& doc, Diagnostics& diags) {
  std::set<std::string> done;
  const Pool& pool = *pp.pool;
  for (const auto& pod : phase.unplaced) {
    if (!done.insert(pod.workload).second) continue;
    long long missing = 0;
    for (const auto& p : phase.unplaced) missing += p.workload == pod.workload ? p.count : 0;
    // The nodes that would hold everything that runs at once on this pool.
    std::vector<FinalPod> all = phase.unplaced;
    for (const auto& n : phase.nodes)
      for (auto p : n.pods) {
        p.count *= n.count;
        all.push_back(std::move(p));
      }
    std::string fix;
    const bool slice = pool.tpu.has_value();
    if (slice) {
      fix = "use a larger slice or fewer pods";
    } else if (auto need = nodes_needed(pp, all, pp.nodes + pod_count(all)); need && *need > most_nodes()) {
      fix = fmt::format("no pool of {} holds it: it would take {} nodes, and a pool has at most {} (GKE's limit per "
                        "node pool); use bigger machines, ask for less, or spread the work over fewer pods",
                        pool.machine, *need, most_nodes());
    } else if (need && *need > pp.nodes) {
      fix = fmt::format("raise the pool's {} to {}", pool.autoscaling ? "autoscaling.max" : "nodes", *need);
    } else {
      fix = "use bigger machines or ask for less";
    }
    if (pod.gpus == 0 && pod.chips == 0)
      for (const auto& [name, other] : sys.pools)
        if (name != pool.name && !other.accelerator && !other.tpu && other.taints.empty() &&
            pod.cores() <= other.room_cpu() && pod.bytes() <= other.room_memory()) {
          fix += fmt::format(", or put it on pool '{}' (it asks for no accelerators)", name);
          break;
        }
    const std::string others = neighbours(phase, pod.workload);
    const std::string what = pod.kind.starts_with("step/") ? fmt::format("step '{}'", pod.workload)
                                                            : fmt::format("{} '{}'", pod.kind, pod.workload);
    doc.error(diags, pod.ptr,
              fmt::format("{} would stay Pending: {} of its {} pod(s) find no room on pool '{}' ({} node(s) of {} at "
                          "most, each leaving {} and {} of GKE's {} pods per node after GKE's reserve and its {}DaemonSets). A pod asks for "
                          "{}{}; {}{}. {}{} (`trainc plan` shows each node, and what would stay Pending)",
                          what, missing, pod.of, pool.name, pp.nodes, pool.machine,
                          asks(pp.room_cores, pp.room_bytes, pp.room_gpus, pp.room_chips), pp.room_pods,
                          catalog().pods_per_node(),
                          pool.reserve.daemonsets.empty() ? "" : fmt::format("{} ", pool.reserve.daemonsets.size()),
                          asks(pod.cores(), pod.bytes(), pod.gpus, pod.chips), containers(pod), best_left(pp, phase),
                          others.empty() ? "" : "; the pool also holds " + others,
                          phase.proven ? "Fix: " : "The search for a placement stopped before proving none exists. Fix: ",
                          fix),
              Anchor::key,
              {doc.note(pool.ptr, fmt::format("pool '{}' declared here", pool.name), Anchor::key)});
  }
}

}  // namespace

void check_placement(const System& sys, const Placement& placed, const Document& doc, Diagnostics& diags) {
  for (const auto& pp : placed.pools)
    for (const auto& phase : pp.phases) report(sys, pp, phase, doc, diags);
  std::set<std::string> done;
  for (const auto& [phase, pod] : placed.nowhere)
    if (!done.insert(pod.workload).second) {
      continue;
    } else if (pod.kind == "system") {
      doc.error(diags, "/cluster/pools",
                fmt::format("{} ({} pod(s) of {}) would stay Pending: it runs on untainted nodes without "
                            "accelerators, and none of this system's has room for it next to what is there first "
                            "(its DaemonSets and the other system pods); add a small CPU pool, e.g. system: "
                            "{{machine: e2-standard-4}}, or make room on one (`trainc plan` shows each node, and what would stay Pending)",
                            pod.workload, pod.of, asks(pod.cores(), pod.bytes(), 0, 0)),
                Anchor::key);
    } else
      doc.error(diags, pod.ptr,
                fmt::format("{} '{}' names no pool, and no pool whose taints it tolerates has room for a pod "
                            "that asks for {}; it would stay Pending: set 'pool'",
                            pod.kind, pod.workload, asks(pod.cores(), pod.bytes(), pod.gpus, pod.chips)),
                Anchor::key);
}

}  // namespace trainc
