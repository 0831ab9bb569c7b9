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
# apply.sh; what was started, deleted and rolled is held to `trainc plan --against` and `trainc diff
# --live` (tests/cluster/day2.py); Kueue's configuration changed, its controller restarted; the
# day-2 corpus's first edits of each example dry-run applied by the server over the unedited
# objects (tests/day2_corpus.py --server). `trainc diff --live` itself against the live objects:
# drift, refusals, read-only and as a planner that may only read (tests/cluster/live.py). Failures:
# pods ended with chosen exit codes or conditions, a node deleted, pods never Ready under Kueue,
# judged by what the Job and JobSet controllers, the pod garbage collector and Kueue do
# (tests/cluster/failures.py).
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

# Waits until every pod of the namespace runs (a day-2 case "while running"), at most 120 s.
wait_running() {  # KC NS
  local i
  for ((i = 0; i < 60; i++)); do
    if [ -n "$("$BIN/kubectl" --kubeconfig "$1" get pods -n "$2" --no-headers 2>/dev/null)" ] &&
      [ -z "$("$BIN/kubectl" --kubeconfig "$1" get pods -n "$2" --no-headers --field-selector=status.phase!=Running 2>/dev/null)" ]; then
      return 0
    fi
    sleep 2
  done
  echo "the pods of $2 did not all run within 120 s"
  return 1
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
  local name=$1 edit=${2:-} mode=${3:-} running='' spec out state kc rc
  if [ "$mode" = running ]; then running=1; fi
  spec=$(spec_of "$name")
  out=$TMP/out-$name
  state=$TMP/cluster-$name
  "$TRAINC" compile "$spec" -o "$out" >"$TMP/$name-compile.log" 2>&1 || { cat "$TMP/$name-compile.log"; return 1; }
  out=$out/$(ls "$out")
  "$TRAINC" plan "$spec" --format json >"$TMP/$name-plan.json" 2>/dev/null || { echo "trainc plan failed"; return 1; }
  local kueue=() addons
  if [ -f "$out/addons/kueue-manager-config.yaml" ]; then kueue=(--kueue-config "$out/addons/kueue-manager-config.yaml"); fi
  addons=$(addons_of "$out")
  # A day-2 case "while running": the steps' pods run for an hour, so the second apply meets them running.
  local run_for=()
  if [ -n "$running" ]; then run_for=(--run-seconds 3600); fi
  kc=$(bash tests/cluster/cluster.sh up --state "$state" --addons "$addons" ${kueue[@]+"${kueue[@]}"} ${run_for[@]+"${run_for[@]}"} "$TMP/$name-plan.json" \
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
  if [ "$mode" = live ]; then live_before "$name" "$spec" "$out" "$kc" || rc=1; fi
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
  if [ -n "$running" ]; then
    wait_running "$kc" "$ns" || rc=1
  else
    wait_steps "$kc" "$ns"
  fi
  if [ "$mode" = live ]; then
    if [ "$rc" -eq 0 ]; then live_after "$name" "$spec" "$out" "$kc" "$ns" || rc=1; fi
    finish_case "$name" "$state" "$rc" "$responder"
    return
  fi
  if [ -n "$edit" ] || [ -n "$running" ]; then
    if [ "$rc" -eq 0 ]; then day2 "$name" "$spec" "$out" "$kc" "$ns" "$edit" "$running" || rc=1; fi
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
  # Day 2 on the running system: the example's edits (day2_edits), each applied over the last.
  local what gen=0 cur_spec=$spec cur_out=$out line lines=()
  mapfile -t lines < <(day2_edits "$name")  # read first: what day2 runs reads stdin
  for line in ${lines[@]+"${lines[@]}"}; do
    [ "$rc" -eq 0 ] || break
    edit=${line%%|*} what=${line#*|}
    gen=$((gen + 1))
    day2 "$name-$gen" "$cur_spec" "$cur_out" "$kc" "$ns" "$edit" </dev/null || { echo "day 2, $what: as above"; rc=1; break; }
    cur_spec=$DAY2_SPEC cur_out=$DAY2_OUT
  done
  finish_case "$name" "$state" "$rc" "$responder"
}

# Stops a case's cluster (and responder), keeping the components' logs when it failed; returns RC.
finish_case() {  # NAME STATE RC RESPONDER_PID
  local name=$1 state=$2 rc=$3 responder=$4
  if [ "$rc" -ne 0 ]; then
    # The case's own objects first (GKE's simulated kube-system pods, many, would push them out).
    "$BIN/kubectl" --kubeconfig "$state/kubeconfig" get pods -A -o wide 2>&1 | awk '$1 != "kube-system"' | head -n 60
    local kind
    for kind in jobs jobsets.jobset.x-k8s.io rayjobs.ray.io workloads.kueue.x-k8s.io deployments; do
      "$BIN/kubectl" --kubeconfig "$state/kubeconfig" get "$kind" -A 2>/dev/null | awk '$1 != "kube-system"' | head -n 20
    done
    mkdir -p out/cluster-logs
    rm -rf "out/cluster-logs/$name"
    cp -r "$state/logs" "out/cluster-logs/$name" 2>/dev/null || true
    cp "$TMP/$name"-apply*.log "$TMP/$name"-[0-9]*-apply*.log "out/cluster-logs/$name/" 2>/dev/null || true
    echo "the components' logs: out/cluster-logs/$name"
  fi
  if [ -n "$responder" ]; then kill "$responder" 2>/dev/null; wait "$responder" 2>/dev/null; fi
  bash tests/cluster/cluster.sh down --state "$state" 2>/dev/null
  return "$rc"
}

# Day 2 on a running system: the spec edited, compiled, its plan against the output applied, and
# the new output applied over it by its own apply.sh (the server must refuse nothing); then what
# was started, deleted and rolled is what the plan said (tests/cluster/day2.py).
day2() {  # NAME SPEC OUT KC NS EDIT [RUNNING]: an empty EDIT (while running) applies the same spec again
  # The edited spec and its output are left in DAY2_SPEC and DAY2_OUT, for the next edit to start from.
  local name=$1 spec=$2 out=$3 kc=$4 ns=$5 edit=$6 running=${7:-} dir new problems
  dir=$TMP/day2-$name
  rm -rf "$dir"
  cp -r "$(dirname "$spec")" "$dir"
  if [ -n "$edit" ]; then
    sed -i -E "$edit" "$dir/$(basename "$spec")"
    if cmp -s "$spec" "$dir/$(basename "$spec")"; then echo "the edit '$edit' changed nothing in $spec"; return 1; fi
  fi
  "$TRAINC" compile "$dir/$(basename "$spec")" -o "$dir/out" >"$TMP/$name-compile2.log" 2>&1 || { cat "$TMP/$name-compile2.log"; return 1; }
  new=$dir/out/$(basename "$out")
  DAY2_SPEC=$dir/$(basename "$spec") DAY2_OUT=$new
  "$TRAINC" plan "$dir/$(basename "$spec")" --against "$out" --format json >"$TMP/$name-against.json" 2>"$TMP/$name-against.log" ||
    { cat "$TMP/$name-against.log"; return 1; }
  # What the cluster itself says applying would do (read-only): exit 1 when anything changes.
  local live_rc=0 want_rc=1
  PATH="$BIN:$PATH" "$TRAINC" diff --live "$dir/$(basename "$spec")" --kubeconfig "$kc" --format json \
    >"$TMP/$name-live.json" 2>"$TMP/$name-live.log" || live_rc=$?
  if [ -z "$edit" ]; then want_rc=0; fi
  if [ "$live_rc" -ne "$want_rc" ]; then
    echo "trainc diff --live exited $live_rc, expected $want_rc"
    cat "$TMP/$name-live.log"
    return 1
  fi
  python3 tests/cluster/day2.py snapshot "$BIN/kubectl" "$kc" "$ns" >"$TMP/$name-before.json" || return 1
  # The services' availability through the apply (a roll that surges keeps one pod available).
  python3 tests/cluster/availability.py watch "$BIN/kubectl" "$kc" "$ns" "$TMP/$name-avail.json" &
  local watcher=$!
  apply_output "$new" "$kc" "$TMP/$name-apply2.log" || { kill "$watcher"; wait "$watcher"; return 1; }
  kill -TERM "$watcher"
  wait "$watcher"
  if [ -n "$running" ]; then sleep 5; else wait_steps "$kc" "$ns"; fi
  python3 tests/cluster/day2.py snapshot "$BIN/kubectl" "$kc" "$ns" >"$TMP/$name-after.json" || return 1
  problems=$(python3 tests/cluster/availability.py judge "$TMP/$name-avail.json" "$TMP/$name-against.json" 2>&1) ||
    { printf '%s\n' "$problems"; return 1; }
  problems=$(python3 tests/cluster/day2.py judge "$TMP/$name-before.json" "$TMP/$name-after.json" "$TMP/$name-against.json" \
    "$TMP/$name-live.json" 2>&1) ||
    { printf '%s\n' "$problems"; return 1; }
  if [ -n "$problems" ]; then printf '%s\n' "$problems"; return 1; fi
}

# trainc diff --live SPEC on this cluster, its JSON in $TMP/NAME-live-WHAT.json; fails unless it exits WANT.
live_diff() {  # NAME WHAT SPEC KC WANT [FLAG]
  local rc=0
  PATH="$BIN:$PATH" "$TRAINC" diff --live "$3" --kubeconfig "$4" --format json ${6:+"$6"} >"$TMP/$1-live-$2.json" \
    2>"$TMP/$1-live-$2.log" || rc=$?
  if [ "$rc" -ne "$5" ]; then
    echo "trainc diff --live ($2) exited $rc, expected $5"
    cat "$TMP/$1-live-$2.log"
    return 1
  fi
}

# apply.sh --diff: its answer to the question is ANSWER, typed at a terminal once it asks
# (tests/cluster/answer.py holds the terminal), or none when ANSWER is empty (stdin is then no
# terminal). Exits as apply.sh does (answer.py: 125 when it never asked).
apply_diff() {  # OUT KC LOG ANSWER
  local out=$1 kc=$2 log=$3 answer=$4 installed=()
  if grep -q -- '--addons-installed)' "$out/scripts/apply.sh"; then installed=(--addons-installed); fi
  local cmd=(env "PATH=$BIN:$STUB_BIN:$PATH" HEALTH_DELAY=2 "TRAINC=$TRAINC" timeout --foreground 420 bash "$out/scripts/apply.sh"
    --kubeconfig "$kc" ${installed[@]+"${installed[@]}"} --diff)
  if [ -z "$answer" ]; then
    "${cmd[@]}" </dev/null >"$log" 2>&1
  else
    python3 tests/cluster/answer.py --timeout 420 'apply these changes[?]' "$answer" -- "${cmd[@]}" </dev/null >"$log" 2>&1
  fi
}

# A kubeconfig for the cluster of KC as a ServiceAccount that may only read (get, list and watch on
# every resource): the CI plan job's planner. RBAC authorizes a dry run as the write it stands for,
# so diff --live with it is read-only.
planner_kubeconfig() {  # KC OUT
  local kc=$1 out=$2 token k=("$BIN/kubectl" --kubeconfig "$1")
  "${k[@]}" apply -f - >/dev/null <<'EOF' || return 1
apiVersion: v1
kind: ServiceAccount
metadata: {name: trainc-test-planner, namespace: default}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: trainc-test-planner}
rules:
  - {apiGroups: ["*"], resources: ["*"], verbs: [get, list, watch]}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: trainc-test-planner}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: trainc-test-planner}
