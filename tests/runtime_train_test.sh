#!/usr/bin/env bash
# `trainrt train` end to end (TAP): training on native shards; SIGKILL at chosen points (and from
# outside) then a restart ends with model.ubj byte-identical to an uninterrupted run; corrupt
# checkpoints are skipped; two ranks on loopback end with identical models; a rank that never joins
# fails fast with exit 4. Usage: tests/runtime_train_test.sh TRAINRT TRAINC
# Shards come from build/runtime/train/trainrt-testdata (beside TRAINRT) until `trainrt datagen`
# writes them; XGBoost 1.7's tracker is runtime/train/tracker17.py (Debian's python3-xgboost).
set -uo pipefail
# shellcheck source=tests/tap.sh
. "$(dirname "${BASH_SOURCE[0]}")/tap.sh"
if [ "$#" -lt 2 ]; then
  echo "usage: $0 TRAINRT TRAINC" >&2
  exit 2
fi
# tools/common.sh's absolute_command is only there after tap_init, which changes directory: resolve
# TRAINRT (given relative to where we were started) first.
case $1 in
  /*) TRAINRT=$1 ;;
  */*) TRAINRT=$PWD/$1 ;;
  *) TRAINRT=$(command -v "$1" || printf '%s' "$1") ;;
esac
shift
tap_init "$@"
rc=0  # exit code of the last run() (tests/tap.sh)
TESTDATA=$(dirname "$TRAINRT")/train/trainrt-testdata
PY=/usr/bin/python3
TRACKER=runtime/train/tracker17.py
if [ ! -x "$TRAINRT" ] || [ ! -x "$TESTDATA" ]; then
  echo "Bail out! trainrt or trainrt-testdata not built: $TRAINRT"
  exit 1
fi

# OpenMP threads that spin while waiting burn the CPU a loaded 2-core machine needs; results do not
# depend on it.
export OMP_WAIT_POLICY=PASSIVE

DATA=$TMP/data
"$TESTDATA" --rows 20000 --features 20 --shards 3 --seed 11 --out "$DATA" || { echo "Bail out! cannot write shards"; exit 1; }

# Flags shared by every single-rank run; VARIANT adds row and column subsampling, whose random
# state XGBoost keeps outside the model.
BASE=(--data "$DATA" --rounds 40 --checkpoint-every 5 --threads 2 --eval-fraction 0.1
      --param objective=binary:logistic --param max_depth=6 --param seed=5)
SAMPLING=(--param subsample=0.8 --param colsample_bytree=0.8 --param colsample_bynode=0.9)

train() { "$TRAINRT" train "${BASE[@]}" "$@"; }

# The round numbers in a metrics.jsonl, space-separated.
metric_rounds() { sed -n 's/^{"round":\([0-9]*\),.*/\1/p' "$1" | tr '\n' ' '; }
ROUNDS_1_40="$(seq 1 40 | tr '\n' ' ')"

# Reference models: one uninterrupted run per variant.
train --model-dir "$TMP/ref-plain" 2>"$TMP/ref-plain.log"
train --model-dir "$TMP/ref-sampling" "${SAMPLING[@]}" --heartbeat "$TMP/heartbeat" 2>"$TMP/ref-sampling.log"

check_end_to_end() {
  local d=$TMP/ref-plain
  [ -f "$d/model.ubj" ] || { echo "no model.ubj"; cat "$TMP/ref-plain.log"; return 1; }
  [ "$(metric_rounds "$d/metrics.jsonl")" = "$ROUNDS_1_40" ] || { echo "metrics rounds:"; metric_rounds "$d/metrics.jsonl"; return 1; }
  grep -q '"metrics":{"train-logloss":[0-9.e-]*,"eval-logloss":[0-9.e-]*},"rows":18002,"ranks":1}$' "$d/metrics.jsonl" ||
    { echo "unexpected metrics line:"; tail -n 1 "$d/metrics.jsonl"; return 1; }
  [ "$(ls "$d/checkpoints")" = "$(printf 'ckpt-000035.ubj\nckpt-000040.ubj')" ] || { echo "checkpoints:"; ls "$d/checkpoints"; return 1; }
  [ -f "$TMP/heartbeat" ] || { echo "heartbeat file not touched"; return 1; }
  grep -q 'loaded as a QuantileDMatrix' "$TMP/ref-plain.log" || { cat "$TMP/ref-plain.log"; return 1; }
  # the model learned something: the last train-logloss is well below the first
  awk -F'"train-logloss":' 'NR == 1 { split($2, a, ","); first = a[1] } END { split($2, a, ","); exit !(a[1] < first * 0.7) }' \
    "$d/metrics.jsonl" || { echo "train-logloss did not fall"; return 1; }
}
t "trains on native shards: model.ubj, one metrics line per round, the newest two checkpoints, heartbeat" check_end_to_end

