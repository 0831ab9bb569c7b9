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
map() { case "$1" in s3://*) echo "$FAKE_S3/${1#s3://}" ;; *) echo "$1" ;; esac; }
# aws s3 cp FILE s3://bkt/dir/: a run's start marker, copied into the folder.
if [ "$1" = s3 ] && [ "$2" = cp ] && [ -f "$3" ]; then mkdir -p "$(map "$4")"; cp -a "$3" "$(map "$4")/"; exit 0; fi
[ "$1" = s3 ] && [ "$2" = sync ] || { echo "unexpected aws call: $*" >&2; exit 2; }
# AWS_FAIL=CODE:WHICH: a sync whose destination (out) or source (in) is the bucket fails with CODE.
if [ -n "${AWS_FAIL:-}" ]; then
  case "${AWS_FAIL#*:}:$3" in in:s3://* | out:[!s]*) echo "upload failed: stand-in failure" >&2; exit "${AWS_FAIL%%:*}" ;; esac
fi
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
# The image's python3 as the preflight asks it (python3 -c PROGRAM): a CUDA torch that sees the
# pod's GPUs, whatever python3 this machine has (Debian's CPU torch would refuse a GPU step).
printf '#!/bin/sh\nexit 0\n' >"$BIN/python3"
chmod +x "$BIN/aws" "$BIN/torchrun" "$BIN/python3"

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
  env PATH="$BIN:$PATH" FAKE_S3="$BUCKET" FAKE_LOG="$TMP/log" TRAINER_MODE="$1" TRAINC_RUN="${RUN:-r1}" \
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

# A failed sync exits 75 whatever aws exited with, so that noRetryExitCodes listing aws's code (1)
# does not fail the step at once for the store's or the network's trouble.
failed_syncs_exit_75() {
  local rc=0 code
  for code in 1 255; do
    rc=0
    AWS_FAIL=$code:in run_pod ok || rc=$?
    [ "$rc" -eq 75 ] || { echo "input sync failing with $code: expected exit 75, got $rc"; cat "$TMP/log/stdout"; return 1; }
    grep -q "aws s3 sync failed (exit $code); returning 75" "$TMP/log/stdout" || { echo "the log does not say which sync failed"; return 1; }
    [ ! -e "$TMP/log/args" ] || { echo "the trainer ran after its inputs failed to sync"; return 1; }
  done
  rc=0
  AWS_FAIL=1:out run_pod ok || rc=$?
  [ "$rc" -eq 75 ] || { echo "final sync failing after success: expected exit 75, got $rc"; cat "$TMP/log/stdout"; return 1; }
  grep -q 'final sync' "$TMP/log/stdout" || { echo "no final sync was attempted"; return 1; }
  # A failed trainer keeps its own code (3) over the failed final sync's.
  rc=0
  AWS_FAIL=1:out run_pod fail || rc=$?
  [ "$rc" -eq 3 ] || { echo "final sync failing after the trainer's 3: expected exit 3, got $rc"; cat "$TMP/log/stdout"; return 1; }
}

sigterm_reaches_trainer() {
  rm -rf "$WORK" "$STATE" "$TMP/log" "$BUCKET/bkt/runs/out"
  mkdir -p "$TMP/log"
  env PATH="$BIN:$PATH" FAKE_S3="$BUCKET" FAKE_LOG="$TMP/log" TRAINER_MODE=sleep TRAINC_RUN=r1 \
    bash "$TMP/entrypoint.sh" >"$TMP/log/stdout" 2>&1 &
  local pid=$! rc=0
  for _ in $(seq 100); do [ -f "$TMP/log/started" ] && break; sleep 0.1; done
  [ -f "$TMP/log/started" ] || { echo "trainer never started"; cat "$TMP/log/stdout"; kill "$pid"; return 1; }
  kill -TERM "$pid"
  wait "$pid" || rc=$?
  [ "$rc" -eq 143 ] || { echo "expected exit 143, got $rc"; cat "$TMP/log/stdout"; return 1; }
  [ -f "$BUCKET/bkt/runs/out/ckpt-term.pt" ] || { echo "checkpoint written on SIGTERM was not synced"; return 1; }
}

no_stray_processes() {
  # The background sync and keepalive loops must be gone once the script exits, and so must the
  # periodic sync's sleep (1h here). Every process the runs started has FAKE_S3 in its environment.
  # The keepalive's `sleep 30` may outlive its loop by up to 30s, and is not counted.
  if pgrep -f "$TMP/entrypoint.sh" >/dev/null; then echo "processes left:"; pgrep -af "$TMP/entrypoint.sh"; return 1; fi
  local p left=()
  for p in /proc/[0-9]*; do
    tr '\0' '\n' <"$p/environ" 2>/dev/null | grep -qx "FAKE_S3=$BUCKET" || continue
    [ "$(tr '\0' ' ' <"$p/cmdline" 2>/dev/null)" = "sleep 30 " ] || left+=("${p#/proc/}")
  done
  [ "${#left[@]}" -eq 0 ] || { echo "processes left:"; ps -o pid=,args= -p "${left[*]}"; return 1; }
}

# The step's log goes up with its outputs (outputs.log, on by default), with the trainer's lines
# and the exit status; never with `log: false`; and it is never taken for a checkpoint, even by a
# pattern that matches its name.
log_uploaded() {
  rm -rf "$BUCKET/bkt/runs/out"
  run_pod ok || { echo "exit $?"; cat "$TMP/log/stdout"; return 1; }
  local logs up
  logs=$(find "$BUCKET/bkt/runs/out" -name 'trainc-train-*.log')
  [ "$(printf '%s\n' "$logs" | grep -c .)" = 1 ] || { echo "not one log of the step in the bucket: $logs"; ls -R "$BUCKET/bkt/runs/out"; return 1; }
  up=$logs
  grep -q 'epoch 1 loss' "$up" || { echo "the trainer's output is not in the uploaded log"; cat "$up"; return 1; }
  grep -q 'trainer exited with status 0' "$up" || { echo "the uploaded log stops before the end"; cat "$up"; return 1; }
}
log_not_a_checkpoint() {
  sed -i 's|pattern: "\*.pt"|pattern: "*"|' "$TMP/spec.yaml"
  compile_it || return 1
  rm -rf "$BUCKET/bkt/runs/out"
  run_pod ok || { echo "exit $?"; cat "$TMP/log/stdout"; return 1; }
  run_pod ok || { echo "exit $?"; cat "$TMP/log/stdout"; return 1; }  # its restored log is the newest file
  if grep -q 'trainc-train-.*\.log' "$TMP/log/resume_env"; then echo "resumed from the step's own log"; return 1; fi
  grep -q 'ckpt-' "$TMP/log/resume_env" || { echo "not resumed from a checkpoint: $(cat "$TMP/log/resume_env")"; return 1; }
}
# A retry is a new pod: its log is a file of its own, and the failed attempt's stays.
log_per_attempt() {
  rm -rf "$BUCKET/bkt/runs/out"
  run_pod fail && { echo "the failing trainer's pod exited 0"; return 1; }
  sleep 1  # the logs are named by the second their attempt started
  run_pod ok || { echo "exit $?"; cat "$TMP/log/stdout"; return 1; }
  local logs
  logs=$(find "$BUCKET/bkt/runs/out" -name 'trainc-train-*.log' | sort)
  [ "$(printf '%s\n' "$logs" | grep -c .)" = 2 ] || { echo "not two logs for two attempts: $logs"; return 1; }
  grep -q 'trainer exited with status 3' "$(printf '%s\n' "$logs" | head -n 1)" ||
    { echo "the first attempt's log does not say it failed"; return 1; }
  grep -q 'trainer exited with status 0' "$(printf '%s\n' "$logs" | tail -n 1)" ||
    { echo "the second attempt's log does not say it succeeded"; return 1; }
}
log_off() {
  sed -i 's|every: 1h}|every: 1h, log: false}|' "$TMP/spec.yaml"
  compile_it || return 1
  rm -rf "$BUCKET/bkt/runs/out"
  run_pod ok || { echo "exit $?"; cat "$TMP/log/stdout"; return 1; }
  ls "$BUCKET"/bkt/runs/out/ckpt-*.pt >/dev/null 2>&1 || { echo "outputs not synced to the bucket"; return 1; }
  [ -z "$(find "$BUCKET/bkt/runs/out" -name 'trainc-train-*.log')" ] || { echo "the log was uploaded with log: false"; return 1; }
}
restore_spec() {
  sed -i -e 's|pattern: "\*"|pattern: "*.pt"|' -e 's|every: 1h, log: false}|every: 1h}|' "$TMP/spec.yaml"
  compile_it
}

t "compile a spec with S3 inputs, outputs and checkpoints" compile_it
t "first run syncs in, runs torchrun standalone, syncs out" first_run
t "a restarted pod resumes from the newest checkpoint" resumed_run
t "a failing trainer's exit status is kept and outputs still synced" failing_trainer
t "a failed sync exits 75 whatever aws exited with; a failed trainer keeps its own code" failed_syncs_exit_75
t "SIGTERM reaches the trainer, then outputs are synced" sigterm_reaches_trainer
t "no background process outlives the script" no_stray_processes
t "the step's log is uploaded with its outputs" log_uploaded
t "the uploaded log is never resumed from as a checkpoint" log_not_a_checkpoint
t "each attempt uploads a log of its own" log_per_attempt
t "outputs.log: false uploads no log" log_off
t "the spec as it was compiles" restore_spec

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

# A multi-node `command` step: the script exports NODE_HOSTS, every pod's stable name in rank order,
# made from NNODES (whatever the pod count, the pod spec stays the same size).
node_hosts_from_nnodes() {
  mkdir -p "$TMP/mnwork" "$TMP/mnlog"
  cat >"$TMP/mn.yaml" <<'SPEC'
apiVersion: trainc/v1
kind: TrainingSystem
name: mn
pipeline:
  - name: run
    image: img
    nodes: 2
    command: [bash, -c, 'printf "%s\n" "$NODE_HOSTS" >"$FAKE_LOG/hosts"']
SPEC
  sed -i "s|    nodes: 2|    nodes: 2\n    workdir: $TMP/mnwork|" "$TMP/mn.yaml"
  "$TRAINC" compile "$TMP/mn.yaml" -o "$TMP/mnout" >/dev/null || return 1
  awk '/^  entrypoint.sh: \|/ { on = 1; next } on && /^[^ ]/ { on = 0 } on { sub(/^    /, ""); print }' \
    "$TMP/mnout/mn/k8s/run-configmap.yaml" >"$TMP/mn-entrypoint.sh"
  rm -rf "$STATE"
  # The step is a JobSet named by its run (mn-run-<run>); its pods are <jobset>-node-0-<rank>.
  local job
  job=$(awk '/^metadata:/ { m = 1; next } m && /^  name:/ { print $2; exit }' "$TMP/mnout/mn/k8s/run-jobset.yaml")
  [[ $job =~ ^mn-run-[0-9a-f]{10}$ ]] || { echo "JobSet name '$job' is not mn-run-<run>"; return 1; }
  env NNODES=3 NODE_RANK=1 MASTER_ADDR="$job-node-0-0.$job" MASTER_PORT=29500 FAKE_LOG="$TMP/mnlog" \
    bash "$TMP/mn-entrypoint.sh" >"$TMP/mnlog/stdout" 2>&1 || { echo "exit $?"; cat "$TMP/mnlog/stdout"; return 1; }
  local want="$job-node-0-0.$job,$job-node-0-1.$job,$job-node-0-2.$job"
  [ "$(cat "$TMP/mnlog/hosts")" = "$want" ] || { echo "NODE_HOSTS='$(cat "$TMP/mnlog/hosts")', want '$want'"; return 1; }
}
t "a multi-node command step gets NODE_HOSTS for all NNODES pods, in rank order" node_hosts_from_nnodes
rm -rf "$STATE"

# torchrun exits 1 however a worker failed; the entry script exits with the first failed worker's
# code from torchrun's error summary (a signal N as 128+N), so noRetryExitCodes can judge it. A
# stand-in torchrun prints the summary torch 1.13 prints (ChildFailedError.format_msg) and exits 1.
torchrun_root_cause() {
  mkdir -p "$TMP/trwork" "$TMP/trbin"
  cat >"$TMP/tr.yaml" <<SPEC
apiVersion: trainc/v1
kind: TrainingSystem
name: tr
pipeline:
  - name: fit
    image: img
    nodes: 2
    workdir: $TMP/trwork
    torchrun: {script: train.py}
SPEC
  "$TRAINC" compile "$TMP/tr.yaml" -o "$TMP/trout" >/dev/null || return 1
  awk '/^  entrypoint.sh: \|/ { on = 1; next } on && /^[^ ]/ { on = 0 } on { sub(/^    /, ""); print }' \
    "$TMP/trout/tr/k8s/fit-configmap.yaml" >"$TMP/tr-entrypoint.sh"
  cat >"$TMP/trbin/torchrun" <<'STANDIN'
#!/usr/bin/env bash
if [ -z "$ROOT_CAUSE" ]; then echo "Traceback: RuntimeError"; exit 1; fi
printf '%s\n' '============================================================' 'train.py FAILED' \
  '------------------------------------------------------------' 'Failures:' '[1]:' \
  '  rank      : 3 (local_rank: 1)' '  exitcode  : 9 (pid: 15085)' \
  '------------------------------------------------------------' 'Root Cause (first observed failure):' '[0]:' \
  '  host      : pod-1' '  rank      : 2 (local_rank: 0)' "  exitcode  : $ROOT_CAUSE (pid: 15084)" \
  '  error_file: <N/A>' '============================================================'
exit 1
STANDIN
  chmod +x "$TMP/trbin/torchrun"
  local cause want rc
  for cause in -6:134 3:3 1:1 :1; do
    rm -rf "$STATE"
    want=${cause#*:}
    env PATH="$TMP/trbin:$PATH" ROOT_CAUSE="${cause%%:*}" NNODES=2 NODE_RANK=0 MASTER_ADDR=h MASTER_PORT=29500 \
      bash "$TMP/tr-entrypoint.sh" >"$TMP/tr.out" 2>&1
    rc=$?
    [ "$rc" = "$want" ] || { echo "root cause '${cause%%:*}': exit $rc, want $want"; cat "$TMP/tr.out"; return 1; }
  done
  grep -q "first failed worker exited with" "$TMP/tr.out" && { echo "no summary, yet a first failure was named"; return 1; }
  return 0
}
t "a torchrun step exits with its first failed worker's code (a signal as 128+N), not torchrun's 1" torchrun_root_cause
rm -rf "$STATE"

# ---- Every example's every entry script, fresh and resumed ------------------------------------
# Each step's entrypoint.sh, taken from its ConfigMap in the compiled k8s/, runs with the tools
# of tests/stubs.sh on PATH (aws with a folder as the bucket; torchrun, trainrt, python and
# python3 record their arguments). The absolute folders a pod owns (/workspace, /tmp/trainc,
# /home, /mnt, /data) are moved into a sandbox by prefixing them, so nothing outside it is
# written. Two scenarios per step: a fresh pod with an empty bucket, and a restarted pod whose
# bucket holds a checkpoint (steps with `checkpoints`) or whose outputs hold an earlier run's
# files (the others). Both must reach the launcher with the arguments the spec asks for; the
# resume flag, followed by the restored checkpoint, appears in the resumed run only.
# shellcheck source=tests/stubs.sh
. tests/stubs.sh

# expect EXAMPLE STEP LAUNCHER ARG...: from the examples' specs, arguments the launcher must get
# (a leading / is taken inside the sandbox; @JOB@ is the step's Job, named by its run).
declare -A EXPECT
expect() { local key="$1/$2"; shift 2; EXPECT[$key]=$(printf '%s\n' "$@"); }
expect customgpt train torchrun --standalone --nproc-per-node=4 /home/eai_role/code/train.py --output_dir out
expect dask-cpu sum-of-squares python3 client.py --n=1000000 --workers=2
expect gpt-a4-tas tokenize python3 tokenize_corpus.py
expect gpt-a4-tas pretrain torchrun --nnodes=4 --node-rank=0 --nproc-per-node=8 /workspace/train.py --config=gpt-1b
expect gpt-a4-tas evaluate torchrun --standalone --nnodes=1 --nproc-per-node=8 /workspace/eval.py
expect gpt-ladder tokenize python3 tokenize_corpus.py
expect gpt-ladder pretrain torchrun --nnodes=4 --node-rank=0 --nproc-per-node=8 /workspace/train.py --config=gpt-1b
expect gpt-ladder evaluate torchrun --standalone --nnodes=1 --nproc-per-node=8 /workspace/eval.py
expect jax-l4 train python3 train.py --data=/data
expect kueue-gpu prep python3 prep.py
expect kueue-gpu train-large torchrun --nnodes=4 --node-rank=0 --master-addr=@JOB@-node-0-0.@JOB@ --master-port=29500 /workspace/train.py --model=large
expect kueue-gpu train-small torchrun --nnodes=2 --node-rank=0 /workspace/train.py --model=small
expect mnist train torchrun --nnodes=4 --node-rank=0 --master-addr=@JOB@-node-0-0.@JOB@ --master-port=3389 /workspace/mnist.py --epochs=1 --log-interval=1
expect prep-and-train prepare python prepare.py --out shards
expect prep-and-train train torchrun --nnodes=2 --nproc-per-node=8 /workspace/train.py --lr=3e-4 --batch=512 --steps=20000 --data shards --out out
expect triton-tpu finetune python3 train.py --model=base
expect triton-tpu pretrain python3 train.py --model=large
expect xgb-a4 datagen trainrt datagen --rows=3740648379 --features=400 --shards=64 --shard-index=0 --out=/mnt/stores/data/synthetic
expect xgb-a4 train trainrt train --data=/mnt/stores/data/synthetic --model-dir=/mnt/stores/data/models/xgb --rounds=2000 --rank=0 --world-size=2
expect xgb-triton datagen trainrt datagen --rows=2000000 --features=16 --shards=8 --out=/mnt/stores/models/table
expect xgb-triton train trainrt train --data=/mnt/stores/models/table --model-dir=/mnt/stores/models/repo/fraud/1 --rounds=300
expect xgb-dask-a4 datagen python datagen.py --out=/data/synthetic
expect xgb-dask-a4 train python train.py --data=/data/synthetic --model=/data/models/xgb

EX_OUT="$TMP/examples"
compile_examples() {
  local spec
  for spec in examples/*/spec.yaml examples/*/spec.jsonnet; do
    case "$spec" in *.jsonnet) [ -e "${spec%.jsonnet}.yaml" ] && continue ;; esac
    "$TRAINC" compile "$spec" -o "$EX_OUT" >/dev/null 2>"$TMP/compile.err" || { echo "$spec:"; cat "$TMP/compile.err"; return 1; }
  done
}
t "every example compiles" compile_examples

# The arguments of the launcher's call that the step's expectation names (trainrt is also
# called for its preflight), one a line.
launcher_args() {
  local tool=$1 first=$2 f
  for f in "$STUB_STATE/calls/"*"-$tool"; do
    [ -e "$f" ] || continue
    if [ "$(head -z -n 1 "$f" | tr -d '\0')" = "$first" ]; then tr '\0' '\n' <"$f"; return 0; fi
  done
  return 1
}

# NAME=VALUE lines of the variables the entry scripts read, as step $2's workload in k8s folder $1
# sets them: literal values as written, NODE_RANK (a completion index) as 0.
pod_env() {
  local f
  for f in "$1/$2"-job.yaml "$1/$2"-jobset.yaml; do
    [ -e "$f" ] || continue
    awk '$1 == "-" && $2 == "name:" { name = $3; next }
         name ~ /^(NNODES|MASTER_ADDR|MASTER_PORT|DASK_SCHEDULER_ADDRESS)$/ && $1 == "value:" { v = $2; gsub(/"/, "", v); print name "=" v }
         name == "NODE_RANK" && $1 ~ /^value/ { print "NODE_RANK=0" }
         name == "TRAINC_RUN" && $1 == "valueFrom:" { print "TRAINC_RUN=r1" }
         { name = "" }' "$f"
    return 0
  done
}

# Runs entry script $2 of step $1 (example/step) in scenario $3 (fresh or resumed).
entry_run() {
  local key=$1 script=$2 scenario=$3 root=$TMP/pod
  local -a want
  mapfile -t want <<<"${EXPECT[$key]}"
  local tool=${want[0]}
  want=("${want[@]:1}")
  # The step's Job (or a gang's JobSet) beside its ConfigMap: @JOB@ in the expectation is its name.
  local jobfile=${script%-configmap.yaml}-job.yaml job=''
  [ -e "$jobfile" ] || jobfile=${script%-configmap.yaml}-jobset.yaml
  [ -e "$jobfile" ] && job=$(awk '/^metadata:/ { m = 1; next } m && /^  name:/ { print $2; exit }' "$jobfile")
  want=("${want[@]//@JOB@/$job}")
  rm -rf "$root" "$TMP/stubs" "$TMP/bucket"
  mkdir -p "$root" "$TMP/bucket" "$root/home-sandbox"  # HOME, which a pod has
  stubs_install "$TMP/stubs"
  stub_gib "$root"
  stub_entry_script "$script" "$TMP/entry.sh" "$root" || return 1
  # The restored outputs folder and, for steps with checkpoints, where they are looked for.
  local from='' to='' ckdir='' pattern='' resume_flag='' placed=''
  read -r from to < <(grep -A 2 "^log 'restoring outputs from " "$TMP/entry.sh" | sed -n 's/^s3 sync \(s3:[^ ]*\) \(.*\)$/\1 \2/p')
  ckdir=$(sed -n "s/^ *TRAINC_RESUME_FROM=\$({ find \([^ ]*\) -type f -name '\([^']*\)'.*/\1/p" "$TMP/entry.sh")
  pattern=$(sed -n "s/^ *TRAINC_RESUME_FROM=\$({ find \([^ ]*\) -type f -name '\([^']*\)'.*/\2/p" "$TMP/entry.sh")
  resume_flag=$(sed -n 's/^  trainer+=(\([^ ]*\) "$TRAINC_RESUME_FROM")$/\1/p' "$TMP/entry.sh")
  # The script names the pod's paths under its root ("$ROOT"), here $root.
  to=${to//'"$ROOT"'/$root}
  ckdir=${ckdir//'"$ROOT"'/$root}
  if [ "$scenario" = resumed ]; then
    if [ -n "$ckdir" ]; then
      [ -n "$from" ] || { echo "checkpoints without restored outputs"; return 1; }
      # Checkpoints in the bucket; the newest is resumed from. A store's time is when a sync
      # uploaded the file: step-9 and step-10 came in one sync, step-9 a moment later, and within
      # one second the name in version order decides (step-10).
      local rel=${ckdir#"$to"} name=${pattern//\*/step-10}
      mkdir -p "$TMP/bucket/${from#s3://}/$rel"
      touch -d '2020-01-01' "$TMP/bucket/${from#s3://}/$rel/${pattern//\*/step-1}"
      # This run (TRAINC_RUN=r1) started before them all (a retry of the same run resumes).
      touch -d '2019-01-01' "$TMP/bucket/${from#s3://}/$rel/.trainc-run-r1"
      echo w >"$TMP/bucket/${from#s3://}/$rel/$name"
      touch -d '2030-01-01 00:00:00.2' "$TMP/bucket/${from#s3://}/$rel/$name"
      echo w >"$TMP/bucket/${from#s3://}/$rel/${pattern//\*/step-9}"
      touch -d '2030-01-01 00:00:00.7' "$TMP/bucket/${from#s3://}/$rel/${pattern//\*/step-9}"
      placed="$ckdir/$name"
      placed=${placed//\/\//\/}
    else
      # An earlier run's files where the step writes: the same call is expected.
      mkdir -p "$root/workspace/out" "$root/mnt/stores/data/models/xgb" "$root/data/models/xgb"
      echo old >"$root/workspace/out/model-000100.pt"
      echo old >"$root/mnt/stores/data/models/xgb/checkpoint-100.ubj"
      echo old >"$root/data/models/xgb/checkpoint-100.ubj"
    fi
  fi
  [ "$scenario" = fresh ] && rm -f "$TMP/fresh.args"
  # The pod's environment as its workload manifest sets it (NODE_RANK, from the completion
  # index, is 0: the pod that syncs outputs); nothing else, so an unset variable fails under set -u.
  local -a podenv
  mapfile -t podenv < <(pod_env "$(dirname "$script")" "${key#*/}")
  local rc=0
  (cd "$root" && env PATH="$STUB_BIN:$PATH" HOME="$root/home-sandbox" TMPDIR="$root" STUB_S3="$TMP/bucket" \
    "${podenv[@]}" timeout 60 bash "$TMP/entry.sh") >"$TMP/entry.out" 2>&1 || rc=$?
  [ "$rc" -eq 0 ] || { echo "exit $rc:"; tail -n 15 "$TMP/entry.out"; return 1; }
  # A step that syncs outputs uploads its log with them (outputs.log, on by default).
  local outlog
  outlog=$(sed -n "s/^OUTPUT_LOG=//p" "$TMP/entry.sh")
  if [ -n "$outlog" ]; then
    # trainc-<step>-"$(date ...)".log: one per attempt, named by when it started
    outlog=${outlog//\'/}
    outlog=${outlog//\"/}
    local name=${outlog##*/} up
    up=$(find "$TMP/bucket/${from#s3://}" -maxdepth 1 -name "${name%%\$*}*.log" | head -n 1)
    grep -q 'trainer exited with status 0' "$up" 2>/dev/null ||
      { echo "the step's log did not reach the bucket as $up"; find "$TMP/bucket"; return 1; }
  fi
  # A step on an RDMA pool sets NCCL up for gIB first (the pod's pool says so); no other step does.
  local rdma=no
  if grep -qs 'networking.gke.io/interfaces' "$(dirname "$script")/${key#*/}"-job{,set}.yaml; then rdma=yes; fi
  if [ "$rdma" = yes ] && [ ! -e "$root/usr/local/gib/sourced" ]; then echo "an RDMA pod's script never sourced the gIB NCCL settings"; return 1; fi
  if [ "$rdma" = no ] && [ -e "$root/usr/local/gib/sourced" ]; then echo "a pod off RDMA pools sourced the gIB NCCL settings"; return 1; fi
  local args
  args=$(launcher_args "$tool" "${want[0]}") || { echo "$tool was never started with ${want[0]}; calls:"; stub_log; return 1; }
  local w
  for w in "${want[@]}"; do
    case "$w" in /*) w="$root$w" ;; --*=/*) w="${w%%=*}=$root${w#*=}" ;; esac
    grep -qxF -- "$w" <<<"$args" || { echo "$tool did not get '$w'; it got:"; echo "$args"; return 1; }
  done
  local resume
  resume=$(cat "$STUB_STATE/$tool.resume")
  if [ -n "$placed" ]; then
    grep -qxF -- "$resume_flag" <<<"$args" || { echo "no $resume_flag in the resumed run:"; echo "$args"; return 1; }
    [ "$(grep -A 1 -xF -- "$resume_flag" <<<"$args" | tail -n 1)" = "$placed" ] ||
      { echo "expected $resume_flag $placed; got:"; echo "$args"; return 1; }
    [ "$resume" = "$placed" ] || { echo "TRAINC_RESUME_FROM is '$resume', not $placed"; return 1; }
  else
    if [ -n "$resume_flag" ] && grep -qxF -- "$resume_flag" <<<"$args"; then
      echo "$resume_flag in a $scenario run without a checkpoint:"; echo "$args"; return 1
    fi
    [ -z "$resume" ] || { echo "TRAINC_RESUME_FROM is '$resume' with no checkpoint"; return 1; }
    if [ "$scenario" = fresh ]; then printf '%s\n' "$args" >"$TMP/fresh.args"; else
      [ "$args" = "$(cat "$TMP/fresh.args")" ] || { echo "the resumed run's arguments differ from the fresh run's:"; diff "$TMP/fresh.args" - <<<"$args"; return 1; }
    fi
  fi
}

n_steps=0
for cm in "$EX_OUT"/*/k8s/*-configmap.yaml; do
  [ -e "$cm" ] || continue
  grep -q '^  entrypoint.sh: |' "$cm" || continue
  ex=$(basename "$(dirname "$(dirname "$cm")")")
  step=$(basename "$cm" -configmap.yaml)
  n_steps=$((n_steps + 1))
  if [ -z "${EXPECT[$ex/$step]:-}" ]; then
    t_fail "$ex/$step: the test knows what its launcher gets" "no expectation for $ex/$step: add one to $0"
    continue
  fi
  t "$ex/$step: a fresh pod reaches the launcher with the spec's arguments" entry_run "$ex/$step" "$cm" fresh
  t "$ex/$step: a restarted pod resumes from the newest checkpoint, or runs the same" entry_run "$ex/$step" "$cm" resumed
done
t "every expected step has an entry script (23)" test "$n_steps" -eq "${#EXPECT[@]}"

# ---- A Dask client's heartbeat stays fresh while its cluster's workers are provisioned ---------
# xgb-dask-a4's workers are on a flex-start pool, whose nodes may take hours to come. Its client
# step runs under the stand-ins with a `python3` whose wait for the workers lasts until the test
# says they are up. Meanwhile the heartbeat, aged past the liveness probe's limit, is touched again
# (the keepalive's 30 s), so the probe, run as the Job writes it, passes again; the client's own
# command starts only once the workers are up.
client_alive_while_workers_come() {
  local cm="$EX_OUT/xgb-dask-a4/k8s/train-configmap.yaml" job="$EX_OUT/xgb-dask-a4/k8s/train-job.yaml"
  local root=$TMP/dpod probe
  probe=$(sed -n 's|^ *- \(test .*stat -c %Y /tmp/trainc/.*\)$|\1|p' "$job" | head -n 1)
  [ -n "$probe" ] || { echo "no heartbeat liveness probe in $job"; return 1; }
  probe=${probe//\/tmp\/trainc/$root/tmp/trainc}
  rm -rf "$root" "$TMP/dstubs" "$TMP/dbucket" "$TMP/workers-up" "$TMP/wait-args"
  mkdir -p "$root" "$TMP/dbucket" "$root/home-sandbox"
  stubs_install "$TMP/dstubs"
  stub_gib "$root"
  stub_entry_script "$cm" "$TMP/dentry.sh" "$root" || return 1
  cat >"$STUB_BIN/python3" <<'SH'
#!/usr/bin/env bash
# The wait for the Dask workers (a script on stdin): until $WORKERS_UP exists, a minute at most.
[ "${1:-}" = - ] || { echo "stub python3: unexpected call: $*" >&2; exit 2; }
cat >/dev/null
printf '%s\n' "$@" >"$WAIT_ARGS"
for _ in $(seq 600); do [ -e "$WORKERS_UP" ] && exit 0; sleep 0.1; done
exit 1
SH
  chmod +x "$STUB_BIN/python3"
  local -a podenv
  mapfile -t podenv < <(pod_env "$(dirname "$job")" train)
  (cd "$root" && env PATH="$STUB_BIN:$PATH" HOME="$root/home-sandbox" TMPDIR="$root" STUB_S3="$TMP/dbucket" \
    WAIT_ARGS="$TMP/wait-args" WORKERS_UP="$TMP/workers-up" "${podenv[@]}" timeout 90 bash "$TMP/dentry.sh") \
    >"$TMP/dentry.out" 2>&1 &
  local pid=$! rc=0 alive=no
  for _ in $(seq 100); do [ -e "$TMP/wait-args" ] && break; sleep 0.1; done
  [ -e "$TMP/wait-args" ] || { echo "the client never waited for its workers:"; cat "$TMP/dentry.out"; kill "$pid"; return 1; }
  if launcher_args python train.py >/dev/null; then echo "the command started before the workers were up"; kill "$pid"; return 1; fi
  touch -d '-2 hours' "$root/tmp/trainc/step.log"
  if sh -c "$probe"; then echo "the aged heartbeat passed the probe: $probe"; kill "$pid"; return 1; fi
  for _ in $(seq 40); do sh -c "$probe" && { alive=yes; break; }; sleep 1; done
  touch "$TMP/workers-up"
  wait "$pid" || rc=$?
  [ "$alive" = yes ] || { echo "the heartbeat went stale while the client waited for its workers"; return 1; }
  [ "$rc" -eq 0 ] || { echo "exit $rc:"; tail -n 15 "$TMP/dentry.out"; return 1; }
  [ "$(tr '\n' ' ' <"$TMP/wait-args")" = "- tcp://xgb-dask-a4-dask-scheduler:8786 2 " ] ||
    { echo "waited with: $(tr '\n' ' ' <"$TMP/wait-args")"; return 1; }
  launcher_args python train.py >/dev/null || { echo "the command never started; calls:"; stub_log; return 1; }
}
t "xgb-dask-a4/train: the client's heartbeat stays fresh while its workers are provisioned" client_alive_while_workers_come
rm -rf "$STATE"

# ---- The folders a step syncs into are writable by its user -----------------------------------
# Each example step that runs as a non-root UID on an image trainc did not build (its Job mounts
# scratch emptyDirs) runs as the cluster would make its pod: the image's workdir is root's and not
# writable by the pod's runAsUser; the emptyDir volumes the pod mounts are (the kubelet makes them
# world-writable, fsGroup the pod's). As root, the script runs as that UID (setpriv); otherwise the image's folder is
# made read-only. A sync into a folder no volume covers then fails, as it would in the cluster.
runs_as_its_user() {
  local cm=$1 job=$2 root=$TMP/upod uid workdir m
  uid=$(awk '$1 == "runAsUser:" { print $2; exit }' "$job")
  workdir=$(awk '$1 == "workingDir:" { print $2; exit }' "$job")
  [ -n "$uid" ] && [ "$uid" != 0 ] && [ -n "$workdir" ] || { echo "no runAsUser or workingDir in $job"; return 1; }
  rm -rf "$root" "$TMP/ustubs" "$TMP/ubucket"
  mkdir -p "$root/tmp" "$root/home-sandbox" "$TMP/ubucket"
  stubs_install "$TMP/ustubs"
  stub_entry_script "$cm" "$TMP/uentry.sh" "$root" || return 1
  mkdir -p "$root$workdir"  # the image's workdir, as its Dockerfile left it: root's, 0755
  while read -r m; do
    mkdir -p "$root$m" && chmod 0777 "$root$m"
    if [ "$(id -u)" = 0 ]; then chown "$uid:$uid" "$root$m"; fi  # as fsGroup leaves it to the pod
  done < <(awk '$1 == "-" && $2 == "name:" { scratch = ($3 ~ /^scratch-/); next }
                scratch && $1 == "mountPath:" { print $2 } { scratch = 0 }' "$job")
  chmod 1777 "$root/tmp" "$root/home-sandbox"
  # A file in the store behind every sync into the pod (inputs, and outputs restored), so each
  # writes into its target.
  local from
  while read -r from; do
    mkdir -p "$TMP/ubucket/${from#s3://}" && echo stored >"$TMP/ubucket/${from#s3://}/stored.txt"
  done < <(sed -n "s/^s3 sync '\{0,1\}\(s3:[^' ]*\)'\{0,1\} .*/\1/p" "$TMP/uentry.sh")
  local -a as_user=()
  if [ "$(id -u)" = 0 ]; then
    chmod a+rx "$TMP" && chmod -R a+rwX "$TMP/ustubs" && chown -R "$uid:$uid" "$TMP/ubucket"
    as_user=(setpriv --reuid="$uid" --regid="$uid" --clear-groups)
  else
    chmod a-w "$root$workdir"
  fi
  local -a podenv
  local step=${job##*/}
  step=${step%-jobset.yaml}
  mapfile -t podenv < <(pod_env "$(dirname "$job")" "${step%-job.yaml}")
  local rc=0
  # USER and LOGNAME: the image names its uid, which this machine's /etc/passwd need not.
  (cd "$root" && "${as_user[@]}" env PATH="$STUB_BIN:$PATH" HOME="$root/home-sandbox" TMPDIR="$root/tmp" USER=trainer LOGNAME=trainer \
    STUB_S3="$TMP/ubucket" "${podenv[@]}" timeout 60 bash "$TMP/uentry.sh") >"$TMP/uentry.out" 2>&1 || rc=$?
  chmod -R u+w "$root"
  [ "$rc" -eq 0 ] || { echo "exit $rc as uid $uid:"; tail -n 15 "$TMP/uentry.out"; return 1; }
}
n_user=0
for cm in "$EX_OUT"/*/k8s/*-configmap.yaml; do
  job=${cm%-configmap.yaml}-job.yaml
  [ -e "$job" ] || job=${cm%-configmap.yaml}-jobset.yaml  # a gang
  [ -e "$job" ] && grep -q 'name: scratch-' "$job" || continue
  ex=$(basename "$(dirname "$(dirname "$cm")")")
  n_user=$((n_user + 1))
  t "$ex/$(basename "${cm%-configmap.yaml}"): syncs only into folders its user may write" runs_as_its_user "$cm" "$job"
done
t "steps on images trainc did not build were run as their user (3)" test "$n_user" -eq 3
tap_done
