#pragma once
// The gcloud scripts target, one file per script (emit_scripts_up.cpp, _down, _build, _apply,
// _health, _status); what they share is here and in emit_scripts.cpp: shell words, gcloud/kubectl calls,
// the spec's GCP objects, and the top every script starts with.
#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

#include "commands/command.h"
#include "emit/emitter.h"
#include "k8s/queue.h"
#include "quoting/shell.h"
#include "model/model.h"

namespace trainc::scripts {

/// Kueue's configuration (k8s/queue.h kueue_config_map), written when the system installs Kueue.
inline constexpr std::string_view kKueueConfigFile = k8s::kKueueConfigFile;

/// The pool GKE makes with every cluster; removed as Terraform's remove_default_node_pool does.
inline constexpr std::string_view kDefaultPool = "default-pool";

// ---- shell words ----------------------------------------------------------------------------

/// A variable reference inside a double-quoted word built by dq().
struct Var {
  std::string_view name;
};

std::string dq_part(std::string_view text);
std::string dq_part(Var v);

/// One double-quoted shell word mixing literal text and variables: dq("gs://", Var{"B"}).
template <class... Parts>
std::string dq(const Parts&... parts) {
  std::string out = "\"";
  ((out += dq_part(parts)), ...);
  return out += '"';
}
/// "$NAME" as one word.
std::string ref(std::string_view name);
std::string lit(std::string_view s);
std::string gs(const Store& s);

// ---- calls ----------------------------------------------------------------------------------

/// A gcloud or kubectl call as rendered shell words (commands/command.h): `words` stay on the first
/// line, and each of `flags` gets a line of its own when the whole call does not fit on one.
using Call = CommandLine;
/// Where the scripts' kubectl and helm commands act: the cluster's context ($KUBE_CONTEXT), with
/// files under $K8S_DIR.
KubeTarget kube_target();

Call gcloud(std::initializer_list<std::string> words);
/// Adds the flags naming the project, and the cluster's location when `located`.
Call& at(Call& c, bool located = true);
Call cluster_call(std::string_view verb);
Call pool_call(std::string_view verb, std::string_view pool);
Call kubectl(std::initializer_list<std::string> words);
Call network_call(std::string_view verb, const std::string& name);
Call subnet_call(std::string_view verb, const std::string& name);
Call repository_call(std::string_view verb, const Registry& r);

/// The call's lines: `before` + words on the first, `after` at the end of the last.
std::vector<std::string> render(const Call& c, std::string_view before, std::string_view after);
/// Writes `<via> <call><after>`; `via` is the run function (or a wrapper of it).
void call(ShellScript& sh, const Call& c, std::string_view via = "run", std::string_view after = "");
/// Opens `if <test> <call>; then`; close it with sh.close("fi").
void open_if(ShellScript& sh, std::string_view test, const Call& c);
void log_line(ShellScript& sh, std::string_view message);

// ---- the spec's GCP objects -----------------------------------------------------------------

std::vector<const Store*> gcs_stores(const System& sys, bool only_created = false);
/// A bucket in the gcp region follows a REGION override; any other location is kept as written.
bool in_region(const System& sys, const Store& s);
/// The spec's network, when trainc creates (and deletes) it.
const Network* own_network(const System& sys);
/// The spec's Artifact Registry repository, when trainc creates (and deletes) it.
const Registry* own_registry(const System& sys);
bool needs_region(const System& sys);
bool autoscaled_services(const System& sys);

Call bucket_binding(std::string_view verb, const Identity& id, const Store& s, const std::string& role);
Call bucket_call(std::string_view verb, const Store& s);
Call gsa_call(std::string_view verb, const Identity& id);
/// The identity's Google service account e-mail as one shell word ($GSA_EMAIL for the system's).
std::string gsa_email(const Identity& id);
/// The metrics adapter's read-only project role (roles/monitoring.viewer).
Call metrics_reader_binding(std::string_view verb);
/// The nodes' own service account (emit_scripts_up.cpp), and its project role.
Call node_account_call(std::string_view verb, const System& sys);
Call node_role_binding(std::string_view verb, const System& sys);
/// The nodes' read on one repository they pull from.
Call reader_binding(std::string_view verb, const System& sys, const PulledRepository& repo);
/// A VPC firewall rule.
Call firewall_call(std::string_view verb, const std::string& name);
/// Creates the GKE node pool `name`: the pool itself, or one slice of a multislice pool.
Call pool_create(const System& sys, const Pool& p, const std::string& name);

// ---- what every script shares ---------------------------------------------------------------

struct Option {
  std::string flag, var, help;  ///< var "" for -h/--help
  /// The name of the option's value ("POOL"); "" for a switch. A valued option may be given
  /// again: var holds its values, space-separated; unless `once`: then var holds the last.
  std::string value = {};
  bool once = false;
};

/// What a script needs defined at its top, besides the project and the cluster's location.
struct Needs {
  bool region = false, gsa = false, ns = false, kube = false, k8s_dir = false;
  bool cluster = true;  ///< the cluster's location and name (build.sh names neither)
  /// The script takes --kubeconfig FILE: KUBE_CONTEXT is set after the arguments are read
  /// (kubeconfig_context()), from that file's current context when it is given.
  bool kubeconfig = false;
};

/// After the arguments: with --kubeconfig FILE, kubectl and helm read FILE (KUBECONFIG, exported)
/// and KUBE_CONTEXT defaults to its current context; without, to get-credentials' context.
void kubeconfig_context(ShellScript& sh);

/// A script's name, its one-line summary and the help text under the synopsis.
struct About {
  std::string_view script, summary;
  std::vector<std::string> help;
};

/// The top of every script: header, variables, log/die, usage, arguments and the run function.
void prologue(ShellScript& sh, const System& sys, const About& about, std::vector<Option> opts, const Needs& needs);
/// exists/present/missing: whether a describe command finds its resource.
void check_functions(ShellScript& sh, bool with_missing);
/// PROJECT_NUMBER, which IAM members name; a dry run prints the placeholder instead.
void project_number(ShellScript& sh);
/// OUT_DIR (the output folder), SPEC and SPEC_DIR (the spec's folder): at the place the compile
/// recorded, relative to the output folder, never searched for, and checked to be a regular file
/// inside that root with the SHA-256 the compile recorded; `script` dies naming itself otherwise.
void find_spec_dir(ShellScript& sh, const System& sys, std::string_view script);
/// A path under the spec's folder ($SPEC_DIR, find_spec_dir) as one shell word.
std::string in_spec_dir(const std::string& path);

// ---- apply.sh's runs and pruning (emit_scripts_runs.cpp) ------------------------------------

/// SELECTOR, CURRENT (the output's objects), RUN_OF, HISTORY and AFTER (each step's run, the runs
/// kept, the steps that run again with it), KEPT; then --rerun's values checked (RERUN_STEPS).
void runs_variables(ShellScript& sh, const System& sys, const Planned& plan);
/// listed, drop, prune_runs, prune_rest, prune (--no-prune) and rerun_steps (--rerun).
void runs_functions(ShellScript& sh);

// ---- the scripts ----------------------------------------------------------------------------

std::string up_script(const System& sys, const Planned& plan);
/// up.sh's comparison of the cluster, buckets and node pools that exist with the spec
/// (emit_scripts_drift.cpp): the functions it calls, once, before anything is made.
void drift_functions(ShellScript& sh, const System& sys);
/// Names the cluster's node pools the spec does not have, with the command that deletes each.
void up_stale_pools(ShellScript& sh, const System& sys);
/// Compares the cluster, when it exists, with the spec (check_cluster), before anything is made.
void up_cluster_drift(ShellScript& sh, const System& sys);
/// For node pool `name` of pool `p` that exists: opens nothing, writes the `elif`/`else` branches
/// after `if missing <describe>; then <create>` that compare it with the spec, update what gcloud
/// changes in place and stop at (or, with --replace, carry out) a replacement.
void up_pool_drift(ShellScript& sh, const System& sys, const Pool& p, const std::string& name);
std::string down_script(const System& sys, const Planned& plan);
std::string apply_script(const System& sys, const Planned& plan);
std::string health_script(const System& sys);
std::string status_script(const System& sys);
/// scripts/build.sh, for a system with builds.
std::string build_script(const System& sys);
/// The runbook's section on building the images (build.sh, or CI); "" without builds.
std::string build_runbook_section(const System& sys);

}  // namespace trainc::scripts
