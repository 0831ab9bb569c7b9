#pragma once
// What apply.sh's pruning looks at (emit_scripts_runs.cpp) and `trainc diff --live` predicts
// (inspect/live.cpp): the resource types trainc makes for a system, and how a step's run reads as
// finished.
#include <string_view>

namespace trainc::k8s {

/// The run kinds: their resource type, where their state is (a kubectl jsonpath), and the extended
/// regular expression it matches once they finished.
struct RunType {
  std::string_view type, state, done;
};
inline constexpr RunType kRunTypes[] = {
    {"jobs.batch", ".status.conditions[*].type", "(^|,)(Complete|Failed)(,|$)"},
    {"jobsets.jobset.x-k8s.io", ".status.terminalState", "^(Completed|Failed)$"},
    {"rayjobs.ray.io", ".status.jobDeploymentStatus", "^(Complete|Failed|ValidationFailed)$"},
};
/// Every other type trainc makes in a system's namespace, and outside any (Kueue's cluster-scoped
/// objects, named after the system). Never the namespace itself, and never the GKE networks and the
/// gIB installer, which every system on the cluster shares by name.
inline constexpr std::string_view kNamespacedTypes[] = {
    "configmaps", "services", "deployments.apps", "serviceaccounts", "poddisruptionbudgets.policy",
    "horizontalpodautoscalers.autoscaling", "podmonitorings.monitoring.googleapis.com",
    "virtualservices.networking.istio.io", "gateways.networking.istio.io", "rayclusters.ray.io",
    "localqueues.kueue.x-k8s.io", "cronjobs.batch"};
inline constexpr std::string_view kClusterTypes[] = {
    "clusterqueues.kueue.x-k8s.io", "resourceflavors.kueue.x-k8s.io", "topologies.kueue.x-k8s.io",
    "admissionchecks.kueue.x-k8s.io", "provisioningrequestconfigs.kueue.x-k8s.io"};

}  // namespace trainc::k8s