subjects:
  - {kind: ServiceAccount, name: trainc-test-planner, namespace: default}
EOF
  token=$("${k[@]}" create token trainc-test-planner -n default --duration=2h) || return 1
  python3 -c '
import sys, yaml
kc = yaml.safe_load(open(sys.argv[1]))
for u in kc["users"]:
    u["user"] = {"token": sys.argv[3]}
yaml.safe_dump(kc, open(sys.argv[2], "w"))' "$kc" "$out" "$token"
}

# diff --live as the planner (read-only) beside the one live_diff just made: named WHAT-ro, exits
# WANT as well, and passes live.py's CHECK (with --read-only) on the same ARGS. FLAG: diff's
# --read-only, or "" to leave it to what RBAC refuses.
live_read_only() {  # NAME WHAT SPEC WANT FLAG CHECK [ARGS...]
  local name=$1 what=$2 spec=$3 want=$4 flag=$5 check=$6 problems
  shift 6
  live_diff "$name" "$what-ro" "$spec" "$TMP/$name-planner.kubeconfig" "$want" "$flag" || return 1
  problems=$(python3 tests/cluster/live.py --read-only "$check" "$TMP/$name-live-$what-ro.json" "$@") ||
    { echo "read-only (as the planner):"; printf '%s\n' "$problems"; return 1; }
}

