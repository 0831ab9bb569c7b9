// How pools get their nodes: a capacity ladder (spec `capacity`) and the queued provisioning it
// may hold, refused where GKE or Kueue would refuse it or could never give the nodes.
#include <algorithm>
#include <map>
#include <set>

#include <fmt/format.h>

#include "base/data_path.h"
#include "checks/checks.h"
#include "model/catalog.h"

namespace trainc {
namespace {

constexpr int kMaxRunSeconds = 7 * 24 * 3600;  // GKE's queued provisioning and flex-start: at most 7 days

/// The pods of long-lived workloads placed on `pool` (services, compute clusters; with
/// `per_job_too`, also Ray clusters made per job): Kueue does not admit them, so it picks no rung
/// for them and asks no queued nodes.
std::vector<std::string> long_lived_on(const System& sys, const std::string& pool, bool per_job_too = true) {
  std::vector<std::string> out;
  for (const auto& [name, s] : sys.services)
    if (s.pool == pool) out.push_back(fmt::format("service '{}'", name));
  for (const auto& [name, c] : sys.clusters) {
    if (c.per_job() && !per_job_too) continue;
    if (c.lead().pool == pool) out.push_back(fmt::format("the {} of cluster '{}'", c.lead_name(), name));
    for (const auto& g : c.workers)
      if (g.pool == pool) out.push_back(fmt::format("workers '{}' of cluster '{}'", g.name, name));
  }
  return out;
}

/// A rung (or a pool's one provisioning, at `ptr`) the machine is not offered with. `implicit`: the
/// pool wrote no `provisioning`, so it asks for standard (on-demand) nodes without saying so.
void check_offered(const Pool& pool, const std::string& provisioning, const std::string& ptr, const Document& doc,
                   Diagnostics& diags, bool implicit = false) {
  const MachineType* m = catalog().machine(pool.machine);
  if (!m || m->capacity.empty()) return;
  if (std::find(m->capacity.begin(), m->capacity.end(), provisioning) != m->capacity.end()) return;
  std::string offered;
  for (const auto& c : m->capacity) offered += (offered.empty() ? "" : ", ") + c;
  const std::string ways = m->capacity.size() > 1 ? ", or a ladder of them (`capacity`)" : "";
  if (implicit)
    doc.error(diags, ptr,
              fmt::format("{} is not offered on demand, and a pool without `provisioning` asks for standard, "
                          "on-demand nodes: Compute Engine gives it by {} ({}); say which, e.g. provisioning: {}{}",
                          m->type, offered, m->capacity_source, m->capacity.front(), ways),
              Anchor::key);
  else
    doc.error(diags, ptr,
              fmt::format("{} is not offered as {} capacity: Compute Engine gives it by {} ({}); use one of those{}",
                          m->type, provisioning, offered, m->capacity_source, ways));
}

void check_rung(const Pool& pool, const Rung& r, const Document& doc, Diagnostics& diags) {
  if (r.provisioning == "reservation" && r.reservation.empty())
    doc.error(diags, r.ptr, "a reservation rung needs `reservation`, the name of the reservation to consume");
  if (r.provisioning != "reservation" && !r.reservation.empty())
    doc.error(diags, ptr_key(r.ptr, "reservation"),
              fmt::format("a {} rung cannot consume a reservation: GKE consumes one only with nodes of the "
                          "reservation's own provisioning model (--reservation-affinity=specific), and {} nodes are "
                          "made with --reservation-affinity=none; drop `provisioning` to make this a reservation rung",
                          r.provisioning, r.provisioning));
  if (r.reservation.empty())
    for (const auto& [key, value] : {std::pair{"project", r.project}, {"block", r.block}, {"subBlock", r.sub_block}})
      if (!value.empty())
        doc.error(diags, ptr_key(r.ptr, key), fmt::format("`{}` names part of a reservation; this rung has none", key));
  if (!r.sub_block.empty() && r.block.empty())
    doc.error(diags, ptr_key(r.ptr, "subBlock"), "`subBlock` is a sub-block of a `block`: name the block too");
  if (r.max_run_seconds > 0 && r.provisioning != "queued")
    doc.error(diags, ptr_key(r.ptr, "maxRunDuration"),
              fmt::format("`maxRunDuration` is what a queued rung asks GKE for its nodes; this rung is {}", r.provisioning));
  if (r.max_run_seconds > kMaxRunSeconds)
    doc.error(diags, ptr_key(r.ptr, "maxRunDuration"),
              "GKE keeps queued nodes at most 7 days (maxRunDurationSeconds 604800; "
              "cloud.google.com/kubernetes-engine/docs/how-to/provisioningrequest)");
  check_offered(pool, r.provisioning, r.ptr, doc, diags);
}

void check_ladder(const System& sys, const Pool& pool, const Document& doc, Diagnostics& diags) {
  const std::string cptr = ptr_key(pool.ptr, "capacity");
  if (!sys.queue)
    doc.error(diags, cptr,
              "a capacity ladder needs `queue`: Kueue picks each step's rung, admitting it on the first whose quota "
              "has room; add e.g. queue: {name: team-a}",
              Anchor::key);
  if (pool.tpu && pool.tpu->slices > 1)
    doc.error(diags, cptr,
              fmt::format("pool '{}' is {} TPU slices, and trainc does not yet make a ladder of multislice node "
                          "pools; give each rung a pool of its own",
                          pool.name, pool.tpu->slices),
              Anchor::key);
  if (pool.placement.level.size() && !pool.placement.ptr.empty())
    doc.error(diags, pool.placement.ptr,
              "a laddered pool has no topology-aware placement: its rungs after the first start with no nodes, and "
              "Kueue places by topology only on nodes that exist; remove `placement` (or `capacity`)",
              Anchor::key);
  if (const auto pods = long_lived_on(sys, pool.name); !pods.empty())
    doc.error(diags, cptr,
              fmt::format("a capacity ladder is for steps: Kueue picks the rung of each step it admits, and it does "
                          "not admit {}, placed on pool '{}'; give {} a pool of one `provisioning`",
                          pods.front(), pool.name, pods.size() > 1 ? "them" : "it"),
              Anchor::key);
  std::map<std::string, const Rung*> kinds, reservations;
  for (const Rung& r : pool.ladder) {
    check_rung(pool, r, doc, diags);
    if (r.provisioning == "reservation") {
      if (r.reservation.empty()) continue;
      auto [it, fresh] = reservations.emplace(r.reservation_path(), &r);
      if (!fresh)
        doc.error(diags, r.ptr, fmt::format("reservation {} is a rung already", r.reservation_path()), Anchor::value,
                  {doc.note(it->second->ptr, "first here")});
      continue;
    }
    auto [it, fresh] = kinds.emplace(r.provisioning, &r);
    if (!fresh)
      doc.error(diags, r.ptr,
                fmt::format("{} is a rung already: a ladder tries each way once (only reservations may repeat)",
                            r.provisioning),
                Anchor::value, {doc.note(it->second->ptr, "first here")});
  }
}

}  // namespace

void check_capacity(const System& sys, const Document& doc, Diagnostics& diags) {
  std::map<std::string, std::string> node_pools;  // GKE node pool -> the pool that makes it
  for (const auto& [name, pool] : sys.pools) node_pools.emplace(name, name);
  for (const auto& [name, pool] : sys.pools) {
    if (pool.laddered()) {
      check_ladder(sys, pool, doc, diags);
      for (const auto& np : pool.node_pools())
        if (auto [it, fresh] = node_pools.emplace(np, name); !fresh)
          doc.error(diags, ptr_key(pool.ptr, "capacity"),
                    fmt::format("a rung's GKE node pool would be named {}, as pool '{}' is; rename one of the pools",
                                np, it->second),
                    Anchor::key);
      continue;
    }
    if (pool.provisioning_set)
      check_offered(pool, pool.provisioning, ptr_key(pool.ptr, "provisioning"), doc, diags);
    else
      check_offered(pool, pool.provisioning, ptr_key(pool.ptr, "machine"), doc, diags, true);
    if (pool.provisioning == "queued" && !sys.queue)
      doc.error(diags, ptr_key(pool.ptr, "provisioning"),
                "queued provisioning is asked for by Kueue: it sends GKE a ProvisioningRequest for a step's nodes when "
                "it would admit the step; add e.g. queue: {name: team-a}");
    if (pool.provisioning == "queued")
      if (const auto pods = long_lived_on(sys, pool.name, false); !pods.empty())
        doc.error(diags, ptr_key(pool.ptr, "provisioning"),
                  fmt::format("queued nodes are asked for by Kueue when it admits a step, and it does not admit {}, "
                              "placed on pool '{}': its pods would wait for nodes no one asks for; give {} a pool "
                              "of another `provisioning`",
                              pods.front(), pool.name, pods.size() > 1 ? "them" : "it"));
    if (pool.provisioning == "queued" && pool.placement.required)
      doc.warning(diags, pool.placement.ptr,
                  "GKE's autoscaler provisions a queued request without regard to topology, so a required placement "
                  "may not fit the nodes it makes: the request's booking then expires and the step is queued again "
                  "(kubernetes-sigs/kueue#5078); prefer the level (required: false)");
  }
}

}  // namespace trainc
