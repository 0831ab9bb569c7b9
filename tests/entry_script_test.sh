#!/usr/bin/env bash
# Runs a generated entry script for real (TAP), with stand-ins for `aws` (a folder plays the
# bucket) and `torchrun` on PATH: inputs are synced in, outputs out, a restarted pod resumes from
# the newest checkpoint, a failing trainer's status is kept, and SIGTERM reaches the trainer
# before a final sync. Usage: tests/entry_script_test.sh TRAINC
set -uo pipefail
# shellcheck source=tests/tap.sh
. "$(dirname "${BASH_SOURCE[0]}")/tap.sh"
tap_init "$@"

BUCKET="$TMP/s3"   # s3://bkt/... lives at $BUCKET/bkt/...
WORK="$TMP/work"
BIN="$TMP/bin"
STATE=/tmp/trainc  # fixed in the generated script (the probes read it)
mkdir -p "$BIN" "$BUCKET/bkt/runs/code" "$BUCKET/bkt/runs/data"
echo 'print("hi")' >"$BUCKET/bkt/runs/code/train.py"
echo 'rows' >"$BUCKET/bkt/runs/data/part-0"

cat >"$BIN/aws" <<'STUB'
#!/usr/bin/env bash
# aws s3 sync SRC DST [--only-show-errors]: s3://bkt/x maps to $FAKE_S3/bkt/x.
set -euo pipefail
[ "$1" = s3 ] && [ "$2" = sync ] || { echo "unexpected aws call: $*" >&2; exit 2; }
map() { case "$1" in s3://*) echo "$FAKE_S3/${1#s3://}" ;; *) echo "$1" ;; esac; }
src=$(map "$3"); dst=$(map "$4")
mkdir -p "$dst"
if [ -d "$src" ]; then cp -a "$src/." "$dst/"; fi
STUB
cat >"$BIN/torchrun" <<'STUB'
#!/usr/bin/env bash
# Records its arguments, writes a checkpoint, and behaves as $TRAINER_MODE says.
printf '%s\n' "$@" >"$FAKE_LOG/args"
printf '%s\n' "${TRAINC_RESUME_FROM:-}" >"$FAKE_LOG/resume_env"
echo "epoch 1 loss 0.5"
mkdir -p out
case "${TRAINER_MODE:-ok}" in
  ok) touch -d '2020-01-01' out/ckpt-old.pt; echo w >"out/ckpt-$(date +%s%N).pt"; exit 0 ;;
  fail) exit 3 ;;
  sleep) trap 'echo saved >out/ckpt-term.pt; exit 143' TERM; echo started >"$FAKE_LOG/started"; while :; do sleep 0.1; done ;;
esac
STUB
chmod +x "$BIN/aws" "$BIN/torchrun"

cat >"$TMP/spec.yaml" <<SPEC
apiVersion: trainc/v1
kind: TrainingSystem
name: entry
storage:
  runs: {s3: {bucket: bkt, prefix: runs}}
pipeline:
  - name: train
    image: img
    gpus: 4
    workdir: $WORK
    torchrun: {script: train.py, args: [--epochs, 2]}
    inputs:
      - {from: "runs:/code/", to: .}
      - {from: "runs:/data/", to: data}
    outputs: {path: out, to: "runs:/out/", every: 1h}
    checkpoints: {path: out, pattern: "*.pt", resumeFlag: --resume}
SPEC

extract_script() {
  # The ConfigMap holds the script as a literal block indented by four spaces.
  awk '/^  entrypoint.sh: \|/ { on = 1; next } on && /^[^ ]/ { on = 0 } on { sub(/^    /, ""); print }' \
    "$TMP/out/entry/k8s/train-configmap.yaml" >"$TMP/entrypoint.sh"
  [ -s "$TMP/entrypoint.sh" ] || { echo "no entrypoint.sh in the ConfigMap"; return 1; }
}

# A fresh pod: empty workdir and state, the bucket as previous runs left it.
run_pod() {
  rm -rf "$WORK" "$STATE" "$TMP/log"
  mkdir -p "$TMP/log"
  env PATH="$BIN:$PATH" FAKE_S3="$BUCKET" FAKE_LOG="$TMP/log" TRAINER_MODE="$1" \
    bash "$TMP/entrypoint.sh" >"$TMP/log/stdout" 2>&1
}

compile_it() { "$TRAINC" compile "$TMP/spec.yaml" -o "$TMP/out" >/dev/null && extract_script; }

