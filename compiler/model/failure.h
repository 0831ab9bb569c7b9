#pragma once
// What ends an attempt of a step, and what the attempt costs. A step's pods run its entry script
// (k8s/entry_script.h), whose exit code is the container's; Kubernetes (a Job's podFailurePolicy,
// a JobSet's failurePolicy) and `trainc run --local` read the same codes:
//  - a disruption (preemption, node drain: the pod's DisruptionTarget condition) restarts the
//    step without spending a retry;
//  - an exit code in Step::no_retry_exit_codes fails the step at once;
//  - anything else spends one of the step's `retries`.
#include <string>
#include <string_view>

namespace trainc {

/// The entry script's exit code when its preflight fails: 78, sysexits.h's EX_CONFIG
/// ("configuration error"). Distinct from what trainers and shells exit with on their own (1 for a
/// Python exception, 2 for usage errors, 126/127 from the shell for a command it cannot run, 128+N
/// for a signal: 137 an OOM kill or SIGKILL, 143 SIGTERM), so it can fail the step at once.
inline constexpr int kPreflightExit = 78;

/// The entry script's exit code when a sync with storage fails (sysexits.h's EX_TEMPFAIL): a
/// store's or the network's trouble, worth a retry whatever the trainer's codes are.
inline constexpr int kSyncFailedExit = 75;

/// Exit codes that fail a step at once when the spec names none (`noRetryExitCodes`): the shell's
/// 126 (found but not executable) and 127 (not found), which no retry of the same image changes.
/// kPreflightExit is always added.
inline constexpr int kDefaultNoRetryExitCodes[] = {126, 127};

/// Seconds a step's pod gets between SIGTERM and SIGKILL (terminationGracePeriodSeconds) when it
/// syncs outputs or keeps checkpoints: room for the final sync of its outputs, or the trainer's last
/// checkpoint write. `trainc run --local` gives its pods the same.
inline constexpr int kSyncGraceSeconds = 300;

/// ... and otherwise: Kubernetes' default terminationGracePeriodSeconds, which the pod spec leaves.
inline constexpr int kDefaultGraceSeconds = 30;

/// The step's log in its pod, which the entry script writes (everything the trainer prints): the
/// heartbeat unless the spec names another file.
inline constexpr std::string_view kStepLogPath = "/tmp/trainc/step.log";

/// The liveness check: the pod is ended when the heartbeat has not been refreshed for
/// max_age_seconds (a stalled trainer or collective), which spends a retry.
struct Heartbeat {
  int max_age_seconds = 3600;
  std::string file{kStepLogPath};  ///< absolute path; the step's log unless the spec names a file
};

}  // namespace trainc
