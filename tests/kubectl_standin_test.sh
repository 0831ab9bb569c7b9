#!/usr/bin/env bash
# The kubectl stand-in (tests/kubectl_standin.py, installed by tests/stubs.sh) behaves as kubectl
# and the API server do for what the generated scripts ask (TAP): a golden's objects applied twice
# are created, then unchanged, and the second time start nothing; an update the API server refuses
# (a running Job's pod template) is refused with kubectl's message and exit 1, as the update oracle
# k8s-update-check judges it (skipped without the oracles), or by the built-in rule without them;
# a Deployment whose pod template changed rolls; get selects by label and prints names, custom
# columns and sorted lists as kubectl does; delete removes (and a JobSet its Jobs); wait meets,
# times out or finds nothing as kubectl's does. Usage: tests/kubectl_standin_test.sh TRAINC
set -uo pipefail
# shellcheck source=tests/tap.sh
. "$(dirname "${BASH_SOURCE[0]}")/tap.sh"
tap_init "$@"
# shellcheck source=tests/stubs.sh
. tests/stubs.sh
rc=0

fresh() {
  rm -rf "$TMP/stubs"
  stubs_install "$TMP/stubs"
}

# kubectl ARGS...: the stand-in, as the scripts call it; sets rc, $TMP/stdout and $TMP/stderr.
k() { run env PATH="$STUB_BIN:$PATH" kubectl --context test "$@"; }

show() {
  echo "exit $rc; stdout:"
  head -n 20 "$TMP/stdout"
  echo "stderr:"
  head -n 20 "$TMP/stderr"
}

# The -f arguments of golden $1's objects, in the order its kustomization lists them.
golden_files() {
  local r
  for r in $(sed -n 's/^  - //p' "golden/$1/k8s/kustomization.yaml"); do printf '%s\n' -f "golden/$1/k8s/$r"; done
}

# ---- a golden applied twice -----------------------------------------------------------------------
apply_twice() {
  local files n
  mapfile -t files < <(golden_files xgb-a4)
  n=$(grep -c '^  - ' golden/xgb-a4/k8s/kustomization.yaml)
  fresh
  k apply "${files[@]}"
  [ "$rc" -eq 0 ] || { echo "first apply failed"; show; return 1; }
  [ "$(grep -c ' created$' "$TMP/stdout")" -eq "$n" ] || { echo "not every one of the $n objects was created"; show; return 1; }
  grep -qx 'job.batch/xgb-a4-datagen-[0-9a-f]*\ created' "$TMP/stdout" || { echo "no job.batch/... created line"; show; return 1; }
  # Every object applied, and the Job the train JobSet's controller made for its replicated Job.
  [ "$(stub_k8s_objects | wc -l)" -eq "$((n + 1))" ] || { echo "the cluster holds:"; stub_k8s_objects; return 1; }
  stub_k8s_objects | grep -q '^job.batch/xgb-a4/xgb-a4-train-[0-9a-f]*-node-0$' ||
    { echo "no Job of the train JobSet"; stub_k8s_objects; return 1; }
  stub_k8s_objects | grep -qx 'namespace//xgb-a4' || { echo "no namespace//xgb-a4"; stub_k8s_objects; return 1; }
  stub_k8s_objects | grep -qx 'daemonset.apps/kube-system/xgb-a4-gib-installer' ||
    { echo "the DaemonSet is not in kube-system"; stub_k8s_objects; return 1; }
  local started
  started=$(stub_k8s_started)
  [ "$(printf '%s\n' "$started" | grep -c '^job/xgb-a4-datagen-')" -eq 1 ] &&
    [ "$(printf '%s\n' "$started" | grep -c '^jobset/xgb-a4-train-')" -eq 1 ] || { echo "started: $started"; return 1; }
  k apply "${files[@]}"
  [ "$rc" -eq 0 ] || { echo "second apply failed"; show; return 1; }
  [ "$(grep -c ' unchanged$' "$TMP/stdout")" -eq "$n" ] || { echo "the second apply changed something"; show; return 1; }
  [ "$(stub_k8s_started)" = "$started" ] || { echo "the second apply started:"; stub_k8s_started; return 1; }
  # kubectl apply -k, as a used-by user runs it, finds the same objects.
  k apply -k golden/xgb-a4/k8s
  [ "$rc" -eq 0 ] && [ "$(grep -c ' unchanged$' "$TMP/stdout")" -eq "$n" ] || { echo "apply -k:"; show; return 1; }
  [ -z "$(stub_k8s_refused)$(stub_k8s_deleted)$(stub_k8s_rolled)" ] || { echo "refused, deleted or rolled something"; return 1; }
}
t "a golden's objects applied twice: created, then unchanged; the second apply (and apply -k) starts nothing" apply_twice