# Before the system is applied: diff --live on the cluster without it says every object is made and
# every step runs; and against a cluster no one answers for, it says so, exits 2 and writes nothing.
live_before() {  # NAME SPEC OUT KC
  local name=$1 spec=$2 out=$3 kc=$4 steps problems empty
  steps=$(python3 -c 'import sys, yaml; print(",".join(s["name"] for s in yaml.safe_load(open(sys.argv[1]))["pipeline"]))' "$out/model.yaml")
  live_diff "$name" empty "$spec" "$kc" 1 || return 1
  problems=$(python3 tests/cluster/live.py empty "$TMP/$name-live-empty.json" "$steps") || { printf '%s\n' "$problems"; return 1; }
  # A kubeconfig whose server no one listens on (port 9 on loopback: discard, closed here).
  sed -E 's#server: .*#server: https://127.0.0.1:9#' "$kc" >"$TMP/$name-nowhere.kubeconfig"
  empty=$TMP/$name-empty-dir
  mkdir -p "$empty"
  local rc=0
  (cd "$empty" && PATH="$BIN:$PATH" "$TRAINC" diff --live "$OLDPWD/$spec" --kubeconfig "$TMP/$name-nowhere.kubeconfig" \
    >"$TMP/$name-nowhere.out" 2>"$TMP/$name-nowhere.err") || rc=$?
  if [ "$rc" -ne 2 ] || ! grep -q 'cannot reach the cluster' "$TMP/$name-nowhere.err" || [ -s "$TMP/$name-nowhere.out" ] ||
    [ -n "$(ls -A "$empty")" ]; then
    echo "diff --live against a cluster no one answers for: exit $rc (expected 2), stderr: $(cat "$TMP/$name-nowhere.err")"
    ls -A "$empty"
    return 1
  fi
}

