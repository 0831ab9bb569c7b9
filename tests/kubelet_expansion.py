#!/usr/bin/env python3
"""What a container sees of its env values, command and args, after the kubelet expands them.

Written from the Kubernetes API reference (Container.env[].value, .command, .args) and the task
"Define Dependent Environment Variables", independently of trainc:
  - `$(VAR_NAME)` is replaced by the variable's value when VAR_NAME is defined: for an env value,
    by an env entry listed before it (or a service environment variable); for command and args, by
    any of the container's env entries;
  - a reference that cannot be resolved is left unchanged;
  - `$$` is reduced to `$`, so `$$(VAR_NAME)` gives the literal `$(VAR_NAME)` and is never expanded;
  - any other `$` (and an unterminated `$(`) is kept as it is.

Usage: kubelet_expansion.py MANIFEST... prints one JSON object per container of every pod template:
{"object": KIND/NAME, "container": NAME, "env": {NAME: VALUE, ...}, "argv": [...]} where values are
as the process receives them; a RayJob's entrypoint is reported as the argv Ray's job supervisor
runs it with (`/bin/sh -c ENTRYPOINT`): KubeRay's HTTPMode posts it to the job API as written, so
no kubelet expands it.
"""
import json
import sys

import yaml


def expand(text, mapping):
    out = []
    i = 0
    n = len(text)
    while i < n:
        ch = text[i]
        if ch != "$" or i + 1 >= n:
            out.append(ch)
            i += 1
            continue
        nxt = text[i + 1]
        if nxt == "$":  # escaped operator
            out.append("$")
            i += 2
        elif nxt == "(":
            close = text.find(")", i + 2)
            if close < 0:  # incomplete reference: kept
                out.append("$(")
                i += 2
                continue
            name = text[i + 2:close]
            out.append(mapping[name] if name in mapping else "$(" + name + ")")
            i = close + 1
        else:
            out.append("$" + nxt)
            i += 2
    return "".join(out)


def container_view(c):
    env = {}
    for e in c.get("env") or []:
        if "value" in e:
            env[e["name"]] = expand(e["value"], env)
        else:
            env[e["name"]] = "<from %s>" % ",".join(sorted(k for k in e if k != "name"))
    argv = [expand(w, env) for w in (c.get("command") or []) + (c.get("args") or [])]
    return env, argv


def pod_specs(doc):
    """(path, pod spec) of every pod template in a workload object."""
    kind = doc.get("kind")
    spec = doc.get("spec") or {}
    if kind in ("Job", "Deployment", "StatefulSet", "DaemonSet"):
        yield "spec.template.spec", spec["template"]["spec"]
    elif kind == "JobSet":
        for i, rj in enumerate(spec.get("replicatedJobs") or []):
            yield "spec.replicatedJobs[%d]" % i, rj["template"]["spec"]["template"]["spec"]
    elif kind in ("RayCluster", "RayJob", "RayService"):
        rc = spec if kind == "RayCluster" else (spec.get("rayClusterSpec") or {})
        if rc.get("headGroupSpec"):
            yield "headGroupSpec", rc["headGroupSpec"]["template"]["spec"]
        for i, g in enumerate(rc.get("workerGroupSpecs") or []):
            yield "workerGroupSpecs[%d]" % i, g["template"]["spec"]


def main(paths):
    for path in paths:
        with open(path) as f:
            for doc in yaml.safe_load_all(f):
                if not isinstance(doc, dict):
                    continue
                obj = "%s/%s" % (doc.get("kind"), (doc.get("metadata") or {}).get("name"))
                for where, pod in pod_specs(doc):
                    for c in (pod.get("initContainers") or []) + (pod.get("containers") or []):
                        env, argv = container_view(c)
                        print(json.dumps({"object": obj, "where": where, "container": c.get("name"), "env": env,
                                          "argv": argv}))
                spec = doc.get("spec") or {}
                if doc.get("kind") == "RayJob" and "entrypoint" in spec:
                    if spec.get("submissionMode") != "HTTPMode":
                        raise SystemExit("%s: submissionMode %r; only HTTPMode is modelled" % (obj, spec.get("submissionMode")))
                    # KubeRay posts the entrypoint to the head's job API as written; Ray's job
                    # supervisor runs it with subprocess.Popen(entrypoint, shell=True).
                    print(json.dumps({"object": obj, "where": "spec.entrypoint", "container": "ray-job", "env": {},
                                      "argv": ["/bin/sh", "-c", spec["entrypoint"]]}))


if __name__ == "__main__":
    main(sys.argv[1:])
