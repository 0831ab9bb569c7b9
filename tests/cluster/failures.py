#!/usr/bin/env python3
"""Failures played on the test cluster, judged by what the real Job and JobSet controllers (and the
pod garbage collector) do with them, against what the step says (model.yaml: retries,
noRetryExitCodes) and what `trainc plan` claims for it.

A pod is made to end as a container would, by kwok (tests/cluster/cluster.sh's pod-fail stage): the
annotation test.trainc.dev/exit-code=N makes the running pod Failed with its containers terminated
with exit code N; test.trainc.dev/disruption=true adds the DisruptionTarget condition, as the
scheduler's preemption and the node lifecycle controller add it to a pod they evict. A node is
killed by deleting it: the pod garbage collector then fails its pods itself (DisruptionTarget,
DeletionByPodGC) and deletes them.

The step's retries, its first noRetryExitCode and its timeout are read from the output's
model.yaml (MODEL), as trainc compiled them.

  failures.py jobset KUBECTL KUBECONFIG NAMESPACE MODEL STEP NODES_CMD...
      the step's JobSet, running: a preemption restarts the whole gang (every Job made again)
      without spending a retry; a killed node too (then NODES_CMD makes the node again); exit 1
      spends one, RETRIES times; one more fails the JobSet.
  failures.py jobset-fail KUBECTL KUBECONFIG NAMESPACE MODEL STEP
      the step's JobSet, running: exit EXIT_NO_RETRY (a listed code) fails it at once, no restart.
  failures.py job KUBECTL KUBECONFIG NAMESPACE MODEL STEP NODES_CMD...
      the step's Job, running: a preemption and a killed node replace the pod without counting it;
      exit 1 is counted, RETRIES times; one more fails the Job (BackoffLimitExceeded).
  failures.py job-fail KUBECTL KUBECONFIG NAMESPACE MODEL STEP
      the step's Job, running: a listed exit code fails it at once (PodFailurePolicy).
  failures.py deadline KUBECTL KUBECONFIG NAMESPACE MODEL STEP KIND
      the step's run (KIND job or jobset), with its timeout: a pod ends with exit 1 first; a Job
      fails at its deadline counted from its start (DeadlineExceeded: the deadline spans its
      retries); a JobSet restarts with new Jobs whose deadline starts again, then fails at that one
      (its failure policy fails it, no second restart): `trainc plan` bounds it by (retries + 1)
      timeouts.

  failures.py podsready KUBECTL KUBECONFIG NAMESPACE MODEL STEP
      the step's run, queued: Kueue admits it, its pods never become Ready (cluster.sh
      --unready-step), and at the waitForPodsReady timeout of the output's Kueue configuration
      (addons/kueue-manager-config.yaml, from the spec's queue.podsReadyTimeout) Kueue evicts it (PodsReadyTimeout),
      suspends it again (its quota given back) and queues it again.

Each prints what happened, step by step, and a line "PROBLEM: ..." per disagreement; exit 1 then.
"""
import json
import subprocess
import sys
import time

EXIT = "test.trainc.dev/exit-code"
DISRUPT = "test.trainc.dev/disruption"
problems = []


def k(*args, check=True):
    r = subprocess.run([KUBECTL, "--kubeconfig", KC, *args], capture_output=True, text=True)
    if check and r.returncode != 0:
        raise SystemExit(f"kubectl {' '.join(args)}: {r.stderr.strip()}")
    return r.stdout


def get(kind, name=None, **labels):
    args = ["get", kind, "-n", NS, "-o", "json"]
    if name:
        args.insert(2, name)
    if labels:
        args += ["-l", ",".join(f"{a}={b}" for a, b in labels.items())]
    return json.loads(k(*args))


def wait(what, pred, seconds=120):
    end = time.time() + seconds
    while time.time() < end:
        got = pred()
        if got:
            return got
        time.sleep(1)
    problems.append(f"{what}: not within {seconds} s")
    print(f"PROBLEM: {what}: not within {seconds} s")
    raise SystemExit(1)


