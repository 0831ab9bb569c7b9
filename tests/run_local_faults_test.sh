#!/usr/bin/env bash
# Failures under `trainc run --local` follow the cluster's rules (model/failure.h), rehearsed by
# killing ranks (TAP): a multi-pod step is one gang, stopped and started again whole when one pod
# fails, one retry per gang failure however many pods failed; a preemption (--preempt: SIGTERM,
# then SIGKILL after the grace) restarts the gang without spending a retry; an exit code in
# noRetryExitCodes fails the step in one attempt, naming the pod and the code; --kill, --preempt
# and --chaos are checked and reproducible. With PyTorch (gloo on the CPU): examples/mnist (4 pods)
# and examples/customgpt (checkpoints synced to a local S3 bucket),
# each with a pod killed mid-run (--kill RANK@checkpoint:2: once the bucket holds 2 of 5), restart once, resume from the newest checkpoint in the bucket and
# end with as many checkpoints as an unbroken run. The torch cases need python3-torch, awscli and
# s3rver (tools/install-deps.sh) and are skipped, saying which, without them.
# Usage: tests/run_local_faults_test.sh TRAINC
set -uo pipefail
# shellcheck source=tests/tap.sh
. "$(dirname "${BASH_SOURCE[0]}")/tap.sh"
tap_init "$@"

# gang_spec NAME NODES RETRIES COMMAND [EXTRA]: a spec of one command step (NAME) of NODES pods;
# EXTRA is more of the step's fields, one per line, indented as fields. Each pod appends
# "NODE_RANK start" to $TMP/NAME.lines when it starts, so the attempts can be counted.
gang_spec() {
  cat >"$TMP/$1.yaml" <<SPEC
apiVersion: trainc/v1
kind: TrainingSystem
name: faults-$1
pipeline:
  - name: $1
    image: img
    nodes: $2
    retries: $3
    env: {LINES: "$TMP/$1.lines", MARK: "$TMP/$1.mark"}
    command: [bash, -c, 'echo "\$NODE_RANK start" >>"\$LINES"; $4']
${5:-}
SPEC
  rm -f "$TMP/$1.lines" "$TMP/$1.mark".*
}

# starts NAME: how many pods of step NAME started, over every attempt.
starts() {
  local n
  n=$(grep -c ' start$' "$TMP/$1.lines" 2>/dev/null)
  echo "${n:-0}"
}

# Every pod fails in the first attempt (each exits 1 the first time it runs); with retries: 1 the
# step must still succeed: four failed pods are one gang failure, one retry.
every_rank_fails_once() {
  gang_spec every 4 1 'if [ -e "$MARK.$NODE_RANK" ]; then exit 0; fi; touch "$MARK.$NODE_RANK"; exit 1'
  run "$TRAINC" run --local "$TMP/every.yaml" --workdir "$TMP/every"
  [ "$rc" -eq 0 ] || { echo "exit $rc"; tail -n 20 "$TMP/stdout" "$TMP/stderr"; return 1; }
  [ "$(starts every)" -eq 8 ] || { echo "expected 2 attempts of 4 pods, got $(starts every) pod starts"; return 1; }
  grep -q "retrying step 'every' as one gang (attempt 2): pod [0-3]'s failure (exit 1) spent retry 1 of 1 (0 left)" "$TMP/stdout" ||
    { echo "no gang retry said:"; cat "$TMP/stdout"; return 1; }
  if grep -q "attempt 3" "$TMP/stdout"; then echo "a third attempt ran"; return 1; fi
  grep -q "step 'every': 2 attempt(s); 1 failure(s) spent a retry (0 of 1 left), 0 disruption(s) did not" "$TMP/stdout" ||
    { echo "no summary:"; tail -n 5 "$TMP/stdout"; return 1; }
}

# One pod exits 1 while the others would run for a minute: the others are stopped at once (the gang
# stops), the step starts again whole, and once retries are spent it fails with the pod's code.
one_rank_fails_the_gang() {
  gang_spec one 3 1 'if [ "$NODE_RANK" = 1 ]; then sleep 1; exit 1; fi; sleep 60'
  local t0=$SECONDS
  run "$TRAINC" run --local "$TMP/one.yaml" --workdir "$TMP/one"
  [ "$rc" -eq 1 ] || { echo "expected exit 1 (pod 1's code), got $rc"; tail -n 20 "$TMP/stdout" "$TMP/stderr"; return 1; }
  [ $((SECONDS - t0)) -lt 30 ] || { echo "the other pods were waited for, not stopped ($((SECONDS - t0)) s)"; return 1; }
  [ "$(starts one)" -eq 6 ] || { echo "expected 2 attempts of 3 pods, got $(starts one) pod starts"; return 1; }
  [ "$(grep -c "the gang stops: SIGTERM to the entry script of pod(s) 0, 2 of step 'one'" "$TMP/stdout")" -eq 2 ] ||
    { echo "the gang did not stop in each attempt:"; cat "$TMP/stdout"; return 1; }
  grep -q "step 'one' failed: pod 1 (NODE_RANK 1) exited with code 1 and no retries are left (\`retries: 1\`, 1 spent)" "$TMP/stderr" ||
    { echo "no final failure naming pod 1:"; cat "$TMP/stderr"; return 1; }
}

