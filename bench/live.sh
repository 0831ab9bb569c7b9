#!/usr/bin/env bash
# Times `trainc diff --live SPEC` against a cluster the spec's output was applied to, side by side
# in one hyperfine run with what a user would otherwise run to see the same: `kubectl diff -k
# OUT/k8s` (the same objects, each sent as a server-side dry run). trainc also compiles the spec,
# reads every object, lists the system's objects for pruning and judges drift. The cluster: the
# upstream control plane on loopback (tests/cluster/cluster.sh, tools/install-cluster.sh) with the
# example's nodes, its output applied with `kubectl apply -k` (client-side, as apply.sh applies).
# Usage: bench/live.sh [TRAINC] [EXAMPLE]   (default build/compiler/trainc, xgb-triton)
# Env: RUNS (default 10), WARMUP (default 2). Prints a markdown table; results in bench/results/.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
# shellcheck source=tools/common.sh
. tools/common.sh
TRAINC=$(absolute_command "${1:-build/compiler/trainc}")
example=${2:-xgb-triton}
RUNS=${RUNS:-10}
WARMUP=${WARMUP:-2}
results=bench/results
if [ ! -x "$TRAINC" ]; then
  echo "bench: $TRAINC is not built; run ./dev.sh build" >&2
  exit 2
fi
bash tools/install-deps.sh hyperfine
bash tools/install-cluster.sh
BIN="$(bash tools/install-cluster.sh --prefix)/bin"
spec=examples/$example/spec.yaml
tmp=$(mktemp -d)
state=$tmp/cluster
trap 'bash tests/cluster/cluster.sh down --state "$state" >/dev/null 2>&1 || true; rm -rf "$tmp"' EXIT
"$TRAINC" compile "$spec" -o "$tmp/out" >/dev/null 2>&1
out=$tmp/out/$(ls "$tmp/out")
"$TRAINC" plan "$spec" --format json >"$tmp/plan.json" 2>/dev/null
echo "bench: starting the control plane with the nodes of $spec" >&2
kc=$(bash tests/cluster/cluster.sh up --state "$state" "$tmp/plan.json" 2>"$tmp/up.log" | tail -n 1)
[ -f "$kc" ] || { tail -n 20 "$tmp/up.log" >&2; exit 1; }
# Until the operators' webhooks answer for every kind.
for _ in $(seq 30); do
  if "$BIN/kubectl" --kubeconfig "$kc" apply -k "$out/k8s" >"$tmp/apply.log" 2>&1; then break; fi
  sleep 2
done
objects=$("$BIN/kubectl" kustomize "$out/k8s" | grep -c '^kind:')
echo "bench: $objects objects applied; timing" >&2
mkdir -p "$results"
PATH="$BIN:$PATH" hyperfine -N -i --runs "$RUNS" --warmup "$WARMUP" --export-json "$tmp/live.json" \
  -n "trainc diff --live" "$TRAINC diff --live $spec --kubeconfig $kc" \
  -n "kubectl diff -k" "$BIN/kubectl diff -k $out/k8s --kubeconfig $kc" >&2
python3 - "$tmp/live.json" "$example" "$objects" <<'PY' | tee "$results/live-$example.md"
import json, sys
r = {x["command"]: x for x in json.load(open(sys.argv[1]))["results"]}
t, k = r["trainc diff --live"], r["kubectl diff -k"]
print(f"| {sys.argv[2]} ({sys.argv[3]} objects) | median ms | mean ms ± sd |")
print("|---|---:|---:|")
for name, x in (("trainc diff --live", t), ("kubectl diff -k", k)):
    print(f"| {name} | {x['median'] * 1000:.0f} | {x['mean'] * 1000:.0f} ± {x['stddev'] * 1000:.0f} |")
print(f"\nkubectl diff / trainc diff --live (medians): {k['median'] / t['median']:.2f}x")
PY