def say(msg):
    print(msg, flush=True)


def problem(msg):
    problems.append(msg)
    print("PROBLEM: " + msg, flush=True)


def run_object(kind):
    items = get(kind, **{"trainc.dev/step": STEP})["items"]
    items = [o for o in items if not o["metadata"].get("ownerReferences")]
    if len(items) != 1:
        raise SystemExit(f"{len(items)} {kind} of step {STEP}, expected 1")
    return items[0]["metadata"]["name"]


def pods(owner_label, owner):
    return [p for p in get("pods", **{owner_label: owner})["items"] if not p["metadata"].get("deletionTimestamp")]


def all_running(owner_label, owner, n=None):
    ps = pods(owner_label, owner)
    live = [p for p in ps if p["status"].get("phase") not in ("Failed", "Succeeded")]
    ok = live and all(p["status"].get("phase") == "Running" for p in live) and (n is None or len(live) == n)
    return live if ok else None


def end_pod(pod, code, disruption=False):
    ann = [f"{EXIT}={code}"] + ([f"{DISRUPT}=true"] if disruption else [])
    k("annotate", "pod", "-n", NS, pod, "--overwrite", *ann)


def jobset_status(name):
    js = get("jobsets.jobset.x-k8s.io", name)
    st = js.get("status") or {}
    jobs = {j["metadata"]["name"]: j["metadata"]["uid"] for j in get("jobs", **{"jobset.sigs.k8s.io/jobset-name": name})["items"]}
    return st.get("restarts", 0), st.get("restartsCountTowardsMax", 0), st.get("terminalState", ""), jobs


def jobset(retries, no_retry, nodes_cmd):
    name = run_object("jobsets.jobset.x-k8s.io")
    lbl = "jobset.sigs.k8s.io/jobset-name"
    n = len(wait(f"the pods of JobSet {name} running", lambda: all_running(lbl, name)))
    say(f"JobSet {name}: {n} pods running")

    def restart(why, counted, end):
        r0, c0, _, jobs0 = jobset_status(name)
        end()
        r1, c1, state, jobs1 = wait(f"JobSet {name} restarted after {why}",
                                    lambda: ((s := jobset_status(name))[0] > r0 or s[2]) and s)
        if state:
            problem(f"{why}: the JobSet ended ({state}) instead of restarting")
            return False
        say(f"{why}: restarts {r0} -> {r1}, counted towards maxRestarts {c0} -> {c1}")
        if c1 != c0 + (1 if counted else 0):
            problem(f"{why}: counted towards maxRestarts {c0} -> {c1}, the step says it "
                    f"{'spends a retry' if counted else 'spends none'}")
        # The gang restarts whole: every Job made again (new uids), none kept.
        jobs2 = wait(f"JobSet {name}'s Jobs made again after {why}",
                     lambda: (j := jobset_status(name)[3]) and len(j) == len(jobs0) and
                     not set(j.values()) & set(jobs0.values()) and j)
        say(f"{why}: all {len(jobs2)} Job(s) made again")
        return True

    def kill_node():
        pod = all_running(lbl, name)[0]
        node = pod["spec"]["nodeName"]
        say(f"deleting node {node} (pod {pod['metadata']['name']})")
        k("delete", "node", node, "--wait=false")
        return node

    first = all_running(lbl, name)[0]["metadata"]["name"]
    restart("a preemption (DisruptionTarget, exit 137)", False, lambda: end_pod(first, 137, True))
    wait(f"the pods of JobSet {name} running again", lambda: all_running(lbl, name, n))
    killed = []
    restart("a killed node", False, lambda: killed.append(kill_node()))
    if nodes_cmd:  # the node made again (GKE's node pool would), so that the gang finds room
        wait(f"node {killed[0]} gone", lambda: not k("get", "node", killed[0], "--ignore-not-found"))
        subprocess.run(nodes_cmd, check=True, capture_output=True)
    wait(f"the pods of JobSet {name} running again", lambda: all_running(lbl, name, n), 180)
    for i in range(retries):
        pod = all_running(lbl, name)[0]["metadata"]["name"]
        restart(f"exit 1 (retry {i + 1} of {retries})", True, lambda: end_pod(pod, 1))
        wait(f"the pods of JobSet {name} running again", lambda: all_running(lbl, name, n))
    pod = all_running(lbl, name)[0]["metadata"]["name"]
    r0, c0, _, _ = jobset_status(name)
    end_pod(pod, 1)
    _, _, state, _ = wait(f"JobSet {name} failed after its {retries} retries", lambda: (s := jobset_status(name))[2] and s)
    r1, _, _, _ = jobset_status(name)
    say(f"exit 1 once more: JobSet {state}, restarts {r0} -> {r1}")
    if state != "Failed" or r1 != r0:
        problem(f"exit 1 after {retries} retries: {state} with restarts {r0} -> {r1}, expected Failed with no restart")


