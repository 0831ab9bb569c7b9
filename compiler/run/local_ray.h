#pragma once
// Ray clusters under `trainc run --local`: a head and workers started with `ray start`, as the
// cluster's pods start them (KubeRay runs `ray start --head` and `ray start --address`), on loopback
// alone and scaled down; each step on the cluster is submitted to the head's dashboard as KubeRay's
// HTTP mode submits a RayJob's entrypoint (the job API's submit, with the RayJob's runtime env),
// its logs streamed, and its driver's exit code is the step's.
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "model/model.h"
#include "run/local_runner.h"
#include "run/process.h"

namespace trainc {

/// A Ray cluster on this machine: the head's and each worker's `ray start --block`, stopped (and
/// its temporary folder removed) when dropped.
class LocalRay {
 public:
  LocalRay() = default;
  LocalRay(const LocalRay&) = delete;
  LocalRay& operator=(const LocalRay&) = delete;
  ~LocalRay();
  /// Starts cluster `c` with `python`'s Ray: the head, then at most two workers per group, each
  /// with the CPUs its pods request (GPU groups run as CPU workers), every process with `env` (and
  /// nothing else of this shell's), in `cwd` (the files of the cluster's image). Waits until every
  /// node has joined. 0, else an exit code, having said why.
  int start(const ComputeCluster& c, const std::filesystem::path& python, const LocalRunOptions& opt,
            const std::map<std::string, std::string>& env, const std::filesystem::path& cwd);
  /// Submits step `s` (a command on this cluster) as its RayJob is submitted, streams its logs and
  /// returns its driver's exit code; a cluster process that exits meanwhile fails the step.
  int submit(const System& sys, const Step& s);
  const std::string& dashboard() const { return dashboard_; }

 private:
  /// Exit code of the first cluster process that has ended, naming it; nullopt while all run.
  std::optional<int> ended();
  std::string cluster_;
  std::filesystem::path python_, temp_;
  std::map<std::string, std::string> env_;
  std::vector<Child> procs_;
  std::vector<std::string> names_;
  std::string dashboard_;  ///< http://127.0.0.1:PORT
  int jobs_ = 0;
};

}  // namespace trainc
