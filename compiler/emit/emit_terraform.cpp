// Terraform target: terraform/ with the Google APIs the system uses, its VPC network (when the
// spec names one), the GKE cluster, node pools, buckets, the Artifact Registry repository, a
// service account per identity (the system's and each service's), bucket-scoped IAM, the
// Workload Identity bindings and, for autoscaled services, the metrics adapter's read role on
// Cloud Monitoring. Emitted only when the spec has `gcp:`; with `gcp.state` the state lives in
// a GCS bucket (backend "gcs").
// Everything hardware-specific (machine type, accelerator type and count, TPU topology) comes
// from the Pool, which lowering filled from the hardware catalog; nothing is typed here.
#include <algorithm>
#include <cctype>
#include <set>

#include <fmt/format.h>

#include "emit/emitter.h"
#include "k8s/names.h"
#include "model/catalog.h"
#include "emit/hcl.h"
#include "emit/terraform.h"

namespace trainc::tf {

using hcl::Block;
using hcl::Value;

std::string cluster_label(const System& sys) {
  return hcl::identifier(sys.cluster.name.empty() ? sys.name : sys.cluster.name);
}

Value attr(std::string_view type, const std::string& label, std::string_view attribute) {
  return hcl::ref(fmt::format("{}.{}.{}", type, label, attribute));
}

/// The google_project_service of an API: its name's first part (container.googleapis.com -> container).
std::string api_label(std::string_view service) { return hcl::identifier(service.substr(0, service.find('.'))); }

void depends_on_apis(Block& b, std::initializer_list<std::string_view> services) {
  std::vector<Value> refs;
  for (std::string_view s : services) refs.push_back(hcl::ref("google_project_service." + api_label(s)));
  b.set("depends_on", hcl::list(std::move(refs)));
}

bool any_autoscaled(const System& sys) {
  return std::any_of(sys.services.begin(), sys.services.end(), [](const auto& s) { return s.second.autoscaled(); });
}

bool creates_registry(const System& sys) { return sys.gcp->registry && sys.gcp->registry->create; }

Value bucket_name(const Store& store) {
  return store.create ? attr("google_storage_bucket", hcl::identifier(store.name), "name") : hcl::str(store.bucket);
}

std::string service_account_label(const Identity& id) { return hcl::identifier(id.gsa); }

}  // namespace trainc::tf

