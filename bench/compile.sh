#!/usr/bin/env bash
# Times the whole `trainc compile SPEC -o DIR` process per example with hyperfine, pinned to one
# core, side by side with what a user would otherwise run to render the same manifests:
# `kubectl kustomize golden/<name>/k8s` (when kubectl is installed). Prints a markdown table.
# Usage: bench/compile.sh [TRAINC]   (default build/compiler/trainc; `./dev.sh bench` builds it first)
# Env: RUNS (default 30), WARMUP (default 3), TARGET_MS (default 20). Results: bench/results/.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
# shellcheck source=tools/common.sh
. tools/common.sh
TRAINC=$(absolute_command "${1:-build/compiler/trainc}")
RUNS=${RUNS:-30}
WARMUP=${WARMUP:-3}
TARGET_MS=${TARGET_MS:-20}
results=bench/results

if [ ! -x "$TRAINC" ]; then
  echo "bench: $TRAINC is not built; run ./dev.sh bench" >&2
  exit 2
fi
bash tools/install-deps.sh hyperfine

pin=()
if command -v taskset >/dev/null 2>&1; then pin=(taskset -c 0); else echo "bench: taskset missing; not pinned to one core" >&2; fi
kubectl=$(command -v kubectl || true)
if [ -z "$kubectl" ]; then echo "bench: kubectl not installed; timing trainc alone" >&2; fi

mkdir -p "$results"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
jsons=()
while read -r spec; do
  name=$(basename "$(dirname "$spec")")
  ext=${spec##*.}
  json="$results/$name.$ext.json"
  cmds=(--command-name "trainc compile $spec" "$TRAINC compile $spec -o $tmp/out")
  if [ -n "$kubectl" ] && [ -d "golden/$name/k8s" ]; then
    cmds+=(--command-name "kubectl kustomize golden/$name/k8s" "$kubectl kustomize golden/$name/k8s")
  fi
  echo "bench: $spec" >&2
  # -N: no shell between hyperfine and the command; --prepare: every run compiles into a fresh folder.
  "${pin[@]}" hyperfine -N --style basic --warmup "$WARMUP" --runs "$RUNS" \
    --prepare "rm -rf $tmp/out" --export-json "$json" "${cmds[@]}" >"$results/$name.$ext.log" 2>&1 ||
    { echo "bench: hyperfine failed for $spec; see $results/$name.$ext.log" >&2; exit 1; }
  jsons+=("$json")
done < <(example_specs)

if [ "${#jsons[@]}" -eq 0 ]; then echo "bench: no examples/*/spec.* found" >&2; exit 1; fi

# Many specs, the way pre-commit hooks call trainc: every example in ONE `trainc check` process
# (the way pre-commit calls a hook with all staged specs), next to one process per spec (a loop in
# one sh, whose own start is a few ms of the total), and the Jsonnet examples alone both ways; then
# the first Jsonnet example alone, from a cold process. `check` runs the whole pipeline, emitting
# and verifying every object, without writing (examples/mnist has a YAML and a Jsonnet spec of the
# same system, which one `compile -o` call refuses to put in one folder). These rows use every core
# of the machine, as a pre-commit hook or a CI job does (trainc evaluates Jsonnet specs in child
# processes beside its own work); the "one core" row is the same call pinned to core 0.
mapfile -t all_specs < <(example_specs)
mapfile -t jsonnet_specs < <(example_specs | grep '\.jsonnet$' || true)
loop() {  # the sh -c command that checks each spec in its own process
  local cmd="" s
  for s in "$@"; do cmd+="$TRAINC check $s >/dev/null && "; done
  printf '%strue' "$cmd"
}
many_json="$results/many.json"
many_counts=("${#all_specs[@]}" "${#all_specs[@]}" "${#all_specs[@]}")
many_cmds=(--command-name "one process: trainc check (${#all_specs[@]} specs)" "$TRAINC check ${all_specs[*]}"
           --command-name "one process per spec (${#all_specs[@]} specs)" "sh -c '$(loop "${all_specs[@]}")'"
           --command-name "one process, one core: trainc check (${#all_specs[@]} specs)"
           "${pin[*]} $TRAINC check ${all_specs[*]}")
if [ "${#jsonnet_specs[@]}" -gt 0 ]; then
  many_counts+=("${#jsonnet_specs[@]}" "${#jsonnet_specs[@]}" 1)
  many_cmds+=(--command-name "one process: trainc check (${#jsonnet_specs[@]} Jsonnet specs)"
              "$TRAINC check ${jsonnet_specs[*]}"
              --command-name "one process per spec (${#jsonnet_specs[@]} Jsonnet specs)" "sh -c '$(loop "${jsonnet_specs[@]}")'"
              --command-name "one cold process: trainc check ${jsonnet_specs[0]}" "$TRAINC check ${jsonnet_specs[0]}")
fi
echo "bench: many specs in one process" >&2
hyperfine --style basic --warmup "$WARMUP" --runs "$RUNS" \
  --export-json "$many_json" "${many_cmds[@]}" >"$results/many.log" 2>&1 ||
  { echo "bench: hyperfine failed for the many-specs rows; see $results/many.log" >&2; exit 1; }

python3 - "$TARGET_MS" "${jsons[@]}" <<'PY' | tee "$results/summary.md"
import json, sys
target = float(sys.argv[1])
print(f"| example | spec | trainc compile, median ms | kubectl kustomize, median ms | kustomize / trainc | under {target:g} ms |")
print("|---|---|---:|---:|---:|---|")
for path in sys.argv[2:]:
    runs = json.load(open(path))["results"]
    trainc = runs[0]["median"] * 1000
    name, ext = path.split("/")[-1].rsplit(".", 2)[:2]   # bench/results/<name>.<ext>.json
    peer = f"{runs[1]['median'] * 1000:.1f}" if len(runs) > 1 else "n/a"
    ratio = f"{runs[1]['median'] / runs[0]['median']:.1f}x" if len(runs) > 1 else "n/a"
    print(f"| {name} | spec.{ext} | {trainc:.1f} | {peer} | {ratio} | {'yes' if trainc < target else 'NO'} |")
PY
python3 - "$many_json" "${many_counts[@]}" <<'PY' | tee -a "$results/summary.md"
import json, sys
runs = json.load(open(sys.argv[1]))["results"]
counts = [int(c) for c in sys.argv[2:]]
# Rows 0/1 and 3/4 are one process against one process per spec; 2 and 5 stand alone.
pairs = {0: 1, 3: 4}
print()
print("| many specs | median ms | ms per spec | per-spec processes / one process |")
print("|---|---:|---:|---:|")
for i, r in enumerate(runs):
    ratio = f"{runs[pairs[i]]['median'] / r['median']:.2f}x" if i in pairs else ""
    print(f"| {r['command']} | {r['median'] * 1000:.1f} | {r['median'] * 1000 / counts[i]:.1f} | {ratio} |")
PY
echo >&2
echo "bench: per-example rows on one core (${pin[*]:-unpinned}), many-specs rows on every core but the one marked; $RUNS runs after $WARMUP warm-ups; raw data in $results/" >&2
