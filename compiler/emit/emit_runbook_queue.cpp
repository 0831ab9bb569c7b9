// The runbook's Kueue section: admission by quota, and on pools placed by topology what each
// queued workload asks (model.h topology_request, the same the pod templates carry) and how to see
// where its pods landed.
#include <map>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "emit/emit_scripts.h"
#include "emit/runbook.h"
#include "k8s/names.h"
#include "k8s/queue.h"
#include "model/catalog.h"

namespace trainc {
namespace {

struct Row {
  std::string what;  ///< "step `x`", "Ray cluster `c` group `g`"
  int pods = 0;
  std::string pool;
  TopologyRequest asks;
};

std::string meaning(const TopologyRequest& r, int pods) {
  switch (r.kind) {
    case TopologyRequest::Kind::kNone: return "";
    case TopologyRequest::Kind::kUnconstrained: return "any node of the pool";
    case TopologyRequest::Kind::kPreferred:
      return fmt::format("one {} if any has room for all {} pods, else the next wider level, else spread", r.level, pods);
    case TopologyRequest::Kind::kRequired:
      return fmt::format("waits until one {} has room for all {} pods", r.level, pods);
  }
  return "";
}

std::vector<Row> rows(const System& sys) {
  std::vector<Row> out;
  for (const auto& st : sys.steps) {
    const ComputeCluster* c = sys.compute_cluster(st.cluster);
    if (!c || c->steps_have_own_pods()) {  // the step's own Job (a Dask client's too)
      const int pods = st.nodes * st.slices;
      out.push_back({fmt::format("step `{}`", st.name), pods, st.pool, topology_request(sys, st)});
      continue;
    }
    if (!c->per_job()) continue;  // a RayJob on a shared cluster is not queued
    out.push_back({fmt::format("step `{}`: Ray head", st.name), 1, c->lead().pool,
                   topology_request(sys, sys.pool(c->lead().pool), 1)});
    for (const auto& g : c->workers)
      out.push_back({fmt::format("step `{}`: Ray group `{}`", st.name, g.name), g.replicas, g.pool,
                     topology_request(sys, sys.pool(g.pool), g.replicas)});
  }
  return out;
}

/// A map key as a jsonpath names it: its dots escaped.
std::string jsonpath_key(const std::string& key) {
  std::string out;
  for (char c : key) out += c == '.' ? std::string("\\.") : std::string(1, c);
  return out;
}

/// waitForPodsReady: what apply.sh configured, and how to see a workload evicted and queued again.
std::string pods_ready_section(const System& sys, const KubeTarget& kube) {
  const k8s::PodsReady p = k8s::pods_ready(sys);
  const KueueConfig& k = catalog().kueue_config();
  const std::string& kns = catalog().kueue().ns;
  const std::string& ns = sys.ns;
  const std::string timeout = k8s::go_duration(p.timeout_seconds);
  std::string md = fmt::format(
      "### All or nothing: waitForPodsReady\n\nQuota alone can admit two gangs that each get part of a pool when "
      "fewer nodes come than the quota counts on (a stockout, a flex-start or Spot pool); each would then hold its "
      "part and wait for the rest. apply.sh configures Kueue's `waitForPodsReady` (`{}`, applied over the release's "
      "ConfigMap `{}`): once Kueue admits a workload, all of its pods must be Ready within **{}** ({}), or Kueue "
      "evicts it (its Job is suspended and its pods deleted), releasing its quota, and queues it again after a "
      "back-off of about {} s, doubling each time up to {} s, for as long as it takes (no limit on the count). A "
      "running workload that loses a pod gets the same {} to replace it (`recoveryTimeout`). A pod is Ready once "
      "its entry script has synced its inputs and found its checkpoint.",
      scripts::kKueueConfigFile, k.config_map, timeout,
      p.derived ? fmt::format("the catalog's {} s for a node to come up and the image to be pulled, plus a service's "
                              "default startup window of {} s; `queue.podsReadyTimeout` sets it",
                              catalog().pull_margin_seconds(), kDefaultStartupSeconds)
                : "the spec's `queue.podsReadyTimeout`",
      p.backoff_base_seconds, p.backoff_max_seconds, timeout);
  md += p.block_admission
            ? fmt::format(" With `blockAdmission`, since {} is a gang, Kueue admits no other workload until every "
                          "admitted one is Ready: gangs start one after another, never half each.\n\n",
                          p.gang)
            : " Every queued workload here is a single pod, so admissions are not serialised (`blockAdmission: "
              "false`).\n\n";
  md += fmt::format(
      "Kueue's configuration is the whole cluster's: the last system applied sets it for every queue there. "
      "Kueue reads it only when it starts, so apply.sh rolls its pods when the configuration changed (the "
      "annotation `{}` on them holds its hash, then the system and timeout), and a second apply with nothing "
      "changed restarts nothing. A workload evicted and queued again shows the condition `Evicted` with reason "
      "`PodsReadyTimeout` and a `requeueState` (how many times, and when it may be admitted again):\n\n```sh\n",
      k8s::kKueueConfigAnnotation);
  md += cmd::kubectl(kube, {"get", "workloads", "-n", ns, "-o",
                            "custom-columns=NAME:.metadata.name,ADMITTED:.status.conditions[?(@.type==\"Admitted\")].status,"
                            "PODSREADY:.status.conditions[?(@.type==\"PodsReady\")].status,"
                            "REQUEUES:.status.requeueState.count,REQUEUE_AT:.status.requeueState.requeueAt"})
            .line() + "\n";
  // The event's reason is "Evicted" + "DueTo" + the condition's (kubernetes-sigs/kueue@8eab687
  // pkg/workload/evict/evict.go reportEvictedWorkload, pkg/workload/patching/patching.go ReasonWithCause).
  md += cmd::kubectl(kube, {"get", "events", "-n", ns, "--field-selector", "reason=EvictedDueToPodsReadyTimeout"}).line() + "\n";
  md += cmd::kubectl(kube, {"get", "deployment/" + k.deployment, "-n", kns, "-o",
                            "jsonpath={.spec.template.metadata.annotations." + jsonpath_key(std::string(k8s::kKueueConfigAnnotation)) + "}"})
            .line() + "   # whose configuration Kueue runs\n";
  md += cmd::kubectl(kube, {"get", "configmap", k.config_map, "-n", kns, "-o", "jsonpath={.data." + jsonpath_key(k.key) + "}"}).line() +
        "\n```\n\n";
  return md;
}

/// Getting the GPUs: each laddered pool's rungs, what each means, how to see which rung a workload
/// got and how to add a reservation; queued provisioning's ProvisioningRequests.
std::string capacity_section(const System& sys, const KubeTarget& kube) {
  std::vector<const Pool*> laddered;
  for (const auto& [_, p] : sys.pools)
    if (p.laddered()) laddered.push_back(&p);
  if (laddered.empty() && !k8s::queued_provisioning(sys)) return "";
  const std::string& ns = sys.ns;
  static const std::map<std::string, std::string> means{
      {"reservation", "the reservation's VMs, paid for whether they run or not: no wait while the rung has room"},
      {"queued", "Dynamic Workload Scheduler's queued provisioning: Kueue asks GKE for all of a step's nodes at once "
                 "(a ProvisioningRequest) and admits the step when GKE has made them; the step waits on this rung, "
                 "and the rungs after it are tried only while its quota is taken"},
      {"flex-start", "flex-start VMs, made as capacity is found, each for at most 7 days"},
      {"spot", "Spot VMs: cheapest, made when Compute Engine has spare capacity, preempted at any time"},
      {"standard", "on-demand VMs: made when the zone has capacity"}};
  std::string md = "### Getting the GPUs\n\n";
  for (const Pool* p : laddered) {
    md += fmt::format("Pool `{}` gets its nodes by a ladder of {} rungs, each its own GKE node pool and Kueue flavor, "
                      "listed best first in the ClusterQueue: Kueue admits a step on the first rung whose quota has "
                      "room.\n\n| rung | node pool | how | nodes |\n|---|---|---|---|\n",
                      p->name, p->ladder.size());
    const auto rungs = p->rung_pools();
    for (size_t i = 0; i < rungs.size(); ++i) {
      const Pool::NodeRange r = rungs[i].node_range();
      md += fmt::format("| {} | `{}` | {}{} | {} |\n", i + 1, rungs[i].name,
                        rungs[i].reservation.empty() ? "" : fmt::format("`{}`: ", rungs[i].reservation),
                        means.at(rungs[i].provisioning),
                        r.min == r.max ? std::to_string(r.max) : fmt::format("{} to {}", r.min, r.max));
    }
    md += "\n";
  }
  md += "Which rung each workload got (its flavor names the rung's node pool), and the nodes of each rung:\n\n```sh\n";
  md += cmd::kubectl(kube, {"get", "workloads", "-n", ns, "-o",
                            "custom-columns=NAME:.metadata.name,FLAVORS:.status.admission.podSetAssignments[*].flavors"})
            .line() +
        "\n";
  for (const Pool* p : laddered)
    md += cmd::kubectl(kube, {"get", "nodes", "-L", "cloud.google.com/gke-nodepool", "-l",
                              fmt::format("cloud.google.com/gke-nodepool in ({})", fmt::join(p->node_pools(), ","))})
              .line() +
          "\n";
  if (k8s::queued_provisioning(sys))
    md += cmd::kubectl(kube, {"get", "provisioningrequests", "-n", ns}).line() +
          "   # queued provisioning: one per admission, Provisioned when GKE has made the nodes\n";
  md += "```\n\nA step stays on the rung it was admitted on until it ends (Kueue moves a running workload to a "
        "better flavor only with its alpha ConcurrentAdmission, which trainc leaves off). If its nodes go (a Spot "
        "preemption) and its pods are not Ready again within `recoveryTimeout`, Kueue evicts it and queues it "
        "again, from the first rung with room: it restarts from its last checkpoint. `trainc plan` prices each "
        "rung and says what is known of its wait.\n\nTo add a reservation, add a rung to `capacity` where it "
        "belongs in the order (`{reservation: NAME}`, with `project` for one shared from another project and "
        "`block` for a block of it), compile, run `scripts/up.sh` (it makes the rung's node pool) and then "
        "`scripts/apply.sh` (the flavor, and the ClusterQueue that lists it in order). Removing a rung is the same "
        "in reverse: apply.sh prunes its flavor, and up.sh names the node pool the spec no longer has, with the "
        "command that deletes it.\n\n";
  return md;
}

}  // namespace

std::string queue_runbook_section(const System& sys) {
  if (!sys.queue) return "";
  const KubeTarget kube = runbook_target();
  const std::string& ns = sys.ns;
  std::string md = fmt::format(
      "## Queue\n\nKueue admits each Job, JobSet and RayJob with its own cluster labelled "
      "`kueue.x-k8s.io/queue-name: {}` only when all of its pods fit the ClusterQueue `{}` (the pools' capacity at "
      "their largest); until then it stays suspended and makes no pods.\n\n```sh\n{}\n{}\n{}\n```\n\n",
      sys.queue->name, k8s::cluster_queue_name(sys), cmd::kubectl(kube, {"get", "clusterqueue", k8s::cluster_queue_name(sys)}).line(),
      cmd::kubectl(kube, {"get", "workloads", "-n", ns}).line(),
      cmd::kubectl(kube, {"describe", "workload", "-n", ns, "NAME"}).line() + "   # why one waits");

  md += pods_ready_section(sys, kube);
  md += capacity_section(sys, kube);

  std::vector<const Pool*> placed;
  for (const auto& [_, p] : sys.pools)
    if (p.tas()) placed.push_back(&p);
  for (const auto& [_, p] : sys.pools)
    if (!p.placement.why_none.empty()) md += p.placement.why_none + ".\n\n";
  if (placed.empty()) return md;

  const auto& levels = catalog().topology().levels;
  std::string labels, pools;
  for (size_t i = 0; i + 1 < levels.size(); ++i) labels += (i ? "," : "") + levels[i].label;
  for (const Pool* p : placed) pools += fmt::format("{}`{}` ({})", pools.empty() ? "" : ", ", p->name, p->machine);
  md += fmt::format(
      "### Placement by topology\n\nOn {} Kueue also places the pods by where the nodes sit in Google's data "
      "centre: GKE labels each node with its block, sub-block and host, the Topology `{}` (`k8s/topology.yaml`) "
      "lists those levels widest first, and {} it. Pods that share a block, and more so a "
      "sub-block, reach each other over fewer network hops. Kueue counts only nodes that exist and are Ready, picks "
      "a domain for the whole workload, and pins each pod to a node in it, in the order of the pods' completion "
      "index; a node that fails under a running workload is replaced by a free one in the same domain when there is "
      "one.\n\n",
      pools, k8s::queue_topology_name(sys), placed.size() == 1 ? "the pool's flavor names" : "the pools' flavors name");
  std::string table;
  for (const Row& r : rows(sys))
    if (r.asks.kind != TopologyRequest::Kind::kNone)
      table += fmt::format("| {} | {} | {} | {} | {} |\n", r.what, r.pods, r.pool, r.asks.describe(), meaning(r.asks, r.pods));
  md += table.empty() ? "No queued workload runs there (services and long-lived clusters are not queued).\n"
                      : "| workload | pods | pool | asks | meaning |\n|---|---|---|---|---|\n" + table;
  md += "\nWhere they landed: the Workload's topology assignment (its name is Kueue's, from the list above), "
        "then the nodes with their places and the pods on them:\n\n```sh\n";
  md += cmd::kubectl(kube, {"get", "workload", "-n", ns, "NAME", "-o",
                            "jsonpath={.status.admission.podSetAssignments[*].topologyAssignment}"})
            .line() +
        "\n";
  for (const Pool* p : placed)
    md += cmd::kubectl(kube, {"get", "nodes", "-l", "cloud.google.com/gke-nodepool=" + p->name, "-L", labels}).line() + "\n";
  md += cmd::kubectl(kube, {"get", "pods", "-n", ns, "-l", "app.kubernetes.io/part-of=" + sys.name, "-o", "wide"}).line() +
        "\n```\n\n";
  md += "A required placement no domain can hold yet keeps the workload waiting, and `" +
        cmd::kubectl(kube, {"describe", "workload", "-n", ns, "NAME"}).line() +
        "` says which level was short. A preferred one never waits for room in one domain: it spreads instead.\n\n";
  return md;
}

}  // namespace trainc
