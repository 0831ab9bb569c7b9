#pragma once
// Kueue admission (spec `queue:`): a ResourceFlavor per pool, one ClusterQueue whose quotas are
// the pools' capacity, a LocalQueue in the namespace, and the label that puts a workload in it;
// with topology-aware placement (pools' `placement`) a Topology of GKE's node levels, which those
// pools' flavors name, and the annotations that ask it on every PodSet placed there.
#include "k8s/plan.h"
#include "k8s/pod.h"

namespace trainc::k8s {

inline constexpr std::string_view kQueueLabel = "kueue.x-k8s.io/queue-name";

/// `labels` with the queue label when the system has a queue: for Jobs, JobSets and RayJobs.
ojson queued(const System& sys, ojson labels);

/// Has the pod template metadata `meta` of a Kueue PodSet of `pods` pods on `pool` ask for its
/// topology_request() (model.h) with Kueue's annotations.
void ask_topology(ojson& meta, const System& sys, const Pool* pool, int pods);
/// The same for a request made already.
void ask_topology(ojson& meta, const TopologyRequest& r);

/// The Topology: "<system>-<scope_hash of namespace, system and its levels>" (cluster-scoped: the
/// namespace tells two systems of one name apart, k8s/names.h). Kueue keeps `spec.levels`
/// immutable (CRD rule `self == oldSelf`), so a trainc whose catalog lists other levels writes a new
/// Topology, and the flavors that name it are new too (queue_flavor_name), instead of an apply
/// Kueue refuses.
std::string queue_topology_name(const System& sys);
/// A pool's ResourceFlavor: "<system>-<pool>-<scope_hash of namespace, system, pool>", and on a pool
/// placed by topology of its nodeLabels and topologyName too: once `topologyName` is set Kueue keeps
/// it and the node labels immutable (CRD rules), so a change of either (or placement turned off)
/// makes a new flavor, which the ClusterQueue names in the same apply; the old one is pruned.
std::string queue_flavor_name(const System& sys, const Pool& pool);

/// Kueue's waitForPodsReady as apply.sh configures it (apis/config/v1beta2 WaitForPodsReady of the
/// pinned Kueue; on by default since v0.19 with a 30-minute timeout): a queued workload whose pods are
/// not all Ready `timeout_seconds` after admission is evicted, releasing its quota, and queued again
/// after a back-off; a running one that loses a pod gets `recovery_seconds` to replace it.
struct PodsReady {
  /// The spec's `queue.podsReadyTimeout`; else the time a queued pod may take to be Ready, from the
  /// same two numbers as a default service's progress deadline (k8s/services.h rollout_timing): the
  /// catalog's pull margin (a node to come up, the image to be pulled) and kDefaultStartupSeconds
  /// (the process's start: here the entry script's input sync and checkpoint restore, which it
  /// finishes before the pod reports Ready).
  int timeout_seconds = 0;
  bool derived = true;   ///< timeout_seconds is the default
  int recovery_seconds = 0;  ///< the same as the timeout (Kueue's own default)
  /// Kueue admits nothing more until every admitted workload is Ready: set when a queued workload
  /// spans several pods (a gang), which with another gang could each hold part of a pool.
  bool block_admission = false;
  std::string gang;  ///< the largest gang, e.g. "step `pretrain` (4 pods)"; "" when none
  int backoff_base_seconds = 0, backoff_max_seconds = 0;  ///< Kueue's defaults (catalog)
};
PodsReady pods_ready(const System& sys);
/// A duration as Kueue's configuration (Go's time.ParseDuration) reads it: "25m", "1h30m", "90s".
std::string go_duration(int seconds);
/// Kueue's Configuration for the system: the pinned release's, plus waitForPodsReady (YAML text).
std::string kueue_configuration(const System& sys);
/// Where the output holds it, as a ConfigMap apply.sh applies over the release's.
inline constexpr std::string_view kKueueConfigFile = "addons/kueue-manager-config.yaml";
/// The ConfigMap that holds it, as the release manifest names and labels it; apply.sh applies it
/// after the manifest (addons/kueue-manager-config.yaml).
ojson kueue_config_map(const System& sys);
/// What apply.sh records on Kueue's Deployment to know which configuration its pods run: a hash
/// of kueue_configuration(), which only a change of configuration changes.
std::string kueue_config_digest(const System& sys);
/// The annotation apply.sh sets on the pod template of Kueue's Deployment, and its value: the
/// digest, then the system and its timeout, for whoever reads it next.
inline constexpr std::string_view kKueueConfigAnnotation = "trainc.dev/kueue-config";
std::string kueue_config_mark(const System& sys);

/// Whether a pool (or a rung of one) gets its nodes by GKE's queued provisioning: Kueue then asks
/// for a step's nodes with a ProvisioningRequest before it admits the step there.
bool queued_provisioning(const System& sys);
/// The AdmissionCheck and ProvisioningRequestConfig of queued provisioning, both cluster-scoped:
/// "<system>-queued-<scope_hash of namespace, system>".
std::string queued_check_name(const System& sys);
/// The ProvisioningRequest parameters Kueue reads off a queued step's Job, JobSet or RayJob
/// (annotations provreq.kueue.x-k8s.io/<parameter>): maxRunDurationSeconds, the queued rung's
/// `maxRunDuration`, else the step's timeout, else GKE's most (7 days). Empty off queued pools.
/// `pools`: the pools its pods are on, when not the step's own (a per-job Ray cluster's head and workers).
ojson provisioning_annotations(const System& sys, const Step& step, const std::vector<std::string>& pools = {});
/// GKE keeps a queued request's nodes at most this long (maxRunDurationSeconds).
inline constexpr int kQueuedMaxRunSeconds = 7 * 24 * 3600;

ojson topology(const System& sys, const Object& obj);
ojson provisioning_config(const System& sys, const Object& obj);
ojson admission_check(const System& sys, const Object& obj);
ojson resource_flavor(const System& sys, const Object& obj);
ojson cluster_queue(const System& sys, const Object& obj);
ojson local_queue(const System& sys, const Object& obj);

}  // namespace trainc::k8s
