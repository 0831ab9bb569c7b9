#pragma once
// The bash entry script a step's container runs (shipped in a ConfigMap): sync inputs in, restore
// outputs and find the newest checkpoint, run the trainer with its output teed to the heartbeat
// log, sync outputs out periodically and at the end, forward SIGTERM to the trainer.
#include <string>
#include <vector>

#include "model/model.h"

namespace trainc {

std::string entry_script(const System& sys, const Step& step);

/// The trainer's command line (torchrun or the step's command), as quoted shell words.
std::vector<std::string> trainer_words(const Step& step);

}  // namespace trainc
