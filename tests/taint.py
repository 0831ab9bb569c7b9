#!/usr/bin/env python3
"""Taint from the schema, for tests/taint_test.sh.

`fields` lists every free-text field of schemas/trainc.v1.schema.json: each string-typed property
(through $ref, items, additionalProperties, oneOf/anyOf/allOf) that its pattern, enum, const or
format does not confine to a safe alphabet. A field is confined when no hostile payload below
passes its own constraints.

`gen` gives each free-text field a hostile value its constraints accept, with a marker of its own
(`tnt<N>x`), places it in a base spec rich enough to reach every artifact kind (creating the
parents it needs), and sorts the fields: a field is compiled when a spec holding it compiles, and
refused when `trainc check` rejects it with a diagnostic naming it; any other field fails the test.
The specs that compile are compiled into WORK/g<N>/out, and WORK/taint.json records the fields,
their values and the outputs, which the artifact checks (`k8s`, `tf`, `dockerfiles`, `ci`,
`runbook`, `model`) read.
"""
import copy
import glob
import html.parser
import json
import os
import re
import shlex
import subprocess
import sys
import xml.etree.ElementTree as ET

import yaml

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from kubelet_expansion import container_view  # noqa: E402


# ---- the schema's free-text fields ------------------------------------------------------------

def resolve(schema, node):
    while isinstance(node, dict) and "$ref" in node:
        ref = node["$ref"]
        assert ref.startswith("#/definitions/"), ref
        extra = {k: v for k, v in node.items() if k != "$ref"}
        node = dict(schema["definitions"][ref[len("#/definitions/"):]], **extra)
    return node


def is_string(node):
    t = node.get("type")
    return t == "string" or (isinstance(t, list) and "string" in t)


def walk(schema, node, path, seen, out):
    """Appends (path, leaf schema) for every string leaf; a path is a tuple of
    ('key', name) | ('item',) | ('map',) steps."""
    refs = seen
    if isinstance(node, dict) and "$ref" in node:
        if node["$ref"] in seen:
            return
        refs = seen | {node["$ref"]}
    node = resolve(schema, node)
    if not isinstance(node, dict):
        return
    for alt in ("oneOf", "anyOf", "allOf"):
        for sub in node.get(alt, []):
            walk(schema, dict(sub, **({"type": node["type"]} if "type" in node and "type" not in sub
                                    and "$ref" not in sub else {})), path, refs, out)
    if is_string(node):
        out.append((path, node))
    for name, sub in node.get("properties", {}).items():
        walk(schema, sub, path + (("key", name),), refs, out)
    if isinstance(node.get("additionalProperties"), dict):
        walk(schema, node["additionalProperties"], path + (("map",),), refs, out)
    for sub in node.get("patternProperties", {}).values():
        walk(schema, sub, path + (("map",),), refs, out)
    if isinstance(node.get("items"), dict):
        walk(schema, node["items"], path + (("item",),), refs, out)


def show(path):
    s = ""
    for step in path:
        if step[0] == "key":
            s += ("." if s else "") + step[1]
        elif step[0] == "item":
            s += "[]"
        else:
            s += "{}"
    return s


def ecma(pattern):
    """An ECMA-262 pattern as Python reads it (\\uXXXX and lookaheads are the same)."""
    return re.compile(pattern.replace("\\/", "/"))


def payloads(marker, pwned):
    """Hostile values, the richest first; each carries the marker and, run by a shell, would
    touch a file named after it under PWNED (or ./pwned-<marker>)."""
    p = "%s/%s" % (pwned, marker)
    return [
        "%s $(touch %s) `touch %s-bt`;touch %s-semi '\"\\ <script>x</script> ${{ github.token }} $$(X) *\n# %s" % (marker, p, p, p, marker),
        "%s $(touch %s) `touch %s-bt`;touch %s-semi '\"\\ <script>x</script> ${{ github.token }} $$(X) *" % (marker, p, p, p),
        "/%s $(touch %s) `touch %s-bt`;touch %s-semi '\"\\ <b>x</b> ${{ github.token }} $$(X) *" % (marker, p, p, p),
        "%s$(touch${IFS}%s)`touch${IFS}%s-bt`;touch${IFS}%s-semi'\"\\<b>${{github.token}}$$(X)*" % (marker, p, p, p),
        "%s$(touch pwned-%s)`touch pwned-%s`'\"" % (marker, marker, marker),
        "/%s$(touch pwned-%s)`touch pwned-%s`'\"" % (marker, marker, marker),
        "%s;touch pwned-%s" % (marker, marker),
        "%s'\"" % marker,
        "%s\n# x" % marker,
        "%s ${{ github.token }}" % marker,
        "%s<script>" % marker,
        "%s$$(X)" % marker,
        "%s$(X)" % marker,
        "%s `x`" % marker,
        "%s x" % marker,
    ]