# After the system is applied and its steps are done: diff --live says nothing would change and
# writes nothing (every object's resourceVersion stays); then three hand-made changes (a Deployment
# scaled, a ConfigMap's script edited, the last step's Job deleted) are its drift, and apply.sh puts
# them back, after which it says nothing again; a key added by hand is drift apply.sh leaves; then a
# Deployment made again by hand with another selector is refused by the server: exit 3. At each,
# diff --live as a planner that may only read (read-only: trainc's rules judge) says the same.
live_after() {  # NAME SPEC OUT KC NS
  local name=$1 spec=$2 out=$3 kc=$4 ns=$5 problems k=("$BIN/kubectl" --kubeconfig "$4")
  planner_kubeconfig "$kc" "$TMP/$name-planner.kubeconfig" || { echo "cannot make the planner's kubeconfig"; return 1; }
  python3 tests/cluster/live.py versions "$BIN/kubectl" "$kc" "$ns" >"$TMP/$name-versions-before" || return 1
  live_diff "$name" applied "$spec" "$kc" 0 || { python3 tests/cluster/live.py none "$TMP/$name-live-applied.json"; return 1; }
  problems=$(python3 tests/cluster/live.py none "$TMP/$name-live-applied.json") || { printf '%s\n' "$problems"; return 1; }
  live_read_only "$name" applied "$spec" 0 --read-only none || return 1
  python3 tests/cluster/live.py versions "$BIN/kubectl" "$kc" "$ns" >"$TMP/$name-versions-after" || return 1
  if ! diff "$TMP/$name-versions-before" "$TMP/$name-versions-after" >"$TMP/$name-versions.diff"; then
    echo "objects changed while diff --live ran (it must write nothing):"
    head -n 20 "$TMP/$name-versions.diff"
    return 1
  fi
  # apply.sh --diff with nothing to change: says so and applies nothing.
  apply_diff "$out" "$kc" "$TMP/$name-apply-diff-none.log" '' ||
    { echo "apply.sh --diff with nothing to change exited $?:"; tail -n 5 "$TMP/$name-apply-diff-none.log"; return 1; }
  grep -q 'nothing would change' "$TMP/$name-apply-diff-none.log" ||
    { echo "apply.sh --diff did not say nothing would change:"; tail -n 5 "$TMP/$name-apply-diff-none.log"; return 1; }
  local deploy cm job last
  deploy=$("${k[@]}" get deployments -n "$ns" -l app.kubernetes.io/managed-by=trainc -o name | head -n 1)
  cm=$("${k[@]}" get configmaps -n "$ns" -l trainc.dev/step -o name | head -n 1)
  last=$(python3 -c 'import sys, yaml; print(yaml.safe_load(open(sys.argv[1]))["pipeline"][-1]["name"])' "$out/model.yaml")
  job=$("${k[@]}" get jobs -n "$ns" -l "trainc.dev/step=$last" -o name | head -n 1)
  if [ -z "$deploy" ] || [ -z "$cm" ] || [ -z "$job" ]; then
    echo "drift needs a Deployment, a step's ConfigMap and a Job (found '$deploy' '$cm' '$job')"
    return 1
  fi
  "${k[@]}" scale -n "$ns" "$deploy" --replicas=2 >/dev/null &&
    "${k[@]}" patch -n "$ns" "$cm" --type=merge -p '{"data":{"entrypoint.sh":"echo edited by hand"}}' >/dev/null &&
    "${k[@]}" delete -n "$ns" "$job" --wait=true >/dev/null || return 1
  live_diff "$name" drift "$spec" "$kc" 1 || return 1
  problems=$(python3 tests/cluster/live.py drift "$TMP/$name-live-drift.json" "Deployment/${deploy#*/}" \
    "ConfigMap/${cm#*/}" "Job/${job#*/}") || { printf '%s\n' "$problems"; return 1; }
  live_read_only "$name" drift "$spec" 1 "" drift "Deployment/${deploy#*/}" "ConfigMap/${cm#*/}" "Job/${job#*/}" || return 1
  # apply.sh --diff shows the drift and asks: without a terminal it stops, applying nothing; at one,
  # "n" applies nothing; "y" applies.
  if apply_diff "$out" "$kc" "$TMP/$name-apply-diff-notty.log" ''; then
    echo "apply.sh --diff applied with no terminal to ask at"; return 1
  fi
  grep -q 'stdin is no terminal' "$TMP/$name-apply-diff-notty.log" ||
    { echo "apply.sh --diff without a terminal:"; tail -n 5 "$TMP/$name-apply-diff-notty.log"; return 1; }
  apply_diff "$out" "$kc" "$TMP/$name-apply-diff-no.log" n || { echo "apply.sh --diff answered n exited $?"; return 1; }
  grep -q 'nothing was applied' "$TMP/$name-apply-diff-no.log" ||
    { echo "apply.sh --diff answered n:"; tail -n 5 "$TMP/$name-apply-diff-no.log"; return 1; }
  live_diff "$name" drift-again "$spec" "$kc" 1 || return 1
  cmp -s <(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["drift"])' "$TMP/$name-live-drift.json") \
    <(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["drift"])' "$TMP/$name-live-drift-again.json") ||
    { echo "the drift changed though apply.sh --diff applied nothing"; return 1; }
  apply_diff "$out" "$kc" "$TMP/$name-apply-drift.log" y ||
    { echo "apply.sh --diff answered y exited $?:"; tail -n 20 "$TMP/$name-apply-drift.log"; return 1; }
  grep -q 'Deployment' "$TMP/$name-apply-drift.log" ||
    { echo "apply.sh --diff showed no diff before applying:"; head -n 20 "$TMP/$name-apply-drift.log"; return 1; }
  wait_steps "$kc" "$ns"
  "${k[@]}" rollout status -n "$ns" "$deploy" --timeout=120s >/dev/null || return 1
  live_diff "$name" put-back "$spec" "$kc" 0 || { python3 tests/cluster/live.py none "$TMP/$name-live-put-back.json"; return 1; }
  # A key the output does not have, added by hand: drift that applying leaves (kubectl's apply
  # removes only what it applied).
  "${k[@]}" patch -n "$ns" "$cm" --type=merge -p '{"data":{"added-by-hand":"yes"}}' >/dev/null || return 1
  live_diff "$name" left "$spec" "$kc" 1 || return 1
  problems=$(python3 tests/cluster/live.py left "$TMP/$name-live-left.json" "ConfigMap/${cm#*/}") ||
    { printf '%s\n' "$problems"; return 1; }
  live_read_only "$name" left "$spec" 1 "" left "ConfigMap/${cm#*/}" || return 1
  # The Deployment made again by hand, with the selector kubectl create gives it: immutable.
  "${k[@]}" delete -n "$ns" "$deploy" --wait=true >/dev/null &&
    "${k[@]}" create deployment -n "$ns" "${deploy#*/}" --image=registry.k8s.io/pause:3.10 >/dev/null || return 1
  live_diff "$name" refused "$spec" "$kc" 3 || return 1
  problems=$(python3 tests/cluster/live.py refused "$TMP/$name-live-refused.json" "Deployment/${deploy#*/}") ||
    { printf '%s\n' "$problems"; return 1; }
  live_read_only "$name" refused "$spec" 3 "" refused "Deployment/${deploy#*/}" || return 1
}

