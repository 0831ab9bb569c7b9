#!/usr/bin/env python3
"""Runs a Markdown tutorial's commands and compares the outputs it quotes.

The tutorial is read top to bottom, in one empty working folder:
  - a block fenced ```yaml file=NAME (any language, `file=` names the file) writes NAME;
  - a block fenced ```console holds commands, each a line `$ COMMAND`, followed by the output it
    prints (stdout and stderr together); the command runs with bash in the working folder, with
    the trainc under test first on PATH;
  - an HTML comment `<!-- exit N -->` (invisible when rendered) on the line before a console block
    says its commands exit with status N; otherwise they must exit 0.

Usage: tutorial.py TRAINC TUTORIAL.md            print a report; exit 1 on any mismatch
       tutorial.py TRAINC TUTORIAL.md --update   rewrite the quoted outputs with what the commands print
"""
import difflib
import os
import re
import shutil
import subprocess
import sys
import tempfile

FENCE = re.compile(r"^```(\S*)(.*)$")
EXIT = re.compile(r"^<!-- exit (\d+) -->$")
FILE = re.compile(r"\bfile=(\S+)")


def blocks(lines):
    """Yields (kind, start, end, info, expected_exit): fenced blocks, start/end the fence lines' indexes."""
    i, expected_exit = 0, 0
    while i < len(lines):
        m = EXIT.match(lines[i])
        if m:
            expected_exit = int(m.group(1))
            i += 1
            continue
        m = FENCE.match(lines[i])
        if not m:
            if lines[i].strip():
                expected_exit = 0
            i += 1
            continue
        end = i + 1
        while end < len(lines) and lines[end] != "```":
            end += 1
        if end == len(lines):
            raise SystemExit(f"line {i + 1}: the block opened here is not closed")
        yield m.group(1), i, end, m.group(2), expected_exit
        expected_exit = 0
        i = end + 1


def commands(body):
    """Splits a console block's lines into [(command, [expected output lines])]."""
    out = []
    for line in body:
        if line.startswith("$ "):
            out.append((line[2:], []))
        elif not out:
            raise SystemExit(f"a console block starts with output, not a '$ ' command: {line!r}")
        else:
            out[-1][1].append(line)
    return out


def main():
    if len(sys.argv) not in (3, 4) or (len(sys.argv) == 4 and sys.argv[3] != "--update"):
        raise SystemExit(__doc__)
    trainc, doc, update = os.path.abspath(sys.argv[1]), sys.argv[2], len(sys.argv) == 4
    with open(doc, encoding="utf-8") as f:
        lines = f.read().split("\n")
    work = tempfile.mkdtemp(prefix="tutorial.")
    bindir = os.path.join(work, ".bin")
    os.mkdir(bindir)
    os.symlink(trainc, os.path.join(bindir, "trainc"))
    env = dict(os.environ, PATH=bindir + os.pathsep + os.environ["PATH"], LC_ALL="C.UTF-8", NO_COLOR="1")
    failures, ran, replacements = 0, 0, []
    for kind, start, end, info, expected_exit in blocks(lines):
        body = lines[start + 1:end]
        name = FILE.search(info)
        if name:
            path = os.path.join(work, name.group(1))
            if os.path.dirname(path):
                os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "w", encoding="utf-8") as f:
                f.write("\n".join(body) + "\n")
            continue
        if kind != "console":
            continue
        new_body = []
        for command, expected in commands(body):
            ran += 1
            proc = subprocess.run(["bash", "-c", command], cwd=work, env=env, stdout=subprocess.PIPE,
                                  stderr=subprocess.STDOUT, text=True, check=False)
            actual = proc.stdout.rstrip("\n").split("\n") if proc.stdout.strip("\n") else []
            new_body += ["$ " + command] + actual
            where = f"{doc}:{start + 1}"
            if proc.returncode != expected_exit:
                failures += 1
                print(f"not ok: `{command}` at {where} exited {proc.returncode}, the tutorial says {expected_exit}")
                print("\n".join(actual))
            elif actual != expected and not update:
                failures += 1
                print(f"not ok: `{command}` at {where} printed something else than the tutorial quotes:")
                sys.stdout.writelines(l + "\n" for l in difflib.unified_diff(expected, actual, "quoted", "printed",
                                                                           lineterm=""))
        replacements.append((start + 1, end, new_body))
    if update:
        for first, last, new_body in reversed(replacements):
            lines[first:last] = new_body
        with open(doc, "w", encoding="utf-8") as f:
            f.write("\n".join(lines))
    print(f"{doc}: {ran} commands run, {failures} differ from the tutorial")
    shutil.rmtree(work, ignore_errors=True)
    return 1 if failures or ran == 0 else 0


if __name__ == "__main__":
    sys.exit(main())
