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
// Packing is first-fit decreasing, and when that leaves a pod out an exact search (bounded; the
// nodes of a pool are interchangeable, so equal nodes are tried once) decides whether any
// placement exists. Selectors and taints decide the pools: a pod that names a pool runs there; one
// that names none runs on a pool whose taints it tolerates (GKE taints GPU and TPU nodes).
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

struct FinalPod {
  std::string kind;      ///< step/<kind>, cluster/<engine>, service/<server>
  std::string workload;  ///< the step, "<cluster>/<group>", or the service
  std::string ptr;       ///< where the spec declares what the pod asks for
  std::string pool;      ///< "" = any pool whose taints it tolerates
  int index = 0, of = 1;  ///< this pod's number among its workload's pods
  long long gpus = 0, chips = 0;
  std::vector<PodContainer> containers;
  double cores() const;
  double bytes() const;
};

/// What a node of a pool holds and what is on it.
struct NodeLoad {
  std::vector<FinalPod> pods;
  double cores = 0, bytes = 0;
  long long gpus = 0, chips = 0;
};

/// One moment of the system's life on one pool: the long-lived pods, or those and one step's.
struct Phase {
  std::string name;  ///< "long-lived", or "step <name>"
  std::vector<NodeLoad> nodes;
  std::vector<FinalPod> unplaced;
  bool proven = true;  ///< false when the exact search stopped at its bound before deciding
};

struct PoolPlacement {
  const Pool* pool = nullptr;
  int nodes = 0;  ///< at the pool's largest, over all of its node pools
  double room_cores = 0, room_bytes = 0;  ///< per node: allocatable less the DaemonSet reserve
  long long room_gpus = 0, room_chips = 0;
  std::vector<Phase> phases;
  bool fits(const NodeLoad& n, const FinalPod& p) const;
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
/// steps on TPU pools (k8s::Plan installs exactly these).
Addons addons_of(const System& sys);
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
/// The pods of `step` (none when a cluster runs it without pods of its own).
std::vector<FinalPod> step_pods(const System& sys, const Step& step);
/// Every pod packed onto its pool: the system pods first, spread over the untainted nodes as the
/// scheduler spreads them (onto the node with most room), then the long-lived pods, then each
/// step's on top of them.
Placement place(const System& sys);
/// The fewest nodes pool `p` needs to hold `pods` (its current pods included), up to `limit`;
/// nullopt when even `limit` nodes do not.
/// Counts are tried from `from` nodes up (0: from the pool's own count).
std::optional<int> nodes_needed(const PoolPlacement& p, const std::vector<FinalPod>& pods, int limit, int from = 0);

}  // namespace trainc
