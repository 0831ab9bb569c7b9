// The runbook's "When a step fails" section: what each step's failure costs (model/failure.h,
// k8s/failure.h), and how to see which pod failed first, why, the attempt's log and the retries left.
#include <fmt/format.h>

#include "base/units.h"
#include "emit/runbook.h"
#include "k8s/failure.h"
#include "k8s/names.h"
#include "model/catalog.h"

namespace trainc {
namespace {

std::string codes(const std::vector<int>& c) { return c.empty() ? "none" : fmt::format("{}", fmt::join(c, ", ")); }

/// What happens to the step when one of its pods fails.
std::string what_restarts(const System& sys, const Step& st, const k8s::Object& done) {
  if (done.role == k8s::Role::kJobSet) {
    const Pool* pool = sys.pool(st.pool);
    return pool && pool->tpu ? fmt::format("all {} pods of its {} slice(s) stop and start again", st.nodes * st.slices, st.slices)
                             : fmt::format("all {} pods stop and start again", st.nodes);
  }
  if (st.distributed()) return "that shard's pod starts again; the other shards go on";
  return "its pod starts again";
}

/// The JobSet of a TPU step or a gang: where the coordinator is, and how its attempts are seen.
std::string jobset_commands(const System& sys, const Step& st, const k8s::Object& done, const KubeTarget& kube) {
  const std::string& ns = sys.ns;
  const std::string selector = "jobset.sigs.k8s.io/jobset-name=" + done.name;
  std::string md;
  const Pool* pool = sys.pool(st.pool);
  if (pool && pool->tpu)
    md += fmt::format("Step `{0}` is a JobSet on TPU: {1} slice(s), one Indexed Job each (`{2}-{3}-0` …), one pod per "
                      "host ({4} per slice). Host 0 of slice 0 (`{5}`) coordinates{6}.\n\n",
                      st.name, st.slices, done.name, k8s::kSliceJob, st.nodes, k8s::jobset_coordinator(sys, st),
                      st.multislice() ? fmt::format(": the slices meet at MEGASCALE_COORDINATOR_ADDRESS `{}:{}`",
                                                    k8s::jobset_coordinator(sys, st), catalog().megascale_port())
                                      : "");
  else
    md += fmt::format("Step `{0}` is a JobSet of one Indexed Job (`{1}-{2}-0`), a pod per node; pod `{3}` (rank 0) "
                      "coordinates. A pod's name holds its rank: `{1}-{2}-0-<rank>-<random>`.\n\n",
                      st.name, done.name, k8s::kGangJob, k8s::pod_hostname(sys, st, 0));
  md += "```sh\n";
  md += "# attempts so far: every restart, and those that spent a retry (of maxRestarts)\n";
  md += cmd::kubectl(kube, {"get", "jobset", "-n", ns, done.name, "-o",
                            "jsonpath={.status.restarts} restarts, {.status.restartsCountTowardsMax} of "
                            "{.spec.failurePolicy.maxRestarts} retries spent{\"\\n\"}"})
            .line() + "\n";
  md += "# each restart, the rule that matched (FailurePolicy_disruption, ...) and the Job that failed first\n";
  md += cmd::kubectl(kube, {"get", "events", "-n", ns, "--field-selector", "involvedObject.name=" + done.name,
                            "--sort-by=.lastTimestamp"})
            .line() + "\n";
  md += "# why that Job failed: the first failed pod (its rank), and its exit code or DisruptionTarget\n";
  md += cmd::kubectl(kube, {"get", "events", "-n", ns, "--field-selector", "involvedObject.kind=Job",
                            "--sort-by=.lastTimestamp"})
            .line() + "\n";
  md += "# the current attempt's pods and their state\n";
  md += cmd::kubectl(kube, {"get", "jobs,pods", "-n", ns, "-l", selector, "-o", "wide"}).line() + "\n";
  md += cmd::kubectl(kube, {"logs", "-n", ns, "-f", k8s::logs_ref(done)}).line() + "\n";
  md += "```\n\n";
  return md;
}

std::string job_commands(const System& sys, const Step& st, const k8s::Object& done, const KubeTarget& kube) {
  const std::string& ns = sys.ns;
  std::string md = "```sh\n";
  if (st.distributed()) {
    md += fmt::format("# shards that failed for good, and failures per shard (of backoffLimitPerIndex {})\n", st.retries);
    md += cmd::kubectl(kube, {"get", "job", "-n", ns, done.name, "-o",
                              "jsonpath={.status.failedIndexes} failed; {.status.failed} pod failures{\"\\n\"}"})
              .line() + "\n";
  } else {
    md += "# pod failures so far (a disruption is not one), of backoffLimit\n";
    md += cmd::kubectl(kube, {"get", "job", "-n", ns, done.name, "-o",
                              "jsonpath={.status.failed} of {.spec.backoffLimit}{\"\\n\"}"})
              .line() + "\n";
  }
  md += "# why it failed (the pod, its exit code), and each pod's end\n";
  md += cmd::kubectl(kube, {"get", "events", "-n", ns, "--field-selector", "involvedObject.name=" + done.name,
                            "--sort-by=.lastTimestamp"})
            .line() + "\n";
  md += cmd::kubectl(kube, {"get", "pods", "-n", ns, "-l", "job-name=" + done.name, "-o",
                            "custom-columns=POD:.metadata.name,PHASE:.status.phase,"
                            "EXIT:.status.containerStatuses[0].state.terminated.exitCode,"
                            "REASON:.status.containerStatuses[0].state.terminated.reason"})
            .line() + "\n";
  md += "```\n\n";
  return md;
}

}  // namespace

std::string failures_runbook_section(const System& sys, const k8s::Plan& plan) {
  std::string rows, details;
  const KubeTarget kube = runbook_target();
  for (const auto& w : plan.workloads) {
    const k8s::Object& done = w.done();
    if (done.role != k8s::Role::kJobSet && done.role != k8s::Role::kBatchJob) continue;  // a RayJob: Ray's own
    const Step& st = *w.step;
    rows += fmt::format("| `{}` | {} | {} | {} | {} |\n", st.name, what_restarts(sys, st, done), st.retries,
                        codes(st.no_retry_exit_codes), format_duration(st.heartbeat.max_age_seconds));
    details += done.role == k8s::Role::kJobSet ? jobset_commands(sys, st, done, kube) : job_commands(sys, st, done, kube);
  }
  if (rows.empty()) return "";
  std::string md = "## When a step fails\n\n";
  md += "What ended a step's attempt decides what it costs:\n\n"
        "- **A disruption** (a preempted or drained node, a node that went away: the pod's `DisruptionTarget` "
        "condition) starts the step again and spends no retry.\n"
        "- **An exit code in the step's `noRetryExitCodes`** fails the step at once. 78 is trainc's own: the entry "
        "script's preflight found the image or the spec wrong, and its one line (in the log and the pod's termination "
        "message) says what to fix. A torchrun step exits with its first failed worker's code (a signal N as 128+N), "
        "not torchrun's own 1; the log's \"Root Cause (first observed failure)\" names that worker's rank and host.\n"
        "- **Anything else** spends one of the step's `retries`: a Python exception (exit 1), an OOM kill (137), a "
        "stalled trainer ended by its liveness probe when its heartbeat is older than `heartbeat.maxAge`. In a step "
        "of many pods the liveness probe judges pod 0's log, where rank 0 prints; a stalled collective stops it "
        "too.\n\n"
        "| step | when a pod fails | retries | fail at once on exit codes | stalled after |\n|---|---|---|---|---|\n";
  md += rows + "\n";
  md += "A restarted attempt resumes from the newest checkpoint (`checkpoints`). The pods of a failed attempt are "
        "deleted before the next starts, their logs with them: each attempt's log is kept with the outputs (`outputs."
        "log`, as `trainc-<step>-<start time>.log`)";
  md += sys.gcp ? ", and Cloud Logging keeps every container's output (Logs Explorer: resource type Kubernetes "
                  "Container, namespace `" + sys.ns + "`, pod name starting with the run's name).\n\n"
                : ".\n\n";
  return md + details;
}

}  // namespace trainc