namespace trainc {
namespace {

using namespace tf;
using hcl::Block;
using hcl::Body;
using hcl::Value;

/// The google provider version whose schema the oracle (and so trainc's output) is checked against.
constexpr std::string_view kProviderVersion = "6.50.0";

Value cluster_attr(const System& sys, std::string_view attribute) {
  return attr("google_container_cluster", cluster_label(sys), attribute);
}

bool regional(const System& sys) { return sys.gcp->zone.empty(); }

std::vector<const Store*> gcs_stores(const System& sys) {
  std::vector<const Store*> out;
  for (const auto& [name, store] : sys.stores)
    if (store.kind == Store::Kind::gcs) out.push_back(&store);
  return out;
}


Body versions_tf(const Gcp& gcp) {
  Body file;
  Block& tf = file.block("terraform");
  tf.set("required_version", hcl::str(">= 1.5"));
  tf.block("required_providers")
      .set("google", hcl::map({{"source", hcl::str("hashicorp/google")}, {"version", hcl::str(std::string(kProviderVersion))}}));
  if (gcp.state) {
    tf.comment("State lives in this bucket (made beforehand, see README.md), not on the machine that ran Terraform.");
    Block& backend = tf.block("backend", {"gcs"});
    backend.set("bucket", hcl::str(gcp.state->bucket));
    backend.set("prefix", hcl::str(gcp.state->prefix));
  }
  return file;
}


Body apis_tf(const System& sys) {
  Body file;
  for (const GcpApi& api : gcp_apis(sys)) {
    file.comment(std::string(api.why));
    Block& s = file.block("resource", {"google_project_service", api_label(api.service)});
    s.set("project", hcl::ref("var.project_id"));
    s.set("service", hcl::str(std::string(api.service)));
    s.set("disable_on_destroy", hcl::boolean(false));
  }
  return file;
}

void variable(Body& file, const std::string& name, const std::string& description, const std::string& value) {
  Block& v = file.block("variable", {name});
  v.set("description", hcl::str(description));
  v.set("type", hcl::ref("string"));
  v.set("default", hcl::str(value));
}

Body variables_tf(const Gcp& gcp) {
  Body file;
  variable(file, "project_id", "Google Cloud project that holds the cluster, the buckets and the service account.",
           gcp.project);
  variable(file, "region", gcp.zone.empty() ? "Region of the (regional) cluster and its node pools."
                                            : "Region of the provider's regional resources.",
           gcp.region);
  if (!gcp.zone.empty()) variable(file, "zone", "Zone of the (zonal) cluster and its node pools.", gcp.zone);
  return file;
}


/// Whether a resource names the project's number, which `data.google_project.this` reads.
bool needs_project_number(const System& sys) { return any_autoscaled(sys); }

Body providers_tf(const System& sys) {
  Body file;
  Block& p = file.block("provider", {"google"});
  p.set("project", hcl::ref("var.project_id"));
  p.set("region", hcl::ref("var.region"));
  if (needs_project_number(sys)) {
    file.comment("The project's number, which the metrics adapter's Workload Identity principal holds.");
    depends_on_apis(file.block("data", {"google_project", "this"}), {"cloudresourcemanager.googleapis.com"});
  }
  return file;
}

/// The nodes' own service account, with the cloud-platform scope GKE gives a custom account: what
/// the nodes may do is then their IAM roles alone.
void node_identity(Block& nc, const System& sys) {
  nc.set("service_account", node_account_email(sys));
  nc.set("oauth_scopes", hcl::list({hcl::str("https://www.googleapis.com/auth/cloud-platform")}));
}

/// The network (and subnet) the cluster joins but trainc does not create, looked up so that `plan`
/// stops with "not found" rather than the cluster's creation: the project's default network, which
/// an organisation policy (compute.skipDefaultNetworkCreation) may have left out, or the spec's
/// existing one.
void existing_network(Body& file, const System& sys) {
  const auto& net = sys.gcp->network;
  if (net && net->create) return;
  file.comment(net ? "The spec's existing network and subnet (create: false): trainc neither creates nor deletes them."
                   : "The project's default network, which projects under the organisation policy\n"
                     "compute.skipDefaultNetworkCreation do not have: add gcp.network to the spec for one trainc\n"
                     "creates.");
  Block& n = file.block("data", {"google_compute_network", net ? "cluster" : "default"});
  n.set("name", hcl::str(net ? net->name : "default"));
  depends_on_apis(n, {"compute.googleapis.com"});
  if (!net) return;
  Block& sub = file.block("data", {"google_compute_subnetwork", "cluster"});
  sub.set("name", hcl::str(net->subnet));
  sub.set("region", hcl::ref("var.region"));
  depends_on_apis(sub, {"compute.googleapis.com"});
}

Body cluster_tf(const System& sys) {
  Body file;
  existing_network(file, sys);
  Block& c = file.block("resource", {"google_container_cluster", cluster_label(sys)});
  c.set("name", hcl::str(sys.cluster.name.empty() ? sys.name : sys.cluster.name));
  c.set("location", hcl::ref(regional(sys) ? "var.region" : "var.zone"));
  c.comment("Node pools are separate resources (node_pools.tf); GKE still needs a first pool to create the cluster.");
  c.set("remove_default_node_pool", hcl::boolean(true));
  c.set("initial_node_count", hcl::number(1));
  c.comment("trainc's down path (terraform destroy) must be able to remove what its up path made.");
  c.set("deletion_protection", hcl::boolean(false));
  c.comment("The first pool's nodes run as the nodes' own account too (iam.tf).");
  node_identity(c.block("node_config"), sys);
  if (!sys.cluster.release_channel.empty())
    c.block("release_channel").set("channel", hcl::str(sys.cluster.release_channel));
  if (const auto& net = sys.gcp->network) {
    c.comment(net->create ? "VPC-native on the spec's network (network.tf): pods and Services take their IPs from the\n"
                            "subnet's secondary ranges."
                          : "VPC-native on the spec's existing network (looked up above): pods and Services take their\n"
                            "IPs from the subnet's secondary ranges, which must exist under these names.");
    c.set("network", net->create ? attr("google_compute_network", "cluster", "id")
                                 : attr("data.google_compute_network", "cluster", "name"));
    c.set("subnetwork", net->create ? attr("google_compute_subnetwork", "cluster", "id")
                                    : attr("data.google_compute_subnetwork", "cluster", "name"));
  } else {
    c.comment("The project's default network (looked up above).");
    c.set("network", attr("data.google_compute_network", "default", "name"));
  }
  constexpr std::string_view rdma_note =
      "GPUDirect RDMA pods attach extra NICs: multi-networking, which needs Dataplane V2 and a\n"
      "VPC-native cluster.";
  if (sys.gcp->network || sys.rdma_nics() > 0) {
    if (!sys.gcp->network) c.comment(rdma_note);
    c.set("networking_mode", hcl::str("VPC_NATIVE"));
    Block& ip = c.block("ip_allocation_policy");
    if (const auto& net = sys.gcp->network) {
      ip.set("cluster_secondary_range_name", hcl::str(net->pods_range()));
      ip.set("services_secondary_range_name", hcl::str(net->services_range()));
    }
  }
  if (sys.rdma_nics() > 0) {
    if (sys.gcp->network) c.comment(rdma_note);
    c.set("datapath_provider", hcl::str("ADVANCED_DATAPATH"));
    c.set("enable_multi_networking", hcl::boolean(true));
  }
  c.comment("Pods reach Google APIs as a Google service account, through their Kubernetes one.");
  c.block("workload_identity_config")
      .set("workload_pool", hcl::templ({hcl::ref("var.project_id"), hcl::str(".svc.id.goog")}));
  c.comment("Steps mount GCS buckets through the GCS FUSE CSI driver.");
  c.block("addons_config").block("gcs_fuse_csi_driver_config").set("enabled", hcl::boolean(true));
  std::vector<Value> after{hcl::ref("google_project_service.compute"), hcl::ref("google_project_service.container")};
  if (!sys.services.empty()) {
    c.comment("Managed Service for Prometheus collects the services' metrics through their PodMonitoring objects.");
    c.block("monitoring_config").block("managed_prometheus").set("enabled", hcl::boolean(true));
    after.push_back(hcl::ref("google_project_service.monitoring"));
  }
  c.comment("Nodes log and report metrics from the start: their account holds its role first.");
  after.push_back(hcl::ref("google_project_iam_member.nodes"));
  c.set("depends_on", hcl::list(std::move(after)));
  return file;
}

/// Kubernetes taint effects (NoSchedule) in the API's spelling (NO_SCHEDULE).
std::string taint_effect(std::string_view effect) {
  std::string out;
  for (char c : effect) {
    if (std::isupper(static_cast<unsigned char>(c)) && !out.empty()) out += '_';
    out += static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  }
  return out;
}

/// Autoscaling limits; a regional pool's plain min/max would count per zone, so it uses totals.
void autoscaling(Block& pool, const System& sys, int min, int max, bool any_location) {
  Block& a = pool.block("autoscaling");
  a.set(regional(sys) ? "total_min_node_count" : "min_node_count", hcl::number(min));
  a.set(regional(sys) ? "total_max_node_count" : "max_node_count", hcl::number(max));
  if (any_location) a.set("location_policy", hcl::str("ANY"));
}

/// How many nodes: flex-start pools start empty and grow on demand, a multi-host TPU slice is
/// exactly its hosts, others are fixed or autoscaled.
void pool_size(Block& np, const System& sys, const Pool& pool) {
  const Pool::NodeRange r = pool.node_range();
  if (r.autoscaled) {
    np.set("initial_node_count", hcl::number(r.min));
    autoscaling(np, sys, r.min, r.max, pool.provisioning == "flex-start" || pool.provisioning == "queued");
  } else {
    np.set("node_count", hcl::number(r.max));
  }
}

void reservation_affinity(Block& nc, const Pool& pool) {
  if (pool.provisioning == "reservation") {
    Block& r = nc.block("reservation_affinity");
    r.set("consume_reservation_type", hcl::str("SPECIFIC_RESERVATION"));
    r.set("key", hcl::str("compute.googleapis.com/reservation-name"));
    r.set("values", hcl::list({hcl::str(pool.reservation)}));
  } else if (pool.provisioning == "flex-start" || pool.provisioning == "queued") {
    nc.block("reservation_affinity").set("consume_reservation_type", hcl::str("NO_RESERVATION"));
  }
}

void node_config(Block& np, const System& sys, const Pool& pool) {
  Block& nc = np.block("node_config");
  nc.set("machine_type", hcl::str(pool.machine));
  if (pool.disk_gb > 0) nc.set("disk_size_gb", hcl::number(pool.disk_gb));
  if (pool.provisioning == "spot") nc.set("spot", hcl::boolean(true));
  if (pool.provisioning == "flex-start" || pool.provisioning == "queued") nc.set("flex_start", hcl::boolean(true));
  if (!pool.labels.empty()) {
    std::vector<std::pair<std::string, Value>> labels;
    for (const auto& [k, v] : pool.labels) labels.emplace_back(k, hcl::str(v));
    nc.set("labels", hcl::map(std::move(labels)));
  }
  if (pool.accelerator) {
    Block& g = nc.block("guest_accelerator");
    g.set("type", hcl::str(pool.accelerator->type));
    g.set("count", hcl::number(pool.accelerator->count));
    g.block("gpu_driver_installation_config").set("gpu_driver_version", hcl::str("LATEST"));
  }
  reservation_affinity(nc, pool);
  for (const auto& t : pool.taints) {
    Block& tb = nc.block("taint");
    tb.set("key", hcl::str(t.key));
    tb.set("value", hcl::str(t.value));
    tb.set("effect", hcl::str(taint_effect(t.effect)));
  }
  if (pool.rdma) nc.block("gvnic").set("enabled", hcl::boolean(true));
  node_identity(nc, sys);
  nc.block("workload_metadata_config").set("mode", hcl::str("GKE_METADATA"));
}

/// The cluster's own VPC network and its subnet, with the secondary ranges pods and Services
/// take their IPs from.
void cluster_network(Body& file, const Network& n) {
  file.comment("The cluster's VPC network; its one subnet is made below, in the region.");
  Block& net = file.block("resource", {"google_compute_network", "cluster"});
  net.set("name", hcl::str(n.name));
  net.set("auto_create_subnetworks", hcl::boolean(false));
  depends_on_apis(net, {"compute.googleapis.com"});
  Block& sub = file.block("resource", {"google_compute_subnetwork", "cluster"});
  sub.set("name", hcl::str(n.subnet));
  sub.set("network", attr("google_compute_network", "cluster", "id"));
  sub.set("region", hcl::ref("var.region"));
  sub.comment("Nodes' addresses.");
  sub.set("ip_cidr_range", hcl::str(n.cidr));
  for (const auto& [range, cidr] : {std::pair{n.pods_range(), n.pods}, std::pair{n.services_range(), n.services}}) {
    Block& r = sub.block("secondary_ip_range");
    r.set("range_name", hcl::str(range));
    r.set("ip_cidr_range", hcl::str(cidr));
  }
}

/// The second gVNIC NIC's VPC (eth1 of RDMA nodes, upstream's A4 layout): one subnet, and a rule
/// that lets the nodes reach each other on it, since a new VPC admits nothing.
void gvnic_network(Body& file, const System& sys, const RdmaLayout& r) {
  file.comment("RDMA nodes' second gVNIC NIC (eth1; pods name it " + r.gvnic_network +
               "): a regular VPC, since the RDMA one\ntakes RDMA NICs only.");
  Block& net = file.block("resource", {"google_compute_network", "gvnic"});
  net.set("name", hcl::str(k8s::gvnic_vpc(sys)));
  net.set("auto_create_subnetworks", hcl::boolean(false));
  net.set("mtu", hcl::number(r.gvnic_mtu));
  depends_on_apis(net, {"compute.googleapis.com"});
  Block& sub = file.block("resource", {"google_compute_subnetwork", "gvnic"});
  sub.set("name", hcl::str(k8s::gvnic_subnet(sys)));
  sub.set("network", attr("google_compute_network", "gvnic", "id"));
  sub.set("region", hcl::ref("var.region"));
  sub.set("ip_cidr_range", hcl::str(r.gvnic_range));
  file.comment("NCCL's bootstrap uses eth0 and eth1: the nodes' eth1 addresses reach each other.");
  Block& fw = file.block("resource", {"google_compute_firewall", "gvnic_internal"});
  fw.set("name", hcl::str(k8s::gvnic_firewall(sys)));
  fw.set("network", attr("google_compute_network", "gvnic", "name"));
  fw.set("source_ranges", hcl::list({hcl::str(r.gvnic_range)}));
  for (const char* protocol : {"tcp", "udp", "icmp"}) {
    Block& allow = fw.block("allow");
    allow.set("protocol", hcl::str(protocol));
    if (std::string_view(protocol) != "icmp") allow.set("ports", hcl::list({hcl::str("0-65535")}));
  }
}

/// The cluster's network (when trainc creates it), and for RDMA pools the second gVNIC NIC's VPC
/// and the RDMA VPC (the zone's RDMA network profile) with one subnet per RDMA NIC.
Body network_tf(const System& sys) {
  Body file;
  if (sys.gcp->network && sys.gcp->network->create) cluster_network(file, *sys.gcp->network);
  if (sys.rdma_nics() == 0) return file;
  const RdmaLayout& r = catalog().rdma();
  gvnic_network(file, sys, r);
  Block& net = file.block("resource", {"google_compute_network", "rdma"});
  net.set("name", hcl::str(k8s::rdma_vpc(sys)));
  net.set("auto_create_subnetworks", hcl::boolean(false));
  net.set("mtu", hcl::number(r.mtu));
  net.set("routing_mode", hcl::str("REGIONAL"));
  net.comment("RDMA NICs only attach to a VPC made with the zone's RDMA network profile.");
  net.set("network_profile", hcl::templ({hcl::str("https://www.googleapis.com/compute/beta/projects/"),
                                         hcl::ref("var.project_id"), hcl::str("/global/networkProfiles/"),
                                         hcl::ref("var.zone"), hcl::str("-" + r.network_profile)}));
  depends_on_apis(net, {"compute.googleapis.com"});
  for (int nic = 0; nic < sys.rdma_nics(); ++nic) {
    Block& sub = file.block("resource", {"google_compute_subnetwork", fmt::format("rdma_{}", nic)});
    sub.set("name", hcl::str(k8s::rdma_subnet(sys, nic)));
    sub.set("network", attr("google_compute_network", "rdma", "id"));
    sub.set("region", hcl::ref("var.region"));
    sub.set("ip_cidr_range", hcl::str(r.subnet_cidr(nic)));
  }
  return file;
}

/// The second gVNIC NIC (eth1), then one extra node NIC per GPU on the RDMA VPC's subnets (the
/// pods' rdma-N networks).
void rdma_network_config(Block& np, const Pool& pool) {
  Block& nc = np.block("network_config");
  Block& gvnic = nc.block("additional_node_network_configs");
  gvnic.set("network", attr("google_compute_network", "gvnic", "name"));
  gvnic.set("subnetwork", attr("google_compute_subnetwork", "gvnic", "name"));
  for (int nic = 0; nic < (pool.accelerator ? pool.accelerator->count : 0); ++nic) {
    Block& extra = nc.block("additional_node_network_configs");
    extra.set("network", attr("google_compute_network", "rdma", "name"));
    extra.set("subnetwork", attr("google_compute_subnetwork", fmt::format("rdma_{}", nic), "name"));
  }
}

/// One GKE node pool named `name`: the pool itself, or one slice of a multislice pool.
void node_pool(Body& file, const System& sys, const Pool& pool, const std::string& name, int slice) {
  Block& np = file.block("resource", {"google_container_node_pool", hcl::identifier(name)});
  np.set("name", hcl::str(name));
  np.set("cluster", cluster_attr(sys, "id"));
  np.set("location", cluster_attr(sys, "location"));
  pool_size(np, sys, pool);
  if (pool.tpu && pool.tpu->hosts > 1) {
    if (pool.tpu->slices > 1)
      np.comment(fmt::format("Slice {} of pool '{}' ({} slices for multislice jobs): {} VMs wired as a {} topology.",
                             slice, pool.name, pool.tpu->slices, pool.tpu->hosts, pool.tpu->topology));
    else
      np.comment(fmt::format("One multi-host TPU slice: {} VMs wired as a {} topology.", pool.tpu->hosts,
                             pool.tpu->topology));
    Block& pp = np.block("placement_policy");
    pp.set("type", hcl::str("COMPACT"));
    pp.set("tpu_topology", hcl::str(pool.tpu->topology));
  }
  if (pool.provisioning == "flex-start" || pool.provisioning == "queued") {
    np.comment("GKE's flex-start guide turns auto-repair off: a repair would recreate a node under a running job.");
    np.block("management").set("auto_repair", hcl::boolean(false));
  }
  if (pool.provisioning == "queued") {
    np.comment("Queued provisioning: GKE makes the nodes of a ProvisioningRequest (Kueue's, per step) all at once.");
    np.block("queued_provisioning").set("enabled", hcl::boolean(true));
  }
  if (pool.rdma) rdma_network_config(np, pool);
  node_config(np, sys, pool);
}

Body node_pools_tf(const System& sys) {
  Body file;
  for (const Pool& pool : sys.gke_pools()) {
    const auto names = pool.node_pools();
    for (size_t i = 0; i < names.size(); ++i) node_pool(file, sys, pool, names[i], static_cast<int>(i));
  }
  return file;
}

Body storage_tf(const System& sys) {
  Body file;
  for (const Store* s : gcs_stores(sys)) {
    if (!s->create) continue;
    Block& b = file.block("resource", {"google_storage_bucket", hcl::identifier(s->name)});
    b.set("name", hcl::str(s->bucket));
    std::string location = s->location;
    if (location.empty()) {
      location = sys.gcp->region;
      std::transform(location.begin(), location.end(), location.begin(), [](unsigned char c) { return std::toupper(c); });
    }
    b.set("location", hcl::str(location));
    b.set("uniform_bucket_level_access", hcl::boolean(true));
    b.set("public_access_prevention", hcl::str("enforced"));
    b.comment("A bucket that still holds objects stops terraform destroy: data is never deleted as a side effect.");
    b.set("force_destroy", hcl::boolean(false));
    b.block("versioning").set("enabled", hcl::boolean(s->versioning));
    depends_on_apis(b, {"storage.googleapis.com"});
  }
  return file;
}

void output(Body& file, const std::string& name, const std::string& description, Value value) {
  Block& o = file.block("output", {name});
  o.set("description", hcl::str(description));
  o.set("value", std::move(value));
}

Body outputs_tf(const System& sys) {
  Body file;
  output(file, "cluster_name", "The GKE cluster.", cluster_attr(sys, "name"));
  output(file, "cluster_location", "The cluster's zone or region.", cluster_attr(sys, "location"));
  output(file, "get_credentials", "Points kubectl at the cluster.",
         hcl::templ({hcl::str("gcloud container clusters get-credentials "), cluster_attr(sys, "name"),
                     hcl::str(" --location "), cluster_attr(sys, "location"), hcl::str(" --project "),
                     hcl::ref("var.project_id")}));
  if (const auto& net = sys.gcp->network) {
    output(file, "network", "The cluster's VPC network.",
           net->create ? attr("google_compute_network", "cluster", "name") : hcl::str(net->name));
    output(file, "subnetwork", "The cluster's subnet, in the region.",
           net->create ? attr("google_compute_subnetwork", "cluster", "name") : hcl::str(net->subnet));
  }
  if (const auto& r = sys.gcp->registry)
    output(file, "registry", "Where built images are pushed: docker push <registry>/<image>:<tag>.",
           hcl::templ({registry_attr(sys, "location", r->location), hcl::str("-docker.pkg.dev/"),
                       hcl::ref("var.project_id"), hcl::str("/"),
                       registry_attr(sys, "repository_id", r->repository)}));
  std::vector<std::pair<std::string, Value>> buckets;
  for (const Store* s : gcs_stores(sys)) buckets.emplace_back(s->name, bucket_name(*s));
  if (!buckets.empty()) output(file, "bucket_names", "GCS bucket of each store.", hcl::map(std::move(buckets)));
  if (sys.identity)
    output(file, "gsa_email", "The Google service account the workload runs as.",
           attr("google_service_account", service_account_label(*sys.identity), "email"));
  std::vector<std::pair<std::string, Value>> services;
  for (const auto& [name, s] : sys.services)
    services.emplace_back(name, attr("google_service_account", service_account_label(s.identity), "email"));
  if (!services.empty())
    output(file, "service_gsa_emails", "The Google service account each service runs as.",
           hcl::map(std::move(services)));
  return file;
}

/// Extra header lines for node_pools.tf: what a regional cluster does to node counts.
std::string node_pools_note(const System& sys) {
  if (!regional(sys)) return "";
  return "The cluster is regional: each pool has nodes in every zone of the region, so node_count and\n"
         "initial_node_count count per zone, and a TPU slice or a specific reservation (both zonal)\n"
         "would need node_locations, which the spec cannot set yet.";
}

void add(OutputSink& out, const System& sys, const std::string& file, const Body& body, std::string_view what,
         std::string_view note = {}) {
  std::string header = fmt::format("{}\n{} of system '{}'", kGeneratedNotice, what, sys.name);
  if (!note.empty()) header += fmt::format("\n{}", note);
  out.add("terraform/" + file, hcl::format(body, header));
}

class TerraformEmitter final : public Emitter {
 public:
  std::string_view name() const override { return "terraform"; }
  void emit(const System& sys, const Planned&, OutputSink& out) const override {
    if (!sys.gcp) return;
    add(out, sys, "versions.tf", versions_tf(*sys.gcp),
        sys.gcp->state ? "Terraform and provider versions and the state backend" : "Terraform and provider versions");
    add(out, sys, "variables.tf", variables_tf(*sys.gcp), "Inputs (defaults from the spec)");
    add(out, sys, "providers.tf", providers_tf(sys), "The google provider");
    add(out, sys, "apis.tf", apis_tf(sys), "Google APIs",
        "Other systems in the project may use them too: destroy leaves them enabled.");
    const bool own_network = sys.gcp->network && sys.gcp->network->create;
    if (own_network || sys.rdma_nics() > 0)
      add(out, sys, "network.tf", network_tf(sys),
          !own_network           ? "The GPUDirect RDMA networks (the second gVNIC NIC's and the RDMA VPC)"
          : sys.rdma_nics() == 0 ? "The cluster's VPC network"
                                 : "The cluster's VPC network and the GPUDirect RDMA networks");
    add(out, sys, "cluster.tf", cluster_tf(sys), "The GKE cluster");
    if (!sys.pools.empty()) add(out, sys, "node_pools.tf", node_pools_tf(sys), "Node pools", node_pools_note(sys));
    if (creates_registry(sys))
      add(out, sys, "registry.tf", registry_tf(sys), "The Artifact Registry repository of built images");
    Body storage = storage_tf(sys);
    if (!storage.items().empty()) add(out, sys, "storage.tf", storage, "GCS buckets");
    add(out, sys, "iam.tf", iam_tf(sys),
        sys.identities().empty() ? "The nodes' service account and its roles"
        : any_autoscaled(sys)    ? "Node and workload service accounts, bucket roles and the metrics adapter's role"
                                 : "Node and workload service accounts and bucket roles");
    add(out, sys, "outputs.tf", outputs_tf(sys), "Outputs");
  }
};

}  // namespace

std::vector<GcpApi> gcp_apis(const System& sys) {
  if (!sys.gcp) return {};
  std::vector<GcpApi> out{
      {"compute.googleapis.com", "VPC networks and the nodes' VMs."},
      {"container.googleapis.com", "The GKE cluster and its node pools."},
      {"iam.googleapis.com", "The nodes' and the workloads' Google service accounts."},
  };
  const bool github = sys.ci && sys.ci->github;
  if (!sys.identities().empty() || github)
    out.push_back({"iamcredentials.googleapis.com",
                   github ? "Workload Identity: pods, and the GitHub workflow, get tokens of a Google service account "
                            "through it."
                          : "Workload Identity: pods get tokens of their Google service account through it."});
  if (github)
    out.push_back({"sts.googleapis.com", "Workload Identity Federation exchanges the GitHub workflow's token here."});
  if (!gcs_stores(sys).empty() || sys.gcp->state)
    out.push_back({"storage.googleapis.com", sys.gcp->state && gcs_stores(sys).empty()
                                                 ? "Terraform's state bucket."
                                                 : "The GCS buckets steps mount (and Terraform's state, if remote)."});
  if (sys.gcp && sys.gcp->registry)
    out.push_back({"artifactregistry.googleapis.com", "The Docker repository built images are pushed to and pulled from."});
  if (!sys.services.empty())
    out.push_back({"monitoring.googleapis.com",
                   "Managed Service for Prometheus stores the services' metrics; their autoscalers read them."});
  out.push_back({"cloudresourcemanager.googleapis.com",
                 needs_project_number(sys) ? "The project's IAM policy (the nodes' role) and its number, which IAM members "
                                             "name."
                                           : "The project's IAM policy, which holds the nodes' role."});
  if (sys.ci && sys.ci->cloudbuild) out.push_back({"cloudbuild.googleapis.com", "Cloud Build runs the CI pipelines."});
  std::sort(out.begin(), out.end(), [](const GcpApi& a, const GcpApi& b) { return a.service < b.service; });
  return out;
}

std::unique_ptr<Emitter> new_terraform_emitter() { return std::make_unique<TerraformEmitter>(); }

}  // namespace trainc
