#include "k8s/queue.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "base/yaml_writer.h"
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

/// The pods of each workload Kueue admits whole: a step's Job or JobSet (a Dask client's too), and
/// a RayJob with its own cluster (its head and workers); a RayJob on a shared cluster is not queued.
std::vector<std::pair<std::string, int>> queued_workloads(const System& sys) {
  std::vector<std::pair<std::string, int>> out;
  for (const auto& st : sys.steps) {
    const ComputeCluster* c = sys.compute_cluster(st.cluster);
    if (!c || c->steps_have_own_pods()) {
      out.emplace_back(fmt::format("step `{}`", st.name), st.nodes * st.slices);
    } else if (c->per_job()) {
      int pods = 1;
      for (const auto& g : c->workers) pods += g.replicas;
      out.emplace_back(fmt::format("step `{}`", st.name), pods);
    }
  }
  return out;
}

}  // namespace

PodsReady pods_ready(const System& sys) {
  const KueueConfig& k = catalog().kueue_config();
  PodsReady p;
  p.derived = !sys.queue || sys.queue->pods_ready_timeout_seconds == 0;
  p.timeout_seconds = p.derived ? catalog().pull_margin_seconds() + kDefaultStartupSeconds : sys.queue->pods_ready_timeout_seconds;
  p.recovery_seconds = p.timeout_seconds;
  int most = 1;
  for (const auto& [what, pods] : queued_workloads(sys))
    if (pods > most) {
      most = pods;
      p.gang = fmt::format("{} ({} pods)", what, pods);
    }
  p.block_admission = most > 1;
  p.backoff_base_seconds = k.backoff_base_seconds;
  p.backoff_max_seconds = k.backoff_max_seconds;
  return p;
}

std::string go_duration(int seconds) {
  std::string out;
  if (seconds >= 3600) out += fmt::format("{}h", seconds / 3600);
  if (seconds % 3600 >= 60) out += fmt::format("{}m", seconds % 3600 / 60);
  if (seconds % 60 != 0 || out.empty()) out += fmt::format("{}s", seconds % 60);
  return out;
}

std::string kueue_configuration(const System& sys) {
  const PodsReady p = pods_ready(sys);
  // backoffLimitCount is left out (null): an evicted workload is queued again until it starts, as
  // a step waiting for capacity should be; a limit would deactivate it and leave its Job suspended.
  const ojson wait{{"waitForPodsReady",
                    {{"timeout", go_duration(p.timeout_seconds)},
                     {"recoveryTimeout", go_duration(p.recovery_seconds)},
                     {"blockAdmission", p.block_admission},
                     {"requeuingStrategy",
                      {{"timestamp", "Eviction"},
                       {"backoffBaseSeconds", p.backoff_base_seconds},
                       {"backoffMaxSeconds", p.backoff_max_seconds}}}}}};
  std::string text = catalog().kueue_config().defaults;
  if (!text.empty() && text.back() != '\n') text += '\n';
  return text + to_yaml(wait);
}

ojson kueue_config_map(const System& sys) {
  const KueueConfig& k = catalog().kueue_config();
  // The labels the release manifest gives every object (config/default/kustomization.yaml), so
  // that applying this over it changes the configuration alone.
  return {{"apiVersion", "v1"},
          {"kind", "ConfigMap"},
          {"metadata",
           {{"name", k.config_map},
            {"namespace", catalog().kueue().ns},
            {"labels", {{"app.kubernetes.io/name", "kueue"}, {"control-plane", "controller-manager"}}}}},
          {"data", {{k.key, kueue_configuration(sys)}}}};
}

std::string kueue_config_digest(const System& sys) { return content_hash(kueue_configuration(sys)); }

std::string kueue_config_mark(const System& sys) {
  return fmt::format("{} {} waitForPodsReady.timeout={}", kueue_config_digest(sys), sys.name,
                     go_duration(pods_ready(sys).timeout_seconds));
}

std::string queue_topology_name(const System& sys) {
  return fmt::format("{}-{}", sys.name, scope_hash({sys.ns, sys.name, topology_levels().dump()}));
}

std::string queue_flavor_name(const System& sys, const Pool& pool) {
  return fmt::format("{}-{}-{}", sys.name, pool.name,
                     scope_hash({sys.ns, sys.name, pool.name, pool.tas() ? flavor_immutables(sys, pool).dump() : ""}));
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
  t["metadata"] = metadata(obj.name, "", labels_for(sys, sys.name, sys.name, "queue", {{std::string(kNamespaceLabel), sys.ns}}));
  t["spec"] = {{"levels", topology_levels()}};
  return t;
}

bool queued_provisioning(const System& sys) {
  for (const Pool& p : sys.gke_pools())
    if (p.provisioning == "queued") return true;
  return false;
}

std::string queued_check_name(const System& sys) {
  return fmt::format("{}-queued-{}", sys.name, scope_hash({sys.ns, sys.name}));
}

ojson provisioning_annotations(const System& sys, const Step& step, const std::vector<std::string>& pools) {
  if (!sys.queue || !queued_provisioning(sys)) return ojson::object();
  int asked = 0;
  bool queued = false;
  const auto on = [&](const std::string& name) {
    if (pools.empty()) return step.pool.empty() || step.pool == name;
    return std::find(pools.begin(), pools.end(), name) != pools.end();
  };
  for (const Pool& p : sys.gke_pools()) {
    if (p.provisioning != "queued" || !(on(p.name) || (!p.ladder_of.empty() && on(p.ladder_of)))) continue;
    queued = true;
    const Pool* spec_pool = sys.pool(p.ladder_of.empty() ? p.name : p.ladder_of);
    const int set = spec_pool && spec_pool->laddered() ? spec_pool->ladder[p.rung].max_run_seconds : 0;
    if (set > 0) asked = asked == 0 ? set : std::min(asked, set);
  }
  if (!queued) return ojson::object();
  if (asked == 0) asked = step.timeout_seconds ? std::min(*step.timeout_seconds, kQueuedMaxRunSeconds) : kQueuedMaxRunSeconds;
  return {{"provreq.kueue.x-k8s.io/maxRunDurationSeconds", std::to_string(asked)}};
}

