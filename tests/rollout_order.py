#!/usr/bin/env python3
"""The rollout as the runbook (README.md) and scripts/apply.sh each carry it out, compared.

Usage: rollout_order.py OUT_DIR APPLY_TRACE DOWN_TRACE

OUT_DIR is a compiled system's folder; APPLY_TRACE and DOWN_TRACE are what `scripts/apply.sh
--dry-run` and `scripts/down.sh --dry-run` printed (their `+ command` lines). Both documents are
read as a sequence of events: a chart installed, a manifest applied, a k8s/ file applied, a rollout
waited for, an object waited for, a store folder filled, an image looked for. The runbook's sequence must be apply.sh's,
and the first thing each tears down must be the same. Prints both sequences and exits 1 when they differ.
"""
import re
import shlex
import sys


def events(commands):
    """The rollout events of kubectl and helm command lines (each a list of words)."""
    out = []
    for words in commands:
        if words[:1] == ["kubectl"] and words[1:2] == ["--context"]:
            words = ["kubectl"] + words[3:]
        if words[:3] == ["helm", "upgrade", "--install"]:
            out.append("chart " + words[3])
        elif words[:2] == ["kubectl", "apply"]:
            args = words[2:]
            for i, w in enumerate(args):
                if w != "-f":
                    continue
                target = args[i + 1]
                if target.startswith("https://"):
                    out.append("manifest " + target)
                else:
                    out.append("file " + target.rsplit("/", 1)[-1])
        elif words[:3] == ["kubectl", "rollout", "status"]:
            out.append("rollout " + next(w for w in words[3:] if "/" in w))
        elif words[:3] == ["gcloud", "storage", "rsync"]:
            out.append("upload to " + words[-1])
        elif words[:5] == ["gcloud", "artifacts", "docker", "images", "describe"]:
            out.append("image " + words[5])
        elif words[:2] == ["kubectl", "wait"] and "deployment" not in words[2:3]:
            ref = next(w for w in words[2:] if "/" in w and not w.startswith("--"))
            out.append("wait " + ref)
    return out


def runbook_blocks(text, heading):
    """The commands of the first ```sh block under `heading`, as word lists; commands chained with
    `&&` (one per line, the line ending in `&&`) or `||` (a step's run applied where a guard finds
    none) are listed one by one, without their redirections."""
    at = text.find("\n" + heading + "\n")
    if at < 0:
        return None
    block = re.search(r"```sh\n(.*?)```", text[at:], re.S)
    lines = [l for l in block.group(1).splitlines() if l and not l.startswith("#")]
    commands = []
    for line in lines:
        current = []
        for word in shlex.split(line, comments=True):
            if word in (">/dev/null", "2>&1"):
                continue
            if word in ("&&", "||"):
                if current:
                    commands.append(current)
                current = []
            else:
                current.append(word)
        if current:
            commands.append(current)
    return commands


def traced(path):
    """The `+ command` lines a dry run printed, as word lists."""
    with open(path) as f:
        return [shlex.split(l[2:]) for l in f.read().splitlines() if l.startswith("+ ")]


def main():
    out_dir, apply_trace, down_trace = sys.argv[1:]
    with open(out_dir + "/README.md") as f:
        readme = f.read()
    apply = traced(apply_trace)
    up = runbook_blocks(readme, "## Apply")
    script = events(apply)
    if [w[:3] for w in up if w[:1] != ["gcloud"]] == [["kubectl", "apply", "-k"]]:
        # One `apply -k` after the checks: nothing to wait for or install first, so apply.sh may
        # only check and apply files.
        book = [e for e in events(up) if not e.startswith("file ")] + [e for e in script if e.startswith("file ")]
    else:
        book = events(up)
    ok = book == script
    # Teardown: the runbook's first helm uninstall is the first thing down.sh deletes when it
    # uninstalls a chart at all (the gateway's load balancer, before the cluster goes).
    down = [w for w in traced(down_trace) if w[:2] == ["helm", "uninstall"]]
    book_down = [w for w in runbook_blocks(readme, "## Tear down") if w[:1] in (["helm"], ["kubectl"])]
    if down:
        first = book_down[0] if book_down else []
        if first[:3] != down[0][:3]:
            print(f"down.sh uninstalls {down[0][2]} first; the runbook tears down with: {' '.join(first)}")
            ok = False
    print("runbook:  " + "\n          ".join(book))
    print("apply.sh: " + "\n          ".join(script))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