def jobset_fail(no_retry):
    name = run_object("jobsets.jobset.x-k8s.io")
    lbl = "jobset.sigs.k8s.io/jobset-name"
    wait(f"the pods of JobSet {name} running", lambda: all_running(lbl, name))
    r0, _, _, _ = jobset_status(name)
    end_pod(all_running(lbl, name)[0]["metadata"]["name"], no_retry)
    _, _, state, _ = wait(f"JobSet {name} ended after exit {no_retry}", lambda: (s := jobset_status(name))[2] and s)
    r1, _, _, _ = jobset_status(name)
    say(f"exit {no_retry} (noRetryExitCodes): JobSet {state}, restarts {r0} -> {r1}")
    if state != "Failed" or r1 != r0:
        problem(f"exit {no_retry}: {state} with restarts {r0} -> {r1}, expected Failed at once")


def job_status(name):
    j = get("jobs", name)
    st = j.get("status") or {}
    cond = {c["type"]: c for c in st.get("conditions", []) if c.get("status") == "True"}
    failed = cond.get("Failed")
    return st.get("failed", 0), (failed or {}).get("reason", "") if failed else ""


def job(retries, no_retry, nodes_cmd):
    name = run_object("jobs")
    lbl = "batch.kubernetes.io/job-name"
    n = len(wait(f"the pods of Job {name} running", lambda: all_running(lbl, name)))
    say(f"Job {name}: {n} pod(s) running")

    def replaced(why, counted, end):
        f0, _ = job_status(name)
        before = {p["metadata"]["uid"] for p in pods(lbl, name)}
        end()
        wait(f"Job {name} made a pod again after {why}",
             lambda: (live := all_running(lbl, name, n)) and {p["metadata"]["uid"] for p in live} - before)
        time.sleep(2)  # the controller counts the failed pod before or with its replacement
        f1, reason = job_status(name)
        say(f"{why}: pod made again, failed {f0} -> {f1}")
        if reason:
            problem(f"{why}: the Job failed ({reason})")
        if f1 != f0 + (1 if counted else 0):
            problem(f"{why}: failed {f0} -> {f1}, the step says it {'spends a retry' if counted else 'spends none'}")

    first = all_running(lbl, name)[0]["metadata"]["name"]
    replaced("a preemption (DisruptionTarget, exit 137)", False, lambda: end_pod(first, 137, True))
    def kill_node():
        pod = all_running(lbl, name)[0]
        node = pod["spec"]["nodeName"]
        say(f"deleting node {node}")
        k("delete", "node", node, "--wait=false")
        if nodes_cmd:  # the node made again (GKE's node pool would), once the pod garbage
            # collector has failed the pods it held (a node of the same name holds them again)
            uid = pod["metadata"]["uid"]
            wait(f"the pod garbage collector failing pod {pod['metadata']['name']}",
                 lambda: not any(p["metadata"]["uid"] == uid and p["status"].get("phase") == "Running"
                                 for p in pods(lbl, name)), 150)
            subprocess.run(nodes_cmd, check=True, capture_output=True)

    replaced("a killed node", False, kill_node)
    for i in range(retries):
        pod = all_running(lbl, name)[0]["metadata"]["name"]
        replaced(f"exit 1 (retry {i + 1} of {retries})", True, lambda: end_pod(pod, 1))
    end_pod(all_running(lbl, name)[0]["metadata"]["name"], 1)
    _, reason = wait(f"Job {name} failed after its {retries} retries", lambda: (s := job_status(name))[1] and s)
    say(f"exit 1 once more: Job failed, {reason}")
    if reason != "BackoffLimitExceeded":
        problem(f"exit 1 after {retries} retries: failed with {reason}, expected BackoffLimitExceeded")


