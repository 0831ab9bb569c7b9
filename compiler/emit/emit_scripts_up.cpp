// scripts/up.sh: creates the GCP resources (emit_scripts.h) — the APIs, the network, the cluster
// and its node pools, buckets, the image repository, service accounts and their grants.
#include <fmt/format.h>

#include "emit/emit_scripts.h"
#include <algorithm>
#include <cctype>

#include "emit/emitter.h"
#include "k8s/names.h"
#include "model/catalog.h"

namespace trainc::scripts {
namespace {

std::string release_channel(const Cluster& c) {
  std::string out = c.release_channel;  // gcloud spells RAPID as rapid
  for (char& ch : out) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  return out;
}

/// The nodes' own service account, with the cloud-platform scope GKE gives a custom account: what
/// the nodes may do is then their IAM roles alone.
void node_identity(Call& c, const System& sys) {
  c.flag("--service-account", dq(node_account(sys).id + "@", Var{"PROJECT_ID"}, ".iam.gserviceaccount.com"));
  c.flag("--scopes", "cloud-platform");
}

void up_cluster(ShellScript& sh, const System& sys) {
  sh.comment("The cluster, with Workload Identity and the GCS FUSE CSI driver. --addons turns off every add-on");
  sh.comment("it does not name, so GKE's defaults (HPA, HTTP load balancing) are named too, as Terraform keeps them.");
  open_if(sh, "missing", cluster_call("describe"));
  Call c = cluster_call("create");
  c.flag("--workload-pool", dq(Var{"PROJECT_ID"}, ".svc.id.goog"))
      .flag("--addons", "HorizontalPodAutoscaling,HttpLoadBalancing,GcsFuseCsiDriver");
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
  node_identity(c, sys);
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
  if (p.provisioning == "flex-start" || p.provisioning == "queued") {
    // Flex-start VMs come only through the autoscaler, from zero, and never from a reservation;
    // queued provisioning makes all of a ProvisioningRequest's nodes at once, when Kueue asks.
    c.flag("--flex-start");
    if (p.provisioning == "queued") c.flag("--enable-queued-provisioning");
    c.flag("--enable-autoscaling").flag("--num-nodes", "0");
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
/// The second gVNIC NIC's VPC (eth1 of RDMA nodes), its subnet, and the rule that lets the nodes
/// reach each other on it.
void up_gvnic_network(ShellScript& sh, const System& sys, const RdmaLayout& r) {
  sh.line();
  sh.comment(fmt::format("RDMA nodes' second gVNIC NIC (eth1; pods name it {}): a regular VPC, since the RDMA",
                         r.gvnic_network));
  sh.comment("one takes RDMA NICs only; NCCL's bootstrap uses eth0 and eth1, so the nodes' eth1 reach each other.");
  open_if(sh, "missing", network_call("describe", k8s::gvnic_vpc(sys)));
  call(sh, network_call("create", k8s::gvnic_vpc(sys)).flag("--subnet-mode", "custom").flag("--mtu", std::to_string(r.gvnic_mtu)));
  sh.close("fi");
  open_if(sh, "missing", subnet_call("describe", k8s::gvnic_subnet(sys)));
  call(sh, subnet_call("create", k8s::gvnic_subnet(sys)).flag("--network", lit(k8s::gvnic_vpc(sys))).flag("--range", lit(r.gvnic_range)));
  sh.close("fi");
  open_if(sh, "missing", firewall_call("describe", k8s::gvnic_firewall(sys)));
  Call fw = firewall_call("create", k8s::gvnic_firewall(sys));
  fw.flag("--network", lit(k8s::gvnic_vpc(sys))).flag("--allow", "tcp:0-65535,udp:0-65535,icmp");
  call(sh, fw.flag("--source-ranges", lit(r.gvnic_range)));
  sh.close("fi");
}

/// The RDMA VPC with the zone's RDMA network profile, and one subnet per RDMA NIC.
void up_rdma_network(ShellScript& sh, const System& sys) {
  const RdmaLayout& r = catalog().rdma();
  up_gvnic_network(sh, sys, r);
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
void up_pool(ShellScript& sh, const System& sys, const Pool& p) {
  sh.line();
  const auto names = p.node_pools();
  if (!p.ladder_of.empty())
    sh.comment(fmt::format("Node pool '{}': rung {} of pool '{}' ({}).", p.name, p.rung + 1, p.ladder_of, p.provisioning));
  else if (names.size() == 1)
    sh.comment(fmt::format("Node pool '{}'.", p.name));
  else
    sh.comment(fmt::format("Pool '{}': {} node pools, one {} TPU slice each, for multislice jobs.", p.name,
                           names.size(), p.tpu->topology));
  for (const auto& name : names) {
    open_if(sh, "missing", pool_call("describe", name));
    sh.line("create_pool run " + lit(name));
    up_pool_drift(sh, sys, p, name);
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
  sh.branch("else");
  sh.line(fmt::format("check_bucket {} {}", gs(s), in_region(sys, s) ? ref("REGION") : lit(s.location)));
  sh.close("fi");
  if (s.versioning) call(sh, bucket_call("update", s).flag("--versioning"));
}

void up_identity(ShellScript& sh, const System& sys, const Identity& id) {
  sh.line();
  sh.comment(id.of.empty() ? "The workload's Google service account."
                           : fmt::format("Service '{}''s own Google service account.", id.of));
  open_if(sh, "missing", gsa_call("describe", id));
  Call c = gcloud({"iam", "service-accounts", "create", lit(id.gsa)});
  at(c, false).flag("--display-name", lit(id.display_name(sys.name))).flag("--description", lit(id.description(sys.name)));
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

/// Stops at an existing account up.sh did not create: the spec may name any account of the project
/// (the deployer's own), and Workload Identity on it would hand its rights to the workload's pods.
void own_account_function(ShellScript& sh) {
  Call describe = gcloud({"iam", "service-accounts", "describe", "\"$1\""});
  at(describe, false).flag("--format", lit("value(description)"));
  sh.line();
  sh.comment("Dies unless service account $1 carries description $2, which up.sh gives the accounts it");
  sh.comment("creates: Workload Identity is bound only to those, never to one someone else made.");
  sh.open("own_account() {")
      .line("local description")
      .line("description=$(" + describe.line() + ") ||")
      .line("  die \"cannot read service account $1\"")
      .line("if [ \"$description\" = \"$2\" ]; then return 0; fi")
      .line("log \"service account $1 exists, and up.sh did not create it: its description is not \\\"$2\\\"\"")
      .line("die \"up.sh binds Workload Identity only to accounts it created; name another in the spec "
            "(identity.gcpServiceAccount), or, if this system's up.sh made it before it marked its accounts, give it "
            "that description (gcloud iam service-accounts update --description)\"")
      .close("}");
}

/// Before anything is made: each workload account that exists already must be one up.sh created.
void up_own_accounts(ShellScript& sh, const System& sys) {
  if (sys.identities().empty()) return;
  sh.line();
  sh.comment("The workloads' Google service accounts that exist already must be up.sh's own (checked before");
  sh.comment("anything is made): it binds Workload Identity to no account someone else made.");
  for (const Identity* id : sys.identities()) {
    open_if(sh, "! missing", gsa_call("describe", *id));
    sh.line(fmt::format("own_account {} {}", gsa_email(*id), lit(id->description(sys.name))));
    sh.close("fi");
  }
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
void up_quota(ShellScript& sh, const ResourcePlan& plan) {
  if (plan.quota.empty()) return;
  std::vector<std::string> needs;
  for (const auto& q : plan.quota) needs.push_back(fmt::format("{}={}", q.metric, q.amount));
  sh.line();
  sh.comment("Quota the pools need at their largest (trainc plan), against what the region has free.");
  // Two lines: the format's columns on the second.
  const std::vector<std::string> quotas = cmd::region_quotas(ref("REGION"), ref("PROJECT_ID")).parts();
  sh.open("check_quota() {")
      .line("local quotas pair metric need line limit usage free")
      .line("if [ \"$DRY_RUN\" = 1 ]; then log \"dry run: quota in $REGION not read\"; return 0; fi")
      .open("if ! quotas=$(" + quotas.front())
      .line(quotas.back() + "); then")
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

/// The Artifact Registry repository built images are pushed to, which the nodes may read.
void up_registry(ShellScript& sh, const System& sys, const Registry& r) {
  sh.line();
  sh.comment("The Artifact Registry repository built images are pushed to.");
  open_if(sh, "missing", repository_call("describe", r));
  Call c = repository_call("create", r);
  c.flag("--repository-format", "docker").flag("--description", lit("Images of trainc system " + sys.name));
  call(sh, c);
  sh.close("fi");
}

/// Read on each repository the pods pull images from, for the nodes' account.
void up_node_readers(ShellScript& sh, const System& sys) {
  const NodeAccount nodes = node_account(sys);
  if (nodes.repositories.empty()) return;
  sh.line();
  sh.comment("The nodes pull the pods' images: read on each repository they come from, never on the project.");
  for (const PulledRepository& repo : nodes.repositories) call(sh, reader_binding("add-iam-policy-binding", sys, repo), "retry", " >/dev/null");
}

/// The nodes' own service account and GKE's least-privilege node role on the project, before the
/// cluster whose nodes run as it.
void up_node_account(ShellScript& sh, const System& sys) {
  sh.line();
  sh.comment("The nodes' own service account, not the Compute Engine default one, whose automatic Editor");
  sh.comment("role organisations may block; it holds GKE's least-privilege node role (logs, metrics).");
  open_if(sh, "missing", node_account_call("describe", sys));
  Call c = gcloud({"iam", "service-accounts", "create", lit(node_account(sys).id)});
  call(sh, at(c, false).flag("--display-name", lit(node_account(sys).display_name())));
  sh.close("fi");
  call(sh, node_role_binding("add-iam-policy-binding", sys), "retry", " >/dev/null");
}

/// Stops before anything is made when the network the cluster joins, which trainc does not create,
/// is missing: the project's default one (absent under the organisation policy
/// compute.skipDefaultNetworkCreation) or the spec's existing one.
void check_network(ShellScript& sh, const System& sys) {
  const auto& net = sys.gcp->network;
  if (net && net->create) return;
  sh.line();
  if (!net) {
    sh.comment("The cluster joins the project's default network (the spec names no gcp.network), which");
    sh.comment("projects under the organisation policy compute.skipDefaultNetworkCreation do not have.");
    open_if(sh, "! present", network_call("describe", "default"));
    const std::string create = gcloud({"compute", "networks", "create", "default"}).flag("--subnet-mode", "auto").line();
    sh.line(fmt::format("die {}", dq("project ", Var{"PROJECT_ID"}, " has no VPC network 'default': add gcp.network to "
                                     "the spec (trainc then creates one), or create it: " + create + " --project=",
                                     Var{"PROJECT_ID"})));
    sh.close("fi");
    return;
  }
  sh.comment("The spec's existing network and subnet (create: false), which trainc does not make.");
  open_if(sh, "! present", network_call("describe", net->name));
  sh.line(fmt::format("die {}", dq("project ", Var{"PROJECT_ID"}, " has no VPC network '" + net->name +
                                   "' (gcp.network, create: false): create it, or remove create: false so trainc does")));
  sh.close("fi");
  open_if(sh, "! present", subnet_call("describe", net->subnet));
  sh.line(fmt::format("die {}", dq("network '" + net->name + "' has no subnet '" + net->subnet + "' in ", Var{"REGION"},
                                   " with the secondary ranges " + net->pods_range() + " and " + net->services_range() +
                                   ": create it, or remove create: false so trainc does")));
  sh.close("fi");
}

/// up.sh's help: what it makes, and what it does on a second run.
std::vector<std::string> up_help(const System& sys) {
  std::vector<std::string> help{"Creates what the system needs on GCP with gcloud: it enables the Google APIs, then",
                                "makes the network, the cluster, its node pools, buckets, the image repository, the",
                                "service accounts and their grants (those the spec asks for); then fetches kubectl"};
  if (sys.pools.empty()) {
    help.emplace_back("credentials. Safe to run again: what exists is checked against the spec.");
    return help;
  }
  help.insert(help.end(), {"credentials. Run again after an edit, it updates in place what gcloud can (a node",
                           "pool's size, autoscaling limits, node labels and taints) and stops at a change",
                           "that needs a node pool replaced, naming the commands, unless --replace names it."});
  return help;
}

std::vector<Option> up_options(const System& sys) {
  if (sys.pools.empty()) return {};
  return {{"--replace", "REPLACE", "replace node pool POOL where the spec changed what gcloud cannot update", "POOL"}};
}

}  // namespace

Call firewall_call(std::string_view verb, const std::string& name) {
  Call c = gcloud({"compute", "firewall-rules", std::string(verb), lit(name)});
  return at(c, false);
}

Call node_account_call(std::string_view verb, const System& sys) {
  Call c = gcloud({"iam", "service-accounts", std::string(verb),
                   dq(node_account(sys).id + "@", Var{"PROJECT_ID"}, ".iam.gserviceaccount.com")});
  return at(c, false);
}

Call node_role_binding(std::string_view verb, const System& sys) {
  Call c = gcloud({"projects", std::string(verb), ref("PROJECT_ID")});
  c.flag("--member", dq("serviceAccount:" + node_account(sys).id + "@", Var{"PROJECT_ID"}, ".iam.gserviceaccount.com"));
  return c.flag("--role", "roles/container.defaultNodeServiceAccount").flag("--condition", "None");
}

Call reader_binding(std::string_view verb, const System& sys, const PulledRepository& repo) {
  Call c = gcloud({"artifacts", "repositories", std::string(verb), lit(repo.repository)});
  c.flag("--location", lit(repo.location)).flag("--project", repo.own ? ref("PROJECT_ID") : lit(repo.project));
  c.flag("--member", dq("serviceAccount:" + node_account(sys).id + "@", Var{"PROJECT_ID"}, ".iam.gserviceaccount.com"));
  return c.flag("--role", "roles/artifactregistry.reader");
}

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
    c.flag("--additional-node-network", lit(fmt::format("network={},subnetwork={}", k8s::gvnic_vpc(sys),
                                                        k8s::gvnic_subnet(sys))));
    for (int nic = 0; nic < (p.accelerator ? p.accelerator->count : 0); ++nic)
      c.flag("--additional-node-network",
             lit(fmt::format("network={},subnetwork={}", k8s::rdma_vpc(sys), k8s::rdma_subnet(sys, nic))));
  }
  node_identity(c, sys);
  return c.flag("--workload-metadata", "GKE_METADATA");
}

std::string up_script(const System& sys, const Planned& plan) {
  ShellScript sh;
  prologue(sh, sys, {"up.sh", "creates the GCP resources", up_help(sys)}, up_options(sys),
           {.region = needs_region(sys) || !sys.pools.empty(), .gsa = sys.identity.has_value()});
  check_functions(sh, true);
  retry_function(sh);
  if (!sys.identities().empty()) own_account_function(sh);
  drift_functions(sh, sys);
  sh.line();
  sh.line("if [ \"$DRY_RUN\" = 1 ]; then log 'dry run: nothing is changed; every resource is taken as missing'; fi");
  sh.line();
  up_apis(sh, sys);
  up_quota(sh, plan.resources);
  check_network(sh, sys);
  if (autoscaled_services(sys)) {
    sh.line();
    sh.comment("The project's number, which IAM members below name.");
    project_number(sh);
  }
  up_own_accounts(sh, sys);
  up_cluster_drift(sh, sys);
  if (const Network* n = own_network(sys)) up_network(sh, *n);
  if (sys.rdma_nics() > 0) up_rdma_network(sh, sys);
  up_node_account(sh, sys);
  sh.line();
  up_cluster(sh, sys);
  for (const Pool& p : sys.gke_pools()) up_pool(sh, sys, p);
  up_stale_pools(sh, sys);
  for (const Store* s : gcs_stores(sys, true)) up_bucket(sh, sys, *s);
  if (const Registry* r = own_registry(sys)) up_registry(sh, sys, *r);
  up_node_readers(sh, sys);
  for (const Identity* id : sys.identities()) up_identity(sh, sys, *id);
  if (autoscaled_services(sys)) up_metrics_reader(sh);
  sh.line();
  call(sh, cluster_call("get-credentials"));
  log_line(sh, sys.builds.empty() ? "done; next: apply.sh" : "done; next: build.sh, then apply.sh");
  return sh.text();
}

}  // namespace trainc::scripts