# ---- refusals ---------------------------------------------------------------------------------------
# A Job of the same name whose pod template changed: what trainc's output did before step runs.
changed_job() {
  local job=golden/xgb-a4/k8s/datagen-job.yaml name files
  mapfile -t files < <(golden_files xgb-a4)
  fresh
  k apply "${files[@]}"
  [ "$rc" -eq 0 ] || { show; return 1; }
  name=$(sed -n 's/^  name: //p' "$job" | head -n 1)
  sed 's/^      restartPolicy: .*/&\n      hostname: edited/' "$job" >"$TMP/train-job.yaml"
  grep -q 'hostname: edited' "$TMP/train-job.yaml" || { echo "the edit did not take"; return 1; }
  cat >"$TMP/before.yaml" <<YAML
apiVersion: v1
kind: ConfigMap
metadata: {name: applied-before, namespace: xgb-a4}
data: {a: "1"}
YAML
  cat >"$TMP/after.yaml" <<YAML
apiVersion: v1
kind: ConfigMap
metadata: {name: applied-after, namespace: xgb-a4}
data: {a: "1"}
YAML
  k apply -f "$TMP/before.yaml" -f "$TMP/train-job.yaml" -f "$TMP/after.yaml"
  [ "$rc" -eq 1 ] || { echo "the changed Job was not refused"; show; return 1; }
  grep -qx "The Job \"$name\" is invalid: spec.template: field is immutable" "$TMP/stderr" ||
    { echo "not kubectl's message"; show; return 1; }
  grep -qx 'configmap/applied-before created' "$TMP/stdout" || { echo "the object before it was not applied"; show; return 1; }
  # kubectl goes on with the other objects of the call (apply.go collects the errors) and exits 1.
  grep -qx 'configmap/applied-after created' "$TMP/stdout" || { echo "the object after it was not applied"; show; return 1; }
  [ "$(stub_k8s_refused)" = "job/$name" ] || { echo "refused: $(stub_k8s_refused)"; return 1; }
  k get "job/$name" -n xgb-a4 -o 'jsonpath={.spec.template.spec.hostname}'
  [ -z "$(cat "$TMP/stdout")" ] || { echo "the refused template was stored"; return 1; }
  [ "$(stub_k8s_started | grep -c "$name")" -eq 1 ] || { echo "the refused Job counts as started again"; return 1; }
}
if oracles_present "a running Job's changed pod template is refused as k8s-update-check refuses it" k8s-update-check; then
  t "a running Job's changed pod template is refused as k8s-update-check refuses it, with kubectl's message" changed_job
fi
# A rule only the oracle knows: an Indexed Job's completions change only with its parallelism.
oracle_rule() {
  local job=golden/xgb-a4/k8s/datagen-job.yaml name
  name=$(sed -n 's/^  name: //p' "$job" | head -n 1)
  fresh
  k apply -f golden/xgb-a4/k8s/namespace.yaml -f "$job"
  [ "$rc" -eq 0 ] || { show; return 1; }
  sed 's/^  completions: 2$/  completions: 3/' "$job" >"$TMP/datagen-job.yaml"
  k apply -f "$TMP/datagen-job.yaml"
  [ "$rc" -eq 1 ] && grep -qx "The Job \"$name\" is invalid: spec.completions: can only be modified in tandem with spec.parallelism" \
    "$TMP/stderr" || { echo "the oracle's reason is not kubectl's message"; show; return 1; }
  sed 's/^  completions: 2$/  completions: 3/; s/^  parallelism: 2$/  parallelism: 3/' "$job" >"$TMP/datagen-job.yaml"
  k apply -f "$TMP/datagen-job.yaml"
  [ "$rc" -eq 0 ] && grep -qx "job.batch/$name configured" "$TMP/stdout" || { echo "an elastic Indexed Job was refused"; show; return 1; }
}
if oracles_present "the oracle's own reasons: a Job's completions change only with its parallelism" k8s-update-check; then
  t "the oracle's own reasons: a Job's completions change only with its parallelism" oracle_rule
