#!/usr/bin/env bash
# up.sh after an edit, against the fake cloud of tests/stubs.sh (which answers `node-pools describe`
# from the flags a pool was made and updated with): run twice with no change it changes nothing; a
# new size or autoscaling limit, node labels and taints are updated in place; a new machine type or
# accelerator count stops it before it changes anything, naming the pool, the field, what a
# replacement deletes and the commands; `--replace POOL` deletes and recreates the pool, after which
# up.sh is quiet again. A cluster's new release channel is updated; its new network, or a bucket's
# new location, stops it. Usage: tests/updrift_test.sh TRAINC
set -uo pipefail
# shellcheck source=tests/tap.sh
. "$(dirname "${BASH_SOURCE[0]}")/tap.sh"
tap_init "$@"
# shellcheck source=tests/stubs.sh
. tests/stubs.sh

SANDBOX="$TMP/sandbox"

# Runs scripts/up.sh of output folder $1 (with the arguments after it) under the stand-ins.
up() {
  local dir=$1
  shift
  mkdir -p "$SANDBOX/home"
  rc=0
  (cd "$SANDBOX" && env PATH="$STUB_BIN:$PATH" HOME="$SANDBOX/home" bash "$dir/scripts/up.sh" "$@") \
    >"$TMP/stdout" 2>"$TMP/stderr" || rc=$?
}

show() {
  echo "exit $rc; stderr:"
  tail -n 25 "$TMP/stderr"
}

# The calls of the last run that change the cloud.
changes() { grep -E '^gcloud .* (create|delete|update|resize) ' "$STUB_STATE/log" || true; }

# Example $1's spec folder copied to $TMP/spec-$2, edited by the sed script $3, compiled into
# $TMP/out-$2; prints the output folder.
edited() {
  local spec="$TMP/spec-$2"
  rm -rf "$spec" "$TMP/out-$2"
  cp -R "examples/$1" "$spec"
  sed -i -e "$3" "$spec/spec.yaml"
  if cmp -s "examples/$1/spec.yaml" "$spec/spec.yaml"; then echo "the edit '$3' changed nothing" >&2; return 1; fi
  "$TRAINC" compile "$spec/spec.yaml" -o "$TMP/out-$2" >/dev/null 2>"$TMP/compile.err" || { cat "$TMP/compile.err" >&2; return 1; }
  printf '%s\n' "$TMP/out-$2/$(sed -n 's/^name: //p' "$spec/spec.yaml")"
}

# A fresh fake project in which output folder $1's up.sh made everything.
fresh() {
  rm -rf "$TMP/stubs" "$SANDBOX"
  stubs_install "$TMP/stubs"
  up "$1"
  [ "$rc" -eq 0 ] || { echo "the first up.sh failed"; show; return 1; }
  stub_reset_calls
}

# Up twice: the second run reads every pool and changes nothing.
unchanged() {
  local dir=$1 before
  fresh "$dir" || return 1
  before=$(ls -l "$STUB_STATE/cloud"; cat "$STUB_STATE/cloud/container_node-pools_"*)
  up "$dir"
  [ "$rc" -eq 0 ] || { echo "the second up.sh failed"; show; return 1; }
  [ -z "$(changes)" ] || { echo "the second up.sh changed the cloud:"; changes; return 1; }
  grep -q -- '--format=value\\\[separator=' "$STUB_STATE/log" || { echo "no node pool was compared"; stub_log; return 1; }
  [ "$(ls -l "$STUB_STATE/cloud"; cat "$STUB_STATE/cloud/container_node-pools_"*)" = "$before" ] ||
    { echo "the fake cloud changed"; return 1; }
}

