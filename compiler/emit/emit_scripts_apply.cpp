// scripts/apply.sh: applies the Kubernetes objects in dependency order (emit_scripts.h).
#include <fmt/format.h>

#include "emit/emit_scripts.h"
#include <set>

#include "emit/k8s_names.h"
#include "model/catalog.h"

namespace trainc::scripts {
namespace {

std::string k8s_path(std::string_view file) {  // file: "k8s/x.yaml", as in the sink
  return dq(Var{"K8S_DIR"}, "/", file.substr(std::string_view("k8s/").size()));
}

Call apply_call(const std::vector<std::string>& files) {
  Call c = kubectl({"apply"});
  for (const auto& f : files) c.flags.push_back("-f " + k8s_path(f));
  return c;
}

void wait_function(ShellScript& sh) {
  sh.line();
  sh.comment("Blocks until job/$1 completes. `kubectl wait` alone would sit out its whole timeout");
  sh.comment("on a failed Job, so every 5 minutes the Job's Failed condition is looked at.");
  sh.open("wait_job() {")
      .line("local failed")
      .line("until run kubectl --context \"$KUBE_CONTEXT\" wait \"job/$1\" -n \"$NAMESPACE\" \\")
      .open(fmt::format("    --for={} --timeout=300s; do", k8s::wait_condition(k8s::Ready::kJobComplete)))
      .line("failed=$(run kubectl --context \"$KUBE_CONTEXT\" get \"job/$1\" -n \"$NAMESPACE\" \\")
      .line("  -o 'jsonpath={.status.conditions[?(@.type==\"Failed\")].status}') || die \"cannot read job/$1\"")
      .line("if [ \"$failed\" = True ]; then die \"job/$1 failed; see: kubectl logs job/$1 -n $NAMESPACE\"; fi")
      .line("log \"job/$1 is still running\"")
      .close("done")
      .close("}");
}

/// For long-lived clusters and RayJobs: waits for any condition `kubectl wait` can check.
void wait_for_function(ShellScript& sh) {
  sh.line();
  sh.comment("Blocks until $1 (kind/name) meets `kubectl wait --for=$2`, asking again every 5 minutes;");
  sh.comment("with $3 and $4, stops when the jsonpath $3 of $1 reads $4 (a failed run).");
  sh.open("wait_for() {")
      .line("local state")
      .open("until run kubectl --context \"$KUBE_CONTEXT\" wait \"$1\" -n \"$NAMESPACE\" --for=\"$2\" --timeout=300s; do")
      .open("if [ \"$#\" -ge 4 ]; then")
      .line("state=$(run kubectl --context \"$KUBE_CONTEXT\" get \"$1\" -n \"$NAMESPACE\" -o \"jsonpath=$3\") ||")
      .line("  die \"cannot read $1\"")
      .line("if [ \"$state\" = \"$4\" ]; then die \"$1 is $4; see: kubectl describe $1 -n $NAMESPACE\"; fi")
      .close("fi")
      .line("log \"$1 is not there yet\"")
      .close("done")
      .close("}");
}

/// The line that blocks until `done` is done.
std::string wait_line(const k8s::Object& done) {
  const std::string ref = lit(k8s::kubectl_ref(done)), cond = lit(k8s::wait_condition(done.ready));
  switch (done.ready) {
    case k8s::Ready::kApplied: return "";
    case k8s::Ready::kJobComplete: return "wait_job " + lit(done.name);
    case k8s::Ready::kAvailable: return fmt::format("wait_for {} {}", ref, cond);
    case k8s::Ready::kRayReady: return fmt::format("wait_for {} {} '{{.status.state}}' failed", ref, cond);
    case k8s::Ready::kRaySucceeded: return fmt::format("wait_for {} {} '{{.status.jobStatus}}' FAILED", ref, cond);
    case k8s::Ready::kRolledOut: return "wait_rollout " + ref;
    case k8s::Ready::kJobSetCompleted:
      return fmt::format("wait_for {} {} '{{.status.conditions[?(@.type==\"Failed\")].status}}' True", ref, cond);
  }
  return "";
}

/// A chart pinned in stdlib/catalog.yaml; `helm upgrade --install` is idempotent.
void helm_install(ShellScript& sh, const Operator& op) {
  Call c{{"helm", "upgrade", "--install", lit(op.release), lit(op.chart)}, {}};
  c.flag("--repo", lit(op.repo)).flag("--version", lit(op.version)).flag("--namespace", lit(op.ns));
  c.flag("--create-namespace").flag("--kube-context", ref("KUBE_CONTEXT")).flag("--wait");
  call(sh, c);
}

void install_kuberay(ShellScript& sh) {
  sh.line();
  sh.comment(fmt::format("The KubeRay operator {} (CRDs included), before any RayCluster.", catalog().kuberay().version));
  helm_install(sh, catalog().kuberay());
}

/// Istio before anything of the system: its CRDs before the Gateway, its injector before any pod.
void install_istio(ShellScript& sh, const System& sys) {
  sh.line();
  sh.comment(fmt::format("Istio {}: CRDs, the control plane (its webhook gives service pods their sidecar)",
                         catalog().istiod().version));
  sh.comment(sys.uses_gateway() ? "and the ingress gateway, a LoadBalancer Service on port 80."
                                : "(no service is exposed, so no ingress gateway and no load balancer).");
  helm_install(sh, catalog().istio_base());
  helm_install(sh, catalog().istiod());
  if (sys.uses_gateway()) helm_install(sh, catalog().istio_gateway());
}

void rollout_function(ShellScript& sh) {
  sh.line();
  sh.comment("Blocks until $1 (deployment/name) has rolled out: every pod new and ready, within $2.");
  sh.open("wait_rollout() {")
      .line("run kubectl --context \"$KUBE_CONTEXT\" rollout status \"$1\" -n \"$NAMESPACE\" --timeout=\"${2:-30m}\" ||")
      .line("  die \"$1 has not rolled out in ${2:-30m}; see: kubectl describe pods -n $NAMESPACE -l app.kubernetes.io/instance=${1#*/}\"")
      .close("}");
}

/// Services come up before the pipeline: the metrics adapter their autoscalers read, their
/// objects, their rollout, and then health.sh asks each one whether it serves.
void apply_services(ShellScript& sh, const k8s::Plan& plan) {
  if (plan.services.empty()) return;
  if (plan.needs_metrics_adapter) {
    const Manifest& m = catalog().metrics_adapter();
    sh.line();
    sh.comment("The Custom Metrics Stackdriver Adapter, which serves Managed Prometheus metrics to the");
    sh.comment("autoscalers (pinned manifest; up.sh or Terraform grants it roles/monitoring.viewer).");
    call(sh, kubectl({"apply", "-f", lit(m.url)}));
  }
  for (const auto& w : plan.services) {
    const Service& s = *w.service;
    sh.line();
    sh.comment(fmt::format("Service '{}' ({}).", w.name, s.kind()));
    std::vector<std::string> files;
    for (const auto& o : w.objects) files.push_back(o.file);
    call(sh, apply_call(files));
    // Loading the models may take the whole startup budget, after the node and image arrive.
    sh.line(fmt::format("wait_rollout {} {}s", lit(k8s::kubectl_ref(w.done())), s.startup_seconds + 600));
  }
  sh.line();
  sh.comment("Ask every service whether it serves, as a client would. KUBE_CONTEXT is readonly: it is");
  sh.comment("exported (a `KUBE_CONTEXT=... health.sh` prefix would be an assignment, which bash refuses).");
  sh.line("export KUBE_CONTEXT");
  sh.open("if [ \"$DRY_RUN\" = 1 ]; then")
      .line("\"$(dirname \"$0\")/health.sh\" --dry-run")
      .branch("else")
      .line("\"$(dirname \"$0\")/health.sh\"")
      .close("fi");
}

/// A controller's pinned release manifest, server-side applied as its install guide says, then
/// waited for: its webhooks must answer before objects of its kinds are applied.
void install_manifest(ShellScript& sh, const Manifest& m, std::string_view what) {
  sh.line();
  sh.comment(fmt::format("{} (CRDs included).", what));
  call(sh, kubectl({"apply", "--server-side", "-f", lit(m.url)}));
  call(sh, kubectl({"wait", "deployment", "--all", "-n", lit(m.ns), "--for=condition=available", "--timeout=300s"}));
}

void apply_clusters(ShellScript& sh, const k8s::Plan& plan) {
  if (plan.needs_kuberay) install_kuberay(sh);
  for (const auto& w : plan.clusters) {
    sh.line();
    sh.comment(fmt::format("Cluster '{}' ({}); steps on it wait until it is ready.", w.name, w.cluster->kind()));
    std::vector<std::string> files;
    for (const auto& o : w.objects) files.push_back(o.file);
    call(sh, apply_call(files));
  }
}

void apply_workloads(ShellScript& sh, const k8s::Plan& plan) {
  std::set<std::string> waited;
  for (const auto& w : plan.workloads) {
    sh.line();
    const std::string on = w.on.empty() ? "" : fmt::format(" on cluster '{}'", w.on);
    sh.comment(w.needs.empty() ? fmt::format("Step '{}'{}.", w.name, on)
                               : fmt::format("Step '{}'{}, after {}.", w.name, on, fmt::join(w.needs, ", ")));
    if (const k8s::Workload* cluster = plan.cluster(w.on); cluster && waited.insert("cluster " + w.on).second)
      if (std::string line = wait_line(cluster->done()); !line.empty()) sh.line(line);
    for (const auto& need : w.needs) {
      const k8s::Workload* dep = plan.workload(need);
      if (!dep || !waited.insert(need).second) continue;
      if (std::string line = wait_line(dep->done()); !line.empty()) sh.line(line);
    }
    std::vector<std::string> files;
    for (const auto& o : w.objects) files.push_back(o.file);
    call(sh, apply_call(files));
  }
}

void watch_hint(ShellScript& sh, const System& sys, const k8s::Plan& plan) {
  std::string selector = "app.kubernetes.io/part-of=" + sys.name;
  sh.line();
  if (plan.workloads.empty()) {
    sh.open("if [ \"$DRY_RUN\" = 1 ]; then")
        .line("log 'dry run done: nothing was applied'")
        .branch("else")
        .line("log 'applied. status.sh shows where things stand; health.sh asks the services again'")
        .close("fi");
    return;
  }
  sh.open("if [ \"$DRY_RUN\" = 1 ]; then")
      .line("log 'dry run done: nothing was applied; once it is, watch the Jobs with:'")
      .branch("else")
      .line("log 'applied. The Jobs run on; watch them with:'")
      .close("fi");
  sh.line(fmt::format("log {}", dq("  kubectl --context ", Var{"KUBE_CONTEXT"}, " get jobs,pods -n ", Var{"NAMESPACE"},
                                   " -l " + selector + " -w")));
  sh.line(fmt::format("log {}", dq("  kubectl --context ", Var{"KUBE_CONTEXT"}, " logs -f " +
                                       k8s::logs_ref(plan.workloads.back().done()) + " -n ",
                                   Var{"NAMESPACE"})));
}

std::vector<std::string> apply_help(const k8s::Plan& plan) {
  if (plan.services.empty())
    return {"Applies the generated k8s/ files in dependency order: the shared objects, then each",
            "step once the steps it needs have completed. Run up.sh (or Terraform) first."};
  return {"Applies the generated k8s/ files in dependency order: the shared objects, then the",
          "services (waiting until they roll out and health.sh finds them serving), then each",
          "step once the steps it needs have completed. Run up.sh (or Terraform) first."};
}

}  // namespace

std::string apply_script(const System& sys, const k8s::Plan& plan) {
  ShellScript sh;
  prologue(sh, sys,
           {"apply.sh", "applies the Kubernetes objects", apply_help(plan)},
           {{"--services-only", "SERVICES_ONLY",
             "apply the shared objects, clusters and services, then stop: start no step (CI deploys)"}},
           {.ns = true, .kube = true, .k8s_dir = true});
  wait_function(sh);
  if (!plan.clusters.empty() || plan.needs_jobset) wait_for_function(sh);
  if (!plan.services.empty()) rollout_function(sh);
  sh.line();
  sh.line("if [ \"$DRY_RUN\" = 1 ]; then log 'dry run: commands are printed, not run'; fi");
  call(sh, cluster_call("get-credentials"));
  if (plan.needs_istio) install_istio(sh, sys);
  if (plan.needs_kueue) install_manifest(sh, catalog().kueue(), "Kueue, before its queues and any queued workload");
  std::vector<std::string> shared;
  for (const auto& o : plan.shared) shared.push_back(o.file);
  if (!shared.empty()) call(sh, apply_call(shared));
  apply_clusters(sh, plan);
  apply_services(sh, plan);
  sh.line();
  sh.open("if [ \"$SERVICES_ONLY\" = 1 ]; then")
      .line(plan.workloads.empty() ? "log 'applied (the system has no pipeline steps)'"
                                   : fmt::format("log {}", sh_quote(fmt::format("applied; --services-only: the {} pipeline "
                                                                                "step(s) are not started",
                                                                                plan.workloads.size()))))
      .line("exit 0")
      .close("fi");
  if (plan.needs_jobset) install_manifest(sh, catalog().jobset(), "The JobSet controller, before any JobSet");
  apply_workloads(sh, plan);
  watch_hint(sh, sys, plan);
  return sh.text();
}

}  // namespace trainc::scripts
