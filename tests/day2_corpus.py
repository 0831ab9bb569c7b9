#!/usr/bin/env python3
"""Day-2 edits, judged by the independent update oracle: does `kubectl apply` of the new output over
the old one go through?

The corpus is generated, not chosen. For every YAML example (examples/*/spec.yaml) the spec is walked
beside schemas/trainc.v1.schema.json, and every field the spec writes is named by its schema path
with indices and map keys wildcarded (`pipeline[].torchrun.args`, `cluster.pools.*.nodes`,
`services.*.autoscaling.max`, `pipeline[].env.*`): one field kind. Each kind gets one edit, made
from what the schema says the field is, at its places in document order:

  integer   +1, -1, +2 within the schema's bounds       boolean   flipped
  enum      another allowed value                        string    its last number +1, -1, doubled
  list      its last item edited, an item added, the               or halved, or a suffix, kept to
            last item dropped                                      the schema's pattern and lengths
  map       (env, labels, annotations) its first value edited as a string

A field of a few allowed values (an enum of at most MAX_ENUM, or an object whose one required field
is one, such as a pool's `placement`) is a kind per value. A field the spec leaves out is edited by
adding it (its default changed, an enum value, true, an integer at its minimum), where no place
writes it. The places of a kind are tried in turn, the first edit that compiles and changes k8s/
kept (else the first that compiles), at most MAX_TRIES compiles; a kind no edit of which compiles is
reported as skipped, with trainc's first error.

The unedited spec (written back the same way) and each edit compile into temporary folders, and
`k8s-update-check OLD NEW` judges them; a system with a Kueue LocalQueue is also judged with
`--kueue pending` (its workloads still waiting). Edits whose k8s/ folders equal the old one are not
sent to the oracle; the others of one example go in one run, each edit's objects moved into a
namespace (cluster-scoped ones: a name) of its own, so they never meet.

A refused object is a step's run object (its Job, JobSet or RayJob, entry-script ConfigMap or
headless Service: label trainc.dev/step, or app.kubernetes.io/name the step's name and
app.kubernetes.io/instance <system>-<step>[-...]) or another object. A refused non-step object is a
failure. A refused step object is a failure once step runs are named by their content (a step's
workload carries trainc.dev/run, an edit gives an edited step's workload a new name, or
TRAINC_STEP_RUNS_CONTENT_NAMED=1); before that it is reported as TAP TODO (an expected failure).
TRAINC_STEP_RUNS_CONTENT_NAMED=0 forces the earlier reading. An accepted edit that changes a RayJob
under its old name is held the same way: KubeRay never submits a finished job again, so the step
would silently not re-run.

Before the corpus, the judge is shown to fail: a planted change of a Deployment's selector must be
read as a refused non-step object.

On the real API server (--server KUBECTL KUBECONFIG, the cluster suite's control plane with Kueue,
JobSet and KubeRay): the first --sample edits of each example (default 3) that change k8s/ are
judged again by the server itself. Each edit's OLD objects (moved to names of their own as above)
are applied for real, as apply.sh applies them (client-side), so Kueue admits its runs; then its
NEW objects are applied as a server-side dry run, which runs the server's validation, its
immutable-field checks and the operators' admission webhooks. An object the dry run does not
accept is refused. A refused object other than a step's run is a failure, as with the oracle; so
is a refusal the oracle did not make (the two disagree); a refusal the oracle made that the server
does not is reported (the oracle also judges workloads Kueue has not admitted). Before them, the
planted selector change above must be refused by the server's dry run too.

Usage: day2_corpus.py TRAINC [--oracle DIR] [--jobs N] [--example NAME]... [--list] [--keep DIR]
                      [--server KUBECTL KUBECONFIG [--sample N]]
The oracle folder: --oracle, else $TRAINC_ORACLE_DIR, else shared/oracle beside the source root.
Without it every test is skipped (failed when TRAINC_REQUIRE_ORACLES=1). --list prints the edits
only (no oracle needed).
"""
import argparse
import concurrent.futures
import copy
import glob
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

import yaml

# libyaml's parser and emitter when PyYAML has them: the pure-Python ones take most of the time.
Loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
Dumper = getattr(yaml, "CSafeDumper", yaml.SafeDumper)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCHEMA = os.path.join(ROOT, "schemas", "trainc.v1.schema.json")
STEP_KINDS = {"Job", "JobSet", "RayJob", "ConfigMap", "Service"}
WORKLOAD_KINDS = {"Job", "JobSet", "RayJob"}
# The fields that only say what the file is: no edit of them is a day-2 change.
FIXED = {"apiVersion", "kind"}
# Compiles tried per field kind before it is reported as skipped.
MAX_TRIES = 6
# A field of at most this many allowed values is a kind per value (pool provisioning, placement
# level, security level); one of more (accelerator types) is one kind.
MAX_ENUM = 6


# ---------------------------------------------------------------- the schema walk