# mnist's fixed pool grows from 4 to 6 nodes and gets node labels, and jax-l4's GPU pool a taint:
# up.sh resizes the pool and updates labels and taints in place, then a third run changes nothing.
resized() {
  local old=$1 new
  new=$(edited mnist resized 's/nodes: 4}/nodes: 6, labels: {team: ml, tier: gpu}}/') || return 1
  fresh "$old" || return 1
  up "$new"
  [ "$rc" -eq 0 ] || { echo "up.sh of the edit failed"; show; return 1; }
  grep -q "node pool gpu-pool: 4 node(s) a zone; the spec 6: resizing it" "$TMP/stderr" || { echo "no resize said"; show; return 1; }
  [ "$(changes | grep -c .)" -eq 2 ] || { echo "not two changes:"; changes; return 1; }
  changes | grep -q -- '^gcloud container clusters resize demo --node-pool=gpu-pool --num-nodes=6 ' ||
    { echo "no resize to 6:"; changes; return 1; }
  changes | grep -q -- '^gcloud container node-pools update gpu-pool ' && stub_saw gcloud --node-labels=team=ml,tier=gpu ||
    { echo "no label update:"; changes; return 1; }
  [ "$(stub_pool_flag demo gpu-pool node-labels)" = team=ml,tier=gpu ] || { echo "the labels were not updated"; return 1; }
  [ "$(stub_pool_flag demo gpu-pool num-nodes)" = 6 ] || { echo "the pool was not resized"; return 1; }
  stub_reset_calls
  up "$new"
  [ "$rc" -eq 0 ] && [ -z "$(changes)" ] || { echo "the run after the resize changed:"; changes; show; return 1; }
  new=$(edited jax-l4 tainted \
    's/max: 2}}/max: 2}, taints: [{key: dedicated, value: jax, effect: NoSchedule}]}/') ||
    return 1
  fresh "$TMP/out-orig/jax-l4" || return 1
  up "$new"
  [ "$rc" -eq 0 ] || { echo "up.sh of the jax-l4 edit failed"; show; return 1; }
  [ "$(changes)" = "$(changes | grep -- '^gcloud container node-pools update l4 .* --node-taints=dedicated=jax:NoSchedule$')" ] &&
    [ -n "$(changes)" ] || { echo "no taint update alone:"; changes; return 1; }
  stub_reset_calls
  up "$new"
  [ "$rc" -eq 0 ] && [ -z "$(changes)" ] || { echo "the run after the taint changed:"; changes; show; return 1; }
}

# Autoscaling limits: jax-l4's l4 pool (0..2 nodes a zone) and xgb-a4's flex-start pool (0..2 in
# all) get a maximum of 4; each is updated with the flags of its kind.
limits() {
  local old new
  old="$TMP/out-orig/jax-l4"
  new=$(edited jax-l4 limits 's/autoscaling: {min: 0, max: 2}/autoscaling: {min: 1, max: 4}/') || return 1
  fresh "$old" || return 1
  up "$new"
  [ "$rc" -eq 0 ] || { echo "up.sh of the jax-l4 edit failed"; show; return 1; }
  [ "$(changes)" = "$(changes | grep -- '^gcloud container node-pools update l4 .* --enable-autoscaling --min-nodes=1 --max-nodes=4$')" ] &&
    [ -n "$(changes)" ] || { echo "jax-l4 changes:"; changes; return 1; }
  [ "$(stub_pool_flag jax-l4 l4 max-nodes)" = 4 ] || { echo "jax-l4's limit was not updated"; return 1; }
  old="$TMP/out-orig/xgb-a4"
  new=$(edited xgb-a4 limits 's/autoscaling: {min: 0, max: 2}/autoscaling: {min: 0, max: 4}/') || return 1
  fresh "$old" || return 1
  up "$new"
  [ "$rc" -eq 0 ] || { echo "up.sh of the xgb-a4 edit failed"; show; return 1; }
  [ "$(changes)" = "$(changes | grep -- '^gcloud container node-pools update a4 .* --enable-autoscaling --total-min-nodes=0 --total-max-nodes=4$')" ] &&
    [ -n "$(changes)" ] || { echo "xgb-a4 changes:"; changes; return 1; }
  stub_reset_calls
  up "$new"
  [ "$rc" -eq 0 ] && [ -z "$(changes)" ] || { echo "the run after the update changed:"; changes; show; return 1; }
}

# Example $1 edited by $3 (named $2) needs pool $4 replaced for field $5: up.sh stops before it
# changes anything, naming the pool, the field, what the replacement deletes and the commands (the
# create with the new $6); --replace POOL deletes then recreates it; then up.sh is quiet again.
replaced() {
  local old="$TMP/out-orig/$1" new pool=$4 before del create
  new=$(edited "$1" "$2" "$3") || return 1
  fresh "$old" || return 1
  before=$(cat "$STUB_STATE/cloud/container_node-pools_"*)
  up "$new"
  [ "$rc" -eq 1 ] || { echo "up.sh of the edit exit $rc, not 1"; show; return 1; }
  [ -z "$(changes)" ] || { echo "up.sh changed the cloud before it stopped:"; changes; return 1; }
  [ "$(cat "$STUB_STATE/cloud/container_node-pools_"*)" = "$before" ] || { echo "a pool changed"; return 1; }
  grep -q "node pool $pool: $5 is " "$TMP/stderr" || { echo "the field is not named"; show; return 1; }
  grep -q "node pool $pool must be replaced" "$TMP/stderr" || { echo "no reason given"; show; return 1; }
  grep -q "deletes its nodes, and with them every pod running on them (the spec places step" "$TMP/stderr" ||
    { echo "what is deleted is not said"; show; return 1; }
  grep -q "run up.sh --replace $pool" "$TMP/stderr" || { echo "--replace is not named"; show; return 1; }
  grep -q "^  gcloud container node-pools delete $pool " "$TMP/stderr" || { echo "no delete command"; show; return 1; }
  grep -q "^  gcloud container node-pools create $pool .*$6" "$TMP/stderr" || { echo "no create command with $6"; show; return 1; }
  grep -q "error: stopped at node pool $pool" "$TMP/stderr" || { echo "no stop"; show; return 1; }

  up "$new" --replace "$pool"
  [ "$rc" -eq 0 ] || { echo "up.sh --replace $pool failed"; show; return 1; }
  grep -q "replacing node pool $pool (--replace): its nodes are deleted" "$TMP/stderr" || { echo "no notice"; show; return 1; }
  del=$(grep -n "^gcloud container node-pools delete $pool " "$STUB_STATE/log" | cut -d: -f1)
  create=$(grep -n "^gcloud container node-pools create $pool .*$6" "$STUB_STATE/log" | cut -d: -f1)
  [ -n "$del" ] && [ -n "$create" ] && [ "$del" -lt "$create" ] ||
    { echo "not deleted (line ${del:-none}) then created (line ${create:-none})"; changes; return 1; }
  stub_reset_calls
  up "$new"
  [ "$rc" -eq 0 ] && [ -z "$(changes)" ] || { echo "the run after the replacement changed:"; changes; show; return 1; }
}

