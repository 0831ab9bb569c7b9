#!/usr/bin/python3 -S
"""A stand-in for kubectl that keeps what was applied (tests/stubs.sh runs it as `kubectl`).

The objects live in $STUB_STATE/k8s/store.json, keyed by API group + kind + namespace + name, each
as the API server would hold it: the applied manifest, metadata.creationTimestamp (a counter, so
strictly increasing), uid, generation, the kubectl.kubernetes.io/last-applied-configuration
annotation that client-side apply writes, and the status its controller would write.

  apply -f F... | -k DIR   create, leave unchanged, or update each object; an update the API server
                           would refuse (judged by the independent oracle k8s-update-check, below)
                           is refused with kubectl's message, and like kubectl the call goes on with
                           the other objects and exits 1 at the end
  get, wait, rollout status|restart, delete, create secret generic: as kubectl answers them, for
                           the forms the generated scripts and the tests use
The oracle is $TRAINC_ORACLE_DIR/k8s-update-check, else ../shared/oracle beside the source root (as
tests/tap.sh finds it), run on the object's last applied manifest and the new one, with the options
in STUB_ORACLE_ARGS (e.g. `--kueue pending`); without it, a built-in rule (see refusals()).
What happened is appended to $STUB_STATE/k8s-events, one `VERB kind/name` a line: `created` (any
object), `started` (a Job, JobSet or RayJob created by an apply: a step started), `rolled` (a Deployment, DaemonSet or
StatefulSet whose pod template changed), `deleted` (what a delete named), `refused`.
Workloads finish at once: successfully, or failed when STUB_RUN_FAIL (globs on the name, separated
by spaces) matches, or they stay running when STUB_RUN_HOLD does (`--finish` ends them later).
A JobSet makes its child Jobs as the JobSet controller does (`<jobset>-<replicatedJob>-<index>`,
labelled from the replicatedJob's template), deleted with it. STUB_MISSING_CRDS lists resource
types (e.g. `jobsets.jobset.x-k8s.io`) whose CRD is not installed: get, wait and delete of them
fail, and applying one of their objects fails, as kubectl does.
  patch TYPE/NAME --type=merge --patch=JSON
                           a JSON merge patch (RFC 7386); a Deployment whose pod template it changes
                           rolls, one it leaves as it was does not (kubectl says "(no change)")
A release manifest the stand-in knows (RELEASES: Kueue's) applied from its URL makes the objects of
it that the scripts read: the controller's Deployment and its configuration ConfigMap. Applied
again, it sets the ConfigMap's data back to the release's (the field manager that applied it owns
the data, as a server-side apply of the same manifest would) and leaves the Deployment as it is (its
pod template's annotations set by a patch belong to another field manager).
Kept from the earlier shell stand-in: `apply -f URL` is recorded in $STUB_STATE/k8s/urls, the
--served-model-name of applied manifests in k8s/models (health checks list them), `get secret/NAME`
lists the keys `create secret generic` got, `get nodes` prints STUB_NODES, `get --raw` answers
/v1/models from k8s/models, a Service never applied (the Istio gateway) answers STUB_GATEWAY_IP, and
`wait --all` is met (controllers installed from URLs).

Helpers for tests (not kubectl calls): --objects, --events VERB (or `replaced`: deleted, then created
again), --finish KIND/NAME complete|failed.
"""

# Started as `python3 -S` (site takes longer than the rest, and the scripts call kubectl often):
# what only some calls need is imported where it is used, PyYAML through site (below).
import fcntl
import fnmatch
import json
import os
import re
import signal
import sys
import time


def yaml_module():
    try:
        import yaml
    except ImportError:
        import site
        site.main()  # PyYAML is in the interpreter's site packages
        import yaml
    return yaml


def deepcopy(value):
    """A copy of a JSON-shaped value."""
    return json.loads(json.dumps(value))

LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"
# What a known release manifest (by URL prefix) holds that the generated scripts read.
RELEASE_DEFAULT_CONFIG = "# the release's configuration\n"
RELEASES = {
    "https://github.com/kubernetes-sigs/kueue/releases/download/": [
        {"apiVersion": "apps/v1", "kind": "Deployment",
         "metadata": {"name": "kueue-controller-manager", "namespace": "kueue-system",
                      "labels": {"app.kubernetes.io/name": "kueue", "control-plane": "controller-manager"}},
         "spec": {"replicas": 1, "selector": {"matchLabels": {"control-plane": "controller-manager"}},
                  "template": {"metadata": {"labels": {"control-plane": "controller-manager"},
                                            "annotations": {"kubectl.kubernetes.io/default-container": "manager"}},
                               "spec": {"containers": [{"name": "manager", "image": "kueue"}]}}}},
        {"apiVersion": "v1", "kind": "ConfigMap",
         "metadata": {"name": "kueue-manager-config", "namespace": "kueue-system",
                      "labels": {"app.kubernetes.io/name": "kueue", "control-plane": "controller-manager"}},
         "data": {"controller_manager_config.yaml": RELEASE_DEFAULT_CONFIG}},
    ],
}
WORKLOADS = ("Job", "JobSet", "RayJob")  # what a step runs as: its creation starts the step
ROLLING = ("Deployment", "DaemonSet", "StatefulSet")  # a changed pod template rolls their pods

