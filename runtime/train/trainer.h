#pragma once
// The training run: join the collective, load this rank's shards, resume from the newest valid
// checkpoint, boost round by round (metrics, heartbeat, checkpoints), write model.ubj.
#include "train/train_options.h"

namespace trainrt {

/// Runs `trainrt train` with resolved options; returns the exit code (commands.h). Problems are
/// reported (report.h), under "train[RANK]" in a distributed run.
int run_train(const TrainOptions& options);

}  // namespace trainrt
