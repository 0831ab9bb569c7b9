#!/usr/bin/env bash
# The operators trainc's output uses, on the test cluster as a cluster's administrators install
# them (apply.sh --addons-installed then checks them and installs none): JobSet and Kueue from their
# own release manifests (`kubectl kustomize config/default` of their modules, tests/cluster/
# manifests.py pointing their webhooks at loopback), KubeRay's CRDs and the Deployment its Helm
# chart makes. Each controller runs as a process (a pod's containers never run here) under a loop
# that restarts it when it exits, as a kubelet restarts a crashing container; its Deployment's pod
# runs on a kwok node and takes its room there.
#
# Usage: operators.sh STATE BIN KUEUE_CONFIG ADDONS
#   KUEUE_CONFIG: a ConfigMap file holding Kueue's configuration (trainc's
#   addons/kueue-manager-config.yaml), applied, and run by the controller; "" for the release's.
#   ADDONS: which to install, comma-separated, of jobset, kueue, kuberay, istio and
#   metrics-adapter (a cluster has only those its systems use: each controller's pod takes room on
#   a node).
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
state=$1 bin=$2 kueue_config=${3:-} addons=,${4-jobset,kueue,kuberay,istio,metrics-adapter},
wants() { [[ $addons == *",$1,"* ]]; }
prefix=$(cd "$bin/.." && pwd)
cfg=$prefix/config
kc=$state/kubeconfig
k() { "$bin/kubectl" --kubeconfig "$kc" "$@"; }
say() { echo "operators: $*" >&2; }
free_port() {
  python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}
mkdir -p "$state/operators"

# A serving certificate for 127.0.0.1, signed by the cluster's CA, where controller-runtime looks
# for it ($TMPDIR/k8s-webhook-server/serving-certs) unless the configuration names a folder.
webhook_cert() {  # DIR
  local d=$1/k8s-webhook-server/serving-certs
  mkdir -p "$d"
  openssl req -newkey rsa:2048 -nodes -subj /CN=127.0.0.1 -keyout "$d/tls.key" -out "$d/tls.csr" 2>/dev/null
  printf 'subjectAltName=IP:127.0.0.1\nextendedKeyUsage=serverAuth\n' >"$d/tls.ext"
  openssl x509 -req -in "$d/tls.csr" -CA "$state/pki/ca.crt" -CAkey "$state/pki/ca.key" -CAcreateserial -days 30 \
    -extfile "$d/tls.ext" -out "$d/tls.crt" 2>/dev/null
}

# Runs "$@" as operator $name, restarted a second after it exits; its own process group, which
# cluster.sh down ends.
supervise() {
  local name=$1
  shift
  setsid bash -c 'while :; do "$@"; echo "--- exited $?; restarting"; sleep 1; done' supervise "$@" \
    >"$state/logs/$name.log" 2>&1 &
  echo "$!" >"$state/pids/$name"
}

release() {  # NAME PORT [HOLD]: the release manifests of config/NAME/default with webhooks on PORT, applied
  "$bin/kubectl" kustomize "$cfg/$1/default" | python3 "$here/manifests.py" "$2" "$state/pki/ca.crt" ${3:+"$3"} \
    >"$state/operators/$1.yaml"
  k apply --server-side --force-conflicts -f "$state/operators/$1.yaml" >/dev/null
}

# Waits for a controller's webhook server to answer TLS on PORT.
wait_port() {  # NAME PORT
  local _
  for _ in $(seq 120); do
    if curl -sk --max-time 1 -o /dev/null "https://127.0.0.1:$2/"; then return 0; fi
    sleep 0.5
  done
  say "$1's webhook server did not answer on 127.0.0.1:$2; the end of its log:"
  tail -n 8 "$state/logs/$1.log" | cut -c1-600 >&2
  return 1
}