# Failures on the real controllers (tests/cluster/failures.py): the example running, its pods for an
# hour, then a pod ended with a chosen exit code or the DisruptionTarget condition (kwok's pod-fail
# stage), or its node deleted. EDIT (a sed expression, or empty) changes the spec first; each
# following argument is one failures.py check (its words after KUBECTL KUBECONFIG NAMESPACE, with
# NODES standing for the command that makes the deleted nodes again); between two, the step's run
# is deleted and the output applied again, which starts it anew.
failure_case() {  # NAME EDIT CHECK...
  local name=$1 edit=$2 spec dir out state kc rc=0 ns check
  shift 2
  spec=$(spec_of "$name")
  dir=$TMP/fail-$name-$(printf '%s\n' "$edit" "$@" | sha256sum | cut -c1-8)
  mkdir -p "$dir"
  cp -r "$(dirname "$spec")" "$dir/spec"
  spec=$dir/spec/$(basename "$spec")
  if [ -n "$edit" ]; then
    sed -i -E "$edit" "$spec"
    if cmp -s "$spec" "$(spec_of "$name")"; then echo "the edit '$edit' changed nothing"; return 1; fi
  fi
  "$TRAINC" compile "$spec" -o "$dir/out" >"$dir/compile.log" 2>&1 || { cat "$dir/compile.log"; return 1; }
  out=$dir/out/$(ls "$dir/out")
  "$TRAINC" plan "$spec" --format json >"$dir/plan.json" 2>/dev/null || { echo "trainc plan failed"; return 1; }
  local kueue=()
  if [ -f "$out/addons/kueue-manager-config.yaml" ]; then kueue=(--kueue-config "$out/addons/kueue-manager-config.yaml"); fi
  state=$dir/cluster
  local unready=()  # podsready_case: that step's pods never become Ready
  if [ -n "${unready_step:-}" ]; then unready=(--unready-step "$unready_step"); fi
  kc=$(bash tests/cluster/cluster.sh up --state "$state" --addons "$(addons_of "$out")" ${kueue[@]+"${kueue[@]}"} \
    --run-seconds "${run_seconds_case:-3600}" ${unready[@]+"${unready[@]}"} "$dir/plan.json" 2>"$dir/up.log" | tail -n 1)
  if [ ! -f "$kc" ]; then tail -n 20 "$dir/up.log"; bash tests/cluster/cluster.sh down --state "$state" 2>/dev/null; return 1; fi
  if [ -f "$out/scripts/up.sh" ]; then
    rm -rf "$STUB_STATE/cloud"
    mkdir -p "$STUB_STATE/cloud"
    PATH="$STUB_BIN:$PATH" bash "$out/scripts/up.sh" >"$dir/up-sh.log" 2>&1 || { echo "up.sh failed"; tail -n 20 "$dir/up-sh.log"; rc=1; }
  fi
  ns=$(namespace_of "$out")
  local first=1
  for check in "$@"; do
    [ "$rc" -eq 0 ] || break
    if [ "$first" = 0 ]; then  # the step's run deleted, and applied again: a new start
      local type
      for type in jobs.batch jobsets.jobset.x-k8s.io; do  # the latter only where JobSet is installed
        "$BIN/kubectl" --kubeconfig "$kc" delete "$type" -n "$ns" -l "trainc.dev/step,!jobset.sigs.k8s.io/jobset-name" \
          --cascade=foreground --wait=true >/dev/null 2>&1 || true
      done
    fi
    first=0
    apply_output "$out" "$kc" "$dir/apply.log" || { rc=1; break; }
    local words=()
    read -r -a words <<<"$check"
    local argv=() w
    for w in "${words[@]}"; do
      if [ "$w" = NODES ]; then argv+=(bash tests/cluster/cluster.sh nodes --state "$state" "$dir/plan.json"); else argv+=("$w"); fi
    done
    python3 tests/cluster/failures.py "${argv[0]}" "$BIN/kubectl" "$kc" "$ns" "$out/model.yaml" "${argv[@]:1}" >>"$dir/failures.log" 2>&1 ||
      { cat "$dir/failures.log"; rc=1; }
  done
  finish_case "fail-$name" "$state" "$rc" ""
}

# Kueue's waitForPodsReady on the real Kueue: a queued step's pods bound but never Ready; the steps
# before it run as usual (5 s).
podsready_case() {  # NAME EDIT STEP
  local unready_step=$3 run_seconds_case=5
  failure_case "$1" "$2" "podsready $3"
}

# Kueue's configuration changed on day 2, on the real Kueue: the example applied with its own
# (podsReadyTimeout at its default), then EDIT (a shorter one) compiled and applied over it.
# `trainc plan --against` names Kueue's ConfigMap and its controller's restart; apply.sh restarts
# it (its Deployment rolls; the harness starts the process again with the ConfigMap as it is then,
# as a new pod would read it: operators.sh); and the step STEP, whose pods never become Ready, run
# again after the apply, is evicted at the new timeout: the configuration Kueue runs is the new one.
kueue_restart_case() {  # NAME EDIT STEP
  local name=$1 edit=$2 step=$3 spec dir out state kc rc=0 ns problems
  spec=$(spec_of "$name")
  dir=$TMP/restart-$name
  rm -rf "$dir"
  mkdir -p "$dir"
  cp -r "$(dirname "$spec")" "$dir/spec"
  spec=$dir/spec/$(basename "$spec")
  "$TRAINC" compile "$spec" -o "$dir/out" >"$dir/compile.log" 2>&1 || { cat "$dir/compile.log"; return 1; }
  out=$dir/out/$(ls "$dir/out")
  cp -r "$out" "$dir/first"
  "$TRAINC" plan "$spec" --format json >"$dir/plan.json" 2>/dev/null || { echo "trainc plan failed"; return 1; }
  state=$dir/cluster
  kc=$(bash tests/cluster/cluster.sh up --state "$state" --addons "$(addons_of "$out")" \
    --kueue-config "$out/addons/kueue-manager-config.yaml" --run-seconds 5 --unready-step "$step" "$dir/plan.json" \
    2>"$dir/up.log" | tail -n 1)
  if [ ! -f "$kc" ]; then tail -n 20 "$dir/up.log"; bash tests/cluster/cluster.sh down --state "$state" 2>/dev/null; return 1; fi
  ns=$(namespace_of "$out")
  # apply.sh installs the addons itself here (no --addons-installed), so that it configures Kueue;
  # the release manifests it names by URL are the harness's (operators.sh made them from the same
  # release, webhooks at loopback): the internet, played, as the curl stand-in plays it elsewhere.
  mkdir -p "$dir/net"
  cat >"$dir/net/kubectl" <<EOF
#!/usr/bin/env bash
args=()
for a in "\$@"; do
  case "\$a" in
    https://github.com/kubernetes-sigs/kueue/releases/download/*/manifests.yaml) args+=("$state/operators/kueue.yaml") ;;
    https://github.com/kubernetes-sigs/jobset/releases/download/*/manifests.yaml) args+=("$state/operators/jobset.yaml") ;;
    *) args+=("\$a") ;;
  esac