check_repeatable() {
  train --model-dir "$TMP/again" 2>/dev/null && cmp "$TMP/ref-plain/model.ubj" "$TMP/again/model.ubj"
}
t "two uninterrupted runs write the same model bytes" check_repeatable

# Kills a run at FAILPOINT (TRAINRT_FAILPOINT, see trainer.cpp), restarts it, and compares.
check_failpoint() {
  local variant=$1 failpoint=$2 dir=$TMP/fp-$1-${2/:/-} extra=()
  if [ "$variant" = sampling ]; then extra=("${SAMPLING[@]}"); fi
  TRAINRT_FAILPOINT=$failpoint train --model-dir "$dir" "${extra[@]}" 2>"$dir.log1"
  rc=$?
  if [ "$rc" -ne 137 ]; then echo "expected the run to die by SIGKILL (137), got $rc"; tail -n 5 "$dir.log1"; return 1; fi
  if [ -f "$dir/model.ubj" ]; then echo "a killed run left model.ubj"; return 1; fi
  train --model-dir "$dir" "${extra[@]}" 2>"$dir.log2" || { echo "restart failed:"; tail -n 5 "$dir.log2"; return 1; }
  cmp "$TMP/ref-$variant/model.ubj" "$dir/model.ubj" || return 1
  [ "$(metric_rounds "$dir/metrics.jsonl")" = "$ROUNDS_1_40" ] || { echo "metrics rounds after resume:"; metric_rounds "$dir/metrics.jsonl"; return 1; }
  if find "$dir" -name '*.tmp' | grep -q .; then echo "temporary files left:"; find "$dir" -name '*.tmp'; return 1; fi
}
for variant in plain sampling; do
  for fp in round:5 metrics:10 checkpoint:15 round:23 final; do
    t "SIGKILL at $fp, restart: model.ubj identical to the uninterrupted run ($variant)" check_failpoint "$variant" "$fp"
  done
done

check_killed_twice() {
  local dir=$TMP/twice
  TRAINRT_FAILPOINT=round:7 train --model-dir "$dir" "${SAMPLING[@]}" 2>/dev/null
  TRAINRT_FAILPOINT=checkpoint:30 train --model-dir "$dir" "${SAMPLING[@]}" 2>/dev/null
  grep -q . "$dir/metrics.jsonl" || return 1
  train --model-dir "$dir" "${SAMPLING[@]}" 2>"$dir.log" && cmp "$TMP/ref-sampling/model.ubj" "$dir/model.ubj" &&
    [ "$(metric_rounds "$dir/metrics.jsonl")" = "$ROUNDS_1_40" ] && grep -q 'resuming from .*ckpt-000025.ubj' "$dir.log"
}
t "killed twice (round 7, then while writing checkpoint 30): same model" check_killed_twice

# kill -9 from outside, once WAIT_FOR exists (a file, or "lines:N" in metrics.jsonl).
check_outside_kill() {
  local when=$1 dir=$TMP/outside-$1 pid waited=0 lines
  # "$TRAINRT" itself, not the train function: a backgrounded function is a subshell, and killing
  # it would leave trainrt running.
  "$TRAINRT" train "${BASE[@]}" --model-dir "$dir" "${SAMPLING[@]}" 2>"$dir.log1" &
  pid=$!
  while [ "$waited" -lt 3000 ]; do
    case $when in
      first-checkpoint) [ -f "$dir/checkpoints/ckpt-000005.ubj" ] && break ;;
      mid-run) lines=$(cat "$dir/metrics.jsonl" 2>/dev/null | wc -l); [ "$lines" -ge 20 ] && break ;;
    esac
    sleep 0.01
    waited=$((waited + 1))
  done
  kill -9 "$pid" 2>/dev/null
  wait "$pid" 2>/dev/null
  echo "killed after $(cat "$dir/metrics.jsonl" 2>/dev/null | wc -l) rounds"
  train --model-dir "$dir" "${SAMPLING[@]}" 2>"$dir.log2" || { echo "restart failed:"; tail -n 5 "$dir.log2"; return 1; }
  cmp "$TMP/ref-sampling/model.ubj" "$dir/model.ubj" || { head -n 4 "$dir.log2"; return 1; }
  [ "$(metric_rounds "$dir/metrics.jsonl")" = "$ROUNDS_1_40" ] || { echo "metrics rounds:"; metric_rounds "$dir/metrics.jsonl"; return 1; }
}
t "kill -9 from outside after the first checkpoint, restart: same model" check_outside_kill first-checkpoint
t "kill -9 from outside mid-run, restart: same model" check_outside_kill mid-run

