#include "k8s/queue.h"

#include <cmath>

#include <fmt/format.h>

#include "k8s/names.h"
#include "model/catalog.h"

namespace trainc::k8s {
namespace {

/// The node labels that pick a pool's nodes: its GKE node pool, or for a pool of several TPU slices
/// (node pools <pool>-0, ...) the slices' accelerator and topology.
ojson node_labels(const Pool& pool) {
  if (pool.node_pools().size() == 1) return {{"cloud.google.com/gke-nodepool", pool.name}};
  return {{"cloud.google.com/gke-tpu-accelerator", pool.tpu->accelerator},
          {"cloud.google.com/gke-tpu-topology", pool.tpu->topology}};
}

/// Resources every flavor lists, in one order: CPU and memory, and GPUs and TPU chips when a pool
/// has them (Kueue wants one resource group covering them all, each flavor listing each).
std::vector<std::string> covered(const System& sys) {
  std::vector<std::string> out{"cpu", "memory"};
  bool gpus = false, tpus = false;
  for (const auto& [_, p] : sys.pools) {
    gpus = gpus || p.accelerator;
    tpus = tpus || p.tpu;
  }
  if (gpus) out.emplace_back("nvidia.com/gpu");
  if (tpus) out.emplace_back("google.com/tpu");
  return out;
}

ojson topology_levels() {
  ojson levels = ojson::array();
  for (const auto& l : catalog().topology().levels) levels.push_back({{"nodeLabel", l.label}});
  return levels;
}

/// The fields of a pool's flavor that Kueue keeps once `topologyName` is set.
ojson flavor_immutables(const System& sys, const Pool& pool) {
  ojson spec{{"nodeLabels", node_labels(pool)}};
  if (pool.tas()) spec["topologyName"] = queue_topology_name(sys);
  return spec;
}

std::string quota(const PoolCapacity& c, const std::string& resource) {
  if (resource == "cpu") return fmt::format("{}m", static_cast<long long>(std::floor(c.cpu * 1000)));
  if (resource == "memory") return fmt::format("{}Mi", static_cast<long long>(std::floor(c.memory / (1 << 20))));
  return std::to_string(resource == "nvidia.com/gpu" ? c.gpus : c.tpu_chips);
}

}  // namespace

std::string queue_topology_name(const System& sys) {
  return fmt::format("{}-{}", sys.name, content_hash(topology_levels().dump()));
}

std::string queue_flavor_name(const System& sys, const Pool& pool) {
  if (!pool.tas()) return fmt::format("{}-{}", sys.name, pool.name);
  return fmt::format("{}-{}-{}", sys.name, pool.name, content_hash(flavor_immutables(sys, pool).dump()));
}

ojson queued(const System& sys, ojson labels) {
  if (sys.queue) labels[std::string(kQueueLabel)] = sys.queue->name;
  return labels;
}

void ask_topology(ojson& meta, const System& sys, const Pool* pool, int pods) {
  ask_topology(meta, topology_request(sys, pool, pods));
}

void ask_topology(ojson& meta, const TopologyRequest& r) {
  if (r.kind == TopologyRequest::Kind::kNone) return;
  ojson& a = meta["annotations"];
  if (!a.is_object()) a = ojson::object();
  switch (r.kind) {
    case TopologyRequest::Kind::kNone: break;
    case TopologyRequest::Kind::kUnconstrained: a["kueue.x-k8s.io/podset-unconstrained-topology"] = "true"; break;
    case TopologyRequest::Kind::kPreferred: a["kueue.x-k8s.io/podset-preferred-topology"] = r.label; break;
    case TopologyRequest::Kind::kRequired: a["kueue.x-k8s.io/podset-required-topology"] = r.label; break;
  }
}

ojson topology(const System& sys, const Object& obj) {
  ojson t = typed(obj);
  t["metadata"] = metadata(obj.name, "", labels_for(sys, sys.name, sys.name, "queue"));
  t["spec"] = {{"levels", topology_levels()}};
  return t;
}

ojson resource_flavor(const System& sys, const Object& obj) {
  const Pool& pool = sys.pools.at(obj.group);
  ojson rf = typed(obj);
  rf["metadata"] = metadata(obj.name, "", labels_for(sys, sys.name, sys.name, "queue"));
  const ojson fixed = flavor_immutables(sys, pool);
  rf["spec"] = {{"nodeLabels", fixed["nodeLabels"]}};
  // The taints of the pool's nodes: Kueue gives a workload this flavor only if its pods tolerate
  // them, so a CPU step is never sent to (and left Pending on) GPU or TPU nodes.
  ojson taints = ojson::array();
  if (pool.accelerator) taints.push_back({{"key", "nvidia.com/gpu"}, {"value", "present"}, {"effect", "NoSchedule"}});
  if (pool.tpu) taints.push_back({{"key", "google.com/tpu"}, {"value", "present"}, {"effect", "NoSchedule"}});
  for (const auto& t : pool.taints) {
    ojson taint{{"key", t.key}};
    if (!t.value.empty()) taint["value"] = t.value;
    taint["effect"] = t.effect;
    taints.push_back(taint);
  }
  if (!taints.empty()) rf["spec"]["nodeTaints"] = taints;
  // Kueue counts the flavor's nodes by the Topology's levels; the flavor's nodeLabels keep those
  // nodes the pool's own (Kueue requires one with a topology).
  if (fixed.contains("topologyName")) rf["spec"]["topologyName"] = fixed["topologyName"];
  return rf;
}

ojson cluster_queue(const System& sys, const Object& obj) {
  const auto resources = covered(sys);
  ojson flavors = ojson::array();
  for (const auto& [_, pool] : sys.pools) {
    const PoolCapacity c = queue_capacity(sys, pool);
    ojson quotas = ojson::array();
    for (const auto& r : resources) quotas.push_back({{"name", r}, {"nominalQuota", quota(c, r)}});
    flavors.push_back({{"name", queue_flavor_name(sys, pool)}, {"resources", quotas}});
  }
  ojson cq = typed(obj);
  cq["metadata"] = metadata(obj.name, "", labels_for(sys, sys.name, sys.name, "queue"));
  cq["spec"] = {
      // Only the system's namespace queues here.
      {"namespaceSelector", {{"matchLabels", {{"kubernetes.io/metadata.name", sys.ns}}}}},
      // A step that does not fit yet does not hold back smaller ones behind it.
      {"queueingStrategy", "BestEffortFIFO"},
      {"resourceGroups", ojson::array({{{"coveredResources", resources}, {"flavors", flavors}}})},
  };
  return cq;
}

ojson local_queue(const System& sys, const Object& obj) {
  ojson lq = typed(obj);
  lq["metadata"] = metadata(obj.name, sys.ns, labels_for(sys, sys.name, sys.name, "queue"));
  lq["spec"] = {{"clusterQueue", cluster_queue_name(sys)}};
  return lq;
}

}  // namespace trainc::k8s
