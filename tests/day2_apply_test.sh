#!/usr/bin/env bash
# Day 2 under the stand-ins (TAP): an example is compiled and its scripts/apply.sh run against the
# kubectl stand-in (tests/kubectl_standin.py), which keeps what was applied and refuses what the
# API server refuses. Run twice with no change, apply.sh starts no step the second time. Then the
# spec is edited, compiled again into the same folder and applied again: exactly the edited step,
# and the steps that need it, start a new run; no update is refused; and `trainc plan --against`
# the earlier output named exactly the runs started and the objects rolled. Beyond a step's history its
# older runs go (Job, ConfigMap and Service together), a step removed from the spec leaves nothing,
# what trainc did not make for the system stays, and --rerun STEP starts STEP and the steps after it.
# Usage: tests/day2_apply_test.sh TRAINC
set -uo pipefail
# shellcheck source=tests/tap.sh
. "$(dirname "${BASH_SOURCE[0]}")/tap.sh"
tap_init "$@"
# shellcheck source=tests/stubs.sh
. tests/stubs.sh
rc=0

SANDBOX="$TMP/sandbox"

# Runs scripts/$2 of output folder $1 with the stand-ins first on PATH, in the sandbox.
run_script() {
  local dir=$1 script=$2
  shift 2
  mkdir -p "$SANDBOX/home" "$SANDBOX/tmp"
  rc=0
  (cd "$SANDBOX" && env PATH="$STUB_BIN:$PATH" HOME="$SANDBOX/home" TMPDIR="$SANDBOX/tmp" \
    HEALTH_ATTEMPTS=2 HEALTH_DELAY=0 bash "$dir/scripts/$script" "$@") >"$TMP/stdout" 2>"$TMP/stderr" || rc=$?
}

show() {
  echo "exit $rc; stderr:"
  tail -n 20 "$TMP/stderr"
  echo "kubectl calls:"
  stub_log | grep '^kubectl' | tail -n 15
}

# compile NAME: trainc compile of the copied spec of NAME into $TMP/NAME/out, which then holds the
# output folder NAME/ (replaced when it holds an earlier output).
compile() {
  "$TRAINC" compile "$TMP/$1/spec/spec.yaml" -o "$TMP/$1/out" >"$TMP/compile.out" 2>&1 ||
    { echo "trainc compile $1 failed:"; cat "$TMP/compile.out"; return 1; }
  stub_repin "$TMP/$1/out/$1"
}

# The name of the object in file k8s/$2.yaml of output folder $1.
name_in() { sed -n 's/^  name: //p' "$1/k8s/$2.yaml" | head -n 1; }
# The run a step's Job (or a gang's JobSet) is named by in output folder $1.
run_of() { if [ -e "$1/k8s/$2-job.yaml" ]; then name_in "$1" "$2-job"; else name_in "$1" "$2-jobset"; fi; }
# What starting that run shows as: job/<run> or jobset/<run>.
ref_of() { if [ -e "$1/k8s/$2-job.yaml" ]; then echo "job/$(run_of "$1" "$2")"; else echo "jobset/$(run_of "$1" "$2")"; fi; }

# apply OUT [ARG...]: runs apply.sh ARG...; fails unless it exits 0 and no update was refused.
apply() {
  run_script "$1" apply.sh "${@:2}"
  [ "$rc" -eq 0 ] || { echo "apply.sh failed"; show; return 1; }
  [ -z "$(stub_k8s_refused)" ] || { echo "updates refused: $(stub_k8s_refused | tr '\n' ' ')"; show; return 1; }
}

# The steps apply.sh started since the marker $1 (a line count of the start log), sorted.
started_since() { stub_k8s_started | tail -n "+$(($1 + 1))" | sort; }

