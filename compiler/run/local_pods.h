#pragma once
// torchrun and command steps under `trainc run --local`: each of the step's pods becomes a copy
// of its entry script (the bytes its ConfigMap carries) run by bash in a folder of its own, the
// pod's root (TRAINC_POD_ROOT), with the environment the pod gets: the rendezvous variables of
// k8s::rendezvous_env with loopback for the address, the step's env, and the local S3 server's
// credentials. PyTorch runs with gloo on the CPU.
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "model/model.h"
#include "run/local_runner.h"

namespace trainc {

/// The python3 of the environment tools/install-python.sh installs (PyTorch 2, Ray):
/// ${TRAINC_PYTHON_HOME:-${XDG_CACHE_HOME:-~/.cache}/trainc/python}/current/bin/python3.
std::filesystem::path project_python();

/// A python3 that imports every module of `modules`: `given` (--python), else $TRAINC_PYTHON, else
/// the project's environment (project_python), else the first python3 on PATH that does; "" when
/// there is none (or the one chosen by --python or TRAINC_PYTHON does not).
std::filesystem::path find_python(const std::filesystem::path& given, const std::vector<std::string>& modules);

/// The versions the run's programs report, "" for what is missing: "python" and each of `modules`
/// (torch, ray, ...) as `python` imports them.
std::map<std::string, std::string> python_versions(const std::filesystem::path& python,
                                                   const std::vector<std::string>& modules);

/// Writes python3, python and torchrun into `bin`, each running `python`, so that the entry
/// scripts' `torchrun` (and a command's `python3`) is the one with torch. With torch 2 or later
/// (`torch_version`), torchrun's agent gives its workers loopback as the store's address.
void write_python_shims(const std::filesystem::path& bin, const std::filesystem::path& python,
                        const std::string& torch_version = "");

/// Processes per node a step runs with here: its own, lowered when nodes × processes exceed
/// `max_ranks`, down to one per node (the nodes are kept: the rendezvous is what is rehearsed).
int local_procs_per_node(const Step& step, int max_ranks);

/// HOME of a process run from `root` (a pod's folder): a folder of its own, as this shell's home is
/// not the pod's.
std::filesystem::path pod_home(const std::filesystem::path& root);

/// Seconds a pod of `step` is given between SIGTERM and SIGKILL: its pod's
/// terminationGracePeriodSeconds (emit/emit_k8s.cpp: kSyncGraceSeconds when it syncs outputs or
/// keeps checkpoints, so the final sync can finish; else Kubernetes' default, kDefaultGraceSeconds).
int termination_grace_seconds(const Step& step);

/// Runs `step` of `sys` (the run's copy, whose S3 stores point at the local server) as its pods;
/// each pod's environment is `env` (PATH, credentials, the run's plumbing) and its own, and
/// nothing else of this shell's. The pods are one gang, as on the cluster (model/failure.h): the
/// first that fails stops the others and the step starts again whole, fresh pods resuming from the
/// newest checkpoint; a failure spends one of the step's `retries`, a disruption (--preempt)
/// none, and an exit code in its noRetryExitCodes ends the step at once. `faults` (all for this
/// step) are inflicted on its pods as they fall due. Returns 0, else the exit code of the pod whose
/// failure ended the step (128 + the signal when trainc itself was interrupted).
int run_pod_step(const System& sys, const Step& step, const LocalRunOptions& opt,
                 const std::map<std::string, std::string>& env, std::vector<Fault> faults = {});

}  // namespace trainc
