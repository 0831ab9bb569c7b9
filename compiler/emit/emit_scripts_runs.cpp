// apply.sh's day 2 (k8s/names.h job_name): which step runs and objects the output holds, the
// pruning of what trainc made for the system that the output no longer holds, the history of
// each step's runs, and `--rerun STEP|all`.
#include <algorithm>
#include <set>

#include <fmt/format.h>

#include "emit/emit_scripts.h"
#include "k8s/names.h"

namespace trainc::scripts {
namespace {

/// The run kinds: their resource type, where their state is, and what it reads once they finished.
struct RunType {
  std::string_view type, state, done;
};
constexpr RunType kRunTypes[] = {
    {"jobs.batch", ".status.conditions[*].type", "(^|,)(Complete|Failed)(,|$)"},
    {"jobsets.jobset.x-k8s.io", ".status.terminalState", "^(Completed|Failed)$"},
    {"rayjobs.ray.io", ".status.jobDeploymentStatus", "^(Complete|Failed|ValidationFailed)$"},
};
/// Every other type trainc makes in a system's namespace, and outside any (Kueue's cluster-scoped
/// objects, named after the system). Never the namespace itself, and never the GKE networks and the
/// gIB installer, which every system on the cluster shares by name.
constexpr std::string_view kNamespacedTypes[] = {
    "configmaps", "services", "deployments.apps", "serviceaccounts", "poddisruptionbudgets.policy",
    "horizontalpodautoscalers.autoscaling", "podmonitorings.monitoring.googleapis.com",
    "virtualservices.networking.istio.io", "gateways.networking.istio.io", "rayclusters.ray.io",
    "localqueues.kueue.x-k8s.io"};
constexpr std::string_view kClusterTypes[] = {"clusterqueues.kueue.x-k8s.io", "resourceflavors.kueue.x-k8s.io",
                                              "topologies.kueue.x-k8s.io"};

bool prunable(const k8s::Object& o) {
  const std::string type = k8s::resource_type(o);
  auto in = [&](const auto& list) {
    return std::any_of(std::begin(list), std::end(list), [&](const auto& t) { return std::string_view(t) == type; });
  };
  return in(kNamespacedTypes) || in(kClusterTypes) ||
         std::any_of(std::begin(kRunTypes), std::end(kRunTypes), [&](const RunType& r) { return r.type == type; });
}

/// Each step, then every step that needs it, directly or not, in apply order.
std::vector<std::string> steps_from(const k8s::Plan& plan, const std::string& first) {
  std::set<std::string> in{first};
  std::vector<std::string> out;
  for (const auto& w : plan.workloads) {
    const bool after = std::any_of(w.needs.begin(), w.needs.end(), [&](const auto& n) { return in.count(n) > 0; });
    if (w.name == first || after) {
      in.insert(w.name);
      out.push_back(w.name);
    }
  }
  return out;
}

std::string assoc(const std::string& key, const std::string& value) { return fmt::format("  [{}]={}", lit(key), lit(value)); }

}  // namespace

void runs_variables(ShellScript& sh, const System& sys, const Planned& plan) {
  sh.line();
  sh.comment("What trainc made for this system carries these labels; apply.sh deletes only such objects.");
  sh.line("SELECTOR=" + lit(fmt::format("app.kubernetes.io/managed-by=trainc,app.kubernetes.io/part-of={}", sys.name)));
  sh.comment("Every object of this output that pruning looks at, as TYPE/NAME.");
  sh.line("declare -A CURRENT=(");
  std::set<std::string> current;
  for (const k8s::Object* o : plan.apply_order())
    if (prunable(*o)) current.insert(k8s::resource_type(*o) + "/" + o->name);
  for (const auto& c : current) sh.line(assoc(c, "1"));
  sh.line(")");
  sh.comment("Each step's current run (TYPE/NAME: a run is named by what it runs), how many of its runs");
  sh.comment("are kept (its history), and the steps that run again with it: itself and every step after it.");
  std::vector<std::string> run_of, history, after;
  std::vector<std::string> all;
  for (const auto& w : plan.workloads) {
    run_of.push_back(assoc(w.name, k8s::resource_type(w.done()) + "/" + w.done().name));
    history.push_back(assoc(w.name, std::to_string(w.step->history)));
    after.push_back(assoc(w.name, fmt::format("{}", fmt::join(steps_from(plan, w.name), " "))));
    all.push_back(w.name);
  }
  after.push_back(assoc("all", fmt::format("{}", fmt::join(all, " "))));
  for (const auto& [name, lines] : {std::pair{"RUN_OF", &run_of}, {"HISTORY", &history}, {"AFTER", &after}}) {
    if (lines->empty()) {
      sh.line(fmt::format("declare -A {}=()", name));
      continue;
    }
    sh.line(fmt::format("declare -A {}=(", name));
    for (const auto& l : *lines) sh.line(l);
    sh.line(")");
  }
  sh.line("readonly SELECTOR CURRENT RUN_OF HISTORY AFTER");
  sh.line("KEPT=()  # the names of the runs pruning keeps (their ConfigMaps and Services stay with them)");
  sh.line("read -r -a RERUN_STEPS <<<\"$RERUN\"");
  sh.open("for step in ${RERUN_STEPS[@]+\"${RERUN_STEPS[@]}\"}; do")
      .line(fmt::format("[ -n \"${{AFTER[$step]:-}}\" ] || {{ usage >&2; log {}; exit 2; }}",
                        dq("error: --rerun ", Var{"step"}, ": no such step (the steps: ",
                           all.empty() ? "none" : fmt::format("{}", fmt::join(all, " ")), "; or all)")))
      .close("done");
  sh.line("readonly RERUN_STEPS");
  sh.line("if [ \"$SERVICES_ONLY\" = 1 ] && [ \"${#RERUN_STEPS[@]}\" -gt 0 ]; then die '--rerun starts steps again, "
          "--services-only starts none: give one of them'; fi");
}

void runs_functions(ShellScript& sh) {
  Call get = kubectl({"get", "\"$1\"", "\"${@:3}\"", "-l", ref("SELECTOR"), "--ignore-not-found"});
  get.next_line().opt("--sort-by", ".metadata.creationTimestamp").flag("--no-headers");
  get.flag("--output", "\"custom-columns=NAME:.metadata.name,STEP:.metadata.labels.trainc\\.dev/step,STATE:$2\"");
  const auto parts = get.parts();
  sh.line();
  sh.comment("The objects of type $1 the system's labels select, oldest first, as \"NAME STEP STATE\" lines");
  sh.comment("(STATE: jsonpath $2 of each, <none> where unset); $3...: -n NAMESPACE, or nothing for a");
  sh.comment("cluster-scoped type. A type whose CRD is not installed has none.");
  sh.open("listed() {");
  for (size_t i = 0; i < parts.size(); ++i)
    sh.line((i == 0 ? "local out cmd=(" : "  ") + parts[i] + (i + 1 == parts.size() ? ")" : ""));
  sh.line("if out=$(\"${cmd[@]}\" 2>/dev/null); then printf '%s\\n' \"$out\"; return 0; fi")
      .line("out=$(\"${cmd[@]}\" 2>&1 >/dev/null) || true")
      .line("case \"$out\" in *\"doesn't have a resource type\"*) return 0 ;; esac")
      .line("die \"cannot list $1: $out\"")
      .close("}");
  Call del = kubectl({"delete", "\"$1\"", "\"${@:3}\"", "--ignore-not-found", "--wait=false"});
  sh.comment("Deletes $1 (TYPE/NAME), saying why ($2); $3...: -n NAMESPACE, or nothing.");
  sh.open("drop() {").line("log \"deleting $1: $2\"").line("run " + del.line()).close("}");
  sh.open("kept() {")
      .line("local k")
      .line("for k in \"${KEPT[@]}\"; do [ \"$k\" = \"$1\" ] && return 0; done")
      .line("return 1")
      .close("}");
  sh.comment("The runs of type $1 (state at jsonpath $2, finished when it matches $3): the current run of each");
  sh.comment("step stays, with the newest earlier finished ones up to the step's history. An earlier run still");
  sh.comment("going is stopped: the current run replaces it. The runs of a step no longer in the spec go.");
  sh.open("prune_runs() {")
      .line("local name step state lines")
      .line("local -A older=()")
      .line("lines=$(listed \"$1\" \"$2\" -n \"$NAMESPACE\")")
      .open("while read -r name step state; do")
      .line("[ -n \"$name\" ] || continue")
      .line("if [ -n \"${CURRENT[$1/$name]:-}\" ]; then KEPT+=(\"$name\"); continue; fi")
      .open("if [ \"$step\" = '<none>' ]; then")
      .line("drop \"$1/$name\" 'a step of this system from before runs were named (an earlier trainc)' -n \"$NAMESPACE\"")
      .line("continue")
      .close("fi")
      .open("if [ -z \"${HISTORY[$step]:-}\" ]; then")
      .line("drop \"$1/$name\" \"a run of step '$step', which the spec no longer has\" -n \"$NAMESPACE\"")
      .line("continue")
      .close("fi")
      .open("if ! [[ $state =~ $3 ]]; then")
      .line("drop \"$1/$name\" \"an earlier run of step '$step', not finished: the current run replaces it\" -n "
            "\"$NAMESPACE\"")
      .line("continue")
      .close("fi")
      .line("older[$step]=$((${older[$step]:-0} + 1))")
      .line("if [ \"${older[$step]}\" -lt \"${HISTORY[$step]}\" ]; then KEPT+=(\"$name\"); continue; fi")
      .line("drop \"$1/$name\" \"step '$step' keeps its last ${HISTORY[$step]} runs\" -n \"$NAMESPACE\"")
      .close("done < <(tac <<<\"$lines\")")
      .close("}");
  sh.comment("The other objects of type $1 ($2...: -n NAMESPACE, or nothing) that this output no longer");
  sh.comment("holds; a run's ConfigMap and Service go with their run (with --services-only, no run goes).");
  sh.open("prune_rest() {")
      .line("local name step state lines")
      .line("lines=$(listed \"$1\" .metadata.name \"${@:2}\")")
      .open("while read -r name step state; do")
      .line("[ -n \"$name\" ] || continue")
      .line("if [ -n \"${CURRENT[$1/$name]:-}\" ]; then continue; fi")
      .line("if [ \"$step\" != '<none>' ] && { [ \"$SERVICES_ONLY\" = 1 ] || kept \"$name\"; }; then continue; fi")
      .line("drop \"$1/$name\" 'this output no longer has it' \"${@:2}\"")
      .close("done <<<\"$lines\"")
      .close("}");
  sh.comment("Deletes what trainc made for this system that this output no longer holds (--no-prune: nothing).");
  sh.open("prune() {")
      .line("local type")
      .line("if [ \"$NO_PRUNE\" = 1 ]; then log '--no-prune: nothing is deleted'; return 0; fi")
      .open("if [ \"$DRY_RUN\" = 1 ]; then")
      .line("log 'dry run: here what trainc made for the system that this output no longer holds, and the runs'")
      .line("log \"  beyond each step's history, would be deleted, each named (selector $SELECTOR)\"")
      .line("return 0")
      .close("fi")
      .open("if [ \"$SERVICES_ONLY\" = 0 ]; then");
  for (const RunType& r : kRunTypes) sh.line(fmt::format("prune_runs {} {} {}", lit(r.type), lit(r.state), lit(r.done)));
  sh.close("fi");
  std::string namespaced, cluster;
  for (auto t : kNamespacedTypes) namespaced += " " + std::string(t);
  for (auto t : kClusterTypes) cluster += " " + std::string(t);
  sh.line("for type in" + namespaced + "; do")
      .line("  prune_rest \"$type\" -n \"$NAMESPACE\"")
      .line("done")
      .line("for type in" + cluster + "; do prune_rest \"$type\"; done")
      .close("}");
  Call rerun_delete = kubectl({"delete", "\"${RUN_OF[$s]}\"", "-n", ref("NAMESPACE"), "--ignore-not-found", "--wait=true"});
  sh.comment("--rerun: deletes the current run of each step named, and of every step after it, so that the");
  sh.comment("apply below starts them again (their ConfigMaps and Services stay).");
  sh.open("rerun_steps() {")
      .line("local step s steps")
      .open("for step in ${RERUN_STEPS[@]+\"${RERUN_STEPS[@]}\"}; do")
      .line("read -ra steps <<<\"${AFTER[$step]}\"")
      .open("for s in \"${steps[@]}\"; do")
      .line("log \"--rerun $step: step '$s' starts again\"")
      .line("run " + rerun_delete.line())
      .close("done")
      .close("done")
      .close("}");
}

}  // namespace trainc::scripts
