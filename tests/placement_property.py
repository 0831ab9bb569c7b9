#!/usr/bin/env python3
"""A property test of placement: generated specs, judged from the catalog, not from trainc.

Generates N small specs (seeded): CPU and GPU pools of 1-3 nodes (A4 ones with RDMA now and then),
Dask and Ray clusters whose pod groups take whole nodes (no `resources`) or ask for explicit
requests, with and without GCS buckets mounted (the GCS FUSE sidecar), Ray groups that autoscale
(KubeRay's autoscaler beside the head), a vLLM service with or without Istio, pools shared by a
lead and its workers, by two clusters or by a service, and plain steps on the pools. Most pools
get the fewest nodes that hold their pods, some one node fewer. For each, `trainc plan SPEC
--format json` and `trainc check SPEC` run, and the judge works out on its own, from
stdlib/catalog.yaml and the variant's parameters:

  - a node's room: allocatable (GKE's reservation tiers over the machine's vCPUs and memory, less
    the eviction threshold), less the requests of the catalog's DaemonSets whose `when` conditions
    hold for the pool, of the DaemonSets trainc emits there (read from its manifests), and the
    margin;
  - every pod's requests: a whole-node pod asks for the room less the containers added beside it
    (GCS FUSE sidecar, KubeRay autoscaler), and an unsized Dask scheduler less its largest client
    step too, where it keeps half; an explicit one for what the variant wrote, plus them (and the
    Istio proxy);
  - the system pods (catalog systemPods whose conditions hold), which name no pool and go on the
    open pools (those without GPUs; every pool when all have GPUs, as GKE then taints none), and
    which whole-node pods on those pools leave room for;
  - whether the pods can be placed at all: an exhaustive search over every pool's nodes at their
    maximum (the instances are small).

It then requires of the plan's `placement`: exactly the expected pods, with those requests; every
node's pods within its room, its headroom the room less their sum; trainc places every long-lived
pod exactly when the search finds a placement, and each step's pods with the pool's long-lived ones
exactly when the search finds room for them all (a step's phase may arrange the long-lived pods
anew; trainc then notes that the step fits only so); `trainc check` fails with "would stay
Pending" exactly when some pod cannot be placed; and the fix such an error offers ("raise the
pool's nodes to N") asks for more nodes than the pool has, and enough for the search.

Then every YAML example (examples/*/spec.yaml) is held to what any plan must hold: check passes,
no pod is unplaced, and per pool the allocatable, DaemonSet reserve and room are the catalog's,
every node's pods fit the room and its headroom is the room less them.

One TAP line per variant and example, then a summary; a mismatch prints the spec and both verdicts.
--self-check judges the judge instead: its allocatable against GKE's worked examples, and the
plans its own model makes (which must pass) and their mutations (which must fail).
PLACEMENT_PLANT_RESERVE_CPU=C (cores) adds C to the judge's DaemonSet reserve: a planted error,
which tests/placement_test.sh requires to be caught.

Every compiled variant and example is also held to requests: each container of each pod trainc
emits requests CPU and memory (no pod is BestEffort), and a step's container asks what the plan
places it with. --requests-of OUT judges only that, on a compiled output.

Usage: placement_property.py TRAINC [N] [--seed S] [--self-check] [--catalog stdlib/catalog.yaml]
       placement_property.py - --requests-of OUT
"""
import argparse
import copy
import glob
import itertools
import json
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
from fractions import Fraction as F

import yaml

GIB = 1 << 30
MIB = 1 << 20
CPU_EPS = F(1, 10**6)  # a plan's cores are JSON numbers: allow a micro-core of rounding
MEM_EPS = 1            # memory is whole bytes: allow the byte rounding drops

# ---- quantities and the catalog ---------------------------------------------------------------

SUFFIX = {"m": F(1, 1000), "k": 10**3, "M": 10**6, "G": 10**9, "T": 10**12,
          "Ki": 1 << 10, "Mi": 1 << 20, "Gi": 1 << 30, "Ti": 1 << 40, "": 1}


def quantity(q):
    """A Kubernetes quantity ("250m", "256Mi", 4, "1.5") as an exact Fraction."""
    m = re.fullmatch(r"([0-9.]+)(m|k|M|G|T|Ki|Mi|Gi|Ti|)", str(q).strip())
    if not m:
        raise ValueError(f"not a quantity: {q!r}")
    return F(m.group(1)) * SUFFIX[m.group(2)]


def tiers(amount, rows, key):
    """What GKE reserves of `amount`: each tier's fraction of the part of `amount` inside it."""
    reserved, floor = F(0), F(0)
    for row in rows:
        top = row[key]
        top = amount if top is None else min(amount, F(str(top)))
        if top > floor:
            reserved += (top - floor) * F(str(row["fraction"]))
            floor = top
    return reserved


class Catalog:
    def __init__(self, path):
        data = yaml.safe_load(open(path))
        self.machines = {}
        self.capacity = {}  # machine -> how Compute Engine offers it, where that is not every way
        for fam in data["gpuFamilies"]:
            for m in fam["machines"]:
                self.machines[m["type"]] = {"vcpus": m["vcpus"], "memoryGiB": m["memoryGiB"], "gpus": m["gpus"]}
                if fam.get("capacity"):
                    self.capacity[m["type"]] = fam["capacity"]
        for m in data["cpuMachines"]["machines"]:
            self.machines[m["type"]] = {"vcpus": m["vcpus"], "memoryGiB": m["memoryGiB"], "gpus": 0}
        for gen in data["tpuGenerations"]:
            for m in gen["machines"]:
                self.machines[m["type"]] = {"vcpus": m["vcpus"], "memoryGiB": m["memoryGiB"], "gpus": 0,
                                            "chips": m["chips"]}
        self.alloc = data["allocatable"]
        self.daemonsets = data["daemonSets"]
        self.fuse = data["sidecars"]["gcsfuse"]
        self.istio = data["sidecars"]["istioProxy"]
        self.system = (data.get("systemPods") or {}).get("entries") or []
        defaults = data["podDefaults"]
        self.cpu_pod = (quantity(defaults["cpuPod"]["cpu"]), quantity(defaults["cpuPod"]["memory"]))
        self.slack = (quantity(defaults["wholeNodeSlack"]["cpu"]), quantity(defaults["wholeNodeSlack"]["memory"]))
        plant = os.environ.get("PLACEMENT_PLANT_RESERVE_CPU")
        self.plant = F(plant) if plant else F(0)

    def allocatable(self, machine):
        """(cores, bytes) a node of `machine` offers pods: capacity less GKE's tiers and eviction."""
        m = self.machines[machine]
        cores, gib = F(str(m["vcpus"])), F(str(m["memoryGiB"]))
        cpu = cores - tiers(cores, self.alloc["cpuReserve"], "upToCores")
        if gib < 1:
            mem = gib * GIB - 255 * MIB
        else:
            mem = (gib - tiers(gib, self.alloc["memoryReserve"], "upToGiB")) * GIB
        return cpu, mem - F(str(self.alloc["evictionMemoryMiB"])) * MIB

    def reserve(self, facts):
        """(cores, bytes, names, margin) of the DaemonSets on a node whose pool has `facts`."""
        cpu = mem = F(0)
        names = []
        for e in self.daemonsets.get("entries") or []:
            when = e.get("when") or []
            unknown = [c for c in when if c not in facts]
            if unknown:
                raise KeyError(f"daemonSets entry {e['name']}: condition(s) {unknown} unknown to the judge")
            if all(facts[c] for c in when):
                cpu += quantity(e.get("cpu", 0))
                mem += quantity(e.get("memory", 0))
                names.append(e["name"])
        margin = self.daemonsets.get("margin") or {}
        mc, mm = quantity(margin.get("cpu", 0)), quantity(margin.get("memory", 0))
        return cpu + mc + self.plant, mem + mm, names, (mc, mm)

    def fuse_sidecar(self):
        return quantity(self.fuse["cpu"]), quantity(self.fuse["memory"])

    def istio_proxy(self):
        return quantity(self.istio["cpu"]), quantity(self.istio["memory"])

    def system_pods(self, facts):
        """GKE's and the add-ons' Deployments whose `when` conditions hold: pods that name no pool."""
        out = []
        for e in self.system:
            unknown = [c for c in e.get("when") or [] if c not in facts]
            if unknown:
                raise KeyError(f"systemPods entry {e['name']}: condition(s) {unknown} unknown to the judge")
            if all(facts[c] for c in e.get("when") or []):
                name = f"{e['namespace']}/{e['name']}" if e.get("namespace") else e["name"]
                out += [Pod(name, "system", i, None, quantity(e.get("cpu", 0)), quantity(e.get("memory", 0)), 0,
                            [], False) for i in range(e.get("replicas", 1))]
        return out


AUTOSCALER = ("autoscaler", F(1, 2), 512 * MIB, "KubeRay")   # kuberay v1.7.0 BuildAutoscalerContainer
# kuberay v1.7.0 common/pod.go: every worker's init container waits for the head's GCS, 200m/256Mi.
WAIT_GCS = ("wait-gcs-ready", F(1, 5), 256 * MIB, "KubeRay", True)


def is_init(a):
    return len(a) > 4 and a[4]


def scheduled(containers, key):
    """What the scheduler counts of a pod's containers (plan JSON): the sum of the others, or the
    biggest init container if larger."""
    return max([sum(c[key] for c in containers if not c.get("init"))] +
               [c[key] for c in containers if c.get("init")])
