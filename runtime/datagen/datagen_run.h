#pragma once
// `trainrt datagen` after flag parsing: check the spec, claim the folder, skip the shards that
// are already complete, generate the rest, and write the table's metadata once all are there.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "datagen/spec.h"

namespace trainrt::datagen {

enum class Device { kCpu, kCuda };

struct RunOptions {
  Spec spec;
  Layout layout;
  std::string out_dir;
  std::optional<uint32_t> shard_index;  ///< only this shard; default all
  Device device = Device::kCpu;
  unsigned threads = 0;  ///< CPU worker threads; 0: one per hardware thread
  bool quiet = false;
  bool fsync = true;  ///< fsync each shard before its rename (--no-fsync: rely on the rerun's checks instead)
  bool dry_run = false;  ///< generate the rows and print their checksum (as inspect would), write nothing
};

/// What makes these options a usage error (exit kUsage), one message per problem; empty when
/// datagen can run. run_datagen() checks this first; `trainrt --check-args datagen` stops after it.
std::vector<std::string> usage_errors(const RunOptions& opt);

/// Runs datagen and returns the process exit code (commands.h), reporting problems (report.h).
int run_datagen(const RunOptions& opt);

}  // namespace trainrt::datagen
