#!/usr/bin/env bash
# The runbook's suggestions fit the system they are for (TAP): every `kubectl scale` of a worker
# group in every example's README.md stays within what its pool holds beside the rest of the system,
# judged from the compiled manifests and model by tests/runbook_scale.py, not by trainc's arithmetic.
# Usage: tests/runbook_test.sh TRAINC
set -uo pipefail
# shellcheck source=tests/tap.sh
. "$(dirname "${BASH_SOURCE[0]}")/tap.sh"
tap_init "$@"

checked=0
# SPEC: compiled, its runbook's scale suggestions fit.
scale_fits() {
  local spec=$1 name out
  name=$(basename "$(dirname "$spec")")
  "$TRAINC" compile "$spec" -o "$TMP/out" >"$TMP/compile.log" 2>&1 || { cat "$TMP/compile.log"; return 1; }
  out=$(python3 tests/runbook_scale.py "$TMP/out/$name") || { printf '%s\n' "$out"; return 1; }
  printf '%s\n' "$out"
}
while read -r dir; do
  spec=$(primary_spec "$dir")
  t "the scale suggestions of $spec fit its pools" scale_fits "$spec"
  if grep -q '^kubectl scale ' "$TMP/out/$(basename "$dir")/README.md" 2>/dev/null; then checked=$((checked + 1)); fi
done < <(for d in examples/*/; do printf '%s\n' "${d%/}"; done)

at_least_two() { [ "$checked" -ge 2 ] || { echo "only $checked example runbooks suggest a kubectl scale"; return 1; }; }
t "the examples' runbooks suggest scaling worker groups (checked: at least two)" at_least_two

# With room on its pool the suggestion grows the group by one; at the pool's limit (the examples
# above: a 2-node A4 pool, a CPU pool whose third node the scheduler takes) it shrinks it.
grows_when_room() {
  mkdir -p "$TMP/roomy"
  cp -r examples/dask-cpu/. "$TMP/roomy/"
  sed -i 's/cpu: {machine: n2-standard-8, nodes: 3}/cpu: {machine: n2-standard-8, nodes: 5}/' "$TMP/roomy/spec.yaml"
  grep -q 'nodes: 5' "$TMP/roomy/spec.yaml" || { echo "examples/dask-cpu/spec.yaml changed: update this test"; return 1; }
  "$TRAINC" compile "$TMP/roomy/spec.yaml" -o "$TMP/roomy-out" >"$TMP/compile.log" 2>&1 || { cat "$TMP/compile.log"; return 1; }
  grep -q -- "deployment/dask-cpu-dask-cpu --replicas=3 .*pool 'cpu' holds up to 4" "$TMP/roomy-out/dask-cpu/README.md" ||
    { grep '^kubectl scale' "$TMP/roomy-out/dask-cpu/README.md"; return 1; }
  python3 tests/runbook_scale.py "$TMP/roomy-out/dask-cpu"
}
t "a worker group with room on its pool is shown growing by one pod" grows_when_room

tap_done
