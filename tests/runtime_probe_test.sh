#!/usr/bin/env bash
# trainrt probe and preflight from the outside (TAP): exit codes and the one-line reasons.
#   probe live:  0 fresh heartbeat; 5 old or missing (saying the age); 2 bad --max-age
#   probe ready: 0 when every path is readable; 5 naming each missing one
#   preflight:   3 without a GPU (checked first, so also for a rank whose rank 0 is missing), with the
#                message of the build `trainrt --version` reports: with CUDA, what to check on the pod;
#                without, that it was built without CUDA;
#                with --expect-gpus 0 (rendezvous only): 4 naming the rank that never joined, 0 when all do
# Usage: tests/runtime_probe_test.sh TRAINRT TRAINC
set -uo pipefail
# shellcheck source=tests/tap.sh
. "$(dirname "${BASH_SOURCE[0]}")/tap.sh"
tap_init_trainrt "$@"
rc=0  # exit code of the last run() (tests/tap.sh)

# Runs trainrt with the remaining arguments and fails unless it exits with $1.
expect_exit() {
  local want=$1
  shift
  run "$TRAINRT" "$@"
  if [ "$rc" -ne "$want" ]; then
    echo "trainrt $* exited $rc (expected $want)"
    echo "stdout:"; head -n 10 "$TMP/stdout"
    echo "stderr:"; head -n 10 "$TMP/stderr"
    return 1
  fi
}

# Fails unless FILE ($1: stdout or stderr of the last run) has a line matching the regex $2.
expect_line() {
  if ! grep -Eq -- "$2" "$TMP/$1"; then
    echo "no line of $1 matches: $2"
    echo "$1:"; head -n 10 "$TMP/$1"
    return 1
  fi
}

