// gcloud scripts target: scripts/up.sh, down.sh, apply.sh, status.sh — the same resources as the
// Terraform, for users who do not use Terraform — and build.sh, which builds the system's images.
// Emitted only when the spec has `gcp:`. Each script is written by a file of its own
// (emit_scripts_up.cpp, _down, _build, _apply, _health, _status); this one holds what they share
// (emit_scripts.h) and the emitter.
//
// Every script parses --dry-run (and -h) first and sends every gcloud/kubectl action through one
// `run` function, which prints the command and runs it unless --dry-run. Existence checks
// (describe) are asked quietly and never in a dry run: there they assume the answer that prints
// the whole plan (up.sh: nothing exists yet; down.sh: everything does).
#include "emit/emit_scripts.h"

#include <algorithm>
#include <cctype>

#include <fmt/format.h>

#include "emit/emitter.h"
#include "io/tree_writer.h"
#include "base/yaml_writer.h"
#include "k8s/queue.h"
#include "model/catalog.h"

namespace trainc::scripts {
namespace {

constexpr std::size_t kMaxLine = 100;

}  // namespace

// ---- shell words ----------------------------------------------------------------------------

std::string dq_part(std::string_view text) {
  std::string out;
  for (char c : text) {
    if (c == '"' || c == '\\' || c == '$' || c == '`') out += '\\';
    out += c;
  }
  return out;
}
std::string dq_part(Var v) { return fmt::format("${{{}}}", v.name); }

/// "$NAME" as one word.
std::string ref(std::string_view name) { return fmt::format("\"${}\"", name); }
std::string lit(std::string_view s) { return sh_quote(s); }
std::string gs(const Store& s) { return lit("gs://" + s.bucket); }

// ---- calls ----------------------------------------------------------------------------------

Call gcloud(std::initializer_list<std::string> words) {
  Call c = cmd::gcloud({});
  for (const auto& w : words) c.word(w);
  return c;
}

/// Adds the flags naming the project, and the cluster's location when `located`.
Call& at(Call& c, bool located) {
  if (located) c.flag("--location", ref("LOCATION"));
  return c.flag("--project", ref("PROJECT_ID"));
}

Call cluster_call(std::string_view verb) {
  Call c = gcloud({"container", "clusters", std::string(verb), ref("CLUSTER")});
  return at(c);
}

Call pool_call(std::string_view verb, std::string_view pool) {
  Call c = gcloud({"container", "node-pools", std::string(verb), lit(pool)});
  c.flag("--cluster", ref("CLUSTER"));
  return at(c);
}

Call kubectl(std::initializer_list<std::string> words) {
  Call c = cmd::kubectl(kube_target(), {});
  for (const auto& w : words) c.word(w);
  return c;
}

/// The call's lines: `before` + words on the first, `after` at the end of the last.
std::vector<std::string> render(const Call& c, std::string_view before, std::string_view after) {
  return c.lines(before, after, kMaxLine);
}

KubeTarget kube_target() { return {ref("KUBE_CONTEXT"), "K8S_DIR", false}; }

/// Writes `<via> <call><after>`; `via` is the run function (or a wrapper of it).
void call(ShellScript& sh, const Call& c, std::string_view via, std::string_view after) {
  for (const auto& l : render(c, fmt::format("{} ", via), after)) sh.line(l);
}

/// Opens `if <test> <call>; then`; close it with sh.close("fi").
void open_if(ShellScript& sh, std::string_view test, const Call& c) {
  auto lines = render(c, fmt::format("if {} ", test), "; then");
  for (std::size_t i = 0; i + 1 < lines.size(); ++i) sh.line(lines[i]);
  sh.open(lines.back());
}

void log_line(ShellScript& sh, std::string_view message) { sh.line("log " + lit(message)); }

// ---- the spec's GCP objects -----------------------------------------------------------------

std::vector<const Store*> gcs_stores(const System& sys, bool only_created) {
  std::vector<const Store*> out;
  for (const auto& [name, s] : sys.stores)
    if (s.kind == Store::Kind::gcs && (s.create || !only_created)) out.push_back(&s);
  return out;
}

/// A bucket in the gcp region follows a REGION override; any other location is kept as written.
/// (GCS location names ignore case: US-CENTRAL1 is us-central1.)
bool in_region(const System& sys, const Store& s) {
  const std::string& r = sys.gcp->region;
  return s.location.empty() || std::equal(s.location.begin(), s.location.end(), r.begin(), r.end(), [](char a, char b) {
           return std::tolower(static_cast<unsigned char>(a)) == std::tolower(static_cast<unsigned char>(b));
         });
}

/// The spec's network, when trainc creates (and deletes) it.
const Network* own_network(const System& sys) {
  return sys.gcp->network && sys.gcp->network->create ? &*sys.gcp->network : nullptr;
}

/// The spec's Artifact Registry repository, when trainc creates (and deletes) it.
const Registry* own_registry(const System& sys) {
  return sys.gcp->registry && sys.gcp->registry->create ? &*sys.gcp->registry : nullptr;
}

bool needs_region(const System& sys) {
  if (sys.rdma_nics() > 0 || own_network(sys)) return true;  // subnets are regional
  for (const Store* s : gcs_stores(sys, true))
    if (in_region(sys, *s)) return true;
  return false;
}

std::string gsa_email(const Identity& id) {
  return id.of.empty() ? ref("GSA_EMAIL") : dq(id.gsa, "@", Var{"PROJECT_ID"}, ".iam.gserviceaccount.com");
}

Call bucket_binding(std::string_view verb, const Identity& id, const Store& s, const std::string& role) {
  Call c = gcloud({"storage", "buckets", std::string(verb), gs(s)});
  return c.flag("--member", id.of.empty() ? dq("serviceAccount:", Var{"GSA_EMAIL"})
                                          : dq("serviceAccount:" + id.gsa + "@", Var{"PROJECT_ID"},
                                               ".iam.gserviceaccount.com"))
      .flag("--role", lit(role));
}

Call bucket_call(std::string_view verb, const Store& s) { return gcloud({"storage", "buckets", std::string(verb), gs(s)}); }

Call gsa_call(std::string_view verb, const Identity& id) {
  Call c = gcloud({"iam", "service-accounts", std::string(verb), gsa_email(id)});
  return at(c, false);
}

Call network_call(std::string_view verb, const std::string& name) {
  Call c = gcloud({"compute", "networks", std::string(verb), lit(name)});
  return at(c, false);
}

Call subnet_call(std::string_view verb, const std::string& name) {
  Call c = gcloud({"compute", "networks", "subnets", std::string(verb), lit(name)});
  c.flag("--region", ref("REGION"));
  return at(c, false);
}


bool autoscaled_services(const System& sys) {
  return std::any_of(sys.services.begin(), sys.services.end(), [](const auto& s) { return s.second.autoscaled(); });
}

/// The Workload Identity principal of the metrics adapter's Kubernetes service account.
std::string adapter_principal() {
  const Manifest& m = catalog().metrics_adapter();
  return dq("principal://iam.googleapis.com/projects/", Var{"PROJECT_NUMBER"}, "/locations/global/workloadIdentityPools/",
            Var{"PROJECT_ID"}, fmt::format(".svc.id.goog/subject/ns/{}/sa/{}", m.ns, m.service_account));
}

Call metrics_reader_binding(std::string_view verb) {
  Call c = gcloud({"projects", std::string(verb), ref("PROJECT_ID")});
  return c.flag("--role", "roles/monitoring.viewer").flag("--member", adapter_principal()).flag("--condition", "None");
}

/// PROJECT_NUMBER, which IAM members name; a dry run prints the placeholder instead.
void project_number(ShellScript& sh) {
  sh.open("if [ \"$DRY_RUN\" = 1 ]; then PROJECT_NUMBER=PROJECT_NUMBER; else");
  sh.line(fmt::format("PROJECT_NUMBER=$({}) ||", cmd::project_number(ref("PROJECT_ID")).line()));
  sh.line("  die \"cannot read the number of project $PROJECT_ID\"");
  sh.close("fi");
}

Call repository_call(std::string_view verb, const Registry& r) {
  Call c = gcloud({"artifacts", "repositories", std::string(verb), lit(r.repository)});
  c.flag("--location", lit(r.location));  // never $REGION: the manifests name images by this location's host
  return at(c, false);
}


// ---- what every script shares ---------------------------------------------------------------

namespace {

/// NAME="${NAME:-value}": the spec's value unless the environment sets one.
std::string env_default(std::string_view name, std::string_view value) {
  return fmt::format("{0}=\"${{{0}:-{1}}}\"", name, dq_part(value));
}

void variables(ShellScript& sh, const System& sys, const Needs& n) {
  const Gcp& g = *sys.gcp;
  const bool zonal = !g.zone.empty();
  std::vector<std::string> names;
  auto define = [&](std::string_view name, const std::string& line) {
    sh.line(line);
    names.emplace_back(name);
  };
  sh.comment(n.cluster ? "The spec's project and location; PROJECT_ID, REGION and ZONE in the environment win."
                       : "The spec's project and region; PROJECT_ID and REGION in the environment win.");
  define("PROJECT_ID", env_default("PROJECT_ID", g.project));
  if (!zonal || n.region) define("REGION", env_default("REGION", g.region));
  if (n.cluster) {
    if (zonal) define("ZONE", env_default("ZONE", g.zone));
    define("LOCATION", fmt::format("LOCATION={}  # a {} cluster", ref(zonal ? "ZONE" : "REGION"), zonal ? "zonal" : "regional"));
    define("CLUSTER", fmt::format("CLUSTER={}", lit(sys.cluster.name)));
  }
  if (n.gsa && sys.identity)
    define("GSA_EMAIL", fmt::format("GSA_EMAIL={}", dq(sys.identity->gsa, "@", Var{"PROJECT_ID"}, ".iam.gserviceaccount.com")));
  if (n.ns) define("NAMESPACE", fmt::format("NAMESPACE={}", lit(sys.ns)));
  if (n.kube && n.kubeconfig) {
    sh.comment("The kubectl context: KUBE_CONTEXT in the environment, else the current context of");
    sh.comment("--kubeconfig's file, else the one `gcloud container clusters get-credentials` writes.");
    sh.line("KUBE_CONTEXT=\"${KUBE_CONTEXT:-}\"");
  } else if (n.kube) {
    sh.comment("The context `gcloud container clusters get-credentials` writes for this cluster.");
    define("KUBE_CONTEXT", "KUBE_CONTEXT=\"${KUBE_CONTEXT:-gke_${PROJECT_ID}_${LOCATION}_${CLUSTER}}\"");
  }
  if (n.k8s_dir) define("K8S_DIR", "K8S_DIR=\"$(dirname \"$0\")/../k8s\"");
  sh.line(fmt::format("readonly {}", fmt::join(names, " ")));
  sh.line();
}

}  // namespace

void find_spec_dir(ShellScript& sh, const System& sys, std::string_view script) {
  const Origin& o = sys.origin;
  const std::string root = o.root_from(sys.name);
  const std::string at = "${ROOT%/}/$SPEC";
  sh.line();
  sh.comment("The spec's folder, which files beside the spec are named from. Where the spec lies (from a");
  sh.comment("folder above this output folder) and its SHA-256 were recorded when it was compiled: nothing");
  sh.comment("is searched for, so no other file (one planted under the output folder, say) stands in for it,");
  sh.comment("and a spec changed since is refused.");
  sh.open("spec_sha256() {")
      .line(R"sh(if command -v sha256sum >/dev/null; then sha256sum <"$1"; else shasum -a 256 <"$1"; fi | cut -d ' ' -f 1)sh")
      .close("}");
  sh.line(R"sh(OUT_DIR=$(cd -P "$(dirname "$0")/.." && pwd) || die 'cannot enter the output folder')sh");
  sh.line(fmt::format("ROOT=$(cd -P {} && pwd) || die {}", dq(Var{"OUT_DIR"}, "/" + root),
                      lit(fmt::format("cannot enter {}, the folder the spec's path is recorded from", root))));
  sh.line("SPEC=" + lit(o.spec));
  sh.line("SPEC_SHA256=" + lit(o.spec_sha256));
  sh.open(fmt::format(R"sh(if [ ! -f "{0}" ] || [ -L "{0}" ]; then)sh", at))
      .line(fmt::format(R"sh(die "no spec at {}, where it was compiled from (a file, not a symbolic link): {} reads files )sh"
                        R"sh(beside it; run it from a checkout holding both, or compile the spec again")sh",
                        at, script))
      .close("fi");
  sh.line(fmt::format(R"sh(SPEC_DIR=$(cd -P "$(dirname "{}")" && pwd) || die "cannot enter the folder of $SPEC")sh", at));
  sh.open(R"sh(case "$SPEC_DIR/" in)sh")
      .line(R"sh("${ROOT%/}/"*) ;;)sh")
      .line(R"sh(*) die "the folder of $SPEC leads out of $ROOT through a symbolic link, to $SPEC_DIR" ;;)sh")
      .close("esac");
  sh.open(fmt::format(R"sh(if [ "$(spec_sha256 "{}")" != "$SPEC_SHA256" ]; then)sh", at))
      .line(fmt::format(R"sh(die "{} is not the spec this folder was compiled from (its SHA-256 differs): compile it )sh"
                        R"sh(again, review the output's changes, then run {}")sh",
                        at, script))
      .close("fi");
  sh.line("readonly OUT_DIR ROOT SPEC SPEC_SHA256 SPEC_DIR");
}

