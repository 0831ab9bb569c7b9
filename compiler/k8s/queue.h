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

/// The Topology: "<system>-<hash of its levels>". Kueue keeps `spec.levels` immutable (CRD rule
/// `self == oldSelf`), so a trainc whose catalog lists other levels writes a new Topology, and the
/// flavors that name it are new too (queue_flavor_name), instead of an apply Kueue refuses.
std::string queue_topology_name(const System& sys);
/// A pool's ResourceFlavor: "<system>-<pool>", and on a pool placed by topology
/// "<system>-<pool>-<hash of nodeLabels and topologyName>": once `topologyName` is set Kueue keeps
/// it and the node labels immutable (CRD rules), so a change of either (or placement turned off)
/// makes a new flavor, which the ClusterQueue names in the same apply; the old one is pruned.
std::string queue_flavor_name(const System& sys, const Pool& pool);

ojson topology(const System& sys, const Object& obj);
ojson resource_flavor(const System& sys, const Object& obj);
ojson cluster_queue(const System& sys, const Object& obj);
ojson local_queue(const System& sys, const Object& obj);

}  // namespace trainc::k8s
