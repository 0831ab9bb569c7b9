#!/usr/bin/env bash
# Taint generated from the schema (TAP): tests/taint.py gives every free-text field of
# schemas/trainc.v1.schema.json a hostile value its own constraints accept, places it in a spec
# that reaches every artifact kind, and requires each field to compile or be refused by name; so
# a field added to the schema is covered without editing this file. Then every artifact kind the
# compiles wrote is read back: manifests (after the kubelet's $(VAR) expansion), Dockerfiles,
# Terraform, the GitHub workflow and Cloud Build configs, the runbook rendered by cmark,
# model.yaml and graph.svg; the scripts, entry scripts, RayJob entrypoints and shell probes run
# under the stand-ins of tests/stubs.sh in a sandbox; and no injected command may have run.
# Usage: tests/taint_test.sh TRAINC
set -uo pipefail
# shellcheck source=tests/tap.sh
. "$(dirname "${BASH_SOURCE[0]}")/tap.sh"
tap_init "$@"
# shellcheck source=tests/stubs.sh
. tests/stubs.sh

WORK="$TMP/work"
PWNED="$TMP/pwned"
SANDBOX="$TMP/sandbox"
rc=0  # exit code of the last run_in_sandbox (tests/stubs.sh)
mkdir -p "$WORK" "$PWNED" "$SANDBOX/home" "$SANDBOX/tmp"
stubs_install "$TMP/stubs"

generate() {
  python3 tests/taint.py gen schemas/trainc.v1.schema.json "$TRAINC" "$WORK" "$PWNED"
}
t "every free-text field of the schema compiles with taint or is refused by name" generate
if [ ! -s "$WORK/taint.json" ]; then tap_done; fi
mapfile -t OUTS < <(python3 -c 'import json, sys; print("\n".join(json.load(open(sys.argv[1]))["outputs"]))' "$WORK/taint.json")

t "manifests: each tainted value arrives as written, after the kubelet's expansion" python3 tests/taint.py k8s "$WORK"
t "Dockerfiles: the template's instructions only, no substitution of tainted text" python3 tests/taint.py dockerfiles "$WORK"
t "Terraform: tainted text only inside string literals, never in a template sequence" python3 tests/taint.py tf "$WORK"
t "the runbook rendered by cmark: no element made from tainted text" python3 tests/taint.py runbook "$WORK"
t "model.yaml and graph.svg parse and hold tainted values whole" python3 tests/taint.py model "$WORK"
t "the GitHub workflow and Cloud Build configs: no \${{ in a run:, values whole" \
  python3 tests/taint.py ci "$WORK" "$TMP/ci-scripts"

entry_scripts() {
  local out cm n=0
  mkdir -p "$TMP/entry"
  for out in "${OUTS[@]}"; do
    n=$((n + 1))
    for cm in "$out"/k8s/*-configmap.yaml; do
      stub_entry_script "$cm" "$TMP/entry/$n-$(basename "$cm" -configmap.yaml).sh" "$SANDBOX/pod-$n" || return 1
    done
  done
}
t "the entry scripts are in the ConfigMaps" entry_scripts

lint() {
  local out all=()
  for out in "${OUTS[@]}"; do all+=("$out"/scripts/*.sh); done
  lint_scripts "${all[@]}" "$TMP"/entry/*.sh "$TMP"/ci-scripts/*.sh
}
t "bash -n and shellcheck pass on the scripts, entry scripts and CI scripts" lint

run_in_sandbox() { stub_run_in_sandbox 60 "$@"; }

scripts_run() {
  local out s
  for out in "${OUTS[@]}"; do
    stub_repin "$out"  # the file Triton's repository fetches is the curl stand-in's
    for s in up.sh build.sh apply.sh status.sh health.sh; do
      [ -f "$out/scripts/$s" ] || continue
      # What the pods need and trainc does not make, made as the README's "Before you apply" says.
      if [ "$s" = apply.sh ]; then stub_user_objects "$out" >/dev/null || return 1; fi
      run_in_sandbox bash "$out/scripts/$s"
      [ "$rc" -eq 0 ] || { echo "$s exited $rc:"; tail -n 15 "$TMP/stderr"; return 1; }
    done
    run_in_sandbox bash "$out/scripts/down.sh" --yes --delete-data
    [ "$rc" -eq 0 ] || { echo "down.sh exited $rc:"; tail -n 15 "$TMP/stderr"; return 1; }
  done
}
t "up.sh, apply.sh, status.sh, health.sh and down.sh run to the end under stand-ins" scripts_run

# The entry scripts' own outcome depends on the stand-ins' data; what counts is what they run.
entry_run() {
  local s
  for s in "$TMP"/entry/*.sh; do
    run_in_sandbox bash "$s"
  done
}
t "every entry script ran under stand-ins" entry_run

# Each RayJob's entrypoint through the one `sh -c` of Ray's job supervisor (the ray-job stand-in);
# each `sh -c` probe under /bin/sh, as the kubelet runs them.
shell_commands() {
  python3 - "$TMP/cmds" "${OUTS[@]}" <<'PY'
import glob, os, sys, yaml
out, n = sys.argv[1], 0
os.makedirs(out, exist_ok=True)
def write(kind, text):
    global n
    n += 1
    open(os.path.join(out, "%s-%d" % (kind, n)), "w").write(text)
def probes(node):
    if isinstance(node, dict):
        cmd = (node.get("exec") or {}).get("command")
        if isinstance(cmd, list) and len(cmd) == 3 and cmd[1] == "-c":
            write("probe", cmd[2])
        for v in node.values():
            probes(v)
    elif isinstance(node, list):
        for v in node:
            probes(v)
for system in sys.argv[2:]:
    for path in glob.glob(os.path.join(system, "k8s", "*.yaml")):
        for doc in yaml.safe_load_all(open(path)):
            if isinstance(doc, dict) and doc.get("kind") == "RayJob":
                write("ray", doc["spec"]["entrypoint"])  # HTTPMode: posted as written, no kubelet
            probes(doc)
PY
  local f
  for f in "$TMP"/cmds/ray-*; do
    run_in_sandbox ray-job "$(cat "$f")"
    [ "$rc" -eq 0 ] || { echo "the entrypoint exited $rc:"; cat "$f" "$TMP/stderr"; return 1; }
  done
  for f in "$TMP"/cmds/probe-*; do
    run_in_sandbox /bin/sh -c "$(cat "$f")"
  done
  ls "$TMP/cmds"
}
t "the RayJob entrypoints run through Ray's one shell, the probes under sh" shell_commands

nothing_injected() {
  local found
  found=$(find "$PWNED" -mindepth 1)
  [ -z "$found" ] || { echo "injected commands ran; they made:"; echo "$found"; return 1; }
  found=$(find "$TMP" . -maxdepth 6 -name 'pwned-*' 2>/dev/null)
  [ -z "$found" ] || { echo "injected commands ran; they made:"; echo "$found"; return 1; }
}
t "no injected command ran" nothing_injected

tap_done