class Schema:
    def __init__(self, path):
        with open(path) as f:
            self.root = json.load(f)

    def resolve(self, s, value):
        """The schema that describes value: $ref followed, anyOf/oneOf narrowed to the alternative
        whose type fits."""
        for _ in range(20):
            if "$ref" in s:
                ref = s["$ref"].split("/")[-1]
                merged = dict(self.root["definitions"][ref])
                merged.update({k: v for k, v in s.items() if k != "$ref"})
                s = merged
                continue
            alts = s.get("anyOf") or s.get("oneOf")
            if alts:
                rest = {k: v for k, v in s.items() if k not in ("anyOf", "oneOf")}
                pick = next((a for a in alts if type_fits(self.resolve(a, value), value)), alts[0])
                merged = dict(rest)
                merged.update(pick)
                s = merged
                continue
            return s
        return s


def json_type(value):
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    if isinstance(value, dict):
        return "object"
    return "null"


def type_fits(s, value):
    t = s.get("type")
    if t is None:
        return True
    types = t if isinstance(t, list) else [t]
    vt = json_type(value)
    return vt in types or (vt == "integer" and "number" in types)


def is_scalar(value):
    return not isinstance(value, (list, dict))


def leaves(schema, value, s, kind, path, out):
    """Appends (kind, data path, schema, absent) for every field value writes, and for every field
    an object value writes leaves out that minimal_value() can fill in (absent=True)."""
    s = schema.resolve(s, value)
    if isinstance(value, dict):
        props = s.get("properties", {})
        extra = s.get("additionalProperties")
        for key, sub in value.items():
            if key in props:
                k = f"{kind}.{key}" if kind else key
                leaves(schema, sub, props[key], k, path + [key], out)
            elif isinstance(extra, dict):
                leaves(schema, sub, extra, f"{kind}.*", path + [key], out)
        for key, sub in props.items():
            if key not in value and key not in FIXED and minimal_values(schema, sub):
                out.append((f"{kind}.{key}" if kind else key, path + [key], sub, True))
    elif isinstance(value, list):
        if all(is_scalar(v) for v in value):
            out.append((kind, path, s, False))
        else:
            for i, sub in enumerate(value):
                leaves(schema, sub, s.get("items", {}), f"{kind}[]", path + [i], out)
    elif kind.split(".")[-1] not in FIXED:
        out.append((kind, path, s, False))


def minimal_values(schema, s, depth=0):
    """Values to give a field a spec leaves out, in the order they are tried: its default edited,
    each enum value, true, an integer at its minimum; an object of its required fields filled so.
    Strings without an enum and lists are not made up ([] when there is nothing to try)."""
    s = schema.resolve(s, None)
    if "default" in s:
        return scalar_variants(s, s["default"])
    if "enum" in s:
        return list(s["enum"])
    t = s.get("type")
    if t == "boolean":
        return [True, False]
    if t == "integer":
        lo = max(s.get("minimum", 1), 1)
        return [v for v in (lo, lo + 1) if v <= s.get("maximum", 10 ** 18)]
    if t == "object" and "properties" in s and depth < 3:
        value = {}
        for key in s.get("required", []):
            options = minimal_values(schema, s["properties"][key], depth + 1)
            if not options:
                return []
            value[key] = options
        keys = list(value)
        out = []
        for i in range(max((len(v) for v in value.values()), default=1)):
            out.append({k: value[k][min(i, len(value[k]) - 1)] for k in keys})
        return out
    return []


def show_path(path):
    text = ""
    for p in path:
        text += f"[{p}]" if isinstance(p, int) else (f".{p}" if text else p)
    return text


def get_at(doc, path):
    for p in path:
        doc = doc[p]
    return doc


def set_at(doc, path, value):
    for p in path[:-1]:
        doc = doc[p]
    doc[path[-1]] = value


# ---------------------------------------------------------------- edits

def string_fits(s, value):
    if not isinstance(value, str):
        return False
    if len(value) < s.get("minLength", 0) or len(value) > s.get("maxLength", 10 ** 9):
        return False
    pattern = s.get("pattern")
    return pattern is None or re.search(pattern, value) is not None


def bump_number(text, delta):
    m = None
    for m in re.finditer(r"[0-9]+", text):
        pass
    if m is None:
        return None
    n = int(m.group()) + delta
    if n < 0:
        return None
    digits = str(n).rjust(len(m.group()), "0") if m.group().startswith("0") else str(n)
    return text[:m.start()] + digits + text[m.end():]


def scale_number(text, factor):
    """text with its last number doubled or halved (machine types: n2-standard-8 -> 16)."""
    m = None
    for m in re.finditer(r"[0-9]+", text):
        pass
    if m is None or int(m.group()) * factor != int(int(m.group()) * factor) or int(m.group()) * factor < 1:
        return None
    return text[:m.start()] + str(int(int(m.group()) * factor)) + text[m.end():]


