#!/usr/bin/env python3
"""`trainc diff --live` on the test cluster: what it said, against what the cluster holds and what
applying then did.

  live.py empty DIFF.json STEPS
      on a cluster without the system: every object of the output is created (none refused), and
      every step (comma-separated STEPS) runs.
  live.py none DIFF.json
      nothing would change: every object unchanged (or kept), no step runs, no drift.
  live.py drift DIFF.json KIND/NAME...
      the drift names exactly these objects, and nothing else changes but putting them back.
  live.py left DIFF.json KIND/NAME...
      the drift names exactly these objects, each field one that applying leaves (set by hand where
      the output sets nothing), and applying changes nothing.
  live.py refused DIFF.json KIND/NAME
      the server refuses exactly that object, and diff --live says so with the server's words.
  live.py versions KUBECTL KUBECONFIG NAMESPACE
      every object of the namespace and Kueue's cluster-scoped ones, as "KIND/NAME RESOURCEVERSION"
      lines: the same before and after diff --live means it wrote nothing.

--read-only before a check: the diff was made with credentials that may only read (RBAC refuses
every dry run that would write), or with --read-only, so where anything changes its notes must
say it was read-only, and a refusal is trainc's rules' word (that the field cannot change in
place), not the server's.

Each prints one problem per line and exits 1 when there is one.
"""
import json
import subprocess
import sys


def load(path):
    with open(path) as f:
        return json.load(f)


def ref(o):
    return f"{o['kind']}/{o['name']}"


def main():
    read_only = sys.argv[1] == "--read-only"
    what, args = sys.argv[2 if read_only else 1], sys.argv[3 if read_only else 2:]
    problems = []
    if what == "versions":
        k, kc, ns = args
        out = subprocess.run([k, "--kubeconfig", kc, "api-resources", "--verbs=list", "-o", "name"],
                             capture_output=True, text=True, check=True).stdout.split()
        lines = []
        for t in out:
            if t in ("events", "events.events.k8s.io", "leases.coordination.k8s.io", "endpoints",
                     "endpointslices.discovery.k8s.io", "componentstatuses"):
                continue  # written by the cluster itself all the time
            r = subprocess.run([k, "--kubeconfig", kc, "get", t, "-A", "-o", "json"], capture_output=True, text=True)
            if r.returncode != 0:
                continue
            for o in json.loads(r.stdout)["items"]:
                m = o["metadata"]
                if m.get("namespace", ns) != ns and not t.endswith("kueue.x-k8s.io"):
                    continue
                lines.append(f"{o['kind']}/{m.get('namespace', '')}/{m['name']} {m.get('resourceVersion')}")
        print("\n".join(sorted(lines)))
        return 0
    d = load(args[0])
    objects = d["objects"]
    said_read_only = any("may not make a server-side dry run" in n or "read-only (--read-only)" in n
                         for n in d.get("notes", []))
    # kubectl's apply sends no request for an object it finds unchanged: where applying changes
    # nothing (drift it leaves aside), no dry run is refused, and the answer is the server's.
    changes = any(o["action"] not in ("unchanged", "keep") for o in objects)
    if read_only and changes and not said_read_only:
        problems.append(f"made with read-only credentials, but the notes do not say so: {d.get('notes')}")
    if not read_only and said_read_only:
        problems.append(f"made with credentials that may write, but the notes say read-only: {d.get('notes')}")
    if what == "empty":
        steps = [s for s in args[1].split(",") if s]
        for o in objects:
            if o["action"] not in ("create", "rerun"):
                problems.append(f"{ref(o)}: {o['action']} on a cluster without the system ({o['detail']})")
        runs = [r["step"] for r in d["runs"]]
        if runs != steps:
            problems.append(f"steps that run: {runs}, expected {steps}")
        if d["drift"]:
            problems.append(f"drift on a cluster without the system: {[ref(x) for x in d['drift']]}")
    elif what == "none":
        for o in objects:
            if o["action"] not in ("unchanged", "keep"):
                problems.append(f"{ref(o)}: {o['action']} ({o['detail']}), though nothing changed since the apply")
        if d["runs"]:
            problems.append(f"steps that run: {[r['step'] for r in d['runs']]}, though nothing changed")
        for x in d["drift"]:
            problems.append(f"drift in {ref(x)}: {x['fields']}, though nothing changed by hand")
    elif what == "drift":
        want = set(args[1:])
        got = {ref(x) for x in d["drift"]}
        for x in sorted(want - got):
            problems.append(f"{x} was changed by hand, but diff --live names no drift in it")
        for x in sorted(got - want):
            problems.append(f"diff --live names drift in {x}, which no one changed")
        for o in objects:
            if o["action"] not in ("unchanged", "keep") and ref(o) not in want:
                problems.append(f"{ref(o)}: {o['action']} ({o['detail']}), though only {sorted(want)} changed")
    elif what == "left":
        want = set(args[1:])
        got = {ref(x) for x in d["drift"]}
        if got != want:
            problems.append(f"drift in {sorted(got)}, expected {sorted(want)}")
        for x in d["drift"]:
            for f in x["fields"]:
                if "leaves it" not in f:
                    problems.append(f"{ref(x)}: {f}: a field added by hand is one applying leaves")
        for o in objects:
            if o["action"] not in ("unchanged", "keep"):
                problems.append(f"{ref(o)}: {o['action']} ({o['detail']}), though applying changes nothing")
    elif what == "refused":
        want = args[1]
        got = [ref(o) for o in objects if o["action"] == "refused"]
        if got != [want]:
            problems.append(f"refused: {got}, expected [{want}]")
        words = "cannot change in place" if read_only else "field is immutable"
        for o in objects:
            if ref(o) == want and words not in o["detail"]:
                problems.append(f"{want}: the detail does not say '{words}': {o['detail']}")
        # Made again by hand: no record of an apply, which the drift says.
        if not any(ref(x) == want and "no record of an apply" in " ".join(x["fields"]) for x in d["drift"]):
            problems.append(f"{want} was made by hand, but the drift does not say so: {d['drift']}")
    else:
        print(f"live.py: no such check: {what}", file=sys.stderr)
        return 2
    for p in problems:
        print(p)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