# Kind, API group, plural, short names, namespaced: the types the generated output and scripts use.
KINDS = [
    ("Namespace", "", "namespaces", ["ns"], False),
    ("Node", "", "nodes", ["no"], False),
    ("ConfigMap", "", "configmaps", ["cm"], True),
    ("Secret", "", "secrets", [], True),
    ("Service", "", "services", ["svc"], True),
    ("ServiceAccount", "", "serviceaccounts", ["sa"], True),
    ("Pod", "", "pods", ["po"], True),
    ("PersistentVolumeClaim", "", "persistentvolumeclaims", ["pvc"], True),
    ("PersistentVolume", "", "persistentvolumes", ["pv"], False),
    ("Event", "", "events", ["ev"], True),
    ("Endpoints", "", "endpoints", ["ep"], True),
    ("EndpointSlice", "discovery.k8s.io", "endpointslices", [], True),
    ("Job", "batch", "jobs", [], True),
    ("CronJob", "batch", "cronjobs", ["cj"], True),
    ("Deployment", "apps", "deployments", ["deploy"], True),
    ("DaemonSet", "apps", "daemonsets", ["ds"], True),
    ("StatefulSet", "apps", "statefulsets", ["sts"], True),
    ("ReplicaSet", "apps", "replicasets", ["rs"], True),
    ("PodDisruptionBudget", "policy", "poddisruptionbudgets", ["pdb"], True),
    ("HorizontalPodAutoscaler", "autoscaling", "horizontalpodautoscalers", ["hpa"], True),
    ("Role", "rbac.authorization.k8s.io", "roles", [], True),
    ("RoleBinding", "rbac.authorization.k8s.io", "rolebindings", [], True),
    ("ClusterRole", "rbac.authorization.k8s.io", "clusterroles", [], False),
    ("ClusterRoleBinding", "rbac.authorization.k8s.io", "clusterrolebindings", [], False),
    ("PriorityClass", "scheduling.k8s.io", "priorityclasses", ["pc"], False),
    ("StorageClass", "storage.k8s.io", "storageclasses", ["sc"], False),
    ("CustomResourceDefinition", "apiextensions.k8s.io", "customresourcedefinitions", ["crd", "crds"], False),
    ("JobSet", "jobset.x-k8s.io", "jobsets", [], True),
    ("RayJob", "ray.io", "rayjobs", [], True),
    ("RayCluster", "ray.io", "rayclusters", [], True),
    ("RayService", "ray.io", "rayservices", [], True),
    ("LocalQueue", "kueue.x-k8s.io", "localqueues", ["queue", "queues", "lq"], True),
    ("ClusterQueue", "kueue.x-k8s.io", "clusterqueues", ["cq"], False),
    ("ResourceFlavor", "kueue.x-k8s.io", "resourceflavors", ["flavor", "flavors", "rf"], False),
    ("Topology", "kueue.x-k8s.io", "topologies", [], False),
    ("Workload", "kueue.x-k8s.io", "workloads", ["wl"], True),
    ("WorkloadPriorityClass", "kueue.x-k8s.io", "workloadpriorityclasses", [], False),
    ("PodMonitoring", "monitoring.googleapis.com", "podmonitorings", [], True),
    ("ClusterPodMonitoring", "monitoring.googleapis.com", "clusterpodmonitorings", [], False),
    ("VirtualService", "networking.istio.io", "virtualservices", ["vs"], True),
    ("Gateway", "networking.istio.io", "gateways", ["gw"], True),
    ("DestinationRule", "networking.istio.io", "destinationrules", ["dr"], True),
    ("Network", "networking.gke.io", "networks", [], False),
    ("GKENetworkParamSet", "networking.gke.io", "gkenetworkparamsets", [], False),
]


class Kind:
    def __init__(self, kind, group, plural, shorts, namespaced):
        self.kind, self.group, self.plural, self.shorts, self.namespaced = kind, group, plural, shorts, namespaced

    def ref(self):
        """kind.group as `-o name` and apply print it (core kinds without a group)."""
        return self.kind.lower() + ("." + self.group if self.group else "")

    def resource(self):
        """plural.group, as NotFound messages name it."""
        return self.plural + ("." + self.group if self.group else "")


KIND_LIST = [Kind(*k) for k in KINDS]


class Fail(Exception):
    """A kubectl error: message for stderr, exit code."""

    def __init__(self, message, code=1):
        super().__init__(message)
        self.code = code


def kind_of(kind, group):
    for k in KIND_LIST:
        if k.kind == kind and k.group == group:
            return k
    # A kind this table does not know (a CRD's): namespaced, plural by adding "s".
    return Kind(kind, group, kind.lower() + "s", [], True)


def resolve_type(word):
    """The Kind a resource word names as kubectl accepts it (jobs, job, jobs.batch, cm, Deployment...)."""
    name, group = (word.split(".", 1) + [None])[:2] if "." in word else (word, None)
    low = name.lower()
    for k in KIND_LIST:
        if group is not None and k.group != group:
            continue
        if low in (k.plural, k.kind.lower()) or low in k.shorts:
            return k
    return None


def missing_crds():
    return set(os.environ.get("STUB_MISSING_CRDS", "").replace(",", " ").split())


def crd_missing(k, word=None):
    missing = missing_crds()
    return bool(missing & {k.resource(), k.plural, k.kind.lower(), k.ref(), word or ""}) and bool(k.group)


# ---- the store --------------------------------------------------------------------------------

class Store:
    def __init__(self):
        state = os.environ.get("STUB_STATE")
        if not state:
            raise Fail("kubectl stand-in: STUB_STATE is not set (tests/stubs.sh sets it)", 3)
        self.state = state
        self.dir = os.path.join(state, "k8s")
        os.makedirs(self.dir, exist_ok=True)
        self.path = os.path.join(self.dir, "store.json")
        self.lock = open(os.path.join(self.dir, ".lock"), "w")
        fcntl.flock(self.lock, fcntl.LOCK_EX)
        self.data = {"counter": 0, "objects": []}
        if os.path.exists(self.path):
            with open(self.path) as f:
                self.data = json.load(f)
        self.dirty = False

    def save(self):
        if self.dirty:
            tmp = self.path + ".tmp"
            with open(tmp, "w") as f:
                json.dump(self.data, f, indent=1, sort_keys=True)
            os.replace(tmp, self.path)

    def event(self, verb, obj):
        with open(os.path.join(self.state, "k8s-events"), "a") as f:
            f.write("%s %s/%s\n" % (verb, obj["kind"].lower(), obj["metadata"]["name"]))

    def tick(self):
        """The next creation time: one second after the last, as ISO 8601 UTC."""
        self.data["counter"] += 1
        self.dirty = True
        return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(1767225600 + self.data["counter"]))  # from 2026-01-01

    @staticmethod
    def key_of(obj):
        return (group_of(obj), obj["kind"], obj["metadata"].get("namespace", ""), obj["metadata"]["name"])

    def find(self, group, kind, ns, name):
        for o in self.data["objects"]:
            if self.key_of(o) == (group, kind, ns, name):
                return o
        return None

    def of_kind(self, k, ns):
        """Objects of Kind k in namespace ns (None: every namespace), sorted by namespace and name."""
        out = [o for o in self.data["objects"] if group_of(o) == k.group and o["kind"] == k.kind
               and (ns is None or not k.namespaced or o["metadata"].get("namespace", "") == ns)]
        return sorted(out, key=lambda o: (o["metadata"].get("namespace", ""), o["metadata"]["name"]))

    def put(self, obj):
        key = self.key_of(obj)
        self.data["objects"] = [o for o in self.data["objects"] if self.key_of(o) != key] + [obj]
        self.dirty = True

    def remove(self, obj):
        """Deletes obj and what it owns (foreground cascade); a Namespace takes its objects along."""
        gone = [obj]
        uid = obj["metadata"].get("uid")
        while True:
            more = [o for o in self.data["objects"] if o not in gone and (
                any(r.get("uid") in {g["metadata"].get("uid") for g in gone} for r in o["metadata"].get("ownerReferences", []))
                or (obj["kind"] == "Namespace" and o["metadata"].get("namespace") == obj["metadata"]["name"]))]
            if not more:
                break
            gone += more
        self.data["objects"] = [o for o in self.data["objects"] if o not in gone]
        self.dirty = True
        return uid


def group_of(obj):
    api = obj.get("apiVersion", "")
    return api.split("/", 1)[0] if "/" in api else ""


# ---- status, as the controllers write it ------------------------------------------------------