std::string in_spec_dir(const std::string& path) {
  return path == "." ? ref("SPEC_DIR") : dq(Var{"SPEC_DIR"}, "/", path);
}

namespace {

void usage(ShellScript& sh, std::string_view script, const std::vector<std::string>& about,
           const std::vector<Option>& opts, const Needs& needs) {
  std::vector<std::string> text;
  std::string synopsis = fmt::format("usage: {}", script);
  for (const auto& o : opts) synopsis += fmt::format(" [{}]", o.value.empty() ? o.flag : o.flag + " " + o.value);
  text.push_back(synopsis);
  text.insert(text.end(), about.begin(), about.end());
  text.emplace_back("");
  for (const auto& o : opts)
    text.push_back(fmt::format("  {:<14} {}", o.value.empty() ? o.flag : o.flag + " " + o.value, o.help));
  text.emplace_back(needs.cluster ? "environment: PROJECT_ID, REGION, ZONE override the spec's project and location"
                                  : "environment: PROJECT_ID and REGION override the spec's project and region");
  if (needs.kube && needs.kubeconfig)
    text.emplace_back("  and KUBE_CONTEXT the kubectl context (default: --kubeconfig's current, or get-credentials')");
  else if (needs.kube)
    text.emplace_back("  and KUBE_CONTEXT the kubectl context (default: the one get-credentials writes)");
  sh.open("usage() {").line("printf '%s\\n' \\");
  for (std::size_t i = 0; i < text.size(); ++i) sh.line("  " + lit(text[i]) + (i + 1 == text.size() ? "" : " \\"));
  sh.close("}");
}

void parse_args(ShellScript& sh, const std::vector<Option>& opts) {
  std::string vars;
  for (const auto& o : opts) {
    if (o.var.empty()) continue;
    sh.line(o.var + (o.value.empty() ? "=0" : "=''"));
    vars += " " + o.var;
  }
  sh.open("while [ \"$#\" -gt 0 ]; do").open("case \"$1\" in");
  for (const auto& o : opts) {
    if (o.var.empty()) sh.line(fmt::format("{}) usage; exit 0 ;;", o.flag));
    else if (o.value.empty()) sh.line(fmt::format("{}) {}=1 ;;", o.flag, o.var));
    else
      sh.open(fmt::format("{})", o.flag))
          .line(fmt::format("if [ \"$#\" -lt 2 ]; then usage >&2; log 'error: {} needs a {}'; exit 2; fi", o.flag, o.value))
          .line(o.once ? fmt::format("{}=$2", o.var) : fmt::format("{}+=\" $2\"", o.var))
          .line("shift")
          .close(";;");
  }
  sh.line("*) usage >&2; log \"error: unknown argument '$1'\"; exit 2 ;;");
  sh.close("esac").line("shift").close("done");
  sh.line("readonly" + vars);
  sh.line();
}

void run_function(ShellScript& sh) {
  sh.comment("Every gcloud and kubectl action goes through here: printed (quoted where the shell");
  sh.comment("needs it), then run unless --dry-run.");
  sh.open("run() {")
      .line("local word line=+")
      .open("for word in \"$@\"; do")
      .line("if [[ $word =~ ^[A-Za-z0-9_./:=@%+,-]+$ ]]; then line+=\" $word\"; else line+=\" $(printf '%q' \"$word\")\"; fi")
      .close("done")
      .line("printf '%s\\n' \"$line\" >&2")
      .line("if [ \"$DRY_RUN\" = 1 ]; then return 0; fi")
      .line("\"$@\"")
      .close("}");
}
}  // namespace