# An exit code the step lists in noRetryExitCodes fails it in one attempt however many retries are
# left, naming the pod and the code; 127 (the shell's "not found") is listed by default.
no_retry_code_fails_at_once() {
  gang_spec listed 2 3 'if [ "$NODE_RANK" = 1 ]; then exit 3; fi; sleep 60' '    noRetryExitCodes: [3]'
  local t0=$SECONDS
  run "$TRAINC" run --local "$TMP/listed.yaml" --workdir "$TMP/listed"
  [ "$rc" -eq 3 ] || { echo "expected exit 3, got $rc"; tail -n 20 "$TMP/stdout" "$TMP/stderr"; return 1; }
  [ $((SECONDS - t0)) -lt 30 ] || { echo "pod 0 was waited for ($((SECONDS - t0)) s)"; return 1; }
  [ "$(starts listed)" -eq 2 ] || { echo "expected one attempt of 2 pods, got $(starts listed) pod starts"; return 1; }
  grep -q "step 'listed' failed: pod 1 (NODE_RANK 1) exited with code 3, which the step's noRetryExitCodes lists (3, 78): it is not retried" "$TMP/stderr" ||
    { echo "no message naming pod 1 and code 3:"; cat "$TMP/stderr"; return 1; }
  if grep "retrying step '" "$TMP/stdout"; then echo "retried"; return 1; fi
  gang_spec default 1 2 'exit 127'
  run "$TRAINC" run --local "$TMP/default.yaml" --workdir "$TMP/default"
  [ "$rc" -eq 127 ] || { echo "expected exit 127, got $rc"; tail -n 20 "$TMP/stderr"; return 1; }
  [ "$(starts default)" -eq 1 ] || { echo "127 was retried ($(starts default) starts)"; return 1; }
  grep -q "exited with code 127, which the step's noRetryExitCodes lists (78, 126, 127)" "$TMP/stderr" ||
    { echo "the default list does not hold 127:"; cat "$TMP/stderr"; return 1; }
  # Unlisted, the same code is retried.
  gang_spec unlisted 1 1 'exit 3'
  run "$TRAINC" run --local "$TMP/unlisted.yaml" --workdir "$TMP/unlisted"
  if [ "$rc" -ne 3 ] || [ "$(starts unlisted)" -ne 2 ]; then
    echo "an unlisted code was not retried once (exit $rc, $(starts unlisted) starts)"
    return 1
  fi
}

# --preempt: the pod gets SIGTERM first (its command records it), the gang restarts, and the
# disruption spends no retry: with retries: 0 the run still succeeds. The same pod killed (--kill)
# fails the run: the two differ only in what they cost.
PREEMPTIBLE='trap "echo \"\$NODE_RANK term\" >>\"\$LINES\"; exit 143" TERM; sleep 4 & wait'
preemption_spends_no_retry() {
  gang_spec pre 2 0 "$PREEMPTIBLE"
  run "$TRAINC" run --local "$TMP/pre.yaml" --workdir "$TMP/pre" --preempt 1@1
  [ "$rc" -eq 0 ] || { echo "exit $rc"; tail -n 20 "$TMP/stdout" "$TMP/stderr"; return 1; }
  [ "$(starts pre)" -eq 4 ] || { echo "expected 2 attempts of 2 pods, got $(starts pre) pod starts"; return 1; }
  grep -q '^1 term$' "$TMP/pre.lines" || { echo "pod 1 got no SIGTERM before it was stopped"; cat "$TMP/pre.lines"; return 1; }
  grep -q "\--preempt pre:1@1: pod 1 is preempted in attempt 1: SIGTERM to its entry script (the container's PID 1), SIGKILL to all its processes after the step's 30 s termination grace" "$TMP/stdout" ||
    { echo "no preemption said:"; cat "$TMP/stdout"; return 1; }
  grep -q "pod 1 was disrupted (preempted; on the cluster its DisruptionTarget condition): this did not count against the step's retries (0 of 0 left)" "$TMP/stdout" ||
    { echo "not said that it did not count:"; cat "$TMP/stdout"; return 1; }
  grep -q "step 'pre': 2 attempt(s); 0 failure(s) spent a retry (0 of 0 left), 1 disruption(s) did not" "$TMP/stdout" ||
    { echo "no summary:"; tail -n 5 "$TMP/stdout"; return 1; }
}
kill_spends_a_retry() {
  gang_spec killed 2 0 "$PREEMPTIBLE"
  run "$TRAINC" run --local "$TMP/killed.yaml" --workdir "$TMP/killed" --kill 1@1
  [ "$rc" -eq 137 ] || { echo "expected exit 137 (SIGKILL), got $rc"; tail -n 20 "$TMP/stdout" "$TMP/stderr"; return 1; }
  [ "$(starts killed)" -eq 2 ] || { echo "expected one attempt, got $(starts killed) pod starts"; return 1; }
  if grep -q '^1 term$' "$TMP/killed.lines"; then echo "the killed pod got SIGTERM"; return 1; fi
  grep -q "\--kill killed:1@1: SIGKILL to pod 1's process group in attempt 1" "$TMP/stdout" || { echo "no kill said:"; cat "$TMP/stdout"; return 1; }
  grep -q "step 'killed' failed: pod 1 (NODE_RANK 1) exited with code 137 and no retries are left" "$TMP/stderr" ||
    { echo "no failure naming the pod:"; cat "$TMP/stderr"; return 1; }
}