def outcome(name):
    def matches(var):
        return any(fnmatch.fnmatchcase(name, g) for g in os.environ.get(var, "").split())
    if matches("STUB_RUN_FAIL"):
        return "failed"
    if matches("STUB_RUN_HOLD"):
        return "running"
    return "complete"


def cond(type_, status="True", reason=""):
    c = {"type": type_, "status": status, "lastTransitionTime": "", "lastProbeTime": ""}
    if reason:
        c["reason"] = reason
    return c


def workload_status(obj, result, now):
    kind, spec = obj["kind"], obj.get("spec") or {}
    if kind == "Job":
        parallel = spec.get("parallelism", 1)
        if result == "running":
            return {"startTime": now, "active": parallel, "ready": parallel}
        if result == "failed":
            return {"startTime": now, "failed": spec.get("backoffLimit", 6) + 1, "ready": 0,
                    "conditions": [cond("FailureTarget", reason="BackoffLimitExceeded"),
                                   cond("Failed", reason="BackoffLimitExceeded")]}
        return {"startTime": now, "completionTime": now, "succeeded": spec.get("completions", 1), "ready": 0,
                "conditions": [cond("SuccessCriteriaMet", reason="CompletionsReached"),
                               cond("Complete", reason="CompletionsReached")]}
    if kind == "JobSet":
        if result == "running":
            return {"conditions": [], "replicatedJobsStatus": [
                {"name": r.get("name"), "active": r.get("replicas", 1), "ready": 0, "succeeded": 0, "failed": 0}
                for r in spec.get("replicatedJobs", [])]}
        if result == "failed":
            return {"terminalState": "Failed", "conditions": [cond("Failed", reason="FailedJobs")]}
        return {"terminalState": "Completed", "conditions": [cond("Completed", reason="AllJobsCompleted")],
                "replicatedJobsStatus": [{"name": r.get("name"), "succeeded": r.get("replicas", 1), "active": 0,
                                          "ready": 0, "failed": 0} for r in spec.get("replicatedJobs", [])]}
    if kind == "RayJob":
        job, deploy = {"running": ("RUNNING", "Running"), "failed": ("FAILED", "Failed"),
                       "complete": ("SUCCEEDED", "Complete")}[result]
        return {"jobStatus": job, "jobDeploymentStatus": deploy, "startTime": now}
    return None


def steady_status(obj):
    """The status of a long-lived object once its controller has caught up."""
    kind, spec = obj["kind"], obj.get("spec") or {}
    gen = obj["metadata"].get("generation", 1)
    if kind in ("Deployment", "StatefulSet"):
        n = spec.get("replicas", 1)
        st = {"observedGeneration": gen, "replicas": n, "updatedReplicas": n, "readyReplicas": n,
              "availableReplicas": n}
        if kind == "Deployment":
            st["conditions"] = [cond("Available", reason="MinimumReplicasAvailable"),
                                cond("Progressing", reason="NewReplicaSetAvailable")]
        return st
    if kind == "DaemonSet":
        return {"observedGeneration": gen, "desiredNumberScheduled": 0, "currentNumberScheduled": 0,
                "numberReady": 0, "numberMisscheduled": 0, "updatedNumberScheduled": 0}
    if kind == "RayCluster":
        return {"state": "ready", "conditions": [cond("HeadPodReady", reason="HeadPodRunningAndReady"),
                                                 cond("RayClusterProvisioned", reason="AllPodRunningAndReadyFirstTime")]}
    return None


def child_jobs(store, jobset, result):
    """The Jobs the JobSet controller makes for a JobSet (pkg/controllers/jobset_controller.go constructJob)."""
    meta = jobset["metadata"]
    for rj in (jobset.get("spec") or {}).get("replicatedJobs", []):
        template = deepcopy(rj.get("template") or {})
        for i in range(rj.get("replicas", 1)):
            labels = dict((template.get("metadata") or {}).get("labels") or {})
            labels.update({"jobset.sigs.k8s.io/jobset-name": meta["name"],
                           "jobset.sigs.k8s.io/replicatedjob-name": rj.get("name", ""),
                           "jobset.sigs.k8s.io/job-index": str(i)})
            now = store.tick()
            job = {"apiVersion": "batch/v1", "kind": "Job",
                   "metadata": {"name": "%s-%s-%d" % (meta["name"], rj.get("name", ""), i),
                                "namespace": meta.get("namespace", ""), "labels": labels,
                                "annotations": dict((template.get("metadata") or {}).get("annotations") or {}),
                                "creationTimestamp": now, "uid": "uid-%d" % store.data["counter"],
                                "generation": 1,
                                "ownerReferences": [{"apiVersion": jobset["apiVersion"], "kind": "JobSet",
                                                     "name": meta["name"], "uid": meta["uid"], "controller": True,
                                                     "blockOwnerDeletion": True}]},
                   "spec": deepcopy(template.get("spec") or {})}
            job["status"] = workload_status(job, result, now)
            store.put(job)


# ---- the update oracle --------------------------------------------------------------------------

def oracle_dir():
    if os.environ.get("TRAINC_ORACLE_DIR"):
        return os.environ["TRAINC_ORACLE_DIR"]
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    return os.path.join(os.path.dirname(root), "shared", "oracle")


def refusals(old, new):
    """Why the API server would refuse to update old (applied earlier) to new: [(path, message)]."""
    check = os.path.join(oracle_dir(), "k8s-update-check")
    if not os.access(check, os.X_OK):
        # Without the oracle, a small built-in rule: the fields the issue found refused on every
        # ordinary edit. A Job's pod template (kubernetes pkg/apis/batch/validation
        # ValidateJobUpdate) and a JobSet's replicatedJobs (JobSet's update webhook) are immutable
        # once the workload runs; the oracle knows many more rules (selectors, Service clusterIP,
        # roleRef, Kueue queues and flavors, suspended workloads, CEL transition rules).
        rules = {"Job": ("template",), "JobSet": ("replicatedJobs",)}.get(new["kind"], ())
        return [("/spec/" + f, "field is immutable") for f in rules
                if (old.get("spec") or {}).get(f) != (new.get("spec") or {}).get(f)]
    import shlex
    import subprocess
    import tempfile
    yaml = yaml_module()
    with tempfile.TemporaryDirectory() as tmp:
        paths = []
        for name, obj in (("old.yaml", old), ("new.yaml", new)):
            paths.append(os.path.join(tmp, name))
            with open(paths[-1], "w") as f:
                yaml.safe_dump(obj, f, sort_keys=False)
        extra = shlex.split(os.environ.get("STUB_ORACLE_ARGS", ""))
        p = subprocess.run([check] + extra + paths, capture_output=True, text=True)
    if p.returncode == 0:
        return []
    found = []
    for line in p.stdout.splitlines():
        m = re.match(r"^\s+- (/\S*): (.*?)(?: \[[^\]]*\])?$", line)
        if m:
            found.append((m.group(1), m.group(2)))
    if p.returncode == 1 and found:
        return found
    raise Fail("kubectl stand-in: %s could not judge the update of %s %s (exit %d):\n%s%s"
               % (check, new["kind"], new["metadata"]["name"], p.returncode, p.stdout, p.stderr), 3)