def scalar_variants(s, value):
    """Edited values of a scalar, in the order they are tried."""
    if isinstance(value, bool):
        return [not value]
    if "enum" in s:
        return [v for v in s["enum"] if v != value]
    if isinstance(value, (int, float)):
        lo, hi = s.get("minimum", -10 ** 18), s.get("maximum", 10 ** 18)
        return [v for v in (value + 1, value - 1, value + 2) if lo <= v <= hi]
    text = str(value)
    found = []
    for cand in (bump_number(text, 1), bump_number(text, -1), scale_number(text, 2), scale_number(text, 0.5),
                 text + "-2", text + "2", text + ".2", text + " 2"):
        if cand is not None and cand != text and cand not in found:
            found.append(cand)
    if s.get("type") in ("string", None) or "string" in (s.get("type") or []):
        return [c for c in found if string_fits(s, c)]
    return found


def edit_variants(schema, s, value, absent=False):
    """(description, new value) pairs for one field, in the order they are tried."""
    if absent:
        return [(f"{v!r} added", v) for v in minimal_values(schema, s)]
    if isinstance(value, list):
        items = schema.resolve(s.get("items", {}), value[-1] if value else "")
        out = []
        if value:
            for v in scalar_variants(items, value[-1]):
                out.append((f"last item {value[-1]!r} -> {v!r}", value[:-1] + [v]))
            for v in scalar_variants(items, value[-1])[:1]:
                out.append((f"item {v!r} added", value + [v]))
            if len(value) > s.get("minItems", 0):
                out.append((f"last item {value[-1]!r} dropped", value[:-1]))
        return out
    return [(f"{value!r} -> {v!r}", v) for v in scalar_variants(s, value)]


def field_kinds(schema, doc):
    """Every field kind of doc, in document order, with the places to edit it: where the spec
    writes it if it does anywhere, else where it may be added. A field of a few allowed values
    (an enum, or an object of them such as a pool's placement) is one kind per value:
    (kind, places, the value or None)."""
    out = []
    leaves(schema, doc, schema.root, "", [], out)
    written = {kind for kind, _, _, absent in out if not absent}
    kinds = {}
    for kind, path, s, absent in out:
        if absent and kind in written:
            continue
        kinds.setdefault(kind, []).append((path, s, absent))
    found = []
    for kind, places in kinds.items():
        path, s, absent = places[0]
        values = enum_values(schema, s, absent)
        if values:
            for v in values:
                found.append((f"{kind} = {json.dumps(v, sort_keys=True)}", places, v))
        else:
            found.append((kind, places, None))
    return found


def enum_values(schema, s, absent):
    """The values a field of a few allowed values may take (an enum, or an object whose one
    required field is one), or []."""
    r = schema.resolve(s, None)
    if "enum" in r and len(r["enum"]) <= MAX_ENUM:
        return list(r["enum"])
    if absent and r.get("type") == "object" and len(r.get("required", [])) == 1:
        options = minimal_values(schema, r)
        if 1 < len(options) <= MAX_ENUM:
            return options
    return []


def candidates(schema, doc, places, only=None):
    """(path, description, value) edits of one field kind, in the order they are tried."""
    for path, s, absent in places:
        current = None if absent else get_at(doc, path)
        for desc, value in edit_variants(schema, s, current, absent):
            if only is None or value == only:
                yield path, desc, value


# ---------------------------------------------------------------- compiling and judging

def dump(doc, path):
    with open(path, "w") as f:
        yaml.dump(doc, f, Dumper=Dumper, sort_keys=False, default_flow_style=False, width=1000)


def compile_spec(trainc, spec, out):
    """The output's k8s/ folder and the system name, or (None, first error line)."""
    shutil.rmtree(out, ignore_errors=True)
    r = subprocess.run([trainc, "compile", "-o", out, spec], capture_output=True, text=True)
    if r.returncode != 0:
        err = next((ln for ln in r.stderr.splitlines() if ": error:" in ln), r.stderr.strip()[:300])
        return None, err.split(": error: ", 1)[-1]
    systems = os.listdir(out)
    return os.path.join(out, systems[0], "k8s"), systems[0]


def folder_digest(folder):
    h = hashlib.sha256()
    for f in sorted(glob.glob(os.path.join(folder, "**", "*"), recursive=True)):
        if os.path.isfile(f):
            h.update(os.path.relpath(f, folder).encode() + b"\0")
            with open(f, "rb") as fh:
                h.update(fh.read())
    return h.hexdigest()


def load_objects(folder):
    """{(kind, namespace/name): object} of a k8s/ folder."""
    objs = {}
    for f in sorted(glob.glob(os.path.join(folder, "*.yaml"))):
        if os.path.basename(f) == "kustomization.yaml":
            continue
        with open(f) as fh:
            for o in yaml.load_all(fh, Loader=Loader):
                if not isinstance(o, dict):
                    continue
                md = o.get("metadata", {})
                ns = md.get("namespace")
                name = f"{ns}/{md.get('name')}" if ns else md.get("name")
                objs[(o.get("kind"), name)] = o
    return objs