# What a pattern may demand before free text: a store reference's store, a flag's name, a URL's
# scheme. A field whose pattern needs another head reads as confined: add its head here.
# A head is tried when the value without it is refused (a GCS store where only S3 syncs, a
# checkpoint folder outside the outputs).
HEADS = ["", "/", "runs:/", "models:/", "out/", "--log-info=", "https://e.example/"]


def hostile(leaf, marker, pwned):
    """The hostile values the leaf's own constraints accept, the richest first."""
    if leaf.get("enum") is not None or "const" in leaf or "format" in leaf:
        return []
    pat = ecma(leaf["pattern"]) if "pattern" in leaf else None
    found = []
    for head in HEADS:
        for v in payloads(marker, pwned):
            v = head + v
            if len(v) > leaf.get("maxLength", 1 << 30) or len(v) < leaf.get("minLength", 0):
                continue
            if pat and not pat.search(v):
                continue
            found.append(v)
            break
    return found


def fields(schema_path, pwned):
    schema = json.load(open(schema_path))
    leaves = []
    walk(schema, schema, (), frozenset(), leaves)
    # One row per path: alternatives of one field (a string or a map) keep the loosest leaf.
    rows, order = {}, []
    for path, leaf in leaves:
        key = show(path)
        if key not in rows:
            order.append(key)
            rows[key] = (path, [])
        rows[key][1].append(leaf)
    result = []
    for n, key in enumerate(order):
        path, alts = rows[key]
        marker = "tnt%dx" % n
        values = []
        for leaf in alts:
            values += [v for v in hostile(leaf, marker, pwned) if v not in values]
        result.append({"field": key, "path": [list(s) for s in path], "marker": marker,
                       "value": values[0] if values else None, "values": values})
    return result


# ---- specs that carry the taint -----------------------------------------------------------------

