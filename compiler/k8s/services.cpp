#include "k8s/services.h"

#include <algorithm>
#include <cctype>

#include <fmt/format.h>

#include "k8s/names.h"
#include "model/catalog.h"

namespace trainc::k8s {
namespace {

ojson service_labels(const System& sys, const Service& s) {
  return labels_for(sys, s.name, service_name(sys, s), s.kind(), s.labels);
}

ojson selector(const System& sys, const Service& s) {
  return {{"app.kubernetes.io/instance", service_name(sys, s)}, {"app.kubernetes.io/part-of", sys.name}};
}

PodNeeds needs_of(const System& sys, const Service& s) {
  return needs_for(sys, sys.pool(s.pool), s.gpus, s.shm, nullptr, s.image, s.security);
}

int port_number(const Service& s, std::string_view name) {
  for (const auto& p : server_ports(s.server))
    if (p.name == name) return p.number;
  return 0;
}

/// Service port names carry the protocol (http, grpc, http-*) so Istio routes each as what it is.
std::string service_port_name(const ServerPort& p) {
  return p.name == "http" || p.name == "grpc" ? std::string(p.name) : "http-" + std::string(p.name);
}

ojson http_probe(std::string_view path, int period, int failures) {
  return {{"httpGet", {{"path", path}, {"port", "http"}}}, {"periodSeconds", period}, {"failureThreshold", failures}};
}

ojson server_container(const System& sys, const Service& s) {
  const PodNeeds n = needs_of(sys, s);
  ojson c;
  c["name"] = s.kind();
  c["image"] = s.image;
  c["imagePullPolicy"] = s.image_pull_policy;
  const auto argv = literal(s.argv());
  c["command"] = ojson::array({argv.front()});
  c["args"] = std::vector<std::string>(argv.begin() + 1, argv.end());
  ojson env = ojson::array();
  add_node_env(env, n, s.env);
  for (const auto& [k, v] : s.env) env.push_back(env_var(k, v));
  add_secret_env(env, s.secret_env);
  if (!env.empty()) c["env"] = env;
  ojson ports = ojson::array();
  for (const auto& p : server_ports(s.server)) ports.push_back({{"name", p.name}, {"containerPort", p.number}});
  c["ports"] = ports;
  if (ojson res = resources(s.resources, n); !res.empty()) c["resources"] = res;
  c["securityContext"] = container_security(n);
  // Loading models may take minutes: the startup probe gives it `startupTimeout` before liveness
  // may restart the pod.
  const ServerProbes probes = s.probes();
  const RolloutTiming t = rollout_timing(s);
  c["startupProbe"] = http_probe(probes.startup, RolloutTiming::kProbePeriod, t.probe_failures);
  c["readinessProbe"] = http_probe(probes.readiness, 5, 3);
  c["livenessProbe"] = http_probe(probes.liveness, 10, 3);
  ojson mounts = ojson::array();
  add_volume_mounts(mounts, n);
  c["volumeMounts"] = mounts;
  return c;
}

}  // namespace

RolloutTiming rollout_timing(const Service& s) {
  RolloutTiming t;
  t.probe_failures = std::max(1, (s.startup_seconds + RolloutTiming::kProbePeriod - 1) / RolloutTiming::kProbePeriod);
  t.startup_window = t.probe_failures * RolloutTiming::kProbePeriod;
  t.progress_deadline = t.startup_window + catalog().pull_margin_seconds();
  t.wait = t.progress_deadline + 60;
  return t;
}

std::string roll_outage(const Workload& w) {
  if (!w.service) return "";
  const Service& s = *w.service;
  for (const auto& o : w.objects) {
    if (o.role != Role::kServer || !o.rollout || !o.rollout->outage(s.autoscaled() ? s.min : s.replicas)) continue;
    const RolloutTiming t = rollout_timing(s);
    const std::string pool = s.pool.empty() ? "its pool" : fmt::format("pool '{}'", s.pool);
    return fmt::format("its only pod stops before its replacement starts ({} has no room for another): the service is "
                       "down until the new pod is ready, up to {}m (the startup probe's window) after its node is up "
                       "and its image pulled, {}m at most (the progress deadline); one more node for {} (its "
                       "`autoscaling.max` or `nodes`) lets it roll without an outage",
                       pool, (t.startup_window + 59) / 60, (t.progress_deadline + 59) / 60, pool);
  }
  return "";
}

ojson service_account(const System& sys, const Service& s, const Object& obj) {
  ojson sa = typed(obj);
  sa["metadata"] = metadata(obj.name, sys.ns, service_labels(sys, s));
  sa["metadata"]["annotations"] = {{"iam.gke.io/gcp-service-account", s.identity.gsa_email(*sys.gcp)}};
  return sa;
}

ojson server_deployment(const System& sys, const Service& s, const Object& obj) {
  const PodNeeds n = needs_of(sys, s);
  ojson d = typed(obj);
  d["metadata"] = metadata(obj.name, sys.ns, service_labels(sys, s));
  ojson spec;
  // With an autoscaler the HPA owns the replica count; a replicas field here would reset it on
  // every apply.
  if (!s.autoscaled()) spec["replicas"] = s.replicas;
  spec["selector"] = {{"matchLabels", selector(sys, s)}};
  // Kubernetes' default (600 s) would fail the rollout while the startup probe still waits for
  // the model to load: the deadline covers the probe's window and the pull (rollout_timing).
  spec["progressDeadlineSeconds"] = rollout_timing(s).progress_deadline;
  // A rolling update starts new pods before it stops old ones; where the pool has no room for
  // them at the service's largest, the plan replaces pods in place instead (k8s::Rollout).
  if (obj.rollout) spec["strategy"] = rolling_update(*obj.rollout);
  ojson pod;
  if (sys.gcp) pod["serviceAccountName"] = s.identity.ksa;
  place(pod, n);
  secure_pod(pod, n);
  pod["containers"] = ojson::array({server_container(sys, s)});
  ojson volumes = ojson::array();
  add_volumes(volumes, n);
  pod["volumes"] = volumes;
  ojson labels = service_labels(sys, s);
  ojson meta;
  if (sys.istio) {
    labels["sidecar.istio.io/inject"] = "true";
    // The server reads GCS as it starts: through the sidecar, which must be up first.
    meta["annotations"] = {{"proxy.istio.io/config", R"({"holdApplicationUntilProxyStarts": true})"}};
  }
  // The runs of the steps whose output it serves: a new run changes the pod template, so the
  // Deployment rolls and the server loads what the new run wrote.
  std::vector<std::string> runs;
  for (const auto& need : s.needs)
    for (const auto& st : sys.steps)
      if (st.name == need) runs.push_back(need + "=" + (st.run_id.empty() ? std::string("unnamed") : st.run_id));
  if (!runs.empty()) meta["annotations"][std::string(kServedRunsAnnotation)] = fmt::format("{}", fmt::join(runs, ","));
  meta["labels"] = labels;
  spec["template"] = {{"metadata", meta}, {"spec", pod}};
  d["spec"] = spec;
  return d;
}

ojson server_service(const System& sys, const Service& s, const Object& obj) {
  ojson svc = typed(obj);
  svc["metadata"] = metadata(obj.name, sys.ns, service_labels(sys, s));
  ojson ports = ojson::array();
  for (const auto& p : server_ports(s.server))
    ports.push_back({{"name", service_port_name(p)}, {"port", p.number}, {"targetPort", p.name}});
  svc["spec"] = {{"selector", selector(sys, s)}, {"ports", ports}};
  return svc;
}

ojson disruption_budget(const System& sys, const Service& s, const Object& obj) {
  ojson pdb = typed(obj);
  pdb["metadata"] = metadata(obj.name, sys.ns, service_labels(sys, s));
  pdb["spec"] = {{"maxUnavailable", 1}, {"selector", {{"matchLabels", selector(sys, s)}}}};
  return pdb;
}

ojson pod_monitoring(const System& sys, const Service& s, const Object& obj) {
  ojson pm = typed(obj);
  pm["metadata"] = metadata(obj.name, sys.ns, service_labels(sys, s));
  const MetricsEndpoint at = s.metrics();
  ojson endpoint{{"port", at.port}, {"interval", "15s"}};
  if (at.path != "/metrics") endpoint["path"] = at.path;  // PodMonitoring's default
  pm["spec"] = {{"selector", {{"matchLabels", selector(sys, s)}}}, {"endpoints", ojson::array({endpoint})}};
  return pm;
}

ojson autoscaler(const System& sys, const Service& s, const Object& obj) {
  ojson hpa = typed(obj);
  hpa["metadata"] = metadata(obj.name, sys.ns, service_labels(sys, s));
  hpa["spec"] = {
      {"scaleTargetRef", {{"apiVersion", "apps/v1"}, {"kind", "Deployment"}, {"name", service_name(sys, s)}}},
      {"minReplicas", s.min},
      {"maxReplicas", s.max},
      {"metrics",
       ojson::array({{{"type", "Pods"},
                      {"pods",
                       {{"metric", {{"name", s.scaling_metric().adapter_name}}},
                        {"target", {{"type", "AverageValue"}, {"averageValue", std::to_string(s.pending_requests)}}}}}}})},
  };
  return hpa;
}

ojson virtual_service(const System& sys, const Service& s, const Object& obj) {
  const std::string host = fmt::format("{}.{}.svc.cluster.local", service_name(sys, s), sys.ns);
  auto route = [&](std::string_view name, std::string_view prefix, int port) {
    return ojson{{"name", name},
                 {"match", ojson::array({{{"uri", {{"prefix", prefix}}}}})},
                 {"route", ojson::array({{{"destination", {{"host", host}, {"port", {{"number", port}}}}}}})}};
  };
  const GatewayRoutes routes = s.routes();
  ojson http = ojson::array();
  if (s.expose.path_prefix.empty() && !routes.grpc.empty())
    http.push_back(route("grpc", routes.grpc, port_number(s, "grpc")));
  for (size_t i = 0; i < routes.http.size(); ++i) {
    // Routes after the first are named for their path: "http-health" for /health.
    std::string name = i == 0 ? "http" : "http-";
    if (i > 0)
      for (char c : routes.http[i])
        if (std::isalnum(static_cast<unsigned char>(c))) name += c;
    if (s.expose.path_prefix.empty()) {
      http.push_back(route(name, routes.http[i], port_number(s, "http")));
      continue;
    }
    // <prefix>/v2/... reaches the server as /v2/...: the rewrite replaces the matched prefix.
    ojson r = route(name, s.expose.path_prefix + std::string(routes.http[i]), port_number(s, "http"));
    r["rewrite"] = {{"uri", routes.http[i]}};
    http.push_back(std::move(r));
  }
  ojson vs = typed(obj);
  vs["metadata"] = metadata(obj.name, sys.ns, service_labels(sys, s));
  vs["spec"] = {{"hosts", s.expose.hosts}, {"gateways", ojson::array({gateway_name(sys)})}, {"http", http}};
  return vs;
}

ojson gateway(const System& sys, const Object& obj) {
  std::vector<std::string> hosts;
  for (const auto& [_, s] : sys.services)
    if (s.expose.gateway)
      for (const auto& h : s.expose.hosts)
        if (std::find(hosts.begin(), hosts.end(), h) == hosts.end()) hosts.push_back(h);
  ojson g = typed(obj);
  g["metadata"] = metadata(obj.name, sys.ns, labels_for(sys, sys.name, obj.name, "gateway"));
  // One plain-text HTTP server: Envoy's codec takes HTTP/1.1 and HTTP/2 on it, so gRPC clients
  // reach port 80 too.
  g["spec"] = {{"selector", {{"istio", kIngressGatewayLabel}}},
               {"servers", ojson::array({{{"port", {{"number", 80}, {"name", "http"}, {"protocol", "HTTP"}}},
                                          {"hosts", hosts}}})}};
  return g;
}

}  // namespace trainc::k8s
