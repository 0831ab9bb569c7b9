#!/usr/bin/env python3
"""Judges pods against the Kubernetes Pod Security Standards: the templates written, or the final pods.

Written from https://kubernetes.io/docs/concepts/security/pod-security-standards/ (the baseline and
restricted policies as of Kubernetes 1.33), independently of trainc's emitter. For every pod spec in
the YAML files given (any mapping with a `containers` list, so Jobs, JobSets, Deployments,
DaemonSets and KubeRay templates alike) it prints one line:

    LEVEL<TAB>FILE<TAB>KIND/NAME<TAB>PATH<TAB>violations of the stricter levels (`;`-separated)

LEVEL is the strictest level the pod meets: restricted, baseline or privileged.

With --final it judges the pods as they will exist after `kubectl apply`: the pods the operators
make from trainc's objects, with what the mutating webhooks add to them. Each rule below was read
in the upstream source at the version trainc pins (read, not copied):

- KubeRay v1.7.0 (ray-project/kuberay tag v1.7.0; the kuberay-operator chart 1.7.0 with its
  default values, as scripts/apply.sh installs it):
  - ray-operator/controllers/ray/common/pod.go, DefaultHeadPodTemplate, BuildAutoscalerContainer
    and mergeAutoscalerOverrides: with `enableInTreeAutoscaling: true` the head pod gets an
    `autoscaler` container whose securityContext is `autoscalerOptions.securityContext`, and none
    when that is unset; BuildPod adds the emptyDir volumes `ray-logs` and `shared-mem`.
  - the same file, DefaultWorkerPodTemplate: every worker pod gets the `wait-gcs-ready` init
    container (ENABLE_INIT_CONTAINER_INJECTION is unset in the chart, so on) with a copy of the
    Ray container's securityContext.
  - common/job.go GetSubmitterTemplate and GetDefaultSubmitterContainer, rayjob_controller.go
    createK8sJobIfNeed and constructRayClusterForRayJob: a RayJob in K8sJobMode (the CRD's
    default when submissionMode is unset) makes a submitter Job whose pod is
    `submitterPodTemplate`, or else a pod with no securityContext and one `ray-job-submitter`
    container with none; SidecarMode appends that container to the head of the RayJob's own
    cluster; HTTPMode and InteractiveMode make no pod.
  - helm-chart/kuberay-operator/values.yaml: the feature gates RayClusterMTLS and
    RayClusterHistoryServer are off and headSidecarContainers/workerSidecarContainers empty, so
    no `wait-for-tls-ip-san` or collector container is added.
- GCS FUSE CSI driver (GoogleCloudPlatform/gcs-fuse-csi-driver v1.24.4, pkg/webhook unchanged up to
  main 5fcdc04a of 2026-08-21; GKE runs the driver as its managed add-on):
  - pkg/webhook/mutatingwebhook.go Handle and injection.go injectSidecarContainer: a pod
    annotated `gke-gcsfuse/volumes: "true"` (or "True") gets `gke-gcsfuse-sidecar`, a native
    sidecar init container on Kubernetes >= 1.29 (parsers.go), and `gke-gcsfuse-metadata-prefetch`
    when one of its volumes sets `gcsfuseMetadataPrefetchOnMount`.
  - sidecar_spec.go GetSecurityContext: user and group 65534, runAsNonRoot, no privilege
    escalation, drop ALL, RuntimeDefault seccomp, read-only root; Unconfined seccomp and
    CAP_SYS_NICE added with the annotation `gke-gcsfuse/enable-numa-pinning: "true"`.
    GetSidecarContainerVolumeSpec adds the emptyDir volumes gke-gcsfuse-tmp, -buffer and -cache;
    GetSATokenVolume a projected token volume to hostNetwork pods.
- Istio 1.30.3 (istio/istio tag 1.30.3; istiod installed with its chart's default values):
  - manifests/charts/istio-control/istio-discovery/templates/mutatingwebhook.yaml: the injector
    sees a pod whose namespace is labelled `istio-injection: enabled` (or `istio.io/rev: default`
    without it) unless the pod is labelled `sidecar.istio.io/inject: "false"`; in a namespace with
    neither label, a pod labelled `sidecar.istio.io/inject: "true"` (or `istio.io/rev: default`).
    pkg/kube/inject/inject.go injectRequired then skips hostNetwork pods, the namespaces of
    initializer.go IgnoredNamespaces, and pods whose label (else annotation)
    `sidecar.istio.io/inject` is "false"; values.yaml autoInject is `enabled`.
  - files/injection-template.yaml: `istio-init` runs as root (runAsUser 0, runAsNonRoot false) and
    adds NET_ADMIN and NET_RAW, unless istiod runs with the Istio CNI (`pilot.cni.enabled`, false
    in values.yaml), when `istio-validation` runs as 1337 and adds nothing; with the annotation
    `sidecar.istio.io/interceptionMode: NONE` there is neither. `istio-proxy` runs as 1337, drops
    ALL and may not escalate, but runs as root and adds NET_ADMIN with the TPROXY interception
    mode and NET_BIND_SERVICE with `sidecar.istio.io/capNetBindService: "true"`. Neither sets a
    seccompProfile (global.proxy.seccompProfile is empty), so the pod's applies. Its volumes are
    emptyDir, downwardAPI, projected, configMap and secret ones. An `istio-proxy` container the
    template declares itself (Istio's override) is not modelled.
Kueue and JobSet add no containers to the pods they admit or create.

Each final pod is judged against the enforce level of the namespace it lands in: the label
`pod-security.kubernetes.io/enforce` of the Namespace object among the files; privileged for a
namespace without it (Pod Security admission's default, which GKE keeps) and for kube-system,
which nobody labels; --assume LEVEL (default restricted, what trainc's README promises) for a
namespace the files do not create. --istio-cni says istiod runs with the Istio CNI. One line per
final pod:

    VERDICT<TAB>LEVEL<TAB>NAMESPACE<TAB>ENFORCE<TAB>FILE<TAB>KIND/NAME<TAB>POD<TAB>ADDED<TAB>violations

VERDICT is admitted or refused; POD is `template PATH`, `head`, `worker GROUP` or `submitter`;
ADDED the containers the cluster added (`-` for none), each with who added it. It exits 3 when a
pod is refused.
Usage: pod_security.py [--final [--istio-cni] [--assume LEVEL]] FILE.yaml...
"""
import argparse
import copy
import sys

