#!/usr/bin/env python3
"""The topology contract of one compiled system folder, judged from the output alone.

Usage: tests/topology_contract.py OUTDIR

Reads OUTDIR/k8s/*.yaml, OUTDIR/terraform/node_pools.tf and OUTDIR/scripts/up.sh; imports nothing of
trainc and never reads the spec. Prints one line per problem (file and object first), then a summary;
exits 1 when there is a problem, 0 otherwise (2 on usage errors).

What must hold (Kueue v0.19.2, kubernetes-sigs/kueue@8eab687):
- A Topology exists iff a ResourceFlavor names it (spec.topologyName); every topologyName names a
  Topology of the output; a flavor with a topologyName has at least one nodeLabel (the CEL rule on
  ResourceFlavorSpec, apis/kueue/v1beta2/resourceflavor_types.go).
- A Topology has 1 to 16 levels, each a distinct nodeLabel, kubernetes.io/hostname only as the last
  (apis/kueue/v1beta2/topology_types.go).
- Each level of the Topology a flavor names is a label GKE sets on the nodes the flavor selects: the
  node pool its cloud.google.com/gke-nodepool label names, created under that exact name both by
  terraform/node_pools.tf and by scripts/up.sh, on the same machine type, which must be one GKE labels
  with its block, sub-block and host for the cloud.google.com/gce-topology-* levels (LABELLED below).
- Every pod template of a Kueue-managed workload (a Job, JobSet, RayJob or RayCluster labelled
  kueue.x-k8s.io/queue-name) whose node selection matches a flavor with a Topology carries exactly
  one of podset-required-topology, podset-preferred-topology (a level of that Topology) and
  podset-unconstrained-topology ("true"): unconstrained for a PodSet of one pod, required or
  preferred for more. Templates that match no such flavor, and templates Kueue does not manage,
  carry none of them. A slice annotation comes with podset-slice-size and the other way round, the
  size an integer from 1 to the PodSet's count (pkg/controller/jobframework/tas_validation.go).
"""

import os
import re
import sys

import yaml

REQUIRED = "kueue.x-k8s.io/podset-required-topology"
PREFERRED = "kueue.x-k8s.io/podset-preferred-topology"
UNCONSTRAINED = "kueue.x-k8s.io/podset-unconstrained-topology"
SLICE_REQUIRED = "kueue.x-k8s.io/podset-slice-required-topology"
SLICE_SIZE = "kueue.x-k8s.io/podset-slice-size"
MAIN_ANNOTATIONS = (REQUIRED, PREFERRED, UNCONSTRAINED)
TAS_ANNOTATIONS = MAIN_ANNOTATIONS + (SLICE_REQUIRED, SLICE_SIZE)
QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
NODEPOOL = "cloud.google.com/gke-nodepool"
HOSTNAME = "kubernetes.io/hostname"

# Labels GKE puts on every node: the node's name and its node pool's.
ALWAYS_SET = {HOSTNAME, NODEPOOL}
# The physical-topology labels GKE >= 1.31 sets (GoogleCloudPlatform/container-engine-accelerators
# gke-topology-scheduler/schedule-daemon.py; the same three in Cluster Toolkit's and XPK's Topologies).
GCE_TOPOLOGY = {
    "cloud.google.com/gce-topology-block",
    "cloud.google.com/gce-topology-subblock",
    "cloud.google.com/gce-topology-host",
}
# Machines whose instances report a physical topology: Compute Engine "View instance topology",
# limitations (https://cloud.google.com/compute/docs/instances/view-instance-topology): A4X Max, A4X,
# A4, A3 Ultra, A3 Mega and A3 High with 8 GPUs. Families by machine-type prefix; the A4X Max type
# name is Cluster Toolkit's (examples/gke-a4x-max-bm: a4x-maxgpu-4g-metal).
LABELLED = [
    ("A4X Max", lambda m: m.startswith("a4x-maxgpu-")),
    ("A4X", lambda m: m.startswith("a4x-highgpu-")),
    ("A4", lambda m: m.startswith("a4-highgpu-")),
    ("A3 Ultra", lambda m: m.startswith("a3-ultragpu-")),
    ("A3 Mega", lambda m: m.startswith("a3-megagpu-")),
    ("A3 High with 8 GPUs", lambda m: m == "a3-highgpu-8g"),
]
LABELLED_NAMES = ", ".join(name for name, _ in LABELLED)

