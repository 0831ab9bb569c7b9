#pragma once
// Sections of the generated runbook (README.md) written beside emit_runbook.cpp.
#include <string>

#include "commands/command.h"
#include "k8s/plan.h"
#include "model/model.h"

namespace trainc {

/// How the runbook's commands act: on the current context, on files named from the output folder.
inline KubeTarget runbook_target() { return {"", "", true}; }

/// The runbook's Kueue section (emit_runbook_queue.cpp): what admission does and, on pools placed
/// by topology, what each queued workload asks and how to see where its pods landed; "" without
/// `queue`.
std::string queue_runbook_section(const System& sys);

/// How to follow RayJob `done` of step `st` (emit_runbook_ray.cpp): `kubectl get rayjob -w`, and
/// `ray job logs` on the head by the submission id the RayJob's status records.
std::string ray_job_watch(const System& sys, const Step& st, const k8s::Object& done);
/// Why a RayJob has no Job to follow, and where its state and output are.
std::string ray_job_watch_note();

/// The runbook's Pod security section (emit_runbook_security.cpp): the Pod Security Standard each
/// workload's pods meet and every pod that is not `restricted`, with the spec's reason and what
/// trainc found the pods do; "" when every pod is restricted and no risk is accepted.
std::string security_runbook_section(const System& sys, const k8s::Plan& plan);

/// The runbook's "Change and re-run" section (emit_runbook_change.cpp): the steps each step's change
/// runs again, the objects that roll, what cannot change in place, and `trainc plan --against`.
std::string change_runbook_section(const System& sys, const k8s::Plan& plan);

/// The runbook's "When a step fails" section (emit_runbook_failures.cpp): what a disruption, a
/// no-retry exit code and any other failure cost each step, and how to see which pod failed first,
/// why, the failed attempt's log and the retries left; "" without Jobs or JobSets.
std::string failures_runbook_section(const System& sys, const k8s::Plan& plan);

}  // namespace trainc
