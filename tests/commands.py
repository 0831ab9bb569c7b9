#!/usr/bin/env python3
"""One builder writes every gcloud, kubectl and helm command (compiler/commands/command.h).

Reads the string literals of the emitters (compiler/emit/*.cpp, tests aside) and reports each that
starts a gcloud, kubectl or helm command by hand: at the start (after blanks) of the literal or of a
line in it, after a backtick, `$(`, `run ` or `see: `. What cannot go through the builder is listed in ALLOWED
with the reason; an entry that no longer matches anything is reported too.

Usage: tests/commands.py [ROOT]   prints each hand-written command and exits 1 when there is one.
"""
import pathlib
import re
import sys

# (file, text the literal holds, why it is written by hand)
ALLOWED = [
    # A Terraform output: an HCL template interpolating the cluster's attributes.
    ("emit_terraform.cpp", "gcloud container clusters get-credentials ", "the get_credentials output"),
    # Prose naming a command, not writing one out.
    ("emit_runbook.cpp", "`kubectl scale` lasts", "names the Dask example's command above"),
    ("emit_scripts.cpp", "`gcloud container clusters get-credentials` writes", "names the command"),
    ("emit_scripts_apply.cpp", "`kubectl wait` alone", "names the command"),
    ("emit_scripts_apply.cpp", "`kubectl wait --for=$2`", "names the command and its argument"),
]

COMMAND = re.compile(r"(?:^\s*|\n\s*|`|\$\(|\brun |see: )(gcloud|kubectl|helm) ")


def literals(text: str):
    """The string literals of C++ source `text`, as (line, content) with escapes left as written;
    comments and character literals are skipped."""
    i, line, n = 0, 1, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            i = text.find("\n", i)
            i = n if i < 0 else i
        elif text.startswith("/*", i):
            end = text.find("*/", i + 2)
            end = n if end < 0 else end + 2
            line += text.count("\n", i, end)
            i = end
        elif c == "R" and text.startswith('R"', i) and (i == 0 or not (text[i - 1].isalnum() or text[i - 1] == "_")):
            open_paren = text.find("(", i + 2)
            delim = text[i + 2:open_paren]
            end = text.find(")" + delim + '"', open_paren)
            body = text[open_paren + 1:end]
            yield line, body.replace("\n", "\\n")
            line += body.count("\n")
            i = end + len(delim) + 2
        elif c == '"' or c == "'":
            j = i + 1
            while j < n and text[j] != c:
                j += 2 if text[j] == "\\" else 1
            if c == '"':
                yield line, text[i + 1:j]
            i = j + 1
        else:
            if c == "\n":
                line += 1
            i += 1


def main() -> int:
    root = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else ".").resolve()
    emit = root / "compiler" / "emit"
    used = set()
    bad = []
    for path in sorted(emit.glob("*.cpp")):
        if path.name.endswith("_test.cpp"):
            continue
        for line, lit in literals(path.read_text()):
            # A literal \n in the source ends a line of the output.
            if not COMMAND.search(lit.replace("\\n", "\n")):
                continue
            allowed = [k for k, (f, text, _) in enumerate(ALLOWED) if f == path.name and text in lit]
            if allowed:
                used.update(allowed)
            else:
                bad.append(f"compiler/emit/{path.name}:{line}: a command written by hand (use cmd:: in "
                           f"compiler/commands/command.h): \"{lit}\"")
    for k, (f, text, why) in enumerate(ALLOWED):
        if k not in used:
            bad.append(f"tests/commands.py: allowed '{text}' in {f} ({why}) matches nothing: remove it")
    for b in bad:
        print(b)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
