#!/usr/bin/env python3
"""Checks every `kubectl scale ... deployment/NAME --replicas=N` a compiled runbook suggests against
what the pools can hold, judged from the output itself, not from trainc's own arithmetic: the
Deployment's pods (k8s/*.yaml: their node pool, CPU, memory and GPU requests), the pool's nodes and
allocatable resources (model.yaml), and the other Deployments placed on that pool at their largest
(replicas, or an autoscaler's maxReplicas). N must be a change, and at most

    min(whole pods per node x the pool's largest node count, what the other Deployments leave).

Sidecars injected at admission (GCS FUSE, Istio) are left out, so this is an upper bound.
Prints one line per suggestion that does not fit and exits 1 if any; prints what it checked.
Usage: runbook_scale.py OUTPUT_FOLDER   (one compiled system: README.md, model.yaml, k8s/)
"""
import glob
import math
import os
import re
import sys

import yaml

UNITS = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "k": 1e3, "M": 1e6, "G": 1e9, "T": 1e12, "m": 1e-3}


def quantity(q):
    m = re.fullmatch(r"([0-9.]+)([A-Za-z]*)", str(q))
    return float(m.group(1)) * UNITS.get(m.group(2), 1)


# model.yaml gives allocatable CPU and memory to two decimals ("28.34Gi"): a pod sized to the exact
# figure may be a hair over the rounded one.
SLACK = 1e-3


def pod_of(deployment):
    return deployment["spec"]["template"]["spec"]


def requests(pod):
    """CPU cores, memory bytes and GPUs the pod's containers request."""
    total = {"cpu": 0.0, "memory": 0.0, "nvidia.com/gpu": 0.0}
    for c in pod.get("containers") or []:
        for k, v in ((c.get("resources") or {}).get("requests") or {}).items():
            if k in total:
                total[k] += quantity(v)
    return total


def main(folder):
    readme = open(os.path.join(folder, "README.md")).read()
    model = yaml.safe_load(open(os.path.join(folder, "model.yaml")))
    deployments, most_replicas = {}, {}
    for f in sorted(glob.glob(os.path.join(folder, "k8s", "*.yaml"))):
        for doc in yaml.safe_load_all(open(f)):
            if not isinstance(doc, dict):
                continue
            if doc.get("kind") == "Deployment":
                deployments[doc["metadata"]["name"]] = doc
                most_replicas.setdefault(doc["metadata"]["name"], doc["spec"].get("replicas", 1))
            if doc.get("kind") == "HorizontalPodAutoscaler":
                most_replicas[doc["spec"]["scaleTargetRef"]["name"]] = doc["spec"]["maxReplicas"]
    bad = 0
    suggestions = re.findall(r"^kubectl scale -n \S+ deployment/(\S+) --replicas=(\d+)", readme, re.M)
    for name, n in suggestions:
        n = int(n)
        d = deployments.get(name)
        if d is None:
            print(f"{name}: the runbook scales a Deployment that is not in k8s/")
            bad = 1
            continue
        pool_name = (pod_of(d).get("nodeSelector") or {}).get("cloud.google.com/gke-nodepool")
        pools = {k: p for k, p in (model.get("pools") or {}).items() if pool_name in (None, k)}
        want = requests(pod_of(d))
        fits = 0
        for pname, p in pools.items():
            nodes = p["autoscaling"]["max"] if p.get("autoscaling") else p["nodes"]
            per_node_have = {"cpu": quantity(p["allocatable"]["cpu"]), "memory": quantity(p["allocatable"]["memory"]),
                             "nvidia.com/gpu": (p.get("accelerator") or {}).get("count", 0)}
            per_node = min([math.floor(per_node_have[k] / v + SLACK) for k, v in want.items() if v > 0] or [1])
            left = {k: v * nodes for k, v in per_node_have.items()}
            for other, od in deployments.items():
                if other == name or (pod_of(od).get("nodeSelector") or {}).get("cloud.google.com/gke-nodepool") != pname:
                    continue
                for k, v in requests(pod_of(od)).items():
                    left[k] -= v * most_replicas[other]
            fits += min([per_node * nodes] + [math.floor(left[k] / v + SLACK) for k, v in want.items() if v > 0])
        replicas = d["spec"].get("replicas", 1)
        print(f"{name}: {replicas} -> {n}, pool {pool_name or 'any'} holds {fits}")
        if n == replicas or n < 0 or n > max(fits, 0):
            print(f"{name}: --replicas={n} (now {replicas}) does not fit: the pool holds at most {fits} of its pods")
            bad = 1
    return bad


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    sys.exit(main(sys.argv[1]))