def field_path(path):
    """/spec/replicatedJobs/0/replicas as the API server writes it: spec.replicatedJobs[0].replicas."""
    out = ""
    for part in path.strip("/").split("/"):
        out += "[%s]" % part if part.isdigit() else ("." if out else "") + part
    return out


# ---- manifests ----------------------------------------------------------------------------------

def read_manifests(paths, kustomize_dirs):
    """[(source, document or URL)] in order, every file read before anything is applied, as kubectl does."""
    items = []
    files = list(paths)
    for d in kustomize_dirs:
        kfile = os.path.join(d, "kustomization.yaml")
        if not os.path.isfile(kfile):
            raise Fail("error: unable to find one of 'kustomization.yaml', 'kustomization.yml' or 'Kustomization' "
                       "in directory '%s'" % os.path.abspath(d))
        with open(kfile) as f:
            yaml = yaml_module()
            k = yaml.load(f, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader)) or {}
        for r in k.get("resources", []):
            for doc in load_file(os.path.join(d, r)):
                if k.get("namespace") and doc.get("metadata") is not None:
                    if kind_of(doc.get("kind", ""), group_of(doc)).namespaced:
                        doc["metadata"]["namespace"] = k["namespace"]
                items.append((os.path.join(d, r), doc))
    for p in files:
        if re.match(r"^https?://", p):
            items.append((p, p))
            continue
        if os.path.isdir(p):
            names = sorted(n for n in os.listdir(p) if n.endswith((".yaml", ".yml", ".json")))
            for n in names:
                items += [(os.path.join(p, n), d) for d in load_file(os.path.join(p, n))]
            continue
        items += [(p, d) for d in load_file(p)]
    return items


def load_file(path):
    if not os.path.isfile(path):
        raise Fail('error: the path "%s" does not exist' % path)
    with open(path) as f:
        text = f.read()
    yaml = yaml_module()
    try:
        docs = [d for d in yaml.load_all(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader)) if d]
    except yaml.YAMLError as e:
        raise Fail('error: error parsing %s: %s' % (path, e))
    out = []
    for d in docs:
        if d.get("kind") == "List":
            out += d.get("items") or []
        else:
            out.append(d)
    for d in out:
        if not d.get("kind") or not d.get("apiVersion") or not (d.get("metadata") or {}).get("name"):
            raise Fail('error: error validating "%s": error validating data: kind, apiVersion or metadata.name '
                       'not set' % path)
    return out


def served_models(path):
    """The --served-model-name of a manifest's vLLM containers (for the /v1/models stand-in)."""
    with open(path) as f:
        return re.findall(r'(?m)^ *- "?--served-model-name=([^"\n]*)"?$', f.read())


# ---- command lines --------------------------------------------------------------------------------

VALUE_FLAGS = {"-n": "namespace", "--namespace": "namespace", "-l": "selector", "--selector": "selector",
               "-o": "output", "--output": "output", "--sort-by": "sort_by", "-f": "file", "--filename": "file",
               "-k": "kustomize", "--kustomize": "kustomize", "--for": "for", "--timeout": "timeout",
               "--context": None, "--kubeconfig": None, "--cluster": None, "--user": None,
               "--request-timeout": None, "--field-selector": None, "--raw": "raw", "--wait": None,
               "--cascade": "cascade", "--grace-period": None, "--dry-run": "dry_run", "--from-literal": "literal",
               "--field-manager": None, "--template": None, "--validate": None, "--type": "type",
               "--patch": "patch", "-p": "patch"}
BOOL_FLAGS = {"--ignore-not-found": "ignore_not_found", "--no-headers": "no_headers", "-A": "all_namespaces",
              "--all-namespaces": "all_namespaces", "--all": "all", "-w": None, "--watch": None,
              "--server-side": None, "--force-conflicts": None, "--now": None, "--show-labels": None,
              "-R": None, "--recursive": None, "--overwrite": None, "--force": None}


def parse(argv):
    opts = {"file": [], "kustomize": [], "literal": [], "pos": []}
    i = 0
    while i < len(argv):
        a = argv[i]
        name, value, has_value = a, None, False
        if a.startswith("--") and "=" in a:
            name, value = a.split("=", 1)
            has_value = True
        elif re.match(r"^-[nlofk]=", a):
            name, value = a[:2], a[3:]
            has_value = True
        elif re.match(r"^-[nlofk].", a):  # -oname, -nNS
            name, value = a[:2], a[2:]
            has_value = True
        if name in VALUE_FLAGS:
            if not has_value:
                # Flags with a value of their own when given bare (kubectl's NoOptDefVal).
                if name in ("--dry-run", "--wait", "--validate"):
                    value = "client" if name == "--dry-run" else "true"
                else:
                    i += 1
                    if i >= len(argv):
                        raise Fail("error: flag needs an argument: %s" % name)
                    value = argv[i]
            key = VALUE_FLAGS[name]
            if key in ("file", "kustomize", "literal"):
                opts[key].append(value)
            elif key:
                opts[key] = value
        elif name in BOOL_FLAGS:
            if BOOL_FLAGS[name]:
                opts[BOOL_FLAGS[name]] = value not in ("false", "0") if has_value else True
        elif a.startswith("-") and a != "-":
            raise Fail("error: unknown flag: %s" % a, 3)
        else:
            opts["pos"].append(a)
        i += 1
    return opts


def namespace(opts):
    return opts.get("namespace") or "default"


# ---- label selectors and JSONPath -------------------------------------------------------------------

def split_top(text, sep=","):
    parts, depth, cur = [], 0, ""
    for ch in text:
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        if ch == sep and depth == 0:
            parts.append(cur)
            cur = ""
        else:
            cur += ch
    parts.append(cur)
    return [p.strip() for p in parts if p.strip()]


def selector_matches(selector, labels):
    if not selector:
        return True
    for req in split_top(selector):
        m = re.match(r"^([^\s!=]+)\s+(in|notin)\s+\((.*)\)$", req)
        if m:
            values = {v.strip() for v in m.group(3).split(",")}
            inside = labels.get(m.group(1)) in values
            if (m.group(2) == "in") != inside or (m.group(2) == "in" and m.group(1) not in labels):
                return False
            continue
        if req.startswith("!"):
            if req[1:] in labels:
                return False
        elif "!=" in req:
            k, v = req.split("!=", 1)
            if labels.get(k) == v:
                return False
        elif "=" in req:
            k, v = re.split(r"==?", req, maxsplit=1)
            if labels.get(k) != v:
                return False
        elif req not in labels:
            return False
    return True


