#!/usr/bin/env python3
"""Judges a capacity ladder on the test cluster against `trainc plan`: which rung the real Kueue gave
each step, the ProvisioningRequest it asked for on the queued rung, and where the pods ran.

The plan's ladder (plan.json `ladders`) lists the rungs' node pools in order; trainc's ClusterQueue
lists their flavors in that order, so Kueue admits a step on the first rung whose quota has room.
FIRST are steps applied together, each of which fills one rung: they must take one rung each, every
rung once. AFTER are steps that start once those have finished: every rung free again, they must
take the first. The step on a queued rung must have had a ProvisioningRequest of GKE's class with
the parameters its Job or JobSet carries (provreq.kueue.x-k8s.io/*, as LOG of tests/cluster/provisioner.py
saw it), and its pods must have run on the nodes made for that request; no other step may have
had one.

Usage: ladder.py KUBECTL KUBECONFIG NAMESPACE PLAN.json PROVISIONER_LOG --first a,b,c --after d
Prints each problem and exits 1; silent and 0 when the cluster did what the plan says. With --print,
each step's rung as it is now (STEP NODE_POOL, or none), and nothing judged.
"""
import argparse
import json
import subprocess
import sys

QUEUED_LABEL = "autoscaling.gke.io/provisioning-request"
PARAM_PREFIX = "provreq.kueue.x-k8s.io/"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("kubectl")
    ap.add_argument("kubeconfig")
    ap.add_argument("namespace")
    ap.add_argument("plan")
    ap.add_argument("log")
    ap.add_argument("--first", required=True)
    ap.add_argument("--after", default="")
    ap.add_argument("--print", action="store_true", help="print each step's rung (STEP NODE_POOL, or none), judge nothing")
    a = ap.parse_args()

    def get(*what, ns=True):
        cmd = [a.kubectl, "--kubeconfig", a.kubeconfig, "get", *what, "-o", "json"] + (["-n", a.namespace] if ns else [])
        return json.loads(subprocess.run(cmd, capture_output=True, text=True, check=True).stdout)["items"]

    problems = []
    ladders = json.load(open(a.plan)).get("ladders") or []
    if len(ladders) != 1:
        print(f"the plan has {len(ladders)} ladders; this judge reads one")
        return 1
    rungs = [r["nodePool"] for r in ladders[0]["rungs"]]
    kinds = {r["nodePool"]: r["provisioning"] for r in ladders[0]["rungs"]}
    flavor_pool = {f["metadata"]["name"]: (f["spec"].get("nodeLabels") or {}).get("cloud.google.com/gke-nodepool")
                   for f in get("resourceflavors.kueue.x-k8s.io", ns=False)}
    # The steps' workloads: a Job of its own, or a JobSet (whose Jobs are its).
    jobs = {j["metadata"]["name"]: j for j in get("jobs") if not j["metadata"].get("ownerReferences")}
    jobs.update({j["metadata"]["name"]: j for j in get("jobsets.jobset.x-k8s.io")})
    step_of = {name: (j["metadata"].get("labels") or {}).get("trainc.dev/step") for name, j in jobs.items()}
    rung_of, workload_of = {}, {}
    for w in get("workloads.kueue.x-k8s.io"):
        owner = next((o["name"] for o in w["metadata"].get("ownerReferences") or [] if o["kind"] in ("Job", "JobSet")), None)
        step = step_of.get(owner)
        if not step:
            continue
        assignments = ((w.get("status") or {}).get("admission") or {}).get("podSetAssignments") or []
        flavors = {f for ps in assignments for f in (ps.get("flavors") or {}).values()}
        if len(flavors) != 1:
            problems.append(f"step {step}: its workload {w['metadata']['name']} was admitted on {sorted(flavors) or 'no flavor'}")
            continue
        rung_of[step] = flavor_pool.get(flavors.pop())
        workload_of[step] = (w["metadata"]["name"], owner)
    if a.print:
        for step in sorted(s for s in step_of.values() if s):
            print(step, rung_of.get(step) or "none")
        return 0
    first = a.first.split(",")
    after = [s for s in a.after.split(",") if s]
    got = sorted(rung_of.get(s) or "none" for s in first)
    if got != sorted(rungs):
        problems.append(f"steps {', '.join(first)} applied together took rungs {got}; the ladder has one each of {rungs} "
                        f"({', '.join(f'{s}: {rung_of.get(s)}' for s in first)})")
    for s in after:
        if rung_of.get(s) != rungs[0]:
            problems.append(f"step {s}, started when every rung was free, took {rung_of.get(s)}; the first rung is {rungs[0]}")

    with open(a.log) as f:
        seen = [json.loads(line) for line in f if line.strip()]
    pods = get("pods")
    node_pool = {n["metadata"]["name"]: n["metadata"]["labels"].get("cloud.google.com/gke-nodepool")
                 for n in get("nodes", ns=False)}
    for step, rung in rung_of.items():
        wl, job = workload_of[step]
        requests = [r for r in seen if r["name"].startswith(wl + "-")]
        if kinds.get(rung) != "queued":
            if requests:
                problems.append(f"step {step} on rung {rung} ({kinds.get(rung)}) had ProvisioningRequests {[r['name'] for r in requests]}")
        elif len(requests) != 1:
            problems.append(f"step {step} on the queued rung {rung} had {len(requests)} ProvisioningRequests")
        else:
            r = requests[0]
            want = {k[len(PARAM_PREFIX):]: v for k, v in (jobs[job]["metadata"].get("annotations") or {}).items()
                    if k.startswith(PARAM_PREFIX)}
            if r["class"] != "queued-provisioning.gke.io":
                problems.append(f"step {step}: its ProvisioningRequest is of class {r['class']}")
            if not want or r["parameters"] != want:
                problems.append(f"step {step}: its ProvisioningRequest has parameters {r['parameters']}; its workload asks {want}")
        for p in pods:
            labels = p["metadata"].get("labels") or {}
            if job not in (labels.get("job-name"), labels.get("jobset.sigs.k8s.io/jobset-name")):
                continue
            where = node_pool.get(p["spec"].get("nodeName") or "")
            if where != rung:
                problems.append(f"step {step}: pod {p['metadata']['name']} ran on node pool {where}, not its rung {rung}")
            if kinds.get(rung) == "queued" and len(requests) == 1:
                sel = (p["spec"].get("nodeSelector") or {}).get(QUEUED_LABEL)
                if sel != requests[0]["name"]:
                    problems.append(f"step {step}: pod {p['metadata']['name']} selects {QUEUED_LABEL}={sel}, not its "
                                    f"request {requests[0]['name']}")
    for j in jobs.values():
        done = any(c["type"] in ("Complete", "Completed") and c["status"] == "True"
                   for c in (j.get("status") or {}).get("conditions") or [])
        if not done:
            problems.append(f"{j['kind']} {j['metadata']['name']} (step {step_of.get(j['metadata']['name'])}) did not complete")
    for p in problems:
        print(p)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
