#!/usr/bin/env python3
"""The nodes of a spec's pools as GKE makes them, for the test cluster (tests/cluster/cluster.sh).

Reads `trainc plan SPEC --format json` for the pools (machine, node pools, largest size,
accelerator, TPU topology, provisioning) and prints, as one YAML stream:

  - each pool's nodes at its largest size, annotated for kwok (which keeps them Ready): capacity
    from stdlib/catalog.yaml's machine rows; allocatable worked out here from the catalog's GKE
    reservation tiers and eviction threshold (tests/placement_property.py's Catalog, which does not
    ask trainc), and compared with the plan's: a difference stops with both figures; GKE's labels
    (node pool, machine family, accelerator, TPU, Spot, zone, the gce-topology levels Kueue's
    topology-aware scheduling reads); GKE's taints (nvidia.com/gpu on GPU nodes when the cluster
    has a pool without accelerators, google.com/tpu on TPU nodes);
  - GKE's DaemonSets of each pool (the catalog's rows the plan names for it), each pod asking the
    row's requests, tolerating every taint as GKE's do;
  - GKE's and the operators' Deployments that need room on untainted nodes (catalog `systemPods`,
    the rows the plan places), kube-dns with the anti-affinity GKE's has.

A plan without pools (a spec for a cluster of the user's) gets two large GPU nodes standing for it.

What this cannot show: what a real node's kubelet reports (GKE's exact allocatable on a machine
the catalog has no worked example for), and the operators' pods, which run here as processes
(tests/cluster/operators.sh) and so are not among these Deployments.

Usage: nodes.py PLAN.json [--catalog stdlib/catalog.yaml] [--nodes POOL=N]...
"""
import argparse
import hashlib
import json
import os
import sys
from fractions import Fraction as F

import yaml

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from placement_property import Catalog, quantity  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MAX_PODS = 110  # GKE Standard's default maximum pods per node
KWOK = {"kwok.x-k8s.io/node": "fake"}
OPERATOR_NAMESPACES = {"kueue-system", "jobset-system", "kuberay-system", "istio-system", "istio-ingress",
                       "custom-metrics"}


def milli(cores):
    return f"{int(F(cores) * 1000)}m"


def family(machine):
    return machine.split("-")[0]


def arch(machine):
    # Arm machines: C4A, T2A, A4X (GB200), and the Axion-based families.
    return "arm64" if family(machine) in ("c4a", "t2a", "a4x", "n4a") else "amd64"


def node_name(system, node_pool, i):
    h = hashlib.sha256(f"{system}/{node_pool}".encode()).hexdigest()[:8]
    return f"gke-{system}-{node_pool}-{h}-{i:04x}"[:63]