# Every artifact kind: a GPU torchrun step with every optional part, a command step, a RayJob on a
# Ray cluster, a Dask client step, trainrt's datagen and xgboost steps, Triton (its repository filled
# from a folder and a fetched file) and vLLM services behind
# the gateway with Istio, stores in S3 and GCS, generated Dockerfiles, GitHub and Cloud Build, Terraform
# with remote state, an identity.
BASE = {
    "apiVersion": "trainc/v1", "kind": "TrainingSystem", "name": "taint", "namespace": "taint",
    "gcp": {"project": "taint-proj", "region": "us-central1", "zone": "us-central1-a",
            "state": {"bucket": "taint-proj-tf-state"}},
    "cluster": {"name": "tc", "pools": {
        "gpu": {"machine": "n1-standard-4", "accelerator": {"type": "nvidia-tesla-t4", "count": 1}, "nodes": 4},
        "cpu": {"machine": "e2-standard-8", "nodes": 5}}},
    "storage": {"runs": {"s3": {"bucket": "bkt", "prefix": "runs"}},
                "models": {"gcs": {"bucket": "taint-models"}}},
    "identity": {"serviceAccount": "trainer", "gcpServiceAccount": "taint-trainer"},
    "istio": {},
    "runtime": {"image": "reg.example/trainrt:1"},
    "clusters": {
        "ray": {"engine": "ray",
                "build": {"context": "img", "base": "rayproject/ray:2.52.0", "requirements": "requirements.txt",
                          "copy": ["app.py"]},
                "head": {"pool": "cpu"}, "workers": {"w": {"pool": "cpu", "replicas": 1}},
                "mounts": [{"store": "models", "path": "/models"}], "env": {"RAY_V": "1"}},
        "dask": {"engine": "dask", "image": "ghcr.io/dask/dask:2024.12.1", "scheduler": {"pool": "cpu"},
                 "workers": {"w": {"pool": "cpu", "replicas": 1}}, "env": {"DASK_V": "1"}},
    },
    "services": {"triton": {"pool": "gpu",
                            "triton": {"repository": "models:/repo", "models": ["m1"], "args": ["--log-info=true"],
                                       "source": {"from": "repo", "fetch": [
                                           {"url": "https://models.example/m1.onnx", "sha256": "0" * 64,
                                            "to": "m1/1/model.onnx"}]}},
                            "expose": {"gateway": {}}, "env": {"SV": "1"}},
                 "chat": {"pool": "gpu", "vllm": {"model": "Qwen/Qwen2.5-0.5B-Instruct", "args": ["--max-model-len=2048"]},
                          "expose": {"gateway": {"pathPrefix": "/chat"}}}},
    "pipeline": [
        {"name": "train", "pool": "gpu", "nodes": 2,
         "build": {"context": "img", "base": "python:3.12-slim", "requirements": "requirements.txt", "copy": ["app.py"]},
         "torchrun": {"script": "app.py", "args": ["--x"]}, "env": {"A": "1"},
         "annotations": {"example.com/n": "v"},
         "inputs": [{"from": "runs:/in", "to": "data"}],
         "outputs": {"path": "out", "to": "runs:/out/", "every": "1h"},
         "checkpoints": {"path": "out/ck", "pattern": "*.pt", "resumeFlag": "--resume"},
         "heartbeat": {"file": "/tmp/trainc/hb"}, "mounts": [{"store": "models", "path": "/models"}]},
        {"name": "prep", "image": "reg.example/img:1", "pool": "cpu", "command": ["python3", "prep.py"], "env": {"P": "1"}},
        {"name": "rjob", "cluster": "ray", "command": ["python", "app.py"], "env": {"R": "1"}},
        {"name": "dstep", "cluster": "dask", "command": ["python3", "client.py"], "env": {"D": "1"}},
        {"name": "gen", "pool": "cpu", "datagen": {"rows": 1000, "features": 4, "to": "models:/table"}},
        {"name": "xgb", "needs": ["gen"], "pool": "cpu",
         "xgboost": {"from": "models:/table", "to": "models:/model", "rounds": 2, "params": {"max_depth": 3}}},
    ],
    "ci": {"github": {"workloadIdentityProvider": "projects/123456/locations/global/workloadIdentityPools/gh/providers/repo",
                      "traincImage": "us-docker.pkg.dev/taint-proj/tools/trainc:0.1.0",
                      "serviceAccount": "deployer@taint-proj.iam.gserviceaccount.com",
                      "environment": "production"},
           "cloudbuild": {"serviceAccount": "builder@taint-proj.iam.gserviceaccount.com"}},
}

# What a parent the base spec lacks needs beside the tainted field.
PARENTS = {"security": {"level": "baseline"}}


def token_of_own_account(spec, step):
    """An existing account, kept by the head of a Ray cluster whose workers autoscale."""
    spec.pop("identity", None)
    spec["serviceAccount"] = "trainer"
    spec["cluster"]["pools"]["cpu"] = {"machine": "e2-standard-8", "autoscaling": {"min": 0, "max": 5}}
    spec["clusters"]["ray"]["workers"]["w"].update({"min": 0, "max": 1})


def checkpoints_inside(spec, step):
    step["checkpoints"]["path"] = step["outputs"]["path"] + "/ck"


def weights_not_model(spec, step):
    """vLLM serves weights from a store or a Hugging Face model, not both."""
    spec["services"]["chat"]["vllm"].pop("model", None)


# What a field needs elsewhere in the spec: (spec, the pipeline step it went into) -> None.
COMPANIONS = {"serviceAccountToken.reason": token_of_own_account, "pipeline[].outputs.path": checkpoints_inside,
              "services{}.vllm.weights": weights_not_model}


