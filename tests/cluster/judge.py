#!/usr/bin/env python3
"""Judges what the test cluster did with a system against what `trainc plan` said it would do.

Reads the cluster through kubectl (KUBECTL, with its kubeconfig) and the plan (`trainc plan SPEC
--format json`), and prints one problem per line (nothing when all holds):

  - every pod of the system's namespace is bound to a node (none Pending), and none failed; one
    that asks for Istio's sidecar has it (the injector's webhook ran);
  - every Job ran to completion, and every JobSet and RayJob; each step started after the steps it
    needs completed (a Job's startTime against its needs' completionTime; `needs` from the
    output's model.yaml);
  - each Kueue Workload of the namespace was admitted, and one of a step the plan places by
    topology (TAS) with a topology assignment;
  - per step and pool, the pods of the step on each node, as a sorted list of counts, are the plan's
    for that step's phase (the nodes of a pool are interchangeable, so counts, not names, compare);
  - per pool, the long-lived pods of the system (services, compute clusters' pods) likewise, on
    the nodes the plan's long-lived phase places them (a service that autoscales at its maximum:
    tests/cluster_test.sh scales it there first, as its autoscaler would under load);
  - every Deployment available (all its replicas updated and available), every PodDisruptionBudget
    with as many healthy pods as it asks; with --endpoints (pods have addresses Services take:
    tests/cluster/netns.sh), every Service of the system's with a selector (not one a controller
    made and owns) has a ready endpoint in its EndpointSlices.

With --pending STEP=K it requires instead that exactly K pods of STEP stay unbound, the scheduler
saying why (FailedScheduling), and judges nothing else: a spec trainc says would leave pods Pending,
applied to a cluster of the size it names.

Usage: judge.py KUBECTL KUBECONFIG PLAN.json MODEL.yaml NAMESPACE [--endpoints] [--pending STEP=K]
"""
import json
import subprocess
import sys
from collections import Counter, defaultdict

import yaml


def kubectl(k, kc, *args):
    out = subprocess.run([k, "--kubeconfig", kc, *args], capture_output=True, text=True)
    if out.returncode != 0:
        raise SystemExit(f"kubectl {' '.join(args)} failed: {out.stderr.strip()}")
    return json.loads(out.stdout)


def long_lived_key(labels):
    """The name a long-lived pod goes by in the plan, as system-workload ("xgb-triton-fraud" for
    the plan's "fraud", "ray-t4-ray-head" for "ray/head"); None for other pods."""
    instance = labels.get("app.kubernetes.io/instance")
    if not instance:
        return None
    node_type = labels.get("ray.io/node-type")
    if node_type == "head":
        return instance + "-head"
    if node_type == "worker":
        return instance + "-" + labels.get("ray.io/group", "")
    return instance


def services(k, kc, ns, endpoints):
    """Deployments available, PDBs satisfied, selector Services with ready endpoints."""
    problems = []
    for d in kubectl(k, kc, "get", "deployments", "-n", ns, "-o", "json")["items"]:
        want = d["spec"].get("replicas", 1)
        st = d.get("status") or {}
        if st.get("availableReplicas", 0) < want or st.get("updatedReplicas", 0) < want:
            conds = {c["type"]: c.get("message") for c in st.get("conditions") or []}
            problems.append(f"deployment {d['metadata']['name']}: {st.get('availableReplicas', 0)} of {want} "
                            f"replicas available ({conds})")
    for b in kubectl(k, kc, "get", "poddisruptionbudgets", "-n", ns, "-o", "json")["items"]:
        st = b.get("status") or {}
        if st.get("currentHealthy", 0) < st.get("desiredHealthy", 0) or st.get("expectedPods", 0) == 0:
            problems.append(f"poddisruptionbudget {b['metadata']['name']}: {st.get('currentHealthy', 0)} healthy "
                            f"of {st.get('expectedPods', 0)} pods, {st.get('desiredHealthy', 0)} wanted")
    if endpoints:
        slices = kubectl(k, kc, "get", "endpointslices", "-n", ns, "-o", "json")["items"]
        ready = Counter()
        for sl in slices:
            svc = (sl["metadata"].get("labels") or {}).get("kubernetes.io/service-name")
            ready[svc] += sum(1 for e in sl.get("endpoints") or [] if (e.get("conditions") or {}).get("ready"))
        for svc in kubectl(k, kc, "get", "services", "-n", ns, "-o", "json")["items"]:
            name = svc["metadata"]["name"]
            # A controller's own (a JobSet's headless Service) lives and empties with its pods.
            owned = svc["metadata"].get("ownerReferences")
            if svc["spec"].get("selector") and not owned and ready[name] == 0:
                problems.append(f"service {name} has no ready endpoint")
    return problems