done
exec "$BIN/kubectl" "\${args[@]}"
EOF
  chmod +x "$dir/net/kubectl"
  local apply=(env "PATH=$dir/net:$BIN:$STUB_BIN:$PATH" HEALTH_DELAY=2 timeout 420 bash "$out/scripts/apply.sh" --kubeconfig "$kc")
  stub_repin "$out"
  "${apply[@]}" >"$dir/apply-1.log" 2>&1 || { echo "the first apply failed:"; tail -n 20 "$dir/apply-1.log"; rc=1; }
  if [ "$rc" -eq 0 ]; then
    sed -i -E "$edit" "$spec"
    "$TRAINC" compile "$spec" -o "$dir/out" >"$dir/compile2.log" 2>&1 || { cat "$dir/compile2.log"; rc=1; }
  fi
  if [ "$rc" -eq 0 ]; then
    "$TRAINC" plan "$spec" --against "$dir/first" --format json >"$dir/against.json" 2>"$dir/against.log" ||
      { cat "$dir/against.log"; rc=1; }
    problems=$(python3 - "$dir/against.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))["against"]
got = {(o["kind"], o["namespace"], o["name"]): o["action"] for o in d["objects"] if o["action"] not in ("unchanged", "keep")}
want = {("ConfigMap", "kueue-system", "kueue-manager-config"): "update",
        ("Deployment", "kueue-system", "kueue-controller-manager"): "roll"}
for k, a in want.items():
    if got.get(k) != a:
        print(f"plan --against: {k[0]} {k[1]}/{k[2]} is {got.get(k, 'not named')}, expected {a}")
for k, a in got.items():
    if k not in want:
        print(f"plan --against: {k[0]} {k[1]}/{k[2]} {a}, though only Kueue's configuration changed")
if d["runs"]:
    print(f"plan --against: steps re-run ({[r['step'] for r in d['runs']]}), though only Kueue's configuration changed")
PY
    ) || rc=1
    if [ -n "$problems" ]; then printf '%s\n' "$problems"; rc=1; fi
  fi
  if [ "$rc" -eq 0 ]; then
    stub_repin "$out"
    "${apply[@]}" >"$dir/apply-2.log" 2>&1 || { echo "the day-2 apply failed:"; tail -n 20 "$dir/apply-2.log"; rc=1; }
    grep -q "its controller restarts" "$dir/apply-2.log" ||
      { echo "apply.sh did not say Kueue's controller restarts:"; grep -i kueue "$dir/apply-2.log" | tail -n 5; rc=1; }
    # The last restart the harness made ran the new configuration.
    tail -n 1 "$state/logs/kueue-pod.log" | grep -q "'timeout': '30s'" ||
      { echo "Kueue's controller was not restarted with the new configuration:"; tail -n 8 "$state/logs/kueue-pod.log"; rc=1; }
  fi
  if [ "$rc" -eq 0 ]; then  # the step's run deleted and applied again: admitted by the Kueue now running
    local type
    for type in jobs.batch jobsets.jobset.x-k8s.io; do
      "$BIN/kubectl" --kubeconfig "$kc" delete "$type" -n "$ns" -l "trainc.dev/step=$step,!jobset.sigs.k8s.io/jobset-name" \
        --cascade=foreground --wait=true >/dev/null 2>&1 || true
    done
    "${apply[@]}" >"$dir/apply-3.log" 2>&1 || { echo "applying again failed:"; tail -n 20 "$dir/apply-3.log"; rc=1; }
  fi
  if [ "$rc" -eq 0 ]; then
    python3 tests/cluster/failures.py podsready "$BIN/kubectl" "$kc" "$ns" "$out/model.yaml" "$step" >"$dir/failures.log" 2>&1 ||
      { cat "$dir/failures.log"; rc=1; }
  fi
  finish_case "restart-$name" "$state" "$rc" ""
}

# The day-2 corpus (tests/day2_corpus.py) on the real API server, its operators' webhooks with it:
# for each example, the first edits that change k8s/, their unedited objects applied for real (Kueue
# admits their runs), then the edited ones as a server-side dry run; the server must refuse nothing
# but step runs the update oracle refuses too.
corpus_case() {
  local state=$TMP/cluster-corpus kc plans=() name rc=0
  for name in "${examples[@]}"; do
    "$TRAINC" plan "$(spec_of "$name")" --format json >"$TMP/corpus-plan-$name.json" 2>/dev/null &&
      plans+=("$TMP/corpus-plan-$name.json")
  done
  kc=$(bash tests/cluster/cluster.sh up --state "$state" "${plans[@]}" 2>"$TMP/corpus-up.log" | tail -n 1)
  if [ ! -f "$kc" ]; then tail -n 20 "$TMP/corpus-up.log"; bash tests/cluster/cluster.sh down --state "$state" 2>/dev/null; return 1; fi
  python3 tests/day2_corpus.py "$TRAINC" --server "$BIN/kubectl" "$kc" --sample 5 >"$TMP/corpus.tap" 2>&1 || rc=1
  local judged
  judged=$(grep -c 'on the real API server$' "$TMP/corpus.tap" || true)
  echo "# $judged edits judged on the real API server"
  if [ "$judged" -eq 0 ]; then echo "no edit was judged on the server:"; tail -n 20 "$TMP/corpus.tap"; rc=1; fi
  grep -q '^ok 2 - the real API server refuses the planted' "$TMP/corpus.tap" ||
    { echo "the server's refusal of the planted change was not seen:"; sed -n '1,12p' "$TMP/corpus.tap"; rc=1; }
  if [ "$rc" -ne 0 ]; then grep -A4 '^not ok' "$TMP/corpus.tap" | grep -v 'TODO' | head -n 40; fi
  finish_case corpus "$state" "$rc" ""
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
  bash tests/cluster/cluster.sh down --state "$state" 2>/dev/null
  return "$rc"
}

