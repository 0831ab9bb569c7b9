#include "model/catalog.h"

#include <algorithm>
#include <cstdio>

#include <stdexcept>

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include "base/embedded.h"
#include "base/yaml_tree.h"
#include "base/units.h"

namespace trainc {
namespace {

template <typename T>
T get(const YAML::Node& n, const char* key, const std::string& where) {
  if (!n[key]) throw std::runtime_error(fmt::format("catalog: {} lacks '{}'", where, key));
  return n[key].as<T>();
}

template <typename T>
T get_or(const YAML::Node& n, const char* key, T fallback) {
  return n[key] && !n[key].IsNull() ? n[key].as<T>() : fallback;
}

std::vector<ReserveTier> tiers(const YAML::Node& list, const char* bound) {
  std::vector<ReserveTier> out;
  for (const auto& t : list) out.push_back({get_or<double>(t, bound, 0), get<double>(t, "fraction", "a reserve tier")});
  return out;
}

/// Applies reserve tiers to `amount`: each tier reserves its fraction of the part inside it.
double reserved(const std::vector<ReserveTier>& tiers, double amount) {
  double total = 0, lower = 0;
  for (const auto& t : tiers) {
    double upper = t.up_to > 0 ? t.up_to : amount;
    if (amount > lower) total += (std::min(amount, upper) - lower) * t.fraction;
    lower = upper;
    if (amount <= upper) break;
  }
  return total;
}

MachineType base_row(const YAML::Node& m, const std::string& family, const std::string& source) {
  MachineType out;
  out.type = get<std::string>(m, "type", "a machine row");
  out.family = family;
  out.vcpus = get_or<int>(m, "vcpus", 0);
  out.memory_gib = get_or<double>(m, "memoryGiB", 0);
  out.shared_core = get_or<bool>(m, "sharedCore", false);
  out.source = source;
  return out;
}

/// A sidecar's requests, as written and as numbers; a quantity that does not parse is an error.
Sidecar sidecar(const YAML::Node& n, const std::string& where) {
  Sidecar s;
  s.cpu = get<std::string>(n, "cpu", where);
  s.memory = get<std::string>(n, "memory", where);
  const auto cores = parse_quantity(s.cpu), bytes = parse_quantity(s.memory);
  if (!cores || !bytes) throw std::runtime_error("catalog: " + where + ": cpu and memory must be Kubernetes quantities");
  s.cores = *cores;
  s.bytes = *bytes;
  s.pod_security = get_or<std::string>(n, "podSecurity", "restricted");
  if (s.pod_security != "restricted" && s.pod_security != "baseline" && s.pod_security != "privileged")
    throw std::runtime_error("catalog: " + where + ": podSecurity must be restricted, baseline or privileged");
  return s;
}

}  // namespace

std::string Catalog::system_namespace(const std::string& ns) const {
  for (const auto& prefix : system_ns_prefixes_)
    if (ns.starts_with(prefix))
      return fmt::format("namespaces starting with '{}' belong to the cluster (Kubernetes or GKE)", prefix);
  const std::vector<std::pair<std::string, std::string>> operators{
      {kuberay_.ns, "KubeRay's operator"},      {istio_base_.ns, "Istio's control plane"},
      {istiod_.ns, "Istio's control plane"},     {istio_gateway_.ns, "Istio's ingress gateway"},
      {metrics_adapter_.ns, "the metrics adapter"}, {jobset_.ns, "the JobSet controller"},
      {kueue_.ns, "Kueue's controller"}};
  for (const auto& [op_ns, what] : operators)
    if (ns == op_ns) return fmt::format("'{}' is where scripts/apply.sh installs {}", ns, what);
  return "";
}

const std::string& Catalog::server_image(const std::string& kind) const {
  auto it = server_images_.find(kind);
  if (it == server_images_.end()) throw std::runtime_error("catalog: no image for server kind '" + kind + "' under 'servers'");
  return it->second;
}

Catalog Catalog::parse(const std::string& yaml_text) {
  YAML::Node root = read_yaml_tree(yaml_text);
  Catalog c;
  auto add = [&](MachineType m) {
    std::string type = m.type;
    if (!c.machines_.emplace(type, std::move(m)).second)
      throw std::runtime_error("catalog: machine type listed twice: " + type);
  };
  const YAML::Node alloc = root["allocatable"];
  c.memory_tiers_ = tiers(alloc["memoryReserve"], "upToGiB");
  c.cpu_tiers_ = tiers(alloc["cpuReserve"], "upToCores");
  c.eviction_mib_ = get<double>(alloc, "evictionMemoryMiB", "allocatable");
  c.pods_per_node_ = get<int>(alloc, "podsPerNode", "allocatable");
  const YAML::Node ds = root["daemonSets"];
  {
    const Sidecar margin = sidecar(ds["margin"], "daemonSets.margin");
    c.margin_cores_ = margin.cores;
    c.margin_bytes_ = margin.bytes;
  }
  for (const auto& e : ds["entries"]) {
    const std::string name = get<std::string>(e, "namespace", "a daemonSets entry") + "/" + get<std::string>(e, "name", "a daemonSets entry");
    const Sidecar r = sidecar(e, "daemonSets " + name);
    c.daemonsets_.push_back({name, e["when"].as<std::vector<std::string>>(), r.cores, r.bytes});
  }
  for (const auto& e : root["systemPods"]["entries"]) {
    const std::string name = get<std::string>(e, "namespace", "a systemPods entry") + "/" + get<std::string>(e, "name", "a systemPods entry");
    const Sidecar r = sidecar(e, "systemPods " + name);
    SystemPod pod{name, get<int>(e, "replicas", "systemPods " + name), e["when"].as<std::vector<std::string>>(), r.cores, r.bytes};
    for (const auto& w : pod.when)
      if (w != "always" && w != "managedPrometheus" && w != "kuberay" && w != "istio" && w != "metricsAdapter" &&
          w != "jobset" && w != "kueue" && w != "dataplaneV2")
        throw std::runtime_error("catalog: systemPods " + name + ": unknown condition '" + w + "'");
    c.system_pods_.push_back(std::move(pod));
  }
  const YAML::Node defaults = root["podDefaults"];
  c.cpu_pod_ = sidecar(defaults["cpuPod"], "podDefaults.cpuPod");
  c.whole_node_slack_ = sidecar(defaults["wholeNodeSlack"], "podDefaults.wholeNodeSlack");
  c.pull_margin_seconds_ = get<int>(defaults, "pullMarginSeconds", "podDefaults");
  const YAML::Node fuse = root["sidecars"]["gcsfuse"];
  c.gcsfuse_ = sidecar(fuse, "sidecars.gcsfuse");
  c.gcsfuse_.ephemeral_storage = get_or<std::string>(fuse, "ephemeralStorage", "");
  const YAML::Node rdma = root["rdma"];
  const YAML::Node gib = rdma["gibInstaller"];
  c.rdma_ = {get<std::string>(rdma, "networkProfile", "rdma"), get<int>(rdma, "mtu", "rdma"),
             get<std::string>(rdma, "subnetRange", "rdma"), get<int>(rdma, "subnetPrefix", "rdma"),
             get<std::string>(gib, "image", "rdma.gibInstaller"), get<std::string>(gib, "armSuffix", "rdma.gibInstaller"),
             get<std::string>(gib, "pause", "rdma.gibInstaller"), get<std::string>(gib, "cpu", "rdma.gibInstaller"),
             get<std::string>(rdma["ncclEnv"], "script", "rdma.ncclEnv")};
  c.rdma_.gvnic_network = get<std::string>(rdma["gvnic"], "network", "rdma.gvnic");
  c.rdma_.gvnic_range = get<std::string>(rdma["gvnic"], "subnetRange", "rdma.gvnic");
  c.rdma_.gvnic_mtu = get<int>(rdma["gvnic"], "mtu", "rdma.gvnic");
  auto chart = [&](const char* key) -> Operator {
    const YAML::Node op = root["operators"][key];
    const std::string where = std::string("operators.") + key;
    return {get<std::string>(op, "chart", where), get<std::string>(op, "repo", where), get<std::string>(op, "version", where),
            get<std::string>(op, "release", where), get<std::string>(op, "namespace", where)};
  };
  c.kuberay_ = chart("kuberay");
  c.istio_base_ = chart("istioBase");
  c.istiod_ = chart("istiod");
  c.istio_gateway_ = chart("istioGateway");
  auto manifest = [&](const char* key) -> Manifest {
    const YAML::Node m = root["operators"][key];
    const std::string where = std::string("operators.") + key;
    return {get<std::string>(m, "manifest", where), get<std::string>(m, "namespace", where),
            get_or<std::string>(m, "serviceAccount", "")};
  };
  c.metrics_adapter_ = manifest("metricsAdapter");
  c.jobset_ = manifest("jobset");
  c.kueue_ = manifest("kueue");
  {
    const YAML::Node k = root["operators"]["kueue"];
    const YAML::Node rq = k["requeue"];
    c.kueue_config_ = {get<std::string>(k, "deployment", "operators.kueue"), get<std::string>(k, "configMap", "operators.kueue"),
                       get<std::string>(k, "configKey", "operators.kueue"), get<std::string>(k, "config", "operators.kueue"),
                       get<int>(rq, "backoffBaseSeconds", "operators.kueue.requeue"),
                       get<int>(rq, "backoffMaxSeconds", "operators.kueue.requeue")};
  }
  {
    const YAML::Node q = root["queuedProvisioning"];
    c.queued_provisioning_ = {get<std::string>(q, "className", "queuedProvisioning"),
                              get<std::string>(q, "nodeLabel", "queuedProvisioning"),
                              get<std::string>(q, "classDetail", "queuedProvisioning"),
                              get<std::string>(q, "taint", "queuedProvisioning"), get<std::string>(q, "source", "queuedProvisioning")};
  }
  c.megascale_port_ = get<int>(root["tpuMultislice"], "megascalePort", "tpuMultislice");
  for (const auto& prefix : root["systemNamespaces"]["prefixes"]) c.system_ns_prefixes_.push_back(prefix.as<std::string>());
  if (c.system_ns_prefixes_.empty()) throw std::runtime_error("catalog: systemNamespaces.prefixes is empty");
  const YAML::Node proxy = root["sidecars"]["istioProxy"];
  c.istio_proxy_ = sidecar(proxy, "sidecars.istioProxy");
  c.istio_init_ = sidecar(root["sidecars"]["istioInit"], "sidecars.istioInit");
  {
    const YAML::Node ci = root["ci"], a = ci["actions"];
    c.ci_ = {get<std::string>(a, "checkout", "ci.actions"), get<std::string>(a, "auth", "ci.actions"),
             get<std::string>(a, "setupGcloud", "ci.actions"), get<std::string>(a, "gkeCredentials", "ci.actions"),
             get<std::string>(a, "setupTerraform", "ci.actions"), get<std::string>(ci, "terraformVersion", "ci"),
             get<std::string>(ci, "cloudSdkImage", "ci"), get<std::string>(ci, "terraformImage", "ci"),
             get<std::string>(ci, "dockerImage", "ci"), get<std::string>(ci, "helmVersion", "ci")};
    for (const auto& j : ci["jobTimeoutMinutes"])
      c.ci_.job_minutes[j.first.as<std::string>()] = j.second.as<int>();
  }
  for (const auto& s : root["servers"]) {
    const std::string kind = s.first.as<std::string>();
    c.server_images_[kind] = get<std::string>(s.second, "image", "servers." + kind);
    if (const YAML::Node m = s.second["memory"])
      c.server_memory_[kind] = {get<double>(m, "gpuMemoryUtilization", "servers." + kind + ".memory"),
                                get<double>(m, "kvCacheFloorGiB", "servers." + kind + ".memory"),
                                get_or<std::vector<std::string>>(m, "unsupportedAccelerators", {})};
  }
  for (const auto& fam : root["gpuFamilies"]) {
    std::string id = get<std::string>(fam, "family", "a gpuFamilies row");
    for (const auto& m : fam["machines"]) {
      MachineType row = base_row(m, id, get_or<std::string>(fam, "source", ""));
      row.gpus = get<int>(m, "gpus", row.type);
      row.accelerator = get<std::string>(fam, "accelerator", id);
      row.arm = get_or<bool>(fam, "arm", false);
      row.rdma = get_or<bool>(fam, "rdma", false);
      row.gpu_memory_gib = get_or<double>(fam, "gpuMemoryGiB", 0);
      row.capacity = get_or<std::vector<std::string>>(fam, "capacity", {});
      row.capacity_source = get_or<std::string>(fam, "capacitySource", "");
      add(std::move(row));
    }
  }
  for (const auto& m : root["cpuMachines"]["machines"]) {
    MachineType row = base_row(m, "", get_or<std::string>(root["cpuMachines"], "source", ""));
    row.family = row.type.substr(0, row.type.find('-'));
    add(std::move(row));
  }
  for (const auto& gen : root["tpuGenerations"]) {
    std::string g = get<std::string>(gen, "generation", "a tpuGenerations row");
    for (const auto& m : gen["machines"]) {
      MachineType row = base_row(m, "tpu-" + g, get_or<std::string>(gen, "source", ""));
      row.tpu_generation = g;
      row.tpu_accelerator = get<std::string>(gen, "accelerator", g);
      row.tpu_dims = get<int>(gen, "dims", g);
      row.tpu_chips = get<int>(m, "chips", row.type);
      row.tpu_topologies = get<std::vector<std::string>>(m, "topologies", row.type);
      add(std::move(row));
    }
  }
  for (const auto& a : root["attachableGpus"]) {
    AttachableGpu gpu;
    gpu.accelerator = get<std::string>(a, "accelerator", "an attachableGpus row");
    gpu.machine_family = get<std::string>(a, "machineFamily", gpu.accelerator);
    gpu.memory_gib = get_or<double>(a, "gpuMemoryGiB", 0);
    for (const auto& cnt : a["counts"]) gpu.max_vcpus[get<int>(cnt, "gpus", gpu.accelerator)] = get<int>(cnt, "maxVcpus", gpu.accelerator);
    c.attachable_.push_back(std::move(gpu));
  }
  {
    const YAML::Node topo = root["topology"];
    for (const auto& l : topo["levels"])
      c.topology_.levels.push_back({get<std::string>(l, "name", "topology.levels"), get<std::string>(l, "label", "topology.levels")});
    if (c.topology_.levels.size() < 2 || c.topology_.levels.size() > 16 || c.topology_.levels.back().label != "kubernetes.io/hostname")
      throw std::runtime_error("catalog: topology.levels must list 2 to 16 levels, kubernetes.io/hostname last (Kueue's Topology)");
    c.topology_.machines = get<std::vector<std::string>>(topo, "machines", "topology");
    for (const auto& type : c.topology_.machines) {
      auto it = c.machines_.find(type);
      if (it == c.machines_.end()) throw std::runtime_error("catalog: topology.machines names unknown machine " + type);
      it->second.topology_labels = true;
    }
    c.topology_.default_level = get<std::string>(topo["default"], "level", "topology.default");
    c.topology_.default_required = get<bool>(topo["default"], "required", "topology.default");
    if (!c.topology_.level(c.topology_.default_level))
      throw std::runtime_error("catalog: topology.default.level is no level: " + c.topology_.default_level);
  }
  return c;
}

const TopologyLevel* TopologyModel::level(const std::string& name) const {
  for (const auto& l : levels)
    if (l.name == name) return &l;
  return nullptr;
}

std::vector<std::string> TopologyModel::placement_levels() const {
  std::vector<std::string> out;
  for (size_t i = 0; i + 1 < levels.size(); ++i) out.push_back(levels[i].name);
  return out;
}

const MachineType* Catalog::machine(const std::string& type) const {
  auto it = machines_.find(type);
  return it == machines_.end() ? nullptr : &it->second;
}

const ServerMemory* Catalog::server_memory(const std::string& kind) const {
  auto it = server_memory_.find(kind);
  return it == server_memory_.end() ? nullptr : &it->second;
}

double Catalog::gpu_memory_gib(const std::string& accelerator) const {
  if (const AttachableGpu* a = attachable(accelerator)) return a->memory_gib;
  for (const auto& [_, m] : machines_)
    if (m.accelerator == accelerator) return m.gpu_memory_gib;
  return 0;
}

const AttachableGpu* Catalog::attachable(const std::string& accelerator) const {
  for (const auto& a : attachable_)
    if (a.accelerator == accelerator) return &a;
  return nullptr;
}

std::vector<std::string> Catalog::machine_names() const {
  std::vector<std::string> out;
  for (const auto& [name, _] : machines_) out.push_back(name);
  return out;
}

double Catalog::allocatable_cpu(const MachineType& m) const { return m.vcpus - reserved(cpu_tiers_, m.vcpus); }

double Catalog::allocatable_memory(const MachineType& m) const {
  constexpr double GiB = 1024.0 * 1024 * 1024;
  return (m.memory_gib - reserved(memory_tiers_, m.memory_gib)) * GiB - eviction_mib_ * 1024 * 1024;
}

NodeReserve Catalog::node_reserve(const NodeConfig& c) const {
  auto holds = [&](const std::string& when) {
    if (when == "always" || when == "workloadIdentity" || when == "gcsfuse") return true;  // every trainc cluster
    if (when == "kubeProxy") return !c.dataplane_v2;
    if (when == "dataplaneV2") return c.dataplane_v2;
    if (when == "gpu") return c.gpu;
    if (when == "tpu") return c.tpu;
    if (when == "managedPrometheus") return c.managed_prometheus;
    if (when == "rdma") return c.rdma;
    throw std::runtime_error("catalog: daemonSets: unknown condition '" + when + "'");
  };
  NodeReserve r{margin_cores_, margin_bytes_, margin_cores_, margin_bytes_, {}};
  for (const auto& d : daemonsets_)
    if (std::all_of(d.when.begin(), d.when.end(), holds)) {
      r.cores += d.cores;
      r.bytes += d.bytes;
      r.daemonsets.push_back(d.name);
    }
  if (c.rdma) {  // trainc's own DaemonSet, as emit_k8s writes it
    r.cores += parse_quantity(rdma_.gib_cpu).value_or(0);
    r.daemonsets.push_back("gib-installer (trainc's)");
  }
  return r;
}

const Catalog& catalog() {
  static const Catalog c = [] {
    const auto* f = find_embedded("stdlib/catalog.yaml");
    if (!f) throw std::logic_error("stdlib/catalog.yaml is not embedded");
    return Catalog::parse(std::string(f->data));
  }();
  return c;
}

int topology_chips(const std::string& topology) {
  int product = 1;
  size_t start = 0;
  while (start <= topology.size()) {
    size_t x = topology.find('x', start);
    std::string part = topology.substr(start, x == std::string::npos ? std::string::npos : x - start);
    if (part.empty() || part.size() > 5 || part.find_first_not_of("0123456789") != std::string::npos) return 0;
    // No TPU slice has more than a few thousand chips: anything bigger is not a topology (and must
    // not overflow an int on its way to a diagnostic).
    product *= std::stoi(part);
    if (product <= 0 || product > (1 << 20)) return 0;
    if (x == std::string::npos) break;
    start = x + 1;
  }
  return product;
}

int topology_dims(const std::string& topology) {
  return static_cast<int>(std::count(topology.begin(), topology.end(), 'x')) + 1;
}

}  // namespace trainc

namespace trainc {

std::string RdmaLayout::subnet_cidr(int i) const {
  // a.b.c.d/p split into /subnet_prefix blocks: block i starts i * 2^(32 - subnet_prefix) further on.
  unsigned a = 0, b = 0, c = 0, d = 0, p = 0;
  if (std::sscanf(subnet_range.c_str(), "%u.%u.%u.%u/%u", &a, &b, &c, &d, &p) != 5 || subnet_prefix < static_cast<int>(p) ||
      subnet_prefix > 32 || i >= (1 << (subnet_prefix - p)))
    throw std::runtime_error("catalog: rdma subnet " + std::to_string(i) + " does not fit " + subnet_range);
  const uint32_t base = (a << 24) | (b << 16) | (c << 8) | d;
  const uint32_t start = base + static_cast<uint32_t>(i) * (1u << (32 - subnet_prefix));
  return std::to_string(start >> 24) + "." + std::to_string((start >> 16) & 255) + "." + std::to_string((start >> 8) & 255) +
         "." + std::to_string(start & 255) + "/" + std::to_string(subnet_prefix);
}

}  // namespace trainc