fi
builtin_rule() {
  TRAINC_ORACLE_DIR="$TMP/no-oracle" changed_job || return 1
  # A JobSet's replicatedJobs: refused too; its suspend flag is not part of them.
  sed 's/^      replicas: 2$/      replicas: 3/' golden/triton-tpu/k8s/pretrain-jobset.yaml >"$TMP/jobset.yaml"
  cmp -s "$TMP/jobset.yaml" golden/triton-tpu/k8s/pretrain-jobset.yaml && { echo "the JobSet edit did not take"; return 1; }
  TRAINC_ORACLE_DIR="$TMP/no-oracle" k apply -f golden/triton-tpu/k8s/namespace.yaml -f golden/triton-tpu/k8s/pretrain-jobset.yaml
  [ "$rc" -eq 0 ] || { show; return 1; }
  TRAINC_ORACLE_DIR="$TMP/no-oracle" k apply -f "$TMP/jobset.yaml"
  [ "$rc" -eq 1 ] && grep -q '^The JobSet ".*" is invalid: spec.replicatedJobs: field is immutable$' "$TMP/stderr" ||
    { echo "the JobSet's changed replicatedJobs were not refused"; show; return 1; }
}
t "without the oracle, the built-in rule refuses a Job's changed template and a JobSet's replicatedJobs" builtin_rule

# ---- rollouts ------------------------------------------------------------------------------------------
rollouts() {
  local d=golden/vllm-l4/k8s/service-chat-deployment.yaml name
  name=$(sed -n 's/^  name: //p' "$d" | head -n 1)
  fresh
  k apply -f golden/vllm-l4/k8s/namespace.yaml -f "$d"
  [ "$rc" -eq 0 ] || { show; return 1; }
  # Replicas alone: configured, nothing rolled.
  sed 's/^spec:$/&\n  replicas: 3/' "$d" >"$TMP/scaled.yaml"
  grep -qx '  replicas: 3' "$TMP/scaled.yaml" || { echo "no top-level spec in $d"; return 1; }
  k apply -f "$TMP/scaled.yaml"
  [ "$rc" -eq 0 ] && grep -qx "deployment.apps/$name configured" "$TMP/stdout" || { show; return 1; }
  [ -z "$(stub_k8s_rolled)" ] || { echo "a replica count rolled the pods: $(stub_k8s_rolled)"; return 1; }
  k get "deployment/$name" -n vllm-l4 -o 'jsonpath={.status.availableReplicas}'
  [ "$(cat "$TMP/stdout")" = 3 ] || { echo "available replicas: $(cat "$TMP/stdout")"; return 1; }
  # A pod template change: configured, and the pods roll.
  sed 's/^spec:$/&\n  replicas: 3/; s/^      annotations:$/&\n        edited: "1"/' "$d" >"$TMP/rolled.yaml"
  k apply -f "$TMP/rolled.yaml"
  [ "$rc" -eq 0 ] && grep -qx "deployment.apps/$name configured" "$TMP/stdout" || { show; return 1; }
  [ "$(stub_k8s_rolled)" = "deployment/$name" ] || { echo "rolled: $(stub_k8s_rolled)"; cat "$TMP/rolled.yaml" | head -30; return 1; }
  k rollout status "deployment/$name" -n vllm-l4 --timeout=60s
  [ "$rc" -eq 0 ] && grep -q 'successfully rolled out' "$TMP/stdout" || { show; return 1; }
  k wait "deployment/$name" -n vllm-l4 --for=condition=available --timeout=60s
  [ "$rc" -eq 0 ] || { show; return 1; }
  [ -z "$(stub_k8s_started)" ] || { echo "a Deployment counted as a step: $(stub_k8s_started)"; return 1; }
}
t "a Deployment's changed pod template rolls its pods; a changed replica count does not" rollouts