# --replace of a pool the spec does not have stops before anything is made.
unknown_replace() {
  rm -rf "$TMP/stubs" "$SANDBOX"
  stubs_install "$TMP/stubs"
  up "$TMP/out-orig/mnist" --replace gpu-pol
  [ "$rc" -eq 1 ] || { echo "exit $rc"; show; return 1; }
  grep -q "error: --replace gpu-pol: the spec has no node pool of that name (its node pools: gpu-pool)" "$TMP/stderr" ||
    { echo "not refused"; show; return 1; }
  [ -z "$(ls "$STUB_STATE/cloud")" ] || { echo "made:"; ls "$STUB_STATE/cloud"; return 1; }
  up "$TMP/out-orig/mnist" --replace
  [ "$rc" -eq 2 ] && grep -q "error: --replace needs a POOL" "$TMP/stderr" || { echo "--replace alone: exit $rc"; show; return 1; }
}

# The cluster: a new release channel is updated in place; a new network stops up.sh before it makes
# anything (the new network included), since a cluster's network is fixed when it is made.
cluster() {
  local new
  new=$(edited mnist channel 's/^  name: demo$/  name: demo\n  releaseChannel: RAPID/') || return 1
  fresh "$TMP/out-orig/mnist" || return 1
  up "$new"
  [ "$rc" -eq 0 ] || { echo "up.sh of the new channel failed"; show; return 1; }
  grep -q "cluster demo: release channel REGULAR; the spec RAPID: updating it in place" "$TMP/stderr" || { show; return 1; }
  [ "$(changes)" = "$(changes | grep -- '^gcloud container clusters update demo .* --release-channel=rapid$')" ] &&
    [ -n "$(changes)" ] || { echo "changes:"; changes; return 1; }
  stub_reset_calls
  up "$new"
  [ "$rc" -eq 0 ] && [ -z "$(changes)" ] || { echo "the run after the update changed:"; changes; show; return 1; }
  new=$(edited mnist network 's/^  zone: us-central1-c$/  zone: us-central1-c\n  network: {name: ml-net, cidr: 10.0.0.0\/20}/') ||
    return 1
  fresh "$TMP/out-orig/mnist" || return 1
  up "$new"
  [ "$rc" -eq 1 ] || { echo "up.sh of the new network exit $rc, not 1"; show; return 1; }
  grep -q "cluster demo is on network default, subnetwork default; the spec puts it on ml-net, subnetwork ml-net-us-central1" \
    "$TMP/stderr" && grep -q "error: stopped at cluster demo: nothing was made or changed" "$TMP/stderr" || { show; return 1; }
  [ -z "$(changes)" ] || { echo "up.sh changed the cloud before it stopped:"; changes; return 1; }
}

# A bucket's new location stops up.sh: its location is fixed, and up.sh moves no data.
bucket() {
  local new
  new=$(edited xgb-a4 bucket 's/{gcs: {bucket: zt-dask-datagen}}/{gcs: {bucket: zt-dask-datagen, location: US-EAST1}}/') || return 1
  fresh "$TMP/out-orig/xgb-a4" || return 1
  up "$new"
  [ "$rc" -eq 1 ] || { echo "up.sh of the new location exit $rc, not 1"; show; return 1; }
  grep -q "bucket gs://zt-dask-datagen is in US-CENTRAL1; the spec puts it in US-EAST1" "$TMP/stderr" &&
    grep -q "error: a bucket's location is fixed when it is made, and up.sh moves no data" "$TMP/stderr" || { show; return 1; }
  [ -z "$(changes)" ] || { echo "up.sh changed the cloud:"; changes; return 1; }
}