check_corrupt_checkpoint() {
  local dir=$TMP/corrupt
  TRAINRT_FAILPOINT=round:23 train --model-dir "$dir" 2>/dev/null
  [ -f "$dir/checkpoints/ckpt-000020.ubj" ] || { echo "no checkpoint 20"; return 1; }
  head -c 1000 "$TMP/ref-plain/model.ubj" >"$dir/checkpoints/ckpt-000020.ubj"
  train --model-dir "$dir" 2>"$dir.log" || { tail -n 5 "$dir.log"; return 1; }
  grep -q 'warning: skipping checkpoint .*ckpt-000020.ubj' "$dir.log" || { echo "no warning:"; head -n 5 "$dir.log"; return 1; }
  grep -q 'resuming from .*ckpt-000015.ubj' "$dir.log" || { head -n 5 "$dir.log"; return 1; }
  cmp "$TMP/ref-plain/model.ubj" "$dir/model.ubj"
}
t "a torn newest checkpoint is skipped with a warning; resumes from the one before" check_corrupt_checkpoint

check_rerun_after_done() {
  local dir=$TMP/rerun
  cp -r "$TMP/ref-sampling" "$dir"
  rm "$dir/model.ubj"
  train --model-dir "$dir" "${SAMPLING[@]}" 2>"$dir.log" && grep -q 'resuming from .*ckpt-000040.ubj' "$dir.log" &&
    cmp "$TMP/ref-sampling/model.ubj" "$dir/model.ubj" && [ "$(metric_rounds "$dir/metrics.jsonl")" = "$ROUNDS_1_40" ]
}
t "a rerun after completion resumes from the last checkpoint and writes the same bytes" check_rerun_after_done

check_fewer_rounds() {
  run "$TRAINRT" train "${BASE[@]}" --model-dir "$TMP/ref-plain" --rounds 30
  [ "$rc" -eq 1 ] && grep -q 'checkpoint after 40 rounds, more than --rounds 30' "$TMP/stderr" || { cat "$TMP/stderr"; return 1; }
}
t "a model dir holding more rounds than --rounds is refused" check_fewer_rounds

check_dense_same() {
  train --model-dir "$TMP/dense" --dmatrix dense 2>"$TMP/dense.log" && grep -q 'loaded as a DMatrix' "$TMP/dense.log" &&
    cmp "$TMP/ref-plain/model.ubj" "$TMP/dense/model.ubj"
}
t "the zero-copy QuantileDMatrix trains the same model as a plain DMatrix (--dmatrix dense)" check_dense_same

check_usage() {
  run "$TRAINRT" train --data "$DATA" --model-dir "$TMP/u" --rounds 5 --param max_depth
  [ "$rc" -eq 2 ] && grep -q "not key=value" "$TMP/stderr" || { echo "rc=$rc"; cat "$TMP/stderr"; return 1; }
  run "$TRAINRT" train --data "$DATA" --model-dir "$TMP/u" --rounds 0
  [ "$rc" -eq 2 ] || { echo "rc=$rc"; cat "$TMP/stderr"; return 1; }
  run "$TRAINRT" train --data "$DATA" --model-dir "$TMP/u" --rounds 5 --world-size 2 --rank 0
  [ "$rc" -eq 2 ] && grep -q -- "--tracker" "$TMP/stderr" || { echo "rc=$rc"; cat "$TMP/stderr"; return 1; }
  run "$TRAINRT" train --data "$TMP/nothing" --model-dir "$TMP/u" --rounds 5
  [ "$rc" -eq 1 ] && grep -q "cannot read the data folder" "$TMP/stderr" || { echo "rc=$rc"; cat "$TMP/stderr"; return 1; }
}
t "bad flags exit 2, a missing data folder exits 1 with a message" check_usage

