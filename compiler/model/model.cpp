#include "model/model.h"

#include <algorithm>
#include <filesystem>
#include <limits>

#include <fmt/format.h>

#include "base/overloaded.h"
#include "base/units.h"
#include "model/catalog.h"

namespace trainc {

const Pool* System::pool(const std::string& name) const {
  auto it = pools.find(name);
  return it == pools.end() ? nullptr : &it->second;
}

std::vector<std::string> Pool::node_pools() const {
  if (!tpu || tpu->slices <= 1) return {name};
  std::vector<std::string> out;
  for (int i = 0; i < tpu->slices; ++i) out.push_back(name + "-" + std::to_string(i));
  return out;
}

const Store* System::store(const std::string& name) const {
  auto it = stores.find(name);
  return it == stores.end() ? nullptr : &it->second;
}

SecurityNeed security_need(const Pool* pool, bool host_network) {
  if (pool && pool->rdma)
    return {PodSecurityLevel::kPrivileged,
            fmt::format("mount the host's NVIDIA driver and gIB NCCL plugin folders (hostPath volumes) on RDMA pool '{}', "
                        "as GKE's A4 and A3 Ultra setup requires",
                        pool->name)};
  if (host_network)
    return {PodSecurityLevel::kPrivileged,
            "use the host network between TPU slices (hostNetwork), as GKE's multislice setup runs them"};
  if (pool && pool->tpu)
    return {PodSecurityLevel::kBaseline,
            fmt::format("open the TPU devices of pool '{}' (/dev/vfio), which GKE's documented TPU setups do as root; "
                        "non-root access is not known to work",
                        pool->name)};
  return {};
}

SecurityNeed security_need(const System& sys, const ComputeCluster& c) {
  SecurityNeed need;
  auto consider = [&](const PodGroup& g) {
    if (SecurityNeed n = security_need(sys.pool(g.pool), false); n.level > need.level) need = n;
  };
  if (const Ray* r = c.as<Ray>()) consider(r->head);
  if (const Dask* d = c.as<Dask>()) consider(d->scheduler);
  for (const auto& g : c.workers) consider(g);
  return need;
}

std::string_view level_name(PodSecurityLevel level) {
  switch (level) {
    case PodSecurityLevel::kRestricted: return "restricted";
    case PodSecurityLevel::kBaseline: return "baseline";
    case PodSecurityLevel::kPrivileged: return "privileged";
  }
  return "restricted";
}

std::string Step::kind() const {
  return std::visit([](const auto& k) { return std::string(k.kName); }, run);
}

bool Step::uses_trainrt() const {
  return match(
      run, [](const Torchrun&) { return false; }, [](const Command&) { return false; },
      [](const Datagen&) { return true; }, [](const XGBoost&) { return true; });
}

int rendezvous_port(const StepKind& kind) {
  // trainrt's XGBoost tracker and any user launcher meet on torchrun's default port.
  return match(
      kind, [](const Torchrun& t) { return t.port; }, [](const Command&) { return 29500; },
      [](const Datagen&) { return 29500; }, [](const XGBoost&) { return 29500; });
}

const ComputeCluster* System::compute_cluster(const std::string& name) const {
  auto it = clusters.find(name);
  return it == clusters.end() ? nullptr : &it->second;
}

int System::rdma_nics() const {
  int n = 0;
  for (const auto& [_, p] : pools)
    if (p.rdma && p.accelerator) n = std::max(n, p.accelerator->count);
  return n;
}

std::string ComputeCluster::kind() const {
  return std::visit([](const auto& e) { return std::string(e.kName); }, engine);
}

std::string Gcp::image_path(const std::string& name) const {
  return registry ? registry->host() + "/" + project + "/" + registry->repository + "/" + name : "";
}

std::string Identity::display_name(const std::string& system) const {
  return of.empty() ? fmt::format("trainc workload identity of {}", system)
                    : fmt::format("trainc identity of service {} of {}", of, system);
}

double Resources::requested(const std::string& key) const {
  auto it = requests.find(key);
  return it == requests.end() ? 0.0 : parse_quantity(it->second).value_or(0);
}

Pool::NodeRange Pool::node_range() const {
  const bool multi_host = tpu && tpu->hosts > 1;
  if (provisioning == "flex-start") return {0, multi_host ? tpu->hosts : max_nodes(), true};
  if (multi_host) return {tpu->hosts, tpu->hosts, false};
  if (autoscaling) return {autoscaling->first, autoscaling->second, true};
  return {nodes, nodes, false};
}

PoolCapacity capacity(const Pool& pool) {
  const long long nodes = static_cast<long long>(pool.node_range().max) * (pool.tpu ? pool.tpu->slices : 1);
  PoolCapacity c;
  c.cpu = pool.allocatable_cpu * static_cast<double>(nodes);
  c.memory = pool.allocatable_memory * static_cast<double>(nodes);
  if (pool.accelerator) c.gpus = static_cast<long long>(pool.accelerator->count) * nodes;
  if (pool.tpu) c.tpu_chips = static_cast<long long>(pool.tpu->chips_per_host) * nodes;
  return c;
}

PoolCapacity capacity_left(const System& sys, const Pool& pool, const PodGroup* except) {
  PoolCapacity c = capacity(pool);
  auto take = [&](const Resources& r, int gpus, long long pods, const Sidecar* sidecar) {
    const double cpu = r.requested("cpu") + (sidecar ? sidecar->cores : 0);
    const double memory = r.requested("memory") + (sidecar ? sidecar->bytes : 0);
    c.cpu = std::max(0.0, c.cpu - static_cast<double>(pods) * cpu);
    c.memory = std::max(0.0, c.memory - static_cast<double>(pods) * memory);
    c.gpus = std::max(0LL, c.gpus - pods * gpus);
  };
  for (const auto& [_, s] : sys.services)
    if (s.pool == pool.name) take(s.resources, s.gpus, s.max, sys.istio ? &catalog().istio_proxy() : nullptr);
  for (const auto& entry : sys.clusters) {
    const ComputeCluster& cl = entry.second;  // a lambda may not capture a structured binding (clang 14)
    auto group = [&](const PodGroup& g) {
      if (g.pool == pool.name && &g != except)
        take(g.resources, g.gpus, g.max, cl.mounts.empty() ? nullptr : &catalog().gcsfuse_sidecar());
    };
    match(
        cl.engine, [&](const Ray& r) { group(r.head); }, [&](const Dask& d) { group(d.scheduler); });
    for (const auto& g : cl.workers) group(g);
  }
  return c;
}

PoolCapacity queue_capacity(const System& sys, const Pool& pool) { return capacity_left(sys, pool); }

std::optional<int> group_capacity(const System& sys, const ComputeCluster& c, const PodGroup& g) {
  if (sys.pools.empty()) return std::nullopt;
  const Sidecar* fuse = c.mounts.empty() ? nullptr : &catalog().gcsfuse_sidecar();
  const double cpu = g.resources.requested("cpu") + (fuse ? fuse->cores : 0);
  const double memory = g.resources.requested("memory") + (fuse ? fuse->bytes : 0);
  long long most = 0;
  for (const auto& [name, pool] : sys.pools) {
    if (!g.pool.empty() && name != g.pool) continue;
    // Whole pods per node, then as many nodes as the pool grows to; a pod that asks for nothing takes a node.
    long long per_node = std::numeric_limits<int>::max();
    if (g.gpus > 0) per_node = pool.accelerator ? pool.accelerator->count / g.gpus : 0;
    if (cpu > 0) per_node = std::min(per_node, static_cast<long long>(pool.allocatable_cpu / cpu + 1e-9));
    if (memory > 0) per_node = std::min(per_node, static_cast<long long>(pool.allocatable_memory / memory));
    if (per_node == std::numeric_limits<int>::max()) per_node = 1;
    long long n = per_node * pool.max_nodes();
    // Within what the pool's other long-lived pods leave.
    const PoolCapacity left = capacity_left(sys, pool, &g);
    if (g.gpus > 0) n = std::min(n, left.gpus / g.gpus);
    if (cpu > 0) n = std::min(n, static_cast<long long>(left.cpu / cpu + 1e-9));
    if (memory > 0) n = std::min(n, static_cast<long long>(left.memory / memory));
    most += n;
  }
  return static_cast<int>(std::min<long long>(most, std::numeric_limits<int>::max()));
}

bool ComputeCluster::head_uses_api() const {
  return as<Ray>() && std::any_of(workers.begin(), workers.end(), [](const PodGroup& g) { return g.autoscaled(); });
}

std::string System::pod_service_account() const { return identity ? identity->ksa : service_account; }

}  // namespace trainc

