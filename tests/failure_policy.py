"""What the cluster does when a step's pod fails, judged on the committed goldens (TAP).

For every step Job and JobSet in golden/*/k8s, failures are played through the controllers' own
rules, written here from their sources rather than from trainc's code:

- the Job controller's pod failure policy (KEP-3329; kubernetes pkg/controller/job
  pod_failure_policy.go): rules in order, the first that matches decides; onExitCodes looks at
  the named container's exit code (0 never matches), operator In/NotIn; onPodConditions at the
  pod's conditions; FailJob fails the Job with reason PodFailurePolicy and the message
  "Container %s for pod %s/%s failed with exit code %v matching %v rule at index %d" or
  "Pod %s/%s has condition %v matching %v rule at index %d"; Ignore does not count the pod; no
  match counts it against backoffLimit, past which the Job fails with BackoffLimitExceeded; a Job
  past activeDeadlineSeconds fails with DeadlineExceeded;
- JobSet v0.12.0's failure policy (api/jobset/v1alpha2 jobset_types.go, pkg/controllers
  failure_policy.go): the first rule whose onJobFailureReasons holds the failed Job's reason (any,
  when empty), one of whose onJobFailureMessagePatterns matches its message (RE2, unanchored; any
  when empty) and whose targetReplicatedJobs holds its replicated job (any, when empty) decides;
  no rule: RestartJobSet, counted against maxRestarts.

What a step is meant to do comes from the system's model.yaml (retries, noRetryExitCodes, timeout):
a preemption restarts the step without spending a retry, an exit code the step lists fails it at
once, any other failure spends one of its retries, and running past its timeout fails it.

Usage: failure_policy.py GOLDEN_DIR
"""
import functools
import glob
import os
import re
import sys

import yaml

GOLDEN = sys.argv[1]
results = []


def ok(name, problems):
    results.append((name, problems))


def pod_policy(job, container, exit_code, conditions):
    """The Job controller's decision on one failed pod: (action, index) or (None, None)."""
    rules = (job.get("podFailurePolicy") or {}).get("rules", [])
    for i, rule in enumerate(rules):
        if "onExitCodes" in rule:
            req = rule["onExitCodes"]
            if req.get("containerName") not in (None, container) or exit_code == 0:
                continue
            hit = exit_code in req["values"]
            if (req["operator"] == "In") == hit:
                return rule["action"], i
        for pat in rule.get("onPodConditions", []):
            if conditions.get(pat["type"]) == pat.get("status", "True"):
                return rule["action"], i
    return None, None


def job_failure(job, ns, pod, container, exit_code, conditions):
    """(counted, reason, message) when one pod fails: whether it counts, and how the Job fails
    (reason None: the Job goes on, making the pod again)."""
    action, i = pod_policy(job, container, exit_code, conditions)
    if action == "FailJob":
        rule = job["podFailurePolicy"]["rules"][i]
        if "onPodConditions" in rule:
            cond = rule["onPodConditions"][0]["type"]
            return True, "PodFailurePolicy", "Pod %s/%s has condition %s matching FailJob rule at index %d" % (
                ns, pod, cond, i)
        return True, "PodFailurePolicy", "Container %s for pod %s/%s failed with exit code %d matching FailJob rule at index %d" % (
            container, ns, pod, exit_code, i)
    if action == "Ignore":
        return False, None, None
    if job.get("backoffLimit", 6) == 0:
        return True, "BackoffLimitExceeded", "Job has reached the specified backoff limit"
    return True, None, None


def jobset_action(policy, rjob, reason, message):
    for rule in (policy or {}).get("rules", []):
        if rule.get("onJobFailureReasons") and reason not in rule["onJobFailureReasons"]:
            continue
        pats = rule.get("onJobFailureMessagePatterns") or []
        if pats and not any(re.search(p, message) for p in pats):
            continue
        if rule.get("targetReplicatedJobs") and rjob not in rule["targetReplicatedJobs"]:
            continue
        return rule["action"]
    return "RestartJobSet"


@functools.lru_cache(maxsize=None)
def steps_of(system):
    path = os.path.join(GOLDEN, system, "model.yaml")
    model = yaml.safe_load(open(path)) if os.path.exists(path) else {}
    return {s["name"]: s for s in (model.get("pipeline") or model.get("steps") or []) if isinstance(s, dict)}


