// apply.sh's day 2 (k8s/names.h job_name): which step runs and objects the output holds, the
// pruning of what trainc made for the system that the output no longer holds, the history of
// each step's runs, and `--rerun STEP|all`.
#include <algorithm>
#include <set>

#include <fmt/format.h>

#include "emit/emit_scripts.h"
#include "k8s/names.h"
#include "k8s/prune.h"

namespace trainc::scripts {
namespace {

using k8s::kClusterTypes;
using k8s::kNamespacedTypes;
using k8s::kRunTypes;
using k8s::RunType;

bool is_cluster_type(std::string_view type) {
  return std::any_of(std::begin(kClusterTypes), std::end(kClusterTypes), [&](auto t) { return t == type; });
}

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
  sh.comment("Cluster-scoped objects (Kueue's) also name the namespace they serve: another system of the same");
  sh.comment("name in another namespace has its own, which this one never lists, prunes or takes over.");
  sh.line("CLUSTER_SELECTOR=" + lit(fmt::format("app.kubernetes.io/managed-by=trainc,app.kubernetes.io/part-of={},{}={}",
                                                sys.name, k8s::kNamespaceLabel, sys.ns)));
  sh.line("SYSTEM=" + lit(sys.name));
  sh.line("LIST_SELECTOR=''  # listed()'s selector when not SELECTOR (set for one call; never the caller's)");
  sh.comment("Every object of this output that pruning looks at, as TYPE/NAME.");
  sh.line("declare -A CURRENT=(");
  std::set<std::string> current;
  for (const k8s::Object* o : plan.apply_order())
    if (prunable(*o)) current.insert(k8s::resource_type(*o) + "/" + o->name);
  for (const auto& c : current) sh.line(assoc(c, "1"));
  sh.line(")");
  // The types of this output's objects, namespaced and cluster-scoped, which guard_owners looks at.
  std::set<std::string> own_namespaced, own_cluster;
  for (const auto& c : current) {
    const std::string type = c.substr(0, c.find('/'));
    (is_cluster_type(type) ? own_cluster : own_namespaced).insert(type);
  }
  sh.line(fmt::format("OWN_NAMESPACED=({})", fmt::join(own_namespaced, " ")));
  sh.line(fmt::format("OWN_CLUSTER=({})", fmt::join(own_cluster, " ")));
  // The LocalQueue and the ClusterQueue it feeds (move_local_queue).
  std::string local_queue, cluster_queue;
  for (const k8s::Object* o : plan.apply_order())
    if (o->role == k8s::Role::kLocalQueue) local_queue = o->name;
    else if (o->role == k8s::Role::kClusterQueue) cluster_queue = o->name;
  sh.line("LOCAL_QUEUE=" + lit(local_queue) + " CLUSTER_QUEUE=" + lit(cluster_queue));
  sh.line("OLD_CLUSTER_QUEUE=''  # the ClusterQueue the LocalQueue fed before (move_local_queue)");
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
  sh.line("readonly SELECTOR CLUSTER_SELECTOR SYSTEM CURRENT OWN_NAMESPACED OWN_CLUSTER LOCAL_QUEUE CLUSTER_QUEUE RUN_OF "
          "HISTORY AFTER");
  sh.line("KEPT=()  # the names of the runs pruning keeps (their ConfigMaps and Services stay with them)");
  sh.line("RERUN_SCHEDULED=()  # scheduled steps --rerun starts a Job of once they are applied");
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
  Call get = kubectl({"get", "\"$1\"", "\"${@:3}\"", "-l", "\"${LIST_SELECTOR:-$SELECTOR}\"", "--ignore-not-found"});
  get.next_line().opt("--sort-by", ".metadata.creationTimestamp").flag("--no-headers");
  get.flag("--output", "\"custom-columns=NAME:.metadata.name,STEP:.metadata.labels.trainc\\.dev/step,"
                      "OWNER:.metadata.ownerReferences[*].kind,STATE:$2\"");
  const auto parts = get.parts();
  sh.line();
  sh.comment("The objects of type $1 the system's labels select, oldest first, as \"NAME STEP OWNER STATE\"");
  sh.comment("lines (OWNER: the kinds of its owners; STATE: jsonpath $2 of each; <none> where unset); $3...:");
  sh.comment("-n NAMESPACE, or nothing for a");
  sh.comment("cluster-scoped type (listed by LIST_SELECTOR when set). A type whose CRD is not installed has none;");
  sh.comment("in a dry run, a cluster that cannot be read (no credentials yet) has none either (prune says so).");
  sh.open("listed() {");
  for (size_t i = 0; i < parts.size(); ++i)
    sh.line((i == 0 ? "local out cmd=(" : "  ") + parts[i] + (i + 1 == parts.size() ? ")" : ""));
  sh.line("if out=$(\"${cmd[@]}\" 2>/dev/null); then printf '%s\\n' \"$out\"; return 0; fi")
      .line("out=$(\"${cmd[@]}\" 2>&1 >/dev/null) || true")
      .line("case \"$out\" in *\"doesn't have a resource type\"*) return 0 ;; esac")
      .line("if [ \"$DRY_RUN\" = 1 ]; then return 0; fi  # prune said why it cannot list")
      .line("die \"cannot list $1: $out\"")
      .close("}");
  Call del = kubectl({"delete", "\"$1\"", "\"${@:3}\"", "--ignore-not-found", "--wait=false"});
  sh.comment("Deletes $1 (TYPE/NAME), saying why ($2); $3...: -n NAMESPACE, or nothing.");
  sh.open("drop() {")
      .line("if [ \"$DRY_RUN\" = 1 ]; then log \"dry run: would delete $1: $2\"; return 0; fi")
      .line("log \"deleting $1: $2\"")
      .line("run " + del.line())
      .close("}");
  sh.open("kept() {")
      .line("local k")
      .line("for k in \"${KEPT[@]}\"; do [ \"$k\" = \"$1\" ] && return 0; done")
      .line("return 1")
      .close("}");
  sh.comment("The runs of type $1 (state at jsonpath $2, finished when it matches $3): the current run of each");
  sh.comment("step stays, with the newest earlier finished ones up to the step's history. An earlier run still");
  sh.comment("going is stopped: the current run replaces it. The runs of a step no longer in the spec go. The");
  sh.comment(fmt::format("Jobs a scheduled step's CronJob makes ({}) are left to its history limits.", k8s::kScheduleLabel));
  sh.open("prune_runs() {")
      .line("local name step owner state lines")
      .line("local -A older=()")
      .line(fmt::format("lines=$(LIST_SELECTOR=\"$SELECTOR,!{}\" listed \"$1\" \"$2\" -n \"$NAMESPACE\")", k8s::kScheduleLabel))
      .open("while read -r name step owner state; do")
      .line("[ -n \"$name\" ] || continue")
      .line("[ \"$owner\" = '<none>' ] || continue  # a controller's (a JobSet's Jobs): its owner's to delete")
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
      .line("local name step owner state lines")
      .line("lines=$(listed \"$1\" .metadata.name \"${@:2}\")")
      .open("while read -r name step owner state; do")
      .line("[ -n \"$name\" ] || continue")
      .line("[ \"$owner\" = '<none>' ] || continue  # a controller's (a JobSet's Jobs): its owner's to delete")
      .line("if [ -n \"${CURRENT[$1/$name]:-}\" ]; then continue; fi")
      .line("if [ \"$step\" != '<none>' ] && { [ \"$SERVICES_ONLY\" = 1 ] || kept \"$name\"; }; then continue; fi")
      .line("drop \"$1/$name\" 'this output no longer has it' \"${@:2}\"")
      .close("done <<<\"$lines\"")
      .close("}");
  Call probe = kubectl({"get", "namespace", ref("NAMESPACE"), "--ignore-not-found", "--output=name"});
  sh.comment("Deletes what trainc made for this system that this output no longer holds (--no-prune: nothing).");
  sh.comment("A dry run reads the cluster and names each deletion instead.");
  sh.open("prune() {")
      .line("local type")
      .line("if [ \"$NO_PRUNE\" = 1 ]; then log '--no-prune: nothing is deleted'; return 0; fi")
      .open("if [ \"$DRY_RUN\" = 1 ]; then")
      .line("local probe=(" + probe.line() + ") out")
      .open("if ! out=$(\"${probe[@]}\" 2>&1 >/dev/null); then")
      .line("log \"dry run: the cluster cannot be read (${out:-no answer}): what pruning would delete is not listed\"")
      .line("return 0")
      .close("fi")
      .line("log \"dry run: what pruning would delete (selector $SELECTOR):\"")
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
      .line("for type in" + cluster + "; do LIST_SELECTOR=$CLUSTER_SELECTOR prune_rest \"$type\"; done")
      .line("prune_old_queue")
      .close("}");
  // Who holds each object: its name, its system (part-of) and, cluster-scoped, its namespace label.
  Call owners = kubectl({"get", "\"$1\"", "\"${@:2}\"", "--ignore-not-found", "--no-headers"});
  owners.flag("--output", "\"custom-columns=NAME:.metadata.name,SYSTEM:.metadata.labels.app\\.kubernetes\\.io/part-of,"
                          "NAMESPACE:.metadata.labels.trainc\\.dev/namespace\"");
  sh.comment("Every object of type $1 ($2...: -n NAMESPACE, or nothing) as \"NAME SYSTEM NAMESPACE\" lines (<none>");
  sh.comment("where a label is unset); nothing for a type not installed yet, or in a dry run that cannot read; any");
  sh.comment("other failure stops the script: a guard that cannot see must not pass.");
  sh.open("owners() {");
  const auto owner_parts = owners.parts();
  for (size_t i = 0; i < owner_parts.size(); ++i)
    sh.line((i == 0 ? "local cmd=(" : "  ") + owner_parts[i] + (i + 1 == owner_parts.size() ? ")" : ""));
  sh.line("local out")
      .line("if out=$(\"${cmd[@]}\" 2>&1); then printf '%s\\n' \"$out\"; return 0; fi")
      .line("case \"$out\" in *\"doesn't have a resource type\"*) return 0 ;; esac")
      .line("if [ \"$DRY_RUN\" = 1 ]; then return 0; fi")
      .line("die \"cannot list $1 to see whose objects these names are: $out\"")
      .close("}");
  sh.comment("Refuses to take over an object another system holds (or one no trainc system made) under a name");
  sh.comment("this output uses: apply would make it this system's, and the other's next apply would take it");
  sh.comment("back or prune it. An object carrying this system's labels (and, cluster-scoped, its namespace's)");
  sh.comment("is taken as this system's, whoever made it.");
  sh.open("guard_owners() {")
      .line("local type name owner ns")
      .open("for type in ${OWN_NAMESPACED[@]+\"${OWN_NAMESPACED[@]}\"}; do")
      .open("while read -r name owner ns; do")
      .line("[ -n \"${CURRENT[$type/${name:-}]:-}\" ] || continue")
      .line("if [ \"$owner\" = \"$SYSTEM\" ]; then continue; fi")
      .line("if [ \"$owner\" = '<none>' ]; then die \"$type/$name exists in namespace $NAMESPACE and trainc did not make it "
            "(no app.kubernetes.io/part-of label): this output would take it over; delete or rename it, or rename the "
            "object in the spec\"; fi")
      .line("die \"$type/$name in namespace $NAMESPACE belongs to system '$owner': both systems name an object so; rename "
            "this system or the workload, or deploy into a namespace of its own\"")
      .close("done < <(owners \"$type\" -n \"$NAMESPACE\")")
      .close("done")
      .open("for type in ${OWN_CLUSTER[@]+\"${OWN_CLUSTER[@]}\"}; do")
      .open("while read -r name owner ns; do")
      .line("[ -n \"${CURRENT[$type/${name:-}]:-}\" ] || continue")
      .line("if [ \"$owner\" = \"$SYSTEM\" ] && [ \"$ns\" = \"$NAMESPACE\" ]; then continue; fi")
      .line("die \"$type/$name (cluster-scoped) belongs to system '$owner' in namespace '$ns', not to this one in "
            "'$NAMESPACE': rename one of the systems\"")
      .close("done < <(owners \"$type\")")
      .close("done")
      .close("}");
  Call lq_get = kubectl({"get", "localqueues.kueue.x-k8s.io/\"$LOCAL_QUEUE\"", "-n", ref("NAMESPACE"), "--ignore-not-found"});
  lq_get.flag("--output", "'jsonpath={.spec.clusterQueue} {.metadata.labels.app\\.kubernetes\\.io/part-of}'");
  Call lq_delete = kubectl({"delete", "localqueues.kueue.x-k8s.io/\"$LOCAL_QUEUE\"", "-n", ref("NAMESPACE"),
                            "--ignore-not-found", "--wait=true", "--timeout=120s"});
  sh.comment("Kueue keeps a LocalQueue's clusterQueue as it was made (CRD rule self == oldSelf): the system's LocalQueue");
  sh.comment("feeding another ClusterQueue (one named before trainc told namespaces apart) is made again, and the");
  sh.comment("ClusterQueue it fed is remembered for prune_old_queue. Its workloads wait meanwhile; none is lost.");
  sh.open("move_local_queue() {")
      .line("local was owner")
      .line("[ -n \"$LOCAL_QUEUE\" ] || return 0")
      .line("read -r was owner < <(" + lq_get.line() + " 2>/dev/null; echo) || true")
      .line("if [ -z \"$was\" ] || [ \"$was\" = \"$CLUSTER_QUEUE\" ] || [ \"$owner\" != \"$SYSTEM\" ]; then return 0; fi")
      .line("OLD_CLUSTER_QUEUE=$was")
      .line("log \"LocalQueue $LOCAL_QUEUE feeds ClusterQueue $was; it now feeds $CLUSTER_QUEUE, which Kueue lets no update "
            "change: it is made again\"")
      .line("run " + lq_delete.line())
      .close("}");
  Call cq_flavors = kubectl({"get", "clusterqueues.kueue.x-k8s.io/\"$OLD_CLUSTER_QUEUE\"", "--ignore-not-found"});
  cq_flavors.flag("--output", "'jsonpath={.spec.resourceGroups[*].flavors[*].name}'");
  Call rf_topology = kubectl({"get", "resourceflavors.kueue.x-k8s.io/\"$f\"", "--ignore-not-found"});
  rf_topology.flag("--output", "'jsonpath={.spec.topologyName}'");
  sh.comment("The ClusterQueue the LocalQueue fed before (move_local_queue), with its flavors and their Topology: this");
  sh.comment("system's, from before cluster-scoped objects named their namespace, and so outside CLUSTER_SELECTOR.");
  sh.comment("Only what carries this system's labels and no namespace label goes.");
  sh.comment("Whether object $1, listed as NAME $2, SYSTEM $3, NAMESPACE $4, is this system's from before");
  sh.comment("cluster-scoped objects named their namespace: its labels, and no namespace label.");
  sh.open("ours_from_before() {")
      .line("[ \"$2\" = \"$1\" ] || return 1")
      .line("[ \"$3\" = \"$SYSTEM\" ] || return 1")
      .line("[ \"$4\" = '<none>' ]")
      .close("}");
  Call all_lq = kubectl({"get", "localqueues.kueue.x-k8s.io", "--all-namespaces", "--no-headers"});
  all_lq.flag("--output", "'custom-columns=NAMESPACE:.metadata.namespace,QUEUE:.spec.clusterQueue'");
  sh.comment("Whether a LocalQueue outside this namespace feeds ClusterQueue $1 (two systems of one name in two");
  sh.comment("namespaces shared it under the old names); unknown counts as yes.");
  sh.open("fed_elsewhere() {")
      .line("local lines")
      .line("lines=$(" + all_lq.line() + " 2>/dev/null) || return 0")
      .line("awk -v ns=\"$NAMESPACE\" -v q=\"$1\" '$1 != ns && $2 == q { found = 1 } END { exit !found }' <<<\"$lines\"")
      .close("}");
  sh.open("prune_old_queue() {")
      .line("local name owner ns f flavors topologies=()")
      .line("[ -n \"$OLD_CLUSTER_QUEUE\" ] || return 0")
      .line("read -r name owner ns < <(owners clusterqueues.kueue.x-k8s.io | awk -v q=\"$OLD_CLUSTER_QUEUE\" '$1 == q'; echo)")
      .line("if ! ours_from_before \"$OLD_CLUSTER_QUEUE\" \"$name\" \"$owner\" \"$ns\"; then return 0; fi")
      .line("if fed_elsewhere \"$OLD_CLUSTER_QUEUE\"; then log \"ClusterQueue $OLD_CLUSTER_QUEUE stays: a LocalQueue of another "
            "namespace still feeds it (a system of this name there, not moved yet)\"; return 0; fi")
      .line("flavors=$(" + cq_flavors.line() + " 2>/dev/null) || true")
      .line("drop \"clusterqueues.kueue.x-k8s.io/$OLD_CLUSTER_QUEUE\" \"the ClusterQueue LocalQueue $LOCAL_QUEUE fed before "
            "$CLUSTER_QUEUE\"")
      .open("for f in $flavors; do")
      .line("[ -z \"${CURRENT[resourceflavors.kueue.x-k8s.io/$f]:-}\" ] || continue")
      .line("read -r name owner ns < <(owners resourceflavors.kueue.x-k8s.io | awk -v q=\"$f\" '$1 == q'; echo)")
      .line("if ! ours_from_before \"$f\" \"$name\" \"$owner\" \"$ns\"; then continue; fi")
      .line("topologies+=(\"$(" + rf_topology.line() + " 2>/dev/null || true)\")")
      .line("drop \"resourceflavors.kueue.x-k8s.io/$f\" \"a flavor of ClusterQueue $OLD_CLUSTER_QUEUE\"")
      .close("done")
      .open("for f in ${topologies[@]+\"${topologies[@]}\"}; do")
      .line("if [ -z \"$f\" ] || [ -n \"${CURRENT[topologies.kueue.x-k8s.io/$f]:-}\" ]; then continue; fi")
      .line("read -r name owner ns < <(owners topologies.kueue.x-k8s.io | awk -v q=\"$f\" '$1 == q'; echo)")
      .line("if ! ours_from_before \"$f\" \"$name\" \"$owner\" \"$ns\"; then continue; fi")
      .line("drop \"topologies.kueue.x-k8s.io/$f\" \"the Topology of ClusterQueue $OLD_CLUSTER_QUEUE's flavors\"")
      .close("done")
      .close("}");
  Call rerun_delete = kubectl({"delete", "\"${RUN_OF[$s]}\"", "-n", ref("NAMESPACE"), "--ignore-not-found", "--wait=true"});
  Call rerun_now = kubectl({"create", "job", "--from=\"${RUN_OF[$s]}\"", "\"${RUN_OF[$s]#*/}-$(date -u +%y%m%d%H%M)\"",
                            "-n", ref("NAMESPACE")});
  sh.comment("--rerun: deletes the current run of each step named, and of every step after it, so that the");
  sh.comment("apply below starts them again (their ConfigMaps and Services stay). A scheduled step is left to");
  sh.comment("rerun_scheduled.");
  sh.open("rerun_steps() {")
      .line("local step s steps")
      .open("for step in ${RERUN_STEPS[@]+\"${RERUN_STEPS[@]}\"}; do")
      .line("read -ra steps <<<\"${AFTER[$step]}\"")
      .open("for s in \"${steps[@]}\"; do")
      .line("log \"--rerun $step: step '$s' starts again\"")
      .open("case \"${RUN_OF[$s]}\" in")
      .line("cronjobs.batch/*) RERUN_SCHEDULED+=(\"$s\") ;;  # once its CronJob is applied")
      .line("*) run " + rerun_delete.line() + " ;;")
      .close("esac")
      .close("done")
      .close("done")
      .close("}");
  sh.comment("--rerun of a scheduled step, once the apply has made its CronJob as the spec has it: a Job of it now,");
  sh.comment("besides its times, named for the minute (the CronJob's name is at most 52 characters, this 63).");
  sh.open("rerun_scheduled() {")
      .line("local s")
      .open("for s in ${RERUN_SCHEDULED[@]+\"${RERUN_SCHEDULED[@]}\"}; do")
      .line("log \"--rerun: a Job of step '$s' now, from its CronJob\"")
      .line("run " + rerun_now.line())
      .close("done")
      .close("}");
}

}  // namespace trainc::scripts
