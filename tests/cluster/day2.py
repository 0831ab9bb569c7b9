#!/usr/bin/env python3
"""Day 2 on the test cluster: what applying a changed spec's output over a running system did,
against what `trainc plan SPEC --against OLD` said it would do.

  day2.py snapshot KUBECTL KUBECONFIG NAMESPACE > SNAP.json
      the system's steps (Jobs, JobSets, RayJobs) and Deployments as the cluster holds them: each
      object's uid (a new uid is a new object), and per Deployment its ReplicaSets (a new one is a
      roll), plus every object of the namespace that trainc labels.
  day2.py judge BEFORE.json AFTER.json AGAINST.json
      one problem per line (nothing when all holds):
      - the steps created are exactly the plan's step objects to create or rerun;
      - the objects gone are exactly the plan's to remove, but those its detail says are kept (a
        step's previous runs, within the step's history);
      - the Deployments that rolled (a new ReplicaSet) are exactly the plan's to roll or replace.
"""
import json
import subprocess
import sys

STEP_KINDS = {("batch", "Job"), ("jobset.x-k8s.io", "JobSet"), ("ray.io", "RayJob")}
TYPES = ["jobs.batch", "jobsets.jobset.x-k8s.io", "rayjobs.ray.io", "deployments.apps", "replicasets.apps",
         "configmaps", "services", "serviceaccounts", "poddisruptionbudgets.policy",
         "horizontalpodautoscalers.autoscaling", "localqueues.kueue.x-k8s.io"]


def snapshot(k, kc, ns):
    objects = {}
    rs_of = {}
    for t in TYPES:
        out = subprocess.run([k, "--kubeconfig", kc, "get", t, "-n", ns, "-l", "app.kubernetes.io/managed-by=trainc",
                              "-o", "json"], capture_output=True, text=True)
        items = json.loads(out.stdout)["items"] if out.returncode == 0 else []
        if t == "replicasets.apps":  # made by the Deployment controller: no trainc label of their own
            out = subprocess.run([k, "--kubeconfig", kc, "get", t, "-n", ns, "-o", "json"], capture_output=True, text=True)
            for rs in json.loads(out.stdout)["items"] if out.returncode == 0 else []:
                for o in rs["metadata"].get("ownerReferences") or []:
                    if o["kind"] == "Deployment":
                        rs_of.setdefault(o["name"], []).append(rs["metadata"]["name"])
            continue
        for o in items:
            if o["metadata"].get("ownerReferences"):
                continue  # a controller's (a JobSet's Jobs carry its labels): not applied, not pruned
            api = o["apiVersion"]
            group = api.split("/")[0] if "/" in api else ""
            objects[f"{group}/{o['kind']}/{o['metadata']['name']}"] = o["metadata"]["uid"]
    return {"objects": objects, "replicasets": {d: sorted(v) for d, v in rs_of.items()}}


def judge(before, after, against):
    problems = []
    b, a = before["objects"], after["objects"]
    key = lambda o: f"{o['group']}/{o['kind']}/{o['name']}"
    plan = {key(o): o for o in against["objects"]}
    # Steps created: new uids of step kinds.
    created = {x for x in a if tuple(x.split("/")[:2]) in STEP_KINDS and b.get(x) != a[x]}
    said = {x for x, o in plan.items() if (o["group"], o["kind"]) in STEP_KINDS and o["action"] in ("create", "rerun", "replace")}
    for x in sorted(created - said):
        problems.append(f"{x} was started, but trainc plan --against said {plan.get(x, {}).get('action', 'nothing of it')}")
    for x in sorted(said - created):
        problems.append(f"{x}: trainc plan --against said {plan[x]['action']}, but no new one was started")
    # Objects gone.
    gone = {x for x in b if x not in a}
    # "remove" is every object only the old output holds; its detail says which of them apply.sh
    # keeps: a step's previous run within the step's history, and the objects of that run.
    said_gone = {x for x, o in plan.items() if o["action"] == "remove" and "kept" not in o["detail"]}
    for x in sorted(gone - said_gone):
        problems.append(f"{x} was deleted, but trainc plan --against said {plan.get(x, {}).get('action', 'nothing of it')}")
    for x in sorted((said_gone & set(b)) - gone):
        problems.append(f"{x}: trainc plan --against said remove, but it is still there")
    # Deployments rolled.
    rolled = {f"apps/Deployment/{d}" for d, rs in after["replicasets"].items()
              if d in before["replicasets"] and set(rs) - set(before["replicasets"][d])}
    said_rolled = {x for x, o in plan.items() if o["kind"] == "Deployment" and o["action"] in ("roll", "replace")}
    for x in sorted(rolled - said_rolled):
        problems.append(f"{x} rolled, but trainc plan --against said {plan.get(x, {}).get('action', 'nothing of it')}")
    for x in sorted((said_rolled & set(b)) - rolled):
        problems.append(f"{x}: trainc plan --against said {plan[x]['action']}, but it did not roll")
    return problems


def main():
    if sys.argv[1] == "snapshot":
        json.dump(snapshot(*sys.argv[2:5]), sys.stdout)
    elif sys.argv[1] == "judge":
        before, after = (json.load(open(f)) for f in sys.argv[2:4])
        against = json.load(open(sys.argv[4]))["against"]
        for p in judge(before, after, against):
            print(p)
    else:
        raise SystemExit(__doc__)


if __name__ == "__main__":
    main()
