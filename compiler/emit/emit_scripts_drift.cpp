// up.sh's second run (emit_scripts.h): what exists is compared with the spec. A cluster's network is
// fixed (up.sh stops), its release channel and Managed Prometheus are updated; a bucket's location is
// fixed. Node pools that exist are compared with the spec, field by
// field as `gcloud container node-pools describe` names them (the REST API's NodePool). What gcloud
// updates in place (the size, autoscaling limits, node labels and taints) is updated; a change to a
// field fixed when the pool is made (machine type, accelerators, disk, Spot, flex-start, a
// reservation, TPU placement) needs a new pool: up.sh stops, naming the fields, what a replacement
// destroys and the commands, or replaces the pools `--replace POOL` names.
#include <algorithm>
#include <cctype>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "emit/emit_scripts.h"

namespace trainc::scripts {
namespace {

/// The node pool fields up.sh reads, in the order of its POOL_FIELDS: those a spec edit changes.
const std::vector<std::string_view>& pool_fields() {
  static const std::vector<std::string_view> fields = {
      "config.machineType", "config.accelerators[0].acceleratorType", "config.accelerators[0].acceleratorCount",
      "config.diskSizeGb", "config.spot", "config.flexStart", "queuedProvisioning.enabled",
      "config.reservationAffinity.consumeReservationType",
      "config.reservationAffinity.values", "placementPolicy.type", "placementPolicy.tpuTopology",
      "autoscaling.enabled", "autoscaling.minNodeCount", "autoscaling.maxNodeCount", "autoscaling.totalMinNodeCount",
      "autoscaling.totalMaxNodeCount", "config.labels", "config.taints[].key", "config.taints[].value",
      "config.taints[].effect", "instanceGroupUrls"};
  return fields;
}

/// `gcloud container node-pools <verb> "$pool"`, for the functions below (the pool is their $pool).
Call pool_word_call(std::string_view verb) {
  Call c = gcloud({"container", "node-pools", std::string(verb), "\"$pool\""});
  c.flag("--cluster", ref("CLUSTER"));
  return at(c);
}

/// Prints a command as `run` does without running it: the commands a refusal asks the user to run.
void show_function(ShellScript& sh) {
  sh.line();
  sh.comment("Prints a command as run does, without running it: the commands up.sh leaves to the user.");
  sh.open("show() {")
      .line("local word line=")
      .open("for word in \"$@\"; do")
      .line("if [[ $word =~ ^[A-Za-z0-9_./:=@%+,-]+$ ]]; then line+=\" $word\"; else line+=\" $(printf '%q' \"$word\")\"; fi")
      .close("done")
      .line("printf '  %s\\n' \"${line# }\" >&2")
      .close("}");
}

/// create_pool VIA POOL: the spec's `node-pools create` of each GKE node pool, run (VIA run) or
/// printed (VIA show), so that a replacement names the very command a first run makes.
void create_pool_function(ShellScript& sh, const System& sys) {
  sh.line();
  sh.comment("Creates node pool $2 as the spec makes it, through $1: run, or show to print the command.");
  sh.open("create_pool() {").open("case \"$2\" in");
  for (const Pool& p : sys.gke_pools())
    for (const auto& name : p.node_pools()) {
      sh.open(lit(name) + ")");
      call(sh, pool_create(sys, p, name), "\"$1\"");
      sh.close(";;");
    }
  sh.line("*) die \"the spec has no node pool $2\" ;;");
  sh.close("esac").close("}");
}

/// Reads a pool into NOW; pool_field prints one field of it; same_pool compares the fields that
/// need a new pool.
void compare_functions(ShellScript& sh) {
  std::vector<std::string> quoted;
  for (auto f : pool_fields()) quoted.push_back(lit(f));
  Call describe = pool_word_call("describe");
  describe.opt("--format", fmt::format("value[separator=\"|\"]({})", fmt::join(pool_fields(), ",")));
  sh.line();
  sh.comment("The node pool fields up.sh compares with the spec, as gcloud's describe names them.");
  sh.line("readonly POOL_FIELDS=(");
  for (std::size_t i = 0; i < quoted.size(); i += 4)
    sh.line(fmt::format("  {}", fmt::join(quoted.begin() + i, quoted.begin() + std::min(i + 4, quoted.size()), " ")));
  sh.line(")");
  sh.line("NOW=()");
  sh.comment("Reads node pool $1 into NOW, in POOL_FIELDS' order (a list's items separated by ';').");
  sh.open("read_pool() {").line("local pool=$1 line");
  auto lines = render(describe, "line=$(", ") ||");
  for (const auto& l : lines) sh.line(l);
  sh.line("  die \"cannot read node pool $pool\"");
  sh.line("IFS='|' read -r -a NOW <<<\"$line\"").close("}");
  sh.comment("Prints field $1 of the node pool read into NOW.");
  sh.open("pool_field() {")
      .line("local i")
      .open("for i in \"${!POOL_FIELDS[@]}\"; do")
      .line("if [ \"${POOL_FIELDS[$i]}\" = \"$1\" ]; then printf '%s\\n' \"${NOW[$i]:-}\"; return 0; fi")
      .close("done")
      .line("die \"up.sh reads no node pool field $1\"")
      .close("}");
  sh.comment("Reads node pool $1 and says whether each FIELD=VALUE after it holds, logging each that does not:");
  sh.comment("VALUE True or False is a boolean (gcloud leaves a false one out), 0 matches a number left out,");
  sh.comment("and !VALUE anything but VALUE. These fields are fixed when a pool is made.");
  sh.open("same_pool() {")
      .line("local pool=$1 pair field want have same=0")
      .line("shift")
      .line("read_pool \"$pool\"")
      .open("for pair in \"$@\"; do")
      .line("field=${pair%%=*} want=${pair#*=}")
      .line("have=$(pool_field \"$field\")")
      .open("case $want in")
      .line("True | False) if [ \"$have\" != True ]; then have=False; fi ;;")
      .line("0) have=${have:-0} ;;")
      .line("'!'*) if [ \"$have\" != \"${want#!}\" ]; then continue; fi; want=\"anything but ${want#!}\" ;;")
      .close("esac")
      .line("if [ \"$have\" = \"$want\" ]; then continue; fi")
      .line("log \"node pool $pool: $field is ${have:-unset}; the spec makes it ${want:-unset}\"")
      .line("same=1")
      .close("done")
      .line("return \"$same\"")
      .close("}");
}

/// replace_pool POOL WHAT: stops at a pool same_pool found changed, naming what a replacement
/// destroys and the commands; deletes and recreates it when --replace names it.
void replace_function(ShellScript& sh) {
  Call del = pool_word_call("delete");
  del.flag("--quiet");
  sh.line();
  sh.comment("Node pool $1 differs from the spec in a field fixed when a pool is made (logged above): it is");
  sh.comment("replaced when --replace names it; otherwise up.sh stops with the commands that replace it. $2 says");
  sh.comment("what runs on its nodes, which a replacement deletes.");
  sh.open("replace_pool() {").line("local pool=$1");
  sh.open("case \" $REPLACE \" in").open("*\" $pool \"*)");
  sh.line("log \"replacing node pool $pool (--replace): its nodes are deleted, and with them $2\"");
  call(sh, del);
  sh.line("create_pool run \"$pool\"");
  sh.line("return 0").close(";;").close("esac");
  sh.line("log \"node pool $pool must be replaced: gcloud updates none of the fields above in place (a machine type or\"");
  sh.line("log \"disk only by recreating every node). Replacing it deletes its nodes, and with them $2.\"");
  sh.line("log \"to replace it, run up.sh --replace $pool, or these commands, then up.sh again:\"");
  call(sh, del, "show");
  sh.line("create_pool show \"$pool\"");
  sh.line("die \"stopped at node pool $pool: nothing after it was made or changed\"");
  sh.close("}");
}

/// pool_size, pool_labels and pool_taints: what gcloud updates on a pool in place.
void update_functions(ShellScript& sh) {
  Call autoscale = pool_word_call("update");
  autoscale.flag("--enable-autoscaling").flag("--min-nodes", ref("min")).flag("--max-nodes", ref("max"));
  Call total = pool_word_call("update");
  total.flag("--enable-autoscaling").flag("--total-min-nodes", ref("min")).flag("--total-max-nodes", ref("max"));
  Call fixed = pool_word_call("update");
  fixed.flag("--no-enable-autoscaling");
  Call resize = gcloud({"container", "clusters", "resize", ref("CLUSTER")});
  resize.flag("--node-pool", ref("pool")).flag("--num-nodes", ref("max"));
  at(resize).flag("--quiet");
  Call group = gcloud({"compute", "instance-groups", "managed", "describe", "\"${url##*/}\""});
  group.flag("--zone", ref("zone")).flag("--project", ref("PROJECT_ID")).opt("--format", "value(targetSize)");

  sh.line();
  sh.comment("Sizes node pool $1 (read into NOW) as the spec does: $2 fixed ($4 nodes a zone), autoscaled ($3 to");
  sh.comment("$4 nodes a zone) or total (autoscaled, $3 to $4 nodes in all, as flex-start pools are). A fixed");
  sh.comment("pool's size is its instance groups' target size, as Terraform reads it; initialNodeCount stays");
  sh.comment("what the pool was made with.");
  sh.open("pool_size() {")
      .line("local pool=$1 mode=$2 min=$3 max=$4 lo hi url zone n size=0 groups=0 urls=()")
      .open("if [ \"$mode\" != fixed ]; then")
      .open("if [ \"$mode\" = total ]; then")
      .line("lo=$(pool_field autoscaling.totalMinNodeCount) hi=$(pool_field autoscaling.totalMaxNodeCount)")
      .branch("else")
      .line("lo=$(pool_field autoscaling.minNodeCount) hi=$(pool_field autoscaling.maxNodeCount)")
      .close("fi")
      .line("if [ \"$(pool_field autoscaling.enabled)\" = True ] && [ \"${lo:-0}\" = \"$min\" ] && [ \"${hi:-0}\" = \"$max\" ]; then return 0; fi")
      .line("log \"node pool $pool: autoscaling ${lo:-0} to ${hi:-0} nodes; the spec $min to $max: updating it in place\"")
      .open("if [ \"$mode\" = total ]; then");
  call(sh, total);
  sh.branch("else");
  call(sh, autoscale);
  sh.close("fi").line("return 0").close("fi");
  sh.open("if [ \"$(pool_field autoscaling.enabled)\" = True ]; then")
      .line("log \"node pool $pool: autoscaled; the spec gives it $max node(s): autoscaling is turned off\"");
  call(sh, fixed);
  sh.close("fi");
  sh.line("IFS=';' read -r -a urls <<<\"$(pool_field instanceGroupUrls)\"");
  sh.open("for url in ${urls[@]+\"${urls[@]}\"}; do").line("zone=${url#*/zones/}").line("zone=${zone%%/*}");
  for (const auto& l : render(group, "n=$(", ") ||")) sh.line(l);
  sh.line("  die \"cannot read the size of node pool $pool's instance group $url\"")
      .line("case $n in '' | *[!0-9]*) die \"instance group $url of node pool $pool has no size: '$n'\" ;; esac")
      .line("size=$((size + n)) groups=$((groups + 1))")
      .close("done")
      .line("if [ \"$groups\" -gt 0 ]; then n=$((size / groups)); else n=0; fi")
      .line("if [ \"$n\" = \"$max\" ]; then return 0; fi")
      .line("log \"node pool $pool: $n node(s) a zone; the spec $max: resizing it\"");
  call(sh, resize);
  sh.close("}");

  Call labels = pool_word_call("update");
  labels.flag("--node-labels", ref("3"));
  sh.comment("Gives node pool $1 (read into NOW) the spec's node labels: $2 as gcloud lists them, $3 as");
  sh.comment("--node-labels takes them (which replaces the labels up.sh gave it).");
  sh.open("pool_labels() {").line("local pool=$1 have").line("have=$(pool_field config.labels)");
  sh.line("if [ \"$have\" = \"$2\" ]; then return 0; fi");
  sh.line("log \"node pool $pool: node labels ${have:-none}; the spec ${2:-none}: updating them in place\"");
  call(sh, labels);
  sh.close("}");

  Call taints = pool_word_call("update");
  taints.flag("--node-taints", ref("3"));
  sh.comment("Gives node pool $1 (read into NOW) the spec's taints: $2 as gcloud lists them (key=value:EFFECT,");
  sh.comment("sorted), $3 as --node-taints takes them. GKE's own taints (nvidia.com/gpu, google.com/tpu,");
  sh.comment("*.gke.io/*, cloud.google.com/*) are not the spec's, and --node-taints leaves them.");
  sh.open("pool_taints() {")
      .line("local pool=$1 i have keys values effects taints=()")
      .line("IFS=';' read -r -a keys <<<\"$(pool_field 'config.taints[].key')\"")
      .line("IFS=';' read -r -a values <<<\"$(pool_field 'config.taints[].value')\"")
      .line("IFS=';' read -r -a effects <<<\"$(pool_field 'config.taints[].effect')\"")
      .open("for i in \"${!keys[@]}\"; do")
      .line("case ${keys[$i]} in nvidia.com/gpu | google.com/tpu | *.gke.io/* | cloud.google.com/*) continue ;; esac")
      .line("taints+=(\"${keys[$i]}=${values[$i]:-}:${effects[$i]:-}\")")
      .close("done")
      .line("have=$(printf '%s\\n' ${taints[@]+\"${taints[@]}\"} | LC_ALL=C sort | paste -s -d ';' -)")
      .line("if [ \"$have\" = \"$2\" ]; then return 0; fi")
      .line("log \"node pool $pool: taints ${have:-none}; the spec ${2:-none}: updating them in place\"");
  call(sh, taints);
  sh.close("}");
}

/// The API's name of a taint effect (NO_SCHEDULE), from the Kubernetes one the spec and gcloud's
/// --node-taints take (NoSchedule).
std::string api_effect(const std::string& effect) {
  std::string out;
  for (char c : effect) {
    if (std::isupper(static_cast<unsigned char>(c)) && !out.empty()) out += '_';
    out += static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  }
  return out;
}

/// What runs on pool `p`'s nodes, which a replacement deletes: "every pod running on them (steps
/// 'a' and 'b')".
std::string on_pool(const System& sys, const Pool& p) {
  std::vector<std::string> steps, services;
  for (const auto& s : sys.steps)
    if (s.pool == p.name) steps.push_back(s.name);
  for (const auto& [name, s] : sys.services)
    if (s.pool == p.name) services.push_back(name);
  std::vector<std::string> parts;
  if (!steps.empty()) parts.push_back(fmt::format("step{} {}", steps.size() > 1 ? "s" : "", fmt::join(steps, ", ")));
  if (!services.empty())
    parts.push_back(fmt::format("service{} {}", services.size() > 1 ? "s" : "", fmt::join(services, ", ")));
  if (parts.empty()) return "every pod running on them";
  return fmt::format("every pod running on them (the spec places {} there)", fmt::join(parts, " and "));
}

/// check_cluster: the cluster's network (fixed) and release channel and Managed Prometheus (updated).
void cluster_function(ShellScript& sh) {
  Call describe = cluster_call("describe");
  describe.opt("--format", "value[separator=\"|\"](network,subnetwork,releaseChannel.channel,"
                           "monitoringConfig.managedPrometheusConfig.enabled)");
  Call channel = cluster_call("update");
  channel.flag("--release-channel", ref("4"));
  Call prometheus = cluster_call("update");
  prometheus.flag("--enable-managed-prometheus");
  sh.line();
  sh.comment("Compares the cluster that exists with the spec, before anything is made: its network $1 and");
  sh.comment("subnetwork $2 are fixed when it is made; its release channel ($3 as GKE names it, $4 as");
  sh.comment("--release-channel takes it; \"\" when the spec leaves it to GKE) and Managed Prometheus ($5 True");
  sh.comment("when the spec's services need it) are updated in place.");
  sh.open("check_cluster() {").line("local line network subnetwork channel prometheus");
  for (const auto& l : render(describe, "line=$(", ") ||")) sh.line(l);
  sh.line("  die \"cannot read cluster $CLUSTER\"");
  sh.line("IFS='|' read -r network subnetwork channel prometheus <<<\"$line\"");
  sh.open("if [ \"$network\" != \"$1\" ] || [ \"$subnetwork\" != \"$2\" ]; then")
      .line("log \"cluster $CLUSTER is on network $network, subnetwork $subnetwork; the spec puts it on $1, subnetwork $2\"")
      .line("log \"a cluster's network is fixed when it is made: moving it takes a new cluster, and deleting this one\"")
      .line("log \"deletes its node pools and everything running on them. To move it, run scripts/down.sh, then\"")
      .line("log \"scripts/up.sh and scripts/apply.sh; or keep the network in the spec\"")
      .line("die \"stopped at cluster $CLUSTER: nothing was made or changed\"")
      .close("fi");
  sh.open("if [ -n \"$3\" ] && [ \"$channel\" != \"$3\" ]; then")
      .line("log \"cluster $CLUSTER: release channel ${channel:-none}; the spec $3: updating it in place\"");
  call(sh, channel);
  sh.close("fi");
  sh.open("if [ \"$5\" = True ] && [ \"$prometheus\" != True ]; then")
      .line("log \"cluster $CLUSTER: Managed Prometheus is off; the spec's services need it: turning it on\"");
  call(sh, prometheus);
  sh.close("fi").close("}");
}

/// check_bucket: a bucket's location, fixed when it is made.
void bucket_function(ShellScript& sh) {
  Call describe = gcloud({"storage", "buckets", "describe", "\"$1\""});
  describe.opt("--format", "value(location)");
  const std::string copy = cmd::storage_rsync("gs://OLD", "gs://NEW").line();
  sh.line();
  sh.comment("Bucket $1 that exists is in location $2 (GCS names it in capitals), which is fixed when a bucket");
  sh.comment("is made.");
  sh.open("check_bucket() {").line("local have");
  for (const auto& l : render(describe, "have=$(", ") || die \"cannot read bucket $1\"")) sh.line(l);
  sh.line("if [ \"$(printf '%s' \"$have\" | tr '[:upper:]' '[:lower:]')\" = \"$(printf '%s' \"$2\" | tr '[:upper:]' '[:lower:]')\" ]; then return 0; fi");
  sh.line("log \"bucket $1 is in $have; the spec puts it in $2\"");
  sh.line(fmt::format("die {}", dq("a bucket's location is fixed when it is made, and up.sh moves no data: give the spec "
                                   "the bucket's location, or make a new bucket, copy the data (" + copy +
                                   ") and name the new bucket in the spec")));
  sh.close("}");
}

}  // namespace

void drift_functions(ShellScript& sh, const System& sys) {
  cluster_function(sh);
  if (!gcs_stores(sys, true).empty()) bucket_function(sh);
  if (sys.pools.empty()) return;
  show_function(sh);
  create_pool_function(sh, sys);
  compare_functions(sh);
  replace_function(sh);
  update_functions(sh);
  std::vector<std::string> names;
  for (const auto& [key, p] : sys.pools)
    for (const auto& name : p.node_pools()) names.push_back(name);
  std::vector<std::string> patterns;
  for (const auto& n : names) patterns.push_back(lit(n));
  sh.line();
  sh.comment("Every pool --replace names is one of the spec's, before anything is made.");
  sh.line("read -r -a replace <<<\"$REPLACE\"");
  sh.open("for pool in ${replace[@]+\"${replace[@]}\"}; do")
      .line(fmt::format("case $pool in {}) ;; *) die {} ;; esac", fmt::join(patterns, " | "),
                        dq("--replace ", Var{"pool"}, ": the spec has no node pool of that name (its node pools: " +
                                                          fmt::format("{}", fmt::join(names, ", ")) + ")")))
      .close("done");
}

void up_stale_pools(ShellScript& sh, const System& sys) {
  if (sys.pools.empty()) return;
  std::vector<std::string> patterns;
  for (const auto& [key, p] : sys.pools)
    for (const auto& name : p.node_pools()) patterns.push_back(lit(name));
  Call list = gcloud({"container", "node-pools", "list"});
  list.flag("--cluster", ref("CLUSTER"));
  at(list).opt("--format", "value(name)");
  Call del = pool_word_call("delete");
  del.flag("--quiet");
  sh.line();
  sh.comment("Node pools of the cluster the spec no longer has are left alone (their nodes may run work): each");
  sh.comment("is named, with the command that deletes it.");
  sh.open("if [ \"$DRY_RUN\" != 1 ]; then");
  for (const auto& l : render(list, "pools=$(", ") ||")) sh.line(l);
  sh.line("  die \"cannot list the node pools of cluster $CLUSTER\"");
  sh.open("for pool in $pools; do");
  sh.line(fmt::format("case $pool in {}) continue ;; esac", fmt::join(patterns, " | ")));
  sh.line("log \"warning: node pool $pool is not in the spec; it is left as it is, with its nodes. To delete it:\"");
  call(sh, del, "show");
  sh.close("done").close("fi");
}

void up_cluster_drift(ShellScript& sh, const System& sys) {
  const auto& net = sys.gcp->network;
  std::string channel = sys.cluster.release_channel, flag;
  for (char c : channel) flag += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  sh.line();
  sh.comment("The cluster, when it exists, against the spec (before anything is made).");
  open_if(sh, "! missing", cluster_call("describe"));
  sh.line(fmt::format("check_cluster {} {} {} {} {}", lit(net ? net->name : "default"), lit(net ? net->subnet : "default"),
                      lit(channel), lit(flag), sys.services.empty() ? "False" : "True"));
  sh.close("fi");
}

void up_pool_drift(ShellScript& sh, const System& sys, const Pool& p, const std::string& name) {
  const Pool::NodeRange r = p.node_range();
  const bool flex = p.provisioning == "flex-start" || p.provisioning == "queued";
  std::vector<std::pair<std::string, std::string>> fixed = {{"config.machineType", p.machine}};
  fixed.emplace_back("config.accelerators[0].acceleratorType", p.accelerator ? p.accelerator->type : "");
  fixed.emplace_back("config.accelerators[0].acceleratorCount", p.accelerator ? std::to_string(p.accelerator->count) : "");
  if (p.disk_gb > 0) fixed.emplace_back("config.diskSizeGb", std::to_string(p.disk_gb));
  fixed.emplace_back("config.spot", p.provisioning == "spot" ? "True" : "False");
  fixed.emplace_back("config.flexStart", flex ? "True" : "False");
  fixed.emplace_back("queuedProvisioning.enabled", p.provisioning == "queued" ? "True" : "False");
  if (p.provisioning == "reservation") {
    fixed.emplace_back("config.reservationAffinity.consumeReservationType", "SPECIFIC_RESERVATION");
    fixed.emplace_back("config.reservationAffinity.values", p.reservation);
  } else {
    fixed.emplace_back("config.reservationAffinity.consumeReservationType", "!SPECIFIC_RESERVATION");
  }
  const bool compact = p.tpu && p.tpu->hosts > 1;
  if (compact || !p.tpu) fixed.emplace_back("placementPolicy.type", compact ? "COMPACT" : "");
  fixed.emplace_back("placementPolicy.tpuTopology", p.tpu ? p.tpu->topology : "");

  Call same;
  same.word("same_pool").arg(name);
  for (const auto& [field, value] : fixed) same.flags.push_back(lit(field + "=" + value));

  std::vector<std::string> labels_api, labels_flag;
  for (const auto& [k, v] : p.labels) labels_api.push_back(k + "=" + v);
  std::vector<std::string> taints_api, taints_flag;
  for (const auto& t : p.taints) {
    taints_api.push_back(fmt::format("{}={}:{}", t.key, t.value, api_effect(t.effect)));
    taints_flag.push_back(fmt::format("{}={}:{}", t.key, t.value, t.effect));
  }
  std::sort(taints_api.begin(), taints_api.end());

  sh.branch("else");
  sh.comment("It exists: compared with the spec.");
  const auto lines = render(same, "if ", "; then");
  for (std::size_t i = 0; i + 1 < lines.size(); ++i) sh.line(lines[i]);
  sh.open(lines.back());
  const std::string mode = flex ? "total" : r.autoscaled ? "autoscaled" : "fixed";
  sh.line(fmt::format("pool_size {} {} {} {}", lit(name), mode, r.min, r.max));
  sh.line(fmt::format("pool_labels {} {} {}", lit(name), lit(fmt::format("{}", fmt::join(labels_api, ";"))),
                      lit(fmt::format("{}", fmt::join(labels_api, ",")))));
  sh.line(fmt::format("pool_taints {} {} {}", lit(name), lit(fmt::format("{}", fmt::join(taints_api, ";"))),
                      lit(fmt::format("{}", fmt::join(taints_flag, ",")))));
  sh.branch("else");
  sh.line(fmt::format("replace_pool {} {}", lit(name), lit(on_pool(sys, p))));
  sh.close("fi");
}

}  // namespace trainc::scripts