check_corrupt_shard() {
  local bad=$TMP/bad-data
  cp -r "$DATA" "$bad"
  printf 'xxxx' | dd of="$bad/part-00001-of-00003.trs" bs=1 seek=5000 conv=notrunc 2>/dev/null
  run "$TRAINRT" train --data "$bad" --model-dir "$TMP/bad-model" --rounds 5
  [ "$rc" -eq 1 ] && grep -q "part-00001-of-00003.trs: payload checksum" "$TMP/stderr" || { echo "rc=$rc"; cat "$TMP/stderr"; return 1; }
}
t "a corrupt shard is refused, naming the file" check_corrupt_shard

# The table description datagen writes beside its shards is checked before training: broken JSON,
# a field of the wrong type and rows that disagree with a shard are refused with the file and field.
check_table_description() {
  local table=$TMP/table
  rm -rf "$table"
  "$TRAINRT" datagen --rows 3000 --features 6 --shards 2 --seed 3 --out "$table" --quiet || return 1
  run "$TRAINRT" train --data "$table" --model-dir "$TMP/table-model" --rounds 2 --threads 2
  [ "$rc" -eq 0 ] || { echo "a valid table: rc=$rc"; cat "$TMP/stderr"; return 1; }
  cp "$table/_trainrt_table.json" "$TMP/good.json"
  printf '{"rows": ' >"$table/_trainrt_table.json"
  run "$TRAINRT" train --data "$table" --model-dir "$TMP/table-model-2" --rounds 2
  [ "$rc" -eq 1 ] && grep -q "_trainrt_table.json: not valid JSON" "$TMP/stderr" || { echo "broken JSON: rc=$rc"; cat "$TMP/stderr"; return 1; }
  python3 -c 'import json,sys; j=json.load(open(sys.argv[1])); j["features"]="six"; json.dump(j,open(sys.argv[2],"w"))' \
    "$TMP/good.json" "$table/_trainrt_table.json"
  run "$TRAINRT" train --data "$table" --model-dir "$TMP/table-model-2" --rounds 2
  [ "$rc" -eq 1 ] && grep -q "field 'features' is \"six\"" "$TMP/stderr" || { echo "wrong type: rc=$rc"; cat "$TMP/stderr"; return 1; }
  python3 -c 'import json,sys; j=json.load(open(sys.argv[1])); j["files"][0]["rows"]+=1; j["files"][1]["rows"]-=1; json.dump(j,open(sys.argv[2],"w"))' \
    "$TMP/good.json" "$table/_trainrt_table.json"
  run "$TRAINRT" train --data "$table" --model-dir "$TMP/table-model-2" --rounds 2
  [ "$rc" -eq 1 ] && grep -q "lists 1501 rows for part-00000-of-00002.trs, which holds 1500" "$TMP/stderr" ||
    { echo "rows that disagree: rc=$rc"; cat "$TMP/stderr"; return 1; }
  if grep -q "json.exception" "$TMP/stderr"; then echo "a raw library message:"; cat "$TMP/stderr"; return 1; fi
}
t "the table's _trainrt_table.json is checked: broken, mistyped or disagreeing descriptions are refused" check_table_description

# ---- two ranks on loopback, through XGBoost 1.7's Python tracker ----------------------------
have_tracker() { "$PY" -c 'import xgboost.tracker' 2>/dev/null; }

# Starts tracker17.py for WORLD ranks; sets TRACKER_PID and TRACKER_ADDR.
start_tracker() {
  local world=$1 portfile=$TMP/port.$RANDOM waited=0
  "$PY" "$TRACKER" --world-size "$world" --port 0 --port-file "$portfile" --timeout 60 2>"$portfile.log" &
  TRACKER_PID=$!
  while [ ! -s "$portfile" ] && [ "$waited" -lt 500 ]; do sleep 0.02; waited=$((waited + 1)); done
  [ -s "$portfile" ] || { echo "tracker did not start:"; cat "$portfile.log"; return 1; }
  TRACKER_ADDR=127.0.0.1:$(cat "$portfile")
}
stop_tracker() { kill "$TRACKER_PID" 2>/dev/null; wait "$TRACKER_PID" 2>/dev/null; }

DIST=(--data "$DATA" --rounds 20 --checkpoint-every 5 --threads 1 --param objective=binary:logistic
      --param max_depth=6 --param seed=5 --param subsample=0.8 --world-size 2 --init-timeout 30 --save-on-all-ranks)