def place(node, steps, value, name, where):
    """The node with value put at steps; where collects the concrete data path."""
    if not steps:
        return value
    step, rest = steps[0], steps[1:]
    want = rest[0][1] if rest and rest[0][0] == "key" else None
    if step[0] == "key":
        node = {} if node is None else node
        child = node.get(step[1])
        if child is None and step[1] in PARENTS and rest:
            child = copy.deepcopy(PARENTS[step[1]])
        where.append(("." if where else "") + step[1])
        node[step[1]] = place(child, rest, value, name, where)
        return node
    if step[0] == "item":
        node = [] if node is None else node
        if not rest:
            where.append("[%d]" % len(node))
            return node + [value]
        # Into every element that has the next key (a command goes into every command step), so
        # the value reaches every artifact those make; else into the first.
        hits = [i for i, e in enumerate(node) if want is None or (isinstance(e, dict) and want in e)] or [0]
        if hits[0] >= len(node):
            node.append(None)
        where.append("[%d]" % hits[0])
        for i in hits:
            node[i] = place(node[i], rest, value, name, where if i == hits[0] else [])
        return node
    node = {} if node is None else node
    if not rest:
        where.append("." + name)
        node[name] = value
        return node
    keys = [k for k, v in node.items() if want is None or (isinstance(v, dict) and want in v)] or [next(iter(node), "t")]
    where.append("." + keys[0])
    for k in keys:
        node[k] = place(node.get(k), rest, value, name, where if k == keys[0] else [])
    return node


def trainc(binary, *args, cwd=None):
    p = subprocess.run([binary, *args], cwd=cwd, capture_output=True, text=True)
    return p.returncode, p.stdout + p.stderr


def write_spec(folder, spec):
    os.makedirs(os.path.join(folder, "img"), exist_ok=True)
    os.makedirs(os.path.join(folder, "repo", "m1"), exist_ok=True)
    for name, text in (("img/requirements.txt", "numpy\n"), ("img/app.py", "print(1)\n"),
                       ("repo/m1/config.pbtxt", 'name: "m1"\n')):
        with open(os.path.join(folder, name), "w") as f:
            f.write(text)
    path = os.path.join(folder, "spec.yaml")
    with open(path, "w") as f:
        yaml.safe_dump(spec, f, sort_keys=False, allow_unicode=True)
    return path


def with_fields(fs):
    spec = copy.deepcopy(BASE)
    for f in fs:
        where = []
        spec = place(spec, [tuple(s) for s in f["path"]], f["value"], "TAINT_%s" % f["marker"].upper(), where)
        f["at"] = "".join(where)
        if f["field"] in COMPANIONS:
            m = re.match(r"pipeline\[(\d+)\]", f["at"])
            COMPANIONS[f["field"]](spec, spec["pipeline"][int(m.group(1))] if m else None)
    return spec


def names(diag, f):
    """Whether a diagnostic names the field where it was placed."""
    return f["at"] in diag or f["at"].replace(".TAINT_", ".") in diag


