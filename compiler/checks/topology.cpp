// Topology-aware placement (pools' `placement`): what Kueue's Topology-Aware Scheduling would
// leave waiting for ever. Kueue takes the annotations it is given without judging them against
// the Topology and the nodes; a workload asking for what cannot be had just stays pending. So a
// placement needs a queue and a machine GKE labels with its place; a pool placed by topology must
// have each queued workload's nodes even at its smallest, since Kueue counts only nodes that exist
// and the autoscaler adds none for a Job Kueue holds back; and a required placement must fit one
// domain of its level.
#include <fmt/format.h>

#include <map>

#include "base/data_path.h"
#include "checks/checks.h"
#include "model/catalog.h"
#include "model/placement.h"

namespace trainc {
namespace {

/// Whether `pods` fit `k` nodes of the pool, on their own.
bool fits_in(const PoolPlacement& pp, const std::vector<FinalPod>& pods, long long k) {
  return k <= 0 ? pods.empty() : nodes_needed(pp, pods, k, k).has_value();
}

void check_setting(const System& sys, const Pool& pool, const Document& doc, Diagnostics& diags) {
  const std::string& ptr = pool.placement.ptr;
  if (ptr.empty() || !pool.tas()) return;
  if (!sys.queue) {
    doc.error(diags, ptr,
              fmt::format("pool '{}' asks for topology-aware placement, which Kueue does: without `queue` no Kueue "
                          "is installed and nothing places the pods by topology; add `queue: {{}}` (every step then "
                          "waits for room for all of its pods) or remove `placement`",
                          pool.name),
              Anchor::key);
    return;
  }
  if (!pool.topology_labels)
    doc.error(diags, ptr,
              fmt::format("pool '{}' asks for placement by {}, but GKE labels nodes with their block, sub-block and "
                          "host only on {}, not {}: Kueue would find no such domain and no step on the pool would "
                          "ever be admitted; remove `placement` (or set `level: none`)",
                          pool.name, pool.placement.level, fmt::join(catalog().topology().machines, ", "), pool.machine),
              Anchor::key);
}

/// Why `pool` is not placed by topology, after "because".
std::string why_not_placed(const System& sys, const Pool* pool) {
  if (!pool) return "the step names no pool";
  if (!sys.queue) return "the system has no `queue`, and topology-aware placement is Kueue's";
  if (!pool->topology_labels)
    return fmt::format("GKE labels nodes with their block, sub-block and host only on {}, not {}",
                       fmt::join(catalog().topology().machines, ", "), pool->machine);
  if (!pool->placement.why_none.empty())
    return "it may have fewer nodes than its largest, and Kueue places by topology only on nodes that exist";
  return "its `placement` says `level: none`";
}

/// A step's own `placement` needs a pool placed by topology, whose flavor then names the Topology.
void check_step_setting(const System& sys, const Step& st, const Document& doc, Diagnostics& diags) {
  if (!st.placement) return;
  const Pool* pool = sys.pool(st.pool);
  if (pool && pool->tas() && sys.queue) return;
  doc.error(diags, st.placement->ptr,
            fmt::format("step '{}' asks for its own topology-aware placement, but {} is not placed by topology, "
                        "because {}; a step's `placement` only replaces its pool's: place the pool (its `placement`) "
                        "or remove the step's",
                        st.name, pool ? fmt::format("its pool '{}'", pool->name) : "it", why_not_placed(sys, pool)),
            Anchor::key);
}

/// One Kueue PodSet of a queued workload: its pods on one pool, and what it asks.
struct PodSet {
  std::string what;  ///< "step 'x'", "step 'x' (Ray group 'g')"
  const Pool* pool = nullptr;
  std::vector<FinalPod> pods;
  TopologyRequest asks;
  std::string asked_at;  ///< where its placement is written ("" for the catalog's default)
};

/// The PodSets of a step's queued workload: its Job's (a Dask client's too), or, for a RayJob that
/// brings its own cluster, the head's and each worker group's; none for a RayJob on a shared
/// cluster, which Kueue does not queue.
std::vector<PodSet> pod_sets(const System& sys, const Step& st) {
  std::vector<PodSet> out;
  const ComputeCluster* c = sys.compute_cluster(st.cluster);
  if (!c || c->steps_have_own_pods()) {
    const Pool* pool = sys.pool(st.pool);
    out.push_back({fmt::format("step '{}'", st.name), pool, step_pods(sys, st), topology_request(sys, st),
                   st.placement ? st.placement->ptr : pool ? pool->placement.ptr : ""});
    return out;
  }
  if (!c->per_job()) return out;
  const std::vector<FinalPod> all = long_lived_pods(sys);
  auto group = [&](const PodGroup& g, int pods) {
    PodSet set{fmt::format("step '{}' (Ray group '{}')", st.name, g.name), sys.pool(g.pool), {},
               topology_request(sys, sys.pool(g.pool), pods), ""};
    for (const auto& p : all)
      if (p.workload == c->name + "/" + g.name) set.pods.push_back(p);
    if (set.pool) set.asked_at = set.pool->placement.ptr;
    out.push_back(std::move(set));
  };
  group(c->lead(), 1);
  for (const auto& g : c->workers) group(g, g.replicas);
  return out;
}

}  // namespace

void check_topology_settings(const System& sys, const Document& doc, Diagnostics& diags) {
  for (const auto& [_, pool] : sys.pools) check_setting(sys, pool, doc, diags);
  for (const auto& st : sys.steps) check_step_setting(sys, st, doc, diags);
}

void check_topology(const System& sys, const Placement& placed, const Document& doc, Diagnostics& diags) {
  if (!sys.queue) return;
  for (const auto& st : sys.steps) {
    // Kueue admits a workload whole: its pods on one pool must all find nodes that exist.
    std::map<std::string, std::vector<FinalPod>> by_pool;
    const std::vector<PodSet> sets = pod_sets(sys, st);
    for (const auto& set : sets)
      if (set.pool && set.pool->tas()) by_pool[set.pool->name].insert(by_pool[set.pool->name].end(), set.pods.begin(), set.pods.end());
    for (const auto& [name, pods] : by_pool) {
      const Pool& pool = *sys.pool(name);
      const PoolPlacement* pp = placed.pool(name);
      const Pool::NodeRange range = pool.node_range();
      if (!pp || fits_in(*pp, pods, range.min)) continue;
      // Pods no size of the pool holds are the placement check's to report.
      const auto found = nodes_needed(*pp, pods, pp->nodes, range.min + 1);
      if (!found) continue;
      const long long need = *found;
      doc.error(diags, st.ptr,
                fmt::format("step '{}' would never start: pool '{}' is placed by topology ({}), and Kueue places only "
                            "on nodes that exist, while the pool may have {} node{} and the step needs {}; the "
                            "autoscaler adds nodes only for Pending pods, and Kueue creates none before it admits the "
                            "step. Fix: give the pool at least {} nodes at its smallest (`autoscaling.min`, or a fixed "
                            "`nodes`), or set its `placement: {{level: none}}`",
                            st.name, name, pool.placement.ptr.empty() ? "by default" : "as `placement` asks", range.min,
                            range.min == 1 ? "" : "s", need, need),
                Anchor::key,
                {doc.note(pool.placement.ptr.empty() ? pool.ptr : pool.placement.ptr,
                          fmt::format("pool '{}' placed by topology here", name), Anchor::key)});
    }
    // A required host: one machine of the labelled families is a whole host (8 GPUs, or A4X's
    // 4-GPU tray), so the PodSet's pods must fit one node. A block or sub-block holds as many
    // machines as the reservation's, which the spec does not say: the placement check already
    // holds the pods to the pool's size, and that is all trainc can know.
    for (const auto& set : sets) {
      if (set.asks.kind != TopologyRequest::Kind::kRequired || set.asks.level != "host" || !set.pool) continue;
      const PoolPlacement* pp = placed.pool(set.pool->name);
      if (!pp || set.pods.empty() || fits_in(*pp, set.pods, 1)) continue;
      doc.error(diags, set.pods.front().ptr,
                fmt::format("{} would never start: it requires all of its {} pods in one host "
                            "(kueue.x-k8s.io/podset-required-topology: {}), and a host of pool '{}' is one node of {}, "
                            "which does not hold them. Fix: fewer or smaller pods, a wider level, or `required: false` "
                            "to prefer one host and spread when it is full",
                            set.what, pod_count(set.pods), set.asks.label, set.pool->name, set.pool->machine),
                Anchor::key,
                {doc.note(set.asked_at.empty() ? set.pool->ptr : set.asked_at, "one host required here", Anchor::key)});
    }
  }
}

}  // namespace trainc