import yaml

BASELINE_CAPS = {"AUDIT_WRITE", "CHOWN", "DAC_OVERRIDE", "FOWNER", "FSETID", "KILL", "MKNOD", "NET_BIND_SERVICE",
                 "SETFCAP", "SETGID", "SETPCAP", "SETUID", "SYS_CHROOT"}
SAFE_SYSCTLS = {"kernel.shm_rmid_forced", "net.ipv4.ip_local_port_range", "net.ipv4.ip_unprivileged_port_start",
                "net.ipv4.tcp_syncookies", "net.ipv4.ping_group_range", "net.ipv4.ip_local_reserved_ports",
                "net.ipv4.tcp_keepalive_time", "net.ipv4.tcp_fin_timeout", "net.ipv4.tcp_keepalive_intvl",
                "net.ipv4.tcp_keepalive_probes"}
SELINUX_TYPES = {None, "", "container_t", "container_init_t", "container_kvm_t", "container_engine_t"}
RESTRICTED_VOLUMES = {"configMap", "csi", "downwardAPI", "emptyDir", "ephemeral", "persistentVolumeClaim",
                      "projected", "secret"}


def containers(pod):
    for key in ("initContainers", "containers", "ephemeralContainers"):
        for c in pod.get(key) or []:
            yield key, c