def step_of(obj, system, steps):
    """The step whose run object obj is, or None."""
    labels = obj.get("metadata", {}).get("labels") or {}
    if "trainc.dev/step" in labels:
        return labels["trainc.dev/step"]
    if obj.get("kind") not in STEP_KINDS:
        return None
    step = labels.get("app.kubernetes.io/name")
    inst = labels.get("app.kubernetes.io/instance", "")
    if step in steps and (inst == f"{system}-{step}" or inst.startswith(f"{system}-{step}-")):
        return step
    return None


def workload_names(objs, system, steps):
    names = {}
    for (kind, name), o in objs.items():
        step = step_of(o, system, steps)
        if step is not None and kind in WORKLOAD_KINDS:
            names.setdefault(step, set()).add(name.split("/")[-1])
    return names


def parse_oracle(text):
    """[(kind, name, [detail lines])] of the refused objects, and the summary line."""
    refused, current, summary = [], None, ""
    for line in text.splitlines():
        m = re.match(r"^REFUSED\s+(\S+)\s+(\S+)\s", line)
        if m:
            current = (m.group(1), m.group(2), [])
            refused.append(current)
        elif line.startswith(" ") and current is not None:
            current[2].append(line.strip())
        else:
            current = None
            if re.match(r"^\d+ refused,", line):
                summary = line
    return refused, summary


def run_oracle(oracle, old, new, kueue=None):
    cmd = [os.path.join(oracle, "k8s-update-check")]
    if kueue:
        cmd += ["--kueue", kueue]
    r = subprocess.run(cmd + [old, new], capture_output=True, text=True)
    if r.returncode not in (0, 1):
        return None, f"k8s-update-check exited {r.returncode}: {(r.stderr or r.stdout).strip()[:500]}"
    return parse_oracle(r.stdout), r.stdout


class Example:
    def __init__(self, spec_path):
        self.spec_path = spec_path
        self.name = os.path.basename(os.path.dirname(spec_path))
        with open(spec_path) as f:
            self.doc = yaml.load(f, Loader=Loader)
        self.steps = {s["name"] for s in self.doc.get("pipeline") or []}


def judge_example(args, schema, ex, work):
    """Every edit of one example: a list of result dicts (and the OLD output's problem, if any)."""
    src = os.path.dirname(ex.spec_path)
    base = os.path.join(work, ex.name)
    old_dir = os.path.join(base, "old")
    shutil.copytree(src, old_dir)
    dump(ex.doc, os.path.join(old_dir, "spec.yaml"))
    old_k8s, system = compile_spec(args.trainc, os.path.join(old_dir, "spec.yaml"), os.path.join(base, "old-out"))
    if old_k8s is None:
        return [{"example": ex.name, "kind": "(unedited)", "status": "error", "lines": [f"the unedited spec does not compile: {system}"]}]
    old_objs = load_objects(old_k8s)
    old_workloads = workload_names(old_objs, system, ex.steps)
    kueue = any(k == "LocalQueue" for k, _ in old_objs)
    results = []
    new_dir = os.path.join(base, "new")
    shutil.copytree(src, new_dir)
    old_digest = folder_digest(old_k8s)
    for i, (kind, places, only) in enumerate(field_kinds(schema, ex.doc)):
        # On the server: only the first --sample edits that change k8s/ are compiled and judged.
        if args.server and sum(1 for r in results if r.get("status") == "ok") >= args.sample:
            break
        res = {"example": ex.name, "kind": kind, "path": show_path(places[0][0]), "lines": []}
        results.append(res)
        tried = []
        new_k8s = None
        out = os.path.join(base, f"new-out-{i}")
        # The first edit that compiles and changes k8s/, else the first that compiles; at most
        # MAX_TRIES compiles per field kind.
        first = None
        for n, (path, desc, value) in enumerate(candidates(schema, ex.doc, places, only)):
            if n == MAX_TRIES:
                break
            doc = copy.deepcopy(ex.doc)
            set_at(doc, path, value)
            dump(doc, os.path.join(new_dir, "spec.yaml"))
            k8s, sys_or_err = compile_spec(args.trainc, os.path.join(new_dir, "spec.yaml"), out)
            if k8s is None:
                tried.append(f"{show_path(path)}: {desc}: {sys_or_err}")
                continue
            if first is None:
                first = (path, desc, value)
            if folder_digest(k8s) != old_digest:
                new_k8s, new_system = k8s, sys_or_err
                res["path"], res["edit"] = show_path(path), desc
                break
        if new_k8s is None and first is not None:
            doc = copy.deepcopy(ex.doc)
            set_at(doc, first[0], first[2])
            dump(doc, os.path.join(new_dir, "spec.yaml"))
            new_k8s, new_system = compile_spec(args.trainc, os.path.join(new_dir, "spec.yaml"), out)
            res["path"], res["edit"] = show_path(first[0]), first[1]
        if new_k8s is None:
            res["status"] = "skip"
            res["lines"] = tried[:1] if tried else ["no edit of this field kind"]
            continue
        if folder_digest(new_k8s) == old_digest:
            res["status"] = "same"
            continue
        new_objs = load_objects(new_k8s)
        new_workloads = workload_names(new_objs, new_system, ex.steps)
        # A step whose workload has another name after the edit (the system keeping its name): a run
        # named by its content.
        res["renamed_runs"] = sorted(st for st in old_workloads if new_system == system and st in new_workloads
                                     and old_workloads[st] != new_workloads[st])
        res["run_label"] = any("trainc.dev/run" in ((o.get("metadata") or {}).get("labels") or {})
                               for o in list(old_objs.values()) + list(new_objs.values()))
        res["created"] = sorted(f"{k} {n}" for k, n in new_objs if (k, n) not in old_objs)
        res["left"] = sorted(f"{k} {n}" for k, n in old_objs if (k, n) not in new_objs)
        # KubeRay accepts a changed RayJob and never submits it again once it ran
        # (rayjob_controller.go): an edited Ray step must be a new RayJob, not an update.
        res["ray_in_place"] = sorted(n for (k, n), o in new_objs.items() if k == "RayJob" and (k, n) in old_objs
                                     and old_objs[(k, n)].get("spec") != o.get("spec"))
        res["updated"] = sorted({k for (k, n), o in new_objs.items()
                                 if (k, n) in old_objs and old_objs[(k, n)] != o and step_of(o, system, ex.steps) is None})
        res["new_objs"] = new_objs
        res["judged"] = []
        res["status"] = "ok"
    for r in results:
        r["system"], r["steps"] = system, ex.steps
    judge_batch(args, ex, system, old_objs, [r for r in results if r["status"] == "ok"], kueue, base)
    if not args.server:
        for r in results:
            r.pop("new_objs", None)
    return results


