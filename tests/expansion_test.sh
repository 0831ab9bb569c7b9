#!/usr/bin/env bash
# Spec text reaches the container as written (TAP). The kubelet expands `$(VAR)` and turns `$$`
# into `$` in a container's env values, command and args; tests/kubelet_expansion.py applies those rules, written from the Kubernetes
# API reference, to every container of every example compiled with spec values that hold `$(VAR)`
# naming a variable the container defines, `$$`, an unterminated `$(` and a trailing `$`. A Ray
# entrypoint, which KubeRay's HTTPMode posts to the job API as written, goes through the one shell
# Ray's job supervisor runs it with (`sh -c`).
# Usage: tests/expansion_test.sh TRAINC
set -uo pipefail
# shellcheck source=tests/tap.sh
. "$(dirname "${BASH_SOURCE[0]}")/tap.sh"
tap_init "$@"

# The values the specs get: XA_FIRST is defined before XZ_LITERAL (env maps are written in key
# order), so an unescaped `$(XA_FIRST)` would be replaced.
FIRST=first
LITERAL='a $(XA_FIRST) b $$ c $$(XA_FIRST) d $(NOT_SET) e $(open f $'
ARG="--log-format=\$(XA_FIRST)\$\$"
export FIRST LITERAL ARG

# Copies examples/NAME into $TMP/repo (a git work tree) with every step, compute cluster and
# service given the two env vars, every Triton server the extra flag and every command step on a
# Ray cluster the extra argument; prints the spec to compile.
prepare() {
  local name=$1 spec
  spec=$(primary_spec "examples/$name") || return 1
  mkdir -p "$TMP/repo/.git" "$TMP/repo/examples"
  rm -rf "${TMP:?}/repo/examples/$name"
  cp -a "examples/$name" "$TMP/repo/examples/"
  case $spec in
    *.yaml)
      python3 - "$TMP/repo/$spec" <<'PY' || return 1
import os, sys, yaml
path = sys.argv[1]
spec = yaml.safe_load(open(path))
env = {"XA_FIRST": os.environ["FIRST"], "XZ_LITERAL": os.environ["LITERAL"]}
ray = {k for k, c in (spec.get("clusters") or {}).items() if c.get("engine") == "ray"}
for step in spec.get("pipeline") or []:
    step.setdefault("env", {}).update(env)
    if step.get("cluster") in ray and isinstance(step.get("command"), list):
        step["command"].append(os.environ["ARG"])
for c in (spec.get("clusters") or {}).values():
    c.setdefault("env", {}).update(env)
for s in (spec.get("services") or {}).values():
    s.setdefault("env", {}).update(env)
    if "triton" in s:
        s["triton"].setdefault("args", []).append(os.environ["ARG"])
yaml.safe_dump(spec, open(path, "w"), sort_keys=False)
PY
      ;;
    *.jsonnet)
      mv "$TMP/repo/$spec" "$TMP/repo/examples/$name/original.jsonnet"
      cat >"$TMP/repo/$spec" <<JSONNET
local s = import 'original.jsonnet';
local env = { XA_FIRST: $(jq_string "$FIRST"), XZ_LITERAL: $(jq_string "$LITERAL") };
local arg = $(jq_string "$ARG");
local field(o, f, d) = if std.objectHas(o, f) then o[f] else d;
local rays = [k for k in std.objectFields(field(s, 'clusters', {})) if s.clusters[k].engine == 'ray'];
s + {
  pipeline: [
    p + { env+: env } + (if std.member(rays, field(p, 'cluster', '')) then { command+: [arg] } else {})
    for p in s.pipeline
  ],
  [if std.objectHas(s, 'clusters') then 'clusters']: { [k]: s.clusters[k] + { env+: env } for k in std.objectFields(s.clusters) },
  [if std.objectHas(s, 'services') then 'services']: {
    [k]: s.services[k] + { env+: env } + (if std.objectHas(s.services[k], 'triton') then { triton+: { args+: [arg] } } else {})
    for k in std.objectFields(s.services)
  },
}
JSONNET
      ;;
  esac
  printf '%s\n' "$spec"
}

