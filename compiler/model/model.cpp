#include "model/model.h"

#include <algorithm>
#include <filesystem>
#include <limits>

#include <fmt/format.h>

#include "base/units.h"
#include "common/fnv.h"
#include "model/catalog.h"
#include "model/placement.h"

namespace trainc {

const Pool* System::pool(const std::string& name) const {
  auto it = pools.find(name);
  return it == pools.end() ? nullptr : &it->second;
}

std::string Rung::reservation_path() const {
  std::string out = project.empty() ? reservation : fmt::format("projects/{}/reservations/{}", project, reservation);
  if (!block.empty()) out += "/reservationBlocks/" + block;
  if (!sub_block.empty()) out += "/reservationSubBlocks/" + sub_block;
  return out;
}

std::vector<Pool> Pool::rung_pools() const {
  if (ladder.empty()) return {*this};
  std::vector<Pool> out;
  for (size_t i = 0; i < ladder.size(); ++i) {
    const Rung& r = ladder[i];
    Pool p = *this;
    p.ladder.clear();
    p.ladder_of = name;
    p.labels[kLadderLabel] = name;
    p.rung = static_cast<int>(i);
    p.name = name + "-" + r.suffix;
    p.ptr = r.ptr;
    p.provisioning = r.provisioning;
    p.reservation = r.provisioning == "reservation" ? r.reservation_path() : "";
    const int most = r.nodes > 0 ? r.nodes : nodes;
    // A reservation is paid for whether its VMs run or not, and Kueue's topology-aware placement
    // counts only nodes that exist: its rung is all of its nodes. The others cost only while used.
    p.nodes = r.provisioning == "reservation" ? most : 0;
    if (r.provisioning == "reservation") p.autoscaling.reset();
    else p.autoscaling = std::pair<int, int>{0, most};
    out.push_back(std::move(p));
  }
  return out;
}

std::vector<Pool> System::gke_pools() const {
  std::vector<Pool> out;
  for (const auto& [_, p] : pools)
    for (Pool& r : p.rung_pools()) out.push_back(std::move(r));
  return out;
}

std::vector<std::string> Pool::node_pools() const {
  if (laddered()) {
    std::vector<std::string> out;
    for (const auto& r : ladder) out.push_back(name + "-" + r.suffix);
    return out;
  }
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
  consider(c.lead());
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
  return std::visit([](const auto& k) { return k.uses_trainrt(); }, run);
}

const std::vector<std::string>* Step::command_line() const {
  return std::visit([](const auto& k) { return k.command_line(); }, run);
}
bool Step::gang() const { return distributed() && !shard_count(); }

std::optional<int> Step::shard_count() const {
  return std::visit([](const auto& k) { return k.shard_count(); }, run);
}
bool Step::runs_tracker() const {
  return std::visit([](const auto& k) { return k.runs_tracker(); }, run);
}
bool Step::gpu_preflight() const {
  return std::visit([](const auto& k) { return k.gpu_preflight(); }, run);
}

std::string Step::program() const {
  return std::visit([](const auto& k) { return k.program(); }, run);
}

int rendezvous_port(const StepKind& kind) {
  return std::visit([](const auto& k) { return k.rendezvous_port(); }, kind);
}

std::vector<const StoreLoc*> store_locs(const StepKind& kind) {
  return std::visit([](const auto& k) { return k.store_locs(); }, kind);
}

std::vector<const StoreLoc*> store_reads(const StepKind& kind) {
  return std::visit([](const auto& k) { return k.store_reads(); }, kind);
}

std::vector<UserWords> user_words(const StepKind& kind) {
  return std::visit([](const auto& k) { return k.user_words(); }, kind);
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

std::string Identity::description(const std::string& system) const {
  return fmt::format("made by trainc for system {}: its up.sh binds and its down.sh deletes only accounts described so",
                     system);
}

double Resources::requested(const std::string& key) const {
  auto it = requests.find(key);
  return it == requests.end() ? 0.0 : parse_quantity(it->second).value_or(0);
}

Pool::NodeRange Pool::node_range() const {
  const bool multi_host = tpu && tpu->hosts > 1;
  if (provisioning == "flex-start" || provisioning == "queued") return {0, multi_host ? tpu->hosts : max_nodes(), true};
  if (multi_host) return {tpu->hosts, tpu->hosts, false};
  if (autoscaling) return {autoscaling->first, autoscaling->second, true};
  return {nodes, nodes, false};
}

std::string TopologyRequest::describe() const {
  switch (kind) {
    case Kind::kNone: return "";
    case Kind::kUnconstrained: return "unconstrained";
    case Kind::kPreferred: return "preferred " + level;
    case Kind::kRequired: return "required " + level;
  }
  return "";
}

TopologyRequest topology_request(const System& sys, const Pool* pool, int pods, const TopologyPlacement* own) {
  TopologyRequest r;
  if (!sys.queue || !pool || !pool->tas()) return r;
  const TopologyPlacement& asked = own ? *own : pool->placement;
  if (pods <= 1 || asked.level.empty()) {
    r.kind = TopologyRequest::Kind::kUnconstrained;
    return r;
  }
  const TopologyLevel* level = catalog().topology().level(asked.level);
  if (!level) return r;  // a level the catalog lacks is an error of the spec (checks)
  r.kind = asked.required ? TopologyRequest::Kind::kRequired : TopologyRequest::Kind::kPreferred;
  r.level = level->name;
  r.label = level->label;
  return r;
}

TopologyRequest topology_request(const System& sys, const Step& step) {
  if (step.pool.empty() && sys.queue) {
    // A step that names no pool may take any flavor whose pool it tolerates and that has what it
    // asks for. When all of those are placed by topology, it must ask too (a flavor with a
    // topology takes only PodSets that ask, in a queue that has others), and asks for nothing
    // more: it names no level.
    bool any = false, all = true;
    for (const auto& name : open_pools(sys, step.gpus)) {
      const Pool& p = sys.pools.at(name);
      if (step.gpus > 0 && !p.accelerator) continue;
      any = true;
      all = all && p.tas();
    }
    TopologyRequest r;
    if (any && all) r.kind = TopologyRequest::Kind::kUnconstrained;
    return r;
  }
  return topology_request(sys, sys.pool(step.pool), step.nodes * step.slices, step.placement ? &*step.placement : nullptr);
}

PoolCapacity capacity(const Pool& pool) {
  const long long nodes = static_cast<long long>(pool.node_range().max) * (pool.tpu ? pool.tpu->slices : 1);
  PoolCapacity c;
  c.cpu = pool.room_cpu() * static_cast<double>(nodes);
  c.memory = pool.room_memory() * static_cast<double>(nodes);
  if (pool.accelerator) c.gpus = static_cast<long long>(pool.accelerator->count) * nodes;
  if (pool.tpu) c.tpu_chips = static_cast<long long>(pool.tpu->chips_per_host) * nodes;
  return c;
}

LongLivedLoad::LongLivedLoad(const System& sys) {
  // The long-lived pods as the cluster runs them: with their sidecars and the operators' containers.
  for (const auto& pod : long_lived_pods(sys)) {
    const auto n = static_cast<double>(pod.count);
    for (Use* u : {&by_pool_[pod.pool], &by_ptr_pool_[{pod.ptr, pod.pool}]}) {
      u->cpu += pod.cores() * n;
      u->memory += pod.bytes() * n;
      u->gpus += pod.gpus * pod.count;
    }
    pods_.emplace(pod.workload, std::pair{pod.cores(), pod.bytes()});
  }
}

PoolCapacity LongLivedLoad::left(const Pool& pool, const PodGroup* except) const {
  PoolCapacity c = capacity(pool);
  Use used;
  if (auto it = by_pool_.find(pool.name); it != by_pool_.end()) used = it->second;
  if (except)
    if (auto it = by_ptr_pool_.find({except->ptr, pool.name}); it != by_ptr_pool_.end()) {
      used.cpu -= it->second.cpu;
      used.memory -= it->second.memory;
      used.gpus -= it->second.gpus;
    }
  c.cpu = std::max(0.0, c.cpu - used.cpu);
  c.memory = std::max(0.0, c.memory - used.memory);
  c.gpus = std::max(0LL, c.gpus - used.gpus);
  return c;
}

std::pair<double, double> LongLivedLoad::pod(const std::string& workload) const {
  const auto it = pods_.find(workload);
  return it == pods_.end() ? std::pair{0.0, 0.0} : it->second;
}

PoolCapacity capacity_left(const System& sys, const Pool& pool, const PodGroup* except) {
  return LongLivedLoad(sys).left(pool, except);
}

PoolCapacity queue_capacity(const System& sys, const Pool& pool) { return capacity_left(sys, pool); }

std::optional<int> group_capacity(const System& sys, const ComputeCluster& c, const PodGroup& g) {
  return group_capacity(LongLivedLoad(sys), sys, c, g);
}

std::optional<int> group_capacity(const LongLivedLoad& load, const System& sys, const ComputeCluster& c,
                                  const PodGroup& g) {
  if (sys.pools.empty()) return std::nullopt;
  // One of its pods as the cluster runs it, sidecars included.
  const auto [cpu, memory] = load.pod(c.name + "/" + g.name);
  long long most = 0;
  for (const auto& [name, pool] : sys.pools) {
    if (!g.pool.empty() && name != g.pool) continue;
    // Whole pods per node, then as many nodes as the pool grows to; a pod that asks for nothing takes a node.
    long long per_node = std::numeric_limits<int>::max();
    if (g.gpus > 0) per_node = pool.accelerator ? pool.accelerator->count / g.gpus : 0;
    if (cpu > 0) per_node = std::min(per_node, static_cast<long long>(pool.room_cpu() / cpu + 1e-9));
    if (memory > 0) per_node = std::min(per_node, static_cast<long long>(pool.room_memory() / memory));
    if (per_node == std::numeric_limits<int>::max()) per_node = 1;
    long long n = per_node * pool.max_nodes();
    // Within what the pool's other long-lived pods leave.
    const PoolCapacity left = load.left(pool, &g);
    if (g.gpus > 0) n = std::min(n, left.gpus / g.gpus);
    if (cpu > 0) n = std::min(n, static_cast<long long>(left.cpu / cpu + 1e-9));
    if (memory > 0) n = std::min(n, static_cast<long long>(left.memory / memory));
    most += n;
  }
  return static_cast<int>(std::min<long long>(most, std::numeric_limits<int>::max()));
}

// The engine's facts (EngineFacts), for the engine this cluster runs.
const PodGroup& ComputeCluster::lead() const {
  return std::visit([](const auto& e) -> const PodGroup& { return e.lead(); }, engine);
}
std::string_view ComputeCluster::lead_name() const {
  return std::visit([](const auto& e) { return std::string_view(e.kLead); }, engine);
}
bool ComputeCluster::head_uses_api() const {
  return std::visit([&](const auto& e) { return e.lead_uses_api(workers); }, engine);
}
std::vector<AddedContainer> ComputeCluster::added_containers() const {
  return std::visit([&](const auto& e) { return e.added_containers(workers); }, engine);
}
bool ComputeCluster::per_job() const {
  return std::visit([](const auto& e) { return e.per_job_cluster(); }, engine);
}
bool ComputeCluster::workers_autoscale() const {
  return std::visit([](const auto& e) { return e.workers_autoscale(); }, engine);
}
std::string_view ComputeCluster::addon() const {
  return std::visit([](const auto& e) { return e.addon(); }, engine);
}
bool ComputeCluster::steps_have_own_pods() const {
  return std::visit([](const auto& e) { return e.steps_have_own_pods(); }, engine);
}
bool ComputeCluster::steps_read_secrets() const {
  return std::visit([](const auto& e) { return e.steps_read_secrets(); }, engine);
}

std::string Origin::spec_path_from(const std::string& from, const std::string& system, const std::string& rel) const {
  namespace fs = std::filesystem;
  const fs::path spec_dir = fs::path(spec.empty() ? "spec.yaml" : spec).parent_path();
  const fs::path here = fs::path(out.empty() ? "." : out) / system / from;
  std::string s =
      (spec_dir / rel).lexically_normal().lexically_relative(here.lexically_normal()).lexically_normal().generic_string();
  while (s.size() > 1 && s.ends_with("/")) s.pop_back();
  return s.empty() ? "." : s;
}

std::string Origin::root_from(const std::string& system) const {
  std::string up;
  for (const auto& part : (std::filesystem::path(out.empty() ? "." : out) / system).lexically_normal())
    if (!part.empty() && part != ".") up += up.empty() ? ".." : "/..";
  return up.empty() ? "." : up;
}

std::string System::pod_service_account() const { return identity ? identity->ksa : service_account; }

}  // namespace trainc

namespace trainc {

std::vector<ServerPort> server_ports(const ServerKind& kind) {
  return std::visit([](const auto& k) { return k.ports(); }, kind);
}

// The server kind's facts (ServerFacts), for the kind this service runs.
std::vector<std::string> Service::argv() const {
  return std::visit([](const auto& k) { return k.argv(); }, server);
}
ServerProbes Service::probes() const {
  return std::visit([](const auto& k) { return k.probes(); }, server);
}
GatewayRoutes Service::routes() const {
  return std::visit([](const auto& k) { return k.routes(); }, server);
}
ScalingMetric Service::scaling_metric() const {
  return std::visit([](const auto& k) { return k.scaling_metric(); }, server);
}
MetricsEndpoint Service::metrics() const {
  return std::visit([](const auto& k) { return k.metrics(); }, server);
}
std::vector<std::string_view> Service::reserved_flags() const {
  return std::visit([](const auto& k) { return k.reserved_flags(); }, server);
}
std::vector<AcceptedRisk> Service::accepted_risks() const {
  return std::visit([](const auto& k) { return k.accepted_risks(); }, server);
}
std::vector<const StoreRef*> Service::store_refs() const {
  return std::visit([](const auto& k) { return k.store_refs(); }, server);
}
std::vector<UserWords> Service::user_words() const {
  return std::visit([](const auto& k) { return k.user_words(); }, server);
}
std::vector<HealthCheck> Service::health_checks() const {
  return std::visit([](const auto& k) { return k.health_checks(); }, server);
}
std::vector<StoreContents> Service::store_contents() const {
  return std::visit([](const auto& k) { return k.store_contents(); }, server);
}
ModelMemory Service::model_memory() const {
  return std::visit([](const auto& k) { return k.model_memory(); }, server);
}
CallingExamples Service::calling_examples() const {
  return std::visit([&](const auto& k) { return k.calling_examples(image); }, server);
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

std::optional<PulledRepository> pulled_repository(const std::string& image) {
  constexpr std::string_view kSuffix = "-docker.pkg.dev";
  std::vector<std::string> parts;
  for (size_t start = 0;;) {
    const size_t slash = image.find('/', start);
    parts.push_back(image.substr(start, slash == std::string::npos ? std::string::npos : slash - start));
    if (slash == std::string::npos) break;
    start = slash + 1;
  }
  // HOST/PROJECT/REPOSITORY/IMAGE at least: an image sits below its repository.
  if (parts.size() < 4 || !parts[0].ends_with(kSuffix) || parts[0].size() == kSuffix.size()) return std::nullopt;
  if (parts[1].empty() || parts[2].empty()) return std::nullopt;
  return PulledRepository{parts[0].substr(0, parts[0].size() - kSuffix.size()), parts[1], parts[2]};
}

std::string NodeAccount::display_name() const { return "trainc nodes of cluster " + cluster; }

NodeAccount node_account(const System& sys) {
  NodeAccount out;
  out.cluster = sys.cluster.name;
  // Account ids are 6 to 30 characters; cluster names up to 40. A long name keeps its start and
  // gets a hash of the whole, so two long names that start alike stay apart.
  constexpr std::string_view kSuffix = "-nodes";
  const std::string& cluster = sys.cluster.name;
  if (cluster.size() + kSuffix.size() <= 30) {
    out.id = cluster + std::string(kSuffix);
  } else {
    std::string head = cluster.substr(0, 30 - kSuffix.size() - 5);
    while (!head.empty() && head.back() == '-') head.pop_back();
    out.id = fmt::format("{}-{:04x}{}", head, common::fnv1a64(cluster) & 0xffff, kSuffix);
  }
  if (!sys.gcp) return out;
  if (const auto& r = sys.gcp->registry) out.repositories.push_back({r->location, sys.gcp->project, r->repository, true});
  std::vector<PulledRepository> others;
  auto add = [&](const std::string& image) {
    auto repo = pulled_repository(image);
    if (!repo || (sys.gcp->registry && repo->location == sys.gcp->registry->location &&
                  repo->project == sys.gcp->project && repo->repository == sys.gcp->registry->repository))
      return;
    if (std::find(others.begin(), others.end(), *repo) == others.end()) others.push_back(*repo);
  };
  // The images the spec names; those trainc's catalog names (the gIB installer, pause) are public.
  add(sys.runtime_image);
  for (const auto& st : sys.steps) add(st.image);
  for (const auto& [_, c] : sys.clusters) add(c.image);
  for (const auto& [_, s] : sys.services) add(s.image);
  std::sort(others.begin(), others.end());
  out.repositories.insert(out.repositories.end(), others.begin(), others.end());
  return out;
}

}  // namespace trainc
