#!/usr/bin/env bash
# `trainc run --local` end to end (TAP): a spec's datagen step and a two-rank XGBoost step run on
# this machine (ranks as processes on loopback, stores as folders), an oversized table is refused
# with a hint, and a two-node command step runs as two pods (their entry scripts), each with an
# environment of its own, and nothing a step detaches outlives the run. Usage: tests/run_local_test.sh TRAINRT TRAINC
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

# A command step on two nodes runs as two pods, each its entry script in a folder of its own with
# the rendezvous variables the Job gives, on loopback; a seed fills a GCS store's folder first.
command_step_as_pods() {
  cat >"$TMP/cmd.yaml" <<'SPEC'
apiVersion: trainc/v1
kind: TrainingSystem
name: local-cmd
storage:
  data: {gcs: {bucket: local-data, create: false}}
pipeline:
  - name: ranks
    image: img
    nodes: 2
    env: {GREETING: hello}
    command: [bash, -c, 'echo "$GREETING $NODE_RANK/$NNODES $MASTER_ADDR $NODE_HOSTS" >rank.txt']
SPEC
  mkdir -p "$TMP/seed" && echo seeded >"$TMP/seed/x.txt"
  "$TRAINC" run "$TMP/cmd.yaml" --local --workdir "$TMP/cmd" --seed "data:/in=$TMP/seed" >"$TMP/cmd.log" 2>&1 ||
    { echo "exit $?"; tail -n 30 "$TMP/cmd.log"; return 1; }
  [ "$(cat "$TMP/cmd/stores/data/in/x.txt")" = seeded ] || { echo "the seed did not reach the store's folder"; return 1; }
  grep -q 'no GCS emulator' "$TMP/cmd.log" || { echo "GCS stores as folders not said"; return 1; }
  local i want got
  for i in 0 1; do
    # The step is a gang's JobSet named by its run; its pods: local-cmd-ranks-<run>-node-0-<index>.local-cmd-ranks-<run>.
    got=$(cat "$TMP/cmd/pods/ranks/$i/workspace/rank.txt" 2>/dev/null)
    want="hello $i/2 127.0.0.1 local-cmd-ranks-RUN-node-0-0.local-cmd-ranks-RUN,local-cmd-ranks-RUN-node-0-1.local-cmd-ranks-RUN"
    [[ $got =~ local-cmd-ranks-([0-9a-f]{10})-node-0-0 ]] && want=${want//RUN/${BASH_REMATCH[1]}}
    [ "$got" = "$want" ] ||
      { echo "pod $i wrote '$(cat "$TMP/cmd/pods/ranks/$i/workspace/rank.txt" 2>&1)', expected '$want'"; return 1; }
    [ -f "$TMP/cmd/pods/ranks/$i/tmp/trainc/step.log" ] || { echo "pod $i's log is not in its own folder"; return 1; }
  done
  grep -q 'ran the command as 2 pod(s) with 2 rank(s)' "$TMP/cmd.log" || { echo "no summary:"; tail -n 5 "$TMP/cmd.log"; return 1; }
}

# A failed attempt starts the step's pods again, fresh, up to `retries` times, as the Job would.
retries_as_the_job() {
  local mark="$TMP/retry-mark"
  rm -f "$mark"
  cat >"$TMP/retry.yaml" <<SPEC
apiVersion: trainc/v1
kind: TrainingSystem
name: local-retry
pipeline:
  - name: flaky
    image: img
    retries: 1
    env: {MARK: "$mark"}
    command: [bash, -c, 'if [ -e "\$MARK" ]; then echo second >attempt.txt; else touch "\$MARK"; exit 3; fi']
SPEC
  "$TRAINC" run "$TMP/retry.yaml" --local --workdir "$TMP/retry" >"$TMP/retry.log" 2>&1 ||
    { echo "exit $?"; tail -n 20 "$TMP/retry.log"; return 1; }
  grep -q "retrying step 'flaky' as one gang (attempt 2): pod 0's failure (exit 3) spent retry 1 of 1" "$TMP/retry.log" || { echo "no retry said:"; tail -n 20 "$TMP/retry.log"; return 1; }
  [ "$(cat "$TMP/retry/pods/flaky/0/workspace/attempt.txt" 2>/dev/null)" = second ] ||
    { echo "the second attempt did not run"; return 1; }
  # With no retries left, the failure ends the run.
  rm -f "$mark"
  sed -i 's/retries: 1/retries: 0/' "$TMP/retry.yaml"
  local rc=0
  "$TRAINC" run "$TMP/retry.yaml" --local --workdir "$TMP/retry" >"$TMP/retry.log" 2>&1 || rc=$?
  [ "$rc" -ne 0 ] || { echo "a failing step with retries: 0 passed"; return 1; }
  if grep "retrying step '" "$TMP/retry.log"; then echo "retried with retries: 0"; return 1; fi
}

# The entry script's preflight runs here too: a step whose program this machine (standing in for
# its image) lacks stops within its first second, with one line naming the image, the missing tool
# and the fix, exit 78, before any work (no state folder), and is not retried.
preflight_stops_at_once() {
  cat >"$TMP/pf.yaml" <<'SPEC'
apiVersion: trainc/v1
kind: TrainingSystem
name: local-preflight
pipeline:
  - {name: lacking, image: registry.test/img:1, retries: 2, command: [trainc-no-such-tool, --run]}
SPEC
  local rc=0
  "$TRAINC" run "$TMP/pf.yaml" --local --workdir "$TMP/pf" >"$TMP/pf.log" 2>&1 || rc=$?
  [ "$rc" -eq 78 ] || { echo "expected exit 78, got $rc"; tail -n 20 "$TMP/pf.log"; return 1; }
  local line
  line=$(grep '^trainc preflight: ' "$TMP/pf.log")
  [ "$(printf '%s\n' "$line" | grep -c .)" = 1 ] || { echo "not one preflight line:"; cat "$TMP/pf.log"; return 1; }
  case "$line" in
    *"this machine (standing in for image 'registry.test/img:1' under trainc run --local) cannot run step 'lacking': no 'trainc-no-such-tool' on PATH"*": install it in the image"*) ;;
    *) echo "the line does not name the image, the tool and the fix: $line"; return 1 ;;
  esac
  if grep "retrying step '" "$TMP/pf.log"; then echo "retried after the preflight failed"; return 1; fi
  grep -q "step 'lacking' failed: pod 0 (NODE_RANK 0) exited with code 78 (its preflight failed), which the step's noRetryExitCodes lists (78, 126, 127): it is not retried" "$TMP/pf.log" ||
    { echo "no word of no retry:"; cat "$TMP/pf.log"; return 1; }
  [ ! -e "$TMP/pf/pods/lacking/0/tmp/trainc" ] || { echo "the script did work before its preflight stopped it"; return 1; }
  local secs
  secs=$(sed -n "s/^trainc: step 'lacking' failed (exit 78) after \([0-9.]*\)s.*/\1/p" "$TMP/pf.log")
  [ -n "$secs" ] && awk -v s="$secs" 'BEGIN { exit !(s < 1) }' || { echo "not stopped within a second (${secs:-?}s)"; return 1; }
}

