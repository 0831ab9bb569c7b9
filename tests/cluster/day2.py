#!/usr/bin/env python3
"""Day 2 on the test cluster: what applying a changed spec's output over a running system did,
against what `trainc plan SPEC --against OLD` said it would do.

  day2.py snapshot KUBECTL KUBECONFIG NAMESPACE > SNAP.json
      the system's steps (Jobs, JobSets, RayJobs) and Deployments as the cluster holds them: each
      object's uid (a new uid is a new object), and per Deployment its ReplicaSets (a new one is a
      roll), plus every object of the namespace that trainc labels.
  day2.py judge BEFORE.json AFTER.json AGAINST.json [LIVE.json]
      AGAINST.json is `trainc plan --against --format json`'s, LIVE.json `trainc diff --live --format
      json`'s, taken before the apply; for each, one problem per line (nothing when all holds):
      - the steps created are exactly the plan's step objects to create or rerun;
      - the objects gone are exactly the plan's to remove (not those it keeps: a step's previous
        runs within the step's history);
      - the Deployments that rolled (a new ReplicaSet) are exactly the plan's to roll or replace;
      - nothing a controller made (a JobSet's Jobs) is gone while the object that made it stays.
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
    owned = {}
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
                # A controller's (a JobSet's Jobs carry its labels): not applied, and its owner's
                # to delete; gone while its owner stays, apply.sh deleted it.
                api = o["apiVersion"]
                group = api.split("/")[0] if "/" in api else ""
                owned[f"{group}/{o['kind']}/{o['metadata']['name']}"] = {
                    "uid": o["metadata"]["uid"], "owners": [r["uid"] for r in o["metadata"]["ownerReferences"]]}
                continue
            api = o["apiVersion"]
            group = api.split("/")[0] if "/" in api else ""
            objects[f"{group}/{o['kind']}/{o['metadata']['name']}"] = o["metadata"]["uid"]
    return {"objects": objects, "owned": owned, "replicasets": {d: sorted(v) for d, v in rs_of.items()}}


def judge(before, after, against, who="trainc plan --against"):
    problems = []
    b, a = before["objects"], after["objects"]
    key = lambda o: f"{o['group']}/{o['kind']}/{o['name']}"
    plan = {key(o): o for o in against["objects"]}
    # Steps created: new uids of step kinds.
    created = {x for x in a if tuple(x.split("/")[:2]) in STEP_KINDS and b.get(x) != a[x]}
    said = {x for x, o in plan.items() if (o["group"], o["kind"]) in STEP_KINDS and o["action"] in ("create", "rerun", "replace")}
    for x in sorted(created - said):
        problems.append(f"{x} was started, but {who} said {plan.get(x, {}).get('action', 'nothing of it')}")
    for x in sorted(said - created):
        problems.append(f"{x}: {who} said {plan[x]['action']}, but no new one was started")
    # Objects gone. plan --against knows only the output applied last: a step's older runs on the
    # cluster (from the applies before it), which pruning may delete too, are not in it and are
    # diff --live's to name.
    gone = {x for x in b if x not in a}
    if who == "trainc plan --against":
        gone = {x for x in gone if x in plan}
    # "remove" is what apply.sh prunes; "keep" what it leaves of the old output (a step's previous
    # run within the step's history, and the objects of that run).
    said_gone = {x for x, o in plan.items() if o["action"] == "remove"}
    for x in sorted(gone - said_gone):
        problems.append(f"{x} was deleted, but {who} said {plan.get(x, {}).get('action', 'nothing of it')}")
    for x in sorted((said_gone & set(b)) - gone):
        problems.append(f"{x}: {who} said remove, but it is still there")
    # What a controller made for an object that stays is left to it.
    alive = set(a.values())
    for x, o in sorted(before.get("owned", {}).items()):
        if x not in after.get("owned", {}) and all(u in alive for u in o["owners"]):
            problems.append(f"{x} was deleted while the object that made it stays")
    # Deployments rolled.
    rolled = {f"apps/Deployment/{d}" for d, rs in after["replicasets"].items()
              if d in before["replicasets"] and set(rs) - set(before["replicasets"][d])}
    said_rolled = {x for x, o in plan.items() if o["kind"] == "Deployment" and o["action"] in ("roll", "replace")}
    for x in sorted(rolled - said_rolled):
        problems.append(f"{x} rolled, but {who} said {plan.get(x, {}).get('action', 'nothing of it')}")
    for x in sorted((said_rolled & set(b)) - rolled):
        problems.append(f"{x}: {who} said {plan[x]['action']}, but it did not roll")
    return problems


def main():
    if sys.argv[1] == "snapshot":
        json.dump(snapshot(*sys.argv[2:5]), sys.stdout)
    elif sys.argv[1] == "judge":
        before, after = (json.load(open(f)) for f in sys.argv[2:4])
        # plan --format json's "against", or diff --live --format json's whole document.
        for path in sys.argv[4:]:
            doc = json.load(open(path))
            who = "trainc plan --against" if "against" in doc else "trainc diff --live"
            for p in judge(before, after, doc.get("against", doc), who):
                print(p)
    else:
        raise SystemExit(__doc__)


if __name__ == "__main__":
    main()