def jp_tokens(template):
    """A kubectl JSONPath template as [('text', s) | ('expr', s)]."""
    out, i = [], 0
    while i < len(template):
        j = template.find("{", i)
        if j < 0:
            out.append(("text", template[i:]))
            break
        if j > i:
            out.append(("text", template[i:j]))
        depth, k, quote = 0, j, None
        while k < len(template):
            ch = template[k]
            if quote:
                if ch == "\\":
                    k += 1
                elif ch == quote:
                    quote = None
            elif ch in "\"'":
                quote = ch
            elif ch == "{":
                depth += 1
            elif ch == "}":
                depth -= 1
                if depth == 0:
                    break
            k += 1
        if k >= len(template):
            raise Fail("error: error parsing jsonpath %s, unclosed action" % template)
        out.append(("expr", template[j + 1:k].strip()))
        i = k + 1
    return out


def jp_path_steps(expr):
    """.a.b\\.c[0][*][?(@.type=="X")] as steps: ('field', name) | ('index', i) | ('all',) | ('filter', path, op, value)."""
    steps, i = [], 0
    if expr.startswith("$"):
        i = 1
    if expr.startswith("@"):
        i = 1
    while i < len(expr):
        ch = expr[i]
        if ch == ".":
            i += 1
            name = ""
            while i < len(expr) and expr[i] not in ".[":
                if expr[i] == "\\" and i + 1 < len(expr):
                    i += 1
                name += expr[i]
                i += 1
            if name == "*":
                steps.append(("all",))
            elif name:
                steps.append(("field", name))
        elif ch == "[":
            j = expr.index("]", i) if not expr.startswith("[?(", i) else expr.index(")]", i) + 1
            body = expr[i + 1:j]
            i = j + 1
            if body == "*":
                steps.append(("all",))
            elif body.startswith("?("):
                m = re.match(r"^\?\(@((?:\.[^=!<>\s]+)+)\s*(==|!=)?\s*(.*)\)$", body)
                if not m:
                    raise Fail("error: error parsing jsonpath filter %s" % body)
                value = m.group(3).strip()
                if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
                    value = value[1:-1]
                steps.append(("filter", m.group(1), m.group(2), value))
            elif re.match(r"^-?\d+$", body):
                steps.append(("index", int(body)))
            elif ":" in body:
                a, b = (body.split(":") + [""])[:2]
                steps.append(("slice", int(a) if a else None, int(b) if b else None))
            else:
                steps.append(("field", body.strip("'\"")))
        else:
            raise Fail("error: error parsing jsonpath %s: unrecognized character %r" % (expr, ch))
    return steps


def jp_eval(expr, node):
    values = [node]
    for step in jp_path_steps(expr):
        nxt = []
        for v in values:
            if step[0] == "field":
                if isinstance(v, dict) and step[1] in v:
                    nxt.append(v[step[1]])
            elif step[0] == "index":
                if isinstance(v, list) and -len(v) <= step[1] < len(v):
                    nxt.append(v[step[1]])
            elif step[0] == "slice":
                if isinstance(v, list):
                    nxt += v[step[1]:step[2]]
            elif step[0] == "all":
                nxt += list(v.values()) if isinstance(v, dict) else (v if isinstance(v, list) else [])
            elif step[0] == "filter":
                for item in (v if isinstance(v, list) else []):
                    got = jp_eval(step[1], item)
                    if step[2] is None:
                        ok = bool(got)
                    else:
                        eq = any(jp_str(g) == step[3] for g in got)
                        ok = eq if step[2] == "==" else not eq
                    if ok:
                        nxt.append(item)
        values = nxt
    return values


def jp_str(v):
    if isinstance(v, bool):
        return "true" if v else "false"
    if v is None:
        return ""
    if isinstance(v, (dict, list)):
        return json.dumps(v, separators=(",", ":"), sort_keys=True)
    return str(v)


def jsonpath(template, root):
    tokens = jp_tokens(template)
    out, _ = jp_run(tokens, 0, root, root)
    return out


def jp_run(tokens, i, root, cur):
    out = ""
    while i < len(tokens):
        typ, s = tokens[i]
        if typ == "text":
            out += s
        elif s == "end":
            return out, i
        elif s.startswith("range "):
            items = jp_eval(s[6:].strip(), root if s[6:].strip().startswith("$") else cur)
            body_end = None
            for item in items:
                part, body_end = jp_run(tokens, i + 1, root, item)
                out += part
            if body_end is None:
                depth, body_end = 0, i + 1
                while body_end < len(tokens):
                    t = tokens[body_end]
                    if t[0] == "expr" and t[1].startswith("range "):
                        depth += 1
                    elif t[0] == "expr" and t[1] == "end":
                        if depth == 0:
                            break
                        depth -= 1
                    body_end += 1
            i = body_end
        elif len(s) >= 2 and s[0] == s[-1] and s[0] in "\"'":
            out += s[1:-1].encode().decode("unicode_escape")
        else:
            out += " ".join(jp_str(v) for v in jp_eval(s, root if s.startswith("$") else cur))
        i += 1
    return out, i


# ---- the verbs ---------------------------------------------------------------------------------------

def do_apply(store, opts):
    items = read_manifests(opts["file"], opts["kustomize"])
    dry = opts.get("dry_run") and opts["dry_run"] not in ("none", "false")
    suffix = {"client": " (dry run)", "server": " (server dry run)"}.get(opts.get("dry_run") or "", "")
    errors = []
    for source, doc in items:
        if isinstance(doc, str):
            if not dry:
                with open(os.path.join(store.dir, "urls"), "a") as f:
                    f.write(doc + "\n")
                apply_release(store, doc)
            print("applied %s" % doc)
            continue
        k = kind_of(doc["kind"], group_of(doc))
        manifest = deepcopy(doc)
        meta = manifest["metadata"]
        if k.namespaced:
            if meta.get("namespace") and opts.get("namespace") and meta["namespace"] != opts["namespace"]:
                raise Fail('error: the namespace from the provided object "%s" does not match the namespace "%s". '
                           "You must pass '--namespace=%s' to perform this operation."
                           % (meta["namespace"], opts["namespace"], meta["namespace"]))
            meta["namespace"] = meta.get("namespace") or namespace(opts)
        else:
            meta.pop("namespace", None)
        if crd_missing(k):
            errors.append('error: resource mapping not found for name: "%s" namespace: "%s" from "%s": no matches for '
                          'kind "%s" in version "%s"\nensure CRDs are installed first'
                          % (meta["name"], meta.get("namespace", ""), source, doc["kind"], doc["apiVersion"]))
            continue
        live = store.find(k.group, k.kind, meta.get("namespace", ""), meta["name"])
        ref = "%s/%s" % (k.ref(), meta["name"])
        if live is None:
            if not dry:
                create(store, manifest)
            print("%s created%s" % (ref, suffix))
            continue
        old = json.loads(live["metadata"]["annotations"][LAST_APPLIED]) if LAST_APPLIED in (
            live["metadata"].get("annotations") or {}) else strip_live(live)
        if old == manifest:
            print("%s unchanged%s" % (ref, suffix))
            continue
        refused = refusals(old, manifest)
        if refused:
            if not dry:
                store.event("refused", manifest)
            causes = ["%s: %s" % (field_path(p), m) for p, m in refused]
            errors.append('The %s "%s" is invalid: %s' % (
                k.kind, meta["name"], causes[0] if len(causes) == 1 else "[" + ", ".join(causes) + "]"))
            continue
        if not dry:
            update(store, live, manifest)
        print("%s configured%s" % (ref, suffix))
    if not dry:
        models = []
        for p in opts["file"]:
            if os.path.isfile(p):
                models += served_models(p)
        if models:
            with open(os.path.join(store.dir, "models"), "a") as f:
                f.write("".join(m + "\n" for m in models))
    if errors:
        raise Fail("\n".join(errors))


