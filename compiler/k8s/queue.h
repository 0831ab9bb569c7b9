#pragma once
// Kueue admission (spec `queue:`): a ResourceFlavor per pool, one ClusterQueue whose quotas are
// the pools' capacity, a LocalQueue in the namespace, and the label that puts a workload in it.
#include "k8s/plan.h"
#include "k8s/pod.h"

namespace trainc::k8s {

inline constexpr std::string_view kQueueLabel = "kueue.x-k8s.io/queue-name";

/// `labels` with the queue label when the system has a queue: for Jobs, JobSets and RayJobs.
ojson queued(const System& sys, ojson labels);

ojson resource_flavor(const System& sys, const Object& obj);
ojson cluster_queue(const System& sys, const Object& obj);
ojson local_queue(const System& sys, const Object& obj);

}  // namespace trainc::k8s