# A capacity ladder on the real Kueue (tests/cluster/ladder/spec.yaml: a pool of three 2-node rungs,
# a reservation, queued provisioning and Spot; steps a, b, c of 2 nodes applied together, d after
# them; each runs 120 s, time for the three to be admitted one after another while the others run,
# as Kueue's blockAdmission has it). The queued rung starts with no nodes: tests/cluster/provisioner.py
# plays GKE's autoscaler, making a ProvisioningRequest's nodes and marking it Provisioned. tests/cluster/ladder.py then holds
# the cluster to `trainc plan`'s ladder: a, b and c one rung each, in Kueue's own order of the
# flavors trainc wrote; a ProvisioningRequest of GKE's class with the Job's parameters for the one
# on the queued rung, whose pods ran on the nodes made for it; d, once every rung is free, on the first.
ladder_case() {
  local dir=$TMP/ladder spec=tests/cluster/ladder/spec.yaml out state kc rc=0 ns problems prov
  rm -rf "$dir"
  mkdir -p "$dir"
  "$TRAINC" compile "$spec" -o "$dir/out" >"$dir/compile.log" 2>&1 || { cat "$dir/compile.log"; return 1; }
  out=$dir/out/$(ls "$dir/out")
  "$TRAINC" plan "$spec" --format json >"$dir/plan.json" 2>/dev/null || { echo "trainc plan failed"; return 1; }
  state=$dir/cluster
  kc=$(bash tests/cluster/cluster.sh up --state "$state" --addons "$(addons_of "$out")" \
    --kueue-config "$out/addons/kueue-manager-config.yaml" --run-seconds 120 --nodes h100-queued=0 "$dir/plan.json" \
    2>"$dir/up.log" | tail -n 1)
  if [ ! -f "$kc" ]; then tail -n 20 "$dir/up.log"; bash tests/cluster/cluster.sh down --state "$state" 2>/dev/null; return 1; fi
  : >"$dir/provisioned.jsonl"
  setsid python3 tests/cluster/provisioner.py "$BIN/kubectl" "$kc" h100-queued h100-spot "$dir/provisioned.jsonl" \
    2>"$dir/provisioner.log" &
  prov=$!
  ns=$(namespace_of "$out")
  apply_output "$out" "$kc" "$TMP/ladder-apply.log" || rc=1
  wait_steps "$kc" "$ns"
  problems=$(python3 tests/cluster/ladder.py "$BIN/kubectl" "$kc" "$ns" "$dir/plan.json" "$dir/provisioned.jsonl" \
    --first a,b,c --after d 2>&1) || rc=1
  if [ -n "$problems" ]; then printf '%s\n' "$problems"; tail -n 5 "$dir/provisioner.log"; rc=1; fi
  finish_case ladder "$state" "$rc" "$prov"
}

# Moving back up a ladder, as trainc plan says it happens: a running step keeps its rung, but one
# whose Spot nodes are taken back (deleted, as a preemption ends them) has no Ready pods again within
# waitForPodsReady's recoveryTimeout (podsReadyTimeout 30s here), so the real Kueue evicts it and
# admits it again on the first rung with room: the reservation, freed meanwhile (its step deleted).
ladder_back_case() {
  local dir=$TMP/ladder-back spec out state kc rc=0 ns prov i now=''
  rm -rf "$dir"
  mkdir -p "$dir"
  spec=$dir/spec.yaml
  sed -e 's/^queue: {name: team}$/queue: {name: team, podsReadyTimeout: 30s}/' -e '/^  - name: d$/,$d' \
    tests/cluster/ladder/spec.yaml >"$spec"
  "$TRAINC" compile "$spec" -o "$dir/out" >"$dir/compile.log" 2>&1 || { cat "$dir/compile.log"; return 1; }
  out=$dir/out/$(ls "$dir/out")
  "$TRAINC" plan "$spec" --format json >"$dir/plan.json" 2>/dev/null || { echo "trainc plan failed"; return 1; }
  state=$dir/cluster
  kc=$(bash tests/cluster/cluster.sh up --state "$state" --addons "$(addons_of "$out")" \
    --kueue-config "$out/addons/kueue-manager-config.yaml" --run-seconds 3600 --nodes h100-queued=0 "$dir/plan.json" \
    2>"$dir/up.log" | tail -n 1)
  if [ ! -f "$kc" ]; then tail -n 20 "$dir/up.log"; bash tests/cluster/cluster.sh down --state "$state" 2>/dev/null; return 1; fi
  : >"$dir/provisioned.jsonl"
  setsid python3 tests/cluster/provisioner.py "$BIN/kubectl" "$kc" h100-queued h100-spot "$dir/provisioned.jsonl" \
    2>"$dir/provisioner.log" &
  prov=$!
  ns=$(namespace_of "$out")
  apply_output "$out" "$kc" "$TMP/ladder-back-apply.log" || rc=1
  rungs() { python3 tests/cluster/ladder.py "$BIN/kubectl" "$kc" "$ns" "$dir/plan.json" "$dir/provisioned.jsonl" --first a --print; }
  for i in $(seq 90); do
    now=$(rungs 2>/dev/null)
    if [ "$(grep -c ' h100-' <<<"$now")" -eq 3 ]; then break; fi
    sleep 2
  done
  local on_reserved on_spot
  on_reserved=$(awk '$2 == "h100-reserved" { print $1 }' <<<"$now")
  on_spot=$(awk '$2 == "h100-spot" { print $1 }' <<<"$now")
  if [ -z "$on_reserved" ] || [ -z "$on_spot" ]; then echo "the three steps did not take one rung each: $now"; rc=1; fi
  if [ "$rc" -eq 0 ]; then
    "$BIN/kubectl" --kubeconfig "$kc" delete jobsets.jobset.x-k8s.io -n "$ns" -l "trainc.dev/step=$on_reserved" --wait=true >/dev/null
    "$BIN/kubectl" --kubeconfig "$kc" delete nodes -l cloud.google.com/gke-nodepool=h100-spot >/dev/null
    for i in $(seq 120); do
      now=$(rungs 2>/dev/null)
      if grep -qx "$on_spot h100-reserved" <<<"$now"; then break; fi
      sleep 2
    done
    grep -qx "$on_spot h100-reserved" <<<"$now" ||
      { echo "step $on_spot, its Spot nodes gone and the reservation free, is not admitted on the reservation: $now"; rc=1; }
  fi
  if [ "$rc" -eq 0 ]; then
    # Kueue evicted it for its pods (not Ready within recoveryTimeout) before it admitted it again.
    "$BIN/kubectl" --kubeconfig "$kc" get events -n "$ns" -o json | python3 -c '
import json, sys
reasons = {e.get("reason") for e in json.load(sys.stdin)["items"] if e["involvedObject"].get("kind") == "Workload"}
sys.exit(0 if "EvictedDueToPodsReadyTimeout" in reasons or "Evicted" in reasons else 1)' ||
      { echo "no eviction of step $on_spot's workload was recorded"; rc=1; }
  fi
  finish_case ladder-back "$state" "$rc" "$prov"
}

