#pragma once
// Step runs named by what they run (k8s/names.h job_name): each step's run id is a hash of its
// objects as the k8s emitter builds them with the step's plain name, of the runs of the steps it
// needs, and of the images of the cluster it runs on. The same spec compiled again (by this or a
// later trainc) names the same runs exactly when it would write the same objects, so applying it
// again starts nothing; a change starts a new run of the changed step and of every step after it.
#include "model/model.h"

namespace trainc {

/// Sets Step::run_id of every step of `sys` (after the checks, before emission).
void name_runs(System& sys);

}  // namespace trainc