# A JSON (and Jsonnet) string literal.
jq_string() { python3 -c 'import json, sys; print(json.dumps(sys.argv[1]))' "$1"; }

# NAME: compiled with the values above, every container that has XZ_LITERAL gets it as written,
# and every Triton server and Ray entrypoint gets ARG as one argument, as written.
check_example() {
  local name=$1 spec
  spec=$(prepare "$name") || { echo "could not prepare $name"; return 1; }
  (cd "$TMP/repo" && "$TRAINC" compile "$spec" -o out) >"$TMP/$name.log" 2>&1 ||
    { echo "trainc compile $spec failed:"; cat "$TMP/$name.log"; return 1; }
  mapfile -t manifests < <(find "$TMP/repo/out/$name/k8s" -maxdepth 1 -name '*.yaml' ! -name kustomization.yaml | sort)
  python3 tests/kubelet_expansion.py "${manifests[@]}" >"$TMP/$name.seen" || { echo "kubelet_expansion.py failed"; return 1; }
  python3 - "$TMP/$name.seen" "$TMP/repo/$spec" <<'PY'
import json, os, subprocess, sys
literal, arg = os.environ["LITERAL"], os.environ["ARG"]
ARGV = "%s -c 'import json, sys; print(json.dumps(sys.argv[1:]))'" % sys.executable
checked = bad = 0
args_expected = 0
for line in open(sys.argv[1]):
    c = json.loads(line)
    who = "%s %s container %s" % (c["object"], c["where"], c["container"])
    if "XZ_LITERAL" in c["env"]:
        checked += 1
        if c["env"]["XZ_LITERAL"] != literal:
            print("%s: XZ_LITERAL arrives as %r, written %r" % (who, c["env"]["XZ_LITERAL"], literal)); bad += 1
    words = c["argv"]
    if c["container"] == "ray-job":
        # Ray's job supervisor runs the entrypoint with `sh -c`: one shell, for real.
        words = json.loads(subprocess.run(["sh", "-c", ARGV + " " + words[2]], capture_output=True, text=True,
                                          check=True).stdout)
    if c["container"] in ("triton", "ray-job"):
        args_expected += 1
        if arg not in words:
            near = [w for w in words if w.startswith(arg.split("=")[0])]
            print("%s: the argument %r arrives as %r" % (who, arg, near)); bad += 1
if checked == 0:
    print("no container carries XZ_LITERAL"); bad += 1
print("%d containers with XZ_LITERAL, %d argument lists checked" % (checked, args_expected))
sys.exit(1 if bad else 0)
PY
}

check_rules() {
  # The rules as the Kubernetes documentation states them, on its own examples.
  python3 - <<'PY'
import sys
sys.path.insert(0, "tests")
from kubelet_expansion import expand
m = {"VAR_NAME": "v", "A": "1"}
cases = [("$(VAR_NAME)", "v"), ("$$(VAR_NAME)", "$(VAR_NAME)"), ("$(UNSET)", "$(UNSET)"), ("$$", "$"),
         ("x$", "x$"), ("$(A", "$(A"), ("$a", "$a"), ("$$$$(A)", "$$(A)"), ("$$$(A)", "$1")]
bad = [(i, want, expand(i, m)) for i, want in cases if expand(i, m) != want]
for i, want, got in bad: print("expand(%r) = %r, want %r" % (i, got, want))
sys.exit(1 if bad else 0)
PY
}

t "the expansion rules give the documented results" check_rules
for dir in examples/*/; do
  name=$(basename "$dir")
  t "$name: env values, server flags and Ray entrypoints arrive as the spec wrote them" check_example "$name"
done
tap_done