# A pod killed from outside (SIGKILL, 137: what the OOM killer does) is a failure like any other
# and retried; only trainc's own interruption (Ctrl-C) ends the run without a retry.
killed_pod_retried() {
  local mark="$TMP/killed-mark"
  rm -f "$mark"
  cat >"$TMP/killed.yaml" <<SPEC
apiVersion: trainc/v1
kind: TrainingSystem
name: local-killed
pipeline:
  - name: oom
    image: img
    retries: 1
    env: {MARK: "$mark"}
    command: [bash, -c, 'if [ -e "\$MARK" ]; then echo second >attempt.txt; else touch "\$MARK"; kill -KILL \$\$; fi']
SPEC
  "$TRAINC" run "$TMP/killed.yaml" --local --workdir "$TMP/killed" >"$TMP/killed.log" 2>&1 ||
    { echo "exit $?"; tail -n 20 "$TMP/killed.log"; return 1; }
  grep -q "exited with status 137" "$TMP/killed.log" || { echo "the first attempt did not die with 137:"; tail -n 20 "$TMP/killed.log"; return 1; }
  grep -q "retrying step 'oom' as one gang (attempt 2): pod 0's failure (exit 137) spent retry 1 of 1" "$TMP/killed.log" || { echo "not retried:"; tail -n 20 "$TMP/killed.log"; return 1; }
  [ "$(cat "$TMP/killed/pods/oom/0/workspace/attempt.txt" 2>/dev/null)" = second ] ||
    { echo "the second attempt did not run"; return 1; }
}