problems = []
notes = []


def problem(where, msg):
    problems.append(f"{where}: {msg}")


def labelled_family(machine):
    for name, match in LABELLED:
        if match(machine):
            return name
    return None


def obj_name(doc):
    return f"{doc.get('kind')} {((doc.get('metadata') or {}).get('name'))}"


def load_k8s(outdir):
    docs = []
    k8s = os.path.join(outdir, "k8s")
    if not os.path.isdir(k8s):
        problem(outdir, "no k8s/ folder")
        return docs
    for name in sorted(os.listdir(k8s)):
        if not name.endswith((".yaml", ".yml")):
            continue
        rel = f"k8s/{name}"
        try:
            with open(os.path.join(k8s, name), encoding="utf-8") as f:
                for doc in yaml.safe_load_all(f):
                    if isinstance(doc, dict):
                        docs.append((rel, doc))
        except yaml.YAMLError as e:
            problem(rel, f"not YAML: {e}")
    return docs


def hcl_blocks(text, block_type):
    """(label, body) of each `resource "<block_type>" "<label>" { ... }`, braces matched outside strings."""
    out = []
    for m in re.finditer(r'resource\s+"' + re.escape(block_type) + r'"\s+"([^"]+)"\s*\{', text):
        depth, i, in_str = 1, m.end(), False
        while i < len(text) and depth:
            c = text[i]
            if in_str:
                if c == "\\":
                    i += 1
                elif c == '"':
                    in_str = False
            elif c == '"':
                in_str = True
            elif c == "#":
                i = text.find("\n", i)
                if i < 0:
                    i = len(text)
                continue
            elif c == "{":
                depth += 1
            elif c == "}":
                depth -= 1
            i += 1
        out.append((m.group(1), text[m.end():i - 1]))
    return out


def terraform_pools(outdir):
    """{node pool name: machine type} from terraform/node_pools.tf, or None without the file."""
    path = os.path.join(outdir, "terraform", "node_pools.tf")
    if not os.path.isfile(path):
        return None
    with open(path, encoding="utf-8") as f:
        text = f.read()
    pools = {}
    for label, body in hcl_blocks(text, "google_container_node_pool"):
        where = f'terraform/node_pools.tf: google_container_node_pool "{label}"'
        # `name` at the top of the block (nested blocks start deeper than the first indent).
        names = re.findall(r'^  name\s*=\s*"([^"]*)"', body, re.M) or re.findall(r'^\s*name\s*=\s*"([^"]*)"', body, re.M)
        machines = re.findall(r'^\s*machine_type\s*=\s*"([^"]*)"', body, re.M)
        if len(names) != 1:
            problem(where, f"expected one name = \"...\", found {len(names)}")
            continue
        if len(machines) != 1:
            problem(where, f"expected one machine_type = \"...\", found {len(machines)}")
            continue
        if names[0] in pools:
            problem(where, f"a second node pool named '{names[0]}'")
        pools[names[0]] = machines[0]
    return pools


def upsh_pools(outdir):
    """{node pool name: machine type} from the `gcloud container node-pools create` commands of up.sh."""
    path = os.path.join(outdir, "scripts", "up.sh")
    if not os.path.isfile(path):
        return None
    with open(path, encoding="utf-8") as f:
        text = f.read()
    logical = re.sub(r"\\\n", " ", text).splitlines()
    pools = {}
    for line in logical:
        m = re.search(r"\bgcloud\s+container\s+node-pools\s+create\s+(\S+)", line)
        if not m:
            continue
        name = m.group(1).strip("'\"")
        mt = re.search(r"--machine-type[= ]([^\s]+)", line)
        if not mt:
            problem("scripts/up.sh", f"node-pools create {name}: no --machine-type")
            continue
        if name in pools:
            problem("scripts/up.sh", f"node pool '{name}' is created twice")
        pools[name] = mt.group(1).strip("'\"")
    return pools