# setup NAME: a copy of examples/NAME (the spec may name files beside it), compiled into $TMP/NAME/out;
# in the fake cloud (stubs_install runs first, outside the tests: they run in subshells), the
# system's cluster made by up.sh and its images in the registry.
setup() {
  local name=$1
  rm -rf "${TMP:?}/$name" "$SANDBOX"
  mkdir -p "$TMP/$name"
  cp -R "examples/$name" "$TMP/$name/spec"
  compile "$name" || return 1
  run_script "$TMP/$name/out/$name" up.sh
  [ "$rc" -eq 0 ] || { echo "up.sh failed"; show; return 1; }
  stub_user_images "$TMP/$name/out/$name" >/dev/null
  if [ -f "$TMP/$name/out/$name/scripts/build.sh" ]; then
    run_script "$TMP/$name/out/$name" build.sh
    [ "$rc" -eq 0 ] || { echo "build.sh failed"; show; return 1; }
  fi
}

# edit NAME SED: edits the copied spec with sed expression SED (which must change it), compiles again
# into the same output folder and applies it; prints nothing, fails with the reason.
edit_and_apply() {
  local name=$1 spec="$TMP/$1/spec/spec.yaml"
  cp "$spec" "$TMP/spec.before"
  sed -i "$2" "$spec"
  cmp -s "$spec" "$TMP/spec.before" && { echo "the edit '$2' changed nothing in the spec"; return 1; }
  # What `trainc plan --against` the output applied last says will happen, asked before compiling over it.
  "$TRAINC" plan "$spec" --against "$TMP/$name/out/$name" --format json >"$TMP/plan.json" 2>"$TMP/plan.err" ||
    { echo "trainc plan --against failed:"; cat "$TMP/plan.err"; return 1; }
  compile "$name" || return 1
  mark=$(stub_k8s_started | wc -l)
  local rolled_mark
  rolled_mark=$(stub_k8s_rolled | wc -l)
  apply "$TMP/$name/out/$name" || return 1
  plan_agrees "$name" "$rolled_mark"
}