def gen(schema_path, binary, work, pwned):
    binary, work = os.path.abspath(binary), os.path.abspath(work)
    os.makedirs(os.path.join(work, ".git"), exist_ok=True)
    all_fields = fields(schema_path, pwned)
    free = [f for f in all_fields if f["value"] is not None]

    def check_one(f):
        """rc and output of trainc check on the base spec with f's first value that passes."""
        first = None
        for v in f["values"]:
            f["value"] = v
            rc, out = trainc(binary, "check", write_spec(os.path.join(work, "one"), with_fields([f])))
            if rc == 0:
                return rc, out
            first = first or (rc, out, v)
        f["value"] = first[2]
        with_fields([f])
        return first[:2]
    base = os.path.join(work, "base")
    rc, out = trainc(binary, "compile", write_spec(base, BASE), "-o", os.path.join(base, "out"), cwd=base)
    if rc != 0:
        print("the base spec does not compile:\n" + out)
        return 1
    # Each field alone in the base spec: passes, refused (the diagnostic names it) or neither.
    ok, bad = [], []
    for f in free:
        rc, out = check_one(f)
        if rc == 0:
            ok.append(f)
        elif rc == 1 and names(out, f):
            f["refused"] = out.strip().splitlines()[0]
        else:
            bad.append((f, rc, out))
    # As many together as pass together.
    groups = []
    for f in ok:
        for g in groups:
            rc, _ = trainc(binary, "check", write_spec(os.path.join(work, "one"), with_fields(g + [f])))
            if rc == 0:
                g.append(f)
                break
        else:
            groups.append([f])
    outputs = []
    for n, g in enumerate(groups):
        folder = os.path.join(work, "g%d" % n)
        spec = write_spec(folder, with_fields(g))
        rc, out = trainc(binary, "compile", spec, "-o", os.path.join(folder, "out"), cwd=folder)
        if rc != 0:
            bad += [(f, rc, out) for f in g]
            continue
        outputs.append(os.path.join(folder, "out", BASE["name"]))
        for f in g:
            f["compiled"] = outputs[-1]
    with_fields(free)  # the paths, for the report
    report = {"fields": all_fields, "outputs": outputs, "pwned": pwned}
    with open(os.path.join(work, "taint.json"), "w") as f:
        json.dump(report, f, indent=1)
    confined = [f for f in all_fields if f["value"] is None]
    refused = [f for f in free if "refused" in f]
    compiled = [f for f in free if "compiled" in f]
    print("%d string fields: %d confined by the schema, %d free text: %d compiled with taint in %d spec(s), "
          "%d refused" % (len(all_fields), len(confined), len(free), len(compiled), len(outputs), len(refused)))
    for f in refused:
        print("refused %s: %s" % (f["field"], f["refused"]))
    for f, rc, out in bad:
        print("NEITHER compiled nor refused (exit %d): %s at %s = %r\n%s" % (rc, f["field"], f["at"], f["value"], out))
    return 1 if bad else 0



# ---- the artifacts ---------------------------------------------------------------------------------

MARK = re.compile(r"tnt[0-9]+x")


def load(work):
    with open(os.path.join(work, "taint.json")) as f:
        report = json.load(f)
    by_marker = {f["marker"]: f for f in report["fields"] if f["value"] is not None}
    return report, by_marker


def intact(text, by_marker, where, bad):
    """Every marker in text comes with its whole value."""
    for m in set(MARK.findall(text)):
        f = by_marker[m]
        body = f["value"][f["value"].index(m):]  # without the head the pattern demanded
        if body not in text:
            bad.append("%s: %s arrives changed: %r (written %r)" % (where, f["field"], text, f["value"]))


def files(report, pattern):
    return sorted(p for out in report["outputs"] for p in glob.glob(os.path.join(out, pattern), recursive=True))


def check_k8s(work):
    """Manifests parse; no key holds taint; every string value holding taint holds it as written,
    for containers after the kubelet's $(VAR) expansion. Scripts (ConfigMap data, a RayJob's
    entrypoint, a `sh -c` probe) are run by the shell test instead."""
    report, by_marker = load(work)
    bad = []

    def visit(node, where):
        if isinstance(node, dict):
            if "containers" in node and isinstance(node["containers"], list):
                for c in (node.get("initContainers") or []) + node["containers"]:
                    env, argv = container_view(c)
                    for k, v in env.items():
                        intact(v, by_marker, "%s env %s" % (where, k), bad)
                    shell = False
                    for w in argv:
                        if not shell:
                            intact(w, by_marker, "%s argv" % where, bad)
                        shell = w == "-c"
                    rest = {k: v for k, v in c.items() if k not in ("env", "command", "args", "livenessProbe",
                                                                   "readinessProbe", "startupProbe")}
                    visit(rest, where + ".container")
                node = {k: v for k, v in node.items() if k not in ("containers", "initContainers")}
            for k, v in node.items():
                if MARK.search(str(k)):
                    bad.append("%s: a key holds taint: %r" % (where, k))
                visit(v, "%s.%s" % (where, k))
        elif isinstance(node, list):
            for i, v in enumerate(node):
                visit(v, "%s[%d]" % (where, i))
        elif isinstance(node, str) and where.endswith(".runtimeEnvYAML"):
            visit(yaml.safe_load(node), where)
        elif isinstance(node, str):
            intact(node, by_marker, where, bad)

    n = 0
    for path in files(report, "k8s/*.yaml"):
        with open(path) as f:
            for doc in yaml.safe_load_all(f):
                if not isinstance(doc, dict):
                    continue
                n += 1
                if doc.get("kind") == "ConfigMap":
                    doc = {k: v for k, v in doc.items() if k not in ("data",)}
                if doc.get("kind") == "RayJob":
                    doc = copy.deepcopy(doc)
                    doc["spec"].pop("entrypoint", None)
                visit(doc, "%s %s" % (os.path.basename(path), doc.get("kind")))
    return finish(bad, "%d manifests" % n)