def baseline_violations(pod, annotations):
    v = []
    psc = pod.get("securityContext") or {}
    for key in ("hostNetwork", "hostPID", "hostIPC"):
        if pod.get(key):
            v.append(f"{key}: true")
    if (psc.get("windowsOptions") or {}).get("hostProcess"):
        v.append("hostProcess")
    for vol in pod.get("volumes") or []:
        if "hostPath" in vol:
            v.append(f"hostPath volume {vol.get('name')}")
    for s in psc.get("sysctls") or []:
        if s.get("name") not in SAFE_SYSCTLS:
            v.append(f"sysctl {s.get('name')}")
    for k, val in (annotations or {}).items():
        if k.startswith("container.apparmor.security.beta.kubernetes.io/") and val not in ("runtime/default",) \
                and not str(val).startswith("localhost/"):
            v.append(f"AppArmor annotation {k}={val}")

    def selinux(opts, where):
        if not opts:
            return
        if opts.get("type") not in SELINUX_TYPES:
            v.append(f"{where} seLinuxOptions.type {opts.get('type')}")
        if opts.get("user") or opts.get("role"):
            v.append(f"{where} seLinuxOptions user/role")

    def seccomp(sc, where):
        if ((sc or {}).get("seccompProfile") or {}).get("type") == "Unconfined":
            v.append(f"{where} seccompProfile Unconfined")
        if ((sc or {}).get("appArmorProfile") or {}).get("type") == "Unconfined":
            v.append(f"{where} appArmorProfile Unconfined")

    selinux(psc.get("seLinuxOptions"), "pod")
    seccomp(psc, "pod")
    for kind, c in containers(pod):
        where = f"{kind} {c.get('name')}"
        sc = c.get("securityContext") or {}
        if sc.get("privileged"):
            v.append(f"{where} privileged")
        if (sc.get("windowsOptions") or {}).get("hostProcess"):
            v.append(f"{where} hostProcess")
        for cap in ((sc.get("capabilities") or {}).get("add") or []):
            if cap not in BASELINE_CAPS:
                v.append(f"{where} adds capability {cap}")
        for p in c.get("ports") or []:
            if p.get("hostPort"):
                v.append(f"{where} hostPort {p['hostPort']}")
        if sc.get("procMount") not in (None, "Default"):
            v.append(f"{where} procMount {sc['procMount']}")
        selinux(sc.get("seLinuxOptions"), where)
        seccomp(sc, where)
    return v


def restricted_violations(pod):
    v = []
    psc = pod.get("securityContext") or {}
    for vol in pod.get("volumes") or []:
        kinds = [k for k in vol if k != "name"]
        if not any(k in RESTRICTED_VOLUMES for k in kinds):
            v.append(f"volume {vol.get('name')} of type {','.join(kinds)}")
    if psc.get("runAsUser") == 0:
        v.append("pod runAsUser 0")
    pod_seccomp = (psc.get("seccompProfile") or {}).get("type")
    for kind, c in containers(pod):
        where = f"{kind} {c.get('name')}"
        sc = c.get("securityContext") or {}
        if sc.get("allowPrivilegeEscalation") is not False:
            v.append(f"{where} allowPrivilegeEscalation not false")
        non_root = sc.get("runAsNonRoot", psc.get("runAsNonRoot"))
        if non_root is not True:
            v.append(f"{where} runAsNonRoot not true")
        if sc.get("runAsUser") == 0:
            v.append(f"{where} runAsUser 0")
        if (sc.get("seccompProfile") or {}).get("type", pod_seccomp) not in ("RuntimeDefault", "Localhost"):
            v.append(f"{where} seccompProfile not RuntimeDefault/Localhost")
        caps = sc.get("capabilities") or {}
        if "ALL" not in (caps.get("drop") or []):
            v.append(f"{where} does not drop ALL capabilities")
        for cap in caps.get("add") or []:
            if cap != "NET_BIND_SERVICE":
                v.append(f"{where} adds capability {cap}")
    return v


def pods(node, path, meta):
    """Yields (path, pod spec, the pod's metadata) for every pod spec under `node`."""
    if isinstance(node, dict):
        if isinstance(node.get("containers"), list):
            yield path, node, meta or {}
            return
        for k, val in node.items():
            m = node.get("metadata") if k == "spec" else None
            yield from pods(val, f"{path}.{k}", m)
    elif isinstance(node, list):
        for i, val in enumerate(node):
            yield from pods(val, f"{path}[{i}]", None)


def judge(pod, annotations):
    """(level, violations) of one pod spec."""
    b = baseline_violations(pod, annotations)
    r = restricted_violations(pod)
    return ("privileged" if b else ("baseline" if r else "restricted")), b + r


# --- The final pods (see the module docstring for the sources) ---

LEVELS = ("restricted", "baseline", "privileged")


def add_empty_dir(pod, container, name, mount_path, medium=None):
    """KubeRay's addEmptyDir: mounts an emptyDir at `mount_path` unless the container mounts something there."""
    if any(m.get("mountPath") == mount_path for m in container.get("volumeMounts") or []):
        return
    volumes = pod.setdefault("volumes", [])
    if not any(v.get("name") == name for v in volumes):
        volumes.append({"name": name, "emptyDir": {"medium": medium} if medium else {}})
    container.setdefault("volumeMounts", []).append({"name": name, "mountPath": mount_path})


def ray_container(pod):
    """The Ray container: KubeRay takes the first (utils.RayContainerIndex)."""
    containers = pod.get("containers") or []
    return containers[0] if containers else {}


