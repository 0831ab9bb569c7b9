#pragma once
// Each subcommand registers itself on the CLI; its callback stores the exit code in `Run::rc`.
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <string>

#include "report.h"

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

/// The subcommand as typed: "datagen"; "live" under "probe" is "probe live".
inline std::string command_name(const CLI::App& command) {
  std::string name = command.get_name();
  for (const CLI::App* up = command.get_parent(); up != nullptr && up->get_parent() != nullptr; up = up->get_parent())
    name = up->get_name() + " " + name;
  return name;
}

/// What the top level shares with every subcommand's callback.
struct Run {
  int rc = kOk;
  /// --check-args: parse and check the flags as for a real run, then stop before any work.
  bool check_args = false;

  /// Called by a subcommand once its flags are parsed and checked, just before it would start
  /// work. With --check-args prints "trainrt SUB: arguments ok" (and `note`, if any, reported as
  /// a note), sets rc to kOk and returns true: the caller returns. Otherwise returns false.
  bool stop_before_work(const CLI::App& command, const std::string& note = "") {
    if (!check_args) return false;
    fmt::print("trainrt {}: arguments ok\n", command_name(command));
    if (!note.empty()) report(note, Level::note);
    rc = kOk;
    return true;
  }
};

void add_datagen(CLI::App& app, Run& run);
void add_inspect(CLI::App& app, Run& run);
void add_train(CLI::App& app, Run& run);
void add_preflight(CLI::App& app, Run& run);
void add_probe(CLI::App& app, Run& run);

}  // namespace trainrt