# A pool renamed in the spec: up.sh makes the new one and names the old one, with the command that
# deletes it, but leaves it (its nodes may run work).
renamed() {
  local new
  new=$(edited mnist renamed 's/gpu-pool/gpu-new/g') || return 1
  fresh "$TMP/out-orig/mnist" || return 1
  up "$new"
  [ "$rc" -eq 0 ] || { echo "up.sh of the rename failed"; show; return 1; }
  [ "$(changes | grep -c .)" -eq 1 ] && changes | grep -q '^gcloud container node-pools create gpu-new ' ||
    { echo "changes:"; changes; return 1; }
  grep -q "warning: node pool gpu-pool is not in the spec; it is left as it is" "$TMP/stderr" &&
    grep -q "^  gcloud container node-pools delete gpu-pool " "$TMP/stderr" || { show; return 1; }
  grep -q "node pool gpu-new is not in the spec" "$TMP/stderr" && { echo "the spec's pool named"; show; return 1; }
  stub_exists "container node-pools demo gpu-pool" || { echo "the old pool was deleted"; return 1; }
}

# mnist's fixed pool made autoscaled (1 to 4 nodes), then fixed again at 5: autoscaling is turned on
# with its limits, then off, and the pool resized.
autoscaled() {
  local scaled fixed
  scaled=$(edited mnist scaled 's/nodes: 4}/autoscaling: {min: 1, max: 4}}/') || return 1
  fixed=$(edited mnist fixed 's/nodes: 4}/nodes: 5}/') || return 1
  fresh "$TMP/out-orig/mnist" || return 1
  up "$scaled"
  [ "$rc" -eq 0 ] || { echo "up.sh to autoscaled failed"; show; return 1; }
  [ "$(changes)" = "$(changes | grep -- '^gcloud container node-pools update gpu-pool .* --enable-autoscaling --min-nodes=1 --max-nodes=4$')" ] &&
    [ -n "$(changes)" ] || { echo "to autoscaled:"; changes; return 1; }
  stub_reset_calls
  up "$fixed"
  [ "$rc" -eq 0 ] || { echo "up.sh back to fixed failed"; show; return 1; }
  changes | head -n 1 | grep -q -- '^gcloud container node-pools update gpu-pool .* --no-enable-autoscaling$' &&
    changes | sed -n 2p | grep -q -- '^gcloud container clusters resize demo --node-pool=gpu-pool --num-nodes=5 ' &&
    [ "$(changes | grep -c .)" -eq 2 ] || { echo "back to fixed:"; changes; return 1; }
  [ "$(stub_pool_flag demo gpu-pool num-nodes)" = 5 ] && [ -z "$(stub_pool_flag demo gpu-pool max-nodes)" ] ||
    { echo "the pool is not fixed at 5"; return 1; }
  stub_reset_calls
  up "$fixed"
  [ "$rc" -eq 0 ] && [ -z "$(changes)" ] || { echo "the run after changed:"; changes; show; return 1; }
}

compile_orig() {
  local ex
  for ex in mnist jax-l4 xgb-a4; do
    "$TRAINC" compile "examples/$ex/spec.yaml" -o "$TMP/out-orig" >/dev/null 2>"$TMP/compile.err" || { cat "$TMP/compile.err"; return 1; }
  done
}

t "the examples compile" compile_orig
for ex in mnist jax-l4 xgb-a4; do
  t "$ex: up.sh twice: the second run compares every pool and changes nothing" unchanged "$TMP/out-orig/$ex"
done
t "mnist: 4 -> 6 nodes and new labels, jax-l4: a new taint: resized and updated in place, then nothing changes" \
  resized "$TMP/out-orig/mnist"
t "jax-l4 and xgb-a4: new autoscaling limits are updated in place (per zone, and in all for flex-start)" limits
t "mnist: a fixed pool made autoscaled, then fixed again: autoscaling on with its limits, then off and resized" autoscaled
t "mnist: a new machine type stops up.sh with the commands; --replace recreates the pool" \
  replaced mnist machine 's/machine: n1-standard-4/machine: n1-standard-8/' gpu-pool config.machineType \
  '--machine-type=n1-standard-8'
t "mnist: a new accelerator count stops up.sh with the commands; --replace recreates the pool" \
  replaced mnist accelerator 's/count: 1}/count: 2}/' gpu-pool 'config.accelerators\[0\].acceleratorCount' \
  'count=2'
t "mnist: a new release channel is updated in place; a new network stops up.sh before it makes anything" cluster
t "xgb-a4: a bucket's new location stops up.sh" bucket
t "mnist: a renamed pool is made, and the old one named with its delete command, not deleted" renamed
t "--replace names a pool the spec does not have, or no pool: refused before anything is made" unknown_replace
tap_done
