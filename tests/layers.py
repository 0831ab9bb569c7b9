#!/usr/bin/env python3
"""Includes point down: every compiler source includes only headers of its own layer or below.

The layers, lowest first (docs/design.md, "Layers"). A folder not listed here is an error, so a new
folder has to be placed before it can be used.

Usage: tests/layers.py [ROOT]   prints each include that points up and exits 1 when there is one.
"""
import pathlib
import re
import sys

# Lowest first. A file may include headers from its own layer and any layer before it.
LAYERS = [
    ("common", "what the compiler and trainrt share: hashing, units"),
    ("base", "diagnostics, YAML trees and writing, the output sink and the generated-file notice"),
    ("frontend", "reading specs: YAML, Jsonnet, the schema"),
    ("model", "the typed model, lowering, the catalog; each kind's facts"),
    ("quoting", "shell and kubelet quoting"),
    ("commands", "command lines: trainrt, Dask, gcloud, kubectl, helm"),
    ("k8s", "Kubernetes names, the object plan and the object builders, the entry script"),
    ("checks", "semantic checks over the model"),
    ("inspect", "plan, graph and explain"),
    ("io", "the output tree on disk, drift, git work trees"),
    ("run", "the local runner"),
    ("emit", "one emitter per target"),
    ("", "the driver and the command line (compiler/*.cpp)"),
]
RANK = {name: i for i, (name, _) in enumerate(LAYERS)}
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def layer_of(path: pathlib.Path, compiler: pathlib.Path) -> str:
    rel = path.relative_to(compiler)
    return rel.parts[0] if len(rel.parts) > 1 else ""


def main() -> int:
    root = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else ".").resolve()
    compiler = root / "compiler"
    problems = []
    for folder in sorted(p.name for p in compiler.iterdir() if p.is_dir()):
        if folder not in RANK:
            problems.append(f"compiler/{folder}/: a folder with no layer; place it in LAYERS in tests/layers.py")
    sources = sorted(p for p in compiler.rglob("*") if p.suffix in (".h", ".cpp"))
    for src in sources:
        own = layer_of(src, compiler)
        if own not in RANK:
            continue
        text = src.read_text(encoding="utf-8")
        for m in INCLUDE.finditer(text):
            target = m.group(1)
            if "/" not in target:
                continue
            layer = target.split("/", 1)[0]
            if layer not in RANK:
                continue  # a third-party header (e.g. "libjsonnet++.h" has no folder; fmt/...)
            if RANK[layer] > RANK[own]:
                line = text.count("\n", 0, m.start()) + 1
                problems.append(
                    f"{src.relative_to(root)}:{line}: includes {target} from layer '{layer}', above its own "
                    f"layer '{own or 'compiler/'}'")
    for p in problems:
        print(p)
    if not sources:
        print(f"no compiler sources under {compiler}")
        return 1
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
