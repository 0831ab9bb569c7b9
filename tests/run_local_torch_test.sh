#!/usr/bin/env bash
# `trainc run --local` with real PyTorch (gloo on the CPU) and a real S3 server (TAP): seed 002
# (examples/mnist) runs as 4 ranks through its entry script; a torchrun step that syncs to a local
# bucket is SIGKILLed mid-run and, run again, resumes from the newest checkpoint that reached the
# bucket through the entry script's own resume path (and does not when that path is broken); no
# process of a run outlives it and its ports close, after success, failure and SIGINT; nothing of a
# run listens beyond loopback (tests/listeners.py).
# Needs python3-torch, awscli and s3rver (tools/install-deps.sh installs them); skips, saying
# which, only when one is missing. Usage: tests/run_local_torch_test.sh TRAINC
set -uo pipefail
# shellcheck source=tests/tap.sh
. "$(dirname "${BASH_SOURCE[0]}")/tap.sh"
tap_init "$@"

if ! torch_tools_present; then
  echo "1..0 # SKIP missing $TORCH_TOOLS_MISSING; tools/install-deps.sh installs them"
  exit 0
fi

# A step like seed 001's: code and data from the bucket, checkpoints synced out every 2s. Each
# epoch waits 3s, so that a checkpoint reaches the bucket well before the step ends. No retries: a
# killed pod is retried like any failed one, and here the killed run must end so that the next run
# is the one that resumes.
cat >"$TMP/spec.yaml" <<'SPEC'
apiVersion: trainc/v1
kind: TrainingSystem
name: resume
storage:
  runs: {s3: {bucket: bkt, prefix: runs}}
pipeline:
  - name: train
    image: img
    gpus: 2
    retries: 0
    workdir: /home/trainer/code
    torchrun:
      script: train.py
      args: [--output_dir, out, --epochs, "6", --steps, "2", --pause, "3"]
    inputs:
      - {from: "runs:/code/", to: .}
      - {from: "runs:/data/", to: data}
    outputs: {path: out, to: "runs:/out/", every: 2s}
    checkpoints: {path: out, pattern: "*.pt", resumeFlag: --resume}
SPEC
WORK=$TMP/work
OBJECTS=$WORK/s3/bkt/runs/out   # where s3rver keeps the bucket's out/ objects
SEEDS=(--seed runs:/code/=examples/customgpt/code --seed runs:/data/=examples/customgpt/data)

# run_bg LOG ARGS...: starts `trainc run --local ARGS` in the background; PID is its pid. A run
# that hangs is interrupted after RUN_LIMIT seconds (exit 130, as after ^C), so that the case
# fails in minutes with its log rather than the suite's timeout with none.
RUN_LIMIT=300
run_bg() {
  local log=$1
  shift
  timeout -s INT -k 30 "$RUN_LIMIT" "$TRAINC" run --local "$@" >"$log" 2>&1 &
  PID=$!
}

# groups_of PATTERN: the process groups of the processes whose command line holds PATTERN (the
# pods' groups hold their keepalive's `sleep` too, which names no path).
# trainc itself shares this script's group, which is left out.
groups_of() {
  local me
  me=$(ps -o pgid= -p $$ | tr -d ' ')
  ps -eo pgid=,args= | awk -v p="$1" -v me="$me" 'index($0, p) && !/awk/ && $1 != me { print $1 }' | sort -u
}

# no_leftovers GROUPS LOG: none of GROUPS has a process left, and the S3 server's and the
# rendezvous' ports that LOG names accept no connection. Zombies do not count: they have exited,
# and reaping orphans is the job of whoever adopts them (pid 1 here, which may be slow at it).
no_leftovers() {
  local g port left=0
  for g in $1; do
    if ps -eo pgid=,pid=,stat=,args= | awk -v g="$g" '$1 == g && $3 !~ /^Z/' | grep .; then left=1; fi
  done
  [ "$left" -eq 0 ] || { echo "processes of the run are left (above)"; return 1; }
  while read -r port; do
    if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then echo "port $port still accepts"; return 1; fi
  done < <(grep -o '127\.0\.0\.1:[0-9]*\|MASTER_PORT=[0-9]*' "$2" | grep -o '[0-9]*$' | sort -u)
}

