#!/usr/bin/env bash
# `trainc run --local` end to end (TAP): a spec's datagen step and a two-rank XGBoost step run on
# this machine (ranks as processes on loopback, stores as folders), and an oversized table is
# refused with a hint. Usage: tests/run_local_test.sh TRAINRT TRAINC
set -uo pipefail
if [ "$#" -lt 2 ]; then echo "usage: $0 TRAINRT TRAINC" >&2; exit 2; fi
case "$1" in /*) TRAINRT=$1 ;; */*) TRAINRT=$PWD/$1 ;; *) TRAINRT=$(command -v "$1" || printf '%s' "$1") ;; esac
# shellcheck source=tests/tap.sh
. "$(dirname "${BASH_SOURCE[0]}")/tap.sh"
tap_init "$2"
export OMP_WAIT_POLICY=PASSIVE

cat >"$TMP/spec.yaml" <<'SPEC'
apiVersion: trainc/v1
kind: TrainingSystem
name: local-xgb
runtime: {image: trainrt}
serviceAccount: trainer
storage:
  data: {gcs: {bucket: local-data, create: false}}
pipeline:
  - name: datagen
    datagen: {rows: 20000, features: 20, informative: 5, shards: 4, to: "data:/table"}
  - name: train
    needs: [datagen]
    nodes: 2
    xgboost:
      from: "data:/table"
      to: "data:/model"
      rounds: 10
      checkpointEvery: 5
      params: {max_depth: 4, objective: "binary:logistic"}
SPEC

run_pipeline() {
  "$TRAINC" run "$TMP/spec.yaml" --local --workdir "$TMP/work" --threads 1 --trainrt "$TRAINRT" >"$TMP/run.log" 2>&1 ||
    { echo "exit $?"; tail -n 30 "$TMP/run.log"; return 1; }
  [ -s "$TMP/work/stores/data/model/model.ubj" ] || { echo "no model.ubj"; tail -n 30 "$TMP/run.log"; return 1; }
  [ "$(wc -l <"$TMP/work/stores/data/model/metrics.jsonl")" -eq 10 ] || { echo "metrics.jsonl should have 10 rounds"; return 1; }
  grep -q -- '--rank=1' "$TMP/run.log" || { echo "no second rank was started"; return 1; }
}

table_is_the_spec() {
  local out
  out=$("$TRAINRT" inspect "$TMP/work/stores/data/table") || { echo "inspect failed"; return 1; }
  printf '%s\n' "$out" | grep -q 20000 || { echo "expected 20000 rows:"; printf '%s\n' "$out"; return 1; }
}

refuses_huge_table() {
  sed 's/rows: 20000/size: 6TB/' "$TMP/spec.yaml" >"$TMP/huge.yaml"
  local rc=0
  "$TRAINC" run "$TMP/huge.yaml" --local --workdir "$TMP/huge" --trainrt "$TRAINRT" >"$TMP/huge.log" 2>&1 || rc=$?
  [ "$rc" -eq 2 ] || { echo "expected exit 2, got $rc"; cat "$TMP/huge.log"; return 1; }
  grep -q -- '--scale' "$TMP/huge.log" || { echo "no --scale hint:"; cat "$TMP/huge.log"; return 1; }
  [ ! -e "$TMP/huge/stores" ] || { echo "wrote data despite refusing"; return 1; }
}

needs_local_flag() {
  local rc=0
  "$TRAINC" run "$TMP/spec.yaml" >/dev/null 2>&1 || rc=$?
  [ "$rc" -eq 2 ] || { echo "expected exit 2 without --local, got $rc"; return 1; }
}

t "run --local: datagen then 2-rank XGBoost on loopback" run_pipeline
t "run --local: the table holds the spec's rows" table_is_the_spec
t "run --local refuses a 6TB table without --scale" refuses_huge_table
t "run without --local is a usage error" needs_local_flag
tap_done
