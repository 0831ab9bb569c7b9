// scripts/apply.sh: applies the Kubernetes objects in the rollout's order (k8s/rollout.h,
// emit_scripts.h): the operators and controllers, the shared objects, the clusters, the services
// and their health check, then each step once what it waits for is done.
#include <algorithm>

#include <fmt/format.h>

#include "emit/contents.h"
#include "emit/emit_scripts.h"
#include "k8s/names.h"
#include "k8s/prerequisites.h"
#include "k8s/queue.h"
#include "k8s/services.h"
#include "model/catalog.h"

namespace trainc::scripts {
namespace {

/// A kubectl command for a message's double quotes, where the shell expands `$1` and `$NAMESPACE`
/// for the reader: words as written.
std::string hint(std::initializer_list<std::string> words) {
  CommandLine c = cmd::kubectl(KubeTarget{}, {});
  for (const auto& w : words) c.word(w);
  return c.line();
}

void wait_function(ShellScript& sh) {
  Call wait = kubectl({"wait", "\"job/$1\"", "-n", ref("NAMESPACE")});
  wait.next_line().opt("--for", k8s::wait_condition(k8s::Ready::kJobComplete)).opt("--timeout", "300s");
  Call failed = kubectl({"get", "\"job/$1\"", "-n", ref("NAMESPACE")});
  failed.spaced = true;
  failed.next_line().opt("-o", "jsonpath={.status.conditions[?(@.type==\"Failed\")].status}");
  const auto w = wait.parts(), f = failed.parts();
  sh.line();
  sh.comment("Blocks until job/$1 completes. `kubectl wait` alone would sit out its whole timeout");
  sh.comment("on a failed Job, so every 5 minutes the Job's Failed condition is looked at.");
  sh.comment("The step whose current run is job $1.");
  sh.open("step_of() {")
      .line("local s")
      .line("for s in \"${!RUN_OF[@]}\"; do [ \"${RUN_OF[$s]#*/}\" = \"$1\" ] && printf '%s' \"$s\"; done")
      .line("return 0")
      .close("}");
  sh.open("wait_job() {")
      .line("local failed")
      .line("until run " + w.front())
      .open("    " + w.back() + "; do")
      .line("failed=$(run " + f.front())
      .line("  " + f.back() + ") || die \"cannot read job/$1\"")
      .line("if [ \"$failed\" = True ]; then die \"job/$1 failed; see: " + hint({"logs", "job/$1", "-n", "$NAMESPACE"}) +
            "; apply.sh --rerun $(step_of \"$1\") starts it again\"; fi")
      .line("log \"job/$1 is still running\"")
      .close("done")
      .close("}");
}

/// Kueue places a pool's pods by the nodes' topology labels, and a workload asking for a level no
/// node has waits for ever (Kueue does not refuse it): with a pool placed by topology, apply.sh
/// looks at the labels of its nodes first and stops, naming the nodes, when one lacks any.
void topology_labels_function(ShellScript& sh) {
  const auto& levels = catalog().topology().levels;
  std::string path = "jsonpath={range .items[*]}{.metadata.name}";
  std::string names, empty;
  for (size_t i = 0; i + 1 < levels.size(); ++i) {  // the last, kubernetes.io/hostname, every node has
    std::string key = levels[i].label;
    for (size_t at = key.find('.'); at != std::string::npos; at = key.find('.', at + 2)) key.insert(at, "\\");
    path += "{\"|\"}{.metadata.labels." + key + "}";
    names += (names.empty() ? "" : ", ") + levels[i].label;
    empty += fmt::format("{}${} == \"\"", empty.empty() ? "" : " || ", i + 2);
  }
  path += "{\"\\n\"}{end}";
  Call nodes = kubectl({"get", "nodes", "-l", "\"cloud.google.com/gke-nodepool=$1\""});
  nodes.next_line().opt("-o", path);
  const auto n = nodes.parts();
  sh.line();
  sh.comment("Kueue places pool $1's pods by its nodes' topology labels, and a workload asking for a level");
  sh.comment("no node has would wait for ever: stop now when a node of the pool lacks one.");
  sh.open("need_topology_labels() {")
      .line("local nodes unlabelled")
      .line("nodes=$(run " + n.front())
      .line("  " + n.back() + ") || die \"cannot list the nodes of pool $1\"")
      .line("if [ \"$DRY_RUN\" = 1 ]; then return 0; fi")
      .line("if [ -z \"$nodes\" ]; then log \"pool $1 has no nodes yet: their topology labels are not checked\"; return 0; fi")
      .line("unlabelled=$(awk -F'|' '" + empty + " { print $1 }' <<<\"$nodes\" | paste -sd, -)")
      .line("[ -z \"$unlabelled\" ] || die \"node(s) $unlabelled of pool $1 lack GKE's topology labels (" + names +
            "), which Kueue places the pool's steps by: none of them would start. GKE sets them from version 1.31 "
            "on " + fmt::format("{}", fmt::join(catalog().topology().machines, ", ")) +
            " (upgrade the cluster), or set the pool's placement: {level: none}\"")
      .close("}");
}

/// For long-lived clusters and RayJobs: waits for any condition `kubectl wait` can check.
void wait_for_function(ShellScript& sh) {
  sh.line();
  sh.comment("Blocks until $1 (kind/name) meets `kubectl wait --for=$2`, asking again every 5 minutes;");
  sh.comment("with $3 and $4, stops when the jsonpath $3 of $1 reads $4 (a failed run).");
  Call wait = kubectl({"wait", "\"$1\"", "-n", ref("NAMESPACE")});
  wait.flag("--for", "\"$2\"").opt("--timeout", "300s");
  const Call state = kubectl({"get", "\"$1\"", "-n", ref("NAMESPACE"), "-o", "\"jsonpath=$3\""});
  sh.open("wait_for() {")
      .line("local state")
      .open("until run " + wait.line() + "; do")
      .open("if [ \"$#\" -ge 4 ]; then")
      .line("state=$(run " + state.line() + ") ||")
      .line("  die \"cannot read $1\"")
      .line("if [ \"$state\" = \"$4\" ]; then die \"$1 is $4; see: " + hint({"describe", "$1", "-n", "$NAMESPACE"}) +
            "\"; fi")
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

void rollout_function(ShellScript& sh) {
  sh.line();
  sh.comment("Blocks until $1 (deployment/name) has rolled out: every pod new and ready, within $2.");
  Call status = kubectl({"rollout", "status", "\"$1\"", "-n", ref("NAMESPACE")});
  status.flag("--timeout", "\"${2:-30m}\"");
  sh.open("wait_rollout() {")
      .line("run " + status.line() + " ||")
      .line("  die \"$1 has not rolled out in ${2:-30m}; see: " +
            hint({"describe", "pods", "-n", "$NAMESPACE", "-l", "app.kubernetes.io/instance=${1#*/}"}) + "\"")
      .close("}");
}
/// Kueue's configuration over the release manifest's: the controller reads it only when it starts,
/// so its pods roll when the configuration they run (the annotation's hash) is not this one, and a
/// second apply with nothing changed rolls nothing. Kueue's configuration is the whole cluster's:
/// the last system applied sets it, and apply.sh says whose it replaces.
void configure_kueue(ShellScript& sh, const System& sys) {
  const KubeTarget kube = kube_target();
  const KueueConfig& k = catalog().kueue_config();
  const std::string& ns = catalog().kueue().ns;
  const k8s::PodsReady p = k8s::pods_ready(sys);
  std::string key(k8s::kKueueConfigAnnotation);
  std::string escaped;
  for (char c : key) escaped += c == '.' ? std::string("\\.") : std::string(1, c);
  Call running = kubectl({"get", "deployment/" + k.deployment, "-n", ns});
  running.spaced = true;
  running.next_line().opt("-o", "jsonpath={.spec.template.metadata.annotations." + escaped + "}");
  const auto r = running.parts();
  sh.line();
  sh.comment(fmt::format("Kueue's configuration ({}): the release's, with", kKueueConfigFile));
  sh.comment(fmt::format("waitForPodsReady's timeout {}{}.", k8s::go_duration(p.timeout_seconds),
                         p.block_admission ? " and blockAdmission" : ""));
  sh.comment("Kueue reads it only when it starts: its pods roll when the configuration they run (the");
  sh.comment(fmt::format("annotation {} on them) is not this one. It is the whole cluster's: the", key));
  sh.comment("last system applied sets it for every queue there.");
  sh.line("kueue_config=$(run " + r.front());
  sh.line("  " + r.back() + ") || die \"cannot read Kueue's deployment/" + k.deployment + "\"");
  call(sh, cmd::apply_addon_file(kube, kKueueConfigFile));
  const std::string mark = k8s::kueue_config_mark(sys);
  const std::string digest = k8s::kueue_config_digest(sys);
  sh.open("if [ \"$DRY_RUN\" = 1 ] || [ \"${kueue_config%% *}\" != " + digest + " ]; then");
  sh.open("if [ -n \"$kueue_config\" ]; then")
      .line("log \"Kueue's configuration was $kueue_config (hash, system, timeout); " + sys.name +
            "'s replaces it for every queue on the cluster: its controller restarts\"")
      .close("fi");
  call(sh, cmd::annotate_pod_template(kube, ns, k.deployment, key, mark));
  call(sh, cmd::rollout_status(kube, ns, k.deployment, "300s"));
  sh.close("fi");
}

/// The release a pinned manifest's URL names (.../download/<release>/manifests.yaml).
std::string release_of(const Manifest& m) {
  const auto end = m.url.rfind('/');
  const auto start = end == std::string::npos ? end : m.url.rfind('/', end - 1);
  return start == std::string::npos ? m.url : m.url.substr(start + 1, end - start - 1);
}

/// The addon and its pinned version, as --addons-installed's messages name it.
std::string addon_name(const RolloutStep& step) {
  switch (step.addon) {
    case Addon::kIstio: return "Istio " + catalog().istiod().version;
    case Addon::kKubeRay: return "KubeRay " + catalog().kuberay().version;
    case Addon::kMetricsAdapter: return "the Custom Metrics Stackdriver Adapter";
    case Addon::kKueue: return "Kueue " + release_of(catalog().kueue());
    case Addon::kJobSet: return "JobSet " + release_of(catalog().jobset());
  }
  return "";
}

/// With --addons-installed, Kueue's configuration is the administrators': apply.sh changes
/// nothing, and says when the controller runs another than this system's.
void kueue_config_check(ShellScript& sh, const System& sys) {
  const KueueConfig& k = catalog().kueue_config();
  const std::string& ns = catalog().kueue().ns;
  std::string key(k8s::kKueueConfigAnnotation);
  std::string escaped;
  for (char c : key) escaped += c == '.' ? std::string("\\.") : std::string(1, c);
  Call running = kubectl({"get", "deployment/" + k.deployment, "-n", ns});
  running.spaced = true;
  running.next_line().opt("-o", "jsonpath={.spec.template.metadata.annotations." + escaped + "}");
  const auto r = running.parts();
  sh.line("kueue_config=$(run " + r.front());
  sh.line("  " + r.back() + ") || die \"cannot read Kueue's deployment/" + k.deployment + "\"");
  sh.open("if [ \"${kueue_config%% *}\" != " + k8s::kueue_config_digest(sys) + " ]; then")
      .line(fmt::format("log \"warning: Kueue runs its administrators' configuration (${{kueue_config:-unmarked}}), "
                        "not this system's: {} is what its queues expect (waitForPodsReady)\"",
                        kKueueConfigFile))
      .close("fi");
}

/// An addon: Istio's or KubeRay's charts (`helm upgrade --install` is idempotent), or a pinned
/// release manifest; a controller's is server-side applied as its install guide says, then waited
/// for: its webhooks must answer before objects of its kinds are applied.
void install(ShellScript& sh, const System& sys, const RolloutStep& step) {
  const KubeTarget kube = kube_target();
  sh.line();
  switch (step.addon) {
    case Addon::kIstio:  // its CRDs before the Gateway, its injector before any pod
      sh.comment(fmt::format("Istio {}: CRDs, the control plane (its webhook gives service pods their sidecar)",
                             catalog().istiod().version));
      sh.comment(sys.uses_gateway() ? "and the ingress gateway, a LoadBalancer Service on port 80."
                                    : "(no service is exposed, so no ingress gateway and no load balancer).");
      break;
    case Addon::kKubeRay:
      sh.comment(fmt::format("The KubeRay operator {} (CRDs included), before any RayCluster.", catalog().kuberay().version));
      break;
    case Addon::kMetricsAdapter:
      sh.comment("The Custom Metrics Stackdriver Adapter, which serves Managed Prometheus metrics to the");
      sh.comment("autoscalers (pinned manifest; up.sh or Terraform grants it roles/monitoring.viewer).");
      break;
    case Addon::kKueue: sh.comment("Kueue, before its queues and any queued workload (CRDs included)."); break;
    case Addon::kJobSet: sh.comment("The JobSet controller, before any JobSet (CRDs included)."); break;
  }
  // --addons-installed: the cluster's administrators installed it; its controllers must be there
  // and available (a chart without Deployments, Istio's CRD-only base, is covered by the next).
  std::vector<std::string> namespaces;
  auto add_ns = [&](const std::string& ns) {
    if (std::find(namespaces.begin(), namespaces.end(), ns) == namespaces.end()) namespaces.push_back(ns);
  };
  for (const Operator* op : step.charts)
    if (op->chart != "base") add_ns(op->ns);
  if (step.manifest) add_ns(step.manifest->ns);
  sh.open("if [ \"$ADDONS_INSTALLED\" = 1 ]; then");
  for (const auto& ns : namespaces) sh.line(fmt::format("need_addon {} {}", lit(ns), lit(addon_name(step))));
  if (step.addon == Addon::kKueue) kueue_config_check(sh, sys);
  sh.branch("else");
  for (const Operator* op : step.charts) call(sh, cmd::helm_install(kube, *op));
  if (step.manifest) {
    call(sh, cmd::apply_manifest(kube, *step.manifest, step.controller));
    if (step.addon == Addon::kKueue) configure_kueue(sh, sys);
    if (step.controller) call(sh, cmd::wait_deployments(kube, *step.manifest));
  }
  sh.close("fi");
}

/// A service's objects, then its rollout: loading the models may take the whole startup budget,
/// after the node and image arrive.
void apply_service(ShellScript& sh, const RolloutStep& step) {
  const k8s::Workload& w = *step.workload;
  sh.line();
  sh.comment(w.needs.empty() ? fmt::format("Service '{}' ({}).", w.name, w.service->kind())
                             : fmt::format("Service '{}' ({}), serving the output of {}: a new run of one rolls it.",
                                           w.name, w.service->kind(), fmt::join(w.needs, ", ")));
  for (const k8s::Object* done : step.waits) sh.line(wait_line(*done));
  call(sh, cmd::apply_files(kube_target(), step.files));
  sh.line(fmt::format("wait_rollout {} {}s", lit(k8s::kubectl_ref(w.done())), k8s::rollout_timing(*w.service).wait));
}

void health_check(ShellScript& sh) {
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

/// A step's objects, once the cluster it runs on is ready and the steps it needs are done.
void apply_workload(ShellScript& sh, const RolloutStep& step) {
  const k8s::Workload& w = *step.workload;
  sh.line();
  const std::string on = w.on.empty() ? "" : fmt::format(" on cluster '{}'", w.on);
  sh.comment(w.needs.empty() ? fmt::format("Step '{}'{}.", w.name, on)
                             : fmt::format("Step '{}'{}, after {}.", w.name, on, fmt::join(w.needs, ", ")));
  for (const k8s::Object* done : step.waits) sh.line(wait_line(*done));
  // Its run (the Job, JobSet or RayJob) is started only where it is not there yet: start_run. A
  // CronJob, named by its step alone, is applied as it changes.
  const k8s::Object& run = w.done();
  if (run.role == k8s::Role::kCronJob) {
    call(sh, cmd::apply_files(kube_target(), step.files));
    return;
  }
  std::vector<std::string> others;
  for (const auto& f : step.files)
    if (f != run.file) others.push_back(f);
  if (!others.empty()) call(sh, cmd::apply_files(kube_target(), others));
  call(sh, cmd::apply_files(kube_target(), {run.file}), "start_run " + lit(k8s::kubectl_ref(run)));
}

/// A step's run is named by what it runs, so one of that name on the cluster is this run, started
/// before: it is left as it is. Applied again, it would send back fields its controllers and Kueue
/// have set since (Kueue's flavor in a JobSet's pod templates), which the API server refuses on a
/// JobSet whose jobs are immutable.
void start_run_function(ShellScript& sh) {
  Call get = kubectl({"get", "\"$1\"", "-n", ref("NAMESPACE")});
  sh.line();
  sh.comment("Runs the apply after $1 (a step's run) unless $1 is on the cluster already: a run is");
  sh.comment("named by what it runs, so that one is this run, started before, and is left as it is.");
  sh.open("start_run() {")
      .line("local err")
      .open("if [ \"$DRY_RUN\" != 1 ]; then")
      .open("if err=$(" + get.line() + " 2>&1 >/dev/null); then")
      .line("log \"$1 is on the cluster: this run started before, and is left as it is\"")
      .line("return 0")
      .close("fi")
      .line("case \"$err\" in *NotFound* | *[Nn]ot\\ found*) ;; *) die \"cannot tell whether $1 is on the cluster: $err\" ;; esac")
      .close("fi")
      .line("shift")
      .line("run \"$@\"")
      .close("}");
}

/// --diff: what applying would change, from the cluster itself (`trainc diff --live` on this output
/// folder: read-only), then a question; nothing would change, or the server refuses a change, ends
/// the script before anything is applied.
void diff_function(ShellScript& sh) {
  sh.line();
  sh.comment("--diff: trainc diff --live on this output (read-only), then asks before anything is applied.");
  sh.open("show_diff() {")
      .line("local trainc=${TRAINC:-trainc} rc=0 answer")
      .line("command -v \"$trainc\" >/dev/null 2>&1 || die \"--diff runs trainc diff --live: $trainc is not on PATH (set "
            "TRAINC to it)\"")
      .line("log \"what applying would change on context $KUBE_CONTEXT (trainc diff --live, read-only):\"")
      .line("\"$trainc\" diff --live \"$(dirname \"$0\")/..\" --context \"$KUBE_CONTEXT\" || rc=$?")
      .open("case $rc in")
      .line("0) log 'nothing would change: nothing is applied'; exit 0 ;;")
      .line("1) ;;")
      .line("3) die 'the server refuses a change (above): applying would stop there; nothing was applied' ;;")
      .line("*) die \"trainc diff --live exited $rc: nothing was applied\" ;;")
      .close("esac")
      .line("if [ \"$DRY_RUN\" = 1 ]; then return 0; fi")
      .line("[ -t 0 ] || die '--diff asks before it applies, and stdin is no terminal: run it in one, or without --diff'")
      .line("read -r -p 'apply.sh: apply these changes? [y/N] ' answer")
      .line("case $answer in y | Y | yes) ;; *) log 'nothing was applied'; exit 0 ;; esac")
      .close("}");
}

/// The image check's function: a dry run prints the check, a real one asks quietly (as up.sh asks
/// what exists) and stops at the first image missing, before anything is applied.
/// --addons-installed's check of one add-on: its Deployments in namespace $1 are available.
void need_addon_function(ShellScript& sh) {
  Call wait = kubectl({"wait", "deployment", "--all", "-n", "\"$1\""});
  wait.opt("--for", "condition=available").opt("--timeout", "300s");
  sh.line();
  sh.comment("--addons-installed: add-on $2's Deployments in namespace $1 must be there and available.");
  sh.open("need_addon() {")
      .line("if run " + wait.line() + "; then return 0; fi")
      .line("die \"$2 is not installed and available in namespace $1: without --addons-installed, apply.sh installs it\"")
      .close("}");
}

void need_image_function(ShellScript& sh) {
  const std::string describe = gcloud({"artifacts", "docker", "images", "describe", "\"$1\""}).line();
  sh.line();
  sh.comment("Stops unless Artifact Registry image $1 is there; $2 says how to put it there. Images");
  sh.comment("elsewhere (Docker Hub, nvcr.io, gcr.io) are not checked: public, or not Artifact Registry's.");
  sh.open("need_image() {")
      .line("if [ -n \"$KUBECONFIG_FILE\" ]; then return 0; fi  # --kubeconfig: not asked of gcloud (said once)")
      .open("if [ \"$DRY_RUN\" = 1 ]; then")
      .line("run " + describe)
      .branch("elif ! exists " + describe + "; then")
      .line("die \"image $1 is not in the registry: $2\"")
      .close("fi")
      .close("}");
}

/// Every image of the system's registry the manifests name, checked before anything is applied.
void check_images(ShellScript& sh, const RolloutStep& step) {
  sh.line();
  sh.comment("The images the pods pull from Artifact Registry, before anything is applied.");
  for (const RegistryImage& i : step.images)
    sh.line(fmt::format("need_image {} {}", lit(i.image),
                        lit(i.build     ? "build and push it with scripts/build.sh (or let CI do it)"
                            : i.runtime ? "build it from docker/trainrt.Dockerfile (its build context is the trainc "
                                          "source tree, see its header) and push it"
                                        : "trainc does not build it; push it there")));
}

void apply_step(ShellScript& sh, const System& sys, const RolloutStep& step) {
  switch (step.kind) {
    case RolloutStep::Kind::kImages: check_images(sh, step); return;
    case RolloutStep::Kind::kInstall: install(sh, sys, step); return;
    case RolloutStep::Kind::kShared: call(sh, cmd::apply_files(kube_target(), step.files)); return;
    case RolloutStep::Kind::kCluster: {
      const k8s::Workload& w = *step.workload;
      sh.line();
      sh.comment(fmt::format("Cluster '{}' ({}); steps on it wait until it is ready.", w.name, w.cluster->kind()));
      call(sh, cmd::apply_files(kube_target(), step.files));
      return;
    }
    case RolloutStep::Kind::kContents:
      if (!step.waits.empty()) {  // a service that serves steps' output: what it looks for, they write
        sh.line();
        sh.comment(fmt::format("Service '{}' serves the output of {}: once {} done.", step.workload->name,
                               fmt::join(step.workload->needs, ", "),
                               step.workload->needs.size() == 1 ? "it is" : "they are"));
        for (const k8s::Object* done : step.waits) sh.line(wait_line(*done));
      }
      contents_step(sh, *step.workload->service);
      return;
    case RolloutStep::Kind::kService: apply_service(sh, step); return;
    case RolloutStep::Kind::kHealth: health_check(sh); return;
    case RolloutStep::Kind::kWorkload: apply_workload(sh, step); return;
  }
}

/// The prerequisites' check (k8s/prerequisites.h): need_object and need_secret note what is
/// missing, then check_prerequisites stops naming every one, each with the command that makes it.
void prerequisite_functions(ShellScript& sh, const System& sys) {
  Call get = kubectl({"get", "\"$1\"", "-n", ref("NAMESPACE"), "-o", "name"});
  // The names of a Secret's keys, one a line; never its values.
  Call keys = kubectl({"get", "\"secret/$name\"", "-n", ref("NAMESPACE")});
  keys.opt("--output", "go-template={{range $k, $v := .data}}{{$k}}{{\"\\n\"}}{{end}}");
  sh.line();
  sh.comment("What the pods name that trainc does not create must be there before anything is applied:");
  sh.comment("a pod naming a missing Secret waits in CreateContainerConfigError until the waits give up.");
  sh.comment("need_object KIND/NAME HOW and need_secret NAME HOW KEY... note each one missing (HOW makes it);");
  sh.comment("check_prerequisites then stops naming them all. A dry run only prints the questions.");
  sh.line("MISSING=()");
  sh.open("need_object() {")
      .line("local err")
      .line("if [ \"$DRY_RUN\" = 1 ]; then run " + get.line() + "; return 0; fi")
      .line("if err=$(" + get.line() + " 2>&1 >/dev/null); then return 0; fi")
      .line("case \"$err\" in *NotFound* | *[Nn]ot\\ found*) MISSING+=(\"$1 is missing; make it: $2\") ;; *) die \"cannot read $1: $err\" ;; esac")
      .close("}");
  sh.open("need_secret() {")
      .line("local name=$1 how=$2 found key")
      .line("shift 2")
      .line("if [ \"$DRY_RUN\" = 1 ]; then run " + keys.line() + "; return 0; fi")
      .open("if ! found=$(" + keys.line() + " 2>&1); then")
      .line("case \"$found\" in *NotFound* | *[Nn]ot\\ found*) ;; *) die \"cannot read secret/$name: $found\" ;; esac")
      .line("MISSING+=(\"secret/$name is missing; make it: $how\")")
      .line("return 0")
      .close("fi")
      .open("for key in \"$@\"; do")
      .line("grep -qxF -- \"$key\" <<<\"$found\" || MISSING+=(\"secret/$name has no key $key; delete it and make it again: $how\")")
      .close("done")
      .close("}");
  const std::string ns_hint =
      sys.owns_namespace ? fmt::format(" (the namespace comes first: {})", hint({"apply", "-f", "${K8S_DIR}/namespace.yaml"}))
                         : "";
  sh.open("check_prerequisites() {")
      .line("[ \"${#MISSING[@]}\" -eq 0 ] && return 0")
      .line("log \"missing in namespace $NAMESPACE of context $KUBE_CONTEXT" + ns_hint + ":\"")
      .line("printf '  %s\\n' \"${MISSING[@]}\" >&2")
      .line("die \"${#MISSING[@]} object(s) the pods need are missing; nothing was applied (see README.md, Before you apply)\"")
      .close("}");
}

/// Each prerequisite asked for, then the stop when any is missing.
void check_prerequisites(ShellScript& sh, const System& sys) {
  sh.line();
  sh.comment("What the pods name that trainc does not create (README.md, Before you apply).");
  for (const auto& p : k8s::prerequisites(sys)) {
    const std::string how = lit(k8s::create_command(KubeTarget{}, sys, p).line());
    if (p.kind != k8s::Prerequisite::Kind::kSecret) {
      sh.line(fmt::format("need_object {} {}", lit(p.ref()), how));
      continue;
    }
    std::string line = fmt::format("need_secret {} {}", lit(p.name), how);
    for (const auto& key : p.keys) line += " " + lit(key);
    sh.line(line);
  }
  sh.line("check_prerequisites");
}

/// Where `--services-only` (CI's deploy) stops: before the first pipeline step, once what the output no
/// longer holds is pruned; past it, --rerun's runs are deleted, for the steps below to start again.
void services_only_exit(ShellScript& sh, const k8s::Plan& plan) {
  sh.line();
  sh.line("prune");
  // Services that serve steps' output come after the steps: not applied either.
  std::vector<std::string> after;
  for (const auto& w : plan.services)
    if (!w.needs.empty()) after.push_back("'" + w.name + "'");
  sh.open("if [ \"$SERVICES_ONLY\" = 1 ]; then")
      .line(plan.workloads.empty()
                ? "log 'applied (the system has no pipeline steps)'"
                : fmt::format("log {}", sh_quote(fmt::format(
                                            "applied; --services-only: the {} pipeline step(s) are not started{}",
                                            plan.workloads.size(),
                                            after.empty() ? ""
                                                          : fmt::format(", nor service(s) {}, which serve their output",
                                                                        fmt::join(after, ", "))))))
      .line("exit 0")
      .close("fi");
  if (!plan.workloads.empty()) sh.line("rerun_steps");
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
  // Kubernetes names only: nothing in them needs quoting, inside double quotes or out.
  sh.line(fmt::format("log \"  {}\"", hint({"--context", "${KUBE_CONTEXT}", "get", "jobs,pods", "-n", "${NAMESPACE}", "-l",
                                          selector, "-w"})));
  const k8s::Object& last = plan.workloads.back().done();
  // A RayJob (HTTPMode) has no pod of its own to follow: its status says where it stands.
  if (last.role == k8s::Role::kRayJob)
    sh.line(fmt::format("log \"  {}\"", hint({"--context", "${KUBE_CONTEXT}", "get", "rayjob", last.name, "-n", "${NAMESPACE}", "-w"})));
  else
    sh.line(fmt::format("log \"  {}\"", hint({"--context", "${KUBE_CONTEXT}", "logs", "-f", k8s::logs_ref(last), "-n",
                                            "${NAMESPACE}"})));
}

/// Whether the rollout starts with the image check.
bool checks_images(const Rollout& r) { return !r.steps.empty() && r.steps.front().kind == RolloutStep::Kind::kImages; }

std::vector<std::string> apply_help(const Planned& plan) {
  std::vector<std::string> help =
      plan.services.empty()
          ? std::vector<std::string>{"Applies the generated k8s/ files in dependency order: the shared objects, then each",
                                     "step once the steps it needs have completed. Run up.sh (or Terraform) first."}
          : std::vector<std::string>{"Applies the generated k8s/ files in dependency order: the shared objects, then the",
                                     "services (waiting until they roll out and health.sh finds them serving), then each",
                                     "step once the steps it needs have completed. Run up.sh (or Terraform) first."};
  if (checks_images(plan.rollout))
    help.insert(help.end(), {"It first checks that every image the pods pull from Artifact Registry is there",
                             "(build.sh, or CI, builds and pushes the images trainc builds)."});
  return help;
}

}  // namespace

std::string apply_script(const System& sys, const Planned& plan) {
  ShellScript sh;
  const Rollout& r = plan.rollout;
  const bool installs =
      std::any_of(r.steps.begin(), r.steps.end(), [](const RolloutStep& s) { return s.kind == RolloutStep::Kind::kInstall; });
  std::vector<Option> options{
      {"--services-only", "SERVICES_ONLY",
       "apply the shared objects, clusters and services, then stop: start no step (CI deploys)"},
      {"--rerun", "RERUN", "start STEP's run again, and every step's after it (all: every step)", "STEP"},
      {"--no-prune", "NO_PRUNE", "delete nothing the output no longer holds, and no earlier run"},
      {"--diff", "DIFF",
       "first show what applying would change on the cluster (trainc diff --live: read-only), then ask"},
      {"--kubeconfig", "KUBECONFIG_FILE",
       "use FILE's cluster (its current context): no gcloud credentials, no image check", "FILE", true}};
  // Only an output that installs add-ons has any to leave to the cluster's administrators.
  if (installs)
    options.push_back({"--addons-installed", "ADDONS_INSTALLED",
                       "the cluster's admins installed the add-ons: check them, install none"});
  prologue(sh, sys, {"apply.sh", "applies the Kubernetes objects", apply_help(plan)}, options,
           {.ns = true, .kube = true, .k8s_dir = true, .kubeconfig = true});
  kubeconfig_context(sh);
  runs_variables(sh, sys, plan);
  runs_functions(sh);
  wait_function(sh);
  diff_function(sh);
  if (!plan.workloads.empty()) start_run_function(sh);
  if (!plan.clusters.empty() || plan.needs_jobset) wait_for_function(sh);
  if (!plan.services.empty()) rollout_function(sh);
  if (checks_images(r)) {
    check_functions(sh, false);
    need_image_function(sh);
  }
  if (installs) need_addon_function(sh);
  if (std::any_of(sys.pools.begin(), sys.pools.end(), [](const auto& e) { return e.second.tas(); }))
    topology_labels_function(sh);
  if (!k8s::prerequisites(sys).empty()) prerequisite_functions(sh, sys);
  if (reads_spec_dir(sys)) find_spec_dir(sh, sys, "apply.sh");
  sh.line();
  sh.line("if [ \"$DRY_RUN\" = 1 ]; then log 'dry run: commands are printed, not run'; fi");
  sh.open("if [ -z \"$KUBECONFIG_FILE\" ]; then");
  call(sh, cluster_call("get-credentials"));
  sh.close("fi");
  sh.line("if [ \"$DIFF\" = 1 ]; then show_diff; fi");
  if (!k8s::prerequisites(sys).empty()) check_prerequisites(sh, sys);
  sh.line("guard_owners");
  sh.line("move_local_queue");
  for (const auto& [name, pool] : sys.pools)
    if (pool.tas()) sh.line("need_topology_labels " + lit(name));
  for (std::size_t i = 0; i < r.steps.size(); ++i) {
    if (i == r.services_end()) services_only_exit(sh, plan);
    apply_step(sh, sys, r.steps[i]);
  }
  if (r.services_end() == r.steps.size()) services_only_exit(sh, plan);
  if (!plan.workloads.empty()) sh.line("rerun_scheduled");
  watch_hint(sh, sys, plan);
  return sh.text();
}

}  // namespace trainc::scripts