def apply_release(store, url):
    """The objects of a known release manifest, as applying it from `url` leaves them."""
    for prefix, objs in RELEASES.items():
        if not url.startswith(prefix):
            continue
        for obj in objs:
            meta = obj["metadata"]
            live = store.find(group_of(obj), obj["kind"], meta["namespace"], meta["name"])
            if live is None:
                create(store, deepcopy(obj))
            elif obj["kind"] == "ConfigMap" and live.get("data") != obj["data"]:
                live["data"] = deepcopy(obj["data"])
                live["metadata"].get("annotations", {}).pop(LAST_APPLIED, None)
                store.put(live)


def merge_patch(target, patch):
    """RFC 7386: objects merge, null deletes, anything else replaces."""
    if not isinstance(patch, dict):
        return deepcopy(patch)
    out = deepcopy(target) if isinstance(target, dict) else {}
    for k, v in patch.items():
        if v is None:
            out.pop(k, None)
        else:
            out[k] = merge_patch(out.get(k), v)
    return out


def do_patch(store, opts):
    if opts.get("type") not in ("merge",):
        raise Fail("stub kubectl: unexpected call: patch --type=%s" % opts.get("type"), 3)
    if opts.get("patch") is None:
        raise Fail("error: must specify --patch or --patch-file containing the contents of the patch")
    patch = json.loads(opts["patch"])
    found, missing, _ = select(store, opts, "patch")
    if missing:
        raise Fail("\n".join(not_found(k, n) for k, n in missing))
    for k, o in found:
        new = merge_patch(o, patch)
        ref = "%s/%s" % (k.ref(), o["metadata"]["name"])
        if new == o:
            print("%s patched (no change)" % ref)
            continue
        if new.get("spec") != o.get("spec"):
            new["metadata"]["generation"] = o["metadata"].get("generation", 1) + 1
        store.put(new)
        if o["kind"] in ROLLING and (new.get("spec") or {}).get("template") != (o.get("spec") or {}).get("template"):
            store.event("rolled", new)
        print("%s patched" % ref)


def strip_live(live):
    obj = deepcopy(live)
    obj.pop("status", None)
    for f in ("creationTimestamp", "uid", "generation", "resourceVersion", "ownerReferences"):
        obj["metadata"].pop(f, None)
    return obj


def create(store, manifest):
    now = store.tick()
    live = deepcopy(manifest)
    meta = live["metadata"]
    meta.setdefault("annotations", {})[LAST_APPLIED] = json.dumps(manifest, sort_keys=True, separators=(",", ":"))
    meta.update({"creationTimestamp": now, "uid": "uid-%d" % store.data["counter"], "generation": 1,
                 "resourceVersion": str(store.data["counter"])})
    store.event("created", live)
    if live["kind"] in WORKLOADS:
        result = outcome(meta["name"])
        live["status"] = workload_status(live, result, now)
        store.event("started", live)
        store.put(live)
        if live["kind"] == "JobSet":
            child_jobs(store, live, result)
        return
    status = steady_status(live)
    if status is not None:
        live["status"] = status
    store.put(live)


def update(store, live, manifest):
    new = deepcopy(manifest)
    meta = new["metadata"]
    meta.setdefault("annotations", {})[LAST_APPLIED] = json.dumps(manifest, sort_keys=True, separators=(",", ":"))
    for f in ("creationTimestamp", "uid", "ownerReferences"):
        if f in live["metadata"]:
            meta[f] = live["metadata"][f]
    spec_changed = new.get("spec") != live.get("spec")
    meta["generation"] = live["metadata"].get("generation", 1) + (1 if spec_changed else 0)
    store.data["counter"] += 1
    meta["resourceVersion"] = str(store.data["counter"])
    if "status" in live:
        new["status"] = live["status"]
    if new["kind"] in ROLLING and (new.get("spec") or {}).get("template") != (live.get("spec") or {}).get("template"):
        store.event("rolled", new)
    if new["kind"] not in WORKLOADS:
        status = steady_status(new)
        if status is not None:
            new["status"] = status
    store.put(new)


def targets(opts, verb):
    """[(Kind, word, name or None)] from the positional arguments (TYPE[,TYPE] [NAME...] | TYPE/NAME...)."""
    pos = opts["pos"]
    if not pos:
        raise Fail("error: You must provide one or more resources by argument or filename.")
    out = []
    if "/" in pos[0]:
        for p in pos:
            if "/" not in p:
                raise Fail("error: there is no need to specify a resource type as a separate argument when passing "
                           "arguments in resource/name form (e.g. 'kubectl %s resource/<resource_name>' instead of "
                           "'kubectl %s resource resource/<resource_name>'" % (verb, verb))
            word, name = p.split("/", 1)
            out.append((word, name))
    else:
        words = pos[0].split(",")
        names = pos[1:]
        if names and len(words) > 1:
            raise Fail("error: arguments in resource/name form must have a single resource and name")
        for w in words:
            if names:
                out += [(w, n) for n in names]
            else:
                out.append((w, None))
    resolved = []
    for word, name in out:
        k = resolve_type(word)
        if k is None or crd_missing(k, word):
            raise Fail('error: the server doesn\'t have a resource type "%s"' % word)
        resolved.append((k, word, name))
    return resolved


def select(store, opts, verb):
    """The objects a get/delete/wait names: (found [(Kind, obj)], not found messages, kinds asked)."""
    ns = None if opts.get("all_namespaces") else namespace(opts)
    found, missing, kinds = [], [], []
    asked = targets(opts, verb)
    # One object named: get prints it, not a List.
    opts["single"] = len(asked) == 1 and asked[0][2] is not None
    for k, word, name in asked:
        kinds.append(k)
        if name is None:
            for o in store.of_kind(k, ns):
                if selector_matches(opts.get("selector"), o["metadata"].get("labels") or {}):
                    found.append((k, o))
            continue
        o = store.find(k.group, k.kind, (ns or "") if k.namespaced else "", name)
        if o is None:
            missing.append((k, name))
        else:
            found.append((k, o))
    return found, missing, kinds


def not_found(k, name):
    return 'Error from server (NotFound): %s "%s" not found' % (k.resource(), name)


def sort_key(path):
    expr = path[1:-1] if path.startswith("{") and path.endswith("}") else path

    def key(pair):
        got = jp_eval(expr, pair[1])
        return (0, "") if not got else (1, got[0]) if isinstance(got[0], (int, float)) else (1, jp_str(got[0]))
    return key