def finish(bad, what):
    for b in bad:
        print(b)
    if not bad:
        print("checked", what)
    return 1 if bad else 0


def dockerfile_instructions(text):
    """(INSTRUCTION, arguments) of each instruction, continuation lines joined."""
    out, cur = [], ""
    for line in text.split("\n"):
        if not cur and (not line.strip() or line.lstrip().startswith("#")):
            continue
        if line.endswith("\\"):
            cur += line[:-1]
            continue
        cur += line
        word, _, rest = cur.strip().partition(" ")
        out.append((word.upper(), rest))
        cur = ""
    if cur:
        out.append(("<unterminated>", cur))
    return out


def strings_intact(node, where, by_marker, bad, keys_clean=False):
    """Every string in a parsed YAML/JSON tree holds the taint it holds as written (intact); with
    keys_clean, no mapping key holds taint either."""
    if isinstance(node, dict):
        for k, v in node.items():
            if keys_clean and MARK.search(str(k)):
                bad.append("%s: a key holds taint: %r" % (where, k))
            strings_intact(v, where + "." + str(k), by_marker, bad, keys_clean)
    elif isinstance(node, list):
        for i, v in enumerate(node):
            strings_intact(v, "%s[%d]" % (where, i), by_marker, bad, keys_clean)
    elif isinstance(node, str):
        intact(node, by_marker, where, bad)


# Docker substitutes $NAME and ${...} in these instructions' arguments.
SUBSTITUTED = {"ADD", "COPY", "ENV", "EXPOSE", "FROM", "LABEL", "STOPSIGNAL", "USER", "VOLUME", "WORKDIR", "ONBUILD"}


def check_dockerfiles(work):
    """Each tainted Dockerfile has the untainted one's instructions, in order; taint is in no
    instruction's name and is not substituted by Docker ($NAME, ${...}) where Docker substitutes."""
    report, by_marker = load(work)
    bad, n = [], 0
    base = os.path.join(work, "base", "out", BASE["name"])
    for path in files(report, "docker/*Dockerfile"):
        n += 1
        ours = dockerfile_instructions(open(path).read())
        theirs = dockerfile_instructions(open(os.path.join(base, "docker", os.path.basename(path))).read())
        if [i for i, _ in ours] != [i for i, _ in theirs]:
            bad.append("%s: instructions %s, the template's %s" % (path, [i for i, _ in ours], [i for i, _ in theirs]))
        for ins, args in ours:
            if ins in SUBSTITUTED and MARK.search(args) and re.search(r"(?<!\\)\$(\{|[A-Za-z_])", args):
                bad.append("%s: Docker substitutes variables in this %s: %r" % (os.path.basename(path), ins, args))
    return finish(bad, "%d Dockerfiles" % n)


def check_ci(work, scripts):
    """The workflow and the Cloud Build configs parse; no `run:` holds `${{`; their scripts go to
    SCRIPTS for shellcheck; values holding taint hold it as written."""
    report, by_marker = load(work)
    bad, n = [], 0
    os.makedirs(scripts, exist_ok=True)

    def write(name, text):
        with open(os.path.join(scripts, "%d-%s.sh" % (len(os.listdir(scripts)), re.sub(r"[^A-Za-z0-9_.-]", "_", name))), "w") as f:
            f.write("#!/usr/bin/env bash\n" + text + "\n")

    for path in files(report, "ci/.github/workflows/*.yaml"):
        n += 1
        wf = yaml.safe_load(open(path))
        strings_intact(wf, os.path.basename(path), by_marker, bad, keys_clean=True)
        for job, spec in wf["jobs"].items():
            for i, step in enumerate(spec.get("steps", [])):
                if "run" in step:
                    if "${{" in step["run"]:
                        bad.append("%s: job %s step %d: `${{` in a run: %r" % (path, job, i, step["run"]))
                    write("github-%s-%d" % (job, i), "set -e\n" + step["run"])
    for path in files(report, "ci/cloudbuild.*.yaml"):
        n += 1
        cfg = yaml.safe_load(open(path))
        strings_intact(cfg, os.path.basename(path), by_marker, bad, keys_clean=True)
        for step in cfg["steps"]:
            if step.get("entrypoint") == "bash" and step.get("args", [None])[0] == "-c":
                write("cloudbuild-%s" % step.get("id"), step["args"][1].replace("$$", "$"))
    return finish(bad, "%d CI files" % n)


