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

namespace trainc {
namespace {

using hcl::Block;
using hcl::Body;
using hcl::Value;

/// The google provider version whose schema the oracle (and so trainc's output) is checked against.
constexpr std::string_view kProviderVersion = "6.50.0";

std::string cluster_label(const System& sys) {
  return hcl::identifier(sys.cluster.name.empty() ? sys.name : sys.cluster.name);
}

/// `TYPE.LABEL.ATTR` as a reference.
Value attr(std::string_view type, const std::string& label, std::string_view attribute) {
  return hcl::ref(fmt::format("{}.{}.{}", type, label, attribute));
}

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

/// The bucket's name: the created bucket's attribute, or the literal name of an existing bucket.
Value bucket_name(const Store& store) {
  return store.create ? attr("google_storage_bucket", hcl::identifier(store.name), "name") : hcl::str(store.bucket);
}

std::string service_account_label(const Identity& id) { return hcl::identifier(id.gsa); }

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

/// The google_project_service of an API: its name's first part (container.googleapis.com -> container).
std::string api_label(std::string_view service) { return hcl::identifier(service.substr(0, service.find('.'))); }

/// `depends_on` the given APIs' google_project_service resources: creating a resource through an
/// API that is still off fails.
void depends_on_apis(Block& b, std::initializer_list<std::string_view> services) {
  std::vector<Value> refs;
  for (std::string_view s : services) refs.push_back(hcl::ref("google_project_service." + api_label(s)));
  b.set("depends_on", hcl::list(std::move(refs)));
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

bool any_autoscaled(const System& sys) {
  return std::any_of(sys.services.begin(), sys.services.end(), [](const auto& s) { return s.second.autoscaled(); });
}

/// Whether trainc creates the Artifact Registry repository (and grants the nodes read on it).
bool creates_registry(const System& sys) { return sys.gcp->registry && sys.gcp->registry->create; }

/// Whether a resource names the project's number, which `data.google_project.this` reads.
bool needs_project_number(const System& sys) { return any_autoscaled(sys) || creates_registry(sys); }

Body providers_tf(const System& sys) {
  Body file;
  Block& p = file.block("provider", {"google"});
  p.set("project", hcl::ref("var.project_id"));
  p.set("region", hcl::ref("var.region"));
  if (needs_project_number(sys)) {
    file.comment("The project's number, which Workload Identity principals and the Compute Engine default\n"
                 "service account's email hold.");
    depends_on_apis(file.block("data", {"google_project", "this"}), {"cloudresourcemanager.googleapis.com"});
  }
  return file;
}

Body cluster_tf(const System& sys) {
  Body file;
  Block& c = file.block("resource", {"google_container_cluster", cluster_label(sys)});
  c.set("name", hcl::str(sys.cluster.name.empty() ? sys.name : sys.cluster.name));
  c.set("location", hcl::ref(regional(sys) ? "var.region" : "var.zone"));
  c.comment("Node pools are separate resources (node_pools.tf); GKE still needs a first pool to create the cluster.");
  c.set("remove_default_node_pool", hcl::boolean(true));
  c.set("initial_node_count", hcl::number(1));
  c.comment("trainc's down path (terraform destroy) must be able to remove what its up path made.");
  c.set("deletion_protection", hcl::boolean(false));
  if (!sys.cluster.release_channel.empty())
    c.block("release_channel").set("channel", hcl::str(sys.cluster.release_channel));
  if (const auto& net = sys.gcp->network) {
    c.comment(net->create ? "VPC-native on the spec's network (network.tf): pods and Services take their IPs from the\n"
                            "subnet's secondary ranges."
                          : "VPC-native on the spec's existing network: pods and Services take their IPs from the\n"
                            "subnet's secondary ranges, which must exist under these names.");
    c.set("network", net->create ? attr("google_compute_network", "cluster", "id") : hcl::str(net->name));
    c.set("subnetwork", net->create ? attr("google_compute_subnetwork", "cluster", "id") : hcl::str(net->subnet));
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
  if (!sys.services.empty()) {
    c.comment("Managed Service for Prometheus collects the services' metrics through their PodMonitoring objects.");
    c.block("monitoring_config").block("managed_prometheus").set("enabled", hcl::boolean(true));
    depends_on_apis(c, {"compute.googleapis.com", "container.googleapis.com", "monitoring.googleapis.com"});
  } else {
    depends_on_apis(c, {"compute.googleapis.com", "container.googleapis.com"});
  }
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
    autoscaling(np, sys, r.min, r.max, pool.provisioning == "flex-start");
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
  } else if (pool.provisioning == "flex-start") {
    nc.block("reservation_affinity").set("consume_reservation_type", hcl::str("NO_RESERVATION"));
  }
}

void node_config(Block& np, const Pool& pool) {
  Block& nc = np.block("node_config");
  nc.set("machine_type", hcl::str(pool.machine));
  if (pool.disk_gb > 0) nc.set("disk_size_gb", hcl::number(pool.disk_gb));
  if (pool.provisioning == "spot") nc.set("spot", hcl::boolean(true));
  if (pool.provisioning == "flex-start") nc.set("flex_start", hcl::boolean(true));
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

/// The cluster's network (when trainc creates it) and the RDMA VPC (the zone's RDMA network
/// profile) with one subnet per RDMA NIC.
Body network_tf(const System& sys) {
  Body file;
  if (sys.gcp->network && sys.gcp->network->create) cluster_network(file, *sys.gcp->network);
  if (sys.rdma_nics() == 0) return file;
  const RdmaLayout& r = catalog().rdma();
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

/// One extra node NIC per GPU on the RDMA VPC's subnets (the pods' rdma-N networks).
void rdma_network_config(Block& np, const Pool& pool) {
  Block& nc = np.block("network_config");
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
  if (pool.provisioning == "flex-start") {
    np.comment("GKE's flex-start guide turns auto-repair off: a repair would recreate a node under a running job.");
    np.block("management").set("auto_repair", hcl::boolean(false));
  }
  if (pool.rdma) rdma_network_config(np, pool);
  node_config(np, pool);
}

Body node_pools_tf(const System& sys) {
  Body file;
  for (const auto& [_, pool] : sys.pools) {
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

Value gsa_member(const Identity& id) {
  return hcl::templ({hcl::str("serviceAccount:"), attr("google_service_account", service_account_label(id), "email")});
}

/// The last part of a role, lower-cased: roles/storage.objectViewer -> objectviewer.
std::string role_short_name(const std::string& role) {
  std::string out = role.substr(role.find_last_of("./") + 1);
  std::transform(out.begin(), out.end(), out.begin(), [](unsigned char c) { return std::tolower(c); });
  return out;
}

/// The label of a grant's google_storage_bucket_iam_member. The system identity's is the store's
/// name, as before services existed, so existing state keeps its addresses; a service's adds the
/// service and the role, since a service holds two roles on one bucket. Labels joined from names
/// can still meet (store a-b with service c, store a with service b-c): the later one gets a suffix.
std::string grant_label(const Identity& id, const BucketGrant& grant, std::set<std::string>& taken) {
  const std::string label = id.of.empty() ? hcl::identifier(grant.store)
                                          : hcl::identifier(fmt::format("{}_{}_{}", grant.store, id.of,
                                                                        role_short_name(grant.role)));
  std::string out = label;
  for (int n = 2; !taken.insert(out).second; ++n) out = fmt::format("{}_{}", label, n);
  return out;
}

void bucket_grant(Body& file, const System& sys, const Identity& id, const BucketGrant& grant,
                  std::set<std::string>& taken) {
  Block& m = file.block("resource", {"google_storage_bucket_iam_member", grant_label(id, grant, taken)});
  m.set("bucket", bucket_name(sys.stores.at(grant.store)));
  m.set("role", hcl::str(grant.role));
  m.set("member", gsa_member(id));
}

void depends_on_pool(Block& b, const System& sys) {
  b.comment("The identity pool PROJECT.svc.id.goog exists once a cluster that uses it does.");
  b.set("depends_on", hcl::list({hcl::ref("google_container_cluster." + cluster_label(sys))}));
}

void workload_identity_binding(Body& file, const System& sys, const Identity& id) {
  file.comment(fmt::format("The Kubernetes service account {}/{} may act as the Google service account.", sys.ns, id.ksa));
  const std::string label = id.of.empty() ? "workload_identity" : "workload_identity_" + hcl::identifier(id.of);
  Block& b = file.block("resource", {"google_service_account_iam_member", label});
  b.set("service_account_id", attr("google_service_account", service_account_label(id), "name"));
  b.set("role", hcl::str("roles/iam.workloadIdentityUser"));
  b.set("member", hcl::templ({hcl::str("serviceAccount:"), hcl::ref("var.project_id"),
                              hcl::str(fmt::format(".svc.id.goog[{}/{}]", sys.ns, id.ksa))}));
  depends_on_pool(b, sys);
}

/// The Custom Metrics Stackdriver Adapter's own Kubernetes service account, as a Workload
/// Identity Federation principal: it gets a role directly, with no Google service account.
void metrics_adapter_role(Body& file, const System& sys) {
  const Manifest& adapter = catalog().metrics_adapter();
  file.comment("The Custom Metrics Stackdriver Adapter reads the services' queue metric from Cloud Monitoring for\n"
               "their HorizontalPodAutoscalers; read-only, the only project-level role trainc grants.");
  Block& m = file.block("resource", {"google_project_iam_member", "metrics_adapter"});
  m.set("project", hcl::ref("var.project_id"));
  m.set("role", hcl::str("roles/monitoring.viewer"));
  m.set("member", hcl::templ({hcl::str("principal://iam.googleapis.com/projects/"),
                              hcl::ref("data.google_project.this.number"),
                              hcl::str("/locations/global/workloadIdentityPools/"), hcl::ref("var.project_id"),
                              hcl::str(fmt::format(".svc.id.goog/subject/ns/{}/sa/{}", adapter.ns,
                                                   adapter.service_account))}));
  depends_on_pool(m, sys);
}

Body iam_tf(const System& sys) {
  Body file;
  std::set<std::string> grant_labels;
  for (const Identity* id : sys.identities()) {
    Block& sa = file.block("resource", {"google_service_account", service_account_label(*id)});
    sa.set("account_id", hcl::str(id->gsa));
    sa.set("display_name", hcl::str(id->display_name(sys.name)));
    depends_on_apis(sa, {"iam.googleapis.com"});
    if (!id->grants.empty())
      file.comment(id->of.empty() ? "Roles on each bucket, never on the project."
                                  : "Roles on the service's buckets only, never on the project.");
    for (const BucketGrant& g : id->grants) bucket_grant(file, sys, *id, g, grant_labels);
    workload_identity_binding(file, sys, *id);
  }
  if (any_autoscaled(sys)) metrics_adapter_role(file, sys);
  return file;
}

/// The repository's attribute, or what the spec says of an existing repository.
Value registry_attr(const System& sys, std::string_view attribute, const std::string& literal) {
  const Registry& r = *sys.gcp->registry;
  return r.create ? attr("google_artifact_registry_repository", hcl::identifier(r.repository), attribute)
                  : hcl::str(literal);
}

/// The Artifact Registry repository built images are pushed to, and the nodes' read on it alone.
Body registry_tf(const System& sys) {
  const Registry& r = *sys.gcp->registry;
  const std::string label = hcl::identifier(r.repository);
  Body file;
  Block& repo = file.block("resource", {"google_artifact_registry_repository", label});
  repo.set("project", hcl::ref("var.project_id"));
  repo.comment("Fixed, not var.region: the manifests name images by this location's host.");
  repo.set("location", hcl::str(r.location));
  repo.set("repository_id", hcl::str(r.repository));
  repo.set("format", hcl::str("DOCKER"));
  repo.set("description", hcl::str(fmt::format("Images of trainc system {}", sys.name)));
  depends_on_apis(repo, {"artifactregistry.googleapis.com"});
  file.comment("GKE nodes pull images as their service account, the Compute Engine default one (node_pools.tf\n"
               "names no other): it may read this repository, and no other.");
  Block& m = file.block("resource", {"google_artifact_registry_repository_iam_member", "node_reader"});
  m.set("project", attr("google_artifact_registry_repository", label, "project"));
  m.set("location", attr("google_artifact_registry_repository", label, "location"));
  m.set("repository", attr("google_artifact_registry_repository", label, "name"));
  m.set("role", hcl::str("roles/artifactregistry.reader"));
  m.set("member", hcl::templ({hcl::str("serviceAccount:"), hcl::ref("data.google_project.this.number"),
                              hcl::str("-compute@developer.gserviceaccount.com")}));
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
          !own_network           ? "The GPUDirect RDMA network"
          : sys.rdma_nics() == 0 ? "The cluster's VPC network"
                                 : "The cluster's VPC network and the GPUDirect RDMA network");
    add(out, sys, "cluster.tf", cluster_tf(sys), "The GKE cluster");
    if (!sys.pools.empty()) add(out, sys, "node_pools.tf", node_pools_tf(sys), "Node pools", node_pools_note(sys));
    if (creates_registry(sys))
      add(out, sys, "registry.tf", registry_tf(sys), "The Artifact Registry repository of built images");
    Body storage = storage_tf(sys);
    if (!storage.items().empty()) add(out, sys, "storage.tf", storage, "GCS buckets");
    if (!sys.identities().empty())
      add(out, sys, "iam.tf", iam_tf(sys),
          any_autoscaled(sys) ? "Workload identity, bucket roles and the metrics adapter's project role"
                              : "Workload identity and bucket roles");
    add(out, sys, "outputs.tf", outputs_tf(sys), "Outputs");
  }
};

}  // namespace

std::vector<GcpApi> gcp_apis(const System& sys) {
  if (!sys.gcp) return {};
  std::vector<GcpApi> out{
      {"compute.googleapis.com", "VPC networks and the nodes' VMs."},
      {"container.googleapis.com", "The GKE cluster and its node pools."},
      {"iam.googleapis.com", "The workloads' Google service accounts."},
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
  if (needs_project_number(sys))
    out.push_back({"cloudresourcemanager.googleapis.com", "Reads the project's number, which IAM members name."});
  if (sys.ci && sys.ci->cloudbuild) out.push_back({"cloudbuild.googleapis.com", "Cloud Build runs the CI pipelines."});
  std::sort(out.begin(), out.end(), [](const GcpApi& a, const GcpApi& b) { return a.service < b.service; });
  return out;
}

std::unique_ptr<Emitter> new_terraform_emitter() { return std::make_unique<TerraformEmitter>(); }

}  // namespace trainc