/// The top of every script: header, variables, log/die, usage, arguments and the run function.
void prologue(ShellScript& sh, const System& sys, const About& about, std::vector<Option> opts, const Needs& needs) {
  sh.line("#!/usr/bin/env bash");
  sh.comment(kGeneratedNotice);
  sh.comment(fmt::format("{}: {} of system '{}'.", about.script, about.summary, sys.name));
  sh.line("set -euo pipefail");
  sh.line();
  variables(sh, sys, needs);
  sh.open("log() {").line(fmt::format("printf '{}: %s\\n' \"$*\" >&2", about.script)).close("}");
  sh.open("die() {").line("log \"error: $*\"").line("exit 1").close("}");
  opts.push_back({"--dry-run", "DRY_RUN", "print the commands that would change anything, without running them"});
  opts.push_back({"-h|--help", "", "show this help"});
  usage(sh, about.script, about.help, opts, needs);
  sh.line();
  parse_args(sh, opts);
  run_function(sh);
}

void kubeconfig_context(ShellScript& sh) {
  sh.open("if [ -n \"$KUBECONFIG_FILE\" ]; then")
      .line("[ -f \"$KUBECONFIG_FILE\" ] || die \"--kubeconfig $KUBECONFIG_FILE: no such file\"")
      .line("export KUBECONFIG=\"$KUBECONFIG_FILE\"")
      .open("if [ -z \"$KUBE_CONTEXT\" ]; then")
      .line("KUBE_CONTEXT=$(" + cmd::kubectl(KubeTarget{}, {"config", "current-context"}).line() +
            ") || die \"--kubeconfig $KUBECONFIG_FILE names no current context: set KUBE_CONTEXT\"")
      .close("fi")
      .line("log \"--kubeconfig: context $KUBE_CONTEXT of $KUBECONFIG_FILE; gcloud is not asked for credentials, and images are not looked for in Artifact Registry\"")
      .branch("else")
      .line("KUBE_CONTEXT=\"${KUBE_CONTEXT:-gke_${PROJECT_ID}_${LOCATION}_${CLUSTER}}\"")
      .close("fi");
  sh.line("readonly KUBE_CONTEXT");
}