def ray_cluster_pods(cluster, submitter_sidecar=False):
    """(POD, spec, metadata, added) for the head and each worker group KubeRay makes from a RayCluster spec."""
    head = cluster.get("headGroupSpec") or {}
    template = head.get("template") or {}
    pod, meta, added = copy.deepcopy(template.get("spec") or {}), copy.deepcopy(template.get("metadata") or {}), []
    ray = ray_container(pod)
    if cluster.get("enableInTreeAutoscaling") is True:
        options = cluster.get("autoscalerOptions") or {}
        autoscaler = {"name": "autoscaler", "image": options.get("image", ray.get("image"))}
        if options.get("securityContext") is not None:
            autoscaler["securityContext"] = copy.deepcopy(options["securityContext"])
        pod.setdefault("containers", []).append(autoscaler)
        added.append("autoscaler (KubeRay)")
        add_empty_dir(pod, ray, "ray-logs", "/tmp/ray")
        add_empty_dir(pod, autoscaler, "ray-logs", "/tmp/ray")
    if submitter_sidecar:
        pod.setdefault("containers", []).append({"name": "ray-job-submitter", "image": ray.get("image")})
        added.append("ray-job-submitter (KubeRay)")
    if "plasma-directory" not in (head.get("rayStartParams") or {}):
        add_empty_dir(pod, ray, "shared-mem", "/dev/shm", "Memory")
    yield "head", pod, meta, added
    for group in cluster.get("workerGroupSpecs") or []:
        template = group.get("template") or {}
        pod, meta = copy.deepcopy(template.get("spec") or {}), copy.deepcopy(template.get("metadata") or {})
        ray = ray_container(pod)
        wait = {"name": "wait-gcs-ready", "image": ray.get("image"),
                "volumeMounts": copy.deepcopy(ray.get("volumeMounts") or [])}
        if ray.get("securityContext") is not None:
            wait["securityContext"] = copy.deepcopy(ray["securityContext"])
        pod.setdefault("initContainers", []).append(wait)
        if "plasma-directory" not in (group.get("rayStartParams") or {}):
            add_empty_dir(pod, ray, "shared-mem", "/dev/shm", "Memory")
        yield f"worker {group.get('groupName')}", pod, meta, ["wait-gcs-ready (KubeRay)"]


def ray_job_pods(spec, head_image):
    """The pods a RayJob makes: its own cluster's, and the submitter Job's in K8sJobMode."""
    mode = spec.get("submissionMode") or "K8sJobMode"
    if spec.get("rayClusterSpec"):
        yield from ray_cluster_pods(spec["rayClusterSpec"], submitter_sidecar=mode == "SidecarMode")
    if mode != "K8sJobMode":
        return
    template = spec.get("submitterPodTemplate")
    if template:
        yield "submitter", copy.deepcopy(template.get("spec") or {}), copy.deepcopy(template.get("metadata") or {}), []
    else:
        pod = {"restartPolicy": "Never", "containers": [{"name": "ray-job-submitter", "image": head_image}]}
        yield "submitter", pod, {}, ["ray-job-submitter (KubeRay)"]


GCSFUSE_SC = {"allowPrivilegeEscalation": False, "readOnlyRootFilesystem": True, "capabilities": {"drop": ["ALL"]},
              "seccompProfile": {"type": "RuntimeDefault"}, "runAsNonRoot": True, "runAsUser": 65534,
              "runAsGroup": 65534}


