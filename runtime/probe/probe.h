#pragma once
// The exec probes the generated manifests use. Each check returns an exit code and one line per
// finding, so a failing probe's output (which the kubelet records in the pod's events) says why.
#include <chrono>
#include <string>
#include <vector>

#include "probe/duration.h"

namespace trainrt {

struct ProbeResult {
  int code = 0;                    ///< kOk or kProbeFailed
  std::vector<std::string> lines;  ///< what was found; on failure, each line is one problem
};

/// Liveness: `heartbeat` exists and was modified at most `max_age` before `now`. A file stamped in
/// the future (clock skew between nodes sharing a volume) counts as fresh.
ProbeResult check_heartbeat(const std::string& heartbeat, Millis max_age,
                            std::chrono::system_clock::time_point now = std::chrono::system_clock::now());

/// Readiness: every path exists and is readable; a directory must also be listable (a GCS FUSE
/// mount whose bucket is unreachable fails here, not at the first read of a training step).
ProbeResult check_ready(const std::vector<std::string>& paths);

}  // namespace trainrt
