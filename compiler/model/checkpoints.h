#pragma once
// Where a step's checkpoints live, and which of them a run resumes: the one reading of
// `checkpoints` that lowering, the checks, the entry script and `trainc run --local` share.

#include <optional>
#include <string>
#include <string_view>

#include "model/model.h"

namespace trainc {

/// Whether pod path `inner` is `outer` or below it (both absolute and normalised).
bool path_within(std::string_view inner, std::string_view outer);

/// The writable mount (a GCS bucket) that holds the step's checkpoint folder, if one does.
const Mount* checkpoint_mount(const Step& step);

/// The checkpoint folder's place under outputs.path when the checkpoints travel with the outputs
/// (synced with S3; "" for outputs.path itself), or nothing when a writable mount holds them or
/// the folder is outside the outputs (which check refuses).
std::optional<std::string> checkpoints_in_outputs(const Step& step);

/// Whether each run marks its start in the checkpoint folder (a .trainc-run-<id> file) and resumes
/// only what it wrote since: every `resumeFrom` but `previous`, under which runs continue each
/// other and no run's checkpoints are pruned.
bool runs_keep_apart(const Step& step);

}  // namespace trainc