# Runs both ranks into PREFIX-r0 and PREFIX-r1; FAILPOINT (optional) applies to rank 0 only.
two_ranks() {
  local prefix=$1 failpoint=${2:-} p0 p1 rc0 rc1
  start_tracker 2 || return 1
  TRAINRT_FAILPOINT=$failpoint "$TRAINRT" train "${DIST[@]}" --tracker "$TRACKER_ADDR" --rank 0 --model-dir "$prefix-r0" 2>"$prefix-r0.log" &
  p0=$!
  "$TRAINRT" train "${DIST[@]}" --tracker "$TRACKER_ADDR" --rank 1 --model-dir "$prefix-r1" 2>"$prefix-r1.log" &
  p1=$!
  wait "$p0"; rc0=$?
  wait "$p1"; rc1=$?
  stop_tracker
  echo "ranks exited $rc0 $rc1"
  TWO_RC="$rc0 $rc1"
}

check_two_ranks() {
  two_ranks "$TMP/dist" || return 1
  [ "$TWO_RC" = "0 0" ] || { tail -n 5 "$TMP/dist-r0.log" "$TMP/dist-r1.log"; return 1; }
  cmp "$TMP/dist-r0/model.ubj" "$TMP/dist-r1/model.ubj" || return 1
  grep -q '"rows":20000,"ranks":2}$' "$TMP/dist-r0/metrics.jsonl" || { tail -n 1 "$TMP/dist-r0/metrics.jsonl"; return 1; }
  grep -q '2 shard(s), 13333 x 20' "$TMP/dist-r0.log" && grep -q '1 shard(s), 6667 x 20' "$TMP/dist-r1.log" ||
    { echo "ranks did not read disjoint shards"; head -n 3 "$TMP/dist-r0.log" "$TMP/dist-r1.log"; return 1; }
  # only rank 0 writes checkpoints and metrics
  [ -d "$TMP/dist-r0/checkpoints" ] && [ ! -e "$TMP/dist-r1/checkpoints" ] && [ ! -e "$TMP/dist-r1/metrics.jsonl" ]
}

check_two_ranks_resume() {
  two_ranks "$TMP/dkill" round:12 || return 1
  [ "$TWO_RC" != "0 0" ] || { echo "the killed run did not fail"; return 1; }
  grep -q 'another rank may have failed' "$TMP/dkill-r1.log" || { tail -n 3 "$TMP/dkill-r1.log"; return 1; }
  two_ranks "$TMP/dkill" || return 1
  [ "$TWO_RC" = "0 0" ] || { tail -n 5 "$TMP/dkill-r0.log" "$TMP/dkill-r1.log"; return 1; }
  grep -q 'resuming from .*ckpt-000010.ubj' "$TMP/dkill-r0.log" || { head -n 5 "$TMP/dkill-r0.log"; return 1; }
  cmp "$TMP/dist-r0/model.ubj" "$TMP/dkill-r0/model.ubj" && cmp "$TMP/dist-r0/model.ubj" "$TMP/dkill-r1/model.ubj"
}

check_missing_rank() {
  start_tracker 2 || return 1
  local t0=$SECONDS
  run "$TRAINRT" train "${DIST[@]}" --tracker "$TRACKER_ADDR" --rank 0 --model-dir "$TMP/lonely" --init-timeout 3
  stop_tracker
  [ "$rc" -eq 4 ] || { echo "expected exit 4, got $rc"; cat "$TMP/stderr"; return 1; }
  [ $((SECONDS - t0)) -le 10 ] || { echo "took $((SECONDS - t0)) s"; return 1; }
  grep -q "timed out after 3 s waiting for all 2 ranks to join through the tracker at $TRACKER_ADDR" "$TMP/stderr" ||
    { cat "$TMP/stderr"; return 1; }
}

if have_tracker; then
  t "2 ranks on loopback read disjoint shards and end with identical model bytes" check_two_ranks
  t "2 ranks: rank 0 killed at round 12, both restarted: resume from checkpoint 10, same model as uninterrupted" check_two_ranks_resume
  t "world size 2 but only one rank joins: exit 4 within the timeout, naming the tracker" check_missing_rank
else
  for name in "2 ranks on loopback" "2 ranks killed and resumed" "a rank that never joins"; do
    t_skip "$name" "/usr/bin/python3 has no xgboost.tracker (apt-get install python3-xgboost)"
  done
fi

tap_done
