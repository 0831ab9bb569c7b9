#include "k8s/failure.h"

namespace trainc::k8s {

using ojson = nlohmann::ordered_json;

ojson pod_failure_policy(const Step& step, bool in_jobset) {
  ojson rules = ojson::array();
  // First, so a disrupted pod is never judged by the exit code its termination gave it.
  rules.push_back({{"action", in_jobset ? "FailJob" : "Ignore"},
                   {"onPodConditions", ojson::array({{{"type", "DisruptionTarget"}, {"status", "True"}}})}});
  if (!step.no_retry_exit_codes.empty())
    rules.push_back({{"action", "FailJob"},
                     {"onExitCodes", {{"containerName", step.name}, {"operator", "In"}, {"values", step.no_retry_exit_codes}}}});
  return {{"rules", rules}};
}

ojson jobset_failure_policy(const Step& step) {
  ojson rules = ojson::array();
  rules.push_back({{"name", "disruption"},
                   {"action", "RestartJobSetAndIgnoreMaxRestarts"},
                   {"onJobFailureReasons", {"PodFailurePolicy"}},
                   {"onJobFailureMessagePatterns", {std::string(kDisruptionMessage)}}});
  if (!step.no_retry_exit_codes.empty())
    rules.push_back({{"name", "noRetryExitCode"},
                     {"action", "FailJobSet"},
                     {"onJobFailureReasons", {"PodFailurePolicy"}},
                     {"onJobFailureMessagePatterns", {std::string(kExitCodeMessage)}}});
  // A step past its `timeout` is done: its Jobs' activeDeadlineSeconds ends it, not a new attempt.
  if (step.timeout_seconds)
    rules.push_back({{"name", "timeout"}, {"action", "FailJobSet"}, {"onJobFailureReasons", {"DeadlineExceeded"}}});
  // Anything else: JobSet's default action, RestartJobSet, which counts against maxRestarts.
  return {{"maxRestarts", step.retries}, {"restartStrategy", "BlockingRecreate"}, {"rules", rules}};
}

}  // namespace trainc::k8s
