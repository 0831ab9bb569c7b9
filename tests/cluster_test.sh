#!/usr/bin/env bash
# The `cluster` suite: each example's compiled output applied by its own scripts/apply.sh
# (--kubeconfig FILE --addons-installed, as a user of a cluster whose administrators installed the
# add-ons runs it) to the upstream control plane of tests/cluster/cluster.sh: kube-apiserver,
# kube-controller-manager, kube-scheduler, etcd, the JobSet, Kueue and KubeRay controllers, Istio's
# istiod, and kwok nodes made for the example's pools as GKE makes them. Then
# tests/cluster/judge.py holds the cluster to `trainc plan`: every object accepted (apply.sh would
# stop), every pod bound, every Kueue workload admitted, every Job, JobSet and RayJob complete in
# `needs` order, and the pods of each step and service on as many nodes, as many a node, as the plan
# says. Day 2 too: an example running, its spec edited, the new output applied over it by its
# apply.sh; what was started, deleted and rolled is held to `trainc plan --against`
# (tests/cluster/day2.py).
#
# The programs are built by tools/install-cluster.sh (.ci/run builds them first). Without them
# (no Go, no module proxy) the suite is skipped with a line saying why; TRAINC_REQUIRE_CLUSTER=1
# (.ci/run sets it) makes that a failure.
#
# Usage: tests/cluster_test.sh TRAINC [EXAMPLE...]   (TAP_ONLY=REGEX as in tests/tap.sh)
# Inside a network namespace of its own (tests/cluster/netns.sh) where one can be made: pods get
# addresses Services take, and the services' own health checks (health.sh) run through the API
# server's service proxy to tests/cluster/responder.py. Where none can be made, the examples whose
# apply.sh waits on health.sh are skipped saying so.
if [ "${TRAINC_CLUSTER_NETNS:-}" != 1 ] && bash "$(dirname "$0")/cluster/netns.sh" true 2>/dev/null; then
  exec bash "$(dirname "$0")/cluster/netns.sh" bash "$0" "$@"
fi
# shellcheck source=tests/tap.sh
. "$(dirname "$0")/tap.sh"
# shellcheck source=tests/stubs.sh
. "$(dirname "$0")/stubs.sh"
tap_init "$1"
shift

if ! prefix=$(bash tools/install-cluster.sh --check >/dev/null 2>&1 && bash tools/install-cluster.sh --prefix 2>/dev/null); then
  why="the control plane's programs are not built (tools/install-cluster.sh; it needs Go and the Go module proxy)"
  if [ "${TRAINC_REQUIRE_CLUSTER:-0}" = 1 ]; then
    t_fail "cluster suite" "$why, and TRAINC_REQUIRE_CLUSTER=1"
  else
    t_skip "cluster suite" "$why"
  fi
  tap_done
  exit
fi
BIN=$prefix/bin
stubs_install "$TMP/stubs"   # gcloud and curl: the cloud is not the subject here
# ... but the cluster's own addresses are: curl to one of them (a gateway's external address) is the
# real curl; to anything else (the internet) the stand-in's.
mv "$STUB_BIN/curl" "$STUB_BIN/.curl-standin"
cat >"$STUB_BIN/curl" <<'SH'
#!/usr/bin/env bash
for a in "$@"; do
  case "$a" in http://198.1[89].*|https://198.1[89].*) exec /usr/bin/curl "$@" ;; esac
done
exec "$(dirname "$0")/.curl-standin" "$@"
SH
chmod +x "$STUB_BIN/curl"

