"""The containers of a compiled system as a stand-in container runs them (tests/firstminute_test.sh).

Usage: first_minute.py TRAINC SPEC OUT_DIR REPO SCRIPTS_DIR

Reads every manifest under OUT_DIR/k8s and prints one tab-separated line per container of every
pod template (Jobs, JobSets, Deployments, StatefulSets, RayClusters, RayJobs; init containers
that trainc pins are left out):

  WHERE  IMAGE_KEY  UID  GPUS  CC  PROGRAM  SCRIPT  INJECTED  VOLUMES  ENV_FILE  ARGV_FILE  READY

and before them, one `image` line per image with what its stand-in holds:

  image  KEY  REFERENCE  USER  UID  HOME  TOOLS  ARCHS  USERS  CUDA  MIN_DRIVER

and one `services` line naming every Service of the system (names its pods reach one another by),
and one `driver` line with the NVIDIA driver of its GPU nodes (GKE's for gpu-driver-version LATEST,
which trainc's pools ask for: stdlib/images.yaml gkeLatestDriver).
ARGV_FILE holds the container's command and args, one per line, with $(VAR) references expanded
from its env as the kubelet does; READY is its readiness probe, `http PORT PATH` or `tcp PORT`
(named ports resolved), or `-`.

The image's facts are what `trainc explain --image` says of it; an image trainc builds is its
generated Dockerfile's base with the users the Dockerfile adds (docker/*.Dockerfile in OUT_DIR;
the runtime image SPEC names is docker/trainrt.Dockerfile's); an image neither knows is printed as
`unknown` (nothing to stand in for). A container whose command runs trainc's entry script gets
the script (from its ConfigMap) written to SCRIPTS_DIR; its env (literal values, and a stand-in
value for each valueFrom) is written to SCRIPTS_DIR as NAME=VALUE lines.
"""
import glob
import json
import os
import re
import subprocess
import sys

import yaml

TRAINC, SPEC, OUT, REPO, SCRIPTS = sys.argv[1:6]

with open(os.path.join(REPO, "stdlib", "images.yaml")) as f:
    IMAGES = yaml.safe_load(f)
CAPABILITIES = IMAGES["computeCapabilities"]


def explain(reference):
    out = subprocess.run([TRAINC, "explain", "--image", reference, "--format", "json"],
                         check=True, capture_output=True, text=True).stdout
    return json.loads(out)


def dockerfile_image(text, base_facts):
    """What a Dockerfile's last stage adds to its base: passwd entries, HOME, USER."""
    users = {int(k): v for k, v in base_facts["users"].items()}
    names = {}
    home_env = None
    user = None
    for m in re.finditer(r"'([a-z_][a-z0-9_-]*):x:(\d+):\d+:[^:]*:([^:]*):[^']*' >> /etc/passwd", text):
        uid = int(m.group(2))
        if uid not in users:  # the Dockerfile adds it unless the base has one
            users[uid] = m.group(3)
            names[uid] = m.group(1)
    for m in re.finditer(r"useradd (.*?)(\\|\n|&&)", text):
        args = m.group(1).split()
        uid = int(args[args.index("--uid") + 1]) if "--uid" in args else None
        home = args[args.index("--home-dir") + 1] if "--home-dir" in args else None
        if uid is not None:
            users[uid] = home or "/home/" + args[-1]
            names[uid] = args[-1]
    m = re.search(r"^ENV HOME=(\S+)", text, re.M)
    if m:
        home_env = m.group(1)
    for m in re.finditer(r"^USER (\S+)", text, re.M):
        user = m.group(1).split(":")[0]
    return users, names, home_env, user


FACTS = {}  # reference -> (user, uid, home, tools, archs, extra users, cuda, min driver) or None


def built_images():
    """Reference -> Dockerfile text, for the images this output builds (and the runtime image)."""
    out = {}
    for path in glob.glob(os.path.join(OUT, "docker", "*.Dockerfile")):
        text = open(path).read()
        m = re.search(r"docker build .*?-t (\S+)", text, re.S)
        if m:
            out[m.group(1)] = text
    return out


BUILT = built_images()
RUNTIME = ((yaml.safe_load(open(SPEC)) or {}).get("runtime") or {}).get("image")
TRAINRT = os.path.join(OUT, "docker", "trainrt.Dockerfile")
if RUNTIME and os.path.exists(TRAINRT):
    TRAINRT = BUILT[RUNTIME] = open(TRAINRT).read()


def facts_of(reference):
    if reference in FACTS:
        return FACTS[reference]
    text = BUILT.get(reference)
    if text is None:
        f = explain(reference)
        if not f["known"]:
            FACTS[reference] = None
            return None
        users = {int(k): v for k, v in f["users"].items()}
        names = {}
        home = f["home"]
        uid = f["uid"]
        user = f["user"]
        tools = list(f["tools"])
    else:
        base = re.findall(r"^FROM (\S+)", text, re.M)[-1]
        f = explain(base)
        if not f["known"]:
            FACTS[reference] = None
            return None
        users, names, home_env, user_line = dockerfile_image(text, f)
        uid = int(user_line) if user_line and user_line.isdigit() else f["uid"]
        user = names.get(uid, f["user"] if uid == f["uid"] else "u%d" % uid)
        home = users.get(uid, f["home"])
        tools = list(f["tools"]) + (["trainrt"] if text is TRAINRT else [])
        if home_env:
            home = home_env
    archs = [str(a) for a in f["archs"]] + (["compute_%d" % f["ptx"]] if f["ptx"] else [])
    extra = {u: (names.get(u, "u%d" % u), h) for u, h in users.items() if u not in (0, uid)}
    FACTS[reference] = (user or "root", uid if uid is not None else 0, home or "/", tools, archs, extra,
                        f["cuda"] or "-", f["minDriver"] or "-")
    return FACTS[reference]


