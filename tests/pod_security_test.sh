#!/usr/bin/env bash
# Pod Security Standards (TAP). Every pod template of every example is judged by tests/pod_security.py,
# written from the Kubernetes Pod Security Standards independently of trainc: pods in the system's
# namespace meet "restricted" unless their workload opts out in the spec; the namespace enforces
# exactly the strictest level all its pods meet (and warns and audits at restricted); every pod that
# is not restricted, trainc's DaemonSets in kube-system too, is named in the output README's Pod
# security table with a reason. The exceptions are printed as diagnostics.
# Usage: tests/pod_security_test.sh TRAINC
set -uo pipefail
# shellcheck source=tests/tap.sh
. "$(dirname "${BASH_SOURCE[0]}")/tap.sh"
tap_init "$@"

rank() { case $1 in restricted) echo 0 ;; baseline) echo 1 ;; *) echo 2 ;; esac; }

# README.md LEVELS: every pod template in LEVELS (pod_security.py's lines) that is not restricted is
# named (`kind/name`) in one row of the README's Pod security table, at its level or a less strict
# one, with a reason: the spec's or trainc's. Pods in other namespaces (kube-system) too.
listed_in_readme() {
  python3 - "$1" "$2" <<'PY'
import re, sys
RANK = {"restricted": 0, "baseline": 1, "privileged": 2}
readme, levels = open(sys.argv[1]).read(), open(sys.argv[2]).read().splitlines()
section = readme.split("\n## Pod security\n", 1)[1].split("\n## ", 1)[0] if "\n## Pod security\n" in readme else ""
rows = []
for line in section.splitlines():
    cells = [c.strip() for c in re.split(r"(?<!\\)\|", line)[1:-1]]
    if len(cells) != 6 or cells[0] == "workload" or set(cells[0]) <= set("-"):
        continue
    rows.append(cells)
if not rows:
    print("README.md has no Pod security table")
bad = 0
for line in levels:
    level, _, obj, path, _ = line.split("\t")
    if level == "restricted":
        continue
    kind, name = obj.split("/", 1)
    ref = f"{kind.lower()}/{name}"
    found = [r for r in rows if ref in re.findall(r"`([^`]+)`", r[1])]
    if len(found) != 1:
        print(f"{obj} ({path}) is {level}, and {len(found)} rows of the Pod security table name `{ref}`")
        bad = 1
        continue
    workload, _, listed, _, reason, need = found[0]
    if max(RANK[w] for w in re.findall(r"restricted|baseline|privileged", listed)) < RANK[level]:
        print(f"{obj} is {level}, and its row ({workload}) says {listed}")
        bad = 1
    if reason == "-" and need == "-":
        print(f"{obj} is {level}, and its row ({workload}) gives no reason")
        bad = 1
sys.exit(bad)
PY
}

# NAME: the compiled tree at $TMP/out/NAME meets the rules above.
judge() {
  local name=$1 dir="$TMP/out/$1" ns_file level file object path violations ns worst=restricted enforce bad=0
  ns_file="$dir/k8s/namespace.yaml"
  mapfile -t manifests < <(find "$dir/k8s" -maxdepth 1 -name '*.yaml' ! -name kustomization.yaml | sort)
  python3 tests/pod_security.py "${manifests[@]}" >"$TMP/$name.levels" || { echo "pod_security.py failed"; return 1; }
  [ -s "$TMP/$name.levels" ] || { echo "no pod templates found in $dir/k8s"; return 1; }
  while IFS=$'\t' read -r level file object path violations; do
    ns=$(python3 -c 'import sys, yaml; d = next(yaml.safe_load_all(open(sys.argv[1]))); print((d.get("metadata") or {}).get("namespace", ""))' "$file")
    [ "$level" = restricted ] || echo "exception${ns:+ in $ns}: $object ($path) is $level: $violations"
    # The namespace's level counts only its own pods.
    if [ "$ns" != kube-system ] && [ "$(rank "$level")" -gt "$(rank "$worst")" ]; then worst=$level; fi
  done <"$TMP/$name.levels"
  # Istio injects an init container that adds NET_ADMIN and NET_RAW into the pods labelled for it:
  # such a pod runs privileged, whatever its own template asks for.
  if grep -qs 'sidecar.istio.io/inject: "true"' "${manifests[@]}"; then worst=privileged; fi
  listed_in_readme "$dir/README.md" "$TMP/$name.levels" || bad=1
  if [ -f "$ns_file" ]; then
    enforce=$(sed -n 's/^ *pod-security.kubernetes.io\/enforce: *//p' "$ns_file")
    if [ "$enforce" != "$worst" ]; then
      echo "namespace enforces '$enforce'; its strictest common level is '$worst'"
      bad=1
    fi
    for mode in warn audit; do
      grep -q "pod-security.kubernetes.io/$mode: restricted" "$ns_file" || { echo "namespace does not $mode at restricted"; bad=1; }
    done
  fi
  return "$bad"
}

