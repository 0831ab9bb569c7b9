#pragma once
// The parts of a pool (model.h Pool): its GPUs, TPU slice, taints, and the rungs of its capacity
// ladder. A rung (spec `capacity`) is one way to get a pool's nodes. A laddered pool is
// several GKE node pools, one per rung (Pool::rung_pools(): named <pool>-<suffix>, with the rung's
// provisioning, a reservation rung fixed at its nodes and the others autoscaled from 0), and one
// Kueue ResourceFlavor per rung, listed in ladder order in the ClusterQueue (k8s/queue.h).
#include <string>

namespace trainc {

struct Accelerator {
  std::string type;  ///< node label value, e.g. nvidia-tesla-t4 (also Terraform's guest_accelerator type)
  int count = 0;     ///< GPUs on each node
};

/// A TPU slice: each node pool of a multi-host slice is one slice of `hosts` VMs.
struct TpuSlice {
  std::string generation;   ///< v4, v5e, v5p, v6e
  std::string accelerator;  ///< node label cloud.google.com/gke-tpu-accelerator
  std::string topology;     ///< e.g. 2x4, 2x2x2
  int chips_per_host = 0;   ///< google.com/tpu per node
  int hosts = 1;
  int slices = 1;           ///< identical slices, one GKE node pool each, that a multislice job spans
};

struct Taint {
  std::string key, value, effect;  ///< effect: NoSchedule, PreferNoSchedule, NoExecute
};

/// The node label every rung's nodes carry, valued the laddered pool's name: what its pods select, so
/// that a rung added or removed changes no pod template (Kueue adds the rung's node pool).
inline constexpr const char* kLadderLabel = "trainc.dev/pool";

/// One way to get a pool's nodes, a rung of its capacity ladder (spec `capacity`; a pool with the
/// single `provisioning` form has none, and is its own one rung).
struct Rung {
  std::string provisioning;  ///< reservation, queued, flex-start, spot, standard
  std::string reservation;   ///< with reservation: its name
  std::string project;       ///< a shared reservation's owner ("" = the system's project)
  std::string block, sub_block;
  int nodes = 0;             ///< the most nodes this rung holds (0 = the pool's `nodes`)
  int max_run_seconds = 0;   ///< queued: the ProvisioningRequest's maxRunDurationSeconds (0 = derived)
  std::string ptr;
  /// The GKE node pool's suffix: reserved (reserved-2, ... for more reservations), queued, flex, spot, ondemand.
  std::string suffix;
  /// What GKE's --reservation flag and Terraform's reservation_affinity values name: the reservation,
  /// as projects/P/reservations/R for a shared one, with /reservationBlocks/B[/reservationSubBlocks/S].
  std::string reservation_path() const;
};

}  // namespace trainc