# wait_for SECONDS CMD...: polls CMD every half second.
wait_for() {
  local n=$(($1 * 2))
  shift
  while [ "$n" -gt 0 ]; do
    if "$@"; then return 0; fi
    sleep 0.5
    n=$((n - 1))
  done
  return 1
}

mnist_runs() {
  local rc=0 groups
  run_bg "$TMP/mnist.log" examples/mnist/spec.yaml --workdir "$TMP/mnist"
  wait_for 60 grep -q 'pod 3:' "$TMP/mnist.log"
  groups=$(groups_of "$TMP/mnist")
  wait "$PID" || rc=$?
  [ "$rc" -eq 0 ] || { echo "exit $rc"; tail -n 30 "$TMP/mnist.log"; return 1; }
  for i in 0 1 2 3; do
    grep -q "NODE_RANK=$i NNODES=4 MASTER_ADDR=127.0.0.1" "$TMP/mnist.log" || { echo "no pod with NODE_RANK=$i"; return 1; }
  done
  grep -q 'with 4 rank(s) in all' "$TMP/mnist.log" || { echo "no 4-rank summary"; tail -n 5 "$TMP/mnist.log"; return 1; }
  grep -q 'synthetic images' "$TMP/mnist.log" || { echo "mnist.py did not train on synthetic data"; return 1; }
  grep -q '^test accuracy' "$TMP/mnist.log" || { echo "rank 0 did not evaluate"; return 1; }
  [ -s "$TMP/mnist/pods/train/0/workspace/mnist_cnn.pt" ] || { echo "no model in pod 0's workspace"; return 1; }
  no_leftovers "$groups" "$TMP/mnist.log"
}

# The newest checkpoint in the bucket, by name (epochs are zero-padded).
newest_in_bucket() { find "$OBJECTS" -name 'ckpt-epoch-*.pt._S3rver_object' -printf '%f\n' | sort | tail -n 1 | sed 's/\._S3rver_object$//'; }
reached_bucket() { [ -n "$(find "$OBJECTS" -name 'ckpt-epoch-0002.pt._S3rver_object' 2>/dev/null)" ]; }

killed_mid_run() {
  local rc=0 pod groups
  run_bg "$TMP/first.log" "$TMP/spec.yaml" --workdir "$WORK" "${SEEDS[@]}"
  wait_for 240 reached_bucket || { echo "no checkpoint reached the bucket"; kill -INT "$PID"; wait "$PID"; tail -n 30 "$TMP/first.log"; return 1; }
  groups=$(groups_of "$WORK")
  # The pod dies as a preempted one does: its whole process group, at once.
  pod=$(ps -eo pgid=,args= | awk -v p="$WORK/pods/train/entrypoint.sh" 'index($0, p) && !/awk/ { print $1; exit }')
  [ -n "$pod" ] || { echo "no pod process"; return 1; }
  kill -KILL -- "-$pod"
  wait "$PID" || rc=$?
  [ "$rc" -ne 0 ] || { echo "trainc succeeded although its step was killed"; return 1; }
  grep -q 'epoch 6/6' "$TMP/first.log" && { echo "the step finished before it was killed"; return 1; }
  newest_in_bucket >"$TMP/newest"
  no_leftovers "$groups" "$TMP/first.log"
}

