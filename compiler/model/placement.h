#pragma once
// The cluster model: trainc's pods as the cluster will run them (with the containers GKE's
// webhooks and the operators add), packed onto their pools' nodes at each pool's largest size,
// next to the DaemonSets every node runs (catalog `daemonSets`).
//
// What runs at once decides what must fit together: the long-lived pods (services at their most
// replicas, compute clusters' leads and groups at their largest) share the pools for as long as
// the system is up; each step's pods come on top of them. A pod that cannot be placed would stay
// Pending: the cluster autoscaler adds no node for a pod that would not fit an empty one, and a
// pool at its maximum gets no more nodes.
//
// Pods and nodes are counted, not listed: a workload's identical pods are one entry with a count,
// and a pool's identical nodes one entry with a count, so the work grows with the kinds of pods,
// not with how many a spec asks for (a step of 100,000 pods is one entry). Packing is first-fit
// decreasing, done a run of identical pods at a time; when that leaves pods out, a pod no empty
// node holds or more than all the nodes hold together is proven out at once, and a small enough
// case is searched exactly (the nodes of a pool are interchangeable, so equal nodes are tried
// once) within one work budget for the whole system; past it the result says it is unproven. Selectors and taints decide the pools: a pod that names a pool runs there; one
// that names none runs on a pool whose taints it tolerates (GKE taints GPU and TPU nodes).
#include <memory>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "model/model.h"

namespace trainc {

/// One container of a final pod: trainc's own, or one a webhook or operator adds.
struct PodContainer {
  std::string name;
  double cores = 0, bytes = 0;  ///< requests
  std::string added_by;         ///< "" for trainc's own container
  PodSecurityLevel level = PodSecurityLevel::kRestricted;  ///< the Pod Security level it meets
  bool init = false;  ///< an init container: its requests do not add to the pod's
};

/// `count` identical pods of one workload, numbered from `index`; cores() and the rest are one pod's.
struct FinalPod {
  std::string kind;      ///< step/<kind>, cluster/<engine>, service/<server>
  std::string workload;  ///< the step, "<cluster>/<group>", or the service
  std::string ptr;       ///< where the spec declares what the pod asks for
  std::string pool;      ///< "" = any pool whose taints it tolerates
  long long index = 0, of = 1;  ///< the first pod's number among its workload's `of` pods
  long long gpus = 0, chips = 0;
  std::vector<PodContainer> containers;
  long long count = 1;  ///< how many pods this entry stands for
  double cores() const;
  double bytes() const;
};

/// `count` identical nodes of a pool, and what each holds: node t of them (from 0) holds, of
/// each entry of `pods`, the pods numbered index + t * count to index + (t + 1) * count - 1.
struct NodeLoad {
  std::vector<FinalPod> pods;
  double cores = 0, bytes = 0;  ///< one node's
  long long gpus = 0, chips = 0;
  long long count = 1;
  long long slots = 0;  ///< pods one node holds (each takes one of the node's pods)
};

/// How many pods the entries stand for.
long long pod_count(const std::vector<FinalPod>& pods);

/// One moment of the system's life on one pool: the long-lived pods, or those and one step's.
struct Phase {
  std::string name;  ///< "long-lived", or "step <name>"
  std::vector<NodeLoad> nodes;
  std::vector<FinalPod> unplaced;
  bool proven = true;  ///< false when the exact search stopped at its bound before deciding
};

/// The work the exact searches of one system may do together, shared by place() and the checks.
struct SearchBudget {
  long left = 0;
};

struct PoolPlacement {
  const Pool* pool = nullptr;
  std::shared_ptr<SearchBudget> budget;  ///< the system's; null: a budget of its own per search
  int nodes = 0;  ///< at the pool's largest, over all of its node pools
  double room_cores = 0, room_bytes = 0;  ///< per node: allocatable less the DaemonSet reserve
  long long room_gpus = 0, room_chips = 0;
  long long room_pods = 0;  ///< GKE's maximum pods per node less the DaemonSets'
  std::vector<Phase> phases;
  bool fits(const NodeLoad& n, const FinalPod& p) const;
  /// How many more pods like `p` one node loaded as `n` holds (kMany for a pod that asks nothing).
  long long room_for(const NodeLoad& n, const FinalPod& p) const;
  static constexpr long long kMany = 1LL << 50;
};

struct Placement {
  std::vector<PoolPlacement> pools;  ///< pools with at least one pod, by name
  /// Pods that name no pool and find no room on a pool whose taints they tolerate, by phase.
  std::vector<std::pair<std::string, FinalPod>> nowhere;
  /// Steps that may start together and do not fit together: the later ones wait (not an error).
  std::vector<std::string> notes;
  const PoolPlacement* pool(const std::string& name) const;
};

/// The add-ons the system installs (k8s::Plan's needs_*), which decide the operators' pods.
struct Addons {
  bool kuberay = false, istio = false, metrics_adapter = false, kueue = false, jobset = false;
};

/// The add-ons `sys` needs: KubeRay for engines whose addon() names it, Istio when the spec has
/// it installed, the metrics adapter for services that autoscale, Kueue with a queue, JobSet for
/// the steps that run as JobSets (k8s::Plan installs exactly these).
Addons addons_of(const System& sys);
/// Whether `step` runs as a JobSet: on a TPU pool (a slice), or a gang of pods that restart
/// together; not when a compute cluster runs it (a RayJob, or a Dask client's Job).
bool runs_as_jobset(const System& sys, const Step& step);
/// Whether GKE taints the GPU nodes of `sys` (nvidia.com/gpu): only beside a pool without
/// accelerators, which then holds the system pods.
bool gpu_pools_tainted(const System& sys);
/// The pools a pod that names none may run on: those whose taints it tolerates.
std::vector<std::string> open_pools(const System& sys, long long gpus);
/// What every whole-node pod on `pool` leaves for the system pods that may land there: all of
/// them, when the pool takes pods that name no pool; else nothing.
std::pair<double, double> system_share(const System& sys, const Pool& pool);
/// The Deployments of GKE and of the add-ons that land on untainted nodes (catalog systemPods).
std::vector<FinalPod> system_pods(const System& sys, const Addons& addons);
/// The long-lived pods of the system, as the cluster runs them.
std::vector<FinalPod> long_lived_pods(const System& sys);

/// What the long-lived pods of a system take of each pool at their largest, counted once: the
/// checks and the runbook ask for every pool and every worker group, and a system may have many.
class LongLivedLoad {
 public:
  explicit LongLivedLoad(const System& sys);
  /// As capacity_left(sys, pool, except).
  PoolCapacity left(const Pool& pool, const PodGroup* except = nullptr) const;
  /// The cores and bytes of one pod of workload `workload` ("CLUSTER/GROUP") as the cluster runs it,
  /// sidecars included; {0, 0} when there is none.
  std::pair<double, double> pod(const std::string& workload) const;