def pod_specs(obj):
    """(where, pod spec) of every pod template in a manifest."""
    kind, name = obj.get("kind"), obj.get("metadata", {}).get("name")
    spec = obj.get("spec") or {}

    def walk(node, path):
        if isinstance(node, dict):
            if "containers" in node and isinstance(node["containers"], list):
                yield "%s/%s%s" % (kind, name, path), node
                return
            for k, v in node.items():
                yield from walk(v, path if k in ("spec", "template") else path + "." + k)
        elif isinstance(node, list):
            for i, v in enumerate(node):
                label = v.get("name") or v.get("groupName") if isinstance(v, dict) else None
                yield from walk(v, path + "[%s]" % (label if label else i))

    yield from walk(spec, "")


def expand(word, env):
    """The kubelet's $(VAR) expansion of a command or args word ($$ escapes a $)."""
    return re.sub(r"\$\$|\$\(([A-Za-z_][A-Za-z0-9_]*)\)",
                  lambda m: "$" if m.group(0) == "$$" else env.get(m.group(1), m.group(0)), word)


def readiness(c):
    probe = c.get("readinessProbe") or {}
    ports = {p["name"]: p["containerPort"] for p in c.get("ports", []) if "name" in p}
    if "httpGet" in probe:
        port = probe["httpGet"]["port"]
        return "http %s %s" % (ports.get(port, port), probe["httpGet"].get("path", "/"))
    if "tcpSocket" in probe:
        port = probe["tcpSocket"]["port"]
        return "tcp %s" % ports.get(port, port)
    return "-"


def configmaps(objs):
    return {o["metadata"]["name"]: o.get("data", {}) for o in objs if o.get("kind") == "ConfigMap"}


def main():
    objs = []
    for path in sorted(glob.glob(os.path.join(OUT, "k8s", "*.yaml"))):
        objs += [o for o in yaml.safe_load_all(open(path)) if o]
    cms = configmaps(objs)
    keys = {}
    lines = []
    n = 0
    for obj in objs:
        for where, pod in pod_specs(obj):
            volumes = {v["name"]: v for v in pod.get("volumes", [])}
            injected = [c["name"][len("trainc-tools-"):] for c in pod.get("initContainers", [])
                        if c["name"].startswith("trainc-tools-")]
            psc = pod.get("securityContext") or {}
            accel = (pod.get("nodeSelector") or {}).get("cloud.google.com/gke-accelerator", "")
            for c in pod["containers"]:
                ref = c["image"]
                facts = facts_of(ref)
                if ref not in keys:
                    keys[ref] = "img%d" % len(keys)
                key = keys[ref]
                sc = c.get("securityContext") or {}
                uid = sc.get("runAsUser", psc.get("runAsUser"))
                if uid is None:
                    uid = facts[1] if facts else 0
                limits = (c.get("resources") or {}).get("limits") or {}
                gpus = int(limits.get("nvidia.com/gpu", 0))
                cc = CAPABILITIES.get(accel, 0) if gpus else 0
                argv = (c.get("command") or []) + (c.get("args") or [])
                program = os.path.basename(argv[0]) if argv else "-"
                if not argv and obj.get("kind") in ("RayCluster", "RayJob"):
                    program = "ray"  # KubeRay runs `ray start` in a container that names no command
                script = "-"
                for m in c.get("volumeMounts", []):
                    vol = volumes.get(m["name"], {})
                    cm = (vol.get("configMap") or {}).get("name")
                    if cm and len(argv) > 1 and argv[1].startswith(m["mountPath"] + "/"):
                        data = cms.get(cm, {}).get(os.path.basename(argv[1]))
                        if data is not None:
                            n += 1
                            script = os.path.join(SCRIPTS, "entry-%d.sh" % n)
                            with open(script, "w") as f:
                                f.write(data)
                            os.chmod(script, 0o644)
                mounts = [m["mountPath"] for m in c.get("volumeMounts", [])
                          if m["mountPath"] not in ("/dev/shm",) and not m["mountPath"].startswith("/opt/trainc")]
                env = {e["name"]: "stand-in-" + e["name"].lower() if "valueFrom" in e else e.get("value", "")
                       for e in c.get("env", [])}
                n += 1
                env_file = os.path.join(SCRIPTS, "env-%d" % n)
                with open(env_file, "w") as f:
                    for name, value in env.items():
                        f.write("%s=%s\n" % (name, value.replace("\n", " ")))
                argv_file = os.path.join(SCRIPTS, "argv-%d" % n)
                with open(argv_file, "w") as f:
                    f.writelines(expand(w, env).replace("\n", " ") + "\n" for w in argv)
                lines.append("\t".join([where + ":" + c["name"], key, str(uid), str(gpus), str(cc), program, script,
                                        " ".join(injected) or "-", " ".join(mounts) or "-", env_file, argv_file,
                                        readiness(c)]))
    for ref, key in keys.items():
        f = facts_of(ref)
        if f is None:
            print("\t".join(["image", key, ref, "unknown"]))
            continue
        user, uid, home, tools, archs, extra, cuda, min_driver = f
        users = " ".join("%d:%s:%s" % (u, nm, h) for u, (nm, h) in sorted(extra.items()))
        print("\t".join(["image", key, ref, user, str(uid), home, " ".join(tools), " ".join(archs) or "-",
                         users or "-", cuda, min_driver]))
    services = [o["metadata"]["name"] for o in objs if o.get("kind") == "Service"]
    print("\t".join(["services"] + services))
    print("\t".join(["driver", IMAGES["gkeLatestDriver"]["version"]]))
    for line in lines:
        print(line)


main()
