#include <fmt/format.h>

#include "base/data_path.h"
#include "base/overloaded.h"
#include "base/units.h"
#include "checks/checks.h"
#include "k8s/names.h"
#include "model/goodput.h"

namespace trainc {
namespace {

/// Whether the step's own program decides when it checkpoints, so the spec should say how often:
/// a user's trainer does; trainrt's xgboost checkpoints every `checkpointEvery` rounds and datagen
/// resumes by shard, both by themselves.
bool user_trainer(const Step& step) {
  return match(
      step.run, [](const Torchrun&) { return true; }, [](const Command&) { return true; },
      [](const Datagen&) { return false; }, [](const XGBoost&) { return false; });
}

}  // namespace

void check_checkpoints(const System& sys, const Document& doc, Diagnostics& diags) {
  const FailureBook& book = failure_book();
  for (const Step& step : sys.steps) {
    // `timeout` bounds a Job's whole life, every attempt's startup and training included, and each
    // attempt of a JobSet (a gang or TPU step: a restart makes new Jobs with a fresh deadline); a
    // checkpoint comes after `every` of training. An interval as long cannot pass: no checkpoint of
    // the run is ever there for a restarted attempt to resume from.
    if (step.checkpoints && step.checkpoints->every_seconds && step.timeout_seconds &&
        *step.checkpoints->every_seconds >= *step.timeout_seconds)
      doc.error(diags, ptr_key(step.checkpoints->ptr, "every"),
                fmt::format("step '{}' writes a checkpoint after every {} of training, but its timeout ends {} after "
                            "{}{}: no checkpoint would ever be written for a restarted attempt to "
                            "resume from; make 'every' shorter than {}, or raise 'timeout'",
                            step.name, format_duration(*step.checkpoints->every_seconds),
                            k8s::runs_as_jobset(sys, step) ? "each attempt" : "it",
                            format_duration(*step.timeout_seconds),
                            k8s::runs_as_jobset(sys, step) ? "" : ", retries included",
                            format_duration(*step.timeout_seconds)),
                Anchor::value, {doc.note(ptr_key(step.ptr, "timeout"), "the timeout is set here")});
    const long long gpus = static_cast<long long>(step.gpus) * step.nodes * step.slices;
    if (gpus == 0 || step.nodes * step.slices < 2 || !step.cluster.empty() || !user_trainer(step)) continue;
    if (step.checkpoints && step.checkpoints->every_seconds) continue;
    // A spot pool's preemptions end attempts too (stdlib/failures.yaml, an assumption).
    const Pool* pool = sys.pool(step.pool);
    const long long spot_nodes = pool && pool->provisioning == "spot" ? static_cast<long long>(step.nodes) * step.slices : 0;
    const StepFailures f = step_failures(gpus, book, spot_nodes);
    const int cost = step.checkpoints && step.checkpoints->cost_seconds ? *step.checkpoints->cost_seconds
                                                                        : book.checkpoint_cost_seconds();
    const std::string expects =
        fmt::format("its {} GPUs expect {} failures a day ({} to {} at the rates of stdlib/failures.yaml{})", gpus,
                    approx_number(f.per_day[1]), approx_number(f.per_day[0]), approx_number(f.per_day[2]),
                    spot_nodes > 0 ? fmt::format(", {} of them spot preemptions, an assumption",
                                                 approx_number(f.preemptions[1]))
                                   : "");
    const std::string best = fmt::format("about {} loses least with a {} write; `trainc plan` shows the goodput",
                                         approx_duration(daly_interval(cost, f.mtbf_seconds[1])),
                                         format_duration(cost));
    if (!step.checkpoints) {
      doc.warning(diags, ptr_key(step.ptr, "nodes"),
                  fmt::format("step '{}' runs on {} nodes without checkpoints: {}, and each one starts it again from "
                              "the beginning; have the trainer write checkpoints and add 'checkpoints: {{path: DIR, "
                              "every: DURATION}}' ({})",
                              step.name, step.nodes * step.slices, expects, best),
                  Anchor::key);
    } else {
      doc.warning(diags, step.checkpoints->ptr,
                  fmt::format("the checkpoints of step '{}' say not how often they are written, so the cost of a "
                              "failure is not known: {}; add 'every: DURATION', the training time between two "
                              "writes ({})",
                              step.name, expects, best),
                  Anchor::key);
    }
  }
}

}  // namespace trainc