 private:
  struct Use {
    double cpu = 0, memory = 0;
    long long gpus = 0;
  };
  std::map<std::string, Use> by_pool_;
  std::map<std::pair<std::string, std::string>, Use> by_ptr_pool_;  ///< (the group's ptr, pool)
  std::map<std::string, std::pair<double, double>> pods_;
};

/// As group_capacity, with the long-lived pods counted once (`load`, of `sys`).
std::optional<int> group_capacity(const LongLivedLoad& load, const System& sys, const ComputeCluster& c,
                                  const PodGroup& g);

/// The pods of `step` (none when a cluster runs it without pods of its own).
std::vector<FinalPod> step_pods(const System& sys, const Step& step);
/// Every pod packed onto its pool: the system pods first, spread over the untainted nodes as the
/// scheduler spreads them (onto the node with most room), then the long-lived pods, then each
/// step's on top of them.
Placement place(const System& sys);
/// How many more pods of the long-lived workload `workload` (a service, or "<cluster>/<group>")
/// the long-lived phases of the pools its pods are on hold beside everything placed there, at
/// most `limit`: the room a rolling update's surge pods find with the system at its largest.
/// nullopt when none of its pods is placed (no pools to judge by).
std::optional<long long> surge_room(const Placement& placed, const std::string& workload, long long limit);
/// The fewest nodes, at least `from` (0: the pool's own count) and at most `limit`, of pool `p`
/// that hold `pods` (its current pods included); nullopt when none does, or none is found within
/// the search budget. Bounded below by what the pods ask together and above by first fit
/// decreasing, never by trying each count.
std::optional<long long> nodes_needed(const PoolPlacement& p, const std::vector<FinalPod>& pods, long long limit,
                                      long long from = 0);

}  // namespace trainc