def do_get(store, opts):
    if opts.get("raw"):
        if opts["raw"].endswith("/v1/models"):
            sys.stdout.flush()
            import subprocess
            subprocess.run([os.path.join(os.environ["STUB_BIN"], ".models")], check=False)
        else:
            print("{}")
        return
    pos = opts["pos"]
    first = pos[0] if pos else ""
    word = first.split("/", 1)[0]
    if resolve_type(word) is not None and resolve_type(word).kind == "Node":
        sys.stdout.write(os.environ.get("STUB_NODES", "").encode().decode("unicode_escape"))
        return
    if resolve_type(word) is not None and resolve_type(word).kind == "Secret" and (len(pos) > 1 or "/" in first):
        name = first.split("/", 1)[1] if "/" in first else pos[1]
        path = os.path.join(store.dir, "secrets", name)
        applied = store.find("", "Secret", namespace(opts), name)
        if not os.path.isfile(path) and applied is not None:  # applied from a manifest: its keys
            keys = sorted(set(applied.get("data") or {}) | set(applied.get("stringData") or {}))
            sys.stdout.write("".join(key + "\n" for key in keys))
            return
        if not os.path.isfile(path):
            raise Fail('Error from server (NotFound): secrets "%s" not found' % name)
        with open(path) as f:
            sys.stdout.write(f.read())
        return
    found, missing, kinds = select(store, opts, "get")
    # A Service asked for as `get service NAME` and never applied (the Istio ingress gateway, which
    # helm installs): its external IP, as the earlier stand-in answered.
    if len(missing) == 1 and not found and missing[0][0].kind == "Service" and "/" not in first:
        sys.stdout.write(os.environ.get("STUB_GATEWAY_IP", "203.0.113.7"))
        return
    errors = [] if opts.get("ignore_not_found") else [not_found(k, n) for k, n in missing]
    if opts.get("sort_by"):
        found.sort(key=sort_key(opts["sort_by"]))
    single = opts["single"] and len(found) == 1
    output = opts.get("output") or ""
    if output == "name":
        for k, o in found:
            print("%s/%s" % (k.ref(), o["metadata"]["name"]))
    elif output.startswith("jsonpath=") or output.startswith("jsonpath-as-json="):
        template = output.split("=", 1)[1]
        if len(template) >= 2 and template[0] == template[-1] and template[0] in "'\"":
            template = template[1:-1]
        root = found[0][1] if single else {"apiVersion": "v1", "kind": "List", "items": [o for _, o in found],
                                           "metadata": {"resourceVersion": ""}}
        sys.stdout.write(jsonpath(template, root))
    elif output.startswith("custom-columns="):
        cols = []
        for c in output.split("=", 1)[1].split(","):
            head, _, path = c.partition(":")
            path = path[1:-1] if path.startswith("{") and path.endswith("}") else path
            cols.append((head, path))
        rows = [] if opts.get("no_headers") else [[h for h, _ in cols]]
        for _, o in found:
            row = []
            for _, path in cols:
                got = jp_eval(path, o)
                row.append(",".join(jp_str(g) for g in got) if got else "<none>")
            rows.append(row)
        print_table(rows)
    elif output in ("yaml", "json"):
        root = found[0][1] if single else {"apiVersion": "v1", "kind": "List", "items": [o for _, o in found],
                                           "metadata": {"resourceVersion": ""}}
        if output == "json":
            print(json.dumps(root, indent=4))
        else:
            sys.stdout.write(yaml_module().safe_dump(root, sort_keys=True))
    elif output in ("", "wide"):
        if not found and not errors:
            ns = opts.get("namespace") or "default"
            print("No resources found" + ("" if opts.get("all_namespaces") or not kinds[0].namespaced
                                          else " in %s namespace." % ns), file=sys.stderr)
        prefix = len({k.kind for k in kinds}) > 1
        rows = [] if opts.get("no_headers") else [["NAME", "STATUS"]]
        for k, o in found:
            rows.append([("%s/" % k.ref() if prefix else "") + o["metadata"]["name"], describe_status(o)])
        if found:
            print_table(rows)
    else:
        raise Fail("error: unable to match a printer suitable for the output format \"%s\"" % output)
    if errors:
        raise Fail("\n".join(errors))


def describe_status(o):
    st = o.get("status") or {}
    for c in st.get("conditions") or []:
        if c.get("type") in ("Complete", "Completed", "Failed") and c.get("status") == "True":
            return c["type"]
    if "jobDeploymentStatus" in st:
        return st["jobDeploymentStatus"]
    if o["kind"] in WORKLOADS:
        return "Running"
    return "<none>"


def print_table(rows):
    """As kubectl's tabwriter prints them (minimum width 6, padding 3)."""
    if not rows:
        return
    widths = [max(6, max(len(r[i]) for r in rows) + 3) for i in range(len(rows[0]))]
    for r in rows:
        print("".join(c.ljust(widths[i]) if i < len(r) - 1 else c for i, c in enumerate(r)))


def do_delete(store, opts):
    if opts["file"]:
        items = [d for _, d in read_manifests(opts["file"], []) if not isinstance(d, str)]
        opts["pos"] = ["%s.%s/%s" % (kind_of(d["kind"], group_of(d)).plural, group_of(d), d["metadata"]["name"])
                       if group_of(d) else "%s/%s" % (kind_of(d["kind"], "").plural, d["metadata"]["name"])
                       for d in items]
        if items and items[0]["metadata"].get("namespace") and not opts.get("namespace"):
            opts["namespace"] = items[0]["metadata"]["namespace"]
    if not opts.get("selector") and not opts.get("all") and opts["pos"] and "/" not in opts["pos"][0] \
            and len(opts["pos"]) == 1:
        raise Fail("error: resource(s) were provided, but no name was specified")
    found, missing, _ = select(store, opts, "delete")
    dry = opts.get("dry_run") and opts["dry_run"] not in ("none", "false")
    if not found and not missing and (opts.get("selector") or opts.get("all")):
        print("No resources found", file=sys.stderr)
    for k, o in found:
        if not dry:
            if opts.get("cascade") == "orphan":
                store.data["objects"] = [x for x in store.data["objects"] if x is not o]
                store.dirty = True
            else:
                store.remove(o)
            store.event("deleted", o)
        print('%s "%s" deleted%s' % (k.ref(), o["metadata"]["name"], " (dry run)" if dry else ""))
    if missing and not opts.get("ignore_not_found"):
        raise Fail("\n".join(not_found(k, n) for k, n in missing))