# Two kills: the second falls due after the first attempt ended, so it hits the second attempt,
# timed from its start; each spends a retry.
kills_move_to_the_next_attempt() {
  gang_spec twice 2 2 'sleep 3'
  run "$TRAINC" run --local "$TMP/twice.yaml" --workdir "$TMP/twice" --kill 0@1 --kill 1@1.5
  [ "$rc" -eq 0 ] || { echo "exit $rc"; tail -n 20 "$TMP/stdout" "$TMP/stderr"; return 1; }
  [ "$(starts twice)" -eq 6 ] || { echo "expected 3 attempts of 2 pods, got $(starts twice) pod starts"; return 1; }
  grep -q "\--kill twice:1@1.5: SIGKILL to pod 1's process group in attempt 2" "$TMP/stdout" || { echo "the second kill did not hit attempt 2:"; cat "$TMP/stdout"; return 1; }
  grep -q "step 'twice': 3 attempt(s); 2 failure(s) spent a retry (0 of 2 left)" "$TMP/stdout" || { echo "no summary:"; tail -n 5 "$TMP/stdout"; return 1; }
  # Two kills due at once are pods failing together: one gang failure, one retry.
  gang_spec together 2 1 'sleep 3'
  run "$TRAINC" run --local "$TMP/together.yaml" --workdir "$TMP/together" --kill 0@1 --kill 1@1
  [ "$rc" -eq 0 ] || { echo "two kills at once spent more than one retry (exit $rc)"; tail -n 20 "$TMP/stdout" "$TMP/stderr"; return 1; }
  grep -q "\--kill together:1@1: SIGKILL to pod 1's process group in attempt 1" "$TMP/stdout" || { echo "the second kill did not hit attempt 1:"; cat "$TMP/stdout"; return 1; }
  [ "$(starts together)" -eq 4 ] || { echo "expected 2 attempts, got $(starts together) pod starts"; return 1; }
}

# --kill and --preempt are checked before anything runs.
bad_faults_refused() {
  gang_spec args 4 0 'exit 0'
  local arg want
  while IFS='|' read -r arg want; do
    run "$TRAINC" run --local "$TMP/args.yaml" --workdir "$TMP/args" "$arg"
    [ "$rc" -eq 2 ] || { echo "$arg: expected exit 2, got $rc"; cat "$TMP/stderr"; return 1; }
    grep -qF -- "$want" "$TMP/stderr" || { echo "$arg: expected '$want' in:"; cat "$TMP/stderr"; return 1; }
    [ ! -e "$TMP/args.lines" ] || { echo "$arg: pods ran"; return 1; }
  done <<'CASES'
--kill=4@1|--kill 4@1: step 'args' has 4 pod(s), ranks 0 to 3
--preempt=args:9@1|step 'args' has 4 pod(s)
--kill=other:0@1|system 'faults-args' has no step 'other' (its steps: args)
--kill=1|--kill '1': no '@'; expected [STEP:]RANK@SECONDS
--kill=x@1|the rank 'x' is not a pod index
--kill=1@soon|'soon' is not a number of seconds
--kill=1@checkpoint:0|'0' is not a number of checkpoints
--preempt=1@checkpoint:1|step 'args' keeps no checkpoints in a store (it needs `checkpoints:` and `outputs.to:`)
--chaos=seven|--chaos 'seven': expected a seed
CASES
}

# --chaos SEED prints the --kill it chose, the same for the same seed, and that --kill reproduces
# the run: the same pod fails at the same point of the same attempt.
chaos_is_reproducible() {
  gang_spec chaos 3 1 'sleep 4'
  run "$TRAINC" run --local "$TMP/chaos.yaml" --workdir "$TMP/chaos" --chaos 7 --chaos-within 2
  [ "$rc" -eq 0 ] || { echo "exit $rc"; tail -n 20 "$TMP/stdout" "$TMP/stderr"; return 1; }
  local chosen again
  chosen=$(sed -n 's/^--chaos 7 chose: \(--kill chaos:[0-2]@[0-9.]*\) (pass that.*/\1/p' "$TMP/stdout")
  [ -n "$chosen" ] || { echo "no choice printed:"; head -n 5 "$TMP/stdout"; return 1; }
  grep -q "^  \[[0-9.]*s\] $chosen: SIGKILL to pod [0-2]'s process group in attempt 1" "$TMP/stdout" || { echo "$chosen did not fire:"; cat "$TMP/stdout"; return 1; }
  [ "$(starts chaos)" -eq 6 ] || { echo "expected 2 attempts, got $(starts chaos) pod starts"; return 1; }
  grep "pod [0-2]'s failure" "$TMP/stdout" | sed 's/.*\(pod [0-2].s failure\).*/\1/' >"$TMP/chaos.first"
  run "$TRAINC" run --local "$TMP/chaos.yaml" --workdir "$TMP/chaos" --chaos 7 --chaos-within 2
  again=$(sed -n 's/^--chaos 7 chose: \(--kill [^ ]*\) .*/\1/p' "$TMP/stdout")
  [ "$again" = "$chosen" ] || { echo "the same seed chose '$again', then '$chosen'"; return 1; }
  # shellcheck disable=SC2086  # $chosen is the two words "--kill STEP:RANK@SECONDS"
  run "$TRAINC" run --local "$TMP/chaos.yaml" --workdir "$TMP/chaos" $chosen
  [ "$rc" -eq 0 ] || { echo "exit $rc with $chosen"; return 1; }
  grep "pod [0-2]'s failure" "$TMP/stdout" | sed 's/.*\(pod [0-2].s failure\).*/\1/' | cmp -s - "$TMP/chaos.first" ||
    { echo "$chosen did not fail the same pod as --chaos 7"; return 1; }
}