examples=("$@")
if [ "${#examples[@]}" -eq 0 ]; then
  for d in examples/*/; do examples+=("$(basename "$d")"); done
fi

spec_of() {
  local d=examples/$1
  if [ -f "$d/spec.yaml" ]; then echo "$d/spec.yaml"; else echo "$d/spec.jsonnet"; fi
}

# What the harness cannot show outside a network namespace.
unsupported() {  # OUT
  if [ -f "$1/scripts/health.sh" ] && [ "${TRAINC_CLUSTER_NETNS:-}" != 1 ]; then
    echo "its services are asked through their endpoints, which loopback pod addresses never fill (no network namespace could be made: unshare --net)"
    return
  fi
}

# The add-ons an output installs (apply.sh's checks under --addons-installed, or its README's Apply
# commands), as the comma-separated list cluster.sh up --addons takes.
addons_of() {
  local out=$1 list=()
  local text
  text=$(cat "$out/scripts/apply.sh" "$out/README.md" 2>/dev/null)
  if grep -q "need_addon jobset-system\|kubernetes-sigs/jobset/releases" <<<"$text"; then list+=(jobset); fi
  if grep -q "need_addon kueue-system\|kubernetes-sigs/kueue/releases" <<<"$text"; then list+=(kueue); fi
  if grep -q "need_addon kuberay-system\|kuberay-helm" <<<"$text"; then list+=(kuberay); fi
  if grep -q "need_addon istio-system\|istio-release" <<<"$text"; then list+=(istio); fi
  if grep -q "need_addon custom-metrics\|custom-metrics-stackdriver-adapter" <<<"$text"; then list+=(metrics-adapter); fi
  local IFS=,
  echo "${list[*]}"
}

# Applies output folder OUT to the cluster of kubeconfig KC as a user does: its scripts/apply.sh
# --kubeconfig (with --addons-installed where it installs add-ons), or, for an output without GCP,
# its README's Apply commands. What it says goes to LOG; on failure its last lines are printed.
apply_output() {  # OUT KC LOG
  local out=$1 kc=$2 log=$3 rc=0
  if [ -f "$out/scripts/apply.sh" ]; then
    # The one change to the script: the files it fetches from the internet (which the curl
    # stand-in plays) are pinned to what the stand-in downloads, or its SHA-256 check stops it.
    stub_repin "$out"
    local installed=()
    if grep -q -- '--addons-installed)' "$out/scripts/apply.sh"; then installed=(--addons-installed); fi
    PATH="$BIN:$STUB_BIN:$PATH" HEALTH_DELAY=2 timeout 420 bash "$out/scripts/apply.sh" --kubeconfig "$kc" ${installed[@]+"${installed[@]}"} \
      >"$log" 2>&1 || rc=$?
  else
    (cd "$out" && PATH="$BIN:$PATH" KUBECONFIG=$kc timeout 420 bash "$OLDPWD/tests/cluster/readme_apply.sh" README.md) \
      >"$log" 2>&1 || rc=$?
  fi
  if [ "$rc" -ne 0 ]; then
    echo "applying $(basename "$out") exited $rc; its last lines:"
    tail -n 25 "$log"
    return 1
  fi
}

namespace_of() {  # OUT
  python3 -c 'import sys, yaml; print(yaml.safe_load(open(sys.argv[1]))["namespace"]["name"])' "$1/model.yaml"
}

# Waits for the steps apply.sh started last (it returns once they are started) to end.
wait_steps() {  # KC NS
  "$BIN/kubectl" --kubeconfig "$1" wait jobs --all -n "$2" --for=condition=complete --timeout=120s >/dev/null 2>&1 || true
  "$BIN/kubectl" --kubeconfig "$1" wait jobsets.jobset.x-k8s.io --all -n "$2" --for=condition=completed --timeout=60s >/dev/null 2>&1 || true
  "$BIN/kubectl" --kubeconfig "$1" wait rayjobs.ray.io --all -n "$2" --for=jsonpath='{.status.jobDeploymentStatus}'=Complete \
    --timeout=120s >/dev/null 2>&1 || true
}

# cluster_case NAME: the example applied and judged against its plan. cluster_case NAME EDIT: day 2,
# the example applied, then its spec edited by the sed expression EDIT, compiled again and applied
# over it, and what changed on the cluster judged against `trainc plan --against` (day2.py).
cluster_case() {
  local name=$1 edit=${2:-} spec out state kc rc
  spec=$(spec_of "$name")
  out=$TMP/out-$name
  state=$TMP/cluster-$name
  "$TRAINC" compile "$spec" -o "$out" >"$TMP/$name-compile.log" 2>&1 || { cat "$TMP/$name-compile.log"; return 1; }
  out=$out/$(ls "$out")
  "$TRAINC" plan "$spec" --format json >"$TMP/$name-plan.json" 2>/dev/null || { echo "trainc plan failed"; return 1; }
  local kueue=() addons
  if [ -f "$out/addons/kueue-manager-config.yaml" ]; then kueue=(--kueue-config "$out/addons/kueue-manager-config.yaml"); fi
  addons=$(addons_of "$out")
  kc=$(bash tests/cluster/cluster.sh up --state "$state" --addons "$addons" ${kueue[@]+"${kueue[@]}"} "$TMP/$name-plan.json" \
    2>"$TMP/$name-up.log" | tail -n 1)
  if [ ! -f "$kc" ]; then
    tail -n 40 "$TMP/$name-up.log"
    bash tests/cluster/cluster.sh down --state "$state" 2>/dev/null
    return 1
  fi
  rc=0
  # The last hop of a request to a service: what its containers would answer on their ports (only
  # in the network namespace, where nothing else listens and the service proxy can reach it).
  local ports='' models='' responder=''
  if [ "${TRAINC_CLUSTER_NETNS:-}" = 1 ]; then
    ports=$(python3 tests/cluster/ports.py "$out/k8s")
    models=$(python3 tests/cluster/ports.py --models "$out/k8s" | paste -sd, -)
  fi
  if [ -n "$ports" ]; then
    # shellcheck disable=SC2086 # one word per port
    setsid python3 tests/cluster/responder.py --models "$models" $ports 2>"$TMP/$name-responder.log" &
    responder=$!
  fi
  if [ -f "$out/scripts/up.sh" ]; then
    # up.sh first, as a user does, against the fake cloud of tests/stubs.sh (buckets apply.sh fills),
    # each example in a project of its own: xgb-a4 and xgb-dask-a4 name the same Google service
    # account, and up.sh rightly refuses to bind an account another system made.
    rm -rf "$STUB_STATE/cloud"
    mkdir -p "$STUB_STATE/cloud"
    PATH="$STUB_BIN:$PATH" bash "$out/scripts/up.sh" >"$TMP/$name-up-sh.log" 2>&1 || { echo "up.sh failed:"; tail -n 20 "$TMP/$name-up-sh.log"; rc=1; }
  fi
  if [ "$rc" -eq 0 ]; then apply_output "$out" "$kc" "$TMP/$name-apply.log" || rc=1; fi
  local ns
  ns=$(namespace_of "$out")
  wait_steps "$kc" "$ns"
  if [ -n "$edit" ]; then
    day2 "$name" "$spec" "$out" "$kc" "$ns" "$edit" || rc=1
    finish_case "$name" "$state" "$rc" "$responder"
    return
  fi
  # Each autoscaled Deployment at its autoscaler's maximum, as under load (the plan gives its pool
  # room for that many; the autoscaler, which finds no metrics here, leaves a count in its range).
  local target max
  while read -r target max; do
    [ -n "$target" ] || continue
    "$BIN/kubectl" --kubeconfig "$kc" scale "deployment/$target" -n "$ns" --replicas="$max" >/dev/null &&
      "$BIN/kubectl" --kubeconfig "$kc" rollout status "deployment/$target" -n "$ns" --timeout=120s >/dev/null ||
      { echo "deployment $target did not roll out at its autoscaler's maximum, $max replicas"; rc=1; }
  done < <("$BIN/kubectl" --kubeconfig "$kc" get hpa -n "$ns" \
    -o 'jsonpath={range .items[?(@.spec.scaleTargetRef.kind=="Deployment")]}{.spec.scaleTargetRef.name} {.spec.maxReplicas}{"\n"}{end}')
  local problems
  local judge_endpoints=()
  if [ "${TRAINC_CLUSTER_NETNS:-}" = 1 ]; then judge_endpoints=(--endpoints); fi
  problems=$(python3 tests/cluster/judge.py "$BIN/kubectl" "$kc" "$TMP/$name-plan.json" "$out/model.yaml" "$ns" \
    ${judge_endpoints[@]+"${judge_endpoints[@]}"} 2>&1) || rc=1
  if [ -n "$problems" ]; then
    printf '%s\n' "$problems"
    rc=1
  fi
  # health.sh said the services serve: its requests came through the service proxy to the pods.
  if [ -n "$responder" ] && [ -f "$out/scripts/health.sh" ] && [ "$rc" -eq 0 ] &&
    ! grep -q '"GET /' "$TMP/$name-responder.log"; then
    echo "health.sh passed, but no request of it reached a pod's address through the service proxy"
    rc=1
  fi
  finish_case "$name" "$state" "$rc" "$responder"
}

# Stops a case's cluster (and responder), keeping the components' logs when it failed; returns RC.
finish_case() {  # NAME STATE RC RESPONDER_PID
  local name=$1 state=$2 rc=$3 responder=$4
  if [ "$rc" -ne 0 ]; then
    "$BIN/kubectl" --kubeconfig "$state/kubeconfig" get pods -A -o wide 2>&1 | head -n 40
    mkdir -p out/cluster-logs
    rm -rf "out/cluster-logs/$name"
    cp -r "$state/logs" "out/cluster-logs/$name" 2>/dev/null || true
    cp "$TMP/$name"-apply*.log "out/cluster-logs/$name/" 2>/dev/null || true
    echo "the components' logs: out/cluster-logs/$name"
  fi
  if [ -n "$responder" ]; then kill "$responder" 2>/dev/null; wait "$responder" 2>/dev/null; fi
  bash tests/cluster/cluster.sh down --state "$state" 2>/dev/null
  return "$rc"
}

# Day 2 on a running system: the spec edited, compiled, its plan against the output applied, and
# the new output applied over it by its own apply.sh (the server must refuse nothing); then what
# was started, deleted and rolled is what the plan said (tests/cluster/day2.py).
day2() {  # NAME SPEC OUT KC NS EDIT
  local name=$1 spec=$2 out=$3 kc=$4 ns=$5 edit=$6 dir new problems
  dir=$TMP/day2-$name
  rm -rf "$dir"
  cp -r "$(dirname "$spec")" "$dir"
  sed -i -E "$edit" "$dir/$(basename "$spec")"
  if cmp -s "$spec" "$dir/$(basename "$spec")"; then echo "the edit '$edit' changed nothing in $spec"; return 1; fi
  "$TRAINC" compile "$dir/$(basename "$spec")" -o "$dir/out" >"$TMP/$name-compile2.log" 2>&1 || { cat "$TMP/$name-compile2.log"; return 1; }
  new=$dir/out/$(basename "$out")
  "$TRAINC" plan "$dir/$(basename "$spec")" --against "$out" --format json >"$TMP/$name-against.json" 2>"$TMP/$name-against.log" ||
    { cat "$TMP/$name-against.log"; return 1; }
  python3 tests/cluster/day2.py snapshot "$BIN/kubectl" "$kc" "$ns" >"$TMP/$name-before.json" || return 1
  apply_output "$new" "$kc" "$TMP/$name-apply2.log" || return 1
  wait_steps "$kc" "$ns"
  python3 tests/cluster/day2.py snapshot "$BIN/kubectl" "$kc" "$ns" >"$TMP/$name-after.json" || return 1
  problems=$(python3 tests/cluster/day2.py judge "$TMP/$name-before.json" "$TMP/$name-after.json" "$TMP/$name-against.json" 2>&1) ||
    { printf '%s\n' "$problems"; return 1; }
  if [ -n "$problems" ]; then printf '%s\n' "$problems"; return 1; fi
}

# A spec trainc refuses because some of a step's pods would stay Pending, fixed as the error says
# (the pool raised to the nodes it names), compiled and applied to a cluster with the pool at the
# size the spec had: exactly the pods trainc said find no room stay Pending, the scheduler saying
# why. The pods that run keep running (an hour) so that none frees its node.
pending_case() {
  local case=tests/errors/$1 msg step want pool size fix out state kc rc=0
  msg=$(cat "$case/expected.stderr")
  [[ $msg =~ step\ \'([^\']+)\'\ would\ stay\ Pending:\ ([0-9]+)\ of\ its\ [0-9]+\ pod\(s\)\ find\ no\ room\ on\ pool\ \'([^\']+)\'\ \(([0-9]+)\ node ]] ||
    { echo "$case/expected.stderr names no step that would stay Pending"; return 1; }
  step=${BASH_REMATCH[1]} want=${BASH_REMATCH[2]} pool=${BASH_REMATCH[3]} size=${BASH_REMATCH[4]}
  [[ $msg =~ raise\ the\ pool\'s\ nodes\ to\ ([0-9]+) ]] || { echo "its error offers no pool size"; return 1; }
  fix=${BASH_REMATCH[1]}
  python3 - "$case/spec.yaml" "$pool" "$fix" >"$TMP/$1.yaml" <<'PY' || return 1
import sys, yaml
spec = yaml.safe_load(open(sys.argv[1]))
spec["cluster"]["pools"][sys.argv[2]]["nodes"] = int(sys.argv[3])
yaml.safe_dump(spec, sys.stdout, sort_keys=False)
PY
  out=$TMP/out-$1
  "$TRAINC" compile "$TMP/$1.yaml" -o "$out" >/dev/null 2>&1 || { echo "the fixed spec does not compile"; return 1; }
  out=$out/$(ls "$out")
  "$TRAINC" plan "$TMP/$1.yaml" --format json >"$TMP/$1-plan.json" 2>/dev/null || return 1
  state=$TMP/cluster-$1
  kc=$(bash tests/cluster/cluster.sh up --state "$state" --addons "$(addons_of "$out")" --nodes "$pool=$size" \
    --run-seconds 3600 "$TMP/$1-plan.json" 2>"$TMP/$1-up.log" | tail -n 1)
  if [ ! -f "$kc" ]; then tail -n 20 "$TMP/$1-up.log"; bash tests/cluster/cluster.sh down --state "$state" 2>/dev/null; return 1; fi
  local ns
  ns=$(python3 -c 'import sys, yaml; print(yaml.safe_load(open(sys.argv[1]))["namespace"]["name"])' "$out/model.yaml")
  (cd "$out" && PATH="$BIN:$PATH" KUBECONFIG=$kc timeout 120 bash "$OLDPWD/tests/cluster/readme_apply.sh" README.md) \
    >"$TMP/$1-apply.log" 2>&1 || true
  sleep 15  # the scheduler tries each pod, and says why it stays Pending
  local problems
  problems=$(python3 tests/cluster/judge.py "$BIN/kubectl" "$kc" "$TMP/$1-plan.json" "$out/model.yaml" "$ns" \
    --pending "$step=$want" 2>&1) || rc=1
  if [ -n "$problems" ]; then printf '%s\n' "$problems"; tail -n 10 "$TMP/$1-apply.log"; rc=1; fi
  if [ -n "$responder" ]; then kill "$responder" 2>/dev/null; wait "$responder" 2>/dev/null; fi
  # health.sh said the services serve: its requests came through the service proxy to the pods.
  if [ -n "$responder" ] && [ -f "$out/scripts/health.sh" ] && [ "$rc" -eq 0 ] &&
    ! grep -q '"GET /' "$TMP/$name-responder.log"; then
    echo "health.sh passed, but no request of it reached a pod's address through the service proxy"
    rc=1
  fi
  bash tests/cluster/cluster.sh down --state "$state" 2>/dev/null
  return "$rc"
}

for name in "${examples[@]}"; do
  spec=$(spec_of "$name")
  "$TRAINC" compile "$spec" -o "$TMP/probe-$name" >/dev/null 2>&1 || true
  why=$(unsupported "$TMP/probe-$name/$(ls "$TMP/probe-$name" 2>/dev/null | head -n 1)" 2>/dev/null || true)
  if [ -n "$why" ]; then
    t_skip "examples/$name on the upstream control plane" "$why"
    continue
  fi
  t "examples/$name on the upstream control plane: applied, admitted, bound where the plan says, run in order" cluster_case "$name"
done
# The error cases about placement that have the shape pending_case reads.
pending_cases=(nodes-exceed-pool)
if [ "$#" -eq 0 ]; then
  for c in "${pending_cases[@]}"; do
    t "tests/errors/$c on the upstream control plane: the pods trainc says find no room stay Pending" pending_case "$c"
  done
fi
# Day 2: an example running, its spec edited, the new output applied over it (EXAMPLE|EDIT|WHAT).
day2_cases=(
  "kueue-gpu|s/--model=small]/--model=smaller]/|a step's arguments: that step runs again, nothing else"
  "kueue-gpu|s/prep[.]py/prep2.py/|the first step's command: it and the steps after it run again"
  "kueue-gpu|/- name: train-large/,\$d|a step removed: its Job is deleted, nothing runs"
  "xgb-triton|s/rounds: 300/rounds: 200/|training rounds: train runs again and the service it feeds rolls"
)
if [ "$#" -eq 0 ]; then
  for c in "${day2_cases[@]}"; do
    IFS='|' read -r ex edit what <<<"$c"
    t "day 2 on the upstream control plane: examples/$ex, $what, as trainc plan --against says" cluster_case "$ex" "$edit"
  done
fi
tap_done
