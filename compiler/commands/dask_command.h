#pragma once
// The Dask engine's command lines, built once: the Deployments run them (container_argv) and
// `trainc run --local` runs the same ones on loopback (argv), so a broken flag fails the local
// run's test rather than a pod.
#include <string>

#include "commands/trainrt_command.h"
#include "model/model.h"

namespace trainc::dask {

inline constexpr int kCommPort = 8786;
inline constexpr int kDashboardPort = 8787;
/// The pod's name, which each worker takes as its Dask name.
inline constexpr std::string_view kPodNameVar = "POD_NAME";

/// `dask scheduler` listening on the comm and dashboard ports; on `host` alone when given (a pod
/// listens on every interface, as its peers are other pods; a local run on loopback alone).
trainrt::Command scheduler(int port = kCommPort, int dashboard_port = kDashboardPort, const std::string& host = "");
/// `dask worker` (CPU pools) or `dask cuda worker` (one worker process per GPU) of `group`,
/// connecting to `address` (tcp://host:port); its nanny, worker and dashboard listen on `host`
/// alone when given.
trainrt::Command worker(const Dask& d, const PodGroup& group, const std::string& address,
                        const std::string& host = "");
/// Memory one worker process may use: the pod's memory limit split over its processes (bytes).
long long worker_memory_limit(const PodGroup& group);

}  // namespace trainc::dask
