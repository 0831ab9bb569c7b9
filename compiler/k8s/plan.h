#pragma once
// The Kubernetes plan: what every workload of a system becomes in Kubernetes (each object's kind,
// apiVersion, name and file), the order to apply them in, what "ready" or "done" means for each,
// and the order to tear them down. Computed once after the checks; the k8s, scripts and runbook
// emitters all read it, so none of them re-derives the objects or parses emitted text.
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "model/model.h"
#include "model/placement.h"

namespace trainc::k8s {

/// What the object does in the system, and so how the k8s emitter builds it.
enum class Role {
  kNamespace,       ///< the system's own namespace
  kServiceAccount,  ///< the Workload Identity service account
  kEntryScript,     ///< a ConfigMap holding a step's entry script
  kRendezvous,      ///< the headless Service ranks of a multi-node step resolve each other by
  kBatchJob,        ///< the (Indexed) Job that runs a step
  kCronJob,         ///< the CronJob that makes a scheduled step's Jobs
  kJobSet,          ///< the JobSet that runs a TPU step (an Indexed Job per slice) or a gang (one Indexed Job)
  kDaskService,     ///< the Service in front of a Dask scheduler
  kDaskScheduler,   ///< the Dask scheduler's Deployment
  kDaskWorkers,     ///< one Dask worker group's Deployment
  kRayCluster,      ///< a KubeRay RayCluster
  kRayJob,          ///< a step submitted to a RayCluster
  kNetworkParams,   ///< a GKENetworkParamSet: one RDMA NIC's VPC and subnet
  kNetwork,         ///< a GKE Network pods attach an RDMA NIC through
  kGibInstaller,    ///< the DaemonSet that puts the gIB NCCL plugin on RDMA nodes
  kGateway,         ///< the Istio Gateway on the ingress gateway's port 80, for every exposed service
  kServiceIdentity, ///< a service's own Workload Identity service account
  kServer,          ///< a service's Deployment of server pods
  kServerService,   ///< the Service in front of them, ports named by protocol
  kDisruptionBudget,///< a PodDisruptionBudget keeping all but one server pod up during drains
  kPodMonitoring,   ///< a Managed Prometheus PodMonitoring scraping the servers' metrics port
  kAutoscaler,      ///< a HorizontalPodAutoscaler on the servers' queue
  kVirtualService,  ///< the Istio VirtualService routing the gateway's traffic to the Service
  kTopology,        ///< the Kueue Topology: GKE's block, sub-block, host and node levels
  kResourceFlavor,  ///< a Kueue ResourceFlavor: one pool's nodes
  kProvisioningConfig, ///< the Kueue ProvisioningRequestConfig of queued rungs (GKE's queued provisioning)
  kAdmissionCheck,  ///< the Kueue AdmissionCheck that asks GKE for a queued rung's nodes
  kClusterQueue,    ///< the Kueue ClusterQueue holding the pools' capacity as quota
  kLocalQueue,      ///< the Kueue LocalQueue the system's workloads are labelled with
};

/// Whether objects of `role` describe pods: those the Pod Security Standards judge.
bool makes_pods(Role role);

/// Where the gIB installer DaemonSet runs: beside GKE's own node agents, not in the system's namespace.
inline constexpr std::string_view kGibInstallerNamespace = "kube-system";
/// What the gIB installer's pods need: the Pod Security level and why, as for a workload.
SecurityNeed gib_installer_need(const System& sys);

/// When an object counts as done: what `apply.sh` and the runbook wait for before the workloads
/// that need it start.
enum class Ready {
  kApplied,      ///< accepted by the API server; nothing to wait for
  kJobComplete,  ///< a Job's Complete condition (a Failed condition means it never will be)
  kAvailable,    ///< a Deployment's Available condition: its pods are ready
  kRayReady,     ///< a RayCluster's status.state is ready
  kRaySucceeded, ///< a RayJob's status.jobStatus is SUCCEEDED
  kRolledOut,    ///< a Deployment's rollout is complete (`kubectl rollout status`): every pod is new and ready
  kJobSetCompleted,  ///< a JobSet's Completed condition (its Failed condition means it never will be)
};

/// The `nic` of the Network and GKENetworkParamSet of RDMA nodes' second gVNIC NIC (eth1).
inline constexpr int kGvnicNic = -1;

/// A Deployment's rolling update, when Kubernetes' default (maxSurge 25% rounded up,
/// maxUnavailable 25% rounded down) would start more pods than its pool holds beside the rest.
struct Rollout {
  long long max_surge = 0, max_unavailable = 1;
  /// When > 0, maxUnavailable is this percentage of the replicas the Deployment has as it rolls
  /// (rounded down): none below the count at which its pool has no room left for a surge pod, one
  /// or more from there (an autoscaled service rolls without an outage at one replica).
  int max_unavailable_percent = 0;
  /// Its only pod stops before its replacement starts: the server is down through the roll.
  bool outage(long long replicas) const {
    return max_unavailable_percent == 0 && max_surge == 0 && replicas <= max_unavailable;
  }
};

struct Object {
  Object(Role role, std::string api_version, std::string kind, std::string name, std::string file, std::string what,
         Ready ready = Ready::kApplied, std::string group = {})
      : role(role), api_version(std::move(api_version)), kind(std::move(kind)), name(std::move(name)),
        file(std::move(file)), what(std::move(what)), ready(ready), group(std::move(group)) {}
  Role role;
  std::string api_version, kind, name;
  std::string file;  ///< "k8s/<name>.yaml", as in the output folder
  std::string what;  ///< the file header's description: "entry script of step 'train'"
  Ready ready = Ready::kApplied;
  std::string group;  ///< the cluster's pod group a kDaskWorkers object runs; the pool of a kResourceFlavor;
                      ///< the replicated Job of a kJobSet
  int nic = 0;        ///< the RDMA NIC of a kNetwork / kNetworkParams object, or kGvnicNic
  std::optional<Rollout> rollout;  ///< a Deployment's, when the default does not fit (plan())
};

/// One workload (a pipeline step, a long-lived compute cluster or a service) and its objects, in
/// apply order.
struct Workload {
  const Step* step = nullptr;                ///< set for a step
  const ComputeCluster* cluster = nullptr;   ///< set for a cluster
  const Service* service = nullptr;          ///< set for a service
  std::string name;
  std::vector<std::string> needs;  ///< steps that must be done before this one starts
  std::string on;                  ///< the cluster a step runs on ("" for none): ready before it starts
  std::vector<Object> objects;
  std::string entry_script;        ///< the data of its kEntryScript ConfigMap
  /// The object whose readiness means the workload is done (a step's Job).
  const Object& done() const;
};

struct Plan {
  std::vector<Object> shared;         ///< applied before any workload: the namespace first
  std::vector<Workload> clusters;     ///< long-lived compute clusters, applied before the steps
  std::vector<Workload> services;     ///< model servers, applied after the clusters, before the steps
  std::vector<Workload> workloads;    ///< the steps, in dependency order
  std::string kustomization = "k8s/kustomization.yaml";