def pod_templates(doc):
    """(path, template, PodSet count) of each pod template Kueue would make a PodSet of."""
    kind, spec = doc.get("kind"), doc.get("spec") or {}

    def job_count(job_spec):
        count = job_spec.get("parallelism", 1)
        completions = job_spec.get("completions")
        if completions is not None and completions < count:
            count = completions
        return count

    out = []
    if kind == "Job":
        out.append(("spec.template", spec.get("template") or {}, job_count(spec)))
    elif kind == "JobSet":
        for i, rj in enumerate(spec.get("replicatedJobs") or []):
            js = ((rj.get("template") or {}).get("spec")) or {}
            out.append((f"spec.replicatedJobs[{i}] ({rj.get('name')}).template.spec.template",
                        js.get("template") or {}, rj.get("replicas", 1) * job_count(js)))
    elif kind in ("RayJob", "RayCluster"):
        base = "spec.rayClusterSpec" if kind == "RayJob" else "spec"
        rc = spec.get("rayClusterSpec") if kind == "RayJob" else spec
        rc = rc or {}
        out.append((f"{base}.headGroupSpec.template", (rc.get("headGroupSpec") or {}).get("template") or {}, 1))
        for i, wg in enumerate(rc.get("workerGroupSpecs") or []):
            count = wg.get("replicas", 1) * max(wg.get("numOfHosts", 1), 1)
            out.append((f"{base}.workerGroupSpecs[{i}] ({wg.get('groupName')}).template", wg.get("template") or {}, count))
        if kind == "RayJob" and spec.get("submitterPodTemplate"):
            out.append(("spec.submitterPodTemplate", spec["submitterPodTemplate"], 1))
    elif kind in ("Deployment", "StatefulSet", "DaemonSet", "ReplicaSet"):
        out.append(("spec.template", spec.get("template") or {}, spec.get("replicas", 1)))
    elif kind == "Pod":
        out.append(("", doc, 1))
    return out


def node_constraints(template):
    """{label: set of allowed values} the pod template's nodeSelector and required node affinity pin."""
    pod = template.get("spec") or {}
    allowed = {k: {str(v)} for k, v in (pod.get("nodeSelector") or {}).items()}
    terms = ((((pod.get("affinity") or {}).get("nodeAffinity") or {})
              .get("requiredDuringSchedulingIgnoredDuringExecution") or {}).get("nodeSelectorTerms") or [])
    if len(terms) == 1:  # several terms are ORed: none of them pins a label on its own
        for e in terms[0].get("matchExpressions") or []:
            if e.get("operator") == "In":
                values = {str(v) for v in e.get("values") or []}
                allowed[e["key"]] = allowed[e["key"]] & values if e["key"] in allowed else values
    return allowed


def matches(flavor_labels, constraints):
    return bool(flavor_labels) and all(k in constraints and str(v) in constraints[k] for k, v in flavor_labels.items())