def gcsfuse_inject(pod, meta):
    """The GCS FUSE CSI webhook's sidecars; returns the names added."""
    annotations = meta.get("annotations") or {}
    if str(annotations.get("gke-gcsfuse/volumes")) not in ("true", "True"):
        return []
    sc = copy.deepcopy(GCSFUSE_SC)
    if str(annotations.get("gke-gcsfuse/enable-numa-pinning", "")).lower() == "true":
        sc["seccompProfile"]["type"] = "Unconfined"
        sc["capabilities"]["add"] = ["CAP_SYS_NICE"]
    added = []
    for kind in ("containers", "initContainers"):
        # A container of that name in the template only names the image; the webhook writes the rest.
        pod[kind] = [c for c in pod.get(kind) or [] if c.get("name") != "gke-gcsfuse-sidecar"]
    names = [c.get("name") for c in pod["initContainers"]]
    at = names.index("istio-proxy") + 1 if "istio-proxy" in names else 0
    pod["initContainers"].insert(at, {"name": "gke-gcsfuse-sidecar", "restartPolicy": "Always",
                                      "securityContext": copy.deepcopy(sc)})
    added.append("gke-gcsfuse-sidecar (GCS FUSE)")
    prefetch = [v for v in pod.get("volumes") or []
                if ((v.get("csi") or {}).get("driver") == "gcsfuse.csi.storage.gke.io"
                    and str(((v["csi"].get("volumeAttributes") or {}).get("gcsfuseMetadataPrefetchOnMount"))) in
                    ("true", "True"))]
    if prefetch:
        pod["initContainers"].insert(at + 1, {"name": "gke-gcsfuse-metadata-prefetch", "restartPolicy": "Always",
                                              "securityContext": copy.deepcopy(sc)})
        added.append("gke-gcsfuse-metadata-prefetch (GCS FUSE)")
    existing = {v.get("name") for v in pod.get("volumes") or []}
    new = [{"name": n, "emptyDir": {}} for n in ("gke-gcsfuse-tmp", "gke-gcsfuse-buffer", "gke-gcsfuse-cache")
           if n == "gke-gcsfuse-tmp" or n not in existing]
    if pod.get("hostNetwork"):
        new.append({"name": "gcsfuse-sa-token", "projected": {"sources": [{"serviceAccountToken": {"path": "token"}}]}})
    pod["volumes"] = new + (pod.get("volumes") or [])
    return added


ISTIO_IGNORED_NAMESPACES = {"kube-system", "kube-public", "kube-node-lease", "local-path-storage"}


def istio_injects(pod, meta, namespace, ns_labels):
    """Whether Istio's injector is called for the pod (the webhook's selectors) and injects (injectRequired)."""
    labels, annotations = meta.get("labels") or {}, meta.get("annotations") or {}
    inject = labels.get("sidecar.istio.io/inject")
    if ns_labels.get("istio-injection") == "enabled":
        called = inject != "false"
    elif "istio-injection" in ns_labels:
        called = False
    elif ns_labels.get("istio.io/rev") == "default":
        called = inject != "false"
    elif "istio.io/rev" in ns_labels:
        called = False
    else:
        called = (inject == "true" and "istio.io/rev" not in labels) or \
                 (labels.get("istio.io/rev") == "default" and inject != "false")
    if not called or pod.get("hostNetwork") or namespace in ISTIO_IGNORED_NAMESPACES:
        return False
    return str(labels.get("sidecar.istio.io/inject", annotations.get("sidecar.istio.io/inject", ""))) != "false"


def istio_inject(pod, meta, namespace, ns_labels, cni):
    """Istio's sidecar injection; returns the names added."""
    if not istio_injects(pod, meta, namespace, ns_labels):
        return []
    annotations = meta.get("annotations") or {}
    mode = annotations.get("sidecar.istio.io/interceptionMode", "REDIRECT")
    tproxy = mode == "TPROXY"
    bind = str(annotations.get("sidecar.istio.io/capNetBindService", "false")) == "true"
    added, inits = [], []
    if mode != "NONE":
        if cni:
            inits.append({"name": "istio-validation", "securityContext": {
                "allowPrivilegeEscalation": False, "privileged": False, "capabilities": {"drop": ["ALL"]},
                "readOnlyRootFilesystem": True, "runAsGroup": 1337, "runAsUser": 1337, "runAsNonRoot": True}})
        else:
            inits.append({"name": "istio-init", "securityContext": {
                "allowPrivilegeEscalation": False, "privileged": False,
                "capabilities": {"add": ["NET_ADMIN", "NET_RAW"], "drop": ["ALL"]},
                "readOnlyRootFilesystem": False, "runAsGroup": 0, "runAsNonRoot": False, "runAsUser": 0}})
    proxy_sc = {"allowPrivilegeEscalation": False, "privileged": False, "capabilities": {"drop": ["ALL"]},
                "readOnlyRootFilesystem": True}
    if tproxy or bind:
        proxy_sc["capabilities"]["add"] = (["NET_ADMIN"] if tproxy else []) + (["NET_BIND_SERVICE"] if bind else [])
        proxy_sc.update({"runAsNonRoot": False, "runAsUser": 0, "runAsGroup": 1337})
    else:
        proxy_sc.update({"runAsNonRoot": True, "runAsUser": 1337, "runAsGroup": 1337})
    # A native sidecar (an init container that restarts) on nodes of Kubernetes 1.33 or later.
    inits.append({"name": "istio-proxy", "restartPolicy": "Always", "securityContext": proxy_sc})
    pod["initContainers"] = inits + (pod.get("initContainers") or [])
    added += [f"{c['name']} (Istio)" for c in inits]
    pod["volumes"] = (pod.get("volumes") or []) + [
        {"name": "workload-socket", "emptyDir": {}}, {"name": "credential-socket", "emptyDir": {}},
        {"name": "workload-certs", "emptyDir": {}}, {"name": "istio-envoy", "emptyDir": {"medium": "Memory"}},
        {"name": "istio-data", "emptyDir": {}}, {"name": "istio-podinfo", "downwardAPI": {}},
        {"name": "istio-token", "projected": {}}, {"name": "istiod-ca-cert", "configMap": {}}]
    return added


