// Topology-aware placement (pools' `placement`): what Kueue's Topology-Aware Scheduling would
// leave waiting for ever. Kueue takes the annotations it is given without judging them against
// the Topology and the nodes; a workload asking for what cannot be had just stays pending. So a
// placement needs a queue and a machine GKE labels with its place; a pool placed by topology must
// have each queued workload's nodes even at its smallest, since Kueue counts only nodes that exist
// and the autoscaler adds none for a Job Kueue holds back; and a required placement must fit one
// domain of its level.
#include <fmt/format.h>

#include "base/data_path.h"
#include "checks/checks.h"
#include "model/catalog.h"
#include "model/placement.h"

namespace trainc {
namespace {

/// Whether `pods` fit `k` nodes of the pool, on their own.
bool fits_in(const PoolPlacement& pp, const std::vector<FinalPod>& pods, int k) {
  if (k <= 0) return pods.empty();
  PoolPlacement p = pp;
  p.nodes = k;
  return nodes_needed(p, pods, k).has_value();
}

/// The fewest nodes of the pool that hold `pods` on their own, up to `limit`; 0 when none do.
int fewest_nodes(const PoolPlacement& pp, const std::vector<FinalPod>& pods, int limit) {
  for (int k = 1; k <= limit; ++k)
    if (fits_in(pp, pods, k)) return k;
  return 0;
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

}  // namespace

void check_topology(const System& sys, const Document& doc, Diagnostics& diags) {
  for (const auto& [_, pool] : sys.pools) check_setting(sys, pool, doc, diags);
  if (diags.has_errors() || !sys.queue) return;
  const Placement placed = place(sys);
  for (const auto& st : sys.steps) {
    const Pool* pool = sys.pool(st.pool);
    if (!pool || !pool->tas() || !st.cluster.empty()) continue;
    const PoolPlacement* pp = placed.pool(pool->name);
    const std::vector<FinalPod> pods = step_pods(sys, st);
    if (!pp || pods.empty()) continue;
    const std::string where = pool->placement.ptr.empty() ? pool->ptr : pool->placement.ptr;
    const std::string asked = pool->placement.ptr.empty() ? "by default" : "as `placement` asks";
    const Pool::NodeRange range = pool->node_range();
    const int need = fewest_nodes(*pp, pods, pp->nodes);
    if (need > 0 && range.min < need)
      doc.error(diags, st.ptr,
                fmt::format("step '{}' would never start: pool '{}' is placed by topology ({}), and Kueue places only "
                            "on nodes that exist, while the pool may have {} node{} and the step needs {}; the "
                            "autoscaler adds nodes only for Pending pods, and Kueue creates none before it admits the "
                            "step. Fix: give the pool at least {} nodes at its smallest (`autoscaling.min`, or a fixed "
                            "`nodes`), or set its `placement: {{level: none}}`",
                            st.name, pool->name, asked, range.min, range.min == 1 ? "" : "s", need, need),
                Anchor::key, {doc.note(where, fmt::format("pool '{}' placed by topology here", pool->name), Anchor::key)});
    const TopologyRequest r = topology_request(sys, pool, st.nodes * st.slices);
    if (r.kind != TopologyRequest::Kind::kRequired || need == 0) continue;
    // One host holds one machine of the labelled families (each is a whole 8-GPU host, or A4X's
    // 4-GPU tray); a block or sub-block holds at most the pool's nodes (their real size is the
    // reservation's, which the spec does not say).
    const int domain = r.level == "host" ? 1 : pp->nodes;
    if (need > domain)
      doc.error(diags, ptr_key(st.ptr, "nodes"),
                fmt::format("step '{}' would never start: pool '{}' requires all of a step's pods in one {} "
                            "(kueue.x-k8s.io/podset-required-topology: {}), which holds at most {} node{} of {}, and "
                            "the step's {} pods need {}. Fix: fewer or smaller pods, a wider level, or "
                            "`required: false` to prefer one {} and spread when it is full",
                            st.name, pool->name, r.level, r.label, domain, domain == 1 ? "" : "s", pool->machine,
                            pods.size(), need, r.level),
                Anchor::key, {doc.note(where, fmt::format("pool '{}' requires one {} here", pool->name, r.level), Anchor::key)});
  }
}

}  // namespace trainc