def main(argv):
    if len(argv) != 2 or not os.path.isdir(argv[1]):
        print("usage: topology_contract.py OUTDIR (one compiled system folder)", file=sys.stderr)
        return 2
    outdir = argv[1]
    docs = load_k8s(outdir)
    topologies, flavors, queues = {}, [], []
    for rel, doc in docs:
        kind, name = doc.get("kind"), (doc.get("metadata") or {}).get("name")
        if kind == "Topology":
            if name in topologies:
                problem(f"{rel}: Topology {name}", f"a second Topology named '{name}' (also in {topologies[name][0]})")
            topologies[name] = (rel, doc)
        elif kind == "ResourceFlavor":
            flavors.append((rel, doc))
        elif kind == "ClusterQueue":
            queues.append(doc)

    # Topologies: well formed, and each one named by a flavor.
    named = {((f.get("spec") or {}).get("topologyName")) for _, f in flavors}
    levels_of = {}
    for name, (rel, doc) in topologies.items():
        where = f"{rel}: Topology {name}"
        if doc.get("apiVersion") != "kueue.x-k8s.io/v1beta2":
            problem(where, f"apiVersion {doc.get('apiVersion')}, Kueue v0.19.2 stores kueue.x-k8s.io/v1beta2")
        if name not in named:
            problem(where, "no ResourceFlavor names it in spec.topologyName")
        levels = (doc.get("spec") or {}).get("levels")
        if not isinstance(levels, list) or not 1 <= len(levels) <= 16:
            problem(where, f"spec.levels must be a list of 1 to 16 levels, found {levels!r}")
            levels = levels if isinstance(levels, list) else []
        labels = []
        for i, level in enumerate(levels):
            label = level.get("nodeLabel") if isinstance(level, dict) else None
            if not isinstance(label, str) or not label:
                problem(where, f"spec.levels[{i}] has no nodeLabel")
                continue
            if label in labels:
                problem(where, f"spec.levels[{i}] repeats the level {label}")
            labels.append(label)
        if HOSTNAME in labels[:-1]:
            problem(where, f"{HOSTNAME} may only be the last (lowest) level, levels are {labels}")
        levels_of[name] = labels

    # Node pools, as Terraform and up.sh create them.
    tf, sh = terraform_pools(outdir), upsh_pools(outdir)
    if (tf is None) != (sh is None):
        problem(outdir, "terraform/node_pools.tf and scripts/up.sh must both be there or both be absent "
                f"(terraform: {'present' if tf is not None else 'absent'}, up.sh: {'present' if sh is not None else 'absent'})")

    tas_flavors = {}  # flavor name -> (nodeLabels, Topology name)
    for rel, doc in flavors:
        fname = (doc.get("metadata") or {}).get("name")
        where = f"{rel}: ResourceFlavor {fname}"
        spec = doc.get("spec") or {}
        node_labels = spec.get("nodeLabels") or {}
        pool = node_labels.get(NODEPOOL)
        if pool is not None and tf is not None and pool not in tf:
            problem(where, f"selects {NODEPOOL}: {pool}, a node pool terraform/node_pools.tf does not create "
                    f"(it creates {sorted(tf)})")
        if pool is not None and sh is not None and pool not in sh:
            problem(where, f"selects {NODEPOOL}: {pool}, a node pool scripts/up.sh does not create (it creates {sorted(sh)})")
        tname = spec.get("topologyName")
        if tname is None:
            continue
        tas_flavors[fname] = (node_labels, tname)
        if len(node_labels) < 1:
            problem(where, "has a topologyName but no nodeLabels (Kueue: at least one nodeLabel is required when topology is set)")
        if not any(fname == (f or {}).get("name") for q in queues for g in (q.get("spec") or {}).get("resourceGroups") or []
                   for f in g.get("flavors") or []):
            problem(where, "no ClusterQueue of the output offers this flavor with a Topology")
        if tname not in topologies:
            problem(where, f"spec.topologyName names Topology '{tname}', which the output does not hold "
                    f"(it holds {sorted(topologies) or 'none'})")
            continue
        if pool is None:
            problem(where, f"has a Topology but selects no {NODEPOOL}: which nodes' labels its levels must match is unknown")
            continue
        if tf is None and sh is None:
            notes.append(f"{where}: the output creates no node pools (an existing cluster): "
                         f"pool '{pool}'s machine and labels are not checked")
            continue
        tf_machine, sh_machine = (tf or {}).get(pool), (sh or {}).get(pool)
        if tf_machine and sh_machine and tf_machine != sh_machine:
            problem(where, f"node pool '{pool}' is {tf_machine} in terraform/node_pools.tf but {sh_machine} in scripts/up.sh")
        machine = tf_machine or sh_machine
        if machine is None:
            continue  # its absence is reported above
        family = labelled_family(machine)
        for i, label in enumerate(levels_of.get(tname, [])):
            if label in ALWAYS_SET:
                continue
            if label in GCE_TOPOLOGY:
                if family is None:
                    problem(where, f"Topology '{tname}' level {i} {label}: GKE sets it only on {LABELLED_NAMES} "
                            f"nodes, and node pool '{pool}' is {machine}")
                continue
            problem(where, f"Topology '{tname}' level {i} {label} is not a label GKE sets on the nodes of node pool "
                    f"'{pool}' ({machine}): it sets {sorted(ALWAYS_SET | (GCE_TOPOLOGY if family else set()))}")

    # Pod templates.
    templates = managed_templates = tas_templates = 0
    for rel, doc in docs:
        meta = doc.get("metadata") or {}
        managed = QUEUE_LABEL in (meta.get("labels") or {}) and doc.get("kind") in ("Job", "JobSet", "RayJob", "RayCluster")
        for path, template, count in pod_templates(doc):
            templates += 1
            managed_templates += managed
            where = f"{rel}: {obj_name(doc)} {path}".rstrip()
            ann = (template.get("metadata") or {}).get("annotations") or {}
            present = [a for a in MAIN_ANNOTATIONS if a in ann]
            slice_present = [a for a in (SLICE_REQUIRED, SLICE_SIZE) if a in ann]
            if SLICE_REQUIRED in ann and SLICE_SIZE not in ann:
                problem(where, f"{SLICE_REQUIRED} without {SLICE_SIZE}")
            if SLICE_SIZE in ann:
                if SLICE_REQUIRED not in ann:
                    problem(where, f"{SLICE_SIZE} without {SLICE_REQUIRED}")
                size = str(ann[SLICE_SIZE])
                if not re.fullmatch(r"[0-9]+", size) or not 1 <= int(size) <= count:
                    problem(where, f"{SLICE_SIZE} {size!r} must be an integer from 1 to the PodSet's {count} pods")
            on = [f for f, (labels, _) in tas_flavors.items() if matches(labels, node_constraints(template))]
            if not managed:
                if present or slice_present:
                    problem(where, f"carries {present + slice_present}, but Kueue does not manage it "
                            f"(no {QUEUE_LABEL} label on a Job, JobSet, RayJob or RayCluster)")
                continue
            if not on:
                # A template that names no node pool may be given any flavor; when Kueue can only give
                # it flavors with a Topology it must ask, and trainc asks nothing but unconstrained.
                free = NODEPOOL not in node_constraints(template) and tas_flavors
                if free and present == [UNCONSTRAINED] and not slice_present:
                    if str(ann[UNCONSTRAINED]) != "true":
                        problem(where, f"{UNCONSTRAINED} is {ann[UNCONSTRAINED]!r}, not \"true\"")
                    continue
                if present or slice_present:
                    problem(where, f"carries {present + slice_present}, but its pods run on no pool whose flavor has a Topology")
                continue
            tas_templates += 1
            if len(on) > 1:
                problem(where, f"its node selection matches several flavors with a Topology: {on}")
            flavor = on[0]
            tname = tas_flavors[flavor][1]
            levels = levels_of.get(tname)  # None: the dangling topologyName is reported with its flavor
            if len(present) != 1:
                problem(where, f"runs on the pool of flavor {flavor} (Topology '{tname}') and must carry exactly one of "
                        f"{list(MAIN_ANNOTATIONS)}, carries {present or 'none'}")
                continue
            key, value = present[0], str(ann[present[0]])
            if key == UNCONSTRAINED:
                if value != "true":
                    problem(where, f"{UNCONSTRAINED} is {value!r}, expected \"true\"")
                if count > 1:
                    problem(where, f"a PodSet of {count} pods is unconstrained; several pods ask for "
                            f"{REQUIRED} or {PREFERRED}")
            else:
                if levels is not None and value not in levels:
                    problem(where, f"{key}: {value} is not a level of Topology '{tname}' ({levels})")
                if count <= 1:
                    problem(where, f"a PodSet of {count} pod asks {key}: {value}; one pod is {UNCONSTRAINED}: \"true\"")
            for s in (SLICE_REQUIRED,):
                if s in ann and levels is not None and str(ann[s]) not in levels:
                    problem(where, f"{s}: {ann[s]} is not a level of Topology '{tname}' ({levels})")

    for line in problems:
        print(line)
    for line in notes:
        print(f"note: {line}")
    pools_from = ("from terraform/node_pools.tf and scripts/up.sh" if tf is not None and sh is not None
                  else "none created by the output" if tf is None and sh is None
                  else "from terraform/node_pools.tf or scripts/up.sh alone")
    print(f"# {outdir}: {len(topologies)} Topology(ies), {len(flavors)} ResourceFlavor(s) "
          f"({len(tas_flavors)} with topologyName), {templates} pod template(s), {managed_templates} of Kueue-managed "
          f"workloads, {tas_templates} on pools with a Topology; node pools {pools_from}; "
          f"{len(problems)} problem(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