# A step past its timeout is stopped, and not retried: the Job's deadline spans its retries.
timeout_as_the_job() {
  cat >"$TMP/timeout.yaml" <<'SPEC'
apiVersion: trainc/v1
kind: TrainingSystem
name: local-timeout
pipeline:
  - {name: slow, image: img, timeout: 2s, retries: 2, command: [sleep, "60"]}
SPEC
  local rc=0 t0=$SECONDS
  "$TRAINC" run "$TMP/timeout.yaml" --local --workdir "$TMP/timeout" >"$TMP/timeout.log" 2>&1 || rc=$?
  [ "$rc" -ne 0 ] || { echo "a step past its timeout passed"; return 1; }
  [ $((SECONDS - t0)) -lt 30 ] || { echo "the step was not stopped at its timeout"; return 1; }
  grep -q "step 'slow' ran past its timeout (2 s" "$TMP/timeout.log" || { echo "no timeout said:"; tail -n 20 "$TMP/timeout.log"; return 1; }
  if grep "retrying step '" "$TMP/timeout.log"; then echo "retried after the timeout"; return 1; fi
}

# A pod's environment is its own: the step's env, its secrets, PATH and a HOME under the workdir,
# and nothing else of the caller's shell (here a marker the spec never names).
clean_environment() {
  cat >"$TMP/env.yaml" <<'SPEC'
apiVersion: trainc/v1
kind: TrainingSystem
name: local-env
pipeline:
  - name: show
    image: img
    env:
      GREETING: hello
      TOKEN: {secretRef: {name: tok, key: token}}
    command: [bash, -c, 'env >env.txt']
SPEC
  TRAINC_TEST_MARKER=leaked TOKEN=from-the-shell "$TRAINC" run "$TMP/env.yaml" --local --workdir "$TMP/env" \
    >"$TMP/env.log" 2>&1 || { echo "exit $?"; tail -n 20 "$TMP/env.log"; return 1; }
  local env=$TMP/env/pods/show/0/workspace/env.txt home
  [ -s "$env" ] || { echo "the step wrote no env.txt"; tail -n 20 "$TMP/env.log"; return 1; }
  if grep '^TRAINC_TEST_MARKER=' "$env"; then echo "a variable of the caller's shell reached the pod (above)"; return 1; fi
  grep -qx 'GREETING=hello' "$env" || { echo "the step's env is missing:"; cat "$env"; return 1; }
  grep -qx 'TOKEN=from-the-shell' "$env" || { echo "the named secret is missing:"; cat "$env"; return 1; }
  grep -q '^PATH=.' "$env" || { echo "no PATH:"; cat "$env"; return 1; }
  home=$(sed -n 's/^HOME=//p' "$env")
  case "$home" in "$(cd "$TMP/env" && pwd)"/pods/show/0/*) ;; *) echo "HOME is '$home', not under the pod's folder"; return 1 ;; esac
  [ -d "$home" ] || { echo "HOME $home does not exist"; return 1; }
}

# A process a step detached from its pod (setsid) is stopped when the run ends: in the run's PID
# namespace, and by the end-of-run scan where there is none (TRAINC_LOCAL_CONTAIN=0). It is found
# from outside by a word on its command line (pids inside the namespace are not this shell's).
reaps_escaped() {
  local mode=$1 word
  word="trainc-escaped-$mode-$$"
  cat >"$TMP/escape.yaml" <<SPEC
apiVersion: trainc/v1
kind: TrainingSystem
name: local-escape
pipeline:
  - name: detach
    image: img
    command: [bash, -c, 'setsid bash -c "exec -a $word sleep 300" </dev/null >/dev/null 2>&1 & sleep 0.5']
SPEC
  local contain=1
  [ "$mode" = scan ] && contain=0
  TRAINC_LOCAL_CONTAIN=$contain "$TRAINC" run "$TMP/escape.yaml" --local --workdir "$TMP/escape-$mode" >"$TMP/escape.log" 2>&1 ||
    { echo "exit $?"; tail -n 20 "$TMP/escape.log"; return 1; }
  if [ "$mode" = scan ]; then
    grep -q "not contained in a PID namespace of its own (TRAINC_LOCAL_CONTAIN=0)" "$TMP/escape.log" ||
      { echo "the uncontained run does not say what it cannot guarantee"; tail -n 5 "$TMP/escape.log"; return 1; }
  elif grep -q "not contained in a PID namespace" "$TMP/escape.log"; then
    echo "SKIP: $(grep "not contained" "$TMP/escape.log")"
  fi
  local left
  left=$(pgrep -f "^$word" || true)
  if [ -n "$left" ]; then
    echo "the detached process outlived the run: $left"
    pkill -f "^$word"
    return 1
  fi
}

# A process that leaves its group and forks and exits in a loop, each generation living
# microseconds, ends with the run: the kernel ends the run's PID namespace whole. (The end-of-run
# scan alone caught this chain too on the machines tried, but only by racing it; the namespace
# makes it certain.)
reaps_fork_chain() {
  local word="trainc-chain-$$"
  cat >"$TMP/chain.py" <<'CHAIN'
import os
while True:
    if os.fork() != 0:
        os._exit(0)
CHAIN
  cat >"$TMP/chain.yaml" <<SPEC
apiVersion: trainc/v1
kind: TrainingSystem
name: local-chain
pipeline:
  - name: chain
    image: img
    command: [bash, -c, 'setsid /usr/bin/python3 $TMP/chain.py $word </dev/null >/dev/null 2>&1 & sleep 1']
SPEC
  "$TRAINC" run "$TMP/chain.yaml" --local --workdir "$TMP/chain" >"$TMP/chain.log" 2>&1 ||
    { echo "exit $?"; tail -n 20 "$TMP/chain.log"; return 1; }
  if grep -q "not contained in a PID namespace" "$TMP/chain.log"; then
    echo "SKIP: $(grep "not contained" "$TMP/chain.log")"
  fi
  sleep 0.5
  local left
  left=$(pgrep -f "chain.py $word" || true)
  if [ -n "$left" ]; then
    echo "the chain outlived the run: $left"
    for _ in $(seq 1 30); do pkill -STOP -f "chain.py $word"; pkill -KILL -f "chain.py $word"; sleep 0.05; done
    return 1
  fi
}

# trainrt's steps and XGBoost's ranks start from the run's environment, not the caller's shell, and
# with the loopback library preloaded (an XGBoost rank listens on every interface): a spy in front
# of trainrt records what each process got.
trainrt_env_is_clean() {
  mkdir -p "$TMP/spy"
  cat >"$TMP/spy/trainrt" <<SPY
#!/bin/sh
env >"$TMP/spy/env.\$\$"
exec "$TRAINRT" "\$@"
SPY
  chmod +x "$TMP/spy/trainrt"
  TRAINC_TEST_MARKER=leaked "$TRAINC" run "$TMP/spec.yaml" --local --workdir "$TMP/spywork" --threads 1 \
    --trainrt "$TMP/spy/trainrt" >"$TMP/spy.log" 2>&1 || { echo "exit $?"; tail -n 20 "$TMP/spy.log"; return 1; }
  local n
  n=$(find "$TMP/spy" -name 'env.*' | wc -l)
  [ "$n" -ge 3 ] || { echo "expected datagen and two ranks, saw $n trainrt process(es)"; return 1; }
  if grep -l '^TRAINC_TEST_MARKER=' "$TMP"/spy/env.*; then echo "the caller's variable reached trainrt (above)"; return 1; fi
  for f in "$TMP"/spy/env.*; do
    grep -q '^LD_PRELOAD=.*libtrainc-loopback' "$f" || { echo "no loopback preload in $f:"; cat "$f"; return 1; }
  done
}

t "run --local: datagen then 2-rank XGBoost on loopback" run_pipeline
t "run --local: the table holds the spec's rows" table_is_the_spec
t "run --local refuses a 6TB table without --scale" refuses_huge_table
t "run without --local is a usage error" needs_local_flag
t "run --local: a 2-node command step runs as 2 pods with the JobSet's rendezvous variables" command_step_as_pods
t "run --local: a failed attempt is retried with fresh pods, up to retries" retries_as_the_job
t "run --local: a pod killed from outside (137) is retried like any failed pod" killed_pod_retried
t "run --local: a step past its timeout is stopped and not retried" timeout_as_the_job
t "run --local: a step lacking its program stops in its preflight within a second, with one line, not retried" preflight_stops_at_once
t "run --local: a pod gets its own env, secrets, PATH and HOME, and no other variable of the caller's shell" clean_environment
t "run --local: a process a step detached with setsid does not outlive the run" reaps_escaped namespace
t "run --local without its PID namespace: the end-of-run scan stops the detached process, and the run says what it cannot guarantee" reaps_escaped scan
t "run --local: a detached process forking and exiting in a loop ends with the run" reaps_fork_chain
t "run --local: trainrt and XGBoost's ranks get the run's environment with the loopback library, not the caller's" trainrt_env_is_clean
tap_done
