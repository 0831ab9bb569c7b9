#pragma once
// Each subcommand registers itself on the CLI; its callback stores the exit code in `rc`.
#include <CLI/CLI.hpp>

namespace trainrt {

/// Exit codes shared by every subcommand.
enum Exit : int {
  kOk = 0,
  kFailed = 1,        ///< the work failed (a bad input file, a diverged rank, ...)
  kUsage = 2,         ///< bad flags
  kNoGpu = 3,         ///< a GPU was required and none is usable
  kRankTimeout = 4,   ///< a peer never joined within the timeout
  kProbeFailed = 5,   ///< a probe's condition does not hold
};

void add_datagen(CLI::App& app, int& rc);
void add_inspect(CLI::App& app, int& rc);
void add_train(CLI::App& app, int& rc);
void add_preflight(CLI::App& app, int& rc);
void add_probe(CLI::App& app, int& rc);

}  // namespace trainrt