mkdir -p "$TMP/out"
while read -r spec; do
  name=$(basename "$(dirname "$spec")")
  if ! "$TRAINC" compile "$spec" -o "$TMP/out" >"$TMP/compile.log" 2>&1; then
    t_fail "compile $spec" "$(cat "$TMP/compile.log")"
    continue
  fi
  t "pods of $name meet their Pod Security levels; the namespace enforces the strictest common one" judge "$name"
  if [ -s "$TMP/$name.levels" ]; then
    awk -F'\t' '$1 != "restricted" { print "exception: " $3 " is " $1 }' "$TMP/$name.levels" | diag
  fi
done < <(example_specs)

# The table keeps the spec's reason and trainc's apart: for each workload whose YAML spec gives
# `security.reason`, its row's "reason given in the spec" cell is that text alone, and the cell of what
# trainc found its pods do does not repeat it.
reasons_apart() {
  python3 - "$TMP/out" "$@" <<'PY'
import re, sys, yaml
out, bad, checked = sys.argv[1], 0, 0
for spec in sys.argv[2:]:
    name = spec.split("/")[-2]
    d = yaml.safe_load(open(spec))
    given = {f"step `{st['name']}`": (st.get("security") or {}).get("reason") for st in d.get("pipeline") or []}
    for kind in ("clusters", "services"):
        for n, w in (d.get(kind) or {}).items():
            given[f"{kind[:-1]} `{n}`"] = (w.get("security") or {}).get("reason")
    readme = open(f"{out}/{name}/README.md").read()
    rows = {}
    for line in readme.split("\n## Pod security\n", 1)[1].split("\n## ", 1)[0].splitlines():
        cells = [c.strip() for c in re.split(r"(?<!\\)\|", line)[1:-1]]
        if len(cells) == 6:
            rows[cells[0]] = cells
    for what, reason in given.items():
        if not reason:
            continue
        checked += 1
        cells = rows.get(what, [""] * 6)
        if cells[4] != reason.replace("|", "\\|") or reason in cells[5]:
            print(f"{name}: {what}: the spec's reason {reason!r}; its row says {cells[4]!r} and {cells[5]!r}")
            bad = 1
if not checked:
    print("no workload with a security reason was checked")
    bad = 1
sys.exit(bad)
PY
}
mapfile -t yaml_specs < <(example_specs | grep '\.yaml$')
t "the spec's reason and what trainc found stand in cells of their own" reasons_apart "${yaml_specs[@]}"

# The judge is not a rubber stamp: a pod with no securityContext is not restricted, one with a hostPath
# volume is privileged.
cat >"$TMP/plain.yaml" <<'YAML'
apiVersion: v1
kind: Pod
metadata: {name: plain}
spec:
  containers: [{name: c, image: busybox}]
---
apiVersion: v1
kind: Pod
metadata: {name: host}
spec:
  securityContext: {runAsNonRoot: true, runAsUser: 1000, seccompProfile: {type: RuntimeDefault}}
  containers:
    - name: c
      image: busybox
      securityContext: {allowPrivilegeEscalation: false, capabilities: {drop: [ALL]}}
  volumes: [{name: h, hostPath: {path: /etc}}]
YAML
levels_of_plain() {
  local got
  got=$(python3 tests/pod_security.py "$TMP/plain.yaml" | cut -f1,3 | tr '\t\n' ' ,')
  [ "$got" = "baseline Pod/plain,privileged Pod/host," ] || { echo "judged: $got"; return 1; }
}
t "a pod without securityContext is baseline, one with a hostPath volume privileged" levels_of_plain

# A step on an RDMA pool that does not opt out is refused, naming the level it needs and the fix.
needs_opt_out() {
  sed '/security: {level: privileged/d' examples/xgb-a4/spec.yaml >"$TMP/xgb-a4.yaml"
  if "$TRAINC" check "$TMP/xgb-a4.yaml" >"$TMP/check.log" 2>&1; then echo "check passed"; return 1; fi
  grep -q "step 'datagen' needs Pod Security level 'privileged'" "$TMP/check.log" || { cat "$TMP/check.log"; return 1; }
  grep -q 'security: {level: privileged, reason: "..."}' "$TMP/check.log" || { cat "$TMP/check.log"; return 1; }
}
t "an RDMA step without security: privileged is refused with the fix" needs_opt_out

tap_done