def object_pods(doc, clusters):
    """(POD, spec, metadata, added) for every pod the cluster makes from one object, before the webhooks."""
    kind, spec = doc.get("kind"), doc.get("spec") or {}
    if kind == "RayCluster":
        yield from ray_cluster_pods(spec)
    elif kind == "RayService":
        yield from ray_cluster_pods(spec.get("rayClusterConfig") or {})
    elif kind == "RayJob":
        selected = (spec.get("clusterSelector") or {}).get("ray.io/cluster")
        cluster = spec.get("rayClusterSpec") or clusters.get(selected) or {}
        head = ((cluster.get("headGroupSpec") or {}).get("template") or {}).get("spec") or {}
        yield from ray_job_pods(spec, ray_container(head).get("image"))
    else:
        for path, pod, meta in pods(doc, "", doc.get("metadata")):
            yield f"template {path or '.'}", copy.deepcopy(pod), copy.deepcopy(meta), []


def enforce_level(namespace, namespaces, assume):
    """The level Pod Security admission enforces in `namespace` (see the module docstring)."""
    if namespace in namespaces:
        level = ((namespaces[namespace].get("labels") or {}).get("pod-security.kubernetes.io/enforce"))
        return level if level in LEVELS else "privileged"
    return "privileged" if namespace == "kube-system" else assume


def final(files, istio_cni, assume):
    """Prints the --final lines; 3 when a pod is refused."""
    docs = []
    for f in files:
        with open(f) as fh:
            docs += [(f, d) for d in yaml.safe_load_all(fh) if isinstance(d, dict)]
    namespaces = {(d.get("metadata") or {}).get("name"): d.get("metadata") or {} for _, d in docs
                  if d.get("kind") == "Namespace"}
    clusters = {(d.get("metadata") or {}).get("name"): d.get("spec") or {} for _, d in docs
                if d.get("kind") == "RayCluster"}
    refused = False
    for f, doc in docs:
        if doc.get("kind") == "Namespace":
            continue
        namespace = (doc.get("metadata") or {}).get("namespace") or "default"
        ns_labels = (namespaces.get(namespace) or {}).get("labels") or {}
        enforce = enforce_level(namespace, namespaces, assume)
        name = f"{doc.get('kind')}/{(doc.get('metadata') or {}).get('name')}"
        for what, pod, meta, added in object_pods(doc, clusters):
            added += gcsfuse_inject(pod, meta)
            added += istio_inject(pod, meta, namespace, ns_labels, istio_cni)
            level, violations = judge(pod, meta.get("annotations"))
            verdict = "admitted" if LEVELS.index(level) <= LEVELS.index(enforce) else "refused"
            refused |= verdict == "refused"
            print("\t".join([verdict, level, namespace, enforce, f, name, what, ", ".join(added) or "-",
                             "; ".join(violations)]))
    return 3 if refused else 0


def main(argv):
    parser = argparse.ArgumentParser(description="Judges pods against the Pod Security Standards.")
    parser.add_argument("--final", action="store_true", help="judge the pods as the cluster makes them")
    parser.add_argument("--istio-cni", action="store_true", help="istiod runs with the Istio CNI")
    parser.add_argument("--assume", choices=LEVELS, default="restricted",
                        help="enforce level of a namespace the files do not create")
    parser.add_argument("files", nargs="+")
    args = parser.parse_args(argv)
    if args.final:
        return final(args.files, args.istio_cni, args.assume)
    for f in args.files:
        with open(f) as fh:
            for doc in yaml.safe_load_all(fh):
                if not isinstance(doc, dict):
                    continue
                name = f"{doc.get('kind')}/{(doc.get('metadata') or {}).get('name')}"
                for path, pod, meta in pods(doc, "", doc.get("metadata")):
                    level, violations = judge(pod, meta.get("annotations"))
                    print("\t".join([level, f, name, path or ".", "; ".join(violations)]))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