  const Workload* workload(std::string_view name) const;
  const Workload* cluster(std::string_view name) const;
  /// Whether RayClusters or RayJobs are in the plan: the KubeRay operator must be installed first.
  bool needs_kuberay = false;
  /// Whether JobSets are in the plan: the JobSet controller must be installed first.
  bool needs_jobset = false;
  /// Whether Kueue objects are in the plan: Kueue must be installed first.
  bool needs_kueue = false;
  /// Whether apply.sh installs Istio (the spec enables it and does not bring its own).
  bool needs_istio = false;
  /// Whether a HorizontalPodAutoscaler reads Managed Prometheus metrics: the Custom Metrics
  /// Stackdriver Adapter must serve them.
  bool needs_metrics_adapter = false;
  /// Every object: the shared ones, then each cluster's, each service's, each step's.
  std::vector<const Object*> apply_order() const;
  /// The reverse: steps, services, clusters, then the namespace.
  std::vector<const Object*> teardown_order() const;
  /// The object written to `file`, or nullptr.
  const Object* object_in(std::string_view file) const;
};

Plan plan(const System& sys);

/// The `kubectl wait --for=` argument of `ready`; "" for kApplied and kRolledOut (which
/// `kubectl rollout status` waits for).
std::string_view wait_condition(Ready ready);
/// How kubectl names the object: "job/mnist-train".
std::string kubectl_ref(const Object& o);
/// The object's resource type as kubectl takes it whole, plural and group: "jobs.batch",
/// "configmaps", "jobsets.jobset.x-k8s.io".
std::string resource_type(const Object& o);
/// What `kubectl logs` follows for the object: a Job itself; for a JobSet, its first slice's Job.
/// A RayJob has none (KubeRay submits it over HTTP, with no submitter Job): it throws.
std::string logs_ref(const Object& o);

}  // namespace trainc::k8s