t0=$SECONDS
# ---- JobSet ---------------------------------------------------------------------------------
if wants jobset; then
jport=$(free_port)
mkdir -p "$state/operators/jobset-tmp"
webhook_cert "$state/operators/jobset-tmp"
release jobset "$jport"
python3 - "$cfg/jobset/components/manager/controller_manager_config.yaml" "$jport" "$(free_port)" \
  >"$state/operators/jobset-config.yaml" <<'PY'
import sys, yaml
c = yaml.safe_load(open(sys.argv[1]))
c["leaderElection"] = {"leaderElect": False}
c["internalCertManagement"] = {"enable": False}
c["webhook"] = {"port": int(sys.argv[2]), "host": "127.0.0.1"}
c["health"] = {"healthProbeBindAddress": "127.0.0.1:" + sys.argv[3]}
c["metrics"] = {"bindAddress": "0"}
yaml.safe_dump(c, sys.stdout)
PY
TMPDIR="$state/operators/jobset-tmp" KUBECONFIG=$kc supervise jobset \
  "$bin/jobset" --config "$state/operators/jobset-config.yaml" --kubeconfig "$kc" --zap-log-level=info
wait_port jobset "$jport"
fi

# ---- Kueue ----------------------------------------------------------------------------------
if wants kueue; then
qport=$(free_port)
mkdir -p "$state/operators/kueue-tmp"
webhook_cert "$state/operators/kueue-tmp"
release kueue "$qport" kueue-controller-manager
if [ -n "$kueue_config" ]; then
  k apply --server-side --force-conflicts -f "$kueue_config" >/dev/null
fi
qhealth=$(free_port)
# The configuration the controller runs: the ConfigMap's, with the serving addresses of a process.
kueue_config() {
k get configmap kueue-manager-config -n kueue-system -o 'jsonpath={.data.controller_manager_config\.yaml}' |
  python3 -c '
import sys, yaml
c = yaml.safe_load(sys.stdin)
c["leaderElection"] = {"leaderElect": False}
c["internalCertManagement"] = {"enable": False}
c["webhook"] = {"port": int(sys.argv[1]), "host": "127.0.0.1", "certDir": sys.argv[3]}
c["health"] = {"healthProbeBindAddress": "127.0.0.1:" + sys.argv[2]}
c["metrics"] = {"bindAddress": "0"}
yaml.safe_dump(c, sys.stdout)' "$qport" "$qhealth" "$state/operators/kueue-tmp/k8s-webhook-server/serving-certs" \
  >"$state/operators/kueue-config.yaml.new" && mv "$state/operators/kueue-config.yaml.new" "$state/operators/kueue-config.yaml"
}
kueue_config
# Without its internal certificate management (whose certificate names only the webhook Service,
# which the API server cannot reach here), Kueue reads its metrics server's certificate from the
# fixed folder /etc/kueue/metrics/certs, as its pod mounts it: the process sees /etc with that
# folder added (an overlay in a mount namespace of its own; the machine's /etc is not changed).
# Its visibility API (pending workloads, served through the aggregator, which cannot reach it here
# either, so manifests.py leaves its APIService out) is turned off.
overlay=$state/operators/kueue-etc
mkdir -p "$overlay/upper/kueue/metrics/certs" "$overlay/work"
cp "$state/operators/kueue-tmp/k8s-webhook-server/serving-certs/tls."{crt,key} "$overlay/upper/kueue/metrics/certs/"
TMPDIR="$state/operators/kueue-tmp" KUBECONFIG=$kc supervise kueue \
  unshare -m --propagation private sh -c 'mount -t overlay overlay -o "lowerdir=/etc,upperdir=$0/upper,workdir=$0/work" /etc && exec "$@"' \
  "$overlay" "$bin/kueue" --config "$state/operators/kueue-config.yaml" --kubeconfig "$kc" --zap-log-level=info \
  --feature-gates=VisibilityOnDemand=false
