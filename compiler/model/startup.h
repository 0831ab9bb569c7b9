#pragma once
// How long a system's pods may take to start, and Kueue admission, which waits for a workload's
// pods to be ready (waitForPodsReady, k8s/queue.h) before it counts as started.
#include <string>

namespace trainc {

/// A service's default startupTimeout; k8s/queue.h's pods-ready timeout reuses it.
inline constexpr int kDefaultStartupSeconds = 600;

/// Kueue admission for the system's batch workloads.
struct Queue {
  std::string name;  ///< the LocalQueue and ClusterQueue
  std::string ptr;
  int pods_ready_timeout_seconds = 0;  ///< spec `podsReadyTimeout`; 0: derived (k8s/queue.h pods_ready)
};

}  // namespace trainc