/// exists/present/missing: whether a describe command finds its resource.
void check_functions(ShellScript& sh, bool with_missing) {
  sh.line();
  sh.comment("Whether a describe command finds its resource (asked quietly); an error other than");
  sh.comment("\"not found\" (no login, no permission) stops the script.");
  sh.open("exists() {")
      .line("local err")
      .line("if err=$(\"$@\" 2>&1 >/dev/null); then return 0; fi")
      .line("case \"$err\" in *NOT_FOUND* | *[Nn]ot\\ found*) return 1 ;; esac")
      .line("die \"$* failed: $err\"")
      .close("}");
  sh.comment("A dry run asks nothing and assumes the answer that shows the whole plan.");
  sh.open("present() {").line("if [ \"$DRY_RUN\" = 1 ]; then return 0; fi").line("exists \"$@\"").close("}");
  if (with_missing)
    sh.open("missing() {").line("if [ \"$DRY_RUN\" = 1 ]; then return 0; fi").line("! exists \"$@\"").close("}");
}
class ScriptsEmitter final : public Emitter {
 public:
  std::string_view name() const override { return "scripts"; }
  void emit(const System& sys, const Planned& plan, OutputSink& out) const override {
    if (!sys.gcp) return;
    out.add("scripts/up.sh", up_script(sys, plan));
    out.add("scripts/down.sh", down_script(sys, plan));
    if (!sys.builds.empty()) out.add("scripts/build.sh", build_script(sys));
    out.add("scripts/apply.sh", apply_script(sys, plan));
    // Kueue's configuration, which apply.sh applies over the release manifest's (k8s/queue.h):
    // beside k8s/, whose kustomization would move it into the system's namespace and whose
    // teardown would delete it.
    if (plan.needs_kueue)
      out.add(std::string(kKueueConfigFile),
              to_yaml(k8s::kueue_config_map(sys),
                      fmt::format("{}\nKueue's configuration, applied by scripts/apply.sh over the pinned release's\n"
                                  "(system '{}'; Kueue's configuration is the whole cluster's)",
                                  kGeneratedNotice, sys.name)));
    out.add("scripts/status.sh", status_script(sys));
    if (!sys.services.empty()) out.add("scripts/health.sh", health_script(sys));
  }
};

}  // namespace trainc::scripts

namespace trainc {

std::unique_ptr<Emitter> new_scripts_emitter() { return std::make_unique<scripts::ScriptsEmitter>(); }

}  // namespace trainc
