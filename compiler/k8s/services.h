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
