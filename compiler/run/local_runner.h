#pragma once
// `trainc run --local`: runs a spec's trainrt steps, and its Dask clusters with their client
// steps, on this machine in dependency order, so a pipeline can be smoke-tested before renting
// GPUs. Stores become folders; a multi-node step's ranks become local processes on loopback; a Dask
// cluster is started on loopback with the command lines its pods run.
#include <filesystem>
#include <string>

#include "model/model.h"

namespace trainc {

struct LocalRunOptions {
  double scale = 1.0;                  ///< multiplies every datagen step's rows
  std::filesystem::path workdir;       ///< stores live in workdir/stores/<store>
  std::filesystem::path trainrt;       ///< the trainrt binary
  std::filesystem::path tracker;       ///< XGBoost 1.7's Python tracker script (distributed steps)
  std::filesystem::path spec_dir;      ///< where client steps of a Dask cluster run (their scripts)
  int threads = 0;                     ///< per process; 0 = trainrt's default
  double max_local_bytes = 2.0 * (1ull << 30);  ///< refuse bigger tables without --scale
};

/// Runs the steps; returns 0 when all succeeded, else the failing step's exit code (or 2 for
/// setup errors). Prints progress to stdout and errors to stderr.
int run_local(const System& sys, const LocalRunOptions& opt);

/// Rows a datagen step makes at `scale` (lowering resolved `size` into rows).
long long scaled_rows(const Datagen& d, double scale);

}  // namespace trainc
