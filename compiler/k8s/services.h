#pragma once
// What a service (a long-running model server) becomes in Kubernetes: its Workload Identity
// service account, the server Deployment and the Service in front of it, a PodDisruptionBudget,
// a Managed Prometheus PodMonitoring, a HorizontalPodAutoscaler, and the Istio Gateway and
// VirtualService that route the ingress gateway's traffic to it. Names and files come from the
// plan (k8s/plan.h).
#include "k8s/plan.h"
#include "k8s/pod.h"

namespace trainc::k8s {

/// The pod label value that selects the Istio ingress gateway's pods (the chart derives it from
/// the release name, stdlib/catalog.yaml).
inline constexpr std::string_view kIngressGatewayLabel = "ingressgateway";
/// How long a service's rollout may take, in seconds, all from one place: the startup probe's
/// window (its period times its failures, at least the spec's `startupTimeout`); the Deployment's
/// progressDeadlineSeconds, that window plus the catalog's pull margin (a node to come up, the
/// image to be pulled), so the deadline never fails a pod its probe still waits for; and how long
/// scripts/apply.sh's `kubectl rollout status` waits, the deadline plus a minute, so the
/// Deployment's own verdict ("exceeded its progress deadline") comes before the wait gives up.
struct RolloutTiming {
  static constexpr int kProbePeriod = 10;
  int probe_failures = 1;
  int startup_window = 0, progress_deadline = 0, wait = 0;
};
RolloutTiming rollout_timing(const Service& s);
/// When rolling service `w`'s Deployment stops its only pod before its replacement starts (at its
/// fewest replicas its pool has no room for a surge pod, plan()'s rollout), what that means in
/// words: how long the service is down and how to roll without it; "" when a pod serves throughout.
std::string roll_outage(const Workload& w);
ojson service_account(const System& sys, const Service& s, const Object& obj);
ojson server_deployment(const System& sys, const Service& s, const Object& obj);
ojson server_service(const System& sys, const Service& s, const Object& obj);
ojson disruption_budget(const System& sys, const Service& s, const Object& obj);
ojson pod_monitoring(const System& sys, const Service& s, const Object& obj);
ojson autoscaler(const System& sys, const Service& s, const Object& obj);
ojson virtual_service(const System& sys, const Service& s, const Object& obj);
/// The Gateway every exposed service binds to: port 80 on the ingress gateway, for their hosts.
ojson gateway(const System& sys, const Object& obj);

}  // namespace trainc::k8s