FUSE_NAME = "gke-gcsfuse-sidecar"
CPU_POD = (F(0), F(0))  # stdlib/catalog.yaml podDefaults.cpuPod, set by main() from the catalog
LEAD_ON_GPU = (F(2), 8 * GIB)                                 # docs/spec-v1.md: a lead off CPU pools

# ---- the generator ----------------------------------------------------------------------------

RDMA_MACHINES = {"a4-highgpu-8g"}
CPU_MACHINES = ["e2-standard-4", "e2-standard-8", "n2-standard-8", "n2-standard-16", "n2-highmem-8",
                "e2-highcpu-16", "n1-standard-8"]
GPU_MACHINES = [("g2-standard-8", None), ("g2-standard-24", None), ("g2-standard-48", None),
                ("n1-standard-8", ("nvidia-tesla-t4", 1)), ("n1-standard-8", ("nvidia-tesla-t4", 2)),
                ("n1-standard-16", ("nvidia-tesla-t4", 4)), ("a4-highgpu-8g", None), ("a3-highgpu-8g", None)]


class Pool:
    def __init__(self, name, machine, accel, nodes, autoscale, rdma, cat, facts, own=None):
        self.name, self.machine, self.accel, self.nodes, self.autoscale = name, machine, accel, nodes, autoscale
        self.rdma = rdma
        self.offered = cat.capacity.get(machine)
        self.gpus = accel[1] if accel else cat.machines[machine]["gpus"]
        self.alloc = cat.allocatable(machine)
        self.facts = dict(facts, gpu=self.gpus > 0, rdma=rdma)
        self.ds_cpu, self.ds_mem, self.ds_names, self.margin = cat.reserve(self.facts)
        # trainc's own DaemonSets on the pool (the gIB installer), from the objects it emits.
        own_cpu, own_mem, self.own_ds = own or (0, 0, [])
        self.ds_cpu += own_cpu
        self.ds_mem += own_mem
        self.room = (self.alloc[0] - self.ds_cpu, self.alloc[1] - self.ds_mem)
        # The generator sizes explicit requests from the room without the planted error: a seed makes
        # the same specs with it and without.
        self.gen_room = (self.room[0] + cat.plant, self.room[1])

    def spec(self):
        out = {"machine": self.machine}
        if self.accel:
            out["accelerator"] = {"type": self.accel[0], "count": self.accel[1]}
        if self.autoscale:
            out["autoscaling"] = {"min": 0, "max": self.nodes}
        else:
            out["nodes"] = self.nodes
        # A machine not offered on demand (A4, A3 Ultra) says how it gets its nodes: a fixed pool a
        # reservation, an autoscaled one Spot (flex-start pools start empty, which is a check of its own).
        if self.offered and "standard" not in self.offered:
            if self.autoscale:
                out["provisioning"] = "spot"
            else:
                out["provisioning"] = "reservation"
                out["reservation"] = f"{self.name}-reservation"
        if self.rdma:
            out["rdma"] = True
        return out


class Pod:
    """A pod as the cluster will run it: trainc's containers and those added beside them."""

    def __init__(self, workload, kind, index, pool, cpu, mem, gpus, added, whole, fraction=None, capped=None):
        self.workload, self.kind, self.index, self.pool = workload, kind, index, pool
        self.own = (cpu, mem)
        self.gpus, self.added, self.whole = gpus, added, whole
        # Sized by trainc once the system pods are known (draft's last pass): `fraction` of a node's
        # room less the slack (and the system pods on an open pool), less the added containers; or
        # `capped`, the catalog's CPU pod default at most the same whole-node figure.
        self.fraction, self.capped = fraction, capped

    # What the scheduler counts: the sum of the containers, or the biggest init container if larger.
    @property
    def cpu(self):
        return max([self.own[0] + sum(a[1] for a in self.added if not is_init(a))] +
                   [a[1] for a in self.added if is_init(a)])

    @property
    def mem(self):
        return max([self.own[1] + sum(a[2] for a in self.added if not is_init(a))] +
                   [a[2] for a in self.added if is_init(a)])

    def key(self):
        return (self.workload, self.index)


def cores_text(c):
    return f"{int(c * 1000)}m"


def mem_text(b):
    return f"{int(b // MIB)}Mi"