namespace trainc {

std::vector<const StoreLoc*> store_locs(const StepKind& kind) {
  return match(
      kind, [](const Torchrun&) { return std::vector<const StoreLoc*>{}; },
      [](const Command&) { return std::vector<const StoreLoc*>{}; },
      [](const Datagen& d) { return std::vector<const StoreLoc*>{&d.to}; },
      [](const XGBoost& x) { return std::vector<const StoreLoc*>{&x.from, &x.to}; });
}

}  // namespace trainc

namespace trainc {

std::vector<ServerPort> server_ports(const ServerKind& kind) {
  return match(kind, [](const Triton&) {
    return std::vector<ServerPort>{{"http", 8000}, {"grpc", 8001}, {"metrics", 8002}};
  });
}

std::string Service::kind() const {
  return std::visit([](const auto& k) { return std::string(k.kName); }, server);
}

std::vector<const Identity*> System::identities() const {
  std::vector<const Identity*> out;
  if (!gcp) return out;
  if (identity) out.push_back(&*identity);
  for (const auto& [_, s] : services) out.push_back(&s.identity);
  return out;
}

bool System::uses_gateway() const {
  return std::any_of(services.begin(), services.end(), [](const auto& s) { return s.second.expose.gateway; });
}

}  // namespace trainc