# A TCP port nothing listens on (bound and released at once).
free_port() {
  python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

has_gpu() {
  [ -e /dev/nvidia0 ] || command -v nvidia-smi >/dev/null 2>&1
}

# ---- probe live ----------------------------------------------------------------------------

check_fresh_heartbeat() {
  touch "$TMP/heartbeat"
  expect_exit 0 probe live --heartbeat "$TMP/heartbeat" --max-age 90s || return 1
  expect_line stdout "^heartbeat '.*/heartbeat' is [0-9.]+s old \(max age 1m30s\)$"
}

check_old_heartbeat() {
  touch -d '10 minutes ago' "$TMP/heartbeat"
  expect_exit 5 probe live --heartbeat "$TMP/heartbeat" --max-age 90s || return 1
  expect_line stderr "^heartbeat '.*/heartbeat' is 10m[0-9]*s? old, older than the max age 1m30s$" || return 1
  [ "$(wc -l <"$TMP/stderr")" -eq 1 ] || { echo "expected one line on stderr"; return 1; }
}

check_missing_heartbeat() {
  expect_exit 5 probe live --heartbeat "$TMP/never-written" --max-age 10m || return 1
  expect_line stderr "^heartbeat '.*/never-written' does not exist \(max age 10m\)$"
}

check_bad_max_age() {
  touch "$TMP/heartbeat"
  expect_exit 2 probe live --heartbeat "$TMP/heartbeat" --max-age soon || return 1
  expect_line stderr "'soon' is not a duration"
}

# ---- probe ready ---------------------------------------------------------------------------

check_ready() {
  mkdir -p "$TMP/data"
  echo x >"$TMP/data/part-0"
  expect_exit 0 probe ready --path "$TMP/data" "$TMP/data/part-0" || return 1
  expect_line stdout "^ready: all 2 paths are readable$"
}

check_not_ready() {
  mkdir -p "$TMP/data"
  expect_exit 5 probe ready --path "$TMP/data" --path "$TMP/absent" || return 1
  expect_line stderr "^not ready: '.*/absent' does not exist$"
}

# ---- preflight -----------------------------------------------------------------------------

# Whether this trainrt has the CUDA runtime and NCCL, as `trainrt --version` reports it: yes or no.
# Without them (a machine without /usr/local/cuda, or -Dcuda=disabled) preflight says so instead of
# asking CUDA about the GPUs.
cuda_build() {
  local v
  v=$("$TRAINRT" --version 2>&1) || { echo "trainrt --version failed: $v"; return 1; }
  sed -n 's/^cuda runtime + nccl (preflight): \(yes\|no\)$/\1/p' <<<"$v" | grep . ||
    { echo "trainrt --version has no 'cuda runtime + nccl (preflight): yes|no' line:"; printf '%s\n' "$v"; return 1; }
}

# A CUDA build on a machine without a GPU: what CUDA answered and what to check on the pod.
check_preflight_no_gpu() {
  expect_exit 3 preflight --expect-gpus 8 || return 1
  expect_line stderr "^trainrt preflight: no usable GPU \(expected 8\)" || return 1
  expect_line stderr "nvidia.com/gpu" || return 1
  expect_line stdout '^\{"preflight":"no_gpu","exit":3,'
}

# A build without CUDA: preflight exits 3 however many GPUs the machine has, and says why.
check_preflight_built_without_cuda() {
  expect_exit 3 preflight --expect-gpus 8 || return 1
  expect_line stderr "^trainrt preflight: no usable GPU: trainrt was built without CUDA \(no CUDA runtime or NCCL" ||
    return 1
  expect_line stderr "^  check: run the trainrt container image, which is built with CUDA; or pass --expect-gpus 0" ||
    return 1
  expect_line stdout '^\{"preflight":"no_gpu","exit":3,"rank":0,"world_size":1,"expect_gpus":8,"error":"no usable GPU: trainrt was built without CUDA'
}

check_preflight_gpu_check_first() {
  expect_exit 3 preflight --world-size 2 --rank 1 --coordinator "127.0.0.1:$(free_port)" --timeout 1 || return 1
  expect_line stderr "no usable GPU"
}

check_preflight_rank0_missing() {
  local port
  port=$(free_port)
  expect_exit 4 preflight --expect-gpus 0 --world-size 2 --rank 1 --coordinator "127.0.0.1:$port" --timeout 1 ||
    return 1
  expect_line stderr "^trainrt preflight: rank 0 never answered at 127.0.0.1:$port within 1s" || return 1
  expect_line stdout '"missing_ranks":\[0\]'
}

check_preflight_rank2_missing() {
  local port pid0 rc0=0
  port=$(free_port)
  "$TRAINRT" preflight --expect-gpus 0 --world-size 3 --rank 0 --coordinator "127.0.0.1:$port" --timeout 2 \
    >"$TMP/rank0.out" 2>"$TMP/rank0.err" &
  pid0=$!
  expect_exit 4 preflight --expect-gpus 0 --world-size 3 --rank 1 --coordinator "127.0.0.1:$port" --timeout 2 ||
    { wait "$pid0"; return 1; }
  wait "$pid0" || rc0=$?
  expect_line stderr "^trainrt preflight: rank 2 never joined" || return 1
  [ "$rc0" -eq 4 ] || { echo "rank 0 exited $rc0 (expected 4)"; cat "$TMP/rank0.err"; return 1; }
  grep -q '^trainrt preflight: rank 2 never joined within 2s$' "$TMP/rank0.err" ||
    { echo "rank 0 did not name rank 2:"; cat "$TMP/rank0.err"; return 1; }
}

check_preflight_ranks_meet() {
  local port pid0 rc0=0
  port=$(free_port)
  RANK=0 WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 MASTER_PORT=$port "$TRAINRT" preflight --expect-gpus 0 --timeout 10 \
    >"$TMP/rank0.out" 2>"$TMP/rank0.err" &
  pid0=$!
  RANK=1 WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 MASTER_PORT=$port expect_exit 0 preflight --expect-gpus 0 --timeout 10 ||
    { wait "$pid0"; return 1; }
  wait "$pid0" || rc0=$?
  [ "$rc0" -eq 0 ] || { echo "rank 0 exited $rc0"; cat "$TMP/rank0.err"; return 1; }
  expect_line stdout "^rendezvous: all 2 ranks joined" || return 1
  expect_line stdout '^\{"preflight":"ok","exit":0,"rank":1,"world_size":2,'
}

check_preflight_usage() {
  expect_exit 2 preflight --world-size 2 || return 1
  expect_line stderr "needs rank 0's address"
}

t "probe live: a fresh heartbeat passes" check_fresh_heartbeat
t "probe live: a heartbeat older than --max-age fails with 5, saying its age" check_old_heartbeat
t "probe live: a missing heartbeat fails with 5" check_missing_heartbeat
t "probe live: a bad --max-age is a usage error" check_bad_max_age
t "probe ready: readable file and listable folder pass" check_ready
t "probe ready: a missing path fails with 5, named" check_not_ready
t "trainrt --version says whether it was built with the CUDA runtime and NCCL" cuda_build
cuda=$(cuda_build 2>/dev/null) || cuda=unknown
if [ "$cuda" = no ]; then
  t "preflight: built without CUDA, exits 3 saying so and what to run instead" check_preflight_built_without_cuda
  t "preflight: the GPU check comes before the rendezvous" check_preflight_gpu_check_first
elif [ "$cuda" != yes ]; then
  t_fail "preflight: no GPU exits 3 with what to check" "not run: trainrt --version does not say whether it has CUDA"
elif has_gpu; then
  t_skip "preflight: no GPU exits 3 with what to check" "this machine has a GPU"
  t_skip "preflight: the GPU check comes before the rendezvous" "this machine has a GPU"
else
  t "preflight: built with CUDA, no GPU exits 3 with what to check" check_preflight_no_gpu
  t "preflight: the GPU check comes before the rendezvous" check_preflight_gpu_check_first
fi
t "preflight --expect-gpus 0: rank 0 missing exits 4 naming it" check_preflight_rank0_missing
t "preflight --expect-gpus 0: rank 2 missing makes ranks 0 and 1 exit 4 naming it" check_preflight_rank2_missing
t "preflight --expect-gpus 0: ranks from RANK/WORLD_SIZE/MASTER_* meet" check_preflight_ranks_meet
t "preflight: a world without a coordinator is a usage error" check_preflight_usage
tap_done
