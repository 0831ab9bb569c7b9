#include "k8s/plan.h"

#include <algorithm>
#include <cctype>
#include <stdexcept>

#include <fmt/format.h>

#include "base/overloaded.h"
#include "k8s/entry_script.h"
#include "k8s/names.h"
#include "k8s/queue.h"

namespace trainc::k8s {
namespace {

std::string step_file(const Step& step, std::string_view what) { return fmt::format("k8s/{}-{}.yaml", step.name, what); }

/// A step that runs to completion in pods: entry-script ConfigMap, a headless Service when its
/// pods must find each other, and the Job.
void batch_step(const System& sys, const Step& step, Workload& w) {
  w.entry_script = entry_script(sys, step);
  w.objects.push_back({Role::kEntryScript, "v1", "ConfigMap", configmap_name(sys, step),
                       step_file(step, "configmap"), fmt::format("entry script of step '{}'", step.name)});
  if (step.distributed())
    w.objects.push_back({Role::kRendezvous, "v1", "Service", job_name(sys, step), step_file(step, "service"),
                         fmt::format("rendezvous service of step '{}'", step.name)});
  if (step.schedule) {  // nothing to wait for: its Jobs come at their times (nothing may need it)
    w.objects.push_back({Role::kCronJob, "batch/v1", "CronJob", step_base_name(sys, step), step_file(step, "cronjob"),
                         fmt::format("step '{}' on schedule '{}'", step.name, step.schedule->cron)});
    return;
  }
  w.objects.push_back({Role::kBatchJob, "batch/v1", "Job", job_name(sys, step), step_file(step, "job"),
                       fmt::format("step '{}'", step.name), Ready::kJobComplete});
}

/// A step on a TPU pool (one Indexed Job per slice) or a gang (one Indexed Job of all its pods):
/// its entry script and a JobSet, which makes the headless Service its pods resolve each other by
/// and restarts every pod when one fails.
void jobset_step(const System& sys, const Step& step, Workload& w) {
  w.entry_script = entry_script(sys, step);
  w.objects.push_back({Role::kEntryScript, "v1", "ConfigMap", configmap_name(sys, step),
                       step_file(step, "configmap"), fmt::format("entry script of step '{}'", step.name)});
  const Pool* pool = sys.pool(step.pool);
  const std::string what = pool && pool->tpu ? fmt::format("step '{}' on {} TPU slice(s)", step.name, step.slices)
                                             : fmt::format("step '{}' on {} nodes, restarted as one", step.name, step.nodes);
  w.objects.push_back({Role::kJobSet, "jobset.x-k8s.io/v1alpha2", "JobSet", job_name(sys, step), step_file(step, "jobset"),
                       what, Ready::kJobSetCompleted, std::string(replicated_job(sys, step))});
}

/// A step on a Ray cluster: a RayJob, whose entrypoint KubeRay submits to the cluster over HTTP.
void ray_job_step(const System& sys, const Step& step, const ComputeCluster& c, const Ray& r, Workload& w) {
  w.objects.push_back({Role::kRayJob, "ray.io/v1", "RayJob", job_name(sys, step), step_file(step, "rayjob"),
                       fmt::format("step '{}' on {}Ray cluster '{}'", step.name, r.per_job ? "its own " : "", c.name),
                       Ready::kRaySucceeded});
}

/// What a step becomes: on a compute cluster, what its engine runs steps as; otherwise what its
/// kind runs as (today a Job for every kind).
void step_objects(const System& sys, const Step& step, Workload& w) {
  if (const ComputeCluster* c = sys.compute_cluster(step.cluster)) {
    match(
        c->engine, [&](const Ray& r) { ray_job_step(sys, step, *c, r, w); },
        [&](const Dask&) { batch_step(sys, step, w); });  // a client Job beside the cluster
    return;
  }
  if (runs_as_jobset(sys, step)) {  // a slice's hosts, or a gang's pods, start and restart together
    jobset_step(sys, step, w);
    return;
  }
  match(
      step.run, [&](const Torchrun&) { batch_step(sys, step, w); }, [&](const Command&) { batch_step(sys, step, w); },
      [&](const Datagen&) { batch_step(sys, step, w); }, [&](const XGBoost&) { batch_step(sys, step, w); });
}

std::string cluster_file(const ComputeCluster& c, std::string_view what) {
  return fmt::format("k8s/cluster-{}-{}.yaml", c.name, what);
}

/// A compute cluster's objects: what its engine becomes.
void compute_cluster(const System& sys, const ComputeCluster& c, Workload& w) {
  match(
      c.engine,
      [&](const Ray&) {
        w.objects.push_back({Role::kRayCluster, "ray.io/v1", "RayCluster", cluster_name(sys, c), cluster_file(c, "raycluster"),
                             fmt::format("Ray cluster '{}'", c.name), Ready::kRayReady});
      },
      [&](const Dask&) {
        const std::string scheduler = dask_scheduler_name(sys, c);
        w.objects.push_back({Role::kDaskService, "v1", "Service", scheduler, cluster_file(c, "scheduler-service"),
                             fmt::format("scheduler service of Dask cluster '{}'", c.name)});
        w.objects.push_back({Role::kDaskScheduler, "apps/v1", "Deployment", scheduler,
                             cluster_file(c, "scheduler-deployment"), fmt::format("scheduler of Dask cluster '{}'", c.name),
                             Ready::kAvailable});
        for (const auto& g : c.workers)
          w.objects.push_back({Role::kDaskWorkers, "apps/v1", "Deployment", worker_group_name(sys, c, g),
                               cluster_file(c, g.name + "-deployment"),
                               fmt::format("worker group '{}' of Dask cluster '{}'", g.name, c.name), Ready::kApplied,
                               g.name});
      });
}

std::string service_file(const Service& s, std::string_view what) { return fmt::format("k8s/service-{}-{}.yaml", s.name, what); }

/// A model server: its identity, Deployment and Service, and what keeps it up, watched, scaled
/// and reachable.
void service_objects(const System& sys, const Service& s, Workload& w) {
  const std::string name = service_name(sys, s);
  if (sys.gcp)
    w.objects.push_back({Role::kServiceIdentity, "v1", "ServiceAccount", s.identity.ksa, service_file(s, "serviceaccount"),
                         fmt::format("Workload Identity service account of service '{}'", s.name)});
  w.objects.push_back({Role::kServerService, "v1", "Service", name, service_file(s, "service"),
                       fmt::format("Service of service '{}'", s.name)});
  w.objects.push_back({Role::kServer, "apps/v1", "Deployment", name, service_file(s, "deployment"),
                       fmt::format("{} server of service '{}'", s.kind(), s.name), Ready::kRolledOut});
  if (s.max > 1)  // more than one pod can serve: drains take them one at a time
    w.objects.push_back({Role::kDisruptionBudget, "policy/v1", "PodDisruptionBudget", name, service_file(s, "pdb"),
                         fmt::format("disruption budget of service '{}'", s.name)});
  w.objects.push_back({Role::kPodMonitoring, "monitoring.googleapis.com/v1", "PodMonitoring", name,
                       service_file(s, "podmonitoring"), fmt::format("metrics scraping of service '{}'", s.name)});
  if (s.autoscaled())
    w.objects.push_back({Role::kAutoscaler, "autoscaling/v2", "HorizontalPodAutoscaler", name, service_file(s, "hpa"),
                         fmt::format("autoscaler of service '{}'", s.name)});
  if (s.expose.gateway)
    w.objects.push_back({Role::kVirtualService, "networking.istio.io/v1", "VirtualService", name,
                         service_file(s, "virtualservice"), fmt::format("gateway routes of service '{}'", s.name)});
}

/// The rolling update of a Deployment of `replicas` pods whose pools hold `room` more beside the
/// system at its largest: none (Kubernetes' default) when its surge fits; else the surge that fits;
/// else one pod at a time stopped before its replacement starts, which the disruption budget of a
/// service (maxUnavailable 1) allows too. A pod on a GPU pool at its maximum finds no node for a
/// surge pod, and a rollout waiting for one never ends.
std::optional<Rollout> rollout_for(long long replicas, std::optional<long long> room) {
  const long long surge = (replicas + 3) / 4, unavailable = replicas / 4;
  if (!room || *room >= surge) return std::nullopt;
  if (*room > 0) return Rollout{*room, unavailable};
  return Rollout{0, 1};
}

/// An autoscaled service's rolling update when its pool has no room for a surge pod with the
/// service at its largest: the room is looked for at each count it may run at. Where a surge pod
/// fits at its fewest (and so at one replica, where stopping a pod first is an outage), one is
/// started first and none stopped below the count whose pool is full; from that count one in
/// maxUnavailable's percentage is stopped first, which the Deployment controller rounds down per
/// count. nullopt where no count leaves room (or too many counts to look at): rollout_for's.
std::optional<Rollout> autoscaled_rollout(const System& sys, const Service& s) {
  constexpr int kMostCounts = 32;
  if (!s.autoscaled() || s.max - s.min >= kMostCounts) return std::nullopt;
  int full = 0;  // the fewest replicas at which no surge pod fits
  for (int r = s.min; r <= s.max && full == 0; ++r) {
    System at = sys;
    Service& t = at.services.at(s.name);
    t.min = t.max = t.replicas = r;
    const auto room = surge_room(place(at), s.name, 1);
    if (!room) return std::nullopt;
    if (*room == 0) full = r;
  }
  if (full == 0 || full == s.min) return std::nullopt;
  return Rollout{1, 0, (100 + full - 1) / full};
}

/// Sets the rollout of every Deployment of the clusters and services from the cluster model.
void plan_rollouts(const System& sys, Plan& p) {
  bool any = false;
  for (const auto* list : {&p.clusters, &p.services})
    for (const auto& w : *list)
      for (const auto& o : w.objects) any = any || o.kind == "Deployment";
  if (!any) return;
  const Placement placed = place(sys);
  for (auto& w : p.clusters)
    for (auto& o : w.objects) {
      const ComputeCluster& c = *w.cluster;
      if (o.role == Role::kDaskScheduler)
        o.rollout = rollout_for(1, surge_room(placed, c.name + "/" + c.lead().name, 1));
      if (o.role != Role::kDaskWorkers) continue;
      for (const auto& g : c.workers)
        if (g.name == o.group) o.rollout = rollout_for(g.max, surge_room(placed, c.name + "/" + g.name, (g.max + 3) / 4));
    }
  for (auto& w : p.services)
    for (auto& o : w.objects)
      if (o.role == Role::kServer) {
        o.rollout = rollout_for(w.service->max, surge_room(placed, w.name, (w.service->max + 3) / 4));
        if (o.rollout && o.rollout->max_surge == 0)
          if (auto scaled = autoscaled_rollout(sys, *w.service)) o.rollout = scaled;
      }
}

}  // namespace

const Object& Workload::done() const {
  for (const auto& o : objects)  // a CronJob is done once applied: its Jobs come at their times
    if (o.ready != Ready::kApplied || o.role == Role::kCronJob) return o;
  throw std::logic_error("workload '" + name + "' has no object that says when it is done");
}

const Workload* Plan::workload(std::string_view name) const {
  for (const auto& w : workloads)
    if (w.name == name) return &w;
  return nullptr;
}

const Workload* Plan::cluster(std::string_view name) const {
  for (const auto& w : clusters)
    if (w.name == name) return &w;
  return nullptr;
}



std::vector<const Object*> Plan::apply_order() const {
  std::vector<const Object*> out;
  for (const auto& o : shared) out.push_back(&o);
  for (const auto& w : clusters)
    for (const auto& o : w.objects) out.push_back(&o);
  for (const auto& w : services)
    for (const auto& o : w.objects) out.push_back(&o);
  for (const auto& w : workloads)
    for (const auto& o : w.objects) out.push_back(&o);
  return out;
}

std::vector<const Object*> Plan::teardown_order() const {
  auto out = apply_order();
  std::reverse(out.begin(), out.end());
  return out;
}

const Object* Plan::object_in(std::string_view file) const {
  for (const Object* o : apply_order())
    if (o->file == file) return o;
  return nullptr;
}

Plan plan(const System& sys) {
  Plan p;
  if (sys.owns_namespace)
    p.shared.push_back({Role::kNamespace, "v1", "Namespace", sys.ns, std::string(kNamespaceFile), "namespace"});
  // The networks GPUDirect RDMA pods name: the second gVNIC NIC's, then one per RDMA NIC;
  // cluster-scoped, made before any pod.
  if (sys.rdma_nics() > 0) {
    const std::string& name = catalog().rdma().gvnic_network;
    Object params{Role::kNetworkParams, "networking.gke.io/v1", "GKENetworkParamSet", name,
                  fmt::format("k8s/networkparams-{}.yaml", name), "the second gVNIC NIC: its VPC and subnet"};
    params.nic = kGvnicNic;
    p.shared.push_back(params);
    Object network{Role::kNetwork, "networking.gke.io/v1", "Network", name, fmt::format("k8s/network-{}.yaml", name),
                   "network of the second gVNIC NIC"};
    network.nic = kGvnicNic;
    p.shared.push_back(network);
  }
  for (int nic = 0; nic < sys.rdma_nics(); ++nic) {
    Object params{Role::kNetworkParams, "networking.gke.io/v1", "GKENetworkParamSet", rdma_network(nic),
                  fmt::format("k8s/networkparams-{}.yaml", rdma_network(nic)),
                  fmt::format("RDMA NIC {}: its VPC and subnet", nic)};
    params.nic = nic;
    p.shared.push_back(params);
    Object network{Role::kNetwork, "networking.gke.io/v1", "Network", rdma_network(nic),
                   fmt::format("k8s/network-{}.yaml", rdma_network(nic)), fmt::format("RDMA network of NIC {}", nic)};
    network.nic = nic;
    p.shared.push_back(network);
  }
  if (sys.rdma_nics() > 0)
    p.shared.push_back({Role::kGibInstaller, "apps/v1", "DaemonSet", sys.name + "-gib-installer",
                        "k8s/gib-installer-daemonset.yaml", "the gIB NCCL plugin on RDMA nodes"});
  if (sys.queue) {  // admission before any workload: flavors, then the quota, then the namespace's queue
    p.needs_kueue = true;
    if (std::any_of(sys.pools.begin(), sys.pools.end(), [](const auto& e) { return e.second.tas(); }))
      p.shared.push_back({Role::kTopology, "kueue.x-k8s.io/v1beta2", "Topology", queue_topology_name(sys), "k8s/topology.yaml",
                          "Kueue topology: GKE's blocks, sub-blocks and hosts"});
    for (const Pool& pool : sys.gke_pools())
      p.shared.push_back({Role::kResourceFlavor, "kueue.x-k8s.io/v1beta2", "ResourceFlavor", queue_flavor_name(sys, pool),
                          fmt::format("k8s/flavor-{}.yaml", pool.name),
                          pool.ladder_of.empty()
                              ? fmt::format("Kueue flavor of pool '{}'", pool.name)
                              : fmt::format("Kueue flavor of pool '{}', rung {} ({})", pool.ladder_of, pool.rung + 1,
                                            pool.provisioning),
                          Ready::kApplied, pool.name});
    if (queued_provisioning(sys)) {
      p.shared.push_back({Role::kProvisioningConfig, "kueue.x-k8s.io/v1beta2", "ProvisioningRequestConfig",
                          queued_check_name(sys), "k8s/provisioning-queued.yaml",
                          "Kueue's ProvisioningRequest parameters for GKE's queued provisioning"});
      p.shared.push_back({Role::kAdmissionCheck, "kueue.x-k8s.io/v1beta2", "AdmissionCheck", queued_check_name(sys),
                          "k8s/admissioncheck-queued.yaml", "Kueue admission check: GKE makes a queued rung's nodes first"});
    }
    p.shared.push_back({Role::kClusterQueue, "kueue.x-k8s.io/v1beta2", "ClusterQueue", cluster_queue_name(sys),
                        "k8s/clusterqueue.yaml", "Kueue cluster queue: the pools' capacity"});
    p.shared.push_back({Role::kLocalQueue, "kueue.x-k8s.io/v1beta2", "LocalQueue", sys.queue->name, "k8s/localqueue.yaml",
                        "Kueue queue of the namespace"});
  }
  if (sys.identity && sys.gcp)
    p.shared.push_back({Role::kServiceAccount, "v1", "ServiceAccount", sys.identity->ksa,
                        std::string(kServiceAccountFile), "Workload Identity service account"});
  for (const auto& [name, c] : sys.clusters) {
    // A per-job cluster is no object of its own: each job on it describes one.
    if (c.per_job()) continue;
    Workload w;
    w.cluster = &c;
    w.name = name;
    compute_cluster(sys, c, w);
    p.clusters.push_back(std::move(w));
  }
  if (sys.uses_gateway())
    p.shared.push_back({Role::kGateway, "networking.istio.io/v1", "Gateway", gateway_name(sys), "k8s/gateway.yaml",
                        "Istio ingress gateway's routes into the system"});
  // The operators to install, as the cluster model counts their pods (model/placement.h).
  const Addons addons = addons_of(sys);
  p.needs_kuberay = addons.kuberay;
  p.needs_istio = addons.istio;
  p.needs_metrics_adapter = addons.metrics_adapter;
  for (const auto& [name, s] : sys.services) {
    Workload w;
    w.service = &s;
    w.name = name;
    w.needs = s.needs;
    service_objects(sys, s, w);
    p.services.push_back(std::move(w));
  }
  plan_rollouts(sys, p);
  for (const auto& step : sys.steps) {
    Workload w;
    w.step = &step;
    w.name = step.name;
    w.needs = step.needs;
    w.on = step.cluster;
    step_objects(sys, step, w);  // where a new kind of step or engine says which objects it becomes
    for (const auto& o : w.objects) p.needs_jobset = p.needs_jobset || o.role == Role::kJobSet;
    p.workloads.push_back(std::move(w));
  }
  return p;
}

std::string_view wait_condition(Ready ready) {
  switch (ready) {
    case Ready::kApplied: return "";
    case Ready::kJobComplete: return "condition=complete";
    case Ready::kAvailable: return "condition=available";
    case Ready::kRayReady: return "jsonpath={.status.state}=ready";
    case Ready::kRaySucceeded: return "jsonpath={.status.jobStatus}=SUCCEEDED";
    case Ready::kRolledOut: return "";  // kubectl rollout status, not kubectl wait
    case Ready::kJobSetCompleted: return "condition=Completed";
  }
  return "";
}

SecurityNeed gib_installer_need(const System& sys) {
  std::vector<std::string> pools;
  for (const auto& [name, p] : sys.pools)
    if (p.rdma) pools.push_back(fmt::format("'{}'", name));
  return {PodSecurityLevel::kPrivileged,
          fmt::format("copy the gIB NCCL plugin into the host's folders on every node of RDMA pool{} {} from a "
                      "privileged init container, on the host network and PID namespace with hostPath volumes, as "
                      "GKE's A4 and A3 Ultra setup does",
                      pools.size() == 1 ? "" : "s", fmt::join(pools, ", "))};
}

bool makes_pods(Role role) {
  switch (role) {
    case Role::kBatchJob:
    case Role::kCronJob:
    case Role::kJobSet:
    case Role::kDaskScheduler:
    case Role::kDaskWorkers:
    case Role::kRayCluster:
    case Role::kRayJob:  // a per-job cluster's pods, or KubeRay's submitter Job's
    case Role::kGibInstaller:
    case Role::kServer: return true;
    case Role::kNamespace:
    case Role::kServiceAccount:
    case Role::kEntryScript:
    case Role::kRendezvous:
    case Role::kDaskService:
    case Role::kNetworkParams:
    case Role::kNetwork:
    case Role::kGateway:
    case Role::kServiceIdentity:
    case Role::kServerService:
    case Role::kDisruptionBudget:
    case Role::kPodMonitoring:
    case Role::kAutoscaler:
    case Role::kVirtualService:
    case Role::kTopology:
    case Role::kResourceFlavor:
    case Role::kProvisioningConfig:
    case Role::kAdmissionCheck:
    case Role::kClusterQueue:
    case Role::kLocalQueue: return false;
  }
  return false;
}

/// The kind in lower case: how kubectl names it ("job", "rayjob").
static std::string lower_kind(const Object& o) {
  std::string kind = o.kind;
  std::transform(kind.begin(), kind.end(), kind.begin(), [](unsigned char c) { return std::tolower(c); });
  return kind;
}

std::string kubectl_ref(const Object& o) { return lower_kind(o) + "/" + o.name; }

std::string resource_type(const Object& o) {
  std::string type = lower_kind(o);
  // The API's plural: a consonant's y becomes ies (topologies), everything else takes an s.
  if (type.size() > 1 && type.back() == 'y' && std::string_view("aeiou").find(type[type.size() - 2]) == std::string_view::npos)
    type = type.substr(0, type.size() - 1) + "ies";
  else
    type += "s";
  if (const size_t slash = o.api_version.find('/'); slash != std::string::npos)
    type += "." + o.api_version.substr(0, slash);
  return type;
}

}  // namespace trainc::k8s