def renamed(obj, tag):
    """obj in edit `tag`'s own namespace (or, cluster-scoped, under its own name): the edits of an
    example are judged in one oracle run without meeting each other."""
    o = copy.deepcopy(obj)
    md = o.setdefault("metadata", {})
    if o.get("kind") == "Namespace" or not md.get("namespace"):
        md["name"] = f"{tag}--{md.get('name')}"
    else:
        md["namespace"] = f"{tag}--{md['namespace']}"
    return o


def original(name):
    """The object name the oracle prints, and the edit it belongs to."""
    m = re.match(r"^(e\d+)--(.*)$", name)
    if m:
        return m.group(1), m.group(2)
    ns, _, rest = name.partition("/")
    m = re.match(r"^(e\d+)--(.*)$", ns)
    return (m.group(1), f"{m.group(2)}/{rest}") if m else (None, name)


def judge_batch(args, ex, system, old_objs, results, kueue, base):
    """Runs the oracle once (twice with Kueue: admitted and pending) on every changed edit of one
    example, each edit's OLD and NEW objects moved to names of its own."""
    if not results:
        return
    old_all, new_all = os.path.join(base, "batch-old"), os.path.join(base, "batch-new")
    os.makedirs(old_all)
    os.makedirs(new_all)
    by_tag = {}
    for i, r in enumerate(results):
        tag = f"e{i}"
        by_tag[tag] = r
        with open(os.path.join(old_all, f"{tag}.yaml"), "w") as f:
            yaml.dump_all([renamed(o, tag) for o in old_objs.values()], f, Dumper=Dumper, sort_keys=False)
        with open(os.path.join(new_all, f"{tag}.yaml"), "w") as f:
            yaml.dump_all([renamed(o, tag) for o in r["new_objs"].values()], f, Dumper=Dumper, sort_keys=False)
    if args.server:
        judge_on_server(args, ex, system, by_tag, old_all, new_all)
    for mode in ([None, "pending"] if kueue else [None]):
        parsed, text = run_oracle(args.oracle, old_all, new_all, mode)
        if parsed is None:
            for r in results:
                r["status"], r["lines"] = "error", [text]
            return
        refused, _ = parsed
        for okind, oname, detail in refused:
            tag, name = original(oname)
            r = by_tag.get(tag)
            if r is None:
                continue
            obj = old_objs.get((okind, name)) or r["new_objs"].get((okind, name)) or {}
            r["judged"].append({"mode": mode or "admitted", "kind": okind, "name": name,
                                "step": step_of(obj, system, ex.steps), "detail": detail})
            r["status"] = "refused"


# ---------------------------------------------------------------- the real API server