def judge(system, obj, steps):
    labels = obj["metadata"].get("labels", {})
    step = steps.get(labels.get("trainc.dev/step"))
    name = "%s %s %s" % (system, obj["kind"], obj["metadata"]["name"])
    if step is None:
        return ok(name, ["no step in model.yaml for label trainc.dev/step=%s" % labels.get("trainc.dev/step")])
    ns = obj["metadata"].get("namespace", "default")
    no_retry = step.get("noRetryExitCodes") or []
    retries = step.get("retries", 0)
    problems = []
    if obj["kind"] == "JobSet":
        pairs = [(r["name"], r["template"]["spec"]) for r in obj["spec"]["replicatedJobs"]]
    else:
        pairs = [(None, obj["spec"])]
    for rjob, job in pairs:
        containers = [c["name"] for c in job["template"]["spec"]["containers"]]
        container = step["name"] if step["name"] in containers else containers[0]
        for rule in (job.get("podFailurePolicy") or {}).get("rules", []):
            cn = (rule.get("onExitCodes") or {}).get("containerName")
            if cn is not None and cn not in containers:
                problems.append("an exit-code rule names container %s, which the pod does not have" % cn)
        pod = "%s-0" % obj["metadata"]["name"]

        def outcome(exit_code, conditions):
            counted, reason, message = job_failure(job, ns, pod, container, exit_code, conditions)
            if obj["kind"] != "JobSet":
                if reason == "PodFailurePolicy":
                    return "fail"
                return "retry" if counted else "free"
            if reason is None:
                return "free" if not counted else "retry-in-job"
            action = jobset_action(obj["spec"].get("failurePolicy"), rjob, reason, message)
            return {"RestartJobSetAndIgnoreMaxRestarts": "free", "FailJobSet": "fail",
                    "RestartJobSet": "retry"}.get(action, action)

        preempted = outcome(137, {"DisruptionTarget": "True"})
        if preempted != "free":
            problems.append("a preempted pod (DisruptionTarget, exit 137) -> %s, not a free restart" % preempted)
        for code in no_retry:
            got = outcome(code, {})
            if got != "fail":
                problems.append("exit %d (in noRetryExitCodes) -> %s, not a failure at once" % (code, got))
        got = outcome(1, {})
        if 1 not in no_retry and got != "retry":
            problems.append("exit 1 -> %s, not one retry spent" % got)
        # Retries: a JobSet counts restarts against maxRestarts, a Job alone pods against
        # backoffLimit (per index for independent shards).
        if obj["kind"] == "JobSet":
            have = (obj["spec"].get("failurePolicy") or {}).get("maxRestarts", 0)
            if job.get("backoffLimit") != 0:
                problems.append("a gang's Job has backoffLimit %s: one pod is replaced alone" % job.get("backoffLimit"))
        else:
            have = job.get("backoffLimitPerIndex", job.get("backoffLimit", 6))
        if have != retries:
            problems.append("%d retries allowed, the step says %d" % (have, retries))
        # A timeout fails the step: the Job's deadline, which a JobSet does not restart.
        if step.get("timeout"):
            if "activeDeadlineSeconds" not in job:
                problems.append("timeout %s but no activeDeadlineSeconds" % step["timeout"])
            elif obj["kind"] == "JobSet":
                action = jobset_action(obj["spec"].get("failurePolicy"), rjob, "DeadlineExceeded",
                                       "Job was active longer than specified deadline")
                if action != "FailJobSet":
                    problems.append("a Job past its deadline -> %s, not a failed step" % action)
    ok(name, problems)


def main():
    n = 0
    for path in sorted(glob.glob(os.path.join(GOLDEN, "*", "k8s", "*.yaml"))):
        system = path.split(os.sep)[-3]
        for obj in yaml.safe_load_all(open(path)):
            if not obj or obj.get("kind") not in ("Job", "JobSet"):
                continue
            if "trainc.dev/step" not in obj["metadata"].get("labels", {}):
                continue
            n += 1
            judge(system, obj, steps_of(system))
    if n == 0:
        results.append(("step Jobs and JobSets in %s" % GOLDEN, ["none found"]))
    for i, (name, problems) in enumerate(results, 1):
        print("%s %d - %s: a preemption is free, a listed exit code fails at once, others spend a retry" % (
            "ok" if not problems else "not ok", i, name))
        for p in problems:
            print("# " + p)
    print("1..%d" % len(results))


main()
