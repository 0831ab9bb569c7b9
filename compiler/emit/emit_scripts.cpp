// gcloud scripts target: scripts/up.sh, down.sh, apply.sh, status.sh — the same resources as the
// Terraform, for users who do not use Terraform. Emitted only when the spec has `gcp:`.
//
// Every script parses --dry-run (and -h) first and sends every gcloud/kubectl action through one
// `run` function, which prints the command and runs it unless --dry-run. Existence checks
// (describe) are asked quietly and never in a dry run: there they assume the answer that prints
// the whole plan (up.sh: nothing exists yet; down.sh: everything does).
#include <algorithm>
#include <cctype>
#include <set>

#include <fmt/format.h>

#include "emit/emitter.h"
#include "emit/k8s_names.h"
#include "base/overloaded.h"
#include "emit/shell.h"
#include "inspect/plan.h"
#include "model/catalog.h"

namespace trainc {
namespace {

constexpr std::size_t kMaxLine = 100;
/// The pool GKE makes with every cluster; removed as Terraform's remove_default_node_pool does.
constexpr std::string_view kDefaultPool = "default-pool";

// ---- shell words ----------------------------------------------------------------------------

/// A variable reference inside a double-quoted word built by dq().
struct Var {
  std::string_view name;
};

std::string dq_part(std::string_view text) {
  std::string out;
  for (char c : text) {
    if (c == '"' || c == '\\' || c == '$' || c == '`') out += '\\';
    out += c;
  }
  return out;
}
std::string dq_part(Var v) { return fmt::format("${{{}}}", v.name); }

/// One double-quoted shell word mixing literal text and variables: dq("gs://", Var{"B"}).
template <class... Parts>
std::string dq(const Parts&... parts) {
  std::string out = "\"";
  ((out += dq_part(parts)), ...);
  return out += '"';
}
/// "$NAME" as one word.
std::string ref(std::string_view name) { return fmt::format("\"${}\"", name); }
std::string lit(std::string_view s) { return sh_quote(s); }
std::string gs(const Store& s) { return lit("gs://" + s.bucket); }

// ---- calls ----------------------------------------------------------------------------------

/// A gcloud or kubectl call as rendered shell words: `words` stay on the first line, and each of
/// `flags` gets a line of its own when the whole call does not fit on one.
struct Call {
  std::vector<std::string> words, flags;
  Call& flag(std::string_view name, const std::string& rendered) {
    flags.push_back(fmt::format("{}={}", name, rendered));
    return *this;
  }
  Call& flag(std::string_view name) {
    flags.emplace_back(name);
    return *this;
  }
};

Call gcloud(std::initializer_list<std::string> words) {
  Call c;
  c.words.emplace_back("gcloud");
  c.words.insert(c.words.end(), words);
  return c;
}

/// Adds the flags naming the project, and the cluster's location when `located`.
Call& at(Call& c, bool located = true) {
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
  Call c;
  c.words = {"kubectl", "--context", ref("KUBE_CONTEXT")};
  c.words.insert(c.words.end(), words);
  return c;
}

/// The call's lines: `before` + words on the first, `after` at the end of the last.
std::vector<std::string> render(const Call& c, std::string_view before, std::string_view after) {
  std::string head = std::string(before) + fmt::format("{}", fmt::join(c.words, " "));
  std::string one = head;
  for (const auto& f : c.flags) one += " " + f;
  if (c.flags.empty() || one.size() + after.size() <= kMaxLine) return {one + std::string(after)};
  std::vector<std::string> lines{head + " \\"};
  for (std::size_t i = 0; i < c.flags.size(); ++i)
    lines.push_back("    " + c.flags[i] + (i + 1 == c.flags.size() ? std::string(after) : " \\"));
  return lines;
}

/// Writes `<via> <call><after>`; `via` is the run function (or a wrapper of it).
void call(ShellScript& sh, const Call& c, std::string_view via = "run", std::string_view after = "") {
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

std::vector<const Store*> gcs_stores(const System& sys, bool only_created = false) {
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

/// The identity's Google service account email as one shell word: $GSA_EMAIL for the system's.
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



// ---- what every script shares ---------------------------------------------------------------

struct Option {
  std::string flag, var, help;  ///< var "" for -h/--help
};

/// What a script needs defined at its top, besides the project and the cluster's location.
struct Needs {
  bool region = false, gsa = false, ns = false, kube = false, k8s_dir = false;
};

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
  sh.comment("The spec's project and location; PROJECT_ID, REGION and ZONE in the environment win.");
  define("PROJECT_ID", env_default("PROJECT_ID", g.project));
  if (!zonal || n.region) define("REGION", env_default("REGION", g.region));
  if (zonal) define("ZONE", env_default("ZONE", g.zone));
  define("LOCATION", fmt::format("LOCATION={}  # a {} cluster", ref(zonal ? "ZONE" : "REGION"), zonal ? "zonal" : "regional"));
  define("CLUSTER", fmt::format("CLUSTER={}", lit(sys.cluster.name)));
  if (n.gsa && sys.identity)
    define("GSA_EMAIL", fmt::format("GSA_EMAIL={}", dq(sys.identity->gsa, "@", Var{"PROJECT_ID"}, ".iam.gserviceaccount.com")));
  if (n.ns) define("NAMESPACE", fmt::format("NAMESPACE={}", lit(sys.ns)));
  if (n.kube) {
    sh.comment("The context `gcloud container clusters get-credentials` writes for this cluster.");
    define("KUBE_CONTEXT", "KUBE_CONTEXT=\"${KUBE_CONTEXT:-gke_${PROJECT_ID}_${LOCATION}_${CLUSTER}}\"");
  }
  if (n.k8s_dir) define("K8S_DIR", "K8S_DIR=\"$(dirname \"$0\")/../k8s\"");
  sh.line(fmt::format("readonly {}", fmt::join(names, " ")));
  sh.line();
}

void usage(ShellScript& sh, std::string_view script, const std::vector<std::string>& about,
           const std::vector<Option>& opts, bool kube) {
  std::vector<std::string> text;
  std::string synopsis = fmt::format("usage: {}", script);
  for (const auto& o : opts) synopsis += fmt::format(" [{}]", o.flag);
  text.push_back(synopsis);
  text.insert(text.end(), about.begin(), about.end());
  text.emplace_back("");
  for (const auto& o : opts) text.push_back(fmt::format("  {:<14} {}", o.flag, o.help));
  text.emplace_back("environment: PROJECT_ID, REGION, ZONE override the spec's project and location");
  if (kube) text.emplace_back("  and KUBE_CONTEXT the kubectl context (default: the one get-credentials writes)");
  sh.open("usage() {").line("printf '%s\\n' \\");
  for (std::size_t i = 0; i < text.size(); ++i) sh.line("  " + lit(text[i]) + (i + 1 == text.size() ? "" : " \\"));
  sh.close("}");
}

void parse_args(ShellScript& sh, const std::vector<Option>& opts) {
  std::string vars;
  for (const auto& o : opts) {
    if (o.var.empty()) continue;
    sh.line(o.var + "=0");
    vars += " " + o.var;
  }
  sh.open("while [ \"$#\" -gt 0 ]; do").open("case \"$1\" in");
  for (const auto& o : opts) {
    if (o.var.empty()) sh.line(fmt::format("{}) usage; exit 0 ;;", o.flag));
    else sh.line(fmt::format("{}) {}=1 ;;", o.flag, o.var));
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

/// A script's name, its one-line summary and the help text under the synopsis.
struct About {
  std::string_view script, summary;
  std::vector<std::string> help;
};

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
  opts.push_back({"--dry-run", "DRY_RUN", "print the commands without running any"});
  opts.push_back({"-h|--help", "", "show this help"});
  usage(sh, about.script, about.help, opts, needs.kube);
  sh.line();
  parse_args(sh, opts);
  run_function(sh);
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

// ---- up.sh ----------------------------------------------------------------------------------

std::string release_channel(const Cluster& c) {
  std::string out = c.release_channel;  // gcloud spells RAPID as rapid
  for (char& ch : out) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  return out;
}

void up_cluster(ShellScript& sh, const System& sys) {
  sh.comment("The cluster, with Workload Identity and the GCS FUSE CSI driver.");
  open_if(sh, "missing", cluster_call("describe"));
  Call c = cluster_call("create");
  c.flag("--workload-pool", dq(Var{"PROJECT_ID"}, ".svc.id.goog")).flag("--addons", "GcsFuseCsiDriver");
  if (!sys.cluster.release_channel.empty()) c.flag("--release-channel", lit(release_channel(sys.cluster)));
  if (!sys.services.empty())  // collects the services' metrics through their PodMonitoring objects
    c.flag("--enable-managed-prometheus");
  if (const auto& net = sys.gcp->network)  // VPC-native: pods and Services get the subnet's secondary ranges
    c.flag("--network", lit(net->name)).flag("--subnetwork", lit(net->subnet));
  if (sys.gcp->network || sys.rdma_nics() > 0) c.flag("--enable-ip-alias");
  if (const auto& net = sys.gcp->network)
    c.flag("--cluster-secondary-range-name", lit(net->pods_range()))
        .flag("--services-secondary-range-name", lit(net->services_range()));
  if (sys.rdma_nics() > 0)  // RDMA pods attach extra NICs: multi-networking needs Dataplane V2
    c.flag("--enable-dataplane-v2").flag("--enable-multi-networking");
  call(sh, c.flag("--num-nodes", "1"));
  const bool named_in_spec = std::any_of(sys.pools.begin(), sys.pools.end(), [](const auto& p) {
    const auto names = p.second.node_pools();
    return std::find(names.begin(), names.end(), kDefaultPool) != names.end();
  });
  if (named_in_spec) {  // only a fresh default pool is GKE's; an older one is the spec's
    sh.comment("GKE's own default pool goes at once: the spec's pool of that name replaces it.");
    call(sh, pool_call("delete", kDefaultPool).flag("--quiet"));
  }
  sh.close("fi");
  if (named_in_spec) return;
  sh.comment("GKE makes a default pool with every cluster. As Terraform's remove_default_node_pool,");
  sh.comment("it goes before the spec's pools are made, so only they carry workloads.");
  open_if(sh, "present", pool_call("describe", kDefaultPool));
  call(sh, pool_call("delete", kDefaultPool).flag("--quiet"));
  sh.close("fi");
}

void pool_size(Call& c, const Pool& p) {
  const Pool::NodeRange r = p.node_range();
  if (p.provisioning == "flex-start") {
    // Flex-start VMs come only through the autoscaler, from zero, and never from a reservation.
    c.flag("--flex-start").flag("--enable-autoscaling").flag("--num-nodes", "0");
    c.flag("--total-min-nodes", "0").flag("--total-max-nodes", std::to_string(r.max));
    c.flag("--location-policy", "ANY").flag("--reservation-affinity", "none").flag("--no-enable-autorepair");
    return;
  }
  c.flag("--num-nodes", std::to_string(r.autoscaled ? r.min : r.max));
  if (r.autoscaled) {
    c.flag("--enable-autoscaling").flag("--min-nodes", std::to_string(r.min));
    c.flag("--max-nodes", std::to_string(r.max));
  }
  if (p.provisioning == "spot") c.flag("--spot");
  if (p.provisioning == "reservation")
    c.flag("--reservation-affinity", "specific").flag("--reservation", lit(p.reservation));
}

std::string joined_labels(const StringMap& labels) {
  std::vector<std::string> kv;
  for (const auto& [k, v] : labels) kv.push_back(k + "=" + v);
  return fmt::format("{}", fmt::join(kv, ","));
}

std::string joined_taints(const std::vector<Taint>& taints) {
  std::vector<std::string> out;
  for (const auto& t : taints) out.push_back(fmt::format("{}={}:{}", t.key, t.value, t.effect));
  return fmt::format("{}", fmt::join(out, ","));
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

/// The cluster's VPC network and its subnet with the pods' and Services' secondary ranges.
void up_network(ShellScript& sh, const Network& n) {
  sh.line();
  sh.comment("The cluster's VPC network, and its subnet with secondary ranges for pods and Services.");
  open_if(sh, "missing", network_call("describe", n.name));
  call(sh, network_call("create", n.name).flag("--subnet-mode", "custom"));
  sh.close("fi");
  open_if(sh, "missing", subnet_call("describe", n.subnet));
  Call sub = subnet_call("create", n.subnet);
  sub.flag("--network", lit(n.name)).flag("--range", lit(n.cidr));
  sub.flag("--secondary-range", lit(fmt::format("{}={},{}={}", n.pods_range(), n.pods, n.services_range(), n.services)));
  call(sh, sub);
  sh.close("fi");
}

void down_network(ShellScript& sh, const Network& n) {
  sh.line();
  sh.comment("The cluster's subnet and VPC network, once the cluster is gone.");
  open_if(sh, "present", subnet_call("describe", n.subnet));
  call(sh, subnet_call("delete", n.subnet).flag("--quiet"));
  sh.close("fi");
  open_if(sh, "present", network_call("describe", n.name));
  call(sh, network_call("delete", n.name).flag("--quiet"));
  sh.close("fi");
}

/// The RDMA VPC with the zone's RDMA network profile, and one subnet per RDMA NIC.
void up_rdma_network(ShellScript& sh, const System& sys) {
  const RdmaLayout& r = catalog().rdma();
  sh.line();
  sh.comment("The GPUDirect RDMA network: a VPC with the zone's RDMA profile, one subnet per RDMA NIC.");
  open_if(sh, "missing", network_call("describe", k8s::rdma_vpc(sys)));
  Call net = network_call("create", k8s::rdma_vpc(sys));
  net.flag("--network-profile", dq(Var{"ZONE"}, "-" + r.network_profile)).flag("--subnet-mode", "custom");
  net.flag("--mtu", std::to_string(r.mtu));
  call(sh, net);
  sh.close("fi");
  for (int nic = 0; nic < sys.rdma_nics(); ++nic) {
    open_if(sh, "missing", subnet_call("describe", k8s::rdma_subnet(sys, nic)));
    Call sub = subnet_call("create", k8s::rdma_subnet(sys, nic));
    sub.flag("--network", lit(k8s::rdma_vpc(sys))).flag("--range", lit(r.subnet_cidr(nic)));
    call(sh, sub);
    sh.close("fi");
  }
}

void down_rdma_network(ShellScript& sh, const System& sys) {
  sh.line();
  sh.comment("The GPUDirect RDMA network, once no node uses it.");
  for (int nic = sys.rdma_nics() - 1; nic >= 0; --nic) {
    open_if(sh, "present", subnet_call("describe", k8s::rdma_subnet(sys, nic)));
    call(sh, subnet_call("delete", k8s::rdma_subnet(sys, nic)).flag("--quiet"));
    sh.close("fi");
  }
  open_if(sh, "present", network_call("describe", k8s::rdma_vpc(sys)));
  call(sh, network_call("delete", k8s::rdma_vpc(sys)).flag("--quiet"));
  sh.close("fi");
}

/// Creates the GKE node pool `name`: the pool itself, or one slice of a multislice pool.
Call pool_create(const System& sys, const Pool& p, const std::string& name) {
  Call c = pool_call("create", name);
  c.flag("--machine-type", lit(p.machine));
  if (p.accelerator)
    c.flag("--accelerator",
           lit(fmt::format("type={},count={},gpu-driver-version=latest", p.accelerator->type, p.accelerator->count)));
  if (p.tpu) {
    c.flag("--tpu-topology", lit(p.tpu->topology));
    if (p.tpu->hosts > 1) c.flag("--placement-type", "COMPACT");  // a multi-host slice's VMs sit together
  }
  pool_size(c, p);
  if (p.disk_gb > 0) c.flag("--disk-size", std::to_string(p.disk_gb));
  if (!p.labels.empty()) c.flag("--node-labels", lit(joined_labels(p.labels)));
  if (!p.taints.empty()) c.flag("--node-taints", lit(joined_taints(p.taints)));
  if (p.rdma) {
    c.flag("--enable-gvnic");
    for (int nic = 0; nic < (p.accelerator ? p.accelerator->count : 0); ++nic)
      c.flag("--additional-node-network",
             lit(fmt::format("network={},subnetwork={}", k8s::rdma_vpc(sys), k8s::rdma_subnet(sys, nic))));
  }
  return c.flag("--workload-metadata", "GKE_METADATA");
}

void up_pool(ShellScript& sh, const System& sys, const Pool& p) {
  sh.line();
  const auto names = p.node_pools();
  if (names.size() == 1)
    sh.comment(fmt::format("Node pool '{}'.", p.name));
  else
    sh.comment(fmt::format("Pool '{}': {} node pools, one {} TPU slice each, for multislice jobs.", p.name,
                           names.size(), p.tpu->topology));
  for (const auto& name : names) {
    open_if(sh, "missing", pool_call("describe", name));
    call(sh, pool_create(sys, p, name));
    sh.close("fi");
  }
}

void up_bucket(ShellScript& sh, const System& sys, const Store& s) {
  sh.line();
  sh.comment(fmt::format("The bucket of store '{}'.", s.name));
  open_if(sh, "missing", bucket_call("describe", s));
  Call c = bucket_call("create", s);
  c.flag("--project", ref("PROJECT_ID")).flag("--location", in_region(sys, s) ? ref("REGION") : lit(s.location));
  call(sh, c.flag("--uniform-bucket-level-access").flag("--public-access-prevention"));
  sh.close("fi");
  if (s.versioning) call(sh, bucket_call("update", s).flag("--versioning"));
}

void up_identity(ShellScript& sh, const System& sys, const Identity& id) {
  sh.line();
  sh.comment(id.of.empty() ? "The workload's Google service account."
                           : fmt::format("Service '{}''s own Google service account.", id.of));
  open_if(sh, "missing", gsa_call("describe", id));
  Call c = gcloud({"iam", "service-accounts", "create", lit(id.gsa)});
  at(c, false).flag("--display-name", lit(id.display_name(sys.name)));
  call(sh, c);
  sh.close("fi");
  sh.comment(id.of.empty() ? "Its roles, granted on each bucket and never on the project."
                           : "Its roles: read-only, on the model repository's bucket alone.");
  for (const auto& g : id.grants)
    if (const Store* s = sys.store(g.store)) call(sh, bucket_binding("add-iam-policy-binding", id, *s, g.role), "retry");
  sh.comment(fmt::format("Workload Identity: pods running as {}/{} act as the Google service account.", sys.ns, id.ksa));
  Call wi = gsa_call("add-iam-policy-binding", id);
  wi.flag("--role", "roles/iam.workloadIdentityUser")
      .flag("--member", dq("serviceAccount:", Var{"PROJECT_ID"}, fmt::format(".svc.id.goog[{}/{}]", sys.ns, id.ksa)));
  call(sh, wi, "retry");
}

void retry_function(ShellScript& sh) {
  sh.line();
  sh.comment("IAM may not know a new service account for a minute: a binding is tried again.");
  sh.open("retry() {")
      .line("local attempt")
      .open("for attempt in 1 2 3 4 5; do")
      .line("if run \"$@\"; then return 0; fi")
      .line("log \"retrying in 15s (attempt $attempt of 5 failed)\"")
      .line("sleep 15")
      .close("done")
      .line("run \"$@\"")
      .close("}");
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
  sh.line("PROJECT_NUMBER=$(gcloud projects describe \"$PROJECT_ID\" --format='value(projectNumber)') ||");
  sh.line("  die \"cannot read the number of project $PROJECT_ID\"");
  sh.close("fi");
}

/// The Custom Metrics Stackdriver Adapter reads the services' queue metric from Cloud Monitoring
/// for their HorizontalPodAutoscalers: a read-only role, the only one trainc grants on a project.
void up_metrics_reader(ShellScript& sh) {
  sh.line();
  sh.comment("The metrics adapter (installed by apply.sh) reads the services' queue metric from Cloud");
  sh.comment("Monitoring for their autoscalers: read-only, the only role trainc grants on the project.");
  call(sh, metrics_reader_binding("add-iam-policy-binding"), "retry", " >/dev/null");
}

/// The Google APIs the system uses, in one call: enabling one that is on changes nothing.
void up_apis(ShellScript& sh, const System& sys) {
  sh.comment("The Google APIs the system uses, before anything is made through them.");
  Call c = gcloud({"services", "enable"});
  for (const GcpApi& api : gcp_apis(sys)) c.flags.emplace_back(api.service);
  call(sh, at(c, false));
}

/// The regional Compute Engine quota the pools need at their largest (`trainc plan`), against what
/// the project has free. A short quota leaves nodes uncreated and pods Pending, so up.sh says so
/// before it makes anything; it warns rather than stops, since an autoscaled pool may never reach
/// its maximum and quota may be raised while the cluster comes up.
void up_quota(ShellScript& sh, const System& sys) {
  const ResourcePlan plan = make_plan(sys);
  if (plan.quota.empty()) return;
  std::vector<std::string> needs;
  for (const auto& q : plan.quota) needs.push_back(fmt::format("{}={}", q.metric, q.amount));
  sh.line();
  sh.comment("Quota the pools need at their largest (trainc plan), against what the region has free.");
  sh.open("check_quota() {")
      .line("local quotas pair metric need line limit usage free")
      .line("if [ \"$DRY_RUN\" = 1 ]; then log \"dry run: quota in $REGION not read\"; return 0; fi")
      .open("if ! quotas=$(gcloud compute regions describe \"$REGION\" --project=\"$PROJECT_ID\" --flatten=quotas \\")
      .line("--format='csv[no-heading](quotas.metric,quotas.limit,quotas.usage)'); then")
      .line("log \"warning: cannot read the quota of $REGION; not checked\"")
      .line("return 0")
      .close("fi")
      .open(fmt::format("for pair in {}; do", fmt::join(needs, " ")))
      .line("metric=${pair%=*} need=${pair#*=}")
      .line("line=$(printf '%s\\n' \"$quotas\" | awk -F, -v m=\"$metric\" '$1 == m { print $2, $3; exit }')")
      .open("if [ -z \"$line\" ]; then")
      .line("log \"warning: $REGION lists no quota $metric (the pools need $need); check the Quotas page\"")
      .line("continue")
      .close("fi")
      .line("read -r limit usage <<<\"$line\"")
      .line("free=$(awk -v l=\"$limit\" -v u=\"$usage\" 'BEGIN { printf \"%d\", l - u }')")
      .open("if [ \"$free\" -lt \"$need\" ]; then")
      .line("log \"warning: quota $metric in $REGION: the pools need $need at their largest, $free of ${limit%.*}\" \\")
      .line("\"are free; ask for more at https://console.cloud.google.com/iam-admin/quotas?project=$PROJECT_ID\"")
      .close("fi")
      .close("done")
      .close("}")
      .line("check_quota");
}

Call repository_call(std::string_view verb, const Registry& r) {
  Call c = gcloud({"artifacts", "repositories", std::string(verb), lit(r.repository)});
  c.flag("--location", lit(r.location));  // never $REGION: the manifests name images by this location's host
  return at(c, false);
}

/// The Artifact Registry repository built images are pushed to, which the nodes may read.
void up_registry(ShellScript& sh, const System& sys, const Registry& r) {
  sh.line();
  sh.comment("The Artifact Registry repository built images are pushed to.");
  open_if(sh, "missing", repository_call("describe", r));
  Call c = repository_call("create", r);
  c.flag("--repository-format", "docker").flag("--description", lit("Images of trainc system " + sys.name));
  call(sh, c);
  sh.close("fi");
  sh.comment("GKE nodes pull images as the Compute Engine default service account: it may read this");
  sh.comment("repository alone.");
  Call b = repository_call("add-iam-policy-binding", r);
  b.flag("--member", dq("serviceAccount:", Var{"PROJECT_NUMBER"}, "-compute@developer.gserviceaccount.com"))
      .flag("--role", "roles/artifactregistry.reader");
  call(sh, b, "retry", " >/dev/null");
}

void down_registry(ShellScript& sh, const Registry& r) {
  sh.line();
  sh.comment("The Artifact Registry repository, with every image in it: they are lost (CI builds them");
  sh.comment("again from the sources). Its read grant goes with it.");
  open_if(sh, "present", repository_call("describe", r));
  call(sh, repository_call("delete", r).flag("--quiet"));
  sh.close("fi");
}

std::string up_script(const System& sys) {
  ShellScript sh;
  prologue(sh, sys,
           {"up.sh", "creates the GCP resources",
            {"Creates what the system needs on GCP with gcloud: it enables the Google APIs, then",
             "makes the network, the cluster, its node pools, buckets, the image repository, the",
             "service accounts and their grants (those the spec asks for); then fetches kubectl",
             "credentials. Safe to run again: what exists is left alone."}},
           {}, {.region = needs_region(sys) || !sys.pools.empty(), .gsa = sys.identity.has_value()});
  check_functions(sh, true);
  if (!sys.identities().empty() || own_registry(sys)) retry_function(sh);
  sh.line();
  sh.line("if [ \"$DRY_RUN\" = 1 ]; then log 'dry run: nothing is changed; every resource is taken as missing'; fi");
  sh.line();
  up_apis(sh, sys);
  up_quota(sh, sys);
  if (autoscaled_services(sys) || own_registry(sys)) {
    sh.line();
    sh.comment("The project's number, which IAM members below name.");
    project_number(sh);
  }
  if (const Network* n = own_network(sys)) up_network(sh, *n);
  if (sys.rdma_nics() > 0) up_rdma_network(sh, sys);
  sh.line();
  up_cluster(sh, sys);
  for (const auto& [name, p] : sys.pools) up_pool(sh, sys, p);
  for (const Store* s : gcs_stores(sys, true)) up_bucket(sh, sys, *s);
  if (const Registry* r = own_registry(sys)) up_registry(sh, sys, *r);
  for (const Identity* id : sys.identities()) up_identity(sh, sys, *id);
  if (autoscaled_services(sys)) up_metrics_reader(sh);
  sh.line();
  call(sh, cluster_call("get-credentials"));
  log_line(sh, "done; next: apply.sh");
  return sh.text();
}

// ---- down.sh --------------------------------------------------------------------------------

std::string down_summary(const System& sys) {
  std::vector<std::string> what{fmt::format("cluster {} with pools", sys.cluster.name)};
  for (const auto& [_, p] : sys.pools)
    for (const auto& name : p.node_pools()) what.back() += " " + name;
  for (const Store* s : gcs_stores(sys, true)) what.push_back("bucket gs://" + s->bucket);
  if (const Registry* r = own_registry(sys)) what.push_back("repository " + r->repository + " with its images");
  for (const Identity* id : sys.identities()) what.emplace_back("service account " + id->gsa);
  if (sys.rdma_nics() > 0) what.emplace_back("network " + k8s::rdma_vpc(sys));
  if (const Network* n = own_network(sys)) what.push_back(fmt::format("network {} with subnet {}", n->name, n->subnet));
  return fmt::format("{}", fmt::join(what, ", "));
}

void confirm(ShellScript& sh, const System& sys) {
  sh.open("if [ \"$DRY_RUN\" != 1 ] && [ \"$YES\" != 1 ]; then")
      .line("[ -t 0 ] || die 'no terminal to confirm on; pass --yes to delete without asking'")
      .line(fmt::format("log {}", dq("in project ", Var{"PROJECT_ID"}, ", this deletes: " + down_summary(sys))))
      .line("read -r -p 'delete all of it? [y/N] ' answer")
      .line("case \"$answer\" in y|Y|yes) ;; *) die 'nothing deleted' ;; esac")
      .close("fi");
}

void has_objects_function(ShellScript& sh) {
  sh.line();
  sh.comment("Whether gs://$1 holds any object (any version). Never asked in a dry run.");
  sh.open("has_objects() {")
      .line("if [ \"$DRY_RUN\" = 1 ]; then return 1; fi")
      .line("[ -n \"$(gcloud storage ls --all-versions \"gs://$1\" 2>/dev/null | head -n 1)\" ]")
      .close("}");
}

/// Stops before anything is deleted when a bucket still holds data and --delete-data is absent.
void refuse_data_loss(ShellScript& sh, const System& sys) {
  auto buckets = gcs_stores(sys, true);
  if (buckets.empty()) return;
  sh.open("if [ \"$DELETE_DATA\" != 1 ]; then");
  for (const Store* s : buckets)
    sh.line(fmt::format("if has_objects {0}; then die {1}; fi", lit(s->bucket),
                        lit(fmt::format("gs://{} holds data; pass --delete-data to delete it too (nothing deleted)",
                                        s->bucket))));
  sh.close("fi");
}

void down_identity(ShellScript& sh, const System& sys, const Identity& id) {
  sh.line();
  sh.comment("Grants on buckets that stay; a deleted bucket takes its grants along, and the service");
  sh.comment("account takes its Workload Identity binding along.");
  for (const auto& g : id.grants) {
    const Store* s = sys.store(g.store);
    if (!s || s->create) continue;
    open_if(sh, "present", gsa_call("describe", id));
    call(sh, bucket_binding("remove-iam-policy-binding", id, *s, g.role), "run",
         fmt::format(" || log {}", lit(fmt::format("no grant left on gs://{}", s->bucket))));
    sh.close("fi");
  }
  open_if(sh, "present", gsa_call("describe", id));
  call(sh, gsa_call("delete", id).flag("--quiet"));
  sh.close("fi");
}

/// The project role of the metrics adapter, which outlives the cluster otherwise.
void down_metrics_reader(ShellScript& sh) {
  sh.line();
  sh.comment("The metrics adapter's read-only project role.");
  project_number(sh);
  call(sh, metrics_reader_binding("remove-iam-policy-binding"), "run", " >/dev/null || log 'no metrics adapter role left'");
}

/// The ingress gateway's LoadBalancer Service goes while the cluster can still release its
/// Google Cloud load balancer.
void down_gateway(ShellScript& sh) {
  const Operator& gw = catalog().istio_gateway();
  sh.line();
  sh.comment("The Istio ingress gateway first, so its load balancer is released by the cluster that made it.");
  open_if(sh, "present", cluster_call("describe"));
  call(sh, cluster_call("get-credentials"));
  Call c{{"helm", "uninstall", lit(gw.release)}, {}};
  c.flag("--namespace", lit(gw.ns)).flag("--kube-context", ref("KUBE_CONTEXT")).flag("--wait");
  call(sh, c, "run", " || log 'no ingress gateway left'");
  sh.close("fi");
}

void down_bucket(ShellScript& sh, const Store& s) {
  sh.line();
  open_if(sh, "present", bucket_call("describe", s));
  sh.open("if [ \"$DELETE_DATA\" = 1 ]; then");
  sh.comment("every version of every object, then the bucket itself");
  call(sh, gcloud({"storage", "rm", "--recursive", gs(s)}).flag("--quiet"));
  sh.branch("else");
  call(sh, bucket_call("delete", s).flag("--quiet"));
  sh.close("fi");
  sh.close("fi");
}

void down_pools_and_cluster(ShellScript& sh, const System& sys) {
  for (auto it = sys.pools.rbegin(); it != sys.pools.rend(); ++it) {
    sh.line();
    const auto names = it->second.node_pools();
    for (auto name = names.rbegin(); name != names.rend(); ++name) {
      open_if(sh, "present", pool_call("describe", *name));
      call(sh, pool_call("delete", *name).flag("--quiet"));
      sh.close("fi");
    }
  }
  sh.line();
  open_if(sh, "present", cluster_call("describe"));
  call(sh, cluster_call("delete").flag("--quiet"));
  sh.close("fi");
}

std::vector<std::string> down_help(const System& sys) {
  std::vector<std::string> out;
  if (gcs_stores(sys, true).empty())
    out = {"Deletes what up.sh made, in reverse order: the service account (if any), the node",
           "pools and the cluster."};
  else
    out = {"Deletes what up.sh made, in reverse order: the service account, the buckets trainc",
           "created (refusing any that holds data unless --delete-data), the node pools and the",
           "cluster. Buckets the spec does not create are kept."};
  if (own_registry(sys)) out.emplace_back("The image repository goes too, with its images.");
  if (own_network(sys)) out.emplace_back("The network and subnet go after the cluster.");
  out.emplace_back("The Google APIs stay enabled. Safe to run again.");
  return out;
}

std::vector<Option> down_options(const System& sys) {
  std::vector<Option> opts{{"-y|--yes", "YES", "do not ask for confirmation"}};
  if (!gcs_stores(sys, true).empty())
    opts.push_back({"--delete-data", "DELETE_DATA", "also delete buckets that hold data, with the data"});
  return opts;
}

std::string down_script(const System& sys, const k8s::Plan& plan) {
  ShellScript sh;
  const bool gateway = plan.needs_istio && sys.uses_gateway();
  prologue(sh, sys,
           {"down.sh", "deletes the GCP resources up.sh made", down_help(sys)}, down_options(sys),
           {.region = sys.rdma_nics() > 0 || own_network(sys), .gsa = sys.identity.has_value(), .kube = gateway});
  check_functions(sh, false);
  if (!gcs_stores(sys, true).empty()) has_objects_function(sh);
  sh.line();
  sh.line("if [ \"$DRY_RUN\" = 1 ]; then log 'dry run: nothing is changed; every resource is taken as present'; fi");
  confirm(sh, sys);
  refuse_data_loss(sh, sys);
  if (gateway) down_gateway(sh);
  if (autoscaled_services(sys)) down_metrics_reader(sh);
  for (const Identity* id : sys.identities()) down_identity(sh, sys, *id);
  if (const Registry* r = own_registry(sys)) down_registry(sh, *r);
  auto buckets = gcs_stores(sys, true);
  for (auto it = buckets.rbegin(); it != buckets.rend(); ++it) down_bucket(sh, **it);
  down_pools_and_cluster(sh, sys);
  if (sys.rdma_nics() > 0) down_rdma_network(sh, sys);
  if (const Network* n = own_network(sys)) down_network(sh, *n);
  log_line(sh, "finished; run up.sh to make it all again");
  return sh.text();
}

// ---- apply.sh -------------------------------------------------------------------------------

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

// ---- health.sh ------------------------------------------------------------------------------

/// A host the gateway routes to the service: its first, with a wildcard label made concrete.
std::string probe_host(const Service& s) {
  std::string h = s.expose.hosts.empty() ? "*" : s.expose.hosts.front();
  if (h == "*") return "";
  if (h.starts_with("*.")) h = "health" + h.substr(1);
  return h;
}

void health_functions(ShellScript& sh) {
  sh.line();
  sh.comment("Tries \"$@\" up to ATTEMPTS times, DELAY seconds apart; $1 says what is checked.");
  sh.open("until_ok() {")
      .line("local what=$1 attempt")
      .line("shift")
      .open("for ((attempt = 1; attempt <= ATTEMPTS; attempt++)); do")
      .open("if run \"$@\"; then")
      .line("log \"$what: ready\"")
      .line("return 0")
      .close("fi")
      .line("log \"$what: not yet (attempt $attempt of $ATTEMPTS); trying again in ${DELAY}s\"")
      .line("sleep \"$DELAY\"")
      .close("done")
      .line("return 1")
      .close("}");
}

void gateway_address(ShellScript& sh) {
  const Operator& gw = catalog().istio_gateway();
  const std::string get = fmt::format(
      "kubectl --context \"$KUBE_CONTEXT\" get service {} -n {} -o 'jsonpath={{.status.loadBalancer.ingress[0].ip}}'",
      lit(gw.release), lit(gw.ns));
  sh.line();
  sh.comment("The ingress gateway's external IP, once Google Cloud has given it one.");
  sh.open("gateway_ip() {")
      .line("local ip attempt")
      .open("if [ \"$DRY_RUN\" = 1 ]; then")
      .line("run " + get)
      .line("echo GATEWAY_IP")
      .line("return 0")
      .close("fi")
      .open("for ((attempt = 1; attempt <= ATTEMPTS; attempt++)); do")
      .line("ip=$(" + get + ") || ip=")
      .open("if [ -n \"$ip\" ]; then")
      .line("echo \"$ip\"")
      .line("return 0")
      .close("fi")
      .line("log \"the gateway has no external IP yet (attempt $attempt of $ATTEMPTS); trying again in ${DELAY}s\"")
      .line("sleep \"$DELAY\"")
      .close("done")
      .line("return 1")
      .close("}");
  sh.line("GATEWAY_IP=$(gateway_ip) ||");
  sh.line(fmt::format("  die {}", dq(fmt::format("the Istio ingress gateway (service {}/{}) got no external IP in ", gw.ns,
                                                  gw.release),
                                      Var{"ATTEMPTS"},
                                      fmt::format(" tries; see: kubectl describe service {} -n {}", gw.release, gw.ns))));
}

/// The checks of one service: the server is ready, then each model the spec names.
void health_checks(ShellScript& sh, const System& sys, const Service& s) {
  const std::string name = k8s::service_name(sys, s);
  const std::string see = fmt::format("; see: kubectl logs -n {} deployment/{}", sys.ns, name);
  std::vector<std::pair<std::string, std::string>> checks{{fmt::format("service '{}'", s.name), "/v2/health/ready"}};
  match(s.server, [&](const Triton& t) {
    for (const auto& m : t.models) checks.emplace_back(fmt::format("model '{}' of service '{}'", m, s.name),
                                                        fmt::format("/v2/models/{}/ready", m));
  });
  sh.line();
  if (s.expose.gateway) {
    const std::string host = probe_host(s);
    sh.comment(fmt::format("Service '{}': through the ingress gateway{}, as clients call it.", s.name,
                           host.empty() ? "" : " (Host: " + host + ")"));
    for (const auto& [what, path] : checks) {
      Call c{{"until_ok", dq(what), "curl", "-fsS", "-o", "/dev/null", "--max-time", "5"}, {}};
      if (!host.empty()) c.words.insert(c.words.end(), {"-H", lit("Host: " + host)});
      const std::string at = s.expose.path_prefix + path;
      c.words.push_back(dq("http://", Var{"GATEWAY_IP"}, at));
      for (const auto& l : render(c, "", " ||")) sh.line(l);
      sh.line(fmt::format("  die {}", dq(what + " is not ready at http://", Var{"GATEWAY_IP"},
                                         at + " after ", Var{"ATTEMPTS"}, " tries" + see)));
    }
    return;
  }
  sh.comment(fmt::format("Service '{}': inside the cluster, through the API server's service proxy.", s.name));
  for (const auto& [what, path] : checks) {
    const std::string raw = fmt::format("/api/v1/namespaces/{}/services/{}:http/proxy{}", sys.ns, name, path);
    Call c{{"until_ok", dq(what), "kubectl", "--context", ref("KUBE_CONTEXT"), "get", "--raw", lit(raw)}, {}};
    for (const auto& l : render(c, "", " >/dev/null ||")) sh.line(l);
    sh.line(fmt::format("  die {}", dq(what + " is not ready at " + raw + " after ", Var{"ATTEMPTS"}, " tries" + see)));
  }
}

std::string health_script(const System& sys) {
  ShellScript sh;
  prologue(sh, sys,
           {"health.sh", "checks that the services serve",
            {"Asks each service whether it is ready, and each model the spec names, the way a",
             "client would: through the Istio ingress gateway's external IP for exposed services,",
             "through the API server's service proxy for the others. Each check is tried",
             "HEALTH_ATTEMPTS times (default 30), HEALTH_DELAY seconds apart (default 10).",
             "Exits 1 naming the first check that never passed. Changes nothing."}},
           {}, {.kube = true});
  sh.line("ATTEMPTS=\"${HEALTH_ATTEMPTS:-30}\"");
  sh.line("DELAY=\"${HEALTH_DELAY:-10}\"");
  sh.line("readonly ATTEMPTS DELAY");
  health_functions(sh);
  sh.line();
  sh.line("if [ \"$DRY_RUN\" = 1 ]; then log 'dry run: commands are printed, not run'; fi");
  if (sys.uses_gateway()) gateway_address(sh);
  for (const auto& [_, s] : sys.services) health_checks(sh, sys, s);
  log_line(sh, "every service serves");
  return sh.text();
}

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

// ---- status.sh ------------------------------------------------------------------------------

void status_gcp(ShellScript& sh, const System& sys) {
  Call cluster = cluster_call("describe");
  call(sh, cluster.flag("--format", lit("value(name,location,status,currentMasterVersion)")), "run",
       " || log 'cluster not found'");
  Call pools = gcloud({"container", "node-pools", "list"});
  pools.flag("--cluster", ref("CLUSTER"));
  call(sh, at(pools), "run", " || log 'no node pools found'");
  for (const Store* s : gcs_stores(sys))
    call(sh, bucket_call("describe", *s).flag("--format", lit("value(name,location)")), "run",
         fmt::format(" || log {}", lit(fmt::format("bucket gs://{} not found", s->bucket))));
  for (const Identity* id : sys.identities())
    call(sh, gsa_call("describe", *id).flag("--format", lit("value(email,disabled)")), "run",
         fmt::format(" || log {}", lit(fmt::format("service account {} not found", id->gsa))));
  if (const auto& r = sys.gcp->registry)
    call(sh, repository_call("describe", *r).flag("--format", lit("value(name,format)")), "run",
         fmt::format(" || log {}", lit(fmt::format("repository {} not found", r->repository))));
}

std::string status_script(const System& sys) {
  ShellScript sh;
  prologue(sh, sys,
           {"status.sh", "shows the state",
            {"Shows the cluster, its node pools, the buckets, the service account and the",
             "system's Jobs and pods. Changes nothing."}},
           {}, {.gsa = sys.identity.has_value(), .ns = true, .kube = true});
  sh.line();
  sh.line("if [ \"$DRY_RUN\" = 1 ]; then log 'dry run: commands are printed, not run'; fi");
  status_gcp(sh, sys);
  std::string kinds = sys.services.empty() ? "jobs,pods" : "jobs,deployments,hpa,pods";
  for (const auto& st : sys.steps)  // TPU steps are JobSets
    if (const Pool* p = sys.pool(st.pool); p && p->tpu && kinds.find("jobsets") == std::string::npos)
      kinds = "jobsets," + kinds;
  Call k = kubectl({"get", kinds, "-n", ref("NAMESPACE"), "-l", lit("app.kubernetes.io/part-of=" + sys.name)});
  call(sh, k, "run", " || log 'cannot reach the cluster; run up.sh (or get-credentials) first'");
  if (!sys.services.empty()) {
    sh.comment("Which server pods each service sends requests to.");
    Call e = kubectl({"get", "endpointslices", "-n", ref("NAMESPACE"), "-l", lit("app.kubernetes.io/part-of=" + sys.name)});
    call(sh, e, "run", " || log 'no endpoints'");
  }
  if (sys.uses_gateway()) {
    const Operator& gw = catalog().istio_gateway();
    sh.comment("The ingress gateway's external address (EXTERNAL-IP).");
    call(sh, kubectl({"get", "service", lit(gw.release), "-n", lit(gw.ns)}), "run", " || log 'no ingress gateway found'");
  }
  return sh.text();
}

class ScriptsEmitter final : public Emitter {
 public:
  std::string_view name() const override { return "scripts"; }
  void emit(const System& sys, const k8s::Plan& plan, OutputSink& out) const override {
    if (!sys.gcp) return;
    out.add("scripts/up.sh", up_script(sys));
    out.add("scripts/down.sh", down_script(sys, plan));
    out.add("scripts/apply.sh", apply_script(sys, plan));
    out.add("scripts/status.sh", status_script(sys));
    if (!sys.services.empty()) out.add("scripts/health.sh", health_script(sys));
  }
};

}  // namespace

std::unique_ptr<Emitter> new_scripts_emitter() { return std::make_unique<ScriptsEmitter>(); }

}  // namespace trainc