def json_objects(text):
    """The objects kubectl printed with -o json: one, a List, or several one after another."""
    out, at, dec = [], 0, json.JSONDecoder()
    while True:
        while at < len(text) and text[at].isspace():
            at += 1
        if at >= len(text):
            return out
        try:
            o, at = dec.raw_decode(text, at)
        except ValueError:
            return out
        out.extend(o.get("items", []) if o.get("kind") == "List" else [o])


def judge_on_server(args, ex, system, by_tag, old_all, new_all):
    """The first --sample edits of by_tag: OLD applied, NEW dry-run applied, refusals in r["server"]."""
    kubectl, kc = args.server
    k = [kubectl, "--kubeconfig", kc]
    tags = sorted(by_tag, key=lambda t: int(t[1:]))[:args.sample]

    def said(text):
        return " ".join(ln for ln in text.splitlines() if ln.strip() and not ln.startswith("Warning:"))

    for tag in tags:
        res = by_tag[tag]
        # Every namespace the objects name, old and new, made first (apply.sh makes the system's
        # before anything in it; a dry run would not keep it; some systems run in one they do not make).
        namespaces = set()
        for f in (os.path.join(old_all, f"{tag}.yaml"), os.path.join(new_all, f"{tag}.yaml")):
            with open(f) as fh:
                for o in yaml.load_all(fh, Loader=Loader):
                    if isinstance(o, dict):
                        md = o.get("metadata") or {}
                        if o.get("kind") == "Namespace":
                            namespaces.add(md.get("name"))
                        elif md.get("namespace"):
                            namespaces.add(md["namespace"])
        for ns in sorted(namespaces):
            subprocess.run(k + ["create", "namespace", ns], capture_output=True, text=True)
        r = subprocess.run(k + ["apply", "-f", os.path.join(old_all, f"{tag}.yaml")], capture_output=True, text=True)
        if r.returncode != 0:
            res["server"] = [("(old)", "", [f"the unedited objects cannot be applied: {said(r.stderr)[:600]}"])]
            continue
        r = subprocess.run(k + ["apply", "--dry-run=server", "-o", "json", "-f", os.path.join(new_all, f"{tag}.yaml")],
                           capture_output=True, text=True)
        accepted = set()
        for o in json_objects(r.stdout):
            md = o.get("metadata", {})
            full = f"{md['namespace']}/{md.get('name')}" if md.get("namespace") else md.get("name")
            accepted.add((o.get("kind"), original(full)[1]))
        errors = [ln for ln in r.stderr.splitlines() if ln.strip() and not ln.startswith("Warning:")]
        res["server"] = []
        for (kind, name), o in res["new_objs"].items():
            if (kind, name) in accepted:
                continue
            short = name.split("/")[-1]
            said = [e for e in errors if f'"{tag}--{short}"' in e or f'"{short}"' in e] or errors[:2] or ["(no message)"]
            res["server"].append((kind, name, said[:3]))


def report_server(results, n):
    """TAP lines for the edits judged on the real API server; returns the last number and failures."""
    failed = 0
    for r in results:
        if "server" not in r:
            continue
        n += 1
        label = f"{r['example']}: {r['kind']} at {r.get('path', '')}, {r.get('edit', '')}, on the real API server".replace("#", "no.")
        oracle = {(j["kind"], j["name"]) for j in r.get("judged", [])}
        problems, notes = [], []
        for kind, name, said in r["server"]:
            obj = r["new_objs"].get((kind, name)) or {}
            step = step_of(obj, r["system"], r["steps"]) if obj else None
            if step is None:
                problems.append(f"REFUSED {kind} {name} (not a step's run): {' | '.join(said)[:500]}")
            elif (kind, name) not in oracle:
                problems.append(f"REFUSED {kind} {name} [step '{step}'], which the oracle accepts: {' | '.join(said)[:500]}")
            else:
                notes.append(f"refused {kind} {name} [step '{step}'], as the oracle says")
        served = {(kind, name) for kind, name, _ in r["server"]}
        for kind, name in sorted(oracle - served):
            notes.append(f"the oracle refuses {kind} {name}; the server accepts it (its workload may not be admitted here)")
        failed += 1 if problems else 0
        print(f"{'not ok' if problems else 'ok'} {n} - {label}")
        for ln in problems + notes:
            print(f"# {ln}")
    return n, failed


# ---------------------------------------------------------------- the planted failure