def main():
    k, kc, plan_file, model_file, ns = sys.argv[1:6]
    rest = sys.argv[6:]
    endpoints = "--endpoints" in rest
    rest = [a for a in rest if a != "--endpoints"]
    if len(rest) > 1 and rest[0] == "--pending":
        step, want = rest[1].split("=")
        pods = kubectl(k, kc, "get", "pods", "-n", ns, "-l", f"trainc.dev/step={step}", "-o", "json")["items"]
        pending = [p for p in pods if not p["spec"].get("nodeName")]
        unschedulable = [p for p in pending if any(c.get("reason") == "Unschedulable" for c in p["status"].get("conditions") or [])]
        if len(pending) != int(want) or len(unschedulable) != len(pending):
            print(f"step {step}: {len(pending)} of {len(pods)} pods unbound ({len(unschedulable)} unschedulable "
                  f"by the scheduler), trainc said {want} would stay Pending")
        return
    plan = json.load(open(plan_file))
    problems = []
    nodes = kubectl(k, kc, "get", "nodes", "-o", "json")["items"]
    # A rung of a capacity ladder is a node pool of its own; the plan places pods on the laddered
    # pool, whose name every rung's nodes carry (trainc.dev/pool). Which rung each step got is
    # tests/cluster/ladder.py's to judge.
    pool_of = {n["metadata"]["name"]: n["metadata"]["labels"].get("trainc.dev/pool")
               or n["metadata"]["labels"].get("cloud.google.com/gke-nodepool", "") for n in nodes}
    pools_of_plan = {p["name"]: set(p["nodePools"]) for p in plan["pools"]}
    pool_of_nodepool = {np: name for name, nps in pools_of_plan.items() for np in nps}
    pods = kubectl(k, kc, "get", "pods", "-n", ns, "-o", "json")["items"]
    for p in pods:
        name = p["metadata"]["name"]
        phase = p["status"].get("phase")
        if not p["spec"].get("nodeName"):
            conds = {c["type"]: c for c in p["status"].get("conditions") or []}
            why = conds.get("PodScheduled", {}).get("message", "")
            gated = [g["name"] for g in p["spec"].get("schedulingGates") or []]
            problems.append(f"pod {name} is not bound to a node ({phase}; {why or 'gated by ' + ', '.join(gated) if gated else why})")
        elif phase == "Failed":
            problems.append(f"pod {name} failed on {p['spec']['nodeName']}")
        # A pod that asks for Istio's sidecar got it from the injector (istio-proxy, as a native
        # sidecar among the init containers or as a container).
        labels = p["metadata"].get("labels") or {}
        if labels.get("sidecar.istio.io/inject") == "true":
            names = [c["name"] for c in (p["spec"].get("initContainers") or []) + p["spec"]["containers"]]
            if "istio-proxy" not in names:
                problems.append(f"pod {name} asks for Istio's sidecar, but has none (containers {names})")

    # Steps: completion and order.
    jobs = kubectl(k, kc, "get", "jobs", "-n", ns, "-o", "json")["items"]
    step_of_job = {}
    done_at, started_at = {}, {}
    for j in jobs:
        labels = j["metadata"].get("labels") or {}
        step = labels.get("trainc.dev/step")
        conds = {c["type"]: c["status"] for c in j["status"].get("conditions") or []}
        if conds.get("Complete") != "True":
            problems.append(f"job {j['metadata']['name']} did not complete (conditions {conds})")
        if step:
            step_of_job[j["metadata"]["name"]] = step
            if j["status"].get("startTime"):
                started_at[step] = min(started_at.get(step, "~"), j["status"]["startTime"])
            if j["status"].get("completionTime"):
                done_at[step] = max(done_at.get(step, ""), j["status"]["completionTime"])
    try:
        jobsets = kubectl(k, kc, "get", "jobsets.jobset.x-k8s.io", "-n", ns, "-o", "json")["items"]
    except SystemExit:
        jobsets = []
    for js in jobsets:
        conds = {c["type"]: c["status"] for c in js["status"].get("conditions") or []}
        if conds.get("Completed") != "True":
            problems.append(f"jobset {js['metadata']['name']} did not complete (conditions {conds})")
    # RayJobs (KubeRay submits each to its Ray head's job server): succeeded and complete.
    try:
        rayjobs = kubectl(k, kc, "get", "rayjobs.ray.io", "-n", ns, "-o", "json")["items"]
    except SystemExit:
        rayjobs = []
    for rj in rayjobs:
        st = rj.get("status") or {}
        if st.get("jobDeploymentStatus") != "Complete" or st.get("jobStatus") != "SUCCEEDED":
            problems.append(f"rayjob {rj['metadata']['name']} did not complete (jobDeploymentStatus "
                            f"{st.get('jobDeploymentStatus')}, jobStatus {st.get('jobStatus')}: {st.get('message', '')})")
        step = (rj["metadata"].get("labels") or {}).get("trainc.dev/step")
        if step and st.get("startTime"):
            started_at[step] = min(started_at.get(step, "~"), st["startTime"])
        if step and st.get("endTime"):
            done_at[step] = max(done_at.get(step, ""), st["endTime"])
    model = yaml.safe_load(open(model_file))
    needs = {s["name"]: s.get("needs") or [] for s in model.get("pipeline") or []}
    for step, before in needs.items():
        for b in before:
            if step in started_at and b in done_at and started_at[step] < done_at[b]:
                problems.append(f"step {step} started at {started_at[step]}, before {b}, which it needs, completed at {done_at[b]}")

    # Kueue: every Workload admitted.
    try:
        workloads = kubectl(k, kc, "get", "workloads.kueue.x-k8s.io", "-n", ns, "-o", "json")["items"]
    except SystemExit:
        workloads = []
    step_of_owner = {}
    for o in jobs + jobsets:
        step = (o["metadata"].get("labels") or {}).get("trainc.dev/step")
        if step:
            step_of_owner[o["metadata"]["name"]] = step
    topology = {w["name"]: w.get("topology") for w in plan.get("workloads") or []}
    for w in workloads:
        conds = {c["type"]: c for c in w["status"].get("conditions") or []}
        if conds.get("Admitted", {}).get("status") != "True" and conds.get("Finished", {}).get("status") != "True":
            problems.append(f"Kueue workload {w['metadata']['name']} was not admitted: "
                            f"{conds.get('QuotaReserved', {}).get('message') or conds}")
            continue
        # A step the plan places by topology (Kueue's topology-aware scheduling): Kueue assigned
        # its pod sets a topology.
        owner = ((w["metadata"].get("ownerReferences") or [{}])[0]).get("name")
        step = step_of_owner.get(owner)
        want = topology.get(step) if step else None
        if want and want != "unconstrained":
            assigned = [ps for ps in (w["status"].get("admission") or {}).get("podSetAssignments") or []
                        if ps.get("topologyAssignment")]
            if not assigned:
                problems.append(f"step {step}: trainc's plan places it by topology ({want}), "
                                f"but Kueue's admission of {w['metadata']['name']} assigned none")

    # Placement: per step (or long-lived workload) and pool, the per-node pod counts.
    seen = defaultdict(Counter)  # (workload, pool) -> Counter(node -> pods)
    for p in pods:
        node = p["spec"].get("nodeName")
        if not node:
            continue
        labels = p["metadata"].get("labels") or {}
        workload = labels.get("trainc.dev/step") or long_lived_key(labels)
        if not workload:
            continue
        seen[(workload, pool_of_nodepool.get(pool_of.get(node), pool_of.get(node)))][node] += 1
    # The plan's long-lived workloads (services, compute clusters' groups) by their pods' name.
    system = plan["system"]
    long_lived = {w["name"]: system + "-" + w["name"].replace("/", "-") for w in plan.get("workloads") or []
                  if w["kind"].split("/")[0] in ("service", "cluster")}
    want = defaultdict(list)
    for pp in plan.get("placement") or []:
        for phase in pp["phases"]:
            step = phase["name"][len("step "):] if phase["name"].startswith("step ") else None
            for n in phase["nodes"]:
                per = Counter()
                for pod in n["pods"]:
                    wl = pod["workload"]
                    if step is not None and wl == step:
                        per[wl] += pod["count"]
                    elif phase["name"] == "long-lived" and wl in long_lived:
                        per[long_lived[wl]] += pod["count"]
                for wl, c in per.items():
                    want[(wl, pp["pool"])] += [c] * n["count"]
    for key in sorted(set(want) | {k2 for k2 in seen if k2[0] in {w[0] for w in want}}):
        got = sorted(seen.get(key, Counter()).values(), reverse=True)
        exp = sorted(want.get(key, []), reverse=True)
        if got != exp:
            what = "step" if key[0] in needs or key[0] in started_at else "long-lived"
            problems.append(f"{what} {key[0]} on pool {key[1]}: pods per node {got}, trainc's plan {exp}")

    problems += services(k, kc, ns, endpoints)
    for line in problems:
        print(line)


if __name__ == "__main__":
    main()