# ---- with PyTorch ------------------------------------------------------------------------------

# watch_bucket LOG LISTER OUT: once LOG says the gang restarts, runs LISTER (which prints the
# checkpoints in the bucket) into OUT: what the bucket held when the killed attempt was over and
# before the next one could write.
watch_bucket() {
  local n=0
  until grep -q "retrying step 'train' as one gang" "$1" 2>/dev/null; do
    sleep 0.1
    n=$((n + 1))
    [ "$n" -lt 6000 ] || return 1
  done
  "$2" >"$3"
}

# killed_run DIR SPEC POD LISTER [ARGS...]: runs SPEC (with ARGS) with --kill POD@checkpoint:2 (once
# the bucket holds the second of five checkpoints: mid-run, after a resumable point, however this
# machine's load stretches the run) into DIR/killed (log DIR/killed.log; rc its exit code);
# DIR/newest gets what the bucket held when the gang restarted (LISTER prints it).
killed_run() {
  local dir=$1 spec=$2 pod=$3 lister=$4 pid watcher
  shift 4
  rm -rf "$dir/killed" "$dir/newest"
  rc=0
  "$TRAINC" run --local "$spec" --workdir "$dir/killed" "$@" --kill "$pod@checkpoint:2" >"$dir/killed.log" 2>&1 &
  pid=$!
  watch_bucket "$dir/killed.log" "$lister" "$dir/newest" &
  watcher=$!
  wait "$pid" || rc=$?
  # No restart, no bucket to list: the watcher would wait for one.
  grep -q "retrying step 'train' as one gang" "$dir/killed.log" || kill "$watcher" 2>/dev/null
  wait "$watcher" 2>/dev/null
  return 0
}

