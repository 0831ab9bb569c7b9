#!/usr/bin/env bash
# A Kubernetes control plane on loopback, made of the upstream programs a GKE cluster runs (built by
# tools/install-cluster.sh): etcd, kube-apiserver with TLS, service-account tokens, RBAC and the
# admission plugins below (Pod Security admission among them), kube-controller-manager and
# kube-scheduler; kwok for the nodes, which keeps them Ready and moves pods through their phases
# (the containers never run: no image is pulled); and the JobSet, Kueue and KubeRay controllers
# (tests/cluster/operators.sh) with their own CRDs and webhooks.
#
# Usage: cluster.sh up [--state DIR] [--no-operators] [--addons LIST] [--kueue-config FILE]
#                     [--nodes POOL=N]... [--run-seconds S] [--unready-step STEP] [PLAN.json...]
#          starts it (nodes for each `trainc plan --format json` given, tests/cluster/nodes.py) and
#          prints the kubeconfig's path on its last line; Kueue runs the configuration FILE
#          holds (trainc's addons/kueue-manager-config.yaml), else its release's; LIST: which of
#          jobset,kueue,kuberay,istio,metrics-adapter to install (default all); --nodes: N nodes of POOL, not its largest
#          size; --run-seconds: how long a Job's pods run before they succeed (default 5);
#          --unready-step: the pods of that step (label trainc.dev/step) are bound but never run
#        cluster.sh nodes [--state DIR] PLAN.json...   adds the nodes of more plans
#        cluster.sh down [--state DIR]                 stops it and removes its state
#        cluster.sh kubectl [--state DIR] ARGS...      the cluster's kubectl, with its kubeconfig
# State: --state DIR, else $TRAINC_CLUSTER_STATE, else out/cluster in the checkout. Logs are in
# DIR/logs. One cluster per state folder; `up` on a running one stops it first.
# TRAINC_CLUSTER_BIN=DIR takes the programs from DIR instead of tools/install-cluster.sh's set.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)

say() { echo "cluster: $*" >&2; }
die() { say "error: $*"; exit 1; }

cmd=${1:-}
[ -n "$cmd" ] || { sed -n '2,17s/^# \{0,1\}//p' "$0" >&2; exit 2; }
shift
state=${TRAINC_CLUSTER_STATE:-$root/out/cluster}
operators=1
kueue_config=''
addons=jobset,kueue,kuberay,istio,metrics-adapter
node_sizes=()
run_seconds=5
unready_step=''
args=()
while [ "$#" -gt 0 ]; do
  case "$1" in
    --state) state=$2; shift ;;
    --no-operators) operators=0 ;;
    --kueue-config) kueue_config=$2; shift ;;
    --addons) addons=$2; shift ;;
    --nodes) node_sizes+=(--nodes "$2"); shift ;;
    --run-seconds) run_seconds=$2; shift ;;
    --unready-step) unready_step=$2; shift ;;
    *) args+=("$1") ;;
  esac
  shift
done
set -- ${args[@]+"${args[@]}"}
mkdir -p "$state"
state=$(cd "$state" && pwd)
kubeconfig="$state/kubeconfig"

bin_dir() {
  if [ -n "${TRAINC_CLUSTER_BIN:-}" ]; then printf '%s\n' "$TRAINC_CLUSTER_BIN"; return; fi
  local prefix
  prefix=$(bash "$root/tools/install-cluster.sh" --prefix) || die "the control plane's programs could not be built (tools/install-cluster.sh)"
  printf '%s/bin\n' "$prefix"
}