wait_port kueue "$qport"
# Kueue's pod, played: its Deployment's pods are held un-Ready (manifests.py) until the process
# serves for them. A pod of another template (apply.sh marking the configuration it runs, or a
# rollout restart) is a new container reading the ConfigMap as it is then: the process is started
# again with it, and the pod made Ready once its webhooks answer, as its readiness probe would.
kueue_pods() {
  local serving='' pod hash
  while sleep 1; do
    while read -r pod hash; do
      [ -n "$pod" ] || continue
      if [ -n "$serving" ] && [ "$hash" != "$serving" ]; then
        kueue_config
        pkill -f "^$bin/kueue --config $state/operators/kueue-config.yaml" || true
        sleep 2
        wait_port kueue "$qport" || continue
        echo "pod $pod (template $hash): Kueue restarted with the configuration its ConfigMap holds now: $(python3 -c '
import sys, yaml
print("waitForPodsReady", yaml.safe_load(open(sys.argv[1])).get("waitForPodsReady"))' "$state/operators/kueue-config.yaml")"
      fi
      serving=$hash
      k annotate pod -n kueue-system "$pod" test.trainc.dev/hold-ready- >/dev/null || continue
    done < <(k get pods -n kueue-system -o json | python3 -c '
import json, sys
for p in json.load(sys.stdin)["items"]:
    m = p["metadata"]
    if "test.trainc.dev/hold-ready" in (m.get("annotations") or {}) and not m.get("deletionTimestamp"):
        print(m["name"], m.get("labels", {}).get("pod-template-hash", ""))')
  done
}
bin=$bin kc=$kc state=$state qport=$qport qhealth=$qhealth \
  setsid bash -c "$(declare -f k say wait_port kueue_config kueue_pods); kueue_pods" >"$state/logs/kueue-pod.log" 2>&1 &
echo "$!" >"$state/pids/kueue-pod"
fi

# ---- KubeRay --------------------------------------------------------------------------------
if wants kuberay; then
k apply --server-side --force-conflicts -f "$cfg/kuberay/crd/bases" >/dev/null
k create namespace kuberay-system --dry-run=client -o yaml | k apply -f - >/dev/null
# What its Helm chart (which apply.sh installs) makes that takes room: one Deployment whose one
# container's limits, 100m and 512Mi, are also its requests (stdlib/catalog.yaml systemPods).
k apply -f - >/dev/null <<'EOF'
apiVersion: apps/v1
kind: Deployment
metadata:
  name: kuberay-operator
  namespace: kuberay-system
  labels: {app.kubernetes.io/name: kuberay-operator}
spec:
  replicas: 1
  selector:
    matchLabels: {app.kubernetes.io/name: kuberay-operator}
  template:
    metadata:
      labels: {app.kubernetes.io/name: kuberay-operator}
    spec:
      containers:
      - name: kuberay-operator
        image: quay.io/kuberay/operator:v1.6.0
        resources:
          limits: {cpu: 100m, memory: 512Mi}
EOF
# It asks a Ray head's dashboard at the head Service's name: where network.py names Services (in
# the network namespace), its process sees that list as /etc/hosts (a mount namespace of its own).
ray=("$bin/ray-operator" --metrics-addr=0 --health-probe-bind-address="127.0.0.1:$(free_port)" --enable-leader-election=false)
if [ -f "$state/hosts" ]; then
  KUBECONFIG=$kc supervise kuberay \
    unshare -m --propagation private sh -c 'mount --bind "$0" /etc/hosts && exec "$@"' "$state/hosts" "${ray[@]}"
else
  KUBECONFIG=$kc supervise kuberay "${ray[@]}"
fi
fi
# ---- Istio ----------------------------------------------------------------------------------
# The objects Istio's installer renders from its charts (install-cluster.sh: config/istio), with
# the sidecar injector's and the validation webhooks' calls sent to istiod, which runs as a process
# with a serving certificate for 127.0.0.1 signed by the cluster's CA (it writes that CA into the
# webhook configurations itself, as it does on a cluster). Its injector reads its templates when it
# starts, so the CRDs and ConfigMaps come first; the Deployments' pods (istiod's, which takes its
# room, and the ingress gateway's, which the injector gives its proxy) are made once it serves.
if wants istio; then
iport=$(free_port)
idir=$state/operators/istio
mkdir -p "$idir/run"
webhook_cert "$idir"
python3 "$here/manifests.py" "$iport" "$state/pki/ca.crt" <"$cfg/istio/istio.yaml" >"$state/operators/istio.yaml"
for ns in istio-system istio-ingress; do
  k create namespace "$ns" --dry-run=client -o yaml | k apply -f - >/dev/null
done
python3 -c '
import sys, yaml
docs = [d for d in yaml.safe_load_all(open(sys.argv[1])) if d]
first = [d for d in docs if d["kind"] in ("CustomResourceDefinition", "ConfigMap")]
yaml.safe_dump_all(first, open(sys.argv[2], "w"))
yaml.safe_dump_all([d for d in docs if d["kind"] not in ("CustomResourceDefinition", "ConfigMap")], open(sys.argv[3], "w"))' \
  "$state/operators/istio.yaml" "$idir/first.yaml" "$idir/rest.yaml"
k apply --server-side --force-conflicts -f "$idir/first.yaml" >/dev/null
k wait --for=condition=established crd --all --timeout=60s >/dev/null
certs=$idir/k8s-webhook-server/serving-certs
(cd "$idir/run" && POD_NAMESPACE=istio-system POD_NAME=istiod-local REVISION=default CLUSTER_ID=Kubernetes \
  supervise istio "$bin/pilot-discovery" discovery --kubeconfig "$kc" --domain cluster.local \
    --httpAddr "127.0.0.1:$(free_port)" --grpcAddr "127.0.0.1:$(free_port)" --secureGRPCAddr "127.0.0.1:$(free_port)" \
    --monitoringAddr "127.0.0.1:$(free_port)" --httpsAddr "127.0.0.1:$iport" --ctrlz_port "$(free_port)" \
    --tlsCertFile "$certs/tls.crt" --tlsKeyFile "$certs/tls.key" --caCertFile "$state/pki/ca.crt" \
    --keepaliveMaxServerConnectionAge 30m)
wait_port istio "$iport"
k apply --server-side --force-conflicts -f "$idir/rest.yaml" >/dev/null
fi

# ---- The Custom Metrics Stackdriver Adapter ----------------------------------------------------
# Not built: its module is not on the Go module proxy. What stands in is its Deployment as its
# release manifest makes it (stdlib/catalog.yaml systemPods' row: one container, 250m and 200Mi,
# the GPU and TPU taints tolerated), whose pod takes its room on a node; the custom and external
# metrics APIs it would serve are not served, so the autoscalers here find no metrics (their
# objects are still judged by the API server).
if wants metrics-adapter; then
k create namespace custom-metrics --dry-run=client -o yaml | k apply -f - >/dev/null
k apply -f - >/dev/null <<'EOF'
apiVersion: apps/v1
kind: Deployment
metadata:
  name: custom-metrics-stackdriver-adapter
  namespace: custom-metrics
  labels: {run: custom-metrics-stackdriver-adapter, k8s-app: custom-metrics-stackdriver-adapter}
spec:
  replicas: 1
  selector:
    matchLabels: {run: custom-metrics-stackdriver-adapter, k8s-app: custom-metrics-stackdriver-adapter}
  template:
    metadata:
      labels: {run: custom-metrics-stackdriver-adapter, k8s-app: custom-metrics-stackdriver-adapter}
    spec:
      tolerations:
      - {key: nvidia.com/gpu, operator: Equal, value: present, effect: NoSchedule}
      - {key: cloud.google.com/gke-tpu, operator: Equal, value: present, effect: NoSchedule}
      containers:
      - name: pod-custom-metrics-stackdriver-adapter
        image: gcr.io/gke-release/custom-metrics-stackdriver-adapter:v0.16.9-gke.0
        resources:
          limits: {cpu: 250m, memory: 200Mi}
          requests: {cpu: 250m, memory: 200Mi}
EOF
fi
list=${addons#,}
list=${list%,}
say "add-ons ${list:-(none)} started in $((SECONDS - t0)) s"