# ---- get ---------------------------------------------------------------------------------------------------
# Three runs of step 'train' and one of 'prep', made in this order: train-c, train-a, prep-x, train-b.
runs() {
  local name step run
  fresh
  for name in train-c train-a prep-x train-b; do
    step=${name%-*} run=${name#*-}
    cat <<YAML
---
apiVersion: batch/v1
kind: Job
metadata:
  name: sys-$name
  namespace: ns1
  labels: {app.kubernetes.io/part-of: sys, app.kubernetes.io/managed-by: trainc, trainc.dev/step: $step, trainc.dev/run: $run}
spec:
  template:
    spec:
      restartPolicy: Never
      containers: [{name: main, image: busybox}]
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: sys-$name
  namespace: ns1
  labels: {app.kubernetes.io/part-of: sys, app.kubernetes.io/managed-by: trainc, trainc.dev/step: $step, trainc.dev/run: $run}
data: {entrypoint.sh: "true"}
YAML
  done >"$TMP/runs.yaml"
  cat >"$TMP/other.yaml" <<YAML
apiVersion: v1
kind: ConfigMap
metadata: {name: not-ours, namespace: ns1, labels: {app.kubernetes.io/part-of: sys}}
YAML
  k apply -f "$TMP/runs.yaml" -f "$TMP/other.yaml"
  [ "$rc" -eq 0 ] || { show; return 1; }
}
gets() {
  runs || return 1
  local sel=app.kubernetes.io/managed-by=trainc,app.kubernetes.io/part-of=sys
  k get jobs.batch -n ns1 -l "$sel" -o name
  [ "$(cat "$TMP/stdout")" = $'job.batch/sys-prep-x\njob.batch/sys-train-a\njob.batch/sys-train-b\njob.batch/sys-train-c' ] ||
    { echo "-o name:"; show; return 1; }
  k get configmaps,jobs -n ns1 -l "$sel,trainc.dev/step=train" -o name --sort-by=.metadata.creationTimestamp
  # kubectl sorts the objects of every type listed together.
  [ "$(tr '\n' ' ' <"$TMP/stdout")" = "job.batch/sys-train-c configmap/sys-train-c job.batch/sys-train-a configmap/sys-train-a job.batch/sys-train-b configmap/sys-train-b " ] ||
    { echo "sorted by creation:"; show; return 1; }
  k get cm -n ns1 -l 'app.kubernetes.io/part-of=sys,!trainc.dev/step' -o name
  [ "$(cat "$TMP/stdout")" = configmap/not-ours ] || { echo "!key:"; show; return 1; }
  k get cm -n ns1 -l 'trainc.dev/step,trainc.dev/step!=train' -o name
  [ "$(cat "$TMP/stdout")" = configmap/sys-prep-x ] || { echo "key, key!=value:"; show; return 1; }
  k get job -n ns1 -l "$sel" --no-headers --sort-by=.metadata.creationTimestamp \
    -o 'custom-columns=NAME:.metadata.name,STEP:.metadata.labels.trainc\.dev/step,RUN:.metadata.labels.trainc\.dev/run,MISSING:.metadata.labels.nothing'
  [ "$(awk '{print $1 "," $2 "," $3 "," $4}' "$TMP/stdout" | tr '\n' ' ')" = "sys-train-c,train,c,<none> sys-train-a,train,a,<none> sys-prep-x,prep,x,<none> sys-train-b,train,b,<none> " ] ||
    { echo "custom-columns:"; show; return 1; }
  k get jobs -n ns1 -l "$sel" -o custom-columns=NAME:.metadata.name,CREATED:.metadata.creationTimestamp
  head -n 1 "$TMP/stdout" | grep -qE '^NAME +CREATED$' || { echo "no header"; show; return 1; }
  k get jobs -n ns1 -l "$sel" -o 'jsonpath={range .items[*]}{.metadata.name}{"|"}{.metadata.labels.trainc\.dev/step}{"|"}{.metadata.creationTimestamp}{"\n"}{end}'
  [ "$(wc -l <"$TMP/stdout")" -eq 4 ] && grep -qE '^sys-train-a\|train\|20[0-9-]+T[0-9:]+Z$' "$TMP/stdout" ||
    { echo "jsonpath range:"; show; return 1; }
  # Creation times strictly increase in the order of creation.
  k get jobs -n ns1 -o 'jsonpath={.items[*].metadata.creationTimestamp}'
  local a b c d
  read -r a b c d <"$TMP/stdout"
  # Made in the order train-c, train-a, prep-x, train-b; listed by name.
  [[ $d < $b && $b < $a && $a < $c ]] || { echo "creation times (prep-x train-a train-b train-c): $a $b $c $d"; return 1; }
  k get job/sys-train-a -n ns1 -o 'jsonpath={.status.conditions[?(@.type=="Failed")].status}'
  [ "$rc" -eq 0 ] && [ -z "$(cat "$TMP/stdout")" ] || { show; return 1; }
  k get job sys-train-a -n ns1 -o 'jsonpath={.status.conditions[?(@.type=="Complete")].status}'
  [ "$(cat "$TMP/stdout")" = True ] || { show; return 1; }
  k get job/sys-gone -n ns1 -o name
  [ "$rc" -eq 1 ] && grep -qx 'Error from server (NotFound): jobs.batch "sys-gone" not found' "$TMP/stderr" || { show; return 1; }
  k get job/sys-gone -n ns1 -o name --ignore-not-found
  [ "$rc" -eq 0 ] && [ ! -s "$TMP/stdout" ] || { show; return 1; }
  k get jobs -n other -o name
  [ "$rc" -eq 0 ] && [ ! -s "$TMP/stdout" ] || { echo "another namespace:"; show; return 1; }
  # CRD types never installed answer nothing, unless STUB_MISSING_CRDS says their CRD is missing.
  k get jobsets.jobset.x-k8s.io,rayjobs.ray.io,localqueues.kueue.x-k8s.io -n ns1 -l "$sel" -o name
  [ "$rc" -eq 0 ] && [ ! -s "$TMP/stdout" ] || { show; return 1; }
  STUB_MISSING_CRDS=rayjobs.ray.io k get rayjobs.ray.io -n ns1 -o name
  [ "$rc" -eq 1 ] && grep -qx 'error: the server doesn'\''t have a resource type "rayjobs.ray.io"' "$TMP/stderr" || { show; return 1; }
  k get widgets -n ns1
  [ "$rc" -eq 1 ] || { echo "an unknown resource type was answered"; show; return 1; }
}
t "get: -l selectors, -o name, custom-columns, jsonpath ranges, sort-by creation, NotFound, missing CRDs" gets

types() {
  fresh
  local w
  for w in jobs job jobs.batch job.batch configmaps cm services svc deployments.apps jobsets.jobset.x-k8s.io \
    rayjobs.ray.io rayclusters.ray.io localqueues.kueue.x-k8s.io clusterqueues.kueue.x-k8s.io \
    resourceflavors.kueue.x-k8s.io topologies.kueue.x-k8s.io poddisruptionbudgets.policy \
    horizontalpodautoscalers.autoscaling serviceaccounts podmonitorings.monitoring.googleapis.com \
    virtualservices.networking.istio.io gateways.networking.istio.io daemonsets.apps pods endpointslices; do
    k get "$w" -n ns1 -o name
    [ "$rc" -eq 0 ] || { echo "kubectl get $w:"; show; return 1; }
  done
}
t "get knows the resource types the scripts name" types

creates() {
  fresh
  k create namespace users-ns
  [ "$rc" -eq 0 ] && grep -qx 'namespace/users-ns created' "$TMP/stdout" || { show; return 1; }
  k create serviceaccount trainer -n users-ns
  [ "$rc" -eq 0 ] && grep -qx 'serviceaccount/trainer created' "$TMP/stdout" || { show; return 1; }
  k create serviceaccount trainer -n users-ns
  [ "$rc" -eq 1 ] && grep -qx 'Error from server (AlreadyExists): serviceaccounts "trainer" already exists' "$TMP/stderr" ||
    { show; return 1; }
  k get serviceaccount/trainer -n users-ns -o name
  [ "$(cat "$TMP/stdout")" = serviceaccount/trainer ] || { show; return 1; }
  k get serviceaccount/trainer -n default -o name
  [ "$rc" -eq 1 ] || { echo "found in another namespace"; show; return 1; }
  [ "$(stub_k8s_objects | tr '\n' ' ')" = "namespace//users-ns serviceaccount/users-ns/trainer " ] || { stub_k8s_objects; return 1; }
}
t "create namespace and serviceaccount (what the owner makes before apply.sh), AlreadyExists the second time" creates

# ---- delete ----------------------------------------------------------------------------------------------------
deletes() {
  runs || return 1
  k delete job/sys-train-c -n ns1 --ignore-not-found --wait=true --cascade=foreground
  [ "$rc" -eq 0 ] && grep -qx 'job.batch "sys-train-c" deleted' "$TMP/stdout" || { show; return 1; }
  k delete job/sys-train-c -n ns1
  [ "$rc" -eq 1 ] && grep -qx 'Error from server (NotFound): jobs.batch "sys-train-c" not found' "$TMP/stderr" || { show; return 1; }
  k delete job/sys-train-c -n ns1 --ignore-not-found
  [ "$rc" -eq 0 ] || { show; return 1; }
  k delete configmaps -n ns1 -l trainc.dev/step=train
  [ "$rc" -eq 0 ] && [ "$(grep -c ' deleted$' "$TMP/stdout")" -eq 3 ] || { show; return 1; }
  [ "$(stub_k8s_deleted | tr '\n' ' ')" = "job/sys-train-c configmap/sys-train-a configmap/sys-train-b configmap/sys-train-c " ] ||
    { echo "deleted: $(stub_k8s_deleted | tr '\n' ' ')"; return 1; }
  [ "$(stub_k8s_objects | tr '\n' ' ')" = "configmap/ns1/not-ours configmap/ns1/sys-prep-x job.batch/ns1/sys-prep-x job.batch/ns1/sys-train-a job.batch/ns1/sys-train-b " ] ||
    { echo "left: $(stub_k8s_objects | tr '\n' ' ')"; return 1; }
  # A JobSet takes the Jobs its controller made along.
  k apply -f golden/triton-tpu/k8s/namespace.yaml -f golden/triton-tpu/k8s/pretrain-jobset.yaml
  local js
  js=$(sed -n 's/^  name: //p' golden/triton-tpu/k8s/pretrain-jobset.yaml | head -n 1)
  k get jobs -n triton-tpu -l "jobset.sigs.k8s.io/jobset-name=$js" -o name
  [ -s "$TMP/stdout" ] || { echo "the JobSet made no Jobs"; show; return 1; }
  k delete "jobsets.jobset.x-k8s.io/$js" -n triton-tpu
  [ "$rc" -eq 0 ] && grep -qx "jobset.jobset.x-k8s.io \"$js\" deleted" "$TMP/stdout" || { show; return 1; }
  k get jobs -n triton-tpu -o name
  [ ! -s "$TMP/stdout" ] || { echo "the JobSet's Jobs stayed"; show; return 1; }
  # Made again: replaced (deleted, then created), and started again.
  k apply -f golden/triton-tpu/k8s/pretrain-jobset.yaml
  [ "$rc" -eq 0 ] || { show; return 1; }
  [ "$(stub_k8s_replaced)" = "jobset/$js" ] || { echo "replaced: $(stub_k8s_replaced)"; return 1; }
  [ "$(stub_k8s_started | grep -c "^jobset/$js$")" -eq 2 ] || { echo "started: $(stub_k8s_started)"; return 1; }
}
t "delete by name and by label; NotFound unless --ignore-not-found; a JobSet's Jobs go with it; made again: replaced" deletes

# ---- workloads and wait --------------------------------------------------------------------------------------------
waits() {
  fresh
  STUB_RUN_FAIL='sys-prep-*' STUB_RUN_HOLD='sys-train-b sys-train-c' runs || return 1
  k wait job/sys-train-a -n ns1 --for=condition=complete --timeout=300s
  [ "$rc" -eq 0 ] && grep -qx 'job.batch/sys-train-a condition met' "$TMP/stdout" || { echo "complete:"; show; return 1; }
  k wait job/sys-prep-x -n ns1 --for=condition=complete --timeout=300s
  [ "$rc" -eq 1 ] && grep -qx 'error: timed out waiting for the condition on jobs/sys-prep-x' "$TMP/stderr" || { echo "failed:"; show; return 1; }
  k get job/sys-prep-x -n ns1 -o 'jsonpath={.status.conditions[?(@.type=="Failed")].status}'
  [ "$(cat "$TMP/stdout")" = True ] || { show; return 1; }
  k wait job/sys-train-b -n ns1 --for=condition=complete --timeout=300s
  [ "$rc" -eq 1 ] || { echo "held:"; show; return 1; }
  k get job/sys-train-b -n ns1 -o 'jsonpath={.status.active}/{.status.conditions[?(@.type=="Failed")].status}'
  [ "$(cat "$TMP/stdout")" = 1/ ] || { echo "held status:"; show; return 1; }
  stub_k8s_finish job/sys-train-b complete
  k wait job/sys-train-b -n ns1 --for=condition=complete --timeout=300s
  [ "$rc" -eq 0 ] || { echo "finished:"; show; return 1; }
  k wait job/sys-never -n ns1 --for=condition=complete --timeout=300s
  [ "$rc" -eq 1 ] && grep -qx 'Error from server (NotFound): jobs.batch "sys-never" not found' "$TMP/stderr" || { show; return 1; }
  k wait job/sys-train-c -n ns1 --for=jsonpath='{.status.active}'=1 --timeout=1s
  [ "$rc" -eq 0 ] || { echo "jsonpath:"; show; return 1; }
  k wait job/sys-train-c -n ns1 --for=delete --timeout=1s
  [ "$rc" -eq 1 ] || { show; return 1; }
  k delete job/sys-train-c -n ns1
  k wait job/sys-train-c -n ns1 --for=delete --timeout=1s
  [ "$rc" -eq 0 ] || { show; return 1; }
}
t "wait on a complete, a failed, a held (then finished) and an absent Job, as kubectl answers" waits

crd_status() {
  fresh
  STUB_RUN_FAIL='*pretrain*' k apply -f golden/triton-tpu/k8s/namespace.yaml -f golden/triton-tpu/k8s/pretrain-jobset.yaml \
    -f golden/triton-tpu/k8s/finetune-jobset.yaml
  [ "$rc" -eq 0 ] || { show; return 1; }
  local pre fine
  pre=$(sed -n 's/^  name: //p' golden/triton-tpu/k8s/pretrain-jobset.yaml | head -n 1)
  fine=$(sed -n 's/^  name: //p' golden/triton-tpu/k8s/finetune-jobset.yaml | head -n 1)
  k get "jobset/$pre" "jobset/$fine" -n triton-tpu -o 'jsonpath={range .items[*]}{.status.terminalState}{" "}{end}'
  [ "$(cat "$TMP/stdout")" = "Failed Completed " ] || { echo "JobSet states:"; show; return 1; }
  k wait "jobsets.jobset.x-k8s.io/$fine" -n triton-tpu --for=condition=Completed --timeout=1s
  [ "$rc" -eq 0 ] || { show; return 1; }
  k apply -f golden/ray-t4/k8s/namespace.yaml -f golden/ray-t4/k8s/cluster-ray-raycluster.yaml -f golden/ray-t4/k8s/train-rayjob.yaml
  [ "$rc" -eq 0 ] || { show; return 1; }
  local rj
  rj=$(sed -n 's/^  name: //p' golden/ray-t4/k8s/train-rayjob.yaml | head -n 1)
  k get "rayjob/$rj" -n ray-t4 -o 'jsonpath={.status.jobStatus}/{.status.jobDeploymentStatus}'
  [ "$(cat "$TMP/stdout")" = SUCCEEDED/Complete ] || { show; return 1; }
  k wait raycluster/ray-t4-ray -n ray-t4 --for='jsonpath={.status.state}=ready' --timeout=1s
  [ "$rc" -eq 0 ] || { show; return 1; }
  [ "$(stub_k8s_started | tr '\n' ' ')" = "jobset/$pre jobset/$fine rayjob/$rj " ] || { echo "started: $(stub_k8s_started)"; return 1; }
}
t "JobSets and RayJobs finish with the status fields their controllers write" crd_status

tap_done