def job_fail(no_retry):
    name = run_object("jobs")
    lbl = "batch.kubernetes.io/job-name"
    wait(f"the pods of Job {name} running", lambda: all_running(lbl, name))
    end_pod(all_running(lbl, name)[0]["metadata"]["name"], no_retry)
    f, reason = wait(f"Job {name} failed after exit {no_retry}", lambda: (s := job_status(name))[1] and s)
    say(f"exit {no_retry} (noRetryExitCodes): Job failed, {reason}, failed pods {f}")
    if reason != "PodFailurePolicy":
        problem(f"exit {no_retry}: failed with {reason}, expected PodFailurePolicy (at once)")


def ts(t):
    return time.mktime(time.strptime(t, "%Y-%m-%dT%H:%M:%SZ"))


def deadline(kind, seconds):
    if kind == "jobset":
        name = run_object("jobsets.jobset.x-k8s.io")
        lbl = "jobset.sigs.k8s.io/jobset-name"
        n = len(wait(f"the pods of JobSet {name} running", lambda: all_running(lbl, name)))
        r0, _, _, jobs0 = jobset_status(name)
        end_pod(all_running(lbl, name)[0]["metadata"]["name"], 1)
        wait(f"JobSet {name} restarted after exit 1", lambda: jobset_status(name)[0] > r0)
        jobs1 = wait(f"JobSet {name}'s Jobs made again", lambda: (j := jobset_status(name)[3]) and
                     len(j) == len(jobs0) and not set(j.values()) & set(jobs0.values()) and j)
        started = min(ts(get("jobs", j)["metadata"]["creationTimestamp"]) for j in jobs1)
        wait(f"the pods of JobSet {name} running again", lambda: all_running(lbl, name, n))
        _, _, state, _ = wait(f"JobSet {name} past its deadline", lambda: (s := jobset_status(name))[2] and s,
                              seconds + 90)
        r, c, _, _ = jobset_status(name)
        ended = time.time()
        say(f"deadline {seconds} s: after a restart (new Jobs, a fresh deadline), JobSet {state} {ended - started:.0f} s "
            f"after the new Jobs were made; restarts {r}, counted {c}")
        if state != "Failed" or r != r0 + 1:
            problem(f"deadline: JobSet {state} with restarts {r}, expected Failed with no restart past the first")
        if ended - started < seconds - 2:
            problem(f"the new Jobs failed {ended - started:.0f} s after they were made, before their own deadline")
    else:
        name = run_object("jobs")
        lbl = "batch.kubernetes.io/job-name"
        wait(f"the pods of Job {name} running", lambda: all_running(lbl, name))
        start = ts(get("jobs", name)["status"]["startTime"])
        end_pod(all_running(lbl, name)[0]["metadata"]["name"], 1)
        _, reason = wait(f"Job {name} past its deadline", lambda: (s := job_status(name))[1] and s, seconds + 90)
        failed_at = time.time()
        say(f"deadline {seconds} s: a pod failed (exit 1, replaced), then the Job failed, {reason}, "
            f"{failed_at - start:.0f} s after its start")
        if reason != "DeadlineExceeded":
            problem(f"deadline: failed with {reason}, expected DeadlineExceeded")
        if failed_at - start > seconds + 20:
            problem(f"the Job failed {failed_at - start:.0f} s after its start: its deadline did not span the retry")


