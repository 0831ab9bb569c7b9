#!/usr/bin/env python3
"""A stand-in for GKE's cluster autoscaler answering queued provisioning, for the test cluster.

GKE answers a ProvisioningRequest of class queued-provisioning.gke.io by making all of its nodes at
once in a node pool with queued provisioning, and then marks it Provisioned, naming the nodes'
resize request in status.provisioningClassDetails.ResizeRequestName; the nodes carry the label
autoscaling.gke.io/provisioning-request with that name and the taint
cloud.google.com/gke-queued=true:NoSchedule. This plays that part, and only it: each request it
sees is answered with nodes copied from a node of TEMPLATE_POOL (the same machine: its capacity,
labels and kwok's annotation, which makes them Ready) into NODE_POOL, then marked Accepted and
Provisioned. What it saw of each request (class, parameters, pod sets) is appended to LOG as a JSON
line, for the judge (tests/cluster/ladder.py): Kueue deletes a request once its workload finishes.

What this cannot show: the wait (the real service makes nodes when it has them), a request GKE
refuses, BookingExpired or CapacityRevoked.

Usage: provisioner.py KUBECTL KUBECONFIG NODE_POOL TEMPLATE_POOL LOG
"""
import copy
import datetime
import json
import subprocess
import sys
import time

QUEUED_LABEL = "autoscaling.gke.io/provisioning-request"
QUEUED_TAINT = "cloud.google.com/gke-queued"


def main():
    kubectl, kubeconfig, node_pool, template_pool, log = sys.argv[1:6]

    def k(*args, data=None):
        return subprocess.run([kubectl, "--kubeconfig", kubeconfig, *args], input=data, capture_output=True,
                              text=True, check=False)

    answered = set()
    made = 0
    while True:
        r = k("get", "provisioningrequests.autoscaling.x-k8s.io", "-A", "-o", "json")
        items = json.loads(r.stdout)["items"] if r.returncode == 0 else []
        for pr in items:
            ns, name = pr["metadata"]["namespace"], pr["metadata"]["name"]
            if (ns, name) in answered:
                continue
            conditions = {c["type"]: c["status"] for c in pr.get("status", {}).get("conditions") or []}
            if conditions.get("Provisioned") == "True":
                answered.add((ns, name))
                continue
            count = sum(int(ps.get("count", 0)) for ps in pr["spec"].get("podSets") or [])
            t = k("get", "nodes", "-l", f"cloud.google.com/gke-nodepool={template_pool}", "-o", "json")
            templates = json.loads(t.stdout)["items"] if t.returncode == 0 else []
            if not templates:
                print(f"provisioner: no node of pool {template_pool} to copy", file=sys.stderr, flush=True)
                continue
            nodes = []
            for _ in range(count):
                src = templates[0]
                node = {"apiVersion": "v1", "kind": "Node",
                        "metadata": {"name": f"gke-queued-{node_pool}-{made:04x}",
                                     "labels": copy.deepcopy(src["metadata"]["labels"]),
                                     "annotations": {a: v for a, v in src["metadata"].get("annotations", {}).items()
                                                     if a.startswith("kwok.x-k8s.io/")}},
                        "spec": {"taints": [t for t in src["spec"].get("taints") or []]
                                 + [{"key": QUEUED_TAINT, "value": "true", "effect": "NoSchedule"}]},
                        "status": {"capacity": src["status"]["capacity"],
                                   "allocatable": src["status"]["allocatable"]}}
                labels = node["metadata"]["labels"]
                for key in ("cloud.google.com/gke-spot", "cloud.google.com/gke-provisioning"):
                    labels.pop(key, None)
                labels.update({"cloud.google.com/gke-nodepool": node_pool, "kubernetes.io/hostname": node["metadata"]["name"],
                               "cloud.google.com/gke-provisioning": "queued", "cloud.google.com/gke-queued": "true",
                               QUEUED_LABEL: name})
                nodes.append(node)
                made += 1
            a = k("apply", "--server-side", "-f", "-", data=json.dumps({"apiVersion": "v1", "kind": "List", "items": nodes}))
            if a.returncode != 0:
                print(f"provisioner: nodes for {ns}/{name} refused: {a.stderr}", file=sys.stderr, flush=True)
                continue
            now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
            cond = [{"type": c, "status": "True", "reason": reason, "message": message, "lastTransitionTime": now}
                    for c, reason, message in (("Accepted", "Accepted", "the stand-in accepted the request"),
                                               ("Provisioned", "Provisioned", f"{count} node(s) made in {node_pool}"))]
            patch = {"status": {"conditions": cond, "provisioningClassDetails": {"ResizeRequestName": name}}}
            p = k("patch", "provisioningrequests.autoscaling.x-k8s.io", name, "-n", ns, "--subresource=status",
                  "--type=merge", "-p", json.dumps(patch))
            if p.returncode != 0:
                print(f"provisioner: status of {ns}/{name} refused: {p.stderr}", file=sys.stderr, flush=True)
                continue
            answered.add((ns, name))
            with open(log, "a") as f:
                f.write(json.dumps({"namespace": ns, "name": name, "class": pr["spec"].get("provisioningClassName"),
                                    "parameters": pr["spec"].get("parameters") or {}, "pods": count,
                                    "nodes": [n["metadata"]["name"] for n in nodes]}) + "\n")
            print(f"provisioner: {ns}/{name}: {count} node(s) in {node_pool}, Provisioned", file=sys.stderr, flush=True)
        time.sleep(1)


if __name__ == "__main__":
    main()
