#!/usr/bin/env bash
# Pod Security Standards (TAP). Every pod template of every example is judged by tests/pod_security.py,
# written from the Kubernetes Pod Security Standards independently of trainc: pods in the system's
# namespace meet "restricted" unless their workload opts out in the spec; the namespace enforces
# exactly the strictest level all its pods meet (and warns and audits at restricted); every exception
# is listed with its reason in the output's README. The exceptions are printed as diagnostics.
# Usage: tests/pod_security_test.sh TRAINC
set -uo pipefail
# shellcheck source=tests/tap.sh
. "$(dirname "${BASH_SOURCE[0]}")/tap.sh"
tap_init "$@"

rank() { case $1 in restricted) echo 0 ;; baseline) echo 1 ;; *) echo 2 ;; esac; }

# NAME: the compiled tree at $TMP/out/NAME meets the rules above.
judge() {
  local name=$1 dir="$TMP/out/$1" ns_file level file object path violations ns worst=restricted enforce bad=0
  ns_file="$dir/k8s/namespace.yaml"
  mapfile -t manifests < <(find "$dir/k8s" -maxdepth 1 -name '*.yaml' ! -name kustomization.yaml | sort)
  python3 tests/pod_security.py "${manifests[@]}" >"$TMP/$name.levels" || { echo "pod_security.py failed"; return 1; }
  [ -s "$TMP/$name.levels" ] || { echo "no pod templates found in $dir/k8s"; return 1; }
  while IFS=$'\t' read -r level file object path violations; do
    ns=$(python3 -c 'import sys, yaml; d = next(yaml.safe_load_all(open(sys.argv[1]))); print((d.get("metadata") or {}).get("namespace", ""))' "$file")
    if [ "$ns" = kube-system ]; then
      echo "exception (kube-system, not the system's namespace): $object is $level: $violations"
      continue
    fi
    if [ "$(rank "$level")" -gt "$(rank "$worst")" ]; then worst=$level; fi
    [ "$level" = restricted ] && continue
    echo "exception: $object ($path) is $level: $violations"
    # The README's Pod security table names the workload, at this level or a less strict one, with a reason.
    if ! awk -F'|' -v obj="$object" -v lvl="$level" '
        function rank(l) { return l ~ /restricted/ ? 0 : (l ~ /baseline/ ? 1 : 2) }
        /^\| (step|cluster|service) `/ {
          split($2, part, "`"); n = part[2]; gsub(/ /, "", $3)
          if (index(obj, "-" n) && rank($3) >= rank(lvl) && $5 !~ /^ *- *$/) found = 1 }
        END { exit !found }' "$dir/README.md"; then
      echo "README.md lists no reason for $object at level $level"
      bad=1
    fi
  done <"$TMP/$name.levels"
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