# plan_agrees NAME ROLLED_MARK: the steps plan --against said would run are the steps apply.sh
# started (their runs' names less the system and the run), and the objects it said would roll are
# the ones the stand-in rolled: every consequence observed, and nothing else.
plan_agrees() {
  local planned observed planned_rolls observed_rolls
  planned=$(/usr/bin/python3 -c 'import json, sys
print("\n".join(sorted(r["step"] for r in json.load(open(sys.argv[1]))["against"]["runs"])))' "$TMP/plan.json")
  observed=$(started_since "$mark" | sed -E "s|^[a-z]+/$1-(.*)-[0-9a-f]{10}$|\1|" | sort)
  [ "$planned" = "$observed" ] ||
    { echo "plan --against said these steps run: '$planned'; apply.sh started: '$observed'"; return 1; }
  planned_rolls=$(/usr/bin/python3 -c 'import json, sys
objs = json.load(open(sys.argv[1]))["against"]["objects"]
print("\n".join(sorted(o["kind"].lower() + "/" + o["name"] for o in objs if o["action"] == "roll")))' "$TMP/plan.json")
  observed_rolls=$(stub_k8s_rolled | tail -n "+$(($2 + 1))" | sort)
  [ "$planned_rolls" = "$observed_rolls" ] ||
    { echo "plan --against said these roll: '$planned_rolls'; the stand-in rolled: '$observed_rolls'"; return 1; }
}

# ---- xgb-a4: datagen, then train (needs datagen) ------------------------------------------------------
XGB=$TMP/xgb-a4/out/xgb-a4
stubs_install "$TMP/stubs-xgb-a4"

xgb_twice() {
  setup xgb-a4 || return 1
  apply "$XGB" || return 1
  local first expected
  first=$(stub_k8s_started | sort)
  expected=$(printf '%s\n' "$(ref_of "$XGB" datagen)" "$(ref_of "$XGB" train)" | sort)
  [ "$first" = "$expected" ] || { echo "the first apply started:"; echo "$first"; echo "expected:"; echo "$expected"; return 1; }
  stub_reset_calls
  apply "$XGB" || return 1
  [ "$(stub_k8s_started | sort)" = "$first" ] || { echo "the second apply started:"; started_since 2; show; return 1; }
  [ -z "$(stub_k8s_rolled)$(stub_k8s_deleted)" ] || { echo "the second apply rolled or deleted: $(stub_k8s_rolled) $(stub_k8s_deleted)"; return 1; }
  grep -q '^kubectl .* apply ' "$STUB_STATE/log" || { echo "the second apply applied nothing"; return 1; }
}
t "xgb-a4: apply.sh twice with no change; the second run starts no step" xgb_twice

mark=0
xgb_edit_train() {
  [ -f "$XGB/scripts/apply.sh" ] || { echo "no output from the test before"; return 1; }
  local datagen train_before train
  datagen=$(run_of "$XGB" datagen)
  train_before=$(run_of "$XGB" train)
  edit_and_apply xgb-a4 's/^\( *rounds:\) 2000$/\1 2500/' || return 1
  train=$(run_of "$XGB" train)
  [ "$(run_of "$XGB" datagen)" = "$datagen" ] || { echo "editing train renamed datagen's run"; return 1; }
  [ "$train" != "$train_before" ] || { echo "train's run kept its name ($train) after its rounds changed"; return 1; }
  [ "$(started_since "$mark")" = "jobset/$train" ] ||
    { echo "started after the edit (expected jobset/$train alone):"; started_since "$mark"; return 1; }
  [ -z "$(stub_k8s_rolled)" ] || { echo "rolled: $(stub_k8s_rolled)"; return 1; }
}
t "xgb-a4: train's rounds edited: train alone starts a new run, nothing is refused" xgb_edit_train

xgb_edit_datagen() {
  [ -f "$XGB/scripts/apply.sh" ] || { echo "no output from the test before"; return 1; }
  local datagen_before train_before expected
  datagen_before=$(run_of "$XGB" datagen)
  train_before=$(run_of "$XGB" train)
  edit_and_apply xgb-a4 's/^\(    datagen: {size: 6TB, features:\) 400,/\1 500,/' || return 1
  [ "$(run_of "$XGB" datagen)" != "$datagen_before" ] && [ "$(run_of "$XGB" train)" != "$train_before" ] ||
    { echo "datagen's edit did not rename both runs"; return 1; }
  expected=$(printf '%s\n' "$(ref_of "$XGB" datagen)" "$(ref_of "$XGB" train)" | sort)
  [ "$(started_since "$mark")" = "$expected" ] ||
    { echo "started after the edit:"; started_since "$mark"; echo "expected:"; echo "$expected"; return 1; }
  # apply.sh waited for the new datagen run before it applied train's.
  grep -q "^kubectl .* wait job/$(run_of "$XGB" datagen) " "$STUB_STATE/log" ||
    { echo "apply.sh did not wait for datagen's new run"; stub_log | grep '^kubectl' | tail -n 10; return 1; }
}
t "xgb-a4: datagen's features edited: datagen and train (which needs it) start new runs" xgb_edit_datagen

xgb_again() {
  [ -f "$XGB/scripts/apply.sh" ] || { echo "no output from the test before"; return 1; }
  compile xgb-a4 || return 1
  mark=$(stub_k8s_started | wc -l)
  apply "$XGB" || return 1
  [ -z "$(started_since "$mark")" ] || { echo "compiled again unchanged, apply.sh started:"; started_since "$mark"; return 1; }
}
t "xgb-a4: compiled again with no change, apply.sh starts nothing" xgb_again

# ---- xgb-a4 pruning: runs beyond a step's history, a step gone, --rerun ------------------------------------------
# The runs of step $1 (the names of its objects of kind $2: job.batch, configmap, service) the
# cluster holds, sorted, one a line.
held() { stub_k8s_objects | sed -n "s|^$2/xgb-a4/\\(xgb-a4-$1-.*\\)$|\\1|p" | sort; }

xgb_history() {
  [ -f "$XGB/scripts/apply.sh" ] || { echo "no output from the test before"; return 1; }
  local t3 t4 t5 kind datagen rounds
  # Objects in the namespace that trainc did not make for this system: never pruned.
  cat >"$TMP/others.yaml" <<YAML
apiVersion: v1
kind: ConfigMap
metadata: {name: users-own, namespace: xgb-a4, labels: {app.kubernetes.io/part-of: xgb-a4}}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: other-system, namespace: xgb-a4, labels: {app.kubernetes.io/part-of: other, app.kubernetes.io/managed-by: trainc}}
YAML
  PATH="$STUB_BIN:$PATH" kubectl apply -f "$TMP/others.yaml" >/dev/null || return 1
  datagen=$(held datagen job.batch)
  t3=$(run_of "$XGB" train)
  for rounds in 2501 2502; do
    edit_and_apply xgb-a4 "s/^\\( *rounds:\\) [0-9]*$/\\1 $rounds/" || return 1
  done
  t5=$(run_of "$XGB" train)
  t4=$(held train jobset.jobset.x-k8s.io | grep -vx -e "$t3" -e "$t5")
  for kind in jobset.jobset.x-k8s.io configmap; do  # train is a gang: JobSet's own Service
    [ "$(held train "$kind")" = "$(printf '%s\n' "$t3" "$t4" "$t5" | sort)" ] ||
      { echo "train's $kind objects: $(held train "$kind" | tr '\n' ' ') (expected the last 3 runs: $t3 $t4 $t5)"; return 1; }
  done
  # apply.sh deletes each old run's JobSet and ConfigMap; the JobSet's Jobs are its controller's
  # (ownerReferences), gone with it by garbage collection, never deleted by apply.sh itself.
  [ "$(stub_k8s_deleted | grep -c '/xgb-a4-train-')" -eq 4 ] ||
    { echo "deleted: $(stub_k8s_deleted | tr '\n' ' ') (expected the JobSet and the ConfigMap of 2 runs)"; return 1; }
  [ "$(held datagen job.batch)" = "$datagen" ] || { echo "datagen's runs changed: $(held datagen job.batch)"; return 1; }
  stub_k8s_objects | grep -qx configmap/xgb-a4/users-own && stub_k8s_objects | grep -qx configmap/xgb-a4/other-system ||
    { echo "an object trainc did not make for this system was deleted: $(stub_k8s_deleted | tr '\n' ' ')"; return 1; }
}
t "xgb-a4: train edited twice more: its last 3 runs stay (JobSet, ConfigMap), older ones go, nothing else" xgb_history

xgb_rerun() {
  [ -f "$XGB/scripts/apply.sh" ] || { echo "no output from the test before"; return 1; }
  local train datagen
  train=$(run_of "$XGB" train)
  datagen=$(run_of "$XGB" datagen)
  mark=$(stub_k8s_started | wc -l)
  apply "$XGB" --rerun train || return 1
  [ "$(started_since "$mark")" = "jobset/$train" ] || { echo "--rerun train started: $(started_since "$mark" | tr '\n' ' ')"; return 1; }
  mark=$(stub_k8s_started | wc -l)
  apply "$XGB" --rerun datagen || return 1
  [ "$(started_since "$mark")" = "$(printf '%s\n' "job/$datagen" "jobset/$train" | sort)" ] ||
    { echo "--rerun datagen started: $(started_since "$mark" | tr '\n' ' ') (expected datagen and train)"; return 1; }
  mark=$(stub_k8s_started | wc -l)
  apply "$XGB" || return 1
  [ -z "$(started_since "$mark")" ] || { echo "apply.sh after --rerun started: $(started_since "$mark")"; return 1; }
}
t "xgb-a4: --rerun train starts train's run again; --rerun datagen starts datagen's and train's" xgb_rerun

xgb_step_removed() {
  [ -f "$XGB/scripts/apply.sh" ] || { echo "no output from the test before"; return 1; }
  local kind
  edit_and_apply xgb-a4 '/^  - name: train$/,$d' || return 1
  for kind in job.batch configmap service; do
    [ -z "$(held train "$kind")" ] || { echo "train, gone from the spec, left its $kind objects: $(held train "$kind" | tr '\n' ' ')"; return 1; }
  done
  [ -z "$(started_since "$mark")" ] || { echo "started: $(started_since "$mark")"; return 1; }
  [ -n "$(held datagen job.batch)" ] || { echo "datagen's runs went too"; return 1; }
  stub_k8s_objects | grep -qx configmap/xgb-a4/users-own || { echo "the user's ConfigMap was deleted"; return 1; }
}
t "xgb-a4: train removed from the spec: every run of train goes, datagen's stay" xgb_step_removed

# ---- mnist: one torchrun step built from its own image -----------------------------------------------------
MNIST=$TMP/mnist/out/mnist
stubs_install "$TMP/stubs-mnist"
mnist() {
  setup mnist || return 1
  apply "$MNIST" || return 1
  [ "$(stub_k8s_started)" = "$(ref_of "$MNIST" train)" ] || { echo "started: $(stub_k8s_started)"; return 1; }
  mark=$(stub_k8s_started | wc -l)
  apply "$MNIST" || return 1
  [ -z "$(started_since "$mark")" ] || { echo "the second apply started: $(started_since "$mark")"; return 1; }
  edit_and_apply mnist 's/--epochs=1,/--epochs=2,/' || return 1
  [ "$(started_since "$mark")" = "$(ref_of "$MNIST" train)" ] ||
    { echo "after the edit, started: $(started_since "$mark") (expected $(ref_of "$MNIST" train))"; return 1; }
}
t "mnist: applied twice, then with train's epochs edited: one new run of train, nothing refused" mnist

# ---- kueue-gpu: prep, then two trainings that need it, queued by Kueue ------------------------------------
KUEUE=$TMP/kueue-gpu/out/kueue-gpu
stubs_install "$TMP/stubs-kueue-gpu"
kueue() {
  setup kueue-gpu || return 1
  apply "$KUEUE" || return 1
  local expected
  expected=$(printf '%s\n' "$(ref_of "$KUEUE" prep)" "$(ref_of "$KUEUE" train-small)" "$(ref_of "$KUEUE" train-large)" | sort)
  [ "$(stub_k8s_started | sort)" = "$expected" ] || { echo "started: $(stub_k8s_started | tr '\n' ' ')"; return 1; }
  # Installing Kueue rolls its controller once onto the configuration apply.sh applies
  # (addons/kueue-manager-config.yaml); that configuration is in Kueue's ConfigMap afterwards.
  [ "$(stub_k8s_rolled)" = deployment/kueue-controller-manager ] ||
    { echo "the first apply rolled: '$(stub_k8s_rolled | tr '\n' ' ')' (expected Kueue's controller once)"; return 1; }
  PATH="$STUB_BIN:$PATH" kubectl get configmap/kueue-manager-config -n kueue-system \
    -o 'jsonpath={.data.controller_manager_config\.yaml}' | grep -q '^waitForPodsReady:' ||
    { echo "Kueue's ConfigMap does not hold apply.sh's waitForPodsReady"; return 1; }
  mark=$(stub_k8s_started | wc -l)
  local rolled_first
  rolled_first=$(stub_k8s_rolled | wc -l)
  stub_reset_calls
  apply "$KUEUE" || return 1
  [ -z "$(started_since "$mark")" ] || { echo "the second apply started: $(started_since "$mark")"; return 1; }
  [ -z "$(stub_k8s_rolled | tail -n "+$((rolled_first + 1))")" ] ||
    { echo "the second apply rolled: $(stub_k8s_rolled | tail -n "+$((rolled_first + 1))" | tr '\n' ' ')"; return 1; }
  grep -q '^kubectl .* patch ' "$STUB_STATE/log" && { echo "the second apply patched Kueue's controller"; return 1; }
  edit_and_apply kueue-gpu 's/args: \[--model=small\]/args: [--model=small, --epochs=2]/' || return 1
  [ "$(started_since "$mark")" = "$(ref_of "$KUEUE" train-small)" ] ||
    { echo "train-small edited, started: $(started_since "$mark" | tr '\n' ' ')"; return 1; }
  edit_and_apply kueue-gpu 's/command: \[python3, prep.py\]/command: [python3, prep.py, --fast]/' || return 1
  expected=$(printf '%s\n' "$(ref_of "$KUEUE" prep)" "$(ref_of "$KUEUE" train-small)" "$(ref_of "$KUEUE" train-large)" | sort)
  [ "$(started_since "$mark")" = "$expected" ] ||
    { echo "prep edited, started: $(started_since "$mark" | tr '\n' ' ') (expected prep and both trainings)"; return 1; }
  [ -z "$(stub_k8s_replaced)$(stub_k8s_rolled | tail -n "+$((rolled_first + 1))")" ] ||
    { echo "replaced or rolled: $(stub_k8s_replaced) $(stub_k8s_rolled)"; return 1; }
}
t "kueue-gpu: Kueue's controller rolls once onto its configuration; applied twice, nothing rolls; train-small edited: it alone starts; prep edited: prep and both trainings start" kueue

# ---- vllm-l4: a service, no step ---------------------------------------------------------------------------
VLLM=$TMP/vllm-l4/out/vllm-l4
stubs_install "$TMP/stubs-vllm-l4"
vllm() {
  setup vllm-l4 || return 1
  apply "$VLLM" || return 1
  apply "$VLLM" || return 1
  [ -z "$(stub_k8s_rolled)$(stub_k8s_started)" ] || { echo "rolled: $(stub_k8s_rolled); started: $(stub_k8s_started)"; return 1; }
  edit_and_apply vllm-l4 's/--max-model-len=8192/--max-model-len=4096/' || return 1
  [ "$(stub_k8s_rolled)" = "deployment/$(name_in "$VLLM" service-chat-deployment)" ] ||
    { echo "rolled after a server flag changed: '$(stub_k8s_rolled)' (expected deployment/$(name_in "$VLLM" service-chat-deployment))"; return 1; }
  [ -z "$(stub_k8s_started)" ] || { echo "started: $(stub_k8s_started)"; return 1; }
}
t "vllm-l4: applied twice, nothing rolls; a server flag edited: its Deployment alone rolls" vllm

# ---- ray-t4: a RayJob on a RayCluster ------------------------------------------------------------------------
RAY=$TMP/ray-t4/out/ray-t4
stubs_install "$TMP/stubs-ray-t4"
ray() {
  setup ray-t4 || return 1
  apply "$RAY" || return 1
  [ "$(stub_k8s_started)" = "rayjob/$(name_in "$RAY" train-rayjob)" ] || { echo "started: $(stub_k8s_started)"; return 1; }
  mark=$(stub_k8s_started | wc -l)
  apply "$RAY" || return 1
  [ -z "$(started_since "$mark")" ] || { echo "the second apply started: $(started_since "$mark")"; return 1; }
  # KubeRay never runs a finished RayJob again: an edited step must be a new RayJob.
  edit_and_apply ray-t4 's|--results=/results\]|--results=/results/v2]|' || return 1
  [ "$(started_since "$mark")" = "rayjob/$(name_in "$RAY" train-rayjob)" ] ||
    { echo "after the edit, started: '$(started_since "$mark")' (expected rayjob/$(name_in "$RAY" train-rayjob))"; return 1; }
  [ -z "$(stub_k8s_rolled)" ] || { echo "rolled: $(stub_k8s_rolled)"; return 1; }
}
t "ray-t4: applied twice, then with the step's command edited: a new RayJob, nothing refused" ray

# ---- several systems on one cluster: what one owns, another never prunes or takes over ------------------
# team_spec NAME NAMESPACE POOL QUEUE [CLUSTER]: a spec of system NAME (in NAMESPACE, "" for its own) with
# one CPU pool POOL and one step, queued in LocalQueue QUEUE ("" for none), with Dask cluster CLUSTER
# when given; written to $TMP/NAME@NAMESPACE/spec/spec.yaml. Every such system is on GKE cluster
# `shared`, made once by the first one's up.sh.
team_spec() {
  local dir="$TMP/$1@${2:-own}"
  mkdir -p "$dir/spec"
  {
    echo "apiVersion: trainc/v1"
    echo "kind: TrainingSystem"
    echo "name: $1"
    [ -z "$2" ] || echo "namespace: $2"
    echo "gcp: {project: my-project, region: us-central1, zone: us-central1-a}"
    echo "cluster:"
    echo "  name: shared"
    echo "  pools:"
    echo "    $3: {machine: n2-standard-8, nodes: 4}"
    [ -z "$4" ] || echo "queue: {name: $4}"
    if [ -n "${5:-}" ]; then
      echo "clusters:"
      echo "  $5: {engine: dask, image: 'ghcr.io/dask/dask:2024.12.1', scheduler: {pool: $3}, workers: {w: {pool: $3, replicas: 1}}}"
    fi
    echo "pipeline:"
    echo "  - {name: hello, image: 'python:3.12-slim', pool: $3, command: [python3, -c, 'print(1)']}"
  } >"$dir/spec/spec.yaml"
  "$TRAINC" compile "$dir/spec/spec.yaml" -o "$dir/out" >"$TMP/compile.out" 2>&1 ||
    { echo "trainc compile failed:"; cat "$TMP/compile.out"; return 1; }
  stub_repin "$dir/out/$1"
  stub_user_objects "$dir/out/$1" >/dev/null
  echo "$dir/out/$1"
}
# The cluster-scoped Kueue objects the stand-in cluster holds, kind/name a line.
kueue_objects() { stub_k8s_objects | grep -E '^(clusterqueue|resourceflavor|topology)\.' | sed -E 's|^([a-z]+)\.[^/]*//|\1/|' | sort; }

stubs_install "$TMP/stubs-teams"
two_teams() {
  local a b before
  rm -rf "$SANDBOX"
  a=$(team_spec train team-a cpu team-a) || { echo "$a"; return 1; }
  b=$(team_spec train team-b cpu "") || { echo "$b"; return 1; }
  run_script "$a" up.sh
  [ "$rc" -eq 0 ] || { echo "up.sh failed"; show; return 1; }
  apply "$a" || return 1
  before=$(kueue_objects)
  [ "$(grep -c . <<<"$before")" -eq 2 ] || { echo "team A's queue and flavor are not there:"; echo "$before"; return 1; }
  apply "$b" || return 1
  [ "$(kueue_objects)" = "$before" ] || { echo "team B's apply changed team A's Kueue objects:"; echo "before:"; echo "$before"; echo "after:"; kueue_objects; stub_k8s_deleted; return 1; }
  if stub_k8s_deleted | grep -q .; then echo "team B's apply deleted: $(stub_k8s_deleted | tr '\n' ' ')"; return 1; fi
}
t "two systems named 'train' in namespaces team-a and team-b: B's apply (no queue) leaves A's ClusterQueue and ResourceFlavor" two_teams

joins_meet() {
  local a ax flavors
  a=$(team_spec a "" x-y q) || { echo "$a"; return 1; }
  ax=$(team_spec a-x "" y q) || { echo "$ax"; return 1; }
  apply "$a" || return 1
  apply "$ax" || return 1
  apply "$a" || return 1
  flavors=$(kueue_objects | grep -c '^resourceflavor/a-x-y-')
  [ "$flavors" -eq 2 ] || { echo "system a's pool x-y and system a-x's pool y do not have a flavor each:"; kueue_objects; return 1; }
  if stub_k8s_deleted | grep -q .; then echo "deleted: $(stub_k8s_deleted | tr '\n' ' ')"; return 1; fi
}
t "system a with pool x-y beside system a-x with pool y: two flavors, neither apply prunes the other's" joins_meet

not_taken_over() {
  local a ab
  a=$(team_spec a shared cpu "" b-x) || { echo "$a"; return 1; }
  ab=$(team_spec a-b shared cpu "" x) || { echo "$ab"; return 1; }
  apply "$a" || return 1
  run_script "$ab" apply.sh
  [ "$rc" -ne 0 ] || { echo "system a-b's apply took over system a's Dask scheduler"; show; return 1; }
  grep -q "deployments.apps/a-b-x-scheduler in namespace shared belongs to system 'a'" "$TMP/stderr" ||
    { echo "the refusal does not say whose it is:"; tail -n 5 "$TMP/stderr"; return 1; }
  stub_k8s_objects | grep -q '^deployment.apps/shared/a-b-x-scheduler$' || { echo "system a's scheduler is gone"; return 1; }
}
t "system a-b's Dask cluster x would be system a's cluster b-x in one namespace: apply.sh refuses, naming the owner" not_taken_over

dry_run_lists() {
  local a dir="$TMP/train@team-a"
  a="$dir/out/train"
  sed -i 's/^  - {name: hello,/  - {name: hi,/' "$dir/spec/spec.yaml"
  "$TRAINC" compile "$dir/spec/spec.yaml" -o "$dir/out" >"$TMP/compile.out" 2>&1 || { cat "$TMP/compile.out"; return 1; }
  stub_repin "$a"
  run_script "$a" apply.sh --dry-run
  [ "$rc" -eq 0 ] || { echo "apply.sh --dry-run failed"; show; return 1; }
  grep -q "dry run: would delete jobs.batch/train-hello-[0-9a-f]*: a run of step 'hello', which the spec no longer has" "$TMP/stderr" ||
    { echo "the dry run does not name the run it would delete:"; grep -i 'dry run\|delet' "$TMP/stderr"; return 1; }
  if stub_k8s_deleted | grep -q .; then echo "the dry run deleted: $(stub_k8s_deleted)"; return 1; fi
}
t "apply.sh --dry-run lists each object pruning would delete, by name, and deletes none" dry_run_lists

# A system applied by a trainc that named its ClusterQueue after the system alone: its LocalQueue is
# made again onto the new ClusterQueue (Kueue lets no update move it), and the old ClusterQueue and
# flavor, which carry this system's labels and no namespace label, are pruned; nothing is refused.
from_before_namespaces() {
  local a dir
  a=$(team_spec legacy "" cpu lq) || { echo "$a"; return 1; }
  mkdir -p "$TMP/legacy-old"
  cat >"$TMP/legacy-old/old.yaml" <<'OLD'
apiVersion: kueue.x-k8s.io/v1beta2
kind: ResourceFlavor
metadata:
  name: legacy-cpu
  labels: {app.kubernetes.io/managed-by: trainc, app.kubernetes.io/part-of: legacy}
spec:
  nodeLabels: {cloud.google.com/gke-nodepool: cpu}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata:
  name: legacy
  labels: {app.kubernetes.io/managed-by: trainc, app.kubernetes.io/part-of: legacy}
spec:
  namespaceSelector: {matchLabels: {kubernetes.io/metadata.name: legacy}}
  resourceGroups:
    - coveredResources: [cpu]
      flavors: [{name: legacy-cpu, resources: [{name: cpu, nominalQuota: "8"}]}]
---
apiVersion: v1
kind: Namespace
metadata:
  name: legacy
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata:
  name: lq
  namespace: legacy
  labels: {app.kubernetes.io/managed-by: trainc, app.kubernetes.io/part-of: legacy}
spec:
  clusterQueue: legacy
OLD
  (cd "$SANDBOX" && PATH="$STUB_BIN:$PATH" kubectl apply -f "$TMP/legacy-old/old.yaml") >/dev/null 2>&1 ||
    { echo "the old objects could not be made"; return 1; }
  apply "$a" || return 1
  grep -q "LocalQueue lq feeds ClusterQueue legacy; it now feeds legacy-" "$TMP/stderr" || { echo "the LocalQueue's move is not said:"; tail -n 20 "$TMP/stderr"; return 1; }
  kueue_objects | grep -qx 'clusterqueue/legacy' && { echo "the old ClusterQueue stayed"; kueue_objects; return 1; }
  kueue_objects | grep -qx 'resourceflavor/legacy-cpu' && { echo "the old flavor stayed"; kueue_objects; return 1; }
  stub_k8s_objects | grep -q '^localqueue.kueue.x-k8s.io/legacy/lq$' || { echo "the LocalQueue is gone"; return 1; }
}
t "a system from before names told namespaces apart: its LocalQueue moves, its old ClusterQueue and flavor go" from_before_namespaces

tap_done