first_run() {
  run_pod ok || { echo "exit $?"; cat "$TMP/log/stdout"; return 1; }
  [ -f "$WORK/train.py" ] || { echo "code not synced into the workdir"; return 1; }
  [ -f "$WORK/data/part-0" ] || { echo "data not synced into workdir/data"; return 1; }
  grep -qx -- '--standalone' "$TMP/log/args" || { echo "torchrun args:"; cat "$TMP/log/args"; return 1; }
  grep -qx -- '--nproc-per-node=4' "$TMP/log/args" || { echo "no --nproc-per-node=4"; return 1; }
  grep -qx -- "$WORK/train.py" "$TMP/log/args" || { echo "script path missing"; return 1; }
  if grep -qx -- '--resume' "$TMP/log/args"; then echo "resumed on a first run"; return 1; fi
  ls "$BUCKET"/bkt/runs/out/ckpt-*.pt >/dev/null 2>&1 || { echo "outputs not synced to the bucket"; return 1; }
  grep -q 'epoch 1 loss' "$STATE/step.log" || { echo "trainer output not in the heartbeat log"; return 1; }
}

resumed_run() {
  local newest
  newest=$(find "$BUCKET/bkt/runs/out" -name 'ckpt-[0-9]*.pt' -printf '%f\n' | sort | tail -n 1)
  run_pod ok || { echo "exit $?"; cat "$TMP/log/stdout"; return 1; }
  local args
  args=$(tr '\n' ' ' <"$TMP/log/args")
  case "$args" in
    *"--resume $WORK/out/$newest "*) ;;
    *) echo "expected --resume $WORK/out/$newest in: $args"; return 1 ;;
  esac
  grep -qx "$WORK/out/$newest" "$TMP/log/resume_env" || { echo "TRAINC_RESUME_FROM not exported"; return 1; }
}

failing_trainer() {
  local rc=0
  rm -rf "$BUCKET/bkt/runs/out"
  run_pod fail || rc=$?
  [ "$rc" -eq 3 ] || { echo "expected exit 3, got $rc"; cat "$TMP/log/stdout"; return 1; }
  grep -q 'final sync' "$TMP/log/stdout" || { echo "no final sync after a failure"; return 1; }
}

sigterm_reaches_trainer() {
  rm -rf "$WORK" "$STATE" "$TMP/log" "$BUCKET/bkt/runs/out"
  mkdir -p "$TMP/log"
  env PATH="$BIN:$PATH" FAKE_S3="$BUCKET" FAKE_LOG="$TMP/log" TRAINER_MODE=sleep \
    bash "$TMP/entrypoint.sh" >"$TMP/log/stdout" 2>&1 &
  local pid=$! rc=0
  for _ in $(seq 100); do [ -f "$TMP/log/started" ] && break; sleep 0.1; done
  [ -f "$TMP/log/started" ] || { echo "trainer never started"; kill "$pid"; return 1; }
  kill -TERM "$pid"
  wait "$pid" || rc=$?
  [ "$rc" -eq 143 ] || { echo "expected exit 143, got $rc"; cat "$TMP/log/stdout"; return 1; }
  [ -f "$BUCKET/bkt/runs/out/ckpt-term.pt" ] || { echo "checkpoint written on SIGTERM was not synced"; return 1; }
}

no_stray_processes() {
  # The background sync and keepalive loops must be gone once the script exits.
  if pgrep -f "$TMP/entrypoint.sh" >/dev/null; then echo "processes left:"; pgrep -af "$TMP/entrypoint.sh"; return 1; fi
}

t "compile a spec with S3 inputs, outputs and checkpoints" compile_it
t "first run syncs in, runs torchrun standalone, syncs out" first_run
t "a restarted pod resumes from the newest checkpoint" resumed_run
t "a failing trainer's exit status is kept and outputs still synced" failing_trainer
t "SIGTERM reaches the trainer, then outputs are synced" sigterm_reaches_trainer
t "no background process outlives the script" no_stray_processes

# Checkpoints in a folder the first run has not made yet (examples/prep-and-train's out/ckpt):
# looking for the newest one must not stop the script under `set -euo pipefail`.
fresh_run_without_checkpoint_folder() {
  sed -i 's|checkpoints: {path: out,|checkpoints: {path: out/ckpt,|' "$TMP/spec.yaml"
  rm -rf "$BUCKET/bkt/runs/out"
  compile_it || return 1
  run_pod ok || { echo "exit $?"; cat "$TMP/log/stdout"; return 1; }
  grep -qx -- "$WORK/train.py" "$TMP/log/args" || { echo "the trainer was not reached:"; cat "$TMP/log/stdout"; return 1; }
  if grep -qx -- '--resume' "$TMP/log/args"; then echo "resumed with no checkpoint"; return 1; fi
}
t "a fresh run whose checkpoint folder does not exist yet reaches the trainer" fresh_run_without_checkpoint_folder
rm -rf "$STATE"
tap_done