# resumed_from_newest LOG: the trainer of LOG's run continued from the newest checkpoint that was
# in the bucket before it ($TMP/newest), passed by the entry script.
resumed_from_newest() {
  local newest epoch
  newest=$(cat "$TMP/newest")
  epoch=${newest#ckpt-epoch-}
  epoch=$((10#${epoch%.pt}))
  grep -q "resuming from .*/out/$newest\$" "$1" || { echo "the entry script did not resume from $newest"; return 1; }
  grep -q "resumed from .*/out/$newest (epoch $epoch); continuing at epoch $((epoch + 1))" "$1" ||
    { echo "the trainer did not continue after epoch $epoch"; return 1; }
  if grep -q 'epoch 1/6' "$1"; then echo "trained epoch 1 again"; return 1; fi
}

resumes() {
  local rc=0 groups
  [ -s "$TMP/newest" ] || { echo "the killed run left no checkpoint"; return 1; }
  run_bg "$TMP/second.log" "$TMP/spec.yaml" --workdir "$WORK"
  wait_for 60 grep -q 'pod 0:' "$TMP/second.log"
  groups=$(groups_of "$WORK")
  wait "$PID" || rc=$?
  [ "$rc" -eq 0 ] || { echo "exit $rc"; tail -n 30 "$TMP/second.log"; return 1; }
  resumed_from_newest "$TMP/second.log" || { tail -n 30 "$TMP/second.log"; return 1; }
  grep -q 'epoch 6/6' "$TMP/second.log" || { echo "did not train to the end"; return 1; }
  [ -n "$(find "$OBJECTS" -name 'ckpt-epoch-0006.pt._S3rver_object')" ] || { echo "the last checkpoint was not synced out"; return 1; }
  no_leftovers "$groups" "$TMP/second.log"
}

# With a checkpoint pattern that matches nothing, the same check fails: it judges the resume path.
broken_pattern_fails() {
  sed -e 's/pattern: "\*\.pt"/pattern: "*.ckpt"/' -e 's/--pause, "3"/--pause, "0"/' "$TMP/spec.yaml" >"$TMP/broken.yaml"
  timeout -s INT -k 30 "$RUN_LIMIT" "$TRAINC" run --local "$TMP/broken.yaml" --workdir "$WORK" >"$TMP/broken.log" 2>&1 || { echo "exit $?"; tail -n 20 "$TMP/broken.log"; return 1; }
  if resumed_from_newest "$TMP/broken.log" >/dev/null; then echo "resumed although no checkpoint matches"; return 1; fi
  grep -q 'epoch 1/6' "$TMP/broken.log" || { echo "expected a fresh start"; return 1; }
}

sigint_stops_everything() {
  local rc=0 groups
  run_bg "$TMP/int.log" "$TMP/spec.yaml" --workdir "$TMP/int" "${SEEDS[@]}"
  wait_for 120 grep -q 'starting: torchrun' "$TMP/int.log" || { echo "the trainer never started"; kill -INT "$PID"; return 1; }
  sleep 2
  groups=$(groups_of "$TMP/int")
  kill -INT "$PID"
  wait "$PID" || rc=$?
  [ "$rc" -eq 130 ] || { echo "expected exit 130, got $rc"; tail -n 20 "$TMP/int.log"; return 1; }
  no_leftovers "$groups" "$TMP/int.log"
}

# torch_step DIR SCRIPT LINE...: DIR/spec.yaml, a system of one torchrun step that runs SCRIPT from
# an image built from DIR/code (a Dockerfile is written there), with each LINE added to the step.
torch_step() {
  local dir=$1 script=$2 line
  shift 2
  mkdir -p "$dir/code"
  printf 'FROM python:3.11\nCOPY . /workspace\n' >"$dir/code/Dockerfile"
  {
    printf '%s\n' "apiVersion: trainc/v1" "kind: TrainingSystem" "name: torch" \
      "gcp: {project: my-project, region: us-central1, zone: us-central1-c}" "pipeline:" "  - name: train" \
      "    build: {context: code, dockerfile: Dockerfile}" "    torchrun: {script: $script}"
    for line in "$@"; do printf '    %s\n' "$line"; done
  } >"$dir/spec.yaml"
}

# While two torchrun pods are in their process group, every socket the run listens on is on
# loopback: torchrun's rendezvous store binds every interface unless kept from it.
torch_only_loopback() {
  torch_step "$TMP/hold" hold.py "nodes: 2" "env: {READY: \"$TMP/hold/ready\", GO: \"$TMP/hold/go\"}"
  cat >"$TMP/hold/code/hold.py" <<'PY'
import os, time
import torch.distributed as dist
dist.init_process_group("gloo")
open(os.environ["READY"] + str(dist.get_rank()), "w").close()
while not os.path.exists(os.environ["GO"]):
    time.sleep(0.2)
dist.barrier()
PY
  local rc=0
  run_bg "$TMP/hold.log" "$TMP/hold/spec.yaml" --workdir "$TMP/hold/work"
  wait_for 240 test -e "$TMP/hold/ready1" -a -e "$TMP/hold/ready0" ||
    { echo "the ranks never joined the group"; kill -INT "$PID"; wait "$PID"; tail -n 20 "$TMP/hold.log"; return 1; }
  /usr/bin/python3 tests/listeners.py "$PID" >"$TMP/listeners" || rc=1
  touch "$TMP/hold/go"
  wait "$PID" || { echo "the run failed (exit $?)"; tail -n 20 "$TMP/hold.log"; return 1; }
  cat "$TMP/listeners"
  [ "$rc" -eq 0 ] || { echo "the run listened beyond loopback (lines with !)"; return 1; }
  grep -q " $(grep -o 'MASTER_PORT=[0-9]*' "$TMP/hold.log" | head -n 1 | cut -d= -f2) " "$TMP/listeners" ||
    { echo "the rendezvous store's port is not among the listeners"; return 1; }
}

# A standalone torchrun step (one pod of 2 ranks): its workers connect to the rendezvous store at
# the address the host name resolves to, where the preload must let them reach the store it moved
# to loopback. /etc/hosts is replaced in a mount namespace of the run's own, with the host name at
# 127.0.1.1 (a stock Debian or Ubuntu /etc/hosts) and then at this machine's network address (many
# cloud machines), where there is one.
standalone_where_hostname_is() {
  local addr=$1 dir="$TMP/standalone-$1"
  torch_step "$dir" ranks.py "gpus: 2"
  cat >"$dir/code/ranks.py" <<'PY'
import socket, sys
import torch.distributed as dist
dist.init_process_group("gloo")
dist.barrier()
try:
    host = socket.gethostbyname(socket.gethostname())
except OSError:
    host = "unresolved"
sys.stdout.write(f"rank {dist.get_rank()} of {dist.get_world_size()} joined; host name at {host}\n")  # one write
PY
  # "unresolved": a hosts file without the machine's name, as a bare chroot or container has.
  if [ "$addr" = unresolved ]; then printf '127.0.0.1\tlocalhost\n' >"$dir/hosts"
  else printf '127.0.0.1\tlocalhost\n%s\t%s\n' "$addr" "$(hostname)" >"$dir/hosts"; fi
  local rc=0
  timeout -s INT -k 30 120 unshare -rm sh -c 'mount --bind "$1" /etc/hosts && shift && exec "$@"' sh "$dir/hosts" \
    "$TRAINC" run --local "$dir/spec.yaml" --workdir "$dir/work" >"$dir/log" 2>&1 || rc=$?
  [ "$rc" -eq 0 ] || { echo "exit $rc (130: no progress in 120s)"; tail -n 20 "$dir/log"; return 1; }
  for r in 0 1; do
    grep -qF "rank $r of 2 joined; host name at $addr" "$dir/log" || { echo "rank $r did not join"; tail -n 20 "$dir/log"; return 1; }
  done
}

# This machine's address on its route off loopback (no packet is sent), if it has one.
network_address() {
  /usr/bin/python3 -c 'import socket; s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.connect(("192.0.2.1", 9)); print(s.getsockname()[0])' 2>/dev/null
}

t "examples/mnist: 4 pods of one rank each train on synthetic data, nothing left behind" mnist_runs
t "a step killed mid-run fails the run, with its checkpoints in the local bucket and nothing left behind" killed_mid_run
t "run again, it resumes from the newest checkpoint in the bucket and syncs the rest out" resumes
t "the resume check fails when the entry script finds no checkpoint (a pattern matching none)" broken_pattern_fails
t "SIGINT of trainc during a step stops the S3 server and every pod process (exit 130)" sigint_stops_everything
t "while two torchrun pods train, nothing of the run listens beyond loopback" torch_only_loopback
if unshare -rm true 2>/dev/null; then
  t "a standalone torchrun step runs where the host name resolves to 127.0.1.1" standalone_where_hostname_is 127.0.1.1
  # torch 2's agent is given loopback for its workers (--local_addr): no lookup of the name, no hang.
  t "a standalone torchrun step runs where the host name does not resolve" standalone_where_hostname_is unresolved
  addr=$(network_address)
  if [ -n "$addr" ] && [ "${addr#127.}" = "$addr" ]; then
    t "a standalone torchrun step runs where the host name resolves to the network address" standalone_where_hostname_is "$addr"
  else
    t_skip "a standalone torchrun step runs where the host name resolves to the network address" "no route off loopback"
  fi
else
  for name in "a standalone torchrun step runs where the host name resolves to 127.0.1.1" \
    "a standalone torchrun step runs where the host name does not resolve" \
    "a standalone torchrun step runs where the host name resolves to the network address"; do
    t_skip "$name" "unshare -rm fails here (no user or mount namespaces), so /etc/hosts cannot be replaced for the run"
  done
fi
tap_done
