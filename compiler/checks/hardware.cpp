#include <algorithm>

#include <fmt/format.h>

#include "base/data_path.h"
#include "base/spelling.h"
#include "checks/checks.h"
#include "model/catalog.h"

namespace trainc {
namespace {

using json = nlohmann::json;

std::string join(const std::vector<std::string>& items, std::string_view last_sep = " or ") {
  std::string out;
  for (size_t i = 0; i < items.size(); ++i)
    out += (i == 0 ? "" : i + 1 == items.size() ? std::string(last_sep) : ", ") + items[i];
  return out;
}

const json* spec_at(const Document& doc, const std::string& ptr) {
  json::json_pointer p(ptr);
  return doc.root.contains(p) ? &doc.root.at(p) : nullptr;
}

/// Machines in the catalog whose built-in GPUs are `accelerator`.
std::vector<std::string> machines_with(const std::string& accelerator) {
  std::vector<std::string> out;
  for (const auto& name : catalog().machine_names())
    if (catalog().machine(name)->accelerator == accelerator) out.push_back(name);
  return out;
}

void check_gpus(const Pool& pool, const MachineType& m, const Document& doc, Diagnostics& diags) {
  const std::string aptr = ptr_key(pool.ptr, "accelerator");
  const json* spec = spec_at(doc, aptr);
  if (!spec) return;
  const std::string type = (*spec)["type"];
  const int count = (*spec)["count"];
  if (m.gpus > 0) {
    if (type != m.accelerator || count != m.gpus)
      doc.error(diags, aptr,
                fmt::format("'{}' comes with {} x {}, not {} x {}; remove 'accelerator' (trainc takes it from the "
                            "hardware catalog)",
                            m.type, m.gpus, m.accelerator, count, type),
                Anchor::key);
    return;
  }
  if (m.tpu_chips > 0) {
    doc.error(diags, aptr, fmt::format("'{}' is a TPU machine; GPUs cannot be attached to it", m.type), Anchor::key);
    return;
  }
  const AttachableGpu* gpu = catalog().attachable(type);
  if (!gpu) {
    auto builtin = machines_with(type);
    doc.error(diags, ptr_key(aptr, "type"),
              fmt::format("{} GPUs are not attached to general-purpose machines; they come built into {}", type,
                          builtin.empty() ? "no machine type trainc knows" : join(builtin)));
    return;
  }
  if (gpu->machine_family != m.family || m.shared_core) {
    doc.error(diags, ptr_key(aptr, "type"),
              fmt::format("{} attaches only to {} machines (not shared-core), and '{}' is {}; use e.g. {}-standard-8",
                          type, gpu->machine_family, m.type, m.shared_core ? "shared-core" : m.family + "",
                          gpu->machine_family),
              Anchor::value, {doc.note(ptr_key(pool.ptr, "machine"), "machine type set here")});
    return;
  }
  auto allowed = gpu->max_vcpus.find(count);
  if (allowed == gpu->max_vcpus.end()) {
    std::vector<std::string> counts;
    for (const auto& [n, _] : gpu->max_vcpus) counts.push_back(std::to_string(n));
    doc.error(diags, ptr_key(aptr, "count"),
              fmt::format("{} comes {} per machine, not {}", type, join(counts), count));
  } else if (m.vcpus > allowed->second) {
    doc.error(diags, ptr_key(aptr, "count"),
              fmt::format("with {} x {} a machine may have at most {} vCPUs, and '{}' has {}; use a smaller machine "
                          "or more GPUs",
                          count, type, allowed->second, m.type, m.vcpus),
              Anchor::value, {doc.note(ptr_key(pool.ptr, "machine"), "machine type set here")});
  }
}

/// How to make a one-host slice multi-host: the same topology on a machine with fewer chips per
/// host, else the smallest multi-host topology of this machine.
std::string multi_host_fix(const MachineType& m, const std::string& topo) {
  std::vector<std::string> others;
  for (const auto& name : catalog().machine_names()) {
    const MachineType* o = catalog().machine(name);
    if (o->tpu_generation == m.tpu_generation && o->tpu_chips > 0 &&
        std::count(o->tpu_topologies.begin(), o->tpu_topologies.end(), topo) && topology_chips(topo) > o->tpu_chips)
      others.push_back(name);
  }
  if (!others.empty())
    return fmt::format("a {} slice is several hosts on {}; use that, or remove 'slices'", topo, join(others));
  for (const auto& t : m.tpu_topologies)
    if (topology_chips(t) > m.tpu_chips)
      return fmt::format("use a multi-host topology such as {}, or remove 'slices'", t);
  return fmt::format("'{}' has no multi-host topology: remove 'slices'", m.type);
}

void check_tpu(const Pool& pool, const MachineType& m, const Document& doc, Diagnostics& diags) {
  const std::string tptr = ptr_key(pool.ptr, "tpu");
  const json* spec = spec_at(doc, tptr);
  if (m.tpu_chips == 0) {
    if (spec)
      doc.error(diags, tptr, fmt::format("'{}' is not a TPU machine; remove 'tpu' or use a TPU machine type", m.type),
                Anchor::key);
    return;
  }
  if (!spec) {
    doc.error(diags, pool.ptr,
              fmt::format("'{}' is a TPU machine: add tpu: {{topology: ...}}, one of {}", m.type, join(m.tpu_topologies)),
              Anchor::key);
    return;
  }
  const std::string topo = (*spec)["topology"];
  const auto& valid = m.tpu_topologies;
  if (std::find(valid.begin(), valid.end(), topo) == valid.end()) {
    std::vector<std::string> others;
    for (const auto& name : catalog().machine_names()) {
      const MachineType* o = catalog().machine(name);
      if (o->tpu_generation == m.tpu_generation && std::count(o->tpu_topologies.begin(), o->tpu_topologies.end(), topo))
        others.push_back(name);
    }
    std::string fix = others.empty() ? fmt::format("; {} takes {}", m.type, join(valid))
                                     : fmt::format("; {} slices run on {}", topo, join(others));
    doc.error(diags, ptr_key(tptr, "topology"),
              fmt::format("TPU {} topology '{}' is not available on '{}'{}", m.tpu_generation, topo, m.type, fix),
              Anchor::value, {doc.note(ptr_key(pool.ptr, "machine"), "machine type set here")});
    return;
  }
  const std::string nptr = ptr_key(pool.ptr, "nodes");
  if (pool.tpu && spec_at(doc, nptr) && pool.nodes != pool.tpu->hosts)
    doc.error(diags, nptr,
              fmt::format("a {} slice of '{}' ({} chips each) is {} host(s), so the pool has {} node(s), not {}; "
                          "remove 'nodes' or set it to {}",
                          topo, m.type, m.tpu_chips, pool.tpu->hosts, pool.tpu->hosts, pool.nodes, pool.tpu->hosts));
  if (pool.tpu && pool.tpu->slices > 1 && pool.tpu->hosts == 1)
    doc.error(diags, ptr_key(tptr, "slices"),
              fmt::format("multislice needs multi-host slices; a {} slice of '{}' is one host, and GKE joins only "
                          "multi-host slice node pools into a multislice job; {}",
                          topo, m.type, multi_host_fix(m, topo)),
              Anchor::value, {doc.note(ptr_key(tptr, "topology"), "topology set here")});
}

/// Each GKE node pool needs a name of its own: a sliced pool's <pool>-<i> must not be another pool's.
void check_node_pool_names(const System& sys, const Document& doc, Diagnostics& diags) {
  std::map<std::string, const Pool*> sliced;
  for (const auto& [_, pool] : sys.pools)
    if (pool.tpu && pool.tpu->slices > 1)
      for (const auto& np : pool.node_pools()) sliced[np] = &pool;
  for (const auto& [name, pool] : sys.pools) {
    auto it = sliced.find(name);
    if (it == sliced.end()) continue;
    const Pool& owner = *it->second;
    doc.error(diags, pool.ptr,
              fmt::format("pool '{}' has the name of a GKE node pool that pool '{}' makes for one of its {} slices "
                          "({}-0 ... {}-{}); rename one of them",
                          name, owner.name, owner.tpu->slices, owner.name, owner.name, owner.tpu->slices - 1),
              Anchor::key, {doc.note(ptr_key(ptr_key(owner.ptr, "tpu"), "slices"), "slices set here")});
  }
}

void check_provisioning(const Pool& pool, const MachineType& m, const Document& doc, Diagnostics& diags) {
  const std::string pptr = ptr_key(pool.ptr, "provisioning");
  if (pool.provisioning == "reservation" && pool.reservation.empty())
    doc.error(diags, pptr, "provisioning: reservation needs 'reservation', the name of the reservation to consume");
  if (pool.provisioning != "reservation" && !pool.reservation.empty())
    doc.error(diags, ptr_key(pool.ptr, "reservation"),
              fmt::format("'reservation' is used only with provisioning: reservation, and this pool is {}; GKE cannot "
                          "consume a reservation with {} nodes",
                          pool.provisioning, pool.provisioning));
  if ((pool.provisioning == "flex-start" || pool.provisioning == "queued") && !pool.autoscaling && !pool.laddered())
    doc.error(diags, pptr,
              fmt::format("{} pools get nodes when capacity is found, so they must autoscale: add autoscaling: "
                          "{{min: 0, max: N}}",
                          pool.provisioning));
  if (pool.autoscaling && pool.autoscaling->first > pool.autoscaling->second)
    doc.error(diags, ptr_key(ptr_key(pool.ptr, "autoscaling"), "min"),
              fmt::format("autoscaling min {} is above max {}", pool.autoscaling->first, pool.autoscaling->second));
  if (pool.rdma && !m.rdma) {
    std::vector<std::string> capable;
    for (const auto& name : catalog().machine_names())
      if (catalog().machine(name)->rdma) capable.push_back(name);
    doc.error(diags, ptr_key(pool.ptr, "rdma"),
              fmt::format("GPUDirect RDMA networking is available on {}, not on '{}'; remove 'rdma'", join(capable),
                          m.type));
  }
}

/// TPU slices, specific reservations and RDMA networks live in one zone: a regional cluster cannot
/// place them.
void check_zonal(const System& sys, const Pool& pool, const Document& doc, Diagnostics& diags) {
  if (!sys.gcp || !sys.gcp->zone.empty()) return;
  if (!pool.autoscaling && !pool.tpu)
    doc.error(diags, pool.ptr,
              fmt::format("in a regional cluster GKE creates a fixed-size pool's {} node(s) in each of the region's "
                          "zones, not {} in all; add gcp.zone for a zonal cluster, or use autoscaling (whose limits "
                          "trainc sets for the whole pool)",
                          pool.nodes, pool.nodes),
              Anchor::key, {doc.note("/gcp", "gcp set here", Anchor::key)});
  const bool reserved = std::any_of(pool.ladder.begin(), pool.ladder.end(),
                                    [](const Rung& r) { return r.provisioning == "reservation"; }) ||
                        pool.provisioning == "reservation";
  if (!pool.tpu && !reserved && !pool.rdma) return;
  const std::string what =
      pool.tpu && pool.tpu->slices > 1     ? fmt::format("is {} TPU slices, which live", pool.tpu->slices)
      : pool.tpu                           ? "is a TPU slice, which lives"
      : reserved                           ? "consumes a reservation, which lives"
                                           : "uses GPUDirect RDMA, whose network (the zone's RDMA profile) lives";
  doc.error(diags, pool.ptr,
            fmt::format("pool '{}' {} in one zone, and the cluster is regional; add gcp.zone (a zone of {})", pool.name,
                        what, sys.gcp->region),
            Anchor::key, {doc.note("/gcp", "gcp set here", Anchor::key)});
}

/// A cluster trainc creates drops GKE's default pool, so kube-dns and the other system pods need a
/// pool that starts with a node they tolerate. TPU nodes are always tainted, flex-start pools start
/// empty; GPU pools are tainted only beside a CPU pool, which then serves.
void check_system_pool(const System& sys, const Document& doc, Diagnostics& diags) {
  if (!sys.gcp || sys.pools.empty()) return;
  for (const auto& [_, pool] : sys.pools)
    if (!pool.tpu && pool.taints.empty() && pool.provisioning != "flex-start" && pool.provisioning != "queued" &&
        pool.nodes > 0)
      return;
  doc.error(diags, "/cluster/pools",
            "no pool starts with a node that system pods such as kube-dns can run on (TPU nodes are tainted, "
            "flex-start pools start empty, the others are tainted or have no nodes), so pods could not resolve "
            "each other; add a small CPU pool, e.g. system: {machine: e2-standard-4}",
            Anchor::key);
}

}  // namespace

void check_pools(const System& sys, const Document& doc, Diagnostics& diags) {
  for (const auto& [name, pool] : sys.pools) {
    check_zonal(sys, pool, doc, diags);
    const MachineType* m = catalog().machine(pool.machine);
    if (!m) continue;  // reported by lowering
    check_gpus(pool, *m, doc, diags);
    check_tpu(pool, *m, doc, diags);
    check_provisioning(pool, *m, doc, diags);
  }
  check_node_pool_names(sys, doc, diags);
  check_system_pool(sys, doc, diags);
}

}  // namespace trainc