# resumed LOG NEWEST PODS: in LOG, the killed run restarted once, every pod's entry script of the
# second attempt resumed from NEWEST and the trainer continued after its epoch.
resumed() {
  local log=$1 newest=$2 pods=$3 epoch
  [ -n "$newest" ] || { echo "the bucket held no checkpoint when the gang restarted (killed too early?)"; return 1; }
  epoch=${newest#ckpt-epoch-}
  epoch=$((10#${epoch%.pt}))
  [ "$(grep -c "retrying step 'train' as one gang" "$log")" -eq 1 ] || { echo "not restarted exactly once:"; grep -i 'retrying\|gang\|SIGKILL' "$log"; return 1; }
  grep -q "step 'train': 2 attempt(s); 1 failure(s) spent a retry" "$log" || { echo "no summary of 2 attempts"; return 1; }
  [ "$(grep -c "resuming from .*/$newest\$" "$log")" -eq "$pods" ] ||
    { echo "expected $pods pod(s) resuming from $newest:"; grep 'resuming from' "$log"; return 1; }
  grep -q "resumed from .*/$newest (epoch $epoch); continuing at epoch $((epoch + 1))" "$log" ||
    { echo "the trainer did not continue after epoch $epoch:"; grep 'resumed from' "$log"; return 1; }
}

# ---- examples/mnist: 4 pods, checkpoints synced to a local S3 bucket ---------------------------
MNIST=$TMP/mnist
mnist_variant() {
  mkdir -p "$MNIST"
  cp -r examples/mnist/image "$MNIST/"
  # The example with a bucket for its checkpoints, the trainer writing one per epoch (rank 0, in
  # pod 0, which syncs them out every second), and a retry to spend.
  awk '
    /^pipeline:/ { print "storage:"; print "  ckpt: {s3: {bucket: mnist-ckpt}}" }
    /^      args: \[--epochs=1, --log-interval=1\]$/ {
      print "      args: [--epochs=5, --log-interval=4, --synthetic=768, --checkpoint-dir=ckpt]"; next }
    { print }
    /^    env: \{LOGLEVEL: INFO\}$/ {
      print "    retries: 1"
      print "    outputs: {path: ckpt, to: \"ckpt:/out/\", every: 1s}"
      print "    checkpoints: {path: ckpt, pattern: \"ckpt-epoch-*.pt\", resumeFlag: --resume}" }
  ' examples/mnist/spec.yaml >"$MNIST/spec.yaml"
  grep -q 'checkpoint-dir' "$MNIST/spec.yaml" && grep -q '^    checkpoints:' "$MNIST/spec.yaml" && grep -q '^storage:' "$MNIST/spec.yaml" ||
    { echo "examples/mnist/spec.yaml no longer has the lines this variant edits:"; cat "$MNIST/spec.yaml"; return 1; }
}
# The checkpoints in the bucket, as the local S3 server keeps them.
mnist_ckpts() {
  find "$1/s3/mnist-ckpt/out" -name 'ckpt-epoch-*.pt._S3rver_object' -printf '%f\n' 2>/dev/null |
    sed 's/\._S3rver_object$//' | sort
}

mnist_unbroken() {
  mnist_variant || return 1
  run "$TRAINC" run --local "$MNIST/spec.yaml" --workdir "$MNIST/whole"
  [ "$rc" -eq 0 ] || { echo "exit $rc"; tail -n 30 "$TMP/stdout" "$TMP/stderr"; return 1; }
  mnist_ckpts "$MNIST/whole" >"$MNIST/whole.ckpts"
  touch "$MNIST/unbroken.ok"
  [ "$(wc -l <"$MNIST/whole.ckpts")" -eq 5 ] || { echo "expected 5 checkpoints:"; cat "$MNIST/whole.ckpts"; return 1; }
  # (The entry script's own "periodic sync failed; retrying in 1s", when the local S3 server is slow
  # under load, is not a retry of the step.)
  if grep "retrying step '" "$TMP/stdout"; then echo "the unbroken run was retried"; return 1; fi
}

mnist_killed() {
  [ -e "$MNIST/unbroken.ok" ] || { echo "no unbroken run to compare with"; return 1; }
  local rc=0
  mnist_newest() { mnist_ckpts "$MNIST/killed" | tail -n 1; }
  killed_run "$MNIST" "$MNIST/spec.yaml" 2 mnist_newest
  [ "$rc" -eq 0 ] || { echo "exit $rc (--kill 2@checkpoint:2)"; tail -n 30 "$MNIST/killed.log"; return 1; }
  grep -q "\--kill train:2@checkpoint:2: the store holds [2-5] of step 'train''s checkpoints" "$MNIST/killed.log" || { echo "the bucket's checkpoints were not seen"; return 1; }
  grep -q "\--kill train:2@checkpoint:2: SIGKILL to pod 2's process group in attempt 1" "$MNIST/killed.log" || { echo "the kill did not fire"; return 1; }
  grep -q "the gang stops: SIGTERM to the entry script of pod(s) 0, 1, 3 of step 'train'" "$MNIST/killed.log" || { echo "the gang did not stop"; return 1; }
  resumed "$MNIST/killed.log" "$(cat "$MNIST/newest")" 4 || { tail -n 30 "$MNIST/killed.log"; return 1; }
  local firsts
  firsts=$(grep -c 'rank 0 epoch 1 batch 0/' "$MNIST/killed.log")
  [ "$firsts" -eq 1 ] || { echo "rank 0 started epoch 1 $firsts time(s):"; grep 'epoch 1 batch 0/\|resum\|SIGKILL\|wrote' "$MNIST/killed.log"; return 1; }
  mnist_ckpts "$MNIST/killed" | cmp -s - "$MNIST/whole.ckpts" || { echo "checkpoints differ from the unbroken run's:"; mnist_ckpts "$MNIST/killed"; return 1; }
  grep -q '^test accuracy' "$MNIST/killed.log" || { echo "rank 0 did not finish"; return 1; }
}

# ---- examples/customgpt: one pod, checkpoints synced to a local S3 bucket ----------------------
GPT=$TMP/customgpt
GPT_SEEDS=(--seed bucket:/code/=examples/customgpt/code --seed bucket:/data/=examples/customgpt/data)
gpt_variant() {
  mkdir -p "$GPT"
  # The example with five short epochs, a pause after each so that its checkpoint reaches the
  # bucket (synced every second) before the next, and two ranks instead of four (this machine's
  # cores); retries: 2 as in the example.
  sed -e 's/^      args: \[--output_dir, out\]$/      args: [--output_dir, out, --epochs, "5", --steps, "4", --pause, "2"]/' \
    -e 's/^    outputs: {path: out, to: "bucket:\/output\/out\/", every: 10m}$/    outputs: {path: out, to: "bucket:\/output\/out\/", every: 1s}/' \
    -e 's/^    gpus: 4 /    gpus: 2 /' examples/customgpt/spec.yaml >"$GPT/spec.yaml"
  grep -q -- '--pause, "2"' "$GPT/spec.yaml" && grep -q 'every: 1s' "$GPT/spec.yaml" && grep -q '^    gpus: 2 ' "$GPT/spec.yaml" ||
    { echo "examples/customgpt/spec.yaml no longer has the lines this variant edits"; return 1; }
}
# The checkpoints in the bucket, as the local S3 server keeps them.
gpt_ckpts() {
  find "$1/s3/your-s3-bucket/path/to/output/out" -name 'ckpt-epoch-*.pt._S3rver_object' -printf '%f\n' 2>/dev/null |
    sed 's/\._S3rver_object$//' | sort
}

gpt_unbroken() {
  gpt_variant || return 1
  run "$TRAINC" run --local "$GPT/spec.yaml" --workdir "$GPT/whole" "${GPT_SEEDS[@]}"
  [ "$rc" -eq 0 ] || { echo "exit $rc"; tail -n 30 "$TMP/stdout" "$TMP/stderr"; return 1; }
  gpt_ckpts "$GPT/whole" >"$GPT/whole.ckpts"
  [ "$(wc -l <"$GPT/whole.ckpts")" -eq 5 ] || { echo "expected 5 checkpoints in the bucket:"; cat "$GPT/whole.ckpts"; return 1; }
  touch "$GPT/unbroken.ok"
}

gpt_killed() {
  [ -e "$GPT/unbroken.ok" ] || { echo "no unbroken run to compare with"; return 1; }
  local rc=0
  gpt_newest() { gpt_ckpts "$GPT/killed" | tail -n 1; }
  killed_run "$GPT" "$GPT/spec.yaml" 0 gpt_newest "${GPT_SEEDS[@]}"
  [ "$rc" -eq 0 ] || { echo "exit $rc (--kill 0@checkpoint:2)"; tail -n 30 "$GPT/killed.log"; return 1; }
  grep -q "\--kill train:0@checkpoint:2: SIGKILL to pod 0's process group in attempt 1" "$GPT/killed.log" || { echo "the kill did not fire"; return 1; }
  resumed "$GPT/killed.log" "$(cat "$GPT/newest")" 1 || { tail -n 30 "$GPT/killed.log"; return 1; }
  [ "$(grep -c 'epoch 1/5' "$GPT/killed.log")" -eq 1 ] || { echo "epoch 1 was trained again"; return 1; }
  gpt_ckpts "$GPT/killed" | cmp -s - "$GPT/whole.ckpts" || { echo "the bucket's checkpoints differ from the unbroken run's:"; gpt_ckpts "$GPT/killed"; return 1; }
}

# ---- a gang stop keeps what rank 0 wrote since its last sync ------------------------------------
# Rank 0 writes a checkpoint and starts a helper process; pod 1 then fails. Its outputs sync every
# 10 minutes, so the checkpoint is only in pod 0's folder when the gang stops: the stop must reach
# rank 0's entry script alone (as the kubelet signals PID 1; the helper must hear nothing), which
# stops its trainer and syncs the checkpoint out, and attempt 2 must resume from it.
GANG_SYNC='if [ -n "$TRAINC_RESUME_FROM" ]; then echo "$NODE_RANK resumed ${TRAINC_RESUME_FROM##*/}" >>"$LINES"; exit 0; fi;'
GANG_SYNC+=' if [ "$NODE_RANK" = 0 ]; then mkdir -p ckpt; echo one >ckpt/c-1.pt;'
GANG_SYNC+=' bash -c "trap \"echo helper-term >>\\\"\$LINES\\\"; exit 143\" TERM; sleep 120 & wait" & touch "$MARK.written"; sleep 120;'
GANG_SYNC+=' else until [ -e "$MARK.written" ]; do sleep 0.1; done; exit 1; fi'
gang_stop_keeps_rank0_checkpoint() {
  gang_spec gsync 2 1 "$GANG_SYNC" '    outputs: {path: ckpt, to: "ck:/out/", every: 10m}
    checkpoints: {path: ckpt, pattern: "c-*.pt"}'
  sed -i 's/^pipeline:/storage:\n  ck: {s3: {bucket: gsync}}\npipeline:/' "$TMP/gsync.yaml"
  run "$TRAINC" run --local "$TMP/gsync.yaml" --workdir "$TMP/gsync"
  [ "$rc" -eq 0 ] || { echo "exit $rc"; tail -n 30 "$TMP/stdout" "$TMP/stderr"; return 1; }
  grep -q "the gang stops: SIGTERM to the entry script of pod(s) 0 of step 'gsync'" "$TMP/stdout" || { echo "the gang did not stop:"; cat "$TMP/stdout"; return 1; }
  if grep -q 'helper-term' "$TMP/gsync.lines"; then echo "a process rank 0's trainer started got SIGTERM (the kubelet signals PID 1 only)"; return 1; fi
  grep -q "start fresh, resuming from c-1.pt, the newest of the 1 checkpoint(s) of this run the store holds" "$TMP/stdout" ||
    { echo "the retry does not name the checkpoint rank 0 wrote before the stop:"; grep -i 'retrying\|final sync\|termination' "$TMP/stdout"; return 1; }
  [ "$(grep -c 'resumed c-1.pt$' "$TMP/gsync.lines")" -eq 2 ] || { echo "both pods of attempt 2 must resume from c-1.pt:"; cat "$TMP/gsync.lines"; return 1; }
  [ -e "$TMP/gsync/s3/gsync/out/c-1.pt._S3rver_object" ] || { echo "c-1.pt is not in the bucket"; find "$TMP/gsync/s3"; return 1; }
}

# ---- a new run starts clean; the same run, or resumeFrom: previous, continues -------------------
# One workdir (so one local bucket) across four runs of a step that writes c-<N>.pt, N one more
# than the checkpoint it resumed from: the spec as is; the same spec again (the same run: resumes
# c-1); a changed env (a new run: starts clean although the bucket holds c-1 and c-2, and writes
# c-1 again); another change with checkpoints.resumeFrom: previous (continues from the bucket's
# newest, that c-1).
RUNS_CMD='n=0; if [ -n "$TRAINC_RESUME_FROM" ]; then n=${TRAINC_RESUME_FROM##*/c-}; n=${n%.pt}; fi;'
RUNS_CMD+=' echo "resumed:${TRAINC_RESUME_FROM##*/}" >>"$LINES"; mkdir -p ckpt; sleep 1; echo x >ckpt/c-$((n + 1)).pt'
runs_spec() {  # runs_spec LR [RESUME_FROM]
  gang_spec runs 1 0 "$RUNS_CMD" "    checkpoints: {path: ckpt, pattern: \"c-*.pt\"${2:+, resumeFrom: $2}}
    outputs: {path: ckpt, to: \"ck:/out/\", every: 10m}"
  sed -i -e 's/^pipeline:/storage:\n  ck: {s3: {bucket: runs}}\npipeline:/' \
    -e "s/^    env: {LINES/    env: {LR: \"$1\", LINES/" "$TMP/runs.yaml"
}
new_run_starts_clean() {
  local last
  runs_spec 0.1
  run "$TRAINC" run --local "$TMP/runs.yaml" --workdir "$TMP/runs"
  [ "$rc" -eq 0 ] && [ "$(grep resumed "$TMP/runs.lines")" = "resumed:" ] || { echo "first run (exit $rc):"; cat "$TMP/runs.lines"; tail -n 20 "$TMP/stdout"; return 1; }
  grep -q "run [0-9a-f]* starts clean" "$TMP/stdout" || { echo "the first run did not say it starts clean"; return 1; }
  runs_spec 0.1
  run "$TRAINC" run --local "$TMP/runs.yaml" --workdir "$TMP/runs"
  last=$(grep resumed "$TMP/runs.lines")
  [ "$rc" -eq 0 ] && [ "$last" = "resumed:c-1.pt" ] || { echo "the same run again must resume c-1.pt (exit $rc): $last"; tail -n 20 "$TMP/stdout"; return 1; }
  runs_spec 0.2
  run "$TRAINC" run --local "$TMP/runs.yaml" --workdir "$TMP/runs"
  last=$(grep resumed "$TMP/runs.lines")
  [ "$rc" -eq 0 ] && [ "$last" = "resumed:" ] || { echo "a new run (env LR changed) must start clean although the bucket holds c-2.pt (exit $rc): $last"; tail -n 20 "$TMP/stdout"; return 1; }
  runs_spec 0.3 previous
  run "$TRAINC" run --local "$TMP/runs.yaml" --workdir "$TMP/runs"
  last=$(grep resumed "$TMP/runs.lines")
  [ "$rc" -eq 0 ] && [ "$last" = "resumed:c-1.pt" ] || { echo "resumeFrom: previous must continue from the bucket's newest, the c-1.pt the last run wrote (exit $rc): $last"; tail -n 20 "$TMP/stdout"; return 1; }
}

# ---- history bounds the runs whose checkpoints the store keeps ----------------------------------
# One bucket across three runs (LR 1, 2, 3) of a step with history: 2 that writes c-<LR>.pt: the
# third run's start removes the first run's checkpoint and marker, in the bucket too, and keeps the
# second's.
PRUNE_CMD='mkdir -p ckpt; sleep 1; echo x >ckpt/c-$LR.pt'
prune_spec() {
  gang_spec prune 1 0 "$PRUNE_CMD" '    history: 2
    checkpoints: {path: ckpt, pattern: "c-*.pt"}
    outputs: {path: ckpt, to: "ck:/out/", every: 10m}'
  sed -i -e 's/^pipeline:/storage:\n  ck: {s3: {bucket: prune}}\npipeline:/' \
    -e "s/^    env: {LINES/    env: {LR: \"$1\", LINES/" "$TMP/prune.yaml"
}
bucket_files() { find "$1" -name '*._S3rver_object' -printf '%f\n' 2>/dev/null | sed 's/\._S3rver_object$//' | sort | tr '\n' ' '; }
history_prunes_old_runs() {
  local lr got
  for lr in 1 2 3; do
    prune_spec "$lr"
    run "$TRAINC" run --local "$TMP/prune.yaml" --workdir "$TMP/prune"
    [ "$rc" -eq 0 ] || { echo "run LR=$lr: exit $rc"; tail -n 20 "$TMP/stdout"; return 1; }
    got=$(bucket_files "$TMP/prune/s3/prune/out" | tr ' ' '\n' | grep -c '^\.trainc-run-')
    [ "$got" -eq "$((lr < 2 ? lr : 2))" ] || { echo "after run LR=$lr the bucket holds $got run markers: $(bucket_files "$TMP/prune/s3/prune/out")"; return 1; }
  done
  got=$(bucket_files "$TMP/prune/s3/prune/out" | tr ' ' '\n' | grep '^c-' | tr '\n' ' ')
  [ "$got" = "c-2.pt c-3.pt " ] || { echo "history: 2 must keep the checkpoints of runs LR=2 and 3 only; the bucket holds: $got"; return 1; }
  grep -q "removing checkpoint c-1.pt: its run is older than the 2 kept (history)" "$TMP/stdout" || { echo "the removal was not said:"; tail -n 20 "$TMP/stdout"; return 1; }
}

# ---- resumeFrom a file: a new run starts from it, its retry from its own checkpoint ---------------
# The base file comes with an input; attempt 1 writes c-1.pt and is killed by its own hand (exit 1),
# attempt 2 must resume c-1.pt, not the base. A spec naming a file no input brings is refused.
START_CMD='echo "resumed:${TRAINC_RESUME_FROM##*/}" >>"$LINES"; mkdir -p ckpt; echo x >ckpt/c-1.pt; sleep 1;'
START_CMD+=' if [ ! -e "$MARK.failed" ]; then touch "$MARK.failed"; exit 1; fi'
resume_from_file() {
  gang_spec start 1 1 "$START_CMD" '    inputs: [{from: "ck:/base/", to: base}]
    checkpoints: {path: ckpt, pattern: "c-*.pt", resumeFrom: base/model.pt}
    outputs: {path: ckpt, to: "ck:/out/", every: 1s}'
  sed -i -e 's/^pipeline:/storage:\n  ck: {s3: {bucket: start}}\npipeline:/' "$TMP/start.yaml"
  mkdir -p "$TMP/start-base" && echo base >"$TMP/start-base/model.pt"
  run "$TRAINC" run --local "$TMP/start.yaml" --workdir "$TMP/start" --seed "ck:/base/=$TMP/start-base"
  [ "$rc" -eq 0 ] || { echo "exit $rc"; tail -n 30 "$TMP/stdout" "$TMP/stderr"; return 1; }
  [ "$(grep resumed "$TMP/start.lines" | tr '\n' ' ')" = "resumed:model.pt resumed:c-1.pt " ] ||
    { echo "attempt 1 must start from base/model.pt and attempt 2 resume its own c-1.pt:"; cat "$TMP/start.lines"; tail -n 30 "$TMP/stdout"; return 1; }
  grep -q "starts from .*/base/model.pt (checkpoints.resumeFrom)" "$TMP/stdout" || { echo "the start file was not said"; return 1; }
  sed -i 's|resumeFrom: base/model.pt|resumeFrom: previus|' "$TMP/start.yaml"
  run "$TRAINC" check "$TMP/start.yaml"
  [ "$rc" -ne 0 ] && grep -q "resumeFrom 'previus' is neither 'run', 'previous' nor a file the step's inputs or mounts bring.*did you mean 'previous'" "$TMP/stderr" ||
    { echo "a misspelled resumeFrom must be refused with a did-you-mean (exit $rc):"; cat "$TMP/stderr"; return 1; }
}

t "every pod of a 4-pod step failing is one gang failure: one retry, then success" every_rank_fails_once
t "one pod exiting 1 stops the others at once; each gang failure spends one retry, then the step fails with its code" one_rank_fails_the_gang
t "an exit code in noRetryExitCodes (3 listed; 127 by default) fails the step in one attempt, naming pod and code" no_retry_code_fails_at_once
t "--preempt: SIGTERM first, the gang restarts, no retry spent (retries: 0 succeeds)" preemption_spends_no_retry
t "--kill of the same pod spends a retry: with retries: 0 the step fails (137)" kill_spends_a_retry
t "a kill due after its attempt ended hits the next attempt; two due at once are one gang failure" kills_move_to_the_next_attempt
t "--kill, --preempt and --chaos arguments are checked before anything runs" bad_faults_refused
t "--chaos SEED prints the --kill it chose, and that --kill reproduces the run" chaos_is_reproducible
if ! torch_tools_present; then
  for name in "a gang stop keeps rank 0's checkpoint" "a new run starts clean" "history prunes old runs' checkpoints" "resumeFrom a file" "examples/mnist unbroken" "examples/mnist with pod 2 killed mid-epoch" \
    "examples/customgpt unbroken" "examples/customgpt with its pod killed mid-epoch"; do
    t_skip "$name" "missing $TORCH_TOOLS_MISSING; tools/install-deps.sh installs them"
  done
else
  t "a gang stop reaches rank 0's entry script alone, which syncs its unsynced checkpoint; attempt 2 resumes from it" gang_stop_keeps_rank0_checkpoint
  t "a new run starts clean though the bucket holds an earlier run's checkpoints; the same run, or resumeFrom: previous, continues" new_run_starts_clean
  t "history: 2 keeps the checkpoints of the newest 2 runs in the bucket; the third run's start removes the first's" history_prunes_old_runs
  t "resumeFrom a file an input brings: a new run starts from it, its retry resumes its own checkpoint; a misspelling is refused" resume_from_file
  t "examples/mnist (4 pods, checkpoints synced to a local S3 bucket) unbroken: 5 checkpoints" mnist_unbroken
  t "examples/mnist with pod 2 killed mid-epoch: the gang restarts once from the newest checkpoint, same checkpoints" mnist_killed
  t "examples/customgpt (checkpoints synced to a local S3 bucket) unbroken: 5 checkpoints in the bucket" gpt_unbroken
  t "examples/customgpt with its pod killed mid-epoch: restarts once from the bucket's newest checkpoint, same checkpoints" gpt_killed
fi
tap_done