def explicit(rng, room, added, gpus_share):
    """Requests near a share of a node's room (less the added containers), at times just over it,
    so that exact room decides how many pods share a node; in whole millicores and MiB."""
    share = rng.choice([F(1, 4), F(1, 3), F(1, 2), F(1, 2), F(2, 3), F(1, 1)]) if gpus_share is None else gpus_share
    cpu = room[0] * share - sum(a[1] for a in added)
    mem = room[1] * share - sum(a[2] for a in added)
    if rng.random() < 0.3:  # off the boundary: a tenth of a node less
        cpu, mem = cpu - room[0] / 10, mem - room[1] / 10
    cpu = F(int(cpu * 1000), 1000) + rng.choice([0, 0, 0, F(1, 1000), -F(1, 1000)])
    mem = F(int(mem // MIB) * MIB) + rng.choice([0, 0, 0, MIB, -MIB])
    return max(cpu, F(1, 10)), max(mem, F(64 * MIB))


GPU_POOL = ("gpu", "g2-standard-24", None, 2, False, False)  # the service's pool when no pool has GPUs


def service(rng, cat, spec, pool):
    """A vLLM service on `pool` with explicit requests, behind Istio or not; its pods at their most."""
    added = []
    if rng.random() < 0.5:
        spec["istio"] = {}
        added.append(("istio-proxy", *cat.istio_proxy(), "Istio"))
    gpus = rng.choice([d for d in range(1, pool.gpus + 1) if pool.gpus % d == 0])
    res = explicit(rng, pool.gen_room, added, F(gpus, pool.gpus) if rng.random() < 0.5 else None)
    count = rng.randint(1, 3)
    svc = {"pool": pool.name, "vllm": {"model": "Qwen/Qwen2.5-0.5B-Instruct"}, "gpus": gpus,
           "resources": {"requests": {"cpu": cores_text(res[0]), "memory": mem_text(res[1])}}}
    if count > 1 and rng.random() < 0.5:
        svc["autoscaling"] = {"min": 1, "max": count, "pendingRequests": 5}
    else:
        svc["replicas"] = count
    spec["services"] = {"chat": svc}
    return [Pod("chat", "service/vllm", i, pool.name, *res, gpus, added, False) for i in range(count)]


def client_step(rng, step, pools, fuse, security, cluster_mounts):
    """Fills in a Dask client step; its one pod. One that names no pool asks for nothing. A client
    step gets its cluster's mounts too (the client reads what the workers read), so a cluster that
    mounts a bucket gives its client the GCS FUSE sidecar whether the step mounts one or not."""
    added = []
    if fuse and rng.random() < 0.5:
        step["mounts"] = [{"store": "data", "path": "/data"}]
        added = [fuse]
    if fuse and cluster_mounts:
        added = [fuse]
    if security:
        step["security"] = security
    if rng.random() < 0.5:  # the catalog's CPU pod default, uncapped: it names no pool
        return [Pod(step["name"], "step/command", 0, None, *CPU_POD, 0, added, False)]
    pool = rng.choice(pools)
    res = explicit(rng, pool.gen_room, added, None)
    step.update(pool=pool.name, gpus=0, resources={"requests": {"cpu": cores_text(res[0]), "memory": mem_text(res[1])}})
    return [Pod(step["name"], "step/command", 0, pool.name, *res, 0, added, False)]


def open_pools(pools):
    """The pools a pod that names none (and asks for no GPU) may run on: those without accelerators,
    or every pool when all have GPUs, as GKE taints GPU nodes (nvidia.com/gpu=present:NoSchedule)
    only in a cluster that has a pool without them."""
    cpu = sorted(n for n, p in pools.items() if p.gpus == 0)
    return cpu or sorted(pools)


def variant(rng, cat, n, own_ds):
    """One spec and the pods the judge expects of it, by pool. own_ds(spec) gives the requests of the
    DaemonSets trainc emits, by pool: {pool: (cores, bytes, [names])}. Three in five variants can be
    placed whole, the others not: drafts are drawn until one is as wanted (or 20 have been)."""
    placeable_wanted = rng.random() < 0.6
    for _ in range(20):
        spec, pools, expected, step_pods = draft(rng, cat, n, own_ds)
        if all(Judge(pools, expected, step_pods).search_all()) == placeable_wanted:
            break
    return spec, pools, expected, step_pods


def draft(rng, cat, n, own_ds):
    spec = {"apiVersion": "trainc/v1", "kind": "TrainingSystem", "name": f"prop-{n}",
            "gcp": {"project": "prop-project", "region": "us-central1", "zone": "us-central1-b"},
            "cluster": {"pools": {}}}
    # A vLLM service on a GPU pool now and then: Managed Prometheus scrapes every service.
    services = rng.random() < 0.35
    pools = []
    for i in range(rng.randint(1, 3)):
        if rng.random() < 0.5:
            machine, accel = rng.choice(CPU_MACHINES), None
        else:
            machine, accel = rng.choice(GPU_MACHINES)
        rdma = machine in RDMA_MACHINES and rng.random() < 0.5
        pools.append((f"p{i}", machine, accel, rng.randint(1, 3), rng.random() < 0.4, rdma))
    # GKE multi-networking, which RDMA pools need, brings Dataplane V2 (anetd instead of kube-proxy).
    dpv2 = any(p[5] for p in pools)
    facts = {"always": True, "kubeProxy": not dpv2, "dataplaneV2": dpv2, "tpu": False, "workloadIdentity": True,
             "gcsfuse": True, "managedPrometheus": services}
    for p in pools:
        spec["cluster"]["pools"][p[0]] = Pool(*p, cat, facts).spec()
    own = own_ds(spec)
    pools = [Pool(*p, cat, facts, own.get(p[0])) for p in pools]
    by_name = {p.name: p for p in pools}
    # Pods on RDMA pools use the host's driver and gIB plugin: their workloads must opt out of restricted.
    security = {"level": "privileged", "reason": "RDMA through the host's gIB plugin"} if dpv2 else None
    fuse_any = rng.random() < 0.6
    if fuse_any:
        spec["storage"] = {"data": {"gcs": {"bucket": f"prop-data-{n}"}}}
        spec["identity"] = {"serviceAccount": "prop-ksa", "gcpServiceAccount": "prop-gsa"}
    expected, steps, clusters, step_pods = [], [], {}, {}
    fuse_cpu, fuse_mem = cat.fuse_sidecar()
    fuse = (FUSE_NAME, fuse_cpu, fuse_mem, "GCS FUSE CSI webhook")
    for ci in range(1 if rng.random() < 0.65 else 2):
        engine = rng.choice(["dask", "ray"])
        cname = f"{engine}{ci}"
        c = {"engine": engine, "image": "ghcr.io/dask/dask:2024.12.1" if engine == "dask"
             else "rayproject/ray:2.52.0-py310-gpu"}
        mounts = fuse_any and rng.random() < 0.7
        if security:
            c["security"] = security
        if mounts:
            c["mounts"] = [{"store": "data", "path": "/data"}]
        groups, autoscaled = {}, False
        for gi in range(1 if rng.random() < 0.65 else 2):
            pool = rng.choice(pools)
            g = {"pool": pool.name}
            count = rng.choice([1, 1, 1, 2, 2, 3])
            if engine == "ray" and rng.random() < 0.4:
                g.update(replicas=min(1, count), min=0, max=count)
                autoscaled = True
            else:
                g["replicas"] = count
            gpus = pool.gpus
            if pool.gpus > 1 and rng.random() < 0.5:
                gpus = rng.choice([d for d in range(1, pool.gpus) if pool.gpus % d == 0])
                g["gpus"] = gpus
            res = None
            if rng.random() < 0.5:
                added = [fuse] if mounts else []
                share = F(gpus, pool.gpus) if pool.gpus and rng.random() < 0.5 else None
                res = explicit(rng, pool.gen_room, added, share)
                g["resources"] = {"requests": {"cpu": cores_text(res[0]), "memory": mem_text(res[1])}}
            groups[f"g{gi}"] = (g, pool, count, gpus, res)
        lead_pool = rng.choice(pools)
        lead = {"pool": lead_pool.name}
        lead_res = None
        if rng.random() < 0.3:
            lead_res = explicit(rng, lead_pool.gen_room, [], None)
            lead["resources"] = {"requests": {"cpu": cores_text(lead_res[0]), "memory": mem_text(lead_res[1])}}
        lead_key = "scheduler" if engine == "dask" else "head"
        c[lead_key] = lead
        c["workers"] = {k: v[0] for k, v in groups.items()}
        clusters[cname] = c
        kind = f"cluster/{engine}"
        lead_added = ([fuse] if mounts else []) + ([AUTOSCALER] if autoscaled else [])
        if lead_res:
            own, whole = lead_res, False
        elif lead_pool.gpus == 0:
            own, whole = (F(0), F(0)), True  # sized below, once the system pods are known
        else:
            own, whole = LEAD_ON_GPU, False
        expected.append(Pod(f"{cname}/{lead_key}", kind, 0, lead_pool.name, *own, 0, lead_added, whole,
                            fraction=1 if whole else None))
        for gname, (g, pool, count, gpus, res) in groups.items():
            added = ([fuse] if mounts else []) + ([WAIT_GCS] if engine == "ray" else [])
            own, whole = (res, False) if res else ((F(0), F(0)), True)  # a whole node: sized below
            for i in range(count):
                expected.append(Pod(f"{cname}/{gname}", kind, i, pool.name, *own, gpus, added, whole,
                                    fraction=1 if whole else None))
        step = {"name": f"on-{cname}", "cluster": cname, "command": ["python", "job.py"]}
        if engine == "ray":  # a RayJob, submitted over HTTP: no pod of its own
            step["retries"] = 0
        else:  # a Dask client Job: on a pool with requests, or on none (a pool without GPUs) with none
            step_pods[step["name"]] = client_step(rng, step, pools, fuse if fuse_any else None, security, mounts)
        steps.append(step)
    spec["clusters"] = clusters
    gpu_pools = [p for p in pools if p.gpus and not p.rdma]
    if services and not gpu_pools:
        gpu_pools = [Pool(*GPU_POOL, cat, facts)]
        spec["cluster"]["pools"]["gpu"] = gpu_pools[0].spec()
        by_name["gpu"] = gpu_pools[0]
    if services:
        expected += service(rng, cat, spec, rng.choice(gpu_pools))
    for si in range(rng.randint(0, 2)):
        pool = rng.choice(pools)
        name = f"step{si}"
        nodes = rng.randint(1, 2)
        gpus = pool.gpus if pool.gpus and rng.random() < 0.7 else 0
        smounts = fuse_any and rng.random() < 0.5
        added = [fuse] if smounts else []
        res = explicit(rng, pool.gen_room, added, None)
        st = {"name": name, "pool": pool.name, "image": "python:3.12-slim", "command": ["python", "step.py"],
              "gpus": gpus, "resources": {"requests": {"cpu": cores_text(res[0]), "memory": mem_text(res[1])}}}
        sized = {}
        if rng.random() < 0.4:  # no resources: trainc sizes the pod (catalog podDefaults)
            del st["resources"]
            res = (F(0), F(0))
            sized = {"fraction": F(gpus, pool.gpus)} if gpus else {"capped": CPU_POD}
        if nodes > 1:
            st["nodes"] = nodes
        if smounts:
            st["mounts"] = [{"store": "data", "path": "/data"}]
        if security:
            st["security"] = security
        if steps and rng.random() < 0.5:
            st["needs"] = [steps[-1]["name"]]
        steps.append(st)
        step_pods[name] = [Pod(name, "step/command", i, pool.name, *res, gpus, added, bool(sized), **sized)
                           for i in range(nodes)]
    spec["pipeline"] = steps
    # GKE's own Deployments and the operators' land on pools without accelerators or taints.
    svc = (spec.get("services") or {}).values()
    expected += cat.system_pods({
        "always": True, "dataplaneV2": dpv2, "managedPrometheus": services, "istio": "istio" in spec,
        "kuberay": any(c["engine"] == "ray" for c in clusters.values()), "kueue": False,
        # A step of several nodes off a compute cluster runs as a JobSet (docs/spec-v1.md), whose
        # controller's pod needs room like GKE's own.
        "jobset": any(st.get("nodes", 1) > 1 and not st.get("cluster") for st in steps),
        "metricsAdapter": any("autoscaling" in v for v in svc)})
    # A pod trainc sizes from its node leaves the catalog's slack and, on a pool the system pods may
    # use, room for all of them.
    system = [p for p in expected if p.kind == "system"]
    share = (sum(p.cpu for p in system), sum(p.mem for p in system))
    for p in expected + [q for st in step_pods.values() for q in st]:
        if p.fraction is None and p.capped is None:
            continue
        pool = by_name[p.pool]
        shared = share if p.pool in open_pools(by_name) else (0, 0)
        base = [pool.room[k] - cat.slack[k] - shared[k] for k in (0, 1)]
        added = [sum(a[1 + k] for a in p.added if not is_init(a)) for k in (0, 1)]
        if p.fraction is not None:
            p.own = tuple(base[k] * p.fraction - added[k] for k in (0, 1))
        else:
            p.own = tuple(min(p.capped[k], base[k] - added[k]) for k in (0, 1))
    # A Dask scheduler trainc sizes leaves room beside itself for the largest of its cluster's client
    # steps that may land on its pool (the pool a client names, or an open pool when it names none),
    # where the scheduler keeps at least half of what it would have.
    for lead in [p for p in expected if p.kind == "cluster/dask" and p.workload.endswith("/scheduler") and p.whole]:
        clients = [q for q in step_pods.get("on-" + lead.workload.split("/")[0], [])
                   if q.pool == lead.pool or (q.pool is None and lead.pool in open_pools(by_name))]
        if clients:
            need = (max(q.cpu for q in clients), max(q.mem for q in clients))
            if all(need[k] <= lead.own[k] / 2 for k in (0, 1)):
                lead.own = tuple(lead.own[k] - need[k] for k in (0, 1))
    # Most variants get pools of the fewest nodes (up to 3) that hold their pods; the others one pool
    # a node short: placement is judged on both sides of the line.
    short = rng.choice(list(by_name)) if rng.random() < 0.3 else None
    for pool in by_name.values():
        size_pool(pool, expected, step_pods, pool.name == short)
        spec["cluster"]["pools"][pool.name] = pool.spec()
    return spec, by_name, expected, step_pods


def size_pool(pool, expected, step_pods, short):
    """Gives the pool the fewest nodes, up to 3, that hold its pods (less one when `short`), sized from
    the room without the planted error; a pool that 3 nodes cannot hold keeps its size."""
    def size(p):
        f = p.fraction if p.fraction is not None else (1 if p.whole else 0)
        return (p.cpu + (pool.gen_room[0] - pool.room[0]) * f, p.mem, p.gpus)
    pods = [size(p) for p in expected if p.pool == pool.name]
    steps = [[size(p) for p in st if p.pool == pool.name] for st in step_pods.values()]

    def fits(n):
        nodes = [(*pool.gen_room, pool.gpus)] * n
        return placeable(pods, nodes) and all(placeable(pods + st, nodes) for st in steps if st)
    need = next((n for n in range(1, 4) if fits(n)), None)
    if need:
        pool.nodes = max(1, need - short)


# ---- the exhaustive search ----------------------------------------------------------------------


def assign(pods, free, groups=None, allowed=None):
    """A node index for every pod (cpu, mem, gpus) such that each node of `free` (a list of
    (cpu, mem, gpus) left) holds its pods, trying every assignment; None when there is none. With
    `groups` (each node's pool) and `allowed` (each pod's set of pools, or None for any), a pod goes
    only on its pools' nodes. Nodes of one pool with equal room left are tried once."""
    groups = groups or [None] * len(free)
    allowed = allowed or [None] * len(pods)
    order = sorted(range(len(pods)), key=lambda i: (pods[i][2], pods[i][0], pods[i][1]), reverse=True)
    free = [list(f) for f in free]
    where = [None] * len(pods)
    failed = set()  # (pod, the nodes' room left, in any order) from which no placement exists

    def place(k):
        if k == len(order):
            return True
        state = (k, tuple(sorted((str(g), tuple(f)) for g, f in zip(groups, free))))
        if state in failed:
            return False
        i = order[k]
        cpu, mem, gpus = pods[i]
        seen = set()
        for n, node in enumerate(free):
            left = (groups[n], tuple(node))
            if left in seen or (allowed[i] is not None and groups[n] not in allowed[i]) or \
                    cpu > node[0] or mem > node[1] or gpus > node[2]:
                continue
            seen.add(left)
            node[0] -= cpu
            node[1] -= mem
            node[2] -= gpus
            where[i] = n
            ok = place(k + 1)
            node[0] += cpu
            node[1] += mem
            node[2] += gpus
            if ok:
                return True
        failed.add(state)
        return False
    return where if place(0) else None


def placeable(pods, free):
    return assign(pods, free) is not None


# ---- reading trainc's plan (the one place that knows the `placement` format) ----------------------


def read_placement(plan):
    """{pool: {"machine", "nodes", "allocatable", "daemonSets", "room", "phases": {name: (nodes, unplaced)}}}
    with nodes a list of (pods, headroom); pods and headroom as dicts of exact Fractions."""
    if "placement" not in plan:
        raise KeyError("the plan has no 'placement'")
    out = {}

    def res(d):
        return {"cpu": F(str(d.get("cpu", 0))), "memory": F(str(d.get("memory", 0))),
                "gpus": int(d.get("gpus", 0)), "tpuChips": int(d.get("tpuChips", 0))}

    def pods(entry, t=0):
        """The single pods an entry stands for: on node t of its run, or unplaced (t = 0)."""
        n = entry.get("count", 1)
        return [pod(entry, entry["index"] + t * n + i) for i in range(n)]

    def pod(p, index):
        r = res(p)
        # An unplaced pod may come without its kind and containers.
        r.update(workload=p["workload"], kind=p.get("kind"), index=index,
                 containers=[dict(name=c["name"], cpu=F(str(c.get("cpu", 0))), memory=F(str(c.get("memory", 0))),
                                  addedBy=c.get("addedBy", ""), init=c.get("init", False))
                            for c in p["containers"]] if "containers" in p else None)
        return r
    def ds_name(n):
        """A DaemonSet as "namespace/name", trainc's own as "name (trainc's)": the bare name."""
        return n.removesuffix(" (trainc's)").split("/")[-1]
    for entry in plan["placement"]:
        ds = dict(entry["daemonSets"])
        ds["names"] = [ds_name(n) for n in ds.get("names", [])]
        phases = {}
        for ph in entry["phases"]:
            # A run of `count` identical nodes: node t holds, of each entry, the pods numbered
            # index + t * count onwards (schemas/plan.v1.schema.json).
            nodes = [([q for p in n["pods"] for q in pods(p, t)], res(n["headroom"]))
                     for n in ph["nodes"] for t in range(n.get("count", 1))]
            phases[ph["name"]] = (nodes, [q for p in ph.get("unplaced", []) for q in pods(p)])
        out[entry["pool"]] = {"machine": entry["machine"], "nodes": entry["nodes"],
                              "allocatable": res(entry["allocatable"]), "room": res(entry["room"]),
                              "daemonSets": dict(res(ds), names=ds.get("names", [])), "phases": phases}
    return out

# ---- the judge ------------------------------------------------------------------------------------


def near(got, want, eps):
    return abs(got - want) <= eps


def fmt(x):
    return f"{float(x):.6g}"


class Judge:
    """One variant's expectations (pools, long-lived pods, step pods by step) held against a plan."""

    def __init__(self, pools, expected, step_pods):
        self.pools, self.expected, self.step_pods = pools, expected, step_pods
        self.problems = []
        self.steps_fit = True  # every step's pods fit beside trainc's long-lived placement, per the search

    def bad(self, text):
        self.problems.append(text)

    def pod_requests(self, got, want, where):
        """The pod's containers and sums against the expected pod."""
        if got["gpus"] != want.gpus:
            self.bad(f"{where}: gpus {got['gpus']}, expected {want.gpus}")
        if got["containers"] is None:  # an unplaced pod's sums alone
            lo_cpu, lo_mem = (F(1, 1000), MIB) if want.whole else (0, 0)
            if not (want.cpu - lo_cpu - CPU_EPS <= got["cpu"] <= want.cpu + CPU_EPS) or \
                    not (want.mem - lo_mem - MEM_EPS <= got["memory"] <= want.mem + MEM_EPS):
                self.bad(f"{where}: asks {fmt(got['cpu'])} cores, {int(got['memory'])} bytes; expected "
                         f"{fmt(want.cpu)} cores, {int(want.mem)} bytes")
            return
        own = [c for c in got["containers"] if not c["addedBy"]]
        # An added container that asks for nothing (Istio's init container, listed for admission) does
        # not change what the pod needs.
        added = sorted((c["name"], c["cpu"], c["memory"]) for c in got["containers"] if c["addedBy"] and
                       (c["cpu"] or c["memory"] or c["name"] in {a[0] for a in want.added}))
        want_added = sorted((a[0], a[1], a[2]) for a in want.added)
        if [a[0] for a in added] != [a[0] for a in want_added] or \
                any(not near(g[1], w[1], CPU_EPS) or not near(g[2], w[2], MEM_EPS) for g, w in zip(added, want_added)):
            self.bad(f"{where}: added containers {[(a[0], fmt(a[1]), int(a[2])) for a in added]}, expected "
                     f"{[(a[0], fmt(a[1]), int(a[2])) for a in want_added]}")
        cpu, mem = sum(c["cpu"] for c in own), sum(c["memory"] for c in own)
        # A whole-node pod's own container is the room less the added ones, rounded down to 1m and 1Mi.
        lo_cpu, lo_mem = (F(1, 1000), MIB) if want.whole else (0, 0)
        if not (want.own[0] - lo_cpu - CPU_EPS <= cpu <= want.own[0] + CPU_EPS):
            self.bad(f"{where}: trainc's containers ask {fmt(cpu)} cores, expected {fmt(want.own[0])}")
        if not (want.own[1] - lo_mem - MEM_EPS <= mem <= want.own[1] + MEM_EPS):
            self.bad(f"{where}: trainc's containers ask {int(mem)} bytes, expected {int(want.own[1])}")
        if not near(got["cpu"], scheduled(got["containers"], "cpu"), CPU_EPS) or \
                not near(got["memory"], scheduled(got["containers"], "memory"), MEM_EPS):
            self.bad(f"{where}: the pod's cpu/memory are not what the scheduler counts of its containers")

    def nodes_fit(self, pool, nodes, phase):
        room = (pool.room[0], pool.room[1], pool.gpus)
        for i, (pods, head) in enumerate(nodes):
            used = (sum(p["cpu"] for p in pods), sum(p["memory"] for p in pods), sum(p["gpus"] for p in pods))
            where = f"pool {pool.name} {phase} node {i}"
            if used[0] > room[0] + CPU_EPS or used[1] > room[1] + MEM_EPS or used[2] > room[2]:
                self.bad(f"{where}: pods ask {fmt(used[0])} cores, {int(used[1])} bytes, {used[2]} GPUs; the room is "
                         f"{fmt(room[0])} cores, {int(room[1])} bytes, {room[2]} GPUs")
            if not near(head["cpu"], room[0] - used[0], CPU_EPS * 2) or \
                    not near(head["memory"], room[1] - used[1], MEM_EPS * 2) or head["gpus"] != room[2] - used[2]:
                self.bad(f"{where}: headroom {fmt(head['cpu'])} cores, {int(head['memory'])} bytes, {head['gpus']} GPUs;"
                         f" room less pods is {fmt(room[0] - used[0])}, {int(room[1] - used[1])}, {room[2] - used[2]}")

    def match(self, pool, got_pods, want_pods, phase):
        want = {p.key(): p for p in want_pods}
        seen = set()
        for g in got_pods:
            k = (g["workload"], g["index"])
            where = f"pool {pool.name} {phase} pod {k[0]}[{k[1]}]"
            if k in seen:
                self.bad(f"{where}: listed twice")
            seen.add(k)
            if k not in want:
                self.bad(f"{where}: not expected on this pool")
                continue
            if g["kind"] is not None and g["kind"] != want[k].kind:
                self.bad(f"{where}: kind {g['kind']!r}, expected {want[k].kind!r}")
            self.pod_requests(g, want[k], where)
        for k in want:
            if k not in seen:
                self.bad(f"pool {pool.name} {phase}: pod {k[0]}[{k[1]}] is missing")

    def eligible(self):
        return open_pools(self.pools)

    def resolve(self, placement):
        """The long-lived pods and the step pods by step, those that name no pool on the pool trainc
        lists them in (which must be eligible), or left out when it lists them nowhere."""
        out = {}
        for name, pods in [(None, self.expected)] + list(self.step_pods.items()):
            out[name] = []
            for p in pods:
                if p.pool is not None:
                    out[name].append(p)
                    continue
                where = sorted(n for n, e in placement.items()
                               if any((q["workload"], q["index"]) == p.key()
                                      for nodes, unplaced in e["phases"].values()
                                      for q in [x for nd in nodes for x in nd[0]] + unplaced))
                if len(where) > 1:
                    self.bad(f"pod {p.workload}[{p.index}], on no pool, is listed on pools {where}")
                if where and where[0] not in self.eligible():
                    self.bad(f"pod {p.workload}[{p.index}], on no pool, is placed on pool {where[0]}, which has "
                             f"accelerators; it may run on {self.eligible() or 'none of the pools'}")
                if not where and self.eligible():
                    self.bad(f"pod {p.workload}[{p.index}], on no pool, is on none of {self.eligible()}")
                if where:
                    q = copy.copy(p)
                    q.pool = where[0]
                    out[name].append(q)
        return out

    def run(self, placement):
        """Judges the plan's placement; returns (long-lived placeable per trainc, per the search)."""
        resolved = self.resolve(placement)
        by_pool = {}
        for p in resolved.pop(None):
            by_pool.setdefault(p.pool, []).append(p)
        steps_by_pool = {}
        for name, pods in resolved.items():
            for p in pods:
                steps_by_pool.setdefault(p.pool, {}).setdefault(name, []).append(p)
        want_pools = set(by_pool) | set(steps_by_pool)
        if set(placement) != want_pools:
            self.bad(f"placement lists pools {sorted(placement)}, expected {sorted(want_pools)}")
        trainc_ok = search_ok = True
        for name in sorted(want_pools & set(placement)):
            pool, got = self.pools[name], placement[name]
            if got["machine"] != pool.machine or got["nodes"] != pool.nodes:
                self.bad(f"pool {name}: {got['nodes']} x {got['machine']}, expected {pool.nodes} x {pool.machine}")
            if got["allocatable"]["gpus"] != pool.gpus or got["room"]["gpus"] != pool.gpus:
                self.bad(f"pool {name}: {got['allocatable']['gpus']} GPUs allocatable, {got['room']['gpus']} in the "
                         f"room; a node has {pool.gpus}")
            checks = [("allocatable", got["allocatable"], pool.alloc), ("room", got["room"], pool.room),
                      ("daemonSets", got["daemonSets"], (pool.ds_cpu, pool.ds_mem))]
            for what, g, w in checks:
                if not near(g["cpu"], w[0], CPU_EPS) or not near(g["memory"], w[1], MEM_EPS):
                    self.bad(f"pool {name}: {what} {fmt(g['cpu'])} cores, {int(g['memory'])} bytes; expected "
                             f"{fmt(w[0])} cores, {int(w[1])} bytes")
            # The catalog's names as they are; trainc's own by their object names (or a part of them).
            names = got["daemonSets"]["names"]
            extra = [n for n in names if n not in pool.ds_names]
            if any(n not in names for n in pool.ds_names) or len(extra) != len(pool.own_ds) or \
                    any(not any(n in o or o in n for o in pool.own_ds) for n in extra):
                self.bad(f"pool {name}: DaemonSets {names}, expected {pool.ds_names + pool.own_ds}")
            trainc_ok &= self.pool_phases(pool, got["phases"], by_pool.get(name, []), steps_by_pool.get(name, {}))
        placed = sum(len(v) for v in by_pool.values())
        trainc_ok &= placed == len(self.expected)  # a pod of no pool that trainc lists nowhere is not placed
        search_ok = self.search_all()[0]
        if trainc_ok != search_ok:
            self.bad("trainc places every long-lived pod; the search finds no placement" if trainc_ok else
                     "trainc leaves some long-lived pod unplaced; the search places them all")
        return trainc_ok, search_ok

    def pool_phases(self, pool, phases, long_lived, steps):
        """One pool: the long-lived phase, then each step's."""
        if "long-lived" not in phases:
            self.bad(f"pool {pool.name}: no 'long-lived' phase")
            return True
        nodes, unplaced = phases["long-lived"]
        if len(nodes) != pool.nodes:
            self.bad(f"pool {pool.name} long-lived: {len(nodes)} nodes listed, the pool has {pool.nodes}")
        placed = [p for n in nodes for p in n[0]]
        self.match(pool, placed + unplaced, long_lived, "long-lived")
        self.nodes_fit(pool, nodes, "long-lived")
        def key(p):
            return (p["workload"], p["index"])
        long_keys = {p.key() for p in long_lived}
        for phase in sorted(phases):
            if phase != "long-lived" and not (phase.startswith("step ") and phase[5:] in self.step_pods):
                self.bad(f"pool {pool.name}: phase '{phase}' is neither 'long-lived' nor a step's")
        # Every step's phase, and those of steps on other pools (there: the long-lived pods alone).
        for name in self.step_pods:
            phase, want = f"step {name}", steps.get(name, [])
            if phase not in phases:
                if want:
                    self.bad(f"pool {pool.name}: no phase '{phase}'")
                continue
            snodes, sunplaced = phases[phase]
            if len(snodes) != len(nodes):
                self.bad(f"pool {pool.name} {phase}: {len(snodes)} nodes, the long-lived phase {len(nodes)}")
                continue
            # A step's phase may arrange the pool's long-lived pods anew, or show the pool without the
            # system pods, had they landed on other pools (trainc then notes that the step fits only
            # so): the same long-lived pods of the spec must be there, wherever they sit.
            def spec_pods(ns):
                return sorted(key(p) for n in ns for p in n[0] if key(p) in long_keys and p.get("kind") != "system")
            if spec_pods(snodes) != spec_pods(nodes) and not sunplaced:
                self.bad(f"pool {pool.name} {phase}: not the long-lived phase's pods beside the step's")
            if sorted(key(u) for u in sunplaced if key(u) in long_keys) not in ([], sorted(key(u) for u in unplaced)):
                self.bad(f"pool {pool.name} {phase}: long-lived pods unplaced that the long-lived phase placed")
            mine = [p for n in snodes for p in n[0] if key(p) not in long_keys]
            sunplaced = [u for u in sunplaced if key(u) not in long_keys]
            self.match(pool, mine + sunplaced, want, phase)
            self.nodes_fit(pool, snodes, phase)
            if not want:
                continue
            # The pool's long-lived pods: the spec's, and the system pods trainc's step phase keeps here.
            kept = {key(p) for n in snodes for p in n[0]}
            lived = [(p["cpu"], p["memory"], p["gpus"]) for n in nodes for p in n[0]
                     if p.get("kind") != "system" or key(p) in kept]
            fits = placeable(lived + [(p.cpu, p.mem, p.gpus) for p in want], [(*pool.room, pool.gpus)] * pool.nodes)
            self.steps_fit &= fits
            if fits != (not sunplaced):
                self.bad(f"pool {pool.name} {phase}: trainc leaves {len(sunplaced)} pod(s) unplaced; the search, "
                         f"with the pool's long-lived pods, {'places them all' if fits else 'finds no room either'}")
        return not unplaced

    def fixes(self, text):
        """The fix a "would stay Pending" error offers, "raise the pool's nodes (autoscaling.max) to N":
        N is more than the pool has, and with N nodes the search places the pool's long-lived pods (and
        the step's beside them, for a step's error; one whose long-lived pods do not fit is left out)."""
        fix = re.compile(r"error: (step|[a-z]+/[a-z]+) '([^']+)' would stay Pending.* on pool '([^']+)'.*"
                         r"Fix: raise the pool's (?:nodes|autoscaling\.max) to (\d+)")
        for line in text.splitlines():
            m = fix.search(line)
            if not m or m.group(3) not in self.pools:
                continue
            kind, workload, pool, n = m.group(1), m.group(2), self.pools[m.group(3)], int(m.group(4))
            if n <= pool.nodes:
                self.bad(f"trainc's fix for {workload} raises pool {pool.name} to {n} node(s); it has {pool.nodes}")
                continue
            pods = [(p.cpu, p.mem, p.gpus) for p in self.expected if p.pool == pool.name]
            if kind == "step":
                if not placeable(pods, [(*pool.room, pool.gpus)] * pool.nodes):
                    continue
                pods += [(p.cpu, p.mem, p.gpus) for p in self.step_pods.get(workload, []) if p.pool == pool.name]
            if not placeable(pods, [(*pool.room, pool.gpus)] * n):
                self.bad(f"trainc's fix for {workload} raises pool {pool.name} to {n} node(s); the search places "
                         f"its pods on none of those")

    def search_all(self):
        """Whether the long-lived pods can be placed, and whether each step's pods can be placed
        together with them (both without trainc's placement). One search over every pool's nodes:
        a pod that names no pool may go on any pool without accelerators."""
        nodes, groups = [], []
        for name, pool in sorted(self.pools.items()):
            nodes += [(*pool.room, pool.gpus)] * pool.nodes
            groups += [name] * pool.nodes
        open_pools = set(self.eligible())

        def sizes(pods):
            return [(p.cpu, p.mem, p.gpus) for p in pods], [{p.pool} if p.pool else open_pools for p in pods]
        long_sizes, long_allowed = sizes(self.expected)
        long_ok = assign(long_sizes, nodes, groups, long_allowed) is not None
        steps_ok = True
        for step in self.step_pods.values():
            more, allowed = sizes(step)
            steps_ok &= assign(long_sizes + more, nodes, groups, long_allowed + allowed) is not None
        return long_ok, steps_ok


# ---- the judge judged: what a correct plan would say, and wrong ones -----------------------------


def model_plan(pools, expected, step_pods):
    """The plan's `placement` built from the judge's own model, in the format trainc prints: what a
    right answer looks like. --self-check requires the judge to pass it and to fail its mutations."""
    def res(cpu, mem, gpus):
        return {"cpu": float(cpu), "memory": int(mem), "gpus": gpus, "tpuChips": 0}

    def pod(p):
        own = (F(int(p.own[0] * 1000), 1000), F(int(p.own[1] // MIB) * MIB)) if p.whole else p.own
        containers = [{"name": "main", "cpu": float(own[0]), "memory": int(own[1]), "addedBy": "", "init": False}]
        containers += [{"name": a[0], "cpu": float(a[1]), "memory": int(a[2]), "addedBy": a[3], "init": is_init(a)}
                       for a in p.added]
        def counted(key):
            return max([sum(F(str(c[key])) for c in containers if not c["init"])] +
                       [F(str(c[key])) for c in containers if c["init"]])
        d = res(counted("cpu"), counted("memory"), p.gpus)
        d.update(workload=p.workload, kind=p.kind, index=p.index, containers=containers)
        return d

    def phase(name, pool, pods, base):
        nodes = [list(b) for b in base]
        free = [(pool.room[0] - sum(F(str(q["cpu"])) for q in n), pool.room[1] - sum(q["memory"] for q in n),
                 pool.gpus - sum(q["gpus"] for q in n)) for n in nodes]
        made = [pod(p) for p in pods]
        sizes = [(F(str(m["cpu"])), m["memory"], m["gpus"]) for m in made]
        where = assign(sizes, free)
        if where is None and base and any(base):  # a step's phase: the pods already there, arranged anew
            there = [q for n in base for q in n]
            both = there + made
            fresh = [(*pool.room, pool.gpus)] * len(base)
            joint = assign([(F(str(m["cpu"])), m["memory"], m["gpus"]) for m in both], fresh)
            if joint is not None:
                nodes = [[] for _ in base]
                for m, n in zip(both, joint):
                    nodes[n].append(m)
                listed = []
                for n in nodes:
                    used = (sum(F(str(q["cpu"])) for q in n), sum(q["memory"] for q in n), sum(q["gpus"] for q in n))
                    listed.append({"pods": n, "headroom": res(pool.room[0] - used[0], pool.room[1] - used[1],
                                                              pool.gpus - used[2])})
                return {"name": name, "nodes": listed, "unplaced": []}, [n["pods"] for n in listed]
        unplaced = []
        if where is None:  # first fit, the rest unplaced
            where, free = [], [list(f) for f in free]
            for size in sizes:
                n = next((i for i, f in enumerate(free) if all(a <= b for a, b in zip(size, f))), None)
                where.append(n)
                if n is not None:
                    free[n] = [b - a for a, b in zip(size, free[n])]
        for m, n in zip(made, where):
            if n is None:  # as the contract lists one: no kind, no containers
                unplaced.append({k: m[k] for k in ("workload", "index", "cpu", "memory", "gpus", "tpuChips")})
            else:
                nodes[n].append(m)
        listed = []
        for n in nodes:
            used = (sum(F(str(q["cpu"])) for q in n), sum(q["memory"] for q in n), sum(q["gpus"] for q in n))
            listed.append({"pods": n, "headroom": res(pool.room[0] - used[0], pool.room[1] - used[1],
                                                      pool.gpus - used[2])})
        return {"name": name, "nodes": listed, "unplaced": unplaced}, [n["pods"] for n in listed]

    # The long-lived pods over every pool's nodes (a pod of no pool on an open pool); first fit when
    # they do not all fit. A step's pod of no pool goes on the first open pool.
    loose = open_pools(pools)[0] if pools else None
    nodes, groups = [], []
    for name, pool in sorted(pools.items()):
        nodes += [(*pool.room, pool.gpus)] * pool.nodes
        groups += [name] * pool.nodes
    made = [pod(p) for p in expected]
    sizes = [(F(str(m["cpu"])), m["memory"], m["gpus"]) for m in made]
    allowed = [{p.pool} if p.pool else set(open_pools(pools)) for p in expected]
    where = assign(sizes, nodes, groups, allowed)
    if where is None:
        where, free = [], [list(f) for f in nodes]
        for size, ok in zip(sizes, allowed):
            n = next((i for i, f in enumerate(free) if groups[i] in ok and all(a <= b for a, b in zip(size, f))), None)
            where.append(n)
            if n is not None:
                free[n] = [b - a for a, b in zip(size, free[n])]
    on = {name: [[] for _ in range(pool.nodes)] for name, pool in pools.items()}
    off = {name: [] for name in pools}
    for m, p, n in zip(made, expected, where):
        if n is not None:
            on[groups[n]][n - groups.index(groups[n])].append(m)
        elif p.pool or loose:  # as the contract lists one: no kind, no containers
            off[p.pool or loose].append({k: m[k] for k in ("workload", "index", "cpu", "memory", "gpus", "tpuChips")})
    entries = []
    for name, pool in sorted(pools.items()):
        steps = {s: [p for p in pods if (p.pool or loose) == name] for s, pods in step_pods.items()}
        steps = {s: v for s, v in steps.items() if v}
        if not any(on[name]) and not off[name] and not steps:
            continue
        first, base = phase("long-lived", pool, [], on[name])
        first["unplaced"] = off[name]
        phases = [first] + [phase(f"step {s}", pool, v, base)[0] for s, v in steps.items()]
        entries.append({"pool": name, "machine": pool.machine, "nodes": pool.nodes,
                        "allocatable": res(*pool.alloc, pool.gpus),
                        "daemonSets": {"cpu": float(pool.ds_cpu), "memory": int(pool.ds_mem),
                                       "names": pool.ds_names + pool.own_ds,
                                       "margin": {"cpu": float(pool.margin[0]), "memory": int(pool.margin[1])}},
                        "room": res(*pool.room, pool.gpus), "phases": phases})
    return {"placement": entries}


def mutations(plan):
    """Wrong plans, each with one error the judge must find."""
    out = []
    m = copy.deepcopy(plan)
    m["placement"][0]["room"]["cpu"] += 0.5
    out.append(("room half a core larger", m))
    m = copy.deepcopy(plan)
    m["placement"][0]["daemonSets"]["names"].append("extra-ds")
    out.append(("an extra DaemonSet", m))
    # The first node that holds a pod, in any pool and phase.
    spots = [(e, f, n) for e, entry in enumerate(plan["placement"]) for f, ph in enumerate(entry["phases"])
             for n, node in enumerate(ph["nodes"]) if node["pods"]]
    if not spots:
        return out
    e, f, n = spots[0]

    def node(m):
        return m["placement"][e]["phases"][f]["nodes"][n]
    m = copy.deepcopy(plan)
    q = node(m)["pods"][0]
    q["containers"][0]["cpu"] += 1
    q["cpu"] += 1
    node(m)["headroom"]["cpu"] -= 1
    out.append(("a pod one core larger", m))
    m = copy.deepcopy(plan)
    node(m)["pods"].pop()
    out.append(("a pod dropped", m))
    m = copy.deepcopy(plan)
    node(m)["headroom"]["memory"] += MIB
    out.append(("headroom a MiB off", m))
    m = copy.deepcopy(plan)
    ph = m["placement"][e]["phases"][f]
    if not ph["unplaced"]:
        for nd in ph["nodes"]:
            ph["unplaced"] += [q for q in nd["pods"] if f == 0 or q["kind"].startswith("step/")]
            nd["pods"] = [q for q in nd["pods"] if not (f == 0 or q["kind"].startswith("step/"))]
        out.append(("a phase's pods unplaced, though they fit", m))
    return out


def self_check(cat, rng, n):
    spec, pools, expected, step_pods = variant(rng, cat, n, lambda spec: {})
    plan = model_plan(pools, expected, step_pods)
    problems = []
    judge = Judge(pools, expected, step_pods)
    judge.run(read_placement(json.loads(json.dumps(plan))))
    problems += [f"the model's own plan: {p}" for p in judge.problems]
    caught = 0
    for what, wrong in mutations(plan):
        judge = Judge(pools, expected, step_pods)
        judge.run(read_placement(json.loads(json.dumps(wrong))))
        if judge.problems:
            caught += 1
        else:
            problems.append(f"not caught: {what}")
    return spec, problems, caught


def effective(pod):
    """A pod's (cores, bytes) as the scheduler counts them: its containers and sidecars (init containers
    that keep running) together, or its largest other init container if that asks more. A container
    that sets only limits requests them."""
    def req(c, k):
        r = c.get("resources") or {}
        return quantity((r.get("requests") or {}).get(k, (r.get("limits") or {}).get(k, 0)))
    inits = pod.get("initContainers") or []
    out = []
    for k in ("cpu", "memory"):
        run = sum(req(c, k) for c in pod.get("containers") or []) + \
            sum(req(c, k) for c in inits if c.get("restartPolicy") == "Always")
        out.append(max([run] + [req(c, k) for c in inits if c.get("restartPolicy") != "Always"]))
    return out


def selected_pools(pod, pools):
    """The node pools a DaemonSet's pods run on, by node selector or node affinity on the pool label."""
    key = "cloud.google.com/gke-nodepool"
    if key in (pod.get("nodeSelector") or {}):
        return [pod["nodeSelector"][key]]
    terms = ((((pod.get("affinity") or {}).get("nodeAffinity") or {})
              .get("requiredDuringSchedulingIgnoredDuringExecution") or {}).get("nodeSelectorTerms") or [])
    chosen = [v for t in terms for e in t.get("matchExpressions") or []
              if e.get("key") == key and e.get("operator") == "In" for v in e.get("values") or []]
    return chosen if terms else list(pools)


def emitted_daemonsets(trainc, tmp, always=False):
    """own_ds for variant(): compiles the variant's pools with one step that asks for nothing and reads
    the DaemonSets trainc emits, each pod's requests by the pools it runs on. trainc's only one is the
    gIB installer of RDMA pools, so other drafts are not compiled unless `always` (judge_variant
    compiles every chosen variant so to check that)."""
    def own(spec):
        if not always and not any(p.get("rdma") for p in spec["cluster"]["pools"].values()):
            return {}
        base = {k: spec[k] for k in ("apiVersion", "kind", "name", "gcp", "cluster")}
        pools = spec["cluster"]["pools"]
        first = next((n for n, p in pools.items() if not p.get("rdma")), next(iter(pools)))
        base["pipeline"] = [{"name": "noop", "image": "busybox:1.36", "command": ["true"], "pool": first, "gpus": 0}]
        if pools[first].get("rdma"):
            base["pipeline"][0]["security"] = {"level": "privileged", "reason": "RDMA pool"}
        path, out = os.path.join(tmp, "pools.yaml"), os.path.join(tmp, "pools-out")
        with open(path, "w") as f:
            dump(base, f)
        shutil.rmtree(out, ignore_errors=True)
        rc, o, e = run(trainc, "compile", path, "-o", out)
        if rc != 0:
            raise RuntimeError(f"the variant's pools alone do not compile: {(o + e).strip()[:400]}")
        found = {}
        for f in sorted(glob.glob(os.path.join(out, spec["name"], "k8s", "*.yaml"))):
            for doc in yaml.safe_load_all(open(f)):
                if not isinstance(doc, dict) or doc.get("kind") != "DaemonSet":
                    continue
                pod = doc["spec"]["template"]["spec"]
                cpu, mem = effective(pod)
                for pool in selected_pools(pod, spec["cluster"]["pools"]):
                    c, m, names = found.get(pool, (0, 0, []))
                    found[pool] = (c + cpu, m + mem, names + [doc["metadata"]["name"]])
        return found
    return own


def pod_templates(doc):
    """(name, pod spec) of every pod an emitted object makes: Jobs, Deployments, DaemonSets, JobSets'
    Jobs, RayClusters' and RayJobs' groups."""
    kind, spec = doc.get("kind"), doc.get("spec") or {}
    if kind in ("Job", "Deployment", "StatefulSet", "DaemonSet"):
        yield doc["metadata"]["name"], spec["template"]["spec"]
    elif kind == "JobSet":
        for r in spec.get("replicatedJobs") or []:
            yield f"{doc['metadata']['name']}/{r['name']}", r["template"]["spec"]["template"]["spec"]
    elif kind in ("RayCluster", "RayJob"):
        rc = spec if kind == "RayCluster" else spec.get("rayClusterSpec") or {}
        if rc:
            yield f"{doc['metadata']['name']}/head", rc["headGroupSpec"]["template"]["spec"]
            for g in rc.get("workerGroupSpecs") or []:
                yield f"{doc['metadata']['name']}/{g['groupName']}", g["template"]["spec"]
        if spec.get("submitterPodTemplate"):
            yield f"{doc['metadata']['name']}/submitter", spec["submitterPodTemplate"]["spec"]


def requests_problems(outdir, placement):
    """Every container of every pod trainc emits requests CPU and memory, so that no pod is BestEffort
    and the scheduler counts what it uses (a GPU or TPU request does not count for QoS). trainc's own
    DaemonSet (the gIB installer) is held only to not being BestEffort: its requests are the upstream
    manifest's and feed the node reserve. A step's container asks what the plan's pod says it asks."""
    problems = []
    planned = {}  # a step's workload -> its own container's (cpu, memory) in the plan
    for entry in (placement or {}).values():
        for nodes, unplaced in entry["phases"].values():
            for q in [x for nd in nodes for x in nd[0]] + unplaced:
                for c in q["containers"] or []:
                    if not c["addedBy"] and (q["kind"] or "").startswith("step/"):
                        planned[(q["workload"], c["name"])] = (c["cpu"], c["memory"])
    for f in sorted(glob.glob(os.path.join(outdir, "*", "k8s", "*.yaml"))):
        for doc in yaml.safe_load_all(open(f)):
            if not isinstance(doc, dict):
                continue
            for name, pod in pod_templates(doc):
                containers = (pod.get("initContainers") or []) + (pod.get("containers") or [])
                asks = [((c.get("resources") or {}).get("requests") or {}) for c in containers]
                if doc.get("kind") == "DaemonSet":
                    if not any("cpu" in r or "memory" in r for r in asks):
                        problems.append(f"{doc['kind']} {name}: BestEffort, no container requests CPU or memory")
                    continue
                for c, r in zip(containers, asks):
                    missing = [k for k in ("cpu", "memory") if k not in r]
                    if missing:
                        problems.append(f"{doc['kind']} {name} container {c['name']}: requests no "
                                        f"{' and no '.join(missing)}")
                    for (workload, cname), want in planned.items():
                        if cname == c["name"] and name.endswith("-" + workload) and not missing:
                            got = (quantity(r["cpu"]), quantity(r["memory"]))
                            if not near(got[0], want[0], CPU_EPS) or not near(got[1], want[1], MEM_EPS):
                                problems.append(f"{doc['kind']} {name} container {c['name']}: asks {fmt(got[0])} "
                                                f"cores, {int(got[1])} bytes; the plan places it with {fmt(want[0])}"
                                                f" cores, {int(want[1])} bytes")
    return problems


# ---- the driver -----------------------------------------------------------------------------------


def run(trainc, *args):
    r = subprocess.run([trainc, *args], capture_output=True, text=True, timeout=60)
    return r.returncode, r.stdout, r.stderr


def judge_variant(trainc, cat, rng, n, tmp):
    """Variant n against trainc: (spec, problems, verdicts by whom, placeable per the search, check's words)."""
    spec, pools, expected, step_pods = variant(rng, cat, n, emitted_daemonsets(trainc, tmp))
    path = os.path.join(tmp, f"prop-{n}.yaml")
    with open(path, "w") as f:
        dump(spec, f)
    judge = Judge(pools, expected, step_pods)
    for name, (_, _, names) in emitted_daemonsets(trainc, tmp, always=True)(spec).items():
        if name in pools and sorted(names) != sorted(pools[name].own_ds):
            judge.bad(f"pool {name}: trainc emits DaemonSets {names} there; the judge counted {pools[name].own_ds}")
    feasible, steps_joint = judge.search_all()
    verdict = {"search": ("placeable" if feasible else "not placeable") +
               ("" if steps_joint else ", a step's pods not placeable beside them")}
    prc, pout, perr = run(trainc, "plan", path, "--format", "json")
    steps_fit = steps_joint
    if prc != 0:
        verdict["plan"] = f"exit {prc}"
        if feasible and steps_joint:
            first = next((l for l in perr.splitlines() if "error:" in l), perr.strip()[:300])
            judge.bad(f"`trainc plan` failed: {first}")
    else:
        try:
            placement = read_placement(json.loads(pout))
        except (KeyError, ValueError, TypeError) as e:
            verdict["plan"] = "no placement read"
            judge.bad(f"the plan's placement cannot be read: {e!r}")
        else:
            placed, _ = judge.run(placement)
            steps_fit = judge.steps_fit
            outdir = os.path.join(tmp, "variant")
            shutil.rmtree(outdir, ignore_errors=True)
            crc, co, ce = run(trainc, "compile", path, "-o", outdir)
            if crc == 0:
                for text in requests_problems(outdir, placement):
                    judge.bad(text)
            verdict["plan"] = ("every long-lived pod placed" if placed else "pods left unplaced") + \
                ("" if judge.steps_fit else ", a step's pods unplaced")
    rc, out, err = run(trainc, "check", path)
    pending = "would stay Pending" in out + err
    verdict["check"] = f"exit {rc}" + (", 'would stay Pending'" if pending else "")
    if feasible and steps_fit and rc != 0:
        judge.bad("the search places every pod, and `trainc check` fails")
    if not (feasible and steps_fit) and (rc == 0 or not pending):
        judge.bad("the search finds no placement, and `trainc check` does not say 'would stay Pending'")
    judge.fixes(out + err)
    diag = (out + err).strip().splitlines()[:12] if judge.problems else []
    return spec, judge.problems, verdict, feasible and steps_fit, diag


def judge_example(trainc, cat, path, tmp):
    """An example spec (YAML) against its plan: no pod left unplaced, `trainc check` passes, and per
    pool the allocatable, DaemonSet reserve and room the catalog gives, every node's pods within the
    room, its headroom the room less them, each pod the sum of its containers. Pods are not
    predicted here (the variants do that): examples are judged on what every plan must hold."""
    problems = []
    spec = yaml.safe_load(open(path))
    rc, out, err = run(trainc, "check", path)
    if rc != 0:
        problems.append(f"`trainc check` fails: {(out + err).strip()[:400]}")
    rc, pout, perr = run(trainc, "plan", path, "--format", "json")
    if rc != 0:
        return problems + [f"`trainc plan` fails: {perr.strip()[:400]}"]
    placement = read_placement(json.loads(pout))
    outdir = os.path.join(tmp, "example")
    shutil.rmtree(outdir, ignore_errors=True)
    rc, o, e = run(trainc, "compile", path, "-o", outdir)
    if rc != 0:
        return problems + [f"`trainc compile` fails: {(o + e).strip()[:400]}"]
    problems += requests_problems(outdir, placement)
    pools = (spec.get("cluster") or {}).get("pools") or {}
    own = {}
    for f in sorted(glob.glob(os.path.join(outdir, "*", "k8s", "*.yaml"))):
        for doc in yaml.safe_load_all(open(f)):
            if isinstance(doc, dict) and doc.get("kind") == "DaemonSet":
                pod = doc["spec"]["template"]["spec"]
                for pool in selected_pools(pod, pools):
                    c, m, names = own.get(pool, (0, 0, []))
                    own[pool] = (c + effective(pod)[0], m + effective(pod)[1], names + [doc["metadata"]["name"]])
    dpv2 = any(p.get("rdma") for p in pools.values())
    facts = {"always": True, "kubeProxy": not dpv2, "dataplaneV2": dpv2, "workloadIdentity": True,
             "gcsfuse": True, "managedPrometheus": bool(spec.get("services"))}
    judge = Judge({}, [], {})
    for name, got in sorted(placement.items()):
        p = pools.get(name)
        if p is None:
            problems.append(f"the plan places pods on pool {name}, which the spec does not declare")
            continue
        accel = (p["accelerator"]["type"], p["accelerator"]["count"]) if p.get("accelerator") else None
        pool = Pool(name, p["machine"], accel, got["nodes"], False, bool(p.get("rdma")), cat,
                    dict(facts, tpu=bool(cat.machines[p["machine"]].get("chips"))), own.get(name))
        checks = [("allocatable", got["allocatable"], pool.alloc), ("room", got["room"], pool.room),
                  ("daemonSets", got["daemonSets"], (pool.ds_cpu, pool.ds_mem))]
        for what, g, w in checks:
            if not near(g["cpu"], w[0], CPU_EPS) or not near(g["memory"], w[1], MEM_EPS):
                problems.append(f"pool {name}: {what} {fmt(g['cpu'])} cores, {int(g['memory'])} bytes; expected "
                                f"{fmt(w[0])} cores, {int(w[1])} bytes")
        for phase, (nodes, unplaced) in sorted(got["phases"].items()):
            if unplaced:
                problems.append(f"pool {name} {phase}: {len(unplaced)} pod(s) unplaced")
            judge.nodes_fit(pool, nodes, phase)
            for pods, _ in nodes:
                for q in pods:
                    if not near(q["cpu"], scheduled(q["containers"], "cpu"), CPU_EPS) or \
                            not near(q["memory"], scheduled(q["containers"], "memory"), MEM_EPS):
                        problems.append(f"pool {name} {phase}: pod {q['workload']}[{q['index']}] is not what the "
                                        "scheduler counts of its containers")
    return problems + judge.problems


# GKE's worked examples of node allocatable (GKE-FACTS-3 "Node allocatable"), in millicores and MiB.
GKE_EXAMPLES = {"e2-standard-8": (7910, 29022), "n1-standard-8": (7910, 27097), "a4-highgpu-8g": (223370, 3974945)}


def worked_examples(cat):
    """The judge's allocatable against GKE's worked examples: problems, one per machine that differs."""
    out = []
    for machine, want in GKE_EXAMPLES.items():
        cpu, mem = cat.allocatable(machine)
        got = (int(cpu * 1000), int(mem // MIB))
        if got != want:
            out.append(f"{machine}: allocatable {got[0]}m, {got[1]}Mi; GKE says {want[0]}m, {want[1]}Mi")
    return out


def search_is_exact(rng, instances=500):
    """The search against trying every assignment (itertools.product) on small random instances:
    problems, one per instance where they disagree or the search's placement overfills a node."""
    out = []
    for _ in range(instances):
        n, k = rng.randint(1, 3), rng.randint(0, 6)
        pods = [(F(rng.randint(1, 10)), F(rng.randint(1, 10)), rng.randint(0, 2)) for _ in range(k)]
        nodes = [(F(10), F(10), 2)] * n

        def holds(a):
            return all(sum(pods[i][d] for i in range(k) if a[i] == j) <= nodes[j][d] for j in range(n) for d in range(3))
        every = any(holds(a) for a in itertools.product(range(n), repeat=k))
        found = assign(pods, nodes)
        if (found is not None) != every or (found is not None and not holds(found)):
            out.append(f"{k} pods {pods} on {n} nodes of (10, 10, 2): the search says {found}, every assignment "
                       f"{'has one' if every else 'none'}")
    return out


class _PlainDumper(yaml.SafeDumper):
    """Writes a shared mapping out each time (no &anchors), as a reader of the spec expects."""

    def ignore_aliases(self, data):
        return True


def dump(spec, stream=None):
    return yaml.dump(spec, stream, Dumper=_PlainDumper, sort_keys=False)


def tap_line(n, name, problems, spec=None, diag=()):
    """One TAP result; a failure's problems, the variant's spec and trainc's words as comments."""
    print(f"{'not ok' if problems else 'ok'} {n} - {name}")
    for problem in problems[:20]:
        for line in problem.splitlines():
            print(f"# {line}")
    if problems and spec:
        print("# spec:")
        for line in dump(spec).splitlines():
            print(f"#   {line}")
    for line in diag:
        print(f"# trainc check: {line}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("trainc", help="the trainc binary; with --self-check, ignored")
    ap.add_argument("n", nargs="?", type=int, default=60)
    ap.add_argument("--seed", type=int, default=31)
    ap.add_argument("--self-check", action="store_true",
                    help="judge the judge: GKE's worked examples, plans made from its own model pass, and their "
                         "mutations fail")
    ap.add_argument("--catalog", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "stdlib",
                                                       "catalog.yaml"))
    ap.add_argument("--requests-of", metavar="OUT",
                    help="only hold a compiled output (OUT/<system>/k8s) to every container requesting CPU and "
                         "memory: its problems, exit 1 when there are any")
    args = ap.parse_args()
    if args.requests_of:
        problems = requests_problems(args.requests_of, None)
        for text in problems:
            print(f"# {text}")
        return 1 if problems else 0
    cat = Catalog(args.catalog)
    global CPU_POD
    CPU_POD = cat.cpu_pod
    rng = random.Random(args.seed)
    failed = feasible_n = caught_n = 0
    root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
    examples = [] if args.self_check else sorted(glob.glob(os.path.join(root, "examples", "*", "spec.yaml")))
    tests = args.n + 2 * args.self_check + len(examples)
    with tempfile.TemporaryDirectory(prefix="trainc-placement.") as tmp:
        for n in range(1, args.n + 1):
            if args.self_check:
                spec, problems, caught = self_check(cat, rng, n)
                caught_n += caught
                summary, feasible, diag = f"{caught} wrong plan(s) caught", True, []
            else:
                try:
                    spec, problems, verdict, feasible, diag = judge_variant(args.trainc, cat, rng, n, tmp)
                except (KeyError, RuntimeError, ValueError, subprocess.TimeoutExpired) as e:
                    # The catalog or trainc moved past what the judge knows: say so, go on.
                    spec, problems, verdict, feasible, diag = None, [f"the judge stopped: {e!r}"], {}, False, []
                summary = "; ".join(f"{k}: {v}" for k, v in verdict.items())
            feasible_n += feasible
            failed += bool(problems)
            tap_line(n, f"variant {n} ({summary})", problems, spec, diag)
        for i, path in enumerate(examples, args.n + 1):
            name = os.path.basename(os.path.dirname(path))
            try:
                problems = judge_example(args.trainc, cat, path, tmp)
            except (KeyError, RuntimeError, ValueError, subprocess.TimeoutExpired) as e:
                problems = [f"the judge stopped: {e!r}"]
            failed += bool(problems)
            tap_line(i, f"example {name}: every pod placed within the room the catalog leaves", problems)
    if args.self_check:
        problems = worked_examples(cat)
        failed += bool(problems)
        tap_line(tests - 1, "allocatable from the catalog's tiers matches GKE's worked examples", problems)
        problems = search_is_exact(rng)
        failed += bool(problems)
        tap_line(tests, "the search agrees with trying every assignment on 500 small instances", problems)
    print(f"1..{tests}")
    if args.self_check:
        print(f"# {args.n} variants (seed {args.seed}): the judge passed its own plans and caught {caught_n} "
              f"wrong ones; {failed} test(s) failed")
    else:
        print(f"# {args.n} variants (seed {args.seed}): {feasible_n} placeable by the search, "
              f"{args.n - feasible_n} not; {len(examples)} examples; {failed} disagreed with trainc")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