def podsready(timeout):
    kinds = {"Job": "jobs", "JobSet": "jobsets.jobset.x-k8s.io"}
    runs = [o for kind in kinds.values() for o in get(kind, **{"trainc.dev/step": STEP})["items"]
            if not o["metadata"].get("ownerReferences")]
    if len(runs) != 1:
        raise SystemExit(f"{len(runs)} runs of step {STEP}, expected 1")
    run = runs[0]
    name, kind = run["metadata"]["name"], kinds[run["kind"]]

    def workload():
        for w in get("workloads.kueue.x-k8s.io")["items"]:
            if any(r.get("name") == name for r in w["metadata"].get("ownerReferences", [])):
                return w
        return None

    def cond(w, t):
        return next((c for c in (w.get("status") or {}).get("conditions", []) if c["type"] == t and c["status"] == "True"), None)

    w = wait(f"the Workload of {run['kind']} {name} admitted", lambda: (w := workload()) and cond(w, "Admitted") and w)
    admitted = ts(cond(w, "Admitted")["lastTransitionTime"])
    say(f"{run['kind']} {name}: admitted by Kueue; its pods are bound but never Ready")
    w = wait(f"the Workload of {name} evicted", lambda: (w := workload()) and cond(w, "Evicted") and w, timeout + 90)
    ev = cond(w, "Evicted")
    after = ts(ev["lastTransitionTime"]) - admitted
    requeues = ((w.get("status") or {}).get("requeueState") or {}).get("count", 0)
    suspended = wait(f"{name} suspended again", lambda: get(kind, name)["spec"].get("suspend") is True, 60)
    say(f"evicted {after:.0f} s after admission ({ev['reason']}: {ev.get('message', '')}); requeued "
        f"{requeues} time(s); suspended again (quota given back): {suspended}")
    if ev["reason"] != "PodsReadyTimeout":
        problem(f"evicted for {ev['reason']}, expected PodsReadyTimeout")
    if after < timeout - 2:
        problem(f"evicted {after:.0f} s after admission, before the {timeout} s podsReadyTimeout")
    if requeues < 1:
        problem("not requeued (requeueState.count 0)")


def seconds(d):
    n, unit = int(d[:-1]), d[-1]
    return n * {"s": 1, "m": 60, "h": 3600, "d": 86400}[unit]


if __name__ == "__main__":
    import yaml
    what, KUBECTL, KC, NS, model_path, STEP = sys.argv[1:7]
    rest = sys.argv[7:]
    step = next(s for s in yaml.safe_load(open(model_path))["pipeline"] if s["name"] == STEP)
    retries, no_retry = step.get("retries", 0), (step.get("noRetryExitCodes") or [None])[0]
    say(f"step {STEP}: retries {retries}, noRetryExitCodes {step.get('noRetryExitCodes')}, timeout {step.get('timeout')}")
    if what == "jobset":
        jobset(retries, no_retry, rest)
    elif what == "jobset-fail":
        jobset_fail(no_retry)
    elif what == "job":
        job(retries, no_retry, rest)
    elif what == "job-fail":
        job_fail(no_retry)
    elif what == "deadline":
        deadline(rest[0], seconds(step["timeout"]))
    elif what == "podsready":
        # The timeout Kueue runs with: the output's Kueue configuration (addons/), as apply.sh sets it.
        import os
        import re
        cm = yaml.safe_load(open(os.path.join(os.path.dirname(model_path), "addons", "kueue-manager-config.yaml")))
        cfg = yaml.safe_load(next(iter(cm["data"].values())))
        t = cfg["waitForPodsReady"]["timeout"]
        podsready(sum(int(n) * {"h": 3600, "m": 60, "s": 1}[u] for n, u in re.findall(r"(\d+)([hms])", t)))
    else:
        raise SystemExit(__doc__)
    sys.exit(1 if problems else 0)