def hcl_strings(text):
    """(literal text of each quoted string or heredoc, [problems]) of an HCL file: a marker outside
    a string literal, or inside a ${ } or %{ } template sequence, is a problem."""
    lits, bad, i, n = [], [], 0, len(text)
    while i < n:
        c = text[i]
        if c == "#" or text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            if MARK.search(text[i:j]):
                bad.append("taint in a comment: %r" % text[i:j])
            i = j
        elif text.startswith("/*", i):
            j = text.find("*/", i)
            j = n if j < 0 else j + 2
            if MARK.search(text[i:j]):
                bad.append("taint in a comment: %r" % text[i:j])
            i = j
        elif c == '"':
            i, lit = hcl_quoted(text, i + 1, bad)
            lits.append(lit)
        elif text.startswith("<<", i) and re.match(r"<<-?([A-Za-z_]+)\n", text[i:]):
            m = re.match(r"<<-?([A-Za-z_]+)\n", text[i:])
            end = re.compile(r"^\s*%s\s*$" % m.group(1), re.M)
            e = end.search(text, i + m.end())
            body = text[i + m.end():e.start() if e else n]
            lits.append(body)
            if re.search(r"(?<![$%])[$%]\{[^}]*tnt[0-9]+x", body):
                bad.append("taint in a template sequence of a heredoc: %r" % body)
            i = e.end() if e else n
        else:
            j = i
            while j < n and text[j] not in '"#/<\n' and not text.startswith("<<", j):
                j += 1
            j = max(j, i + 1)
            if MARK.search(text[i:j]):
                bad.append("taint outside a string: %r" % text[i:j])
            i = j
    return lits, bad


def hcl_quoted(text, i, bad):
    lit, n = [], len(text)
    while i < n:
        c = text[i]
        if c == '"':
            return i + 1, "".join(lit)
        if c == "\n":
            bad.append("a line break in a quoted string: %r" % "".join(lit))
            return i + 1, "".join(lit)
        if c == "\\":
            esc = text[i + 1]
            if esc == "u":
                lit.append(chr(int(text[i + 2:i + 6], 16)))
                i += 6
                continue
            lit.append({"n": "\n", "t": "\t", "r": "\r", '"': '"', "\\": "\\"}.get(esc, "?"))
            i += 2
            continue
        if text.startswith("$${", i) or text.startswith("%%{", i):
            lit.append(text[i + 1:i + 3])
            i += 3
            continue
        if text.startswith("${", i) or text.startswith("%{", i):
            depth, j = 0, i + 1
            while j < n:
                if text[j] == "{":
                    depth += 1
                elif text[j] == "}":
                    depth -= 1
                    if depth == 0:
                        break
                j += 1
            if MARK.search(text[i:j]):
                bad.append("taint in a template sequence: %r" % text[i:j + 1])
            lit.append("\0")  # an interpolation: no literal text
            i = j + 1
            continue
        lit.append(c)
        i += 1
    bad.append("an unterminated string")
    return n, "".join(lit)


def check_tf(work):
    """Taint in Terraform is only inside string literals, whole, never in a ${ } or %{ }."""
    report, by_marker = load(work)
    bad, n, seen = [], 0, 0
    for path in files(report, "terraform/*.tf"):
        n += 1
        lits, problems = hcl_strings(open(path).read())
        bad += ["%s: %s" % (os.path.basename(path), p) for p in problems]
        for lit in lits:
            seen += len(MARK.findall(lit))
            intact(lit, by_marker, os.path.basename(path), bad)
    return finish(bad, "%d Terraform files (%d tainted strings)" % (n, seen))


