#!/usr/bin/env python3
"""Judges pod templates against the Kubernetes Pod Security Standards.

Written from https://kubernetes.io/docs/concepts/security/pod-security-standards/ (the baseline and
restricted policies as of Kubernetes 1.33), independently of trainc's emitter. For every pod spec in
the YAML files given (any mapping with a `containers` list, so Jobs, JobSets, Deployments,
DaemonSets and KubeRay templates alike) it prints one line:

    LEVEL<TAB>FILE<TAB>KIND/NAME<TAB>PATH<TAB>violations of the stricter levels (`;`-separated)

LEVEL is the strictest level the pod meets: restricted, baseline or privileged.
Usage: pod_security.py FILE.yaml...
"""
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
    """Yields (path, pod spec, pod annotations) for every pod spec under `node`."""
    if isinstance(node, dict):
        if isinstance(node.get("containers"), list):
            yield path, node, (meta or {}).get("annotations")
            return
        for k, val in node.items():
            m = node.get("metadata") if k == "spec" else None
            yield from pods(val, f"{path}.{k}", m)
    elif isinstance(node, list):
        for i, val in enumerate(node):
            yield from pods(val, f"{path}[{i}]", None)


def main(files):
    for f in files:
        with open(f) as fh:
            for doc in yaml.safe_load_all(fh):
                if not isinstance(doc, dict):
                    continue
                name = f"{doc.get('kind')}/{(doc.get('metadata') or {}).get('name')}"
                for path, pod, annotations in pods(doc, "", doc.get("metadata")):
                    b = baseline_violations(pod, annotations)
                    r = restricted_violations(pod)
                    level = "privileged" if b else ("baseline" if r else "restricted")
                    print("\t".join([level, f, name, path or ".", "; ".join(b + r)]))


if __name__ == "__main__":
    main(sys.argv[1:])