ojson provisioning_config(const System& sys, const Object& obj) {
  const QueuedProvisioning& q = catalog().queued_provisioning();
  ojson c = typed(obj);
  c["metadata"] = metadata(obj.name, "", labels_for(sys, sys.name, sys.name, "queue", {{std::string(kNamespaceLabel), sys.ns}}));
  ojson managed = ojson::array();
  for (const auto& r : covered(sys))
    if (r != "cpu" && r != "memory") managed.push_back(r);
  c["spec"] = {{"provisioningClassName", q.class_name}};
  // Only PodSets that ask for accelerators need GKE's nodes; a CPU PodSet beside them is admitted
  // on what the cluster has.
  if (!managed.empty()) c["spec"]["managedResources"] = managed;
  // GKE names the nodes it made for a request by the request's resize request: the pods are sent
  // to exactly those nodes.
  c["spec"]["podSetUpdates"] = {
      {"nodeSelector", ojson::array({{{"key", q.node_label}, {"valueFromProvisioningClassDetail", q.class_detail}}})}};
  return c;
}

ojson admission_check(const System& sys, const Object& obj) {
  ojson a = typed(obj);
  a["metadata"] = metadata(obj.name, "", labels_for(sys, sys.name, sys.name, "queue", {{std::string(kNamespaceLabel), sys.ns}}));
  a["spec"] = {{"controllerName", "kueue.x-k8s.io/provisioning-request"},
               {"parameters", {{"apiGroup", "kueue.x-k8s.io"}, {"kind", "ProvisioningRequestConfig"}, {"name", queued_check_name(sys)}}}};
  return a;
}

ojson resource_flavor(const System& sys, const Object& obj) {
  Pool pool;
  for (Pool& p : sys.gke_pools())
    if (p.name == obj.group) pool = std::move(p);
  ojson rf = typed(obj);
  rf["metadata"] = metadata(obj.name, "", labels_for(sys, sys.name, sys.name, "queue", {{std::string(kNamespaceLabel), sys.ns}}));
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
  if (pool.provisioning == "queued") {
    // GKE taints the nodes of queued provisioning; the toleration is the flavor's, which Kueue adds
    // to the pods it admits here, so the same pods fit the other rungs' nodes too.
    const QueuedProvisioning& q = catalog().queued_provisioning();
    taints.push_back({{"key", q.taint}, {"value", "true"}, {"effect", "NoSchedule"}});
    rf["spec"]["tolerations"] =
        ojson::array({{{"key", q.taint}, {"operator", "Equal"}, {"value", "true"}, {"effect", "NoSchedule"}}});
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
  ojson queued_flavors = ojson::array();
  bool laddered = false;
  for (const Pool& pool : sys.gke_pools()) {
    laddered = laddered || !pool.ladder_of.empty();
    if (pool.provisioning == "queued") queued_flavors.push_back(queue_flavor_name(sys, pool));
    const PoolCapacity c = queue_capacity(sys, pool);
    ojson quotas = ojson::array();
    for (const auto& r : resources) quotas.push_back({{"name", r}, {"nominalQuota", quota(c, r)}});
    flavors.push_back({{"name", queue_flavor_name(sys, pool)}, {"resources", quotas}});
  }
  ojson cq = typed(obj);
  cq["metadata"] = metadata(obj.name, "", labels_for(sys, sys.name, sys.name, "queue", {{std::string(kNamespaceLabel), sys.ns}}));
  cq["spec"] = {
      // Only the system's namespace queues here.
      {"namespaceSelector", {{"matchLabels", {{"kubernetes.io/metadata.name", sys.ns}}}}},
      // A step that does not fit yet does not hold back smaller ones behind it.
      {"queueingStrategy", "BestEffortFIFO"},
      {"resourceGroups", ojson::array({{{"coveredResources", resources}, {"flavors", flavors}}})},
  };
  if (laddered)
    // A ladder's rungs in order: a step is admitted on the first with room. Where it could only
    // borrow or preempt, Kueue tries the next rung first (TryNextFlavor) and comes back to preempt
    // only when no rung has room; Kueue v0.19.2's defaults, written out as the ladder relies on them.
    cq["spec"]["flavorFungibility"] = {{"whenCanBorrow", "MayStopSearch"}, {"whenCanPreempt", "TryNextFlavor"}};
  if (!queued_flavors.empty())
    // The ProvisioningRequest is asked for only where the nodes are GKE's queued provisioning.
    cq["spec"]["admissionChecksStrategy"] = {
        {"admissionChecks", ojson::array({{{"name", queued_check_name(sys)}, {"onFlavors", queued_flavors}}})}};
  return cq;
}

ojson local_queue(const System& sys, const Object& obj) {
  ojson lq = typed(obj);
  lq["metadata"] = metadata(obj.name, sys.ns, labels_for(sys, sys.name, sys.name, "queue"));
  lq["spec"] = {{"clusterQueue", cluster_queue_name(sys)}};
  return lq;
}

}  // namespace trainc::k8s
