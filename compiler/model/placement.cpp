#include "model/placement.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <tuple>

#include "model/catalog.h"
#include "model/images.h"
#include "base/units.h"

namespace trainc {
namespace {

constexpr double kCoreSlack = 1e-9, kByteSlack = 0.5;
/// How many placements one exact search tries before it gives up deciding.
constexpr long kSearchBudget = 200000;
/// How many all the exact searches for one system try together (place() and the checks).
constexpr long kSystemBudget = 2000000;

PodContainer own(const std::string& name, const Resources& r, PodSecurityLevel level) {
  return {name, r.requested("cpu"), r.requested("memory"), "", level, false};
}
PodSecurityLevel level_of(const std::string& name) {
  return name == "privileged" ? PodSecurityLevel::kPrivileged
         : name == "baseline" ? PodSecurityLevel::kBaseline
                              : PodSecurityLevel::kRestricted;
}
PodContainer injected(const std::string& name, const Sidecar& s, const std::string& by, bool init = false) {
  return {name, s.cores, s.bytes, by, level_of(s.pod_security), init};
}
PodContainer gcsfuse() {
  return injected("gke-gcsfuse-sidecar", catalog().gcsfuse_sidecar(), "GCS FUSE CSI webhook");
}

long long chips_on(const System& sys, const std::string& pool) {
  const Pool* p = sys.pool(pool);
  return p && p->tpu ? p->tpu->chips_per_host : 0;
}

void add_pods(std::vector<FinalPod>& out, FinalPod pod, long long count) {
  if (count <= 0) return;
  pod.of = pod.count = count;
  pod.index = 0;
  out.push_back(std::move(pod));
}

/// Larger pods first: accelerators, then CPU, then memory.
bool larger(const FinalPod& a, const FinalPod& b) {
  return std::make_tuple(a.gpus + a.chips, a.cores(), a.bytes()) > std::make_tuple(b.gpus + b.chips, b.cores(), b.bytes());
}

/// `count` empty nodes, as one run.
std::vector<NodeLoad> empty_nodes(long long count) {
  std::vector<NodeLoad> out;
  if (count > 0) out.push_back(NodeLoad{{}, 0, 0, 0, 0, count, 0});
  return out;
}

/// Exact search over single pods and single nodes: can `pods[i..]` go onto `nodes`? Fills
/// `where` with each pod's node.
struct Search {
  const PoolPlacement& pool;
  const std::vector<FinalPod>& pods;
  std::vector<NodeLoad>& nodes;
  std::vector<int>& where;
  long budget;
  bool run(size_t i) {
    if (i == pods.size()) return true;
    if (--budget < 0) return false;
    // Two equal pods in a row go onto nodes in order, so no placement is tried twice.
    const size_t from = i > 0 && pods[i].cores() == pods[i - 1].cores() && pods[i].bytes() == pods[i - 1].bytes() &&
                                pods[i].gpus == pods[i - 1].gpus && pods[i].chips == pods[i - 1].chips
                            ? static_cast<size_t>(where[i - 1])
                            : 0;
    for (size_t j = from; j < nodes.size(); ++j) {
      NodeLoad& n = nodes[j];
      bool same_as_earlier = false;  // equal nodes are interchangeable: try one of them
      for (size_t k = from; k < j && !same_as_earlier; ++k)
        same_as_earlier = nodes[k].cores == n.cores && nodes[k].bytes == n.bytes && nodes[k].gpus == n.gpus &&
                          nodes[k].chips == n.chips && nodes[k].slots == n.slots;
      if (same_as_earlier || !pool.fits(n, pods[i])) continue;
      n.cores += pods[i].cores();
      n.bytes += pods[i].bytes();
      n.gpus += pods[i].gpus;
      n.chips += pods[i].chips;
      ++n.slots;
      where[i] = static_cast<int>(j);
      if (run(i + 1)) return true;
      n.cores -= pods[i].cores();
      n.bytes -= pods[i].bytes();
      n.gpus -= pods[i].gpus;
      n.chips -= pods[i].chips;
      --n.slots;
      if (budget < 0) return false;
    }
    return false;
  }
};

/// Adds `k` pods like `p` to each of the nodes `n` stands for, node t taking first + t * k onwards.
void add(NodeLoad& n, const FinalPod& p, long long first, long long k) {
  n.cores += p.cores() * static_cast<double>(k);
  n.bytes += p.bytes() * static_cast<double>(k);
  n.gpus += p.gpus * k;
  n.chips += p.chips * k;
  n.slots += k;
  if (n.count == 1 && !n.pods.empty() && n.pods.back().workload == p.workload &&
      n.pods.back().index + n.pods.back().count == first) {
    n.pods.back().count += k;  // the next pods of the same workload on one node: one entry
    return;
  }
  FinalPod held = p;
  held.index = first;
  held.count = k;
  n.pods.push_back(std::move(held));
}

/// Nodes `from` to `from + count - 1` of the run `n` stands for, with their pods' numbers.
NodeLoad slice(const NodeLoad& n, long long from, long long count) {
  NodeLoad out = n;
  out.count = count;
  for (auto& p : out.pods) p.index += from * p.count;
  return out;
}

/// Whether run `b` continues run `a`: the same load, and each workload's numbering carried on.
bool continues(const NodeLoad& a, const NodeLoad& b) {
  if (a.cores != b.cores || a.bytes != b.bytes || a.gpus != b.gpus || a.chips != b.chips || a.slots != b.slots ||
      a.pods.size() != b.pods.size())
    return false;
  for (size_t i = 0; i < a.pods.size(); ++i)
    if (a.pods[i].workload != b.pods[i].workload || a.pods[i].count != b.pods[i].count ||
        b.pods[i].index != a.pods[i].index + a.count * a.pods[i].count)
      return false;
  return true;
}

/// Joins neighbouring runs of nodes that hold the same.
void coalesce(std::vector<NodeLoad>& nodes) {
  std::vector<NodeLoad> out;
  for (auto& n : nodes) {
    if (n.count <= 0) continue;
    if (!out.empty() && continues(out.back(), n)) out.back().count += n.count;
    else out.push_back(std::move(n));
  }
  nodes = std::move(out);
}

/// The pods a run of nodes holds, as entries of the pods' own.
std::vector<FinalPod> flatten(const NodeLoad& n) {
  std::vector<FinalPod> out;
  for (auto p : n.pods) {
    p.count *= n.count;
    out.push_back(std::move(p));
  }
  return out;
}

/// First fit of the pods `g` stands for onto `nodes` in order, a run of nodes at a time; what
/// finds no room stays in `g`.
void first_fit(const PoolPlacement& pool, std::vector<NodeLoad>& nodes, FinalPod& g) {
  for (size_t j = 0; j < nodes.size() && g.count > 0; ++j) {
    const long long k = pool.room_for(nodes[j], g);
    if (k == 0) continue;
    const NodeLoad n = nodes[j];
    const long long full = std::min(n.count, g.count / k);  // nodes that take k each
    const long long rest = full < n.count ? g.count - full * k : 0;  // fewer than k, for the next
    std::vector<NodeLoad> parts;
    if (full > 0) {
      parts.push_back(slice(n, 0, full));
      add(parts.back(), g, g.index, k);
    }
    if (rest > 0) {
      parts.push_back(slice(n, full, 1));
      add(parts.back(), g, g.index + full * k, rest);
    }
    const long long used = full + (rest > 0 ? 1 : 0);
    if (used < n.count) parts.push_back(slice(n, used, n.count - used));
    const long long placed = full * k + rest;
    g.index += placed;
    g.count -= placed;
    nodes.erase(nodes.begin() + static_cast<long>(j));
    nodes.insert(nodes.begin() + static_cast<long>(j), parts.begin(), parts.end());
    j += parts.size() - 1;
  }
}

/// First fit decreasing of `pods` onto `nodes`; returns what finds no room.
std::vector<FinalPod> first_fit_decreasing(const PoolPlacement& pool, std::vector<NodeLoad>& nodes,
                                           std::vector<FinalPod> pods) {
  std::stable_sort(pods.begin(), pods.end(), larger);
  std::vector<FinalPod> left;
  for (auto& g : pods) {
    first_fit(pool, nodes, g);
    if (g.count > 0) left.push_back(std::move(g));
  }
  coalesce(nodes);
  return left;
}

long long node_count(const std::vector<NodeLoad>& nodes) {
  long long n = 0;
  for (const auto& r : nodes) n += r.count;
  return n;
}

/// Whether no placement of `pods` onto `nodes` exists, known without searching: a workload whose
/// pods alone find fewer places, or more asked in all than the nodes have left together.
bool surely_out(const PoolPlacement& pool, const std::vector<NodeLoad>& nodes, const std::vector<FinalPod>& pods) {
  double cores = 0, bytes = 0;
  long long gpus = 0, chips = 0, slots = 0;
  for (const auto& n : nodes) {
    const auto c = static_cast<double>(n.count);
    slots += (pool.room_pods - n.slots) * n.count;
    cores += (pool.room_cores - n.cores) * c;
    bytes += (pool.room_bytes - n.bytes) * c;
    gpus += (pool.room_gpus - n.gpus) * n.count;
    chips += (pool.room_chips - n.chips) * n.count;
  }
  std::map<std::string, std::pair<const FinalPod*, long long>> workloads;  // its entries' pods together
  for (const auto& p : pods) {
    auto& [one, count] = workloads.try_emplace(p.kind + " " + p.workload, &p, 0).first->second;
    count += p.count;
  }
  for (const auto& [_, w] : workloads) {
    // Alone, a workload's pods find at most so many places.
    long long places = 0;
    for (const auto& n : nodes) places = std::min(PoolPlacement::kMany, places + pool.room_for(n, *w.first) * n.count);
    if (places < w.second) return true;
  }
  for (const auto& p : pods) {
    const auto c = static_cast<double>(p.count);
    cores -= p.cores() * c;
    bytes -= p.bytes() * c;
    gpus -= p.gpus * p.count;
    chips -= p.chips * p.count;
    slots -= p.count;
  }
  const double eps = 1e-6 * std::max(1.0, static_cast<double>(node_count(nodes)));
  return cores < -eps || bytes < -kByteSlack * static_cast<double>(node_count(nodes)) - 1 || gpus < 0 || chips < 0 || slots < 0;
}

/// The largest case the exact search takes, counted in single pods and nodes.
constexpr long long kSearchPods = 64, kSearchNodes = 32;

/// The exact search over single pods and nodes, within the system's budget: the nodes holding
/// every pod, or nullopt; `proven` is false when it stopped at the budget.
std::optional<std::vector<NodeLoad>> search_exactly(const PoolPlacement& pool, const std::vector<NodeLoad>& start,
                                                    const std::vector<FinalPod>& groups, bool& proven) {
  std::vector<NodeLoad> nodes;
  for (const auto& n : start)
    for (long long t = 0; t < n.count; ++t) nodes.push_back(slice(n, t, 1));
  std::vector<FinalPod> pods;
  for (const auto& g : groups)
    for (long long i = 0; i < g.count; ++i) {
      FinalPod one = g;
      one.index = g.index + i;
      one.count = 1;
      pods.push_back(std::move(one));
    }
  std::stable_sort(pods.begin(), pods.end(), larger);
  long own = kSearchBudget;
  long& budget = pool.budget ? pool.budget->left : own;
  std::vector<NodeLoad> work = nodes;
  std::vector<int> where(pods.size(), 0);
  Search search{pool, pods, work, where, std::min(kSearchBudget, budget)};
  const long before = search.budget;
  const bool found = budget > 0 && search.run(0);
  budget -= before - std::max(0L, search.budget);
  if (!found) {
    proven = search.budget >= 0 && budget > 0;
    return std::nullopt;
  }
  for (size_t i = 0; i < pods.size(); ++i) add(nodes[static_cast<size_t>(where[i])], pods[i], pods[i].index, 1);
  coalesce(nodes);
  return nodes;
}

/// Packs `pods` onto the phase's nodes, on top of what they hold.
void pack(const PoolPlacement& pool, Phase& phase, std::vector<FinalPod> pods) {
  const std::vector<NodeLoad> start = phase.nodes;
  std::vector<FinalPod> left = first_fit_decreasing(pool, phase.nodes, pods);
  if (left.empty()) return;
  phase.unplaced.insert(phase.unplaced.end(), left.begin(), left.end());
  // First fit left some out: none fits when a pod or the sum does not; else search, when small.
  if (surely_out(pool, start, pods)) return;
  if (pod_count(pods) > kSearchPods || node_count(start) > kSearchNodes) {
    phase.proven = false;
    return;
  }
  bool proven = true;
  if (auto nodes = search_exactly(pool, start, pods, proven)) {
    phase.nodes = std::move(*nodes);
    phase.unplaced.resize(phase.unplaced.size() - left.size());
    return;
  }
  phase.proven = phase.proven && proven;
}

/// When `phase` left pods out: could the pool hold everything the phase holds, arranged anew? The
/// pods already there went where they went (first fit, the scheduler's spreading), and another
/// arrangement may hold them all; then the phase takes it, and whether the scheduler finds it is a
/// note, not an error. Returns whether it did.
bool rearrange(const PoolPlacement& pool, Phase& phase) {
  if (phase.unplaced.empty()) return false;
  std::vector<FinalPod> all = phase.unplaced;
  for (const auto& n : phase.nodes)
    for (auto& p : flatten(n)) all.push_back(std::move(p));
  Phase fresh{phase.name, empty_nodes(node_count(phase.nodes)), {}, true};
  pack(pool, fresh, std::move(all));
  if (!fresh.unplaced.empty()) {
    phase.proven = phase.proven && fresh.proven;
    return false;
  }
  phase = std::move(fresh);
  return true;
}

/// When `phase` still leaves pods out: would it hold them if the system pods on it had landed on
/// the other pools they may use (`others`, whose long-lived phases take them)? Where the scheduler
/// puts those pods trainc can only guess, so that is a note, not an error. With `move`, the other
/// pools' long-lived phases keep them; else the phase only shows the pool without them.
bool relocate_system(const PoolPlacement& pool, Phase& phase, std::vector<PoolPlacement*> others, bool move) {
  if (phase.unplaced.empty() || others.empty()) return false;
  std::vector<FinalPod> system, rest = phase.unplaced;
  for (const auto& n : phase.nodes)
    for (auto& p : flatten(n)) (p.kind == "system" ? system : rest).push_back(std::move(p));
  if (system.empty()) return false;
  Phase fresh{phase.name, empty_nodes(node_count(phase.nodes)), {}, true};
  pack(pool, fresh, std::move(rest));
  if (!fresh.unplaced.empty()) return false;
  std::vector<Phase> lived;
  for (PoolPlacement* o : others) lived.push_back(o->phases.front());
  for (auto pod : system) {
    for (size_t i = 0; i < others.size() && pod.count > 0; ++i) {
      first_fit(*others[i], lived[i].nodes, pod);
      coalesce(lived[i].nodes);
    }
    if (pod.count > 0) return false;
  }
  if (move)
    for (size_t i = 0; i < others.size(); ++i) others[i]->phases.front() = std::move(lived[i]);
  phase = std::move(fresh);
  return true;
}

PoolPlacement make_pool(const Pool& p) {
  PoolPlacement out;
  out.pool = &p;
  out.nodes = p.node_range().max * (p.tpu ? p.tpu->slices : 1);
  out.room_cores = p.room_cpu();
  out.room_bytes = p.room_memory();
  out.room_gpus = p.accelerator ? p.accelerator->count : 0;
  out.room_chips = p.tpu ? p.tpu->chips_per_host : 0;
  out.room_pods = catalog().pods_per_node() - static_cast<long long>(p.reserve.daemonsets.size());
  Phase lived{"long-lived", empty_nodes(out.nodes), {}, true};
  out.phases.push_back(std::move(lived));
  return out;
}

}  // namespace

// What the scheduler counts: the sum of the containers, or the largest init container if larger.
double FinalPod::cores() const {
  double sum = 0, init = 0;
  for (const auto& c : containers) (c.init ? init : sum) = c.init ? std::max(init, c.cores) : sum + c.cores;
  return std::max(sum, init);
}
double FinalPod::bytes() const {
  double sum = 0, init = 0;
  for (const auto& c : containers) (c.init ? init : sum) = c.init ? std::max(init, c.bytes) : sum + c.bytes;
  return std::max(sum, init);
}

bool PoolPlacement::fits(const NodeLoad& n, const FinalPod& p) const {
  return n.cores + p.cores() <= room_cores + kCoreSlack && n.bytes + p.bytes() <= room_bytes + kByteSlack &&
         n.gpus + p.gpus <= room_gpus && n.chips + p.chips <= room_chips && n.slots + 1 <= room_pods;
}

long long PoolPlacement::room_for(const NodeLoad& n, const FinalPod& p) const {
  if (!fits(n, p)) return 0;
  long long k = kMany;
  // The most q with used + q * ask within the room, as fits() judges one more pod.
  auto most = [&](double used, double ask, double room) {
    if (ask <= 0) return;
    const double f = std::floor((room - used) / ask);
    long long q = f <= 0 ? 0 : f >= static_cast<double>(kMany) ? kMany : static_cast<long long>(f);
    while (q > 0 && used + ask * static_cast<double>(q) > room) --q;
    while (q < kMany && used + ask * static_cast<double>(q + 1) <= room) ++q;
    k = std::min(k, q);
  };
  most(n.cores, p.cores(), room_cores + kCoreSlack);
  most(n.bytes, p.bytes(), room_bytes + kByteSlack);
  if (p.gpus > 0) k = std::min(k, (room_gpus - n.gpus) / p.gpus);
  if (p.chips > 0) k = std::min(k, (room_chips - n.chips) / p.chips);
  k = std::min(k, room_pods - n.slots);
  return std::max(1LL, k);
}

long long pod_count(const std::vector<FinalPod>& pods) {
  long long n = 0;
  for (const auto& p : pods) n += p.count;
  return n;
}

const PoolPlacement* Placement::pool(const std::string& name) const {
  for (const auto& p : pools)
    if (p.pool->name == name) return &p;
  return nullptr;
}

Addons addons_of(const System& sys) {
  Addons a;
  for (const auto& [_, c] : sys.clusters) a.kuberay = a.kuberay || c.addon() == "kuberay";
  a.istio = sys.istio && sys.istio->install;
  for (const auto& [_, s] : sys.services) a.metrics_adapter = a.metrics_adapter || s.autoscaled();
  a.kueue = sys.queue.has_value();
  for (const auto& st : sys.steps) a.jobset = a.jobset || runs_as_jobset(sys, st);
  return a;
}

bool runs_as_jobset(const System& sys, const Step& step) {
  if (sys.compute_cluster(step.cluster)) return false;  // a RayJob, or a Dask client's Job
  const Pool* pool = sys.pool(step.pool);
  return (pool && pool->tpu) || step.gang();
}

bool gpu_pools_tainted(const System& sys) {
  for (const auto& [_, p] : sys.pools)
    if (!p.accelerator && !p.tpu) return true;
  return false;
}

std::vector<std::string> open_pools(const System& sys, long long gpus) {
  // GKE taints TPU nodes always and GPU nodes beside a CPU pool; trainc's pods tolerate the GPU
  // taint when they ask for GPUs, and a pool's own taints only when they name the pool.
  const bool gpu_taint = gpu_pools_tainted(sys);
  std::vector<std::string> out;
  for (const auto& [name, p] : sys.pools)
    if (!p.tpu && p.taints.empty() && (!p.accelerator || gpus > 0 || !gpu_taint)) out.push_back(name);
  return out;
}

std::pair<double, double> system_share(const System& sys, const Pool& pool) {
  const auto open = open_pools(sys, 0);
  if (std::find(open.begin(), open.end(), pool.name) == open.end()) return {0, 0};
  double cores = 0, bytes = 0;
  for (const auto& p : system_pods(sys, addons_of(sys))) {
    cores += p.cores() * static_cast<double>(p.count);
    bytes += p.bytes() * static_cast<double>(p.count);
  }
  return {cores, bytes};
}

std::vector<FinalPod> system_pods(const System& sys, const Addons& addons) {
  bool dataplane_v2 = false;  // as Lowerer::node_reserves: multi-networking puts the cluster on it
  for (const auto& entry : sys.pools) dataplane_v2 = dataplane_v2 || entry.second.rdma;
  auto holds = [&](const std::string& when) {
    if (when == "always") return true;
    if (when == "dataplaneV2") return dataplane_v2;
    if (when == "managedPrometheus") return !sys.services.empty();
    if (when == "kuberay") return addons.kuberay;
    if (when == "istio") return addons.istio;
    if (when == "metricsAdapter") return addons.metrics_adapter;
    if (when == "kueue") return addons.kueue;
    return when == "jobset" && addons.jobset;
  };
  std::vector<FinalPod> out;
  for (const auto& d : catalog().system_pods())
    if (std::all_of(d.when.begin(), d.when.end(), holds)) {
      const std::string container = d.name.substr(d.name.find('/') + 1);
      FinalPod pod{"system", d.name, "", "", 0, 1, 0, 0,
                   {{container, d.cores, d.bytes, "", PodSecurityLevel::kRestricted, false}}};
      add_pods(out, std::move(pod), d.replicas);
    }
  return out;
}

std::vector<FinalPod> long_lived_pods(const System& sys) {
  std::vector<FinalPod> out;
  for (const auto& [name, s] : sys.services) {
    FinalPod pod{"service/" + s.kind(), name, s.ptr, s.pool, 0, 1, s.gpus, chips_on(sys, s.pool),
                 {own("server", s.resources, s.security.level)}};
    if (sys.istio) {
      pod.containers.push_back(injected("istio-init", catalog().istio_init(), "Istio sidecar injection", true));
      pod.containers.push_back(injected("istio-proxy", catalog().istio_proxy(), "Istio sidecar injection"));
    }
    add_pods(out, std::move(pod), s.max);
  }
  for (const auto& entry : sys.clusters) {
    const ComputeCluster& c = entry.second;
    const auto added = c.added_containers();
    auto group = [&](const PodGroup& g, int count) {
      FinalPod pod{"cluster/" + c.kind(), c.name + "/" + g.name, g.ptr, g.pool, 0, 1, g.gpus, chips_on(sys, g.pool),
                   {own(g.name, g.resources, c.security.level)}};
      if (!c.mounts.empty()) pod.containers.push_back(gcsfuse());
      for (const auto& a : added)
        if (a.group == g.name) {
          Resources r;
          r.requests = a.requests;
          // KubeRay gives it the group's container's securityContext (trainc sets the autoscaler's so).
          PodContainer ct = own(a.name, r, c.security.level);
          ct.added_by = c.kind() + " operator";
          ct.init = a.init;
          pod.containers.push_back(ct);
        }
      add_pods(out, std::move(pod), count);
    };
    group(c.lead(), 1);
    for (const auto& g : c.workers) group(g, g.max);
  }
  return out;
}

std::vector<FinalPod> step_pods(const System& sys, const Step& step) {
  if (const ComputeCluster* c = sys.compute_cluster(step.cluster); c && !c->steps_have_own_pods()) return {};
  FinalPod pod{"step/" + step.kind(), step.name, step.ptr, step.pool, 0, 1, step.gpus, chips_on(sys, step.pool),
               {own(step.name, step.resources, step.security.level)}};
  if (!step.mounts.empty()) pod.containers.push_back(gcsfuse());
  for (const InjectedTool* t : injected_tools(sys, step))
    pod.containers.push_back({"trainc-tools-" + t->name, parse_quantity(t->cpu).value_or(0),
                              parse_quantity(t->memory).value_or(0), "trainc, for tools the image lacks", step.security.level, true});
  std::vector<FinalPod> out;
  add_pods(out, std::move(pod), step.nodes * step.slices);
  return out;
}

namespace {

/// Whether `pods` fit `n` empty nodes of the pool: first fit decreasing, then the exact search
/// when small; `proven` is false when neither could decide.
bool fit_on(const PoolPlacement& p, const std::vector<FinalPod>& pods, long long n, bool& proven) {
  Phase trial{"", empty_nodes(n), {}, true};
  pack(p, trial, pods);
  proven = trial.proven;
  return trial.unplaced.empty();
}

/// The fewest nodes holding what the pods ask in all, one dimension at a time, and each
/// workload's pods alone.
long long lower_bound(const PoolPlacement& p, const std::vector<FinalPod>& pods) {
  double cores = 0, bytes = 0;
  long long gpus = 0, chips = 0, slots = 0, alone = 0;
  const NodeLoad empty;
  std::map<std::string, long long> workloads;  // its entries' pods together
  for (const auto& g : pods) {
    // Each workload alone: its pods over as many as one node holds.
    const long long per_node = std::max(1LL, p.room_for(empty, g));
    const long long count = workloads[g.kind + " " + g.workload] += g.count;
    alone = std::max(alone, (count + per_node - 1) / per_node);
    slots += g.count;
    cores += g.cores() * static_cast<double>(g.count);
    bytes += g.bytes() * static_cast<double>(g.count);
    gpus += g.gpus * g.count;
    chips += g.chips * g.count;
  }
  auto need = [](double ask, double room) -> long long {
    if (ask <= 0) return 0;
    if (room <= 0) return PoolPlacement::kMany;
    return static_cast<long long>(std::ceil(ask / room - 1e-9));
  };
  return std::max({alone, need(cores, p.room_cores), need(bytes, p.room_bytes), need(static_cast<double>(gpus), p.room_gpus),
                   need(static_cast<double>(chips), p.room_chips),
                   need(static_cast<double>(slots), p.room_pods)});
}

}  // namespace

std::optional<long long> nodes_needed(const PoolPlacement& p, const std::vector<FinalPod>& pods, long long limit,
                                      long long from) {
  long long lo = std::max(1LL, from > 0 ? from : p.nodes);
  const NodeLoad empty;
  for (const auto& g : pods)
    if (!p.fits(empty, g)) return std::nullopt;  // not even an empty node holds one
  lo = std::max(lo, lower_bound(p, pods));
  if (lo > limit) return std::nullopt;
  // First fit decreasing onto `limit` nodes: were it given fewer, it would fill the first ones
  // the same way, so the nodes it uses are the fewest it needs.
  std::vector<NodeLoad> nodes = empty_nodes(limit);
  long long hi = limit;
  if (first_fit_decreasing(p, nodes, pods).empty()) {
    hi = 0;
    for (const auto& n : nodes) hi += n.pods.empty() ? 0 : n.count;
    hi = std::max(hi, lo);
  } else {
    bool proven = true;
    if (!fit_on(p, pods, limit, proven)) return std::nullopt;
  }
  // Fewer may do when the exact search places what first fit could not: halve the gap.
  while (lo < hi) {
    const long long mid = lo + (hi - lo) / 2;
    bool proven = true;
    if (fit_on(p, pods, mid, proven)) hi = mid;
    else if (!proven) break;  // undecided: keep the count known to hold them
    else lo = mid + 1;
  }
  return hi;
}

Placement place(const System& sys) {
  std::map<std::string, PoolPlacement> pools;
  Placement out;
  if (sys.pools.empty()) return out;  // an existing cluster: nothing to judge it by
  auto budget = std::make_shared<SearchBudget>(SearchBudget{kSystemBudget});
  auto get = [&](const std::string& name) -> PoolPlacement* {
    const Pool* p = sys.pool(name);
    if (!p) return nullptr;
    auto [it, fresh] = pools.try_emplace(name, make_pool(*p));
    if (fresh) it->second.budget = budget;
    return &it->second;
  };
  // The other pools the system pods may use than `name`.
  auto others = [&](const std::string& name) {
    std::vector<PoolPlacement*> o;
    for (const auto& n : open_pools(sys, 0))
      if (n != name) o.push_back(get(n));
    return o;
  };

  // The system pods are there before trainc's: each goes to the untainted node with the most room
  // left, as the scheduler's default scoring (least allocated) puts it.
  for (const auto& pods : system_pods(sys, addons_of(sys)))
    for (long long i = 0; i < pods.count; ++i) {
      FinalPod pod = pods;
      pod.index += i;
      pod.count = 1;
      std::vector<NodeLoad>* in = nullptr;
      size_t best = 0;
      double best_left = -1;
      for (const auto& name : open_pools(sys, pod.gpus)) {
        PoolPlacement* pp = get(name);
        auto& nodes = pp->phases.front().nodes;
        for (size_t j = 0; j < nodes.size(); ++j)
          if (pp->fits(nodes[j], pod) && pp->room_cores - nodes[j].cores > best_left) {
            in = &nodes;
            best = j;
            best_left = pp->room_cores - nodes[j].cores;
          }
      }
      if (!in) {
        out.nowhere.push_back({"system", pod});
        continue;
      }
      // The first node of the run takes it.
      const NodeLoad run = (*in)[best];
      std::vector<NodeLoad> parts{slice(run, 0, 1)};
      add(parts.front(), pod, pod.index, 1);
      if (run.count > 1) parts.push_back(slice(run, 1, run.count - 1));
      in->erase(in->begin() + static_cast<long>(best));
      in->insert(in->begin() + static_cast<long>(best), parts.begin(), parts.end());
    }

  // Long-lived pods: those that name a pool, pool by pool, then the others onto the open pools.
  std::map<std::string, std::vector<FinalPod>> by_pool;
  std::vector<FinalPod> anywhere;
  for (auto& pod : long_lived_pods(sys)) {
    if (pod.pool.empty()) anywhere.push_back(std::move(pod));
    else if (sys.pool(pod.pool)) by_pool[pod.pool].push_back(std::move(pod));
  }
  for (auto& [name, pods] : by_pool) {
    PoolPlacement* pp = get(name);
    pack(*pp, pp->phases.front(), std::move(pods));
    if (rearrange(*pp, pp->phases.front()))
      out.notes.push_back("pool '" + name + "' holds its long-lived pods only if the scheduler places them as " +
                          "`trainc plan` shows, not first fit after the system pods: check where they landed");
    else if (relocate_system(*pp, pp->phases.front(), others(name), true))
      out.notes.push_back("pool '" + name + "' holds its long-lived pods only if GKE's system pods and the " +
                          "operators land on other pools, as `trainc plan` shows; give those a small pool of " +
                          "their own to be sure");
  }
  std::stable_sort(anywhere.begin(), anywhere.end(), larger);
  for (auto pod : anywhere) {
    for (const auto& name : open_pools(sys, pod.gpus)) {
      if (pod.count == 0) break;
      PoolPlacement* pp = get(name);
      first_fit(*pp, pp->phases.front().nodes, pod);
      coalesce(pp->phases.front().nodes);
    }
    if (pod.count > 0) out.nowhere.push_back({"long-lived", pod});
  }

  // Each step on top of the long-lived pods; a step that names no pool goes to the first open
  // pool that holds it.
  std::map<std::string, int> depth;  // steps that may start together share a depth
  std::map<std::pair<std::string, int>, std::vector<const Step*>> waves;
  for (const auto& st : sys.steps) {
    int d = 0;
    for (const auto& need : st.needs)
      if (auto it = depth.find(need); it != depth.end()) d = std::max(d, it->second + 1);
    depth[st.name] = d;
    std::vector<FinalPod> pods = step_pods(sys, st);
    if (pods.empty()) continue;
    std::vector<std::string> candidates = st.pool.empty() ? open_pools(sys, pods.front().gpus) : std::vector<std::string>{st.pool};
    PoolPlacement* chosen = nullptr;
    Phase phase;
    for (const auto& name : candidates) {
      PoolPlacement* pp = get(name);
      if (!pp) continue;
      Phase trial{"step " + st.name, pp->phases.front().nodes, {}, true};
      pack(*pp, trial, pods);
      if (!chosen || (phase.unplaced.size() > 0 && trial.unplaced.empty())) {
        chosen = pp;
        phase = std::move(trial);
      }
      if (phase.unplaced.empty()) break;
    }
    if (!chosen) {
      for (const auto& pod : pods) out.nowhere.push_back({"step " + st.name, pod});
      continue;
    }
    if (rearrange(*chosen, phase))
      out.notes.push_back("step '" + st.name + "' fits pool '" + chosen->pool->name +
                          "' only if the pods already there are placed as its phase in `trainc plan` shows; " +
                          "otherwise it waits");
    else if (relocate_system(*chosen, phase, others(chosen->pool->name), false))
      out.notes.push_back("step '" + st.name + "' fits pool '" + chosen->pool->name + "' only if GKE's system " +
                          "pods and the operators land on other pools; give those a small pool of their own to be sure");
    chosen->phases.push_back(std::move(phase));
    waves[{chosen->pool->name, d}].push_back(&st);
  }

  // Steps that may start together: do they fit together? If not, the later ones wait.
  for (const auto& [key, steps] : waves) {
    if (steps.size() < 2) continue;
    PoolPlacement* pp = get(key.first);
    Phase together{"", pp->phases.front().nodes, {}, true};
    std::vector<FinalPod> pods;
    std::string names;
    for (const Step* st : steps) {
      for (auto& pod : step_pods(sys, *st)) pods.push_back(std::move(pod));
      names += (names.empty() ? "'" : ", '") + st->name + "'";
    }
    pack(*pp, together, std::move(pods));
    if (!together.unplaced.empty())
      out.notes.push_back("steps " + names + " may start at the same time, and pool '" + key.first +
                          "' does not hold them all at once: some wait for others to finish");
  }
  for (auto& [_, pp] : pools) {
    bool pods = false;  // pools looked at for pods that went elsewhere hold none
    for (const auto& ph : pp.phases) {
      pods = pods || !ph.unplaced.empty();
      for (const auto& n : ph.nodes) pods = pods || !n.pods.empty();
    }
    if (pods) out.pools.push_back(std::move(pp));
  }
  return out;
}

std::optional<long long> surge_room(const Placement& placed, const std::string& workload, long long limit) {
  std::optional<long long> room;
  for (const auto& pp : placed.pools) {
    if (pp.phases.empty()) continue;
    const Phase& lived = pp.phases.front();
    const FinalPod* like = nullptr;
    for (const auto& n : lived.nodes)
      for (const auto& pod : n.pods)
        if (!like && pod.workload == workload && pod.kind.rfind("step/", 0) != 0) like = &pod;
    if (!like) continue;
    long long here = room.value_or(0);
    for (const auto& n : lived.nodes)
      here = std::min(limit, here + std::min(limit, pp.room_for(n, *like)) * n.count);
    room = here;
  }
  return room;
}

}  // namespace trainc
