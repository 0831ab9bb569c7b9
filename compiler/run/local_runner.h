#pragma once
// `trainc run --local`: runs a spec's trainrt steps, its torchrun and command steps, and its Dask
// and Ray clusters with their client steps, on this machine in dependency order, so a pipeline can
// be rehearsed before renting GPUs. GCS stores become folders, S3 stores live on a local S3 server
// (run/local_s3.h); a multi-node step's ranks become local processes on loopback (torchrun and
// command steps through their entry scripts, run/local_pods.h); a Dask cluster is started on
// loopback with the command lines its pods run, a Ray cluster with `ray start` and its steps
// submitted as their RayJobs are (run/local_ray.h).
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "model/model.h"

namespace trainc {

/// A failure `trainc run --local` inflicts on one pod of a torchrun or command step, as the cluster's
/// nodes do (--kill, --preempt, --chaos; model/failure.h says what each costs):
///  - kill: SIGKILL to the pod's process group, a node that crashed: a failed pod, which spends a
///    retry and restarts the step's gang;
///  - preempt: SIGTERM to it, then SIGKILL after the step's termination grace, a preemption or
///    drain (the pod's DisruptionTarget condition): the gang restarts without spending a retry.
/// It fires `seconds` after the pods of the step's first attempt start; one whose attempt ended
/// before its time passes to the next attempt, timed from that attempt's start. With `checkpoints`
/// (`@checkpoint:N[+SECONDS]`) it fires `seconds` after the store the step syncs its checkpoints to
/// holds N of them, in whichever attempt is running then: a failure after a resumable point, however
/// fast or slow this machine is today.
struct Fault {
  enum class Kind { kill, preempt };
  Kind kind = Kind::kill;
  std::string step;      ///< "" = the run's first torchrun or command step
  int pod = 0;           ///< the pod's index: its NODE_RANK, the Job's completion index
  double seconds = 0;
  int checkpoints = 0;   ///< > 0: fires `seconds` after the store holds this many of the step's checkpoints
  std::string option() const;  ///< as the command line spells it: `--kill train:1@12.5`, `--kill 1@checkpoint:2+3`
  std::string when() const;    ///< "12.5 s after the pods of attempt 1 start", "when ... holds 2 checkpoints"
};

struct LocalRunOptions {
  double scale = 1.0;                  ///< multiplies every datagen step's rows
  std::filesystem::path workdir;       ///< stores live in workdir/stores/<store>
  std::filesystem::path trainrt;       ///< the trainrt binary
  std::filesystem::path tracker;       ///< XGBoost 1.7's Python tracker script (distributed steps)
  std::filesystem::path spec_dir;      ///< where client steps of a Dask cluster run (their scripts)
  int threads = 0;                     ///< per process; 0 = trainrt's default
  double max_local_bytes = 2.0 * (1ull << 30);  ///< refuse bigger tables without --scale
  std::filesystem::path python;        ///< a python3 with torch (--python); "" = find one
  std::filesystem::path s3rver;        ///< s3rver's script (--s3rver); "" = find it
  int max_ranks = 0;                   ///< most ranks a torchrun step runs at once; 0 = max(4, cores)
  /// libtrainc-loopback.so, preloaded into what runs a spec's code; "" = not found
  std::filesystem::path loopback_preload;
  /// A folder uploaded into a store before the first step (`--seed STORE[:/PATH]=FOLDER`).
  struct Seed {
    std::string store, path, folder;
  };
  std::vector<Seed> seeds;
  std::vector<Fault> faults;          ///< --kill, --preempt
  std::optional<uint64_t> chaos_seed;  ///< --chaos: one --kill picked from the seed
  double chaos_within = 60;            ///< --chaos-within: the latest second --chaos picks
  bool serve = false;                  ///< --serve: services stay up until interrupted
};

/// Parses `STORE[:/PATH]=FOLDER`; false (and `error`) when malformed.
bool parse_seed(const std::string& text, LocalRunOptions::Seed& seed, std::string& error);

/// Parses `[STEP:]RANK@SECONDS` (SECONDS a number, optionally ending in `s`) or
/// `[STEP:]RANK@checkpoint:N[+SECONDS]` into `fault`, whose kind the caller sets; false (and
/// `error`, naming `flag`) when malformed.
bool parse_fault(const std::string& text, const std::string& flag, Fault& fault, std::string& error);

/// The --kill that --chaos SEED picks: one of `steps` (the run's torchrun and command steps, in
/// order), one of its pods and a time from 1 s to `within` s, in tenths, all from `seed` alone (a
/// SplitMix64 sequence: the same on every machine and build).
Fault chaos_fault(uint64_t seed, const std::vector<const Step*>& steps, double within);

/// Runs the steps; returns 0 when all succeeded, else the failing step's exit code (or 2 for
/// setup errors). Prints progress to stdout and errors to stderr. Nothing the run started outlives
/// it, however it detached itself.
int run_local(const System& sys, const LocalRunOptions& opt);

/// Rows a datagen step makes at `scale` (lowering resolved `size` into rows).
long long scaled_rows(const Datagen& d, double scale);

}  // namespace trainc
