// scripts/down.sh: deletes what up.sh made, in reverse order (emit_scripts.h).
#include <fmt/format.h>

#include "emit/emit_scripts.h"
#include "k8s/names.h"
#include "model/catalog.h"

namespace trainc::scripts {
namespace {


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


void down_rdma_network(ShellScript& sh, const System& sys) {
  sh.line();
  sh.comment("The GPUDirect RDMA networks, once no node uses them: the second gVNIC NIC's, then the RDMA VPC.");
  open_if(sh, "present", firewall_call("describe", k8s::gvnic_firewall(sys)));
  call(sh, firewall_call("delete", k8s::gvnic_firewall(sys)).flag("--quiet"));
  sh.close("fi");
  open_if(sh, "present", subnet_call("describe", k8s::gvnic_subnet(sys)));
  call(sh, subnet_call("delete", k8s::gvnic_subnet(sys)).flag("--quiet"));
  sh.close("fi");
  open_if(sh, "present", network_call("describe", k8s::gvnic_vpc(sys)));
  call(sh, network_call("delete", k8s::gvnic_vpc(sys)).flag("--quiet"));
  sh.close("fi");
  for (int nic = sys.rdma_nics() - 1; nic >= 0; --nic) {
    open_if(sh, "present", subnet_call("describe", k8s::rdma_subnet(sys, nic)));
    call(sh, subnet_call("delete", k8s::rdma_subnet(sys, nic)).flag("--quiet"));
    sh.close("fi");
  }
  open_if(sh, "present", network_call("describe", k8s::rdma_vpc(sys)));
  call(sh, network_call("delete", k8s::rdma_vpc(sys)).flag("--quiet"));
  sh.close("fi");
}


void down_registry(ShellScript& sh, const Registry& r) {
  sh.line();
  sh.comment("The Artifact Registry repository, with every image in it: they are lost (CI builds them");
  sh.comment("again from the sources). Its read grant goes with it.");
  open_if(sh, "present", repository_call("describe", r));
  call(sh, repository_call("delete", r).flag("--quiet"));
  sh.close("fi");
}

/// The nodes' account, once no node runs as it: its project role and its read on repositories
/// that stay (a deleted repository takes its grants along), then the account itself.
void down_node_account(ShellScript& sh, const System& sys) {
  sh.line();
  sh.comment("The nodes' service account, once the cluster is gone: its roles first, which would outlive it.");
  open_if(sh, "present", node_account_call("describe", sys));
  call(sh, node_role_binding("remove-iam-policy-binding", sys), "run", " >/dev/null || log 'no node role left'");
  for (const PulledRepository& repo : node_account(sys).repositories) {
    if (repo.own && own_registry(sys)) continue;
    call(sh, reader_binding("remove-iam-policy-binding", sys, repo), "run",
         fmt::format(" >/dev/null || log {}", lit(fmt::format("no read left on repository {}", repo.repository))));
  }
  call(sh, node_account_call("delete", sys).flag("--quiet"));
  sh.close("fi");
}

std::string down_summary(const System& sys) {
  std::vector<std::string> what{fmt::format("cluster {} with pools", sys.cluster.name)};
  for (const auto& [_, p] : sys.pools)
    for (const auto& name : p.node_pools()) what.back() += " " + name;
  for (const Store* s : gcs_stores(sys, true)) what.push_back("bucket gs://" + s->bucket);
  if (const Registry* r = own_registry(sys)) what.push_back("repository " + r->repository + " with its images");
  for (const Identity* id : sys.identities()) what.emplace_back("service account " + id->gsa);
  what.emplace_back("the nodes' service account " + node_account(sys).id);
  if (sys.rdma_nics() > 0) what.emplace_back(fmt::format("networks {} and {}", k8s::gvnic_vpc(sys), k8s::rdma_vpc(sys)));
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
      .line(fmt::format("[ -n \"$({} 2>/dev/null | head -n 1)\" ]",
                        cmd::gcloud({"storage", "ls", "--all-versions"}).word("\"gs://$1\"").line()))
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
  sh.comment(fmt::format("Service account {}, when up.sh made it (its description says so): its grants on", id.gsa));
  sh.comment("buckets that stay (a deleted bucket takes its grants along), then the account, which takes its");
  sh.comment("Workload Identity binding along. An account someone else made is left alone.");
  sh.open(fmt::format("if ours {} {}; then", gsa_email(id), lit(id.description(sys.name))));
  for (const auto& g : id.grants) {
    const Store* s = sys.store(g.store);
    if (!s || s->create) continue;
    call(sh, bucket_binding("remove-iam-policy-binding", id, *s, g.role), "run",
         fmt::format(" || log {}", lit(fmt::format("no grant left on gs://{}", s->bucket))));
  }
  call(sh, gsa_call("delete", id).flag("--quiet"));
  sh.branch("else");
  log_line(sh, fmt::format("service account {} not deleted: it is gone, or up.sh did not create it", id.gsa));
  sh.close("fi");
}

/// ours: whether a service account is one up.sh made.
void ours_function(ShellScript& sh) {
  Call describe = gcloud({"iam", "service-accounts", "describe", "\"$1\""});
  at(describe, false).flag("--format", lit("value(description)"));
  sh.line();
  sh.comment("Whether service account $1 exists and carries description $2, which up.sh gives the accounts");
  sh.comment("it creates (a dry run assumes so): down.sh deletes no account someone else made.");
  sh.open("ours() {")
      .line("local description")
      .line("if [ \"$DRY_RUN\" = 1 ]; then return 0; fi")
      .line("description=$(" + describe.line() + " 2>/dev/null) || return 1")
      .line("[ \"$description\" = \"$2\" ]")
      .close("}");
}

/// The project role of the metrics adapter, which outlives the cluster otherwise.
void down_metrics_reader(ShellScript& sh) {
  sh.line();
  sh.comment("The metrics adapter's read-only project role.");
  project_number(sh);
  call(sh, metrics_reader_binding("remove-iam-policy-binding"), "run", " >/dev/null || log 'no metrics adapter role left'");
}

/// The teardown's first step (k8s/rollout.h): the ingress gateway's LoadBalancer Service goes
/// while the cluster can still release its Google Cloud load balancer.
void down_gateway(ShellScript& sh, const Operator& gw) {
  sh.line();
  sh.comment("The Istio ingress gateway first, so its load balancer is released by the cluster that made it.");
  open_if(sh, "present", cluster_call("describe"));
  call(sh, cluster_call("get-credentials"));
  call(sh, cmd::helm_uninstall(kube_target(), gw, true), "run", " || log 'no ingress gateway left'");
  sh.close("fi");
}

/// The chart whose release holds a cloud load balancer, or nullptr.
const Operator* load_balancer(const Rollout& r) {
  for (const auto& step : r.teardown)
    if (step.kind == TeardownStep::Kind::kReleaseLoadBalancer) return step.chart;
  return nullptr;
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
           "pools and the cluster, then the nodes' service account."};
  else
    out = {"Deletes what up.sh made, in reverse order: the service account, the buckets trainc",
           "created (refusing any that holds data unless --delete-data), the node pools and the",
           "cluster, then the nodes' service account. Buckets the spec does not create are kept."};
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
}  // namespace

std::string down_script(const System& sys, const Planned& plan) {
  ShellScript sh;
  const Operator* gateway = load_balancer(plan.rollout);
  prologue(sh, sys,
           {"down.sh", "deletes the GCP resources up.sh made", down_help(sys)}, down_options(sys),
           {.region = sys.rdma_nics() > 0 || own_network(sys), .gsa = sys.identity.has_value(), .kube = gateway != nullptr});
  check_functions(sh, false);
  if (!gcs_stores(sys, true).empty()) has_objects_function(sh);
  if (!sys.identities().empty()) ours_function(sh);
  sh.line();
  sh.line("if [ \"$DRY_RUN\" = 1 ]; then log 'dry run: nothing is changed; every resource is taken as present'; fi");
  confirm(sh, sys);
  refuse_data_loss(sh, sys);
  if (gateway) down_gateway(sh, *gateway);
  if (autoscaled_services(sys)) down_metrics_reader(sh);
  for (const Identity* id : sys.identities()) down_identity(sh, sys, *id);
  if (const Registry* r = own_registry(sys)) down_registry(sh, *r);
  auto buckets = gcs_stores(sys, true);
  for (auto it = buckets.rbegin(); it != buckets.rend(); ++it) down_bucket(sh, **it);
  down_pools_and_cluster(sh, sys);
  down_node_account(sh, sys);
  if (sys.rdma_nics() > 0) down_rdma_network(sh, sys);
  if (const Network* n = own_network(sys)) down_network(sh, *n);
  log_line(sh, "finished; run up.sh to make it all again");
  return sh.text();
}

}  // namespace trainc::scripts