def planted_refusal(args, work):
    """A Deployment whose selector changed must be read as a refused non-step object."""
    base = os.path.join(work, "planted")
    src = os.path.join(ROOT, "examples", "vllm-l4")
    shutil.copytree(src, base)
    old_k8s, system = compile_spec(args.trainc, os.path.join(base, "spec.yaml"), os.path.join(work, "planted-old"))
    if old_k8s is not None and not os.path.exists(os.path.join(work, "planted-old-k8s")):
        shutil.copytree(old_k8s, os.path.join(work, "planted-old-k8s"))
    if old_k8s is None:
        return False, [f"vllm-l4 does not compile: {system}"]
    new_k8s = os.path.join(work, "planted-new")
    shutil.copytree(old_k8s, new_k8s)
    changed = False
    for f in glob.glob(os.path.join(new_k8s, "*-deployment.yaml")):
        with open(f) as fh:
            docs = list(yaml.load_all(fh, Loader=Loader))
        for d in docs:
            if isinstance(d, dict) and d.get("kind") == "Deployment":
                d["spec"]["selector"]["matchLabels"]["planted"] = "x"
                d["spec"]["template"]["metadata"]["labels"]["planted"] = "x"
                changed = True
        with open(f, "w") as fh:
            yaml.dump_all(docs, fh, Dumper=Dumper, sort_keys=False)
    parsed, text = run_oracle(args.oracle, old_k8s, new_k8s)
    if parsed is None:
        return False, [text]
    refused, _ = parsed
    objs = load_objects(old_k8s)
    non_step = [(k, n) for k, n, _ in refused if step_of(objs.get((k, n), {}), system, set()) is None]
    if changed and any(k == "Deployment" for k, _ in non_step):
        return True, []
    return False, ["the planted selector change was not read as a refused Deployment:"] + text.splitlines()[:20]


def planted_on_server(args, work):
    """The planted selector change (planted_refusal's folders) on the real API server: the dry run
    must refuse the Deployment, or judge_on_server cannot see a refusal."""
    old_objs, new_objs = load_objects(os.path.join(work, "planted-old-k8s")), load_objects(os.path.join(work, "planted-new"))
    old_all, new_all = os.path.join(work, "planted-server-old"), os.path.join(work, "planted-server-new")
    for d, objs in ((old_all, old_objs), (new_all, new_objs)):
        os.makedirs(d, exist_ok=True)
        with open(os.path.join(d, "e999.yaml"), "w") as f:
            yaml.dump_all([renamed(o, "e999") for o in objs.values()], f, Dumper=Dumper, sort_keys=False)
    res = {"new_objs": new_objs}
    judge_on_server(args, None, None, {"e999": res}, old_all, new_all)
    refused = [(k, n) for k, n, _ in res.get("server", [])]
    if any(k == "Deployment" for k, _ in refused):
        return True, []
    return False, [f"the server refused {refused or 'nothing'} of the planted selector change"] + \
        [ln for _, _, said in res.get("server", []) for ln in said][:5]


# ---------------------------------------------------------------- TAP

def contract_in(results):
    forced = os.environ.get("TRAINC_STEP_RUNS_CONTENT_NAMED")
    if forced in ("0", "1"):
        return forced == "1", f"TRAINC_STEP_RUNS_CONTENT_NAMED={forced}"
    for r in results:
        if r.get("run_label"):
            return True, "step workloads carry trainc.dev/run"
        if r.get("renamed_runs"):
            return True, f"{r['example']}: editing {r['path']} renamed the run of {', '.join(r['renamed_runs'])}"
    return False, "no step workload is named by its content yet"


def report(results, named, why, n=0):
    """Prints a TAP line per result, numbered after n; returns the last number, failures, counts."""
    failed = 0
    counts = {"ok": 0, "same": 0, "refused-step": 0, "refused-other": 0, "ray-in-place": 0, "skip": 0, "error": 0}
    for r in results:
        n += 1
        label = f"{r['example']}: {r['kind']}"
        if r.get("path"):
            label += f" at {r['path']}"
        if r.get("edit"):
            label += f", {r['edit']}"
        label = label.replace("#", "no.")
        status = r["status"]
        if status == "skip":
            counts["skip"] += 1
            print(f"ok {n} - {label} # SKIP no variant compiles: {r['lines'][0][:200]}")
            continue
        if status == "same":
            counts["ok"] += 1
            counts["same"] += 1
            print(f"ok {n} - {label} (k8s/ unchanged)")
            continue
        if status == "error":
            counts["error"] += 1
            failed += 1
            print(f"not ok {n} - {label}")
            for ln in r["lines"]:
                print(f"# {ln}")
            continue
        if status == "ok" and r.get("ray_in_place"):
            counts["ray-in-place"] += 1
            if named:
                failed += 1
            suffix = "" if named else " # TODO a changed RayJob under its old name: step runs are not named by their content yet"
            print(f"not ok {n} - {label}{suffix}")
            print(f"# RayJob {', '.join(r['ray_in_place'])} changed under its old name: KubeRay accepts it and never "
                  "submits a finished job again")
            print_moves(r)
            continue
        if status == "ok":
            counts["ok"] += 1
            print(f"ok {n} - {label}")
            print_moves(r)
            continue
        other = [j for j in r["judged"] if j["step"] is None]
        steps = [j for j in r["judged"] if j["step"] is not None]
        if other:
            counts["refused-other"] += 1
        else:
            counts["refused-step"] += 1
        todo = not other and not named
        if not todo:
            failed += 1
        suffix = " # TODO refused step run objects: step runs are not named by their content yet" if todo else ""
        print(f"not ok {n} - {label}{suffix}")
        for j in other + steps:
            who = f"step '{j['step']}'" if j["step"] else "not a step"
            print(f"# REFUSED ({j['mode']}) {j['kind']} {j['name']} [{who}]")
            for d in j["detail"][:4]:
                print(f"#   {d}")
        print_moves(r)
    return n, failed, counts