def condition_met(o, cond_spec):
    """--for=condition=NAME[=VALUE] or --for=jsonpath={...}[=VALUE] on a stored object."""
    if cond_spec.startswith("condition="):
        name, _, value = cond_spec[len("condition="):].partition("=")
        value = value or "True"
        return any(c.get("type", "").lower() == name.lower() and c.get("status", "").lower() == value.lower()
                   for c in (o.get("status") or {}).get("conditions") or [])
    if cond_spec.startswith("jsonpath="):
        expr = cond_spec[len("jsonpath="):]
        if expr.startswith("'"):
            end = expr.index("'", 1)
            path, rest = expr[1:end], expr[end + 1:]
        else:
            end = expr.rindex("}") + 1 if "}" in expr else len(expr.split("=")[0])
            path, rest = expr[:end], expr[end:]
        path = path[1:-1] if path.startswith("{") and path.endswith("}") else path
        got = jp_eval(path, o)
        if not rest:
            return bool(got)
        return any(jp_str(g) == rest[1:] for g in got)
    if cond_spec == "create":
        return True
    raise Fail("error: unrecognized condition: \"%s\"" % cond_spec)


def do_wait(store, opts):
    cond_spec = opts.get("for")
    if not cond_spec:
        raise Fail("error: --for must be set")
    if opts.get("all"):  # the controllers installed from URLs (Kueue, JobSet): their deployments
        print("%s condition met" % opts["pos"][0])
        return
    found, missing, _ = select(store, opts, "wait")
    if cond_spec == "delete":
        for k, o in found:
            raise Fail("error: timed out waiting for the condition on %s/%s" % (k.plural, o["metadata"]["name"]))
        return
    if missing:
        raise Fail("\n".join(not_found(k, n) for k, n in missing))
    if not found:
        raise Fail("error: no matching resources found")
    for k, o in found:
        if not condition_met(o, cond_spec):
            raise Fail("error: timed out waiting for the condition on %s/%s" % (k.plural, o["metadata"]["name"]))
        print("%s/%s condition met" % (k.ref(), o["metadata"]["name"]))


def do_rollout(store, opts):
    sub = opts["pos"][0] if opts["pos"] else ""
    opts["pos"] = opts["pos"][1:]
    found, missing, _ = select(store, opts, "rollout " + sub)
    if missing:
        raise Fail("\n".join(not_found(k, n) for k, n in missing))
    for k, o in found:
        if sub == "status":
            print('%s "%s" successfully rolled out' % (k.kind.lower(), o["metadata"]["name"]))
        elif sub == "restart":
            tmpl = o.setdefault("spec", {}).setdefault("template", {}).setdefault("metadata", {})
            tmpl.setdefault("annotations", {})["kubectl.kubernetes.io/restartedAt"] = store.tick()
            o["metadata"]["generation"] = o["metadata"].get("generation", 1) + 1
            store.put(o)
            store.event("rolled", o)
            print("%s/%s restarted" % (k.ref(), o["metadata"]["name"]))
        else:
            raise Fail("stub kubectl: unexpected call: rollout %s" % sub, 3)


def do_create(store, opts):
    pos = opts["pos"]
    if pos[:1] in (["namespace"], ["ns"], ["serviceaccount"], ["sa"]) and len(pos) == 2:
        k = resolve_type(pos[0])
        meta = {"name": pos[1]}
        if k.namespaced:
            meta["namespace"] = namespace(opts)
        if store.find(k.group, k.kind, meta.get("namespace", ""), pos[1]) is not None:
            raise Fail('Error from server (AlreadyExists): %s "%s" already exists' % (k.resource(), pos[1]))
        make(store, {"apiVersion": "v1", "kind": k.kind, "metadata": meta})
        print("%s/%s created" % (k.ref(), pos[1]))
        return
    if pos[:2] != ["secret", "generic"] or len(pos) < 3:
        raise Fail("stub kubectl: unexpected call: create %s" % " ".join(pos), 3)
    # Keeps the keys of a Secret, never its values.
    d = os.path.join(store.dir, "secrets")
    os.makedirs(d, exist_ok=True)
    path = os.path.join(d, pos[2])
    if os.path.exists(path):
        raise Fail('error: failed to create secret secrets "%s" already exists' % pos[2])
    with open(path, "w") as f:
        f.write("".join(lit.split("=", 1)[0] + "\n" for lit in opts["literal"]))
    print("secret/%s created" % pos[2])


def make(store, obj):
    """An object made by `kubectl create` (no last-applied configuration)."""
    now = store.tick()
    obj["metadata"].update({"creationTimestamp": now, "uid": "uid-%d" % store.data["counter"],
                            "resourceVersion": str(store.data["counter"])})
    store.event("created", obj)
    store.put(obj)


# ---- helpers for the tests ------------------------------------------------------------------------------

def helper(store, argv):
    if argv[0] == "--objects":
        lines = []
        for o in store.data["objects"]:
            k = kind_of(o["kind"], group_of(o))
            lines.append("%s/%s/%s" % (k.ref(), o["metadata"].get("namespace", ""), o["metadata"]["name"]))
        sys.stdout.write("".join(line + "\n" for line in sorted(lines)))
    elif argv[0] == "--events":
        gone = set()
        path = os.path.join(store.state, "k8s-events")
        if os.path.exists(path):
            with open(path) as f:
                for line in f:
                    verb, _, what = line.rstrip("\n").partition(" ")
                    if verb == argv[1]:
                        print(what)
                    # Replaced: deleted, then created again under the same kind and name.
                    if argv[1] == "replaced":
                        if verb == "deleted":
                            gone.add(what)
                        elif verb == "created" and what in gone:
                            gone.discard(what)
                            print(what)
    elif argv[0] == "--finish":
        kind, name = argv[1].split("/", 1)
        result = {"complete": "complete", "failed": "failed"}[argv[2]]
        k = resolve_type(kind)
        hits = [o for o in store.data["objects"] if o["kind"] == k.kind and o["metadata"]["name"] == name]
        if not hits:
            raise Fail("kubectl stand-in: no %s %s to finish" % (kind, name))
        for o in hits + [c for c in store.data["objects"] if any(
                r.get("uid") == hits[0]["metadata"]["uid"] for r in c["metadata"].get("ownerReferences", []))]:
            o["status"] = workload_status(o, result, o["metadata"]["creationTimestamp"])
        store.dirty = True
    else:
        raise Fail("kubectl stand-in: unknown helper %s" % argv[0], 2)


def main(argv):
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)  # `kubectl get ... | head` ends quietly
    store = Store()
    try:
        if argv and argv[0] in ("--objects", "--events", "--finish"):
            helper(store, argv)
            return 0
        opts = parse(argv)
        if not opts["pos"]:
            raise Fail("stub kubectl: unexpected call: %s" % " ".join(argv), 3)
        verb = opts["pos"].pop(0)
        handler = {"apply": do_apply, "get": do_get, "delete": do_delete, "wait": do_wait,
                   "rollout": do_rollout, "create": do_create, "patch": do_patch}.get(verb)
        if handler is None:
            raise Fail("stub kubectl: unexpected call: %s" % " ".join(argv), 3)
        handler(store, opts)
        return 0
    except Fail as e:
        sys.stdout.flush()
        print(str(e), file=sys.stderr)
        return e.code
    finally:
        store.save()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