def check_runbook(work):
    """The runbook, rendered by cmark, has no element made from tainted text: no tag, link, image,
    heading, emphasis or code block around a marker that the untainted runbook does not have."""
    report, by_marker = load(work)
    bad, n = [], 0
    for m, f in by_marker.items():
        BODIES[m] = f["value"][f["value"].index(m):]
    for path in files(report, "README.md"):
        n += 1
        page = subprocess.run(["cmark", "--unsafe", path], capture_output=True, text=True, check=True).stdout
        judge = Judge()
        judge.feed(page)
        bad += ["%s: %s" % (path, b) for b in judge.bad]
    return finish(bad, "%d runbooks" % n)


BODIES = {}


def single_quoted(line):
    """Whether each tainted value on a shell line is one word, all of it inside single quotes."""
    try:
        words = shlex.split(line.rstrip("\\"))
    except ValueError:
        return False
    quoted, q, dq, i = [], False, False, 0
    while i < len(line):
        c = line[i]
        if c == "\\" and not q:
            quoted += [q, q]
            i += 2
            continue
        if c == "'" and not dq:
            q = not q
        elif c == '"' and not q:
            dq = not dq
        quoted.append(q)
        i += 1
    for m in set(MARK.findall(line)):
        body = m_body(m)
        if not any(body in w for w in words):
            return False
        # The value up to its first single quote (written '\\'') is inside single quotes.
        head = body.split("'")[0]
        at = line.find(head)
        if at < 0 or not all(quoted[k] for k in range(at, at + len(head))):
            return False
    return True


def m_body(marker):
    return BODIES[marker]


class Judge(html.parser.HTMLParser):
    """Tainted text must stay text: inside <p>, <li>, table cells or inline code, not in an element
    it made (a heading, emphasis, a link, raw HTML, a code block it opened)."""
    MADE = {"h1", "h2", "h3", "h4", "h5", "h6", "em", "strong", "a", "img", "script", "b", "pre"}

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.stack, self.bad = [], []

    def handle_starttag(self, tag, attrs):
        self.stack.append(tag)
        for k, v in attrs:
            if v and MARK.search(v):
                self.bad.append("<%s %s=%r>" % (tag, k, v))
        if tag in ("script", "b"):
            self.bad.append("a <%s> element from tainted text" % tag)

    def handle_endtag(self, tag):
        while self.stack and self.stack.pop() != tag:
            pass

    def handle_data(self, data):
        if MARK.search(data):
            inside = [t for t in self.stack if t in self.MADE]
            # A shell block may hold a value single-quoted for the shell, as one word.
            if "pre" in inside and all(single_quoted(line) for line in data.split("\n") if MARK.search(line)):
                inside.remove("pre")
            if inside:
                self.bad.append("%r inside <%s>" % (data.strip()[:60], ">, <".join(inside)))


def check_model(work):
    """model.yaml parses and holds each tainted value whole; graph.svg is well-formed XML whose
    text holds taint only whole."""
    report, by_marker = load(work)
    bad = []
    for path in files(report, "model.yaml"):
        strings_intact(yaml.safe_load(open(path)), "model.yaml", by_marker, bad)
    for path in files(report, "graph.svg"):
        for el in ET.parse(path).iter():
            if MARK.search(el.tag):
                bad.append("graph.svg: an element named from taint: %r" % el.tag)
            for k, v in el.attrib.items():
                if MARK.search(k):
                    bad.append("graph.svg: an attribute named from taint: %r" % k)
    return finish(bad, "model.yaml and graph.svg")


if __name__ == "__main__":
    cmd = sys.argv[1]
    if cmd == "fields":
        for f in fields(sys.argv[2], "PWNED"):
            print(("free     " if f["value"] is not None else "confined ") + f["field"])
        sys.exit(0)
    if cmd == "gen":
        sys.exit(gen(*sys.argv[2:6]))
    if cmd == "ci":
        sys.exit(check_ci(sys.argv[2], sys.argv[3]))
    checks = {"k8s": check_k8s, "dockerfiles": check_dockerfiles, "tf": check_tf, "runbook": check_runbook,
              "model": check_model}
    if cmd in checks:
        sys.exit(checks[cmd](sys.argv[2]))
    sys.exit("unknown command " + cmd)