free_port() {
  python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# Starts "$@" in the background as component $name, its output in logs/$name.log.
start() {
  local name=$1
  shift
  setsid "$@" >"$state/logs/$name.log" 2>&1 &
  echo "$!" >"$state/pids/$name"
}

stop_all() {
  local f pid
  [ -d "$state/pids" ] || return 0
  for f in "$state"/pids/*; do
    [ -f "$f" ] || continue
    pid=$(cat "$f")
    kill -- "-$pid" 2>/dev/null || kill "$pid" 2>/dev/null || true
  done
  for f in "$state"/pids/*; do
    [ -f "$f" ] || continue
    pid=$(cat "$f")
    for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -9 -- "-$pid" 2>/dev/null || kill -9 "$pid" 2>/dev/null || true
    rm -f "$f"
  done
}

# Waits until "$@" succeeds, at most $1 seconds; says which component's log to read if not.
wait_until() {
  local secs=$1 what=$2 log=$3
  shift 3
  local deadline=$((SECONDS + secs))
  until "$@" >/dev/null 2>&1; do
    if [ "$SECONDS" -ge "$deadline" ]; then
      say "$what did not come up in $secs s; the end of $log:"
      tail -n 30 "$log" >&2 || true
      return 1
    fi
    sleep 0.3
  done
}

# The CA, the API server's serving certificate, client certificates and the service-account keys.
make_pki() {
  local pki=$state/pki
  mkdir -p "$pki"
  openssl req -x509 -newkey rsa:2048 -nodes -days 30 -subj /CN=trainc-test-ca \
    -keyout "$pki/ca.key" -out "$pki/ca.crt" 2>/dev/null
  openssl req -newkey rsa:2048 -nodes -subj /CN=kube-apiserver -keyout "$pki/apiserver.key" -out "$pki/apiserver.csr" 2>/dev/null
  printf 'subjectAltName=IP:127.0.0.1,IP:10.96.0.1,DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local\nextendedKeyUsage=serverAuth\n' >"$pki/apiserver.ext"
  openssl x509 -req -in "$pki/apiserver.csr" -CA "$pki/ca.crt" -CAkey "$pki/ca.key" -CAcreateserial -days 30 \
    -extfile "$pki/apiserver.ext" -out "$pki/apiserver.crt" 2>/dev/null
  local who subj
  for who in admin:/O=system:masters/CN=kubernetes-admin \
             controller-manager:/CN=system:kube-controller-manager \
             scheduler:/CN=system:kube-scheduler \
             kwok:/O=system:masters/CN=kwok; do
    subj=${who#*:}
    who=${who%%:*}
    openssl req -newkey rsa:2048 -nodes -subj "$subj" -keyout "$pki/$who.key" -out "$pki/$who.csr" 2>/dev/null
    printf 'extendedKeyUsage=clientAuth\n' >"$pki/client.ext"
    openssl x509 -req -in "$pki/$who.csr" -CA "$pki/ca.crt" -CAkey "$pki/ca.key" -CAcreateserial -days 30 \
      -extfile "$pki/client.ext" -out "$pki/$who.crt" 2>/dev/null
  done
  openssl genrsa -out "$pki/sa.key" 2048 2>/dev/null
  openssl rsa -in "$pki/sa.key" -pubout -out "$pki/sa.pub" 2>/dev/null
}

write_kubeconfig() {  # FILE WHO PORT
  cat >"$1" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: trainc-test
  cluster:
    server: https://127.0.0.1:$3
    certificate-authority: $state/pki/ca.crt
users:
- name: $2
  user:
    client-certificate: $state/pki/$2.crt
    client-key: $state/pki/$2.key
contexts:
- name: trainc-test
  context: {cluster: trainc-test, user: $2}
current-context: trainc-test
EOF
}

up() {
  local bin
  bin=$(bin_dir)
  stop_all
  rm -rf "$state"/{etcd,logs,pids,pki,kubeconfig*,nodes,operators,kwok-stages.yaml}
  mkdir -p "$state/logs" "$state/pids"
  local t0=$SECONDS
  make_pki
  local etcd_port peer_port api_port
  etcd_port=$(free_port); peer_port=$(free_port); api_port=$(free_port)
  echo "$api_port" >"$state/api-port"
  start etcd "$bin/etcd" --name trainc-test --data-dir "$state/etcd" --unsafe-no-fsync \
    --listen-client-urls "http://127.0.0.1:$etcd_port" --advertise-client-urls "http://127.0.0.1:$etcd_port" \
    --listen-peer-urls "http://127.0.0.1:$peer_port" --initial-advertise-peer-urls "http://127.0.0.1:$peer_port" \
    --initial-cluster "trainc-test=http://127.0.0.1:$peer_port" --log-level warn
  # GKE's admission plugins are not published as a list: these are upstream's defaults (Pod
  # Security among them) with ExtendedResourceToleration, which GKE enables so that a pod asking
  # for nvidia.com/gpu tolerates the GPU nodes' taint, and NodeRestriction.
  start kube-apiserver "$bin/kube-apiserver" \
    --etcd-servers "http://127.0.0.1:$etcd_port" \
    --bind-address 127.0.0.1 --advertise-address 127.0.0.1 --secure-port "$api_port" \
    --cert-dir "$state/pki" --tls-cert-file "$state/pki/apiserver.crt" --tls-private-key-file "$state/pki/apiserver.key" \
    --client-ca-file "$state/pki/ca.crt" \
    --service-account-issuer https://kubernetes.default.svc.cluster.local \
    --service-account-key-file "$state/pki/sa.pub" --service-account-signing-key-file "$state/pki/sa.key" \
    --api-audiences https://kubernetes.default.svc.cluster.local \
    --service-cluster-ip-range 10.96.0.0/16 \
    --authorization-mode Node,RBAC \
    --enable-admission-plugins NodeRestriction,ExtendedResourceToleration \
    --allow-privileged=true \
    --profiling=false --v=1
  write_kubeconfig "$kubeconfig" admin "$api_port"
  local k=("$bin/kubectl" --kubeconfig "$kubeconfig")
  wait_until 60 kube-apiserver "$state/logs/kube-apiserver.log" "${k[@]}" get --raw /readyz || die "the API server did not start"
  write_kubeconfig "$state/kubeconfig-controller-manager" controller-manager "$api_port"
  write_kubeconfig "$state/kubeconfig-scheduler" scheduler "$api_port"
  write_kubeconfig "$state/kubeconfig-kwok" kwok "$api_port"
  start kube-controller-manager "$bin/kube-controller-manager" \
    --kubeconfig "$state/kubeconfig-controller-manager" \
    --authentication-kubeconfig "$state/kubeconfig-controller-manager" \
    --authorization-kubeconfig "$state/kubeconfig-controller-manager" \
    --bind-address 127.0.0.1 --secure-port 0 \
    --leader-elect=false --use-service-account-credentials \
    --service-account-private-key-file "$state/pki/sa.key" --root-ca-file "$state/pki/ca.crt" \
    --cluster-signing-cert-file "$state/pki/ca.crt" --cluster-signing-key-file "$state/pki/ca.key" \
    --controllers '*,-nodeipam,-cloud-node-lifecycle,-service-lb-controller,-node-route-controller' \
    --v=1
  start kube-scheduler "$bin/kube-scheduler" \
    --kubeconfig "$state/kubeconfig-scheduler" \
    --authentication-kubeconfig "$state/kubeconfig-scheduler" \
    --authorization-kubeconfig "$state/kubeconfig-scheduler" \
    --bind-address 127.0.0.1 --secure-port 0 --leader-elect=false --v=1
  # kwok's own "fast" stages: nodes Ready with a lease heartbeat; pods Running and Ready once bound;
  # a Job's pods Succeeded (exit 0) --run-seconds (default 5) later (the annotation
  # pod-complete.stage.kwok.x-k8s.io/delay on a pod changes that), so that a step's pods all run at
  # once, as real ones would, before any ends and frees its node; a pod annotated
  # test.trainc.dev/hold-ready is not made Ready (operators.sh: Kueue's, until its process serves).
  # And one of ours, pod-fail: a
  # running pod annotated test.trainc.dev/exit-code=N ends Failed, its containers terminated with
  # exit code N, with the DisruptionTarget condition too when also annotated
  # test.trainc.dev/disruption (as preemption and eviction add it): tests/cluster/failures.py.
  "$bin/kubectl" kustomize "$bin/../config/kwok/stage/fast" | python3 -c '
import sys, yaml
docs = [d for d in yaml.safe_load_all(sys.stdin) if d]
exit_code = ".metadata.annotations[\"test.trainc.dev/exit-code\"]"
for d in docs:
    if d["metadata"]["name"] == "pod-complete":
        d["spec"]["delay"] = {"durationMilliseconds": int(sys.argv[1]) * 1000, "durationFrom": {
            "expressionFrom": ".metadata.annotations[\"pod-complete.stage.kwok.x-k8s.io/delay\"]"}}
        d["spec"]["selector"]["matchExpressions"].append({"key": exit_code, "operator": "DoesNotExist"})
    if d["metadata"]["name"] == "pod-ready":
        d["spec"]["selector"]["matchExpressions"].append(
            {"key": ".metadata.annotations[\"test.trainc.dev/hold-ready\"]", "operator": "DoesNotExist"})
    if d["metadata"]["name"] == "pod-ready" and sys.argv[2]:
        d["spec"]["selector"]["matchExpressions"].append(
            {"key": ".metadata.labels[\"trainc.dev/step\"]", "operator": "NotIn", "values": [sys.argv[2]]})
docs.append({"apiVersion": "kwok.x-k8s.io/v1alpha1", "kind": "Stage", "metadata": {"name": "pod-fail"}, "spec": {
    "resourceRef": {"apiGroup": "v1", "kind": "Pod"},
    "selector": {"matchExpressions": [
        {"key": ".metadata.deletionTimestamp", "operator": "DoesNotExist"},
        {"key": ".status.phase", "operator": "In", "values": ["Running"]},
        {"key": exit_code, "operator": "Exists"}]},
    "next": {"statusTemplate": """{{ $now := Now }}
{{ $code := index .metadata.annotations "test.trainc.dev/exit-code" }}
containerStatuses:
{{ range $index, $item := .spec.containers }}
- image: {{ $item.image | Quote }}
  name: {{ $item.name | Quote }}
  ready: false
  restartCount: 0
  started: false
  state:
    terminated:
      exitCode: {{ $code }}
      finishedAt: {{ $now | Quote }}
      reason: Error
      startedAt: {{ $now | Quote }}
{{ end }}
{{ if index .metadata.annotations "test.trainc.dev/disruption" }}
conditions:
- type: DisruptionTarget
  status: "True"
  reason: PreemptionByScheduler
  message: "preempted (tests/cluster/failures.py)"
  lastTransitionTime: {{ $now | Quote }}
{{ end }}
phase: Failed
"""}}})
yaml.safe_dump_all(docs, sys.stdout)' "$run_seconds" "$unready_step" >"$state/kwok-stages.yaml"
  # Pod addresses: inside the network namespace of tests/cluster/netns.sh (TRAINC_CLUSTER_NETNS=1)
  # from the benchmarking range it routes to its own loopback, so Services get endpoints and the
  # API server's service proxy reaches tests/cluster/responder.py; outside it loopback ones, which
  # reach nothing beyond this machine but which the EndpointSlice controller refuses ("may not be
  # in the loopback range"), so Services get no endpoints. Node addresses are loopback ones.
  local pod_cidr=127.10.0.1/16
  if [ "${TRAINC_CLUSTER_NETNS:-}" = 1 ]; then pod_cidr=198.18.0.1/16; fi
  start kwok "$bin/kwok" --kubeconfig "$state/kubeconfig-kwok" --config "$state/kwok-stages.yaml" \
    --manage-all-nodes=false --manage-nodes-with-annotation-selector=kwok.x-k8s.io/node=fake \
    --node-lease-duration-seconds=40 --cidr="$pod_cidr" --node-ip=127.0.0.2 \
    --server-address= --v=0
  # The namespace-default service account appears when the controller manager runs.
  wait_until 60 kube-controller-manager "$state/logs/kube-controller-manager.log" \
    "${k[@]}" get serviceaccount default -n default || die "the controller manager did not start"
  # Google Cloud's load balancer controller, and Service names for the operators (network.py),
  # where the addresses they give reach only this namespace's loopback.
  if [ "${TRAINC_CLUSTER_NETNS:-}" = 1 ]; then
    echo "127.0.0.1 localhost" >"$state/hosts"
    start network python3 "$here/network.py" "$bin/kubectl" "$kubeconfig" "$state/hosts"
  fi
  # The CRDs GKE itself installs: multi-networking's Network and GKENetworkParamSet (RDMA pools) and
  # Managed Prometheus's PodMonitoring, as trainc's schemas/crds has them from their sources.
  local crd
  for crd in networking.gke.io_networks networking.gke.io_gkenetworkparamsets monitoring.googleapis.com_podmonitorings; do
    gzip -dc "$root/schemas/crds/$crd.yaml.gz" | "${k[@]}" apply --server-side -f - >/dev/null || die "GKE's CRD $crd was refused"
  done
  # And the cluster autoscaler's ProvisioningRequest, which Kueue looks for once, when it starts.
  "${k[@]}" apply --server-side -f "$bin/../config/autoscaler/autoscaling.x-k8s.io_provisioningrequests.yaml" >/dev/null ||
    die "the ProvisioningRequest CRD was refused"
  say "control plane up in $((SECONDS - t0)) s"
  if [ "$operators" = 1 ]; then
    bash "$here/operators.sh" "$state" "$bin" "$kueue_config" "$addons" || die "the operators did not start (logs in $state/logs)"
  fi
  if [ "$#" -gt 0 ]; then add_nodes "$@"; fi
  say "up in $((SECONDS - t0)) s; kubectl --kubeconfig $kubeconfig"
  echo "$kubeconfig"
}

add_nodes() {
  local bin
  bin=$(bin_dir)
  mkdir -p "$state/nodes"
  local plan n=0
  for plan in "$@"; do
    n=$((n + 1))
    python3 "$here/nodes.py" "$plan" ${node_sizes[@]+"${node_sizes[@]}"} >"$state/nodes/$n-$(basename "$plan" .json).yaml" ||
      die "nodes.py refused $plan"
    "$bin/kubectl" --kubeconfig "$kubeconfig" apply --server-side --force-conflicts \
      -f "$state/nodes/$n-$(basename "$plan" .json).yaml" >/dev/null || die "the nodes of $plan were refused"
  done
  wait_until 60 "the nodes" "$state/logs/kwok.log" nodes_ready "$bin" || die "the nodes did not become Ready"
}

nodes_ready() {
  local not
  not=$("$1/kubectl" --kubeconfig "$kubeconfig" get nodes --no-headers | awk '$2 != "Ready"' | wc -l)
  [ "$not" -eq 0 ]
}

case "$cmd" in
  up) up "$@" ;;
  nodes) add_nodes "$@" ;;
  down)
    stop_all
    rm -rf "$state"
    say "stopped; $state removed"
    ;;
  kubectl) exec "$(bin_dir)/kubectl" --kubeconfig "$kubeconfig" "$@" ;;
  *) die "unknown command '$cmd' (up, nodes, down, kubectl)" ;;
esac