def print_moves(r):
    """The objects an edit creates and leaves behind (kubectl apply prunes nothing by itself)."""
    for what, key in (("created", "created"), ("left behind", "left")):
        if r.get(key):
            more = f" and {len(r[key]) - 4} more" if len(r[key]) > 4 else ""
            print(f"# {what}: {', '.join(r[key][:4])}{more}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("trainc")
    ap.add_argument("--oracle")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--example", action="append")
    ap.add_argument("--list", action="store_true")
    ap.add_argument("--keep")
    ap.add_argument("--server", nargs=2, metavar=("KUBECTL", "KUBECONFIG"))
    ap.add_argument("--sample", type=int, default=3)
    args = ap.parse_args()
    args.trainc = os.path.abspath(args.trainc) if os.sep in args.trainc else shutil.which(args.trainc)
    schema = Schema(SCHEMA)
    specs = sorted(glob.glob(os.path.join(ROOT, "examples", "*", "spec.yaml")))
    examples = [Example(p) for p in specs]
    if args.example:
        examples = [e for e in examples if e.name in args.example]
    if args.list:
        for ex in examples:
            for kind, places, only in field_kinds(schema, ex.doc):
                first = next(candidates(schema, ex.doc, places, only), None)
                print(f"{ex.name}\t{kind}\t{show_path(first[0]) if first else ''}\t{first[1] if first else '(no edit)'}")
        return 0
    oracle = args.oracle or os.environ.get("TRAINC_ORACLE_DIR") or os.path.join(os.path.dirname(ROOT), "shared", "oracle")
    args.oracle = os.path.abspath(oracle)
    if not os.access(os.path.join(args.oracle, "k8s-update-check"), os.X_OK):
        why = f"the update oracle is not at {args.oracle}"
        if os.environ.get("TRAINC_REQUIRE_ORACLES") == "1" or os.path.isdir(args.oracle):
            print(f"not ok 1 - day-2 corpus: {why}")
            print("1..1")
            return 1
        print(f"ok 1 - day-2 corpus # SKIP {why}")
        print("1..1")
        return 0
    # Some thousand small files are written and removed: in memory where the machine offers it.
    shm = "/dev/shm" if not os.environ.get("TMPDIR") and os.access("/dev/shm", os.W_OK) else None
    work = args.keep or tempfile.mkdtemp(prefix="trainc-day2.", dir=shm)
    os.makedirs(work, exist_ok=True)
    try:
        planted_ok, planted_lines = planted_refusal(args, work)
        if args.server and planted_ok:
            server_ok, server_lines = planted_on_server(args, work)
        with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
            futures = [pool.submit(judge_example, args, schema, ex, work) for ex in examples]
            results = [r for f in futures for r in f.result()]
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
    named, why = contract_in(results)
    print(f"{'ok' if planted_ok else 'not ok'} 1 - the judge reads a planted Deployment selector change as a refused non-step object")
    for ln in planted_lines:
        print(f"# {ln}")
    if args.server:
        server_ok = server_ok if planted_ok else False
        print(f"{'ok' if server_ok else 'not ok'} 2 - the real API server refuses the planted Deployment selector change "
              "in a dry run, and the judge reads it")
        for ln in (server_lines if planted_ok else ["the planted change was not made"]):
            print(f"# {ln}")
        failed_server_planted = 0 if server_ok else 1
    print(f"# step runs content-named: {'yes' if named else 'no'} ({why})")
    n, failed, counts = report(results, named, why, 2 if args.server else 1)
    failed += (0 if planted_ok else 1) + (failed_server_planted if args.server else 0)
    if args.server:
        n, server_failed = report_server(results, n)
        failed += server_failed
    print(f"# {len(examples)} examples, {len(results)} field kinds: {counts['ok']} ok ({counts['same']} with k8s/ unchanged), "
          f"{counts['refused-step']} refused on step run objects only, {counts['refused-other']} refused on other objects, "
          f"{counts['ray-in-place']} accepted with a RayJob changed under its old name, "
          f"{counts['skip']} skipped (no variant compiles), {counts['error']} errors")
    updated = {}
    for r in results:
        for k in r.get("updated", []):
            updated[k] = updated.get(k, 0) + 1
    print("# edits that update objects other than step runs in place, by kind: " +
          (", ".join(f"{k} {c}" for k, c in sorted(updated.items())) or "none"))
    print(f"1..{n}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