def topology_labels(catalog_data, machine, i):
    """The gce-topology labels GKE sets on machines Compute Engine reports a topology for."""
    topo = catalog_data.get("topology") or {}
    if machine not in (topo.get("machines") or []):
        return {}
    # Nodes of one pool made together land in one block and sub-block here; each is its own host.
    return {"cloud.google.com/gce-topology-block": "block-0",
            "cloud.google.com/gce-topology-subblock": "subblock-0",
            "cloud.google.com/gce-topology-host": f"host-{i}"}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("plan")
    ap.add_argument("--catalog", default=os.path.join(ROOT, "stdlib", "catalog.yaml"))
    ap.add_argument("--nodes", action="append", default=[], metavar="POOL=N",
                    help="make N nodes of POOL instead of its largest size (a cluster smaller than the spec)")
    a = ap.parse_args()
    sizes = dict(x.split("=", 1) for x in a.nodes)
    plan = json.load(open(a.plan))
    cat = Catalog(a.catalog)
    data = yaml.safe_load(open(a.catalog))
    system = plan["system"]
    zone = plan.get("zone") or (plan["region"] + "-a")
    region = plan["region"]
    placed = {p["pool"]: p for p in plan.get("placement") or []}
    any_plain = any(not p.get("accelerator") and not p.get("tpuTopology") for p in plan["pools"])
    docs = []
    ds_pools = {}  # "namespace/name" -> set of node pools
    problems = []
    for pool in plan["pools"]:
        machine = pool["machine"]
        per = pool["perNode"]
        cpu, mem = cat.allocatable(machine)
        if pool["name"] in placed:
            want = placed[pool["name"]]["allocatable"]
            if abs(F(str(want["cpu"])) - cpu) > F(1, 1000) or abs(int(want["memory"]) - int(mem)) > 1:
                problems.append(f"pool {pool['name']} ({machine}): the catalog gives allocatable "
                                f"{float(cpu)} cores, {int(mem)} bytes; trainc's plan {want['cpu']}, {want['memory']}")
            for name in placed[pool["name"]]["daemonSets"]["names"]:
                if name.endswith("(trainc's)"):
                    continue  # trainc's own DaemonSet: in its output, applied by apply.sh
                ds_pools.setdefault(name, set()).update(pool["nodePools"])
        gpus, chips = per.get("gpus", 0), per.get("tpuChips", 0)
        capacity = {"cpu": str(per["vcpus"]), "memory": f"{int(F(str(per['memoryGiB'])) * 1024)}Mi",
                    "pods": str(MAX_PODS), "ephemeral-storage": f"{per.get('bootDiskGB', 100)}Gi"}
        allocatable = {"cpu": milli(cpu), "memory": str(int(mem)), "pods": str(MAX_PODS),
                       "ephemeral-storage": f"{int(per.get('bootDiskGB', 100) * 0.9)}Gi"}
        labels = {"kubernetes.io/os": "linux", "kubernetes.io/arch": arch(machine),
                  "node.kubernetes.io/instance-type": machine,
                  "topology.kubernetes.io/region": region, "topology.kubernetes.io/zone": zone,
                  "cloud.google.com/machine-family": family(machine),
                  "cloud.google.com/gke-os-distribution": "cos",
                  "cloud.google.com/gke-boot-disk": "pd-balanced",
                  "type": "kwok"}
        taints = []
        if gpus:
            labels["cloud.google.com/gke-accelerator"] = pool["accelerator"]
            labels["cloud.google.com/gke-gpu"] = "true"
            for r in ("capacity", "allocatable"):
                (capacity if r == "capacity" else allocatable)["nvidia.com/gpu"] = str(gpus)
            if any_plain:
                taints.append({"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"})
        if chips:
            labels["cloud.google.com/gke-tpu-accelerator"] = pool["accelerator"]
            labels["cloud.google.com/gke-tpu-topology"] = pool["tpuTopology"]
            capacity["google.com/tpu"] = allocatable["google.com/tpu"] = str(chips)
            taints.append({"key": "google.com/tpu", "value": "present", "effect": "NoSchedule"})
        prov = pool.get("provisioning")
        if prov == "spot":
            labels["cloud.google.com/gke-spot"] = "true"
            labels["cloud.google.com/gke-provisioning"] = "spot"
        elif prov in ("flex-start", "queued"):
            labels["cloud.google.com/gke-provisioning"] = "flex-start" if prov == "flex-start" else "queued"
        n = int(sizes.get(pool["name"], pool["nodes"]["max"]))
        pools = pool["nodePools"]
        for i in range(n):
            np_name = pools[i % len(pools)]
            name = node_name(system, np_name, i // len(pools))
            lab = dict(labels, **{"cloud.google.com/gke-nodepool": np_name, "kubernetes.io/hostname": name},
                       **topology_labels(data, machine, i))
            if pool.get("ladderOf"):  # a rung of a capacity ladder: the label up.sh gives its nodes
                lab["trainc.dev/pool"] = pool["ladderOf"]
            docs.append({"apiVersion": "v1", "kind": "Node",
                         "metadata": {"name": name, "labels": lab, "annotations": dict(KWOK)},
                         "spec": {"taints": taints} if taints else {},
                         "status": {"capacity": capacity, "allocatable": allocatable}})
    if not plan["pools"]:
        # A spec without pools runs on a cluster of the user's that trainc knows nothing about (its
        # plan places nothing): two large GPU nodes stand for it, so its pods can be admitted,
        # bound and run; nothing is compared with a placement.
        for i in range(2):
            name = f"user-node-{i}"
            res = {"cpu": "64", "memory": "512Gi", "pods": str(MAX_PODS), "ephemeral-storage": "500Gi",
                   "nvidia.com/gpu": "8"}
            docs.append({"apiVersion": "v1", "kind": "Node",
                         "metadata": {"name": name, "annotations": dict(KWOK),
                                      "labels": {"kubernetes.io/os": "linux", "kubernetes.io/arch": "amd64",
                                                 "kubernetes.io/hostname": name, "type": "kwok"}},
                         "spec": {"taints": [{"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}]},
                         "status": {"capacity": res, "allocatable": res}})
    if problems:
        for p in problems:
            print("nodes.py: " + p, file=sys.stderr)
        sys.exit(1)

    namespaces = set()
    entries = {f"{e['namespace']}/{e['name']}": e for e in (data["daemonSets"].get("entries") or [])}
    for key in sorted(ds_pools):
        e = entries.get(key) or entries.get(key.split("/", 1)[-1])
        if e is None:
            print(f"nodes.py: the plan names DaemonSet {key}, which the catalog lacks", file=sys.stderr)
            sys.exit(1)
        ns, name = key.split("/", 1)
        namespaces.add(ns)
        docs.append(workload("DaemonSet", ns, name, e, {
            "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
                {"matchExpressions": [{"key": "cloud.google.com/gke-nodepool", "operator": "In",
                                       "values": sorted(ds_pools[key])}]}]}}},
            "tolerations": [{"operator": "Exists"}],
            "priorityClassName": "system-node-critical"}))
    system_rows = {f"{e['namespace']}/{e['name']}" if e.get("namespace") else e["name"]: e
                   for e in (data.get("systemPods") or {}).get("entries") or []}
    seen = set()
    for p in placed.values():
        for phase in p["phases"]:
            if phase["name"] != "long-lived":
                continue
            for node in phase["nodes"]:
                for pod in node["pods"]:
                    if pod["kind"] == "system":
                        seen.add(pod["workload"])
    for key in sorted(seen):
        e = system_rows.get(key)
        if e is None or "/" not in key:
            continue
        ns, name = key.split("/", 1)
        if ns in OPERATOR_NAMESPACES:
            continue  # the operators' own: tests/cluster/operators.sh makes their Deployments
        namespaces.add(ns)
        extra = {"tolerations": [{"key": "CriticalAddonsOnly", "operator": "Exists"}]}
        if name == "kube-dns":
            extra["affinity"] = {"podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
                {"weight": 100, "podAffinityTerm": {"topologyKey": "kubernetes.io/hostname",
                                                    "labelSelector": {"matchLabels": {"k8s-app": name}}}}]}}
        docs.append(workload("Deployment", ns, name, e, extra, replicas=e.get("replicas", 1)))
    out = [{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}}
           for ns in sorted(namespaces) if ns not in ("kube-system", "default")]
    yaml.safe_dump_all(out + docs, sys.stdout, sort_keys=False)


def workload(kind, ns, name, row, extra, replicas=None):
    cpu, mem = quantity(row.get("cpu", 0)), quantity(row.get("memory", 0))
    requests = {"cpu": milli(cpu) if cpu else "0", "memory": str(int(mem))}
    spec = {"selector": {"matchLabels": {"k8s-app": name}},
            "template": {"metadata": {"labels": {"k8s-app": name}},
                         "spec": dict({"containers": [{"name": name, "image": f"gke.gcr.io/{name}:test",
                                                       "resources": {"requests": requests}}]}, **extra)}}
    if replicas is not None:
        spec = dict({"replicas": replicas}, **spec)
    return {"apiVersion": "apps/v1", "kind": kind,
            "metadata": {"name": name, "namespace": ns, "labels": {"k8s-app": name, "trainc.dev/test": "gke"}},
            "spec": spec}


if __name__ == "__main__":
    main()
