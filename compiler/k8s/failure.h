#pragma once
// What Kubernetes does when a step's pod fails (model/failure.h has the rules):
//  - a pod of a Job alone (one pod, or one of independent shards): a disruption is ignored (the
//    Job makes the pod again without counting it), a no-retry exit code fails the Job at once,
//    anything else counts against backoffLimit (backoffLimitPerIndex for shards);
//  - a pod of a JobSet (a TPU slice, a gang): any failure fails its Job at once (backoffLimit 0),
//    with the reason PodFailurePolicy and a message that says which rule matched; the JobSet's
//    failure policy then restarts every Job without counting a disruption, fails on a no-retry
//    exit code, and counts anything else against maxRestarts (the step's `retries`).
// Sources: KEP-3329 and the Job controller's pod_failure_policy.go (kubernetes/kubernetes
// pkg/controller/job: the FailJob messages below), JobSet v0.12.0 api/jobset/v1alpha2
// jobset_types.go (FailurePolicyRule) and site/static/examples/failure-policy.
#include <string_view>

#include <nlohmann/json.hpp>

#include "model/model.h"

namespace trainc::k8s {

/// The Job controller's message for a pod that matched a FailJob rule on a pod condition ("Pod
/// %s/%s has condition %v matching %v rule at index %d"), as a JobSet rule's RE2 pattern.
inline constexpr std::string_view kDisruptionMessage = "has condition DisruptionTarget matching FailJob rule";
/// ... and on an exit code ("Container %s for pod %s/%s failed with exit code %v matching %v
/// rule at index %d").
inline constexpr std::string_view kExitCodeMessage = "failed with exit code [0-9]+ matching FailJob rule";

/// A step's Job's spec.podFailurePolicy. `in_jobset`: a disruption fails the Job too (its JobSet
/// restarts every Job); otherwise it is ignored.
nlohmann::ordered_json pod_failure_policy(const Step& step, bool in_jobset);

/// A step's JobSet's spec.failurePolicy: restart on a disruption without counting it, fail on a
/// no-retry exit code, count anything else against `retries`. Jobs and their pods of an attempt
/// are gone before the next attempt's start (BlockingRecreate), so an old pod's last sync of its
/// outputs or checkpoint is done before a new one restores them.
nlohmann::ordered_json jobset_failure_policy(const Step& step);

}  // namespace trainc::k8s
