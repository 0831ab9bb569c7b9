#include "model/placement.h"

#include <algorithm>
#include <map>
#include <tuple>

#include "model/catalog.h"

namespace trainc {
namespace {

constexpr double kCoreSlack = 1e-9, kByteSlack = 0.5;
/// How many placements the exact search tries before it gives up deciding.
constexpr long kSearchBudget = 200000;

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

void add_pods(std::vector<FinalPod>& out, FinalPod pod, int count) {
  pod.of = count;
  for (int i = 0; i < count; ++i) {
    pod.index = i;
    out.push_back(pod);
  }
}

void add(NodeLoad& n, const FinalPod& p) {
  n.cores += p.cores();
  n.bytes += p.bytes();
  n.gpus += p.gpus;
  n.chips += p.chips;
  n.pods.push_back(p);
}

/// Larger pods first: accelerators, then CPU, then memory.
bool larger(const FinalPod& a, const FinalPod& b) {
  return std::make_tuple(a.gpus + a.chips, a.cores(), a.bytes()) > std::make_tuple(b.gpus + b.chips, b.cores(), b.bytes());
}

/// Exact search: can `pods[i..]` go onto `nodes`? Fills `where` with each pod's node.
struct Search {
  const PoolPlacement& pool;
  const std::vector<FinalPod>& pods;
  std::vector<NodeLoad>& nodes;
  std::vector<int>& where;
  long budget = kSearchBudget;
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
                          nodes[k].chips == n.chips;
      if (same_as_earlier || !pool.fits(n, pods[i])) continue;
      n.cores += pods[i].cores();
      n.bytes += pods[i].bytes();
      n.gpus += pods[i].gpus;
      n.chips += pods[i].chips;
      where[i] = static_cast<int>(j);
      if (run(i + 1)) return true;
      n.cores -= pods[i].cores();
      n.bytes -= pods[i].bytes();
      n.gpus -= pods[i].gpus;
      n.chips -= pods[i].chips;
      if (budget < 0) return false;
    }
    return false;
  }
};

/// Packs `pods` onto the phase's nodes, on top of what they hold.
void pack(const PoolPlacement& pool, Phase& phase, std::vector<FinalPod> pods) {
  std::stable_sort(pods.begin(), pods.end(), larger);
  std::vector<NodeLoad> start = phase.nodes;
  std::vector<FinalPod> left;
  for (const auto& p : pods) {
    auto it = std::find_if(phase.nodes.begin(), phase.nodes.end(), [&](const NodeLoad& n) { return pool.fits(n, p); });
    if (it == phase.nodes.end()) left.push_back(p);
    else add(*it, p);
  }
  if (left.empty()) return;
  // First fit left some out: search every placement for one that holds them all.
  std::vector<NodeLoad> nodes = start;
  std::vector<int> where(pods.size(), 0);
  Search search{pool, pods, nodes, where};
  if (search.run(0)) {
    phase.nodes = std::move(start);
    for (size_t i = 0; i < pods.size(); ++i) add(phase.nodes[static_cast<size_t>(where[i])], pods[i]);
    return;
  }
  phase.proven = search.budget >= 0;
  phase.unplaced.insert(phase.unplaced.end(), left.begin(), left.end());
}

/// When `phase` left pods out: could the pool hold everything the phase holds, arranged anew? The
/// pods already there went where they went (first fit, the scheduler's spreading), and another
/// arrangement may hold them all; then the phase takes it, and whether the scheduler finds it is a
/// note, not an error. Returns whether it did.
bool rearrange(const PoolPlacement& pool, Phase& phase) {
  if (phase.unplaced.empty()) return false;
  std::vector<FinalPod> all = phase.unplaced;
  for (const auto& n : phase.nodes) all.insert(all.end(), n.pods.begin(), n.pods.end());
  Phase fresh{phase.name, std::vector<NodeLoad>(phase.nodes.size()), {}, true};
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
    for (const auto& p : n.pods) (p.kind == "system" ? system : rest).push_back(p);
  if (system.empty()) return false;
  Phase fresh{phase.name, std::vector<NodeLoad>(phase.nodes.size()), {}, true};
  pack(pool, fresh, std::move(rest));
  if (!fresh.unplaced.empty()) return false;
  std::vector<Phase> lived;
  for (PoolPlacement* o : others) lived.push_back(o->phases.front());
  for (const auto& pod : system) {
    bool placed = false;
    for (size_t i = 0; i < others.size() && !placed; ++i)
      for (auto& n : lived[i].nodes)
        if (others[i]->fits(n, pod)) {
          add(n, pod);
          placed = true;
          break;
        }
    if (!placed) return false;
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
  Phase lived{"long-lived", std::vector<NodeLoad>(static_cast<size_t>(std::max(0, out.nodes))), {}, true};
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
         n.gpus + p.gpus <= room_gpus && n.chips + p.chips <= room_chips;
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
  for (const auto& st : sys.steps)
    if (const Pool* p = sys.pool(st.pool); p && p->tpu) a.jobset = true;
  return a;
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
    cores += p.cores();
    bytes += p.bytes();
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
  std::vector<FinalPod> out;
  add_pods(out, std::move(pod), step.nodes * step.slices);
  return out;
}

std::optional<int> nodes_needed(const PoolPlacement& p, const std::vector<FinalPod>& pods, int limit, int from) {
  for (int n = std::max(1, from > 0 ? from : p.nodes); n <= limit; ++n) {
    Phase empty{"", std::vector<NodeLoad>(static_cast<size_t>(n)), {}, true};
    pack(p, empty, pods);  // the pool's room per node; the node count is the phase's
    if (empty.unplaced.empty()) return n;
    if (!empty.proven) return std::nullopt;
  }
  return std::nullopt;
}

Placement place(const System& sys) {
  std::map<std::string, PoolPlacement> pools;
  auto get = [&](const std::string& name) -> PoolPlacement* {
    const Pool* p = sys.pool(name);
    if (!p) return nullptr;
    return &pools.try_emplace(name, make_pool(*p)).first->second;
  };
  Placement out;
  if (sys.pools.empty()) return out;  // an existing cluster: nothing to judge it by
  // The other pools the system pods may use than `name`.
  auto others = [&](const std::string& name) {
    std::vector<PoolPlacement*> o;
    for (const auto& n : open_pools(sys, 0))
      if (n != name) o.push_back(get(n));
    return o;
  };

  // The system pods are there before trainc's: each goes to the untainted node with the most room
  // left, as the scheduler's default scoring (least allocated) puts it.
  for (const auto& pod : system_pods(sys, addons_of(sys))) {
    NodeLoad* best = nullptr;
    double best_left = -1;
    for (const auto& name : open_pools(sys, pod.gpus)) {
      PoolPlacement* pp = get(name);
      for (auto& n : pp->phases.front().nodes)
        if (pp->fits(n, pod) && pp->room_cores - n.cores > best_left) {
          best = &n;
          best_left = pp->room_cores - n.cores;
        }
    }
    if (best) add(*best, pod);
    else out.nowhere.push_back({"system", pod});
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
  for (const auto& pod : anywhere) {
    bool placed = false;
    for (const auto& name : open_pools(sys, pod.gpus)) {
      PoolPlacement* pp = get(name);
      Phase& lived = pp->phases.front();
      auto it = std::find_if(lived.nodes.begin(), lived.nodes.end(), [&](const NodeLoad& n) { return pp->fits(n, pod); });
      if (it == lived.nodes.end()) continue;
      add(*it, pod);
      placed = true;
      break;
    }
    if (!placed) out.nowhere.push_back({"long-lived", pod});
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

}  // namespace trainc