namespace trainc::k8s {

std::string logs_ref(const Object& o) {
  switch (o.role) {
    case Role::kRayJob:  // HTTPMode: no Job, no submitter pod (the runbook's Watch says what to run instead)
      throw std::logic_error("RayJob '" + o.name + "' has no pod `kubectl logs` can follow");
    case Role::kJobSet: return fmt::format("job/{}-{}-0", o.name, o.group);  // its first Job: host 0 coordinates
    case Role::kCronJob: return fmt::format("--selector={}={}", kScheduleLabel, o.name);  // the pods of its Jobs
    case Role::kNamespace:
    case Role::kServiceAccount:
    case Role::kEntryScript:
    case Role::kRendezvous:
    case Role::kBatchJob:
    case Role::kDaskService:
    case Role::kDaskScheduler:
    case Role::kDaskWorkers:
    case Role::kRayCluster:
    case Role::kNetworkParams:
    case Role::kNetwork:
    case Role::kGibInstaller:
    case Role::kGateway:
    case Role::kServiceIdentity:
    case Role::kServer:
    case Role::kServerService:
    case Role::kDisruptionBudget:
    case Role::kPodMonitoring:
    case Role::kAutoscaler:
    case Role::kVirtualService:
    case Role::kTopology:
    case Role::kResourceFlavor:
    case Role::kProvisioningConfig:
    case Role::kAdmissionCheck:
    case Role::kClusterQueue:
    case Role::kLocalQueue: return kubectl_ref(o);
  }
  return kubectl_ref(o);
}

}  // namespace trainc::k8s
