#!/usr/bin/env python3
"""Whether the services stayed available while an apply rolled them, against what `trainc plan
--against` said of each roll (a roll with no room to surge on one replica is an outage, and the
plan says so: "the service is down until the new pod is ready").

  availability.py watch KUBECTL KUBECONFIG NAMESPACE OUT.json
      polls the namespace's Deployments (twice a second) until it gets SIGTERM, then writes, per
      Deployment, the fewest available replicas it saw and how many samples it took.
  availability.py judge OUT.json AGAINST.json
      one problem per line: a Deployment the plan rolls without an outage that had no available
      pod at some point, while it had one before; and one the plan says goes down that never did
      (the claim is then wrong, or the roll was not seen).
"""
import json
import signal
import subprocess
import sys
import time


def watch(k, kc, ns, out):
    seen = {}
    stop = []
    signal.signal(signal.SIGTERM, lambda *_: stop.append(1))
    while not stop:
        r = subprocess.run([k, "--kubeconfig", kc, "get", "deployments", "-n", ns, "-o", "json"],
                           capture_output=True, text=True)
        if r.returncode == 0:
            for d in json.loads(r.stdout)["items"]:
                name = d["metadata"]["name"]
                avail = (d.get("status") or {}).get("availableReplicas", 0)
                s = seen.setdefault(name, {"first": avail, "min": avail, "samples": 0})
                s["min"] = min(s["min"], avail)
                s["samples"] += 1
        time.sleep(0.5)
    with open(out, "w") as f:
        json.dump(seen, f)


def judge(seen_path, against_path):
    seen = json.load(open(seen_path))
    doc = json.load(open(against_path))
    against = doc.get("against", doc)
    problems = []
    for o in against["objects"]:
        if o["kind"] != "Deployment" or o["action"] not in ("roll", "replace"):
            continue
        s = seen.get(o["name"])
        if not s or s["samples"] < 2:
            problems.append(f"Deployment {o['name']}: its roll was not watched")
            continue
        outage = "down until" in o["detail"] or o["action"] == "replace"
        if not outage and s["first"] > 0 and s["min"] == 0:
            problems.append(f"Deployment {o['name']} had no available pod during its roll, but trainc plan --against "
                            f"said it rolls without an outage")
        if outage and s["min"] > 0:
            problems.append(f"Deployment {o['name']}: trainc plan --against said the roll is an outage, but an available "
                            f"pod was always there ({s['samples']} samples)")
    return problems


if __name__ == "__main__":
    if sys.argv[1] == "watch":
        watch(*sys.argv[2:6])
    elif sys.argv[1] == "judge":
        ps = judge(sys.argv[2], sys.argv[3])
        for p in ps:
            print(p)
        sys.exit(1 if ps else 0)
    else:
        raise SystemExit(__doc__)
