#!/usr/bin/env bash
# One rollout (TAP): for every example, the order the runbook applies things in (its Apply block)
# is the order scripts/apply.sh runs them in (its --dry-run trace), and both tear down the ingress
# gateway first when there is one. tests/rollout_order.py reads both; trainc's own types are not
# consulted.
# Usage: tests/rollout_test.sh TRAINC
set -uo pipefail
# shellcheck source=tests/tap.sh
. "$(dirname "${BASH_SOURCE[0]}")/tap.sh"
tap_init "$@"

compared=0
# DIR: its spec compiled; the runbook's order is apply.sh's.
same_order() {
  local dir=$1 spec name out
  spec=$(primary_spec "$dir")
  name=$(basename "$dir")
  rm -rf "$TMP/out"
  "$TRAINC" compile "$spec" -o "$TMP/out" >"$TMP/compile.log" 2>&1 || { cat "$TMP/compile.log"; return 1; }
  out="$TMP/out/$name"
  if [ ! -f "$out/scripts/apply.sh" ]; then
    echo "no scripts/apply.sh (the spec has no gcp:): nothing to compare"
    return 0
  fi
  KUBE_CONTEXT=ctx bash "$out/scripts/apply.sh" --dry-run >"$TMP/apply.trace" 2>&1 || { cat "$TMP/apply.trace"; return 1; }
  KUBE_CONTEXT=ctx bash "$out/scripts/down.sh" --dry-run >"$TMP/down.trace" 2>&1 || { cat "$TMP/down.trace"; return 1; }
  python3 tests/rollout_order.py "$out" "$TMP/apply.trace" "$TMP/down.trace"
}
for d in examples/*/; do
  dir=${d%/}
  t "the runbook of $dir applies in apply.sh's order" same_order "$dir"
  if [ -f "$TMP/out/$(basename "$dir")/scripts/apply.sh" ]; then compared=$((compared + 1)); fi
done
some_compared() { [ "$compared" -ge 5 ] || { echo "only $compared examples have scripts to compare"; return 1; }; }
t "at least five examples were compared" some_compared

# The comparison can fail: a runbook with two of its lines swapped is caught.
swapped_caught() {
  local out="$TMP/swap/triton-tpu"
  "$TRAINC" compile "$(primary_spec examples/triton-tpu)" -o "$TMP/swap" >"$TMP/compile.log" 2>&1 || { cat "$TMP/compile.log"; return 1; }
  KUBE_CONTEXT=ctx bash "$out/scripts/apply.sh" --dry-run >"$TMP/apply.trace" 2>&1
  KUBE_CONTEXT=ctx bash "$out/scripts/down.sh" --dry-run >"$TMP/down.trace" 2>&1
  python3 tests/rollout_order.py "$out" "$TMP/apply.trace" "$TMP/down.trace" >/dev/null || { echo "unchanged runbook differs"; return 1; }
  # The JobSet controller after the shared objects, as apply.sh had it.
  python3 - "$out/README.md" <<'PY'
import sys
p = sys.argv[1]
lines = open(p).read().split("\n")
i = next(n for n, l in enumerate(lines) if "jobset/releases" in l)
moved = lines[i:i + 2]
del lines[i:i + 2]
j = next(n for n, l in enumerate(lines) if l == "kubectl apply -f k8s/namespace.yaml")
lines[j + 1:j + 1] = moved
open(p, "w").write("\n".join(lines))
PY
  if python3 tests/rollout_order.py "$out" "$TMP/apply.trace" "$TMP/down.trace" >/dev/null; then
    echo "a runbook with the JobSet controller moved still matched apply.sh"
    return 1
  fi
}
t "a runbook whose order differs from apply.sh's fails the comparison" swapped_caught

# Tearing down: the gateway goes first in the runbook too.
gateway_first() {
  local out="$TMP/swap/triton-tpu"
  sed -i '/^helm uninstall istio-ingressgateway/d' "$out/README.md"
  printf 'helm uninstall istio-ingressgateway --namespace istio-ingress\n' >>"$out/README.md"
  python3 tests/rollout_order.py "$out" "$TMP/apply.trace" "$TMP/down.trace" >/dev/null &&
    { echo "a runbook that does not uninstall the gateway first still matched down.sh"; return 1; }
  return 0
}
t "a runbook that tears the gateway down late fails the comparison" gateway_first
tap_done