# Day 2: each example's edits, applied in turn over the running system once its first apply is
# judged (EXAMPLE|EDIT|WHAT); each is held to `trainc plan --against` and `trainc diff --live`.
day2_cases=(
  "kueue-gpu|s/--model=small]/--model=smaller]/|a step's arguments: that step runs again, nothing else"
  "kueue-gpu|s/prep[.]py/prep2.py/|the first step's command: it and the steps after it run again"
  "kueue-gpu|/- name: train-large/,\$d|a step removed: its Job is deleted, nothing runs"
  "xgb-triton|s/rounds: 300/rounds: 200/|training rounds: train runs again and the service it feeds rolls"
  "prep-and-train|s/steps: 20000/steps: 25000/|by its README's apply lines, a hyperparameter: only train runs again"
)
day2_edits() {  # EXAMPLE: its "EDIT|WHAT" lines
  local c
  for c in "${day2_cases[@]}"; do
    if [ "${c%%|*}" = "$1" ]; then printf '%s\n' "${c#*|}"; fi
  done
}

for name in "${examples[@]}"; do
  spec=$(spec_of "$name")
  "$TRAINC" compile "$spec" -o "$TMP/probe-$name" >/dev/null 2>&1 || true
  why=$(unsupported "$TMP/probe-$name/$(ls "$TMP/probe-$name" 2>/dev/null | head -n 1)" 2>/dev/null || true)
  if [ -n "$why" ]; then
    t_skip "examples/$name on the upstream control plane" "$why"
    continue
  fi
  edits=$(day2_edits "$name" | cut -d'|' -f2 | paste -sd';' - | sed 's/;/; /g')
  t "examples/$name on the upstream control plane: applied, admitted, bound where the plan says, run in order${edits:+; then day 2 as plan --against and diff --live say: $edits}" \
    cluster_case "$name"
done
# The error cases about placement that have the shape pending_case reads.
pending_cases=(nodes-exceed-pool)
if [ "$#" -eq 0 ]; then
  for c in "${pending_cases[@]}"; do
    t "tests/errors/$c on the upstream control plane: the pods trainc says find no room stay Pending" pending_case "$c"
  done
fi
if [ "$#" -eq 0 ]; then
  t "day 2 on the upstream control plane: examples/mnist, the same output applied again while its JobSet runs: nothing starts, nothing is deleted, its Jobs stay, as trainc plan --against and trainc diff --live say" \
    cluster_case mnist "" running
  # Failures on the real Job and JobSet controllers and the pod garbage collector.
  t "failures on the upstream control plane: examples/mnist's JobSet restarts whole, a preemption and a killed node spend no retry, exit 1 spends one until its retries are gone, a listed exit code fails it at once" \
    failure_case mnist "" "jobset train NODES" "jobset-fail train"
  t "failures on the upstream control plane: examples/mnist with a timeout: a restart makes new Jobs whose deadline starts again, and the deadline fails the JobSet" \
    failure_case mnist 's/^    nodes: 4$/    nodes: 4\n    timeout: 40s/' "deadline train jobset"
  t "failures on the upstream control plane: examples/customgpt's Job: a preemption and a killed node are not counted, exit 1 is until its retries are gone, a listed exit code fails it at once" \
    failure_case customgpt "" "job train NODES" "job-fail train"
  t "failures on the upstream control plane: examples/customgpt with a timeout: the Job's deadline spans its retries" \
    failure_case customgpt 's/^    retries: 2$/    retries: 2\n    timeout: 40s/' "deadline train job"
  t "failures on the upstream control plane: examples/kueue-gpu with podsReadyTimeout 30s: a step admitted whose pods never become Ready is evicted at the timeout, suspended and queued again" \
    podsready_case kueue-gpu 's/^queue: [{]name: team-a[}]$/queue: {name: team-a, podsReadyTimeout: 30s}/' train-small
  t "day 2 on the upstream control plane: the day-2 corpus's first edits of each example, their unedited objects applied and the edited ones dry-run applied: the server and its admission webhooks refuse nothing but what the update oracle refuses" \
    corpus_case
  t "day 2 on the upstream control plane: examples/kueue-gpu's podsReadyTimeout shortened to 30s over the running system: plan --against names Kueue's configuration and its controller's restart, apply.sh restarts it, and the real Kueue evicts at the new timeout" \
    kueue_restart_case kueue-gpu 's/^queue: [{]name: team-a[}]$/queue: {name: team-a, podsReadyTimeout: 30s}/' train-small
  t "a capacity ladder on the upstream control plane: three steps applied together take the reservation, the queued rung (Kueue's ProvisioningRequest, with the Job's parameters, answered by a stand-in for GKE's autoscaler) and Spot, one each in the ClusterQueue's order; the step after them the reservation again, as trainc plan says" \
    ladder_case
  t "a capacity ladder on the upstream control plane, moving back: a step whose Spot nodes are taken back is evicted at recoveryTimeout and admitted again on the reservation, freed meanwhile, as trainc plan says" \
    ladder_back_case
  t "trainc diff --live on the upstream control plane (examples/xgb-triton): an empty cluster, the system applied (read-only), drift by hand put back by apply.sh, a change the server refuses, a cluster no one answers for; each also as a planner that may only read (no dry run)" \
    cluster_case xgb-triton "" live
fi
tap_done
