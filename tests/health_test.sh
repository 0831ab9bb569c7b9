#!/usr/bin/env bash
# The generated health check (scripts/health.sh) against stand-ins for kubectl and curl: it
# passes when the server answers ready, tries again while it does not, and fails with a message
# naming the check when it never does; without an external IP on the gateway it says so.
# Usage: tests/health_test.sh TRAINC
set -uo pipefail
# shellcheck source=tests/tap.sh
. "$(dirname "${BASH_SOURCE[0]}")/tap.sh"
tap_init "$@"
rc=0  # exit code of the last run() (tests/tap.sh)

# Stand-ins on PATH. kubectl prints $FAKE_IP for the gateway query (nothing when it is empty) and
# answers `get --raw` like curl; curl fails until it has been called $FAKE_READY_AFTER times
# (0 = never succeeds), and once it succeeds prints $FAKE_BODY unless told to discard the answer
# (-o). Every call is logged to $FAKE_LOG.
BIN="$TMP/bin"
mkdir -p "$BIN"
cat >"$BIN/curl" <<'SH'
#!/usr/bin/env bash
echo "curl $*" >>"$FAKE_LOG"
n=$(($(cat "$FAKE_COUNT" 2>/dev/null || echo 0) + 1))
echo "$n" >"$FAKE_COUNT"
if [ "$FAKE_READY_AFTER" -gt 0 ] && [ "$n" -ge "$FAKE_READY_AFTER" ]; then
  case " $* " in *" -o "*) ;; *) printf '%s' "${FAKE_BODY:-}" ;; esac
  exit 0
fi
echo "curl: (22) The requested URL returned error: 503" >&2
exit 22
SH
cat >"$BIN/kubectl" <<'SH'
#!/usr/bin/env bash
echo "kubectl $*" >>"$FAKE_LOG"
case " $* " in
  *" get service "*) printf '%s' "$FAKE_IP" ;;
  *" get --raw "*) exec curl "${@: -1}" ;;
  *) echo "unexpected kubectl call: $*" >&2; exit 3 ;;
esac
SH
# gcloud answers `storage ls` of an object: found, unless $FAKE_EMPTY says the store is empty.
cat >"$BIN/gcloud" <<'SH'
#!/usr/bin/env bash
echo "gcloud $*" >>"$FAKE_LOG"
case "$1 $2" in
  "storage ls")
    if [ -n "${FAKE_EMPTY:-}" ]; then echo "ERROR: (gcloud.storage.ls) One or more URLs matched no objects." >&2; exit 1; fi
    echo "$3"; exit 0 ;;
esac
echo "unexpected gcloud call: $*" >&2
exit 3
SH
chmod +x "$BIN/curl" "$BIN/kubectl" "$BIN/gcloud"

compile() {  # $1 spec, $2 output folder
  "$TRAINC" compile "$1" -o "$2" >/dev/null 2>"$TMP/compile.err" || { cat "$TMP/compile.err"; return 1; }
}

# Runs the health check of output folder $1 with the stand-ins.
health() {
  : >"$TMP/log"
  rm -f "$TMP/count"
  run env PATH="$BIN:$PATH" FAKE_LOG="$TMP/log" FAKE_COUNT="$TMP/count" HEALTH_ATTEMPTS=4 HEALTH_DELAY=0 \
    KUBE_CONTEXT=test "$1/scripts/health.sh"
}

show() {
  echo "exit $rc; stderr:"
  cat "$TMP/stderr"
  echo "calls:"
  cat "$TMP/log"
}

OUT="$TMP/out"
compile examples/triton-tpu/spec.jsonnet "$OUT" || exit 1
GW="$OUT/triton-tpu"

check_ready_at_once() {
  FAKE_IP=203.0.113.7 FAKE_READY_AFTER=1 health "$GW"
  [ "$rc" -eq 0 ] || { show; return 1; }
  grep -q "curl .*http://203.0.113.7/v2/health/ready" "$TMP/log" || { show; echo "the server's readiness was not asked"; return 1; }
  grep -q "curl .*http://203.0.113.7/v2/models/densenet_onnx/ready" "$TMP/log" ||
    { show; echo "the model named in the spec was not asked"; return 1; }
  grep -q "every service serves" "$TMP/stderr" || { show; return 1; }
}
export FAKE_IP FAKE_READY_AFTER FAKE_BODY FAKE_EMPTY
t "gateway: ready at once passes, asking the server and each model" check_ready_at_once

check_retries() {
  FAKE_IP=203.0.113.7 FAKE_READY_AFTER=3 health "$GW"
  [ "$rc" -eq 0 ] || { show; return 1; }
  local tries
  tries=$(grep -c "not yet (attempt" "$TMP/stderr")
  [ "$tries" -eq 2 ] || { show; echo "expected 2 retries before ready, saw $tries"; return 1; }
}
t "gateway: not ready twice, then ready: passes after retrying" check_retries

check_never() {
  FAKE_IP=203.0.113.7 FAKE_READY_AFTER=0 health "$GW"
  [ "$rc" -eq 1 ] || { show; echo "expected exit 1"; return 1; }
  grep -q "error: service 'triton' is not ready at http://203.0.113.7/v2/health/ready after 4 tries; see: kubectl logs -n triton-tpu deployment/triton-tpu-triton" "$TMP/stderr" ||
    { show; echo "the failure does not say which check failed and where to look"; return 1; }
  [ "$(grep -c '^curl' "$TMP/log")" -eq 4 ] || { show; echo "expected exactly HEALTH_ATTEMPTS=4 tries"; return 1; }
}
t "gateway: never ready fails after HEALTH_ATTEMPTS tries, naming the check" check_never

check_no_ip() {
  FAKE_IP="" FAKE_READY_AFTER=1 health "$GW"
  [ "$rc" -eq 1 ] || { show; echo "expected exit 1"; return 1; }
  grep -q "error: the Istio ingress gateway (service istio-ingress/istio-ingressgateway) got no external IP in 4 tries" "$TMP/stderr" ||
    { show; return 1; }
  if grep -q '^curl' "$TMP/log"; then show; echo "curl ran without an address"; return 1; fi
}
t "gateway: no external IP fails with the gateway named, before any request" check_no_ip

check_dry_run() {
  : >"$TMP/log"
  run env PATH="$BIN:$PATH" FAKE_LOG="$TMP/log" KUBE_CONTEXT=test "$GW/scripts/health.sh" --dry-run
  [ "$rc" -eq 0 ] || { show; return 1; }
  if [ -s "$TMP/log" ]; then show; echo "--dry-run ran commands"; return 1; fi
  grep -q "curl -fsS -o /dev/null --max-time 5 http://GATEWAY_IP/v2/health/ready" "$TMP/stderr" || { show; return 1; }
}
t "--dry-run prints the requests and runs nothing" check_dry_run

# The repository is read when Triton starts: a model missing from it fails at once, before the
# gateway is asked for its address or the server for anything, saying how the repository is filled.
check_empty_repository() {
  FAKE_EMPTY=1 FAKE_IP=203.0.113.7 FAKE_READY_AFTER=1 health "$GW"
  [ "$rc" -eq 1 ] || { show; echo "expected exit 1"; return 1; }
  grep -q "error: model 'densenet_onnx' of service 'triton' is not in gs://jk-triton-repository (no densenet_onnx/config.pbtxt), though scripts/apply.sh uploads it from the folder 'models' beside the spec (services.triton.triton.source)" "$TMP/stderr" ||
    { show; echo "the failure does not name the missing model and where it comes from"; return 1; }
  grep -q "^gcloud storage ls gs://jk-triton-repository/densenet_onnx/config.pbtxt$" "$TMP/log" || { show; return 1; }
  if grep -qE '^(curl|kubectl)' "$TMP/log"; then show; echo "asked the server although its model is missing"; return 1; fi
  if grep -q "not yet (attempt" "$TMP/stderr"; then show; echo "retried instead of failing at once"; return 1; fi
}
t "gateway: a model missing from the repository fails at once, naming it and its source" check_empty_repository

# A service without a gateway is asked through the API server's service proxy.
cat >"$TMP/internal.yaml" <<'YAML'
apiVersion: trainc/v1
kind: TrainingSystem
name: serve
gcp: {project: my-proj, region: us-central1, zone: us-central1-a}
cluster:
  pools:
    gpu: {machine: g2-standard-8}
storage:
  models: {gcs: {bucket: my-models}}
services:
  llm:
    pool: gpu
    triton: {repository: "models:/repo", models: [ensemble]}
YAML
compile "$TMP/internal.yaml" "$TMP/internal" || exit 1

check_internal() {
  FAKE_READY_AFTER=2 health "$TMP/internal/serve"
  [ "$rc" -eq 0 ] || { show; return 1; }
  grep -q "kubectl --context test get --raw /api/v1/namespaces/serve/services/serve-llm:http/proxy/v2/health/ready" "$TMP/log" ||
    { show; echo "the server was not asked through the service proxy"; return 1; }
  grep -q "/api/v1/namespaces/serve/services/serve-llm:http/proxy/v2/models/ensemble/ready" "$TMP/log" || { show; return 1; }
  if grep -q "get service" "$TMP/log"; then show; echo "an internal service looked for a gateway"; return 1; fi
}
t "internal: asked through the API server's service proxy, retried until ready" check_internal

check_internal_never() {
  FAKE_READY_AFTER=0 health "$TMP/internal/serve"
  [ "$rc" -eq 1 ] || { show; return 1; }
  grep -q "error: service 'llm' is not ready at /api/v1/namespaces/serve/services/serve-llm:http/proxy/v2/health/ready after 4 tries" "$TMP/stderr" ||
    { show; return 1; }
}
t "internal: never ready fails naming the service" check_internal_never

# Without `source` nothing fills the repository: the message says how to.
check_internal_empty() {
  FAKE_EMPTY=1 FAKE_READY_AFTER=1 health "$TMP/internal/serve"
  [ "$rc" -eq 1 ] || { show; return 1; }
  grep -q "error: model 'ensemble' of service 'llm' is not in gs://my-models/repo (no ensemble/config.pbtxt): the store folder is empty or incomplete, and nothing fills it" "$TMP/stderr" ||
    { show; return 1; }
  grep -q "services.llm.triton.source (a folder beside the spec, or gs://...), which scripts/apply.sh uploads, or upload them yourself: gcloud storage rsync --recursive --ignore-symlinks FOLDER gs://my-models/repo$" "$TMP/stderr" ||
    { show; echo "the failure does not say how to fill the repository"; return 1; }
  if grep -q '^kubectl' "$TMP/log"; then show; echo "asked the server although its model is missing"; return 1; fi
}
t "internal: an empty repository without a source fails at once, saying how to fill it" check_internal_empty

# vLLM (examples/vllm-l4): /health, then /v1/models, which must list the served model's name.
compile examples/vllm-l4/spec.yaml "$OUT" || exit 1
VL="$OUT/vllm-l4"
MODELS='{"object":"list","data":[{"id":"qwen2.5-0.5b-instruct","object":"model","owned_by":"vllm"}]}'

check_vllm_ready() {
  FAKE_IP=203.0.113.7 FAKE_READY_AFTER=1 FAKE_BODY="$MODELS" health "$VL"
  [ "$rc" -eq 0 ] || { show; return 1; }
  grep -q "curl -fsS -o /dev/null --max-time 5 http://203.0.113.7/health" "$TMP/log" ||
    { show; echo "vLLM's /health was not asked"; return 1; }
  grep -q "curl -fsS --max-time 5 http://203.0.113.7/v1/models" "$TMP/log" ||
    { show; echo "/v1/models was not asked"; return 1; }
  grep -q "model 'qwen2.5-0.5b-instruct' of service 'chat': ready" "$TMP/stderr" || { show; return 1; }
}
t "vllm: /health and /v1/models listing the served model pass" check_vllm_ready

check_vllm_other_model() {
  FAKE_IP=203.0.113.7 FAKE_READY_AFTER=1 FAKE_BODY='{"object":"list","data":[{"id":"qwen2.5-7b-instruct"}]}' health "$VL"
  [ "$rc" -eq 1 ] || { show; echo "expected exit 1 when the served model is not listed"; return 1; }
  grep -q "error: model 'qwen2.5-0.5b-instruct' of service 'chat' is not listed at http://203.0.113.7/v1/models after 4 tries" "$TMP/stderr" ||
    { show; echo "the failure does not name the model that is missing"; return 1; }
}
t "vllm: /v1/models without the served model fails, naming it" check_vllm_other_model

check_vllm_spaced_json() {
  FAKE_IP=203.0.113.7 FAKE_READY_AFTER=1 FAKE_BODY='{"data": [{"id": "qwen2.5-0.5b-instruct"}]}' health "$VL"
  [ "$rc" -eq 0 ] || { show; echo "a listing with spaces after ':' should pass"; return 1; }
}
t "vllm: a listing written with spaces passes too" check_vllm_spaced_json

# Weights streamed from GCS, not exposed: asked through the API server's service proxy.
cat >"$TMP/vllm-internal.yaml" <<'YAML'
apiVersion: trainc/v1
kind: TrainingSystem
name: chat
gcp: {project: my-proj, region: us-central1, zone: us-central1-a}
cluster:
  pools:
    l4: {machine: g2-standard-8}
storage:
  models: {gcs: {bucket: my-models}}
services:
  llm:
    pool: l4
    vllm: {weights: "models:/qwen2.5-0.5b-instruct"}
YAML
compile "$TMP/vllm-internal.yaml" "$TMP/vllm-internal" || exit 1

check_vllm_internal() {
  FAKE_READY_AFTER=2 FAKE_BODY="$MODELS" health "$TMP/vllm-internal/chat"
  [ "$rc" -eq 0 ] || { show; return 1; }
  grep -q "kubectl --context test get --raw /api/v1/namespaces/chat/services/chat-llm:http/proxy/health" "$TMP/log" ||
    { show; echo "/health was not asked through the service proxy"; return 1; }
  grep -q "kubectl --context test get --raw /api/v1/namespaces/chat/services/chat-llm:http/proxy/v1/models" "$TMP/log" ||
    { show; echo "/v1/models was not asked through the service proxy"; return 1; }
}
t "vllm internal: /health and /v1/models through the service proxy, the weights' folder naming the model" check_vllm_internal

check_vllm_dry_run() {
  : >"$TMP/log"
  run env PATH="$BIN:$PATH" FAKE_LOG="$TMP/log" KUBE_CONTEXT=test "$VL/scripts/health.sh" --dry-run
  [ "$rc" -eq 0 ] || { show; return 1; }
  if [ -s "$TMP/log" ]; then show; echo "--dry-run ran commands"; return 1; fi
  grep -q "listed qwen2.5-0.5b-instruct curl -fsS --max-time 5 http://GATEWAY_IP/v1/models" "$TMP/stderr" || { show; return 1; }
}
t "vllm: --dry-run prints the model-list request and runs nothing" check_vllm_dry_run

# ---- apply.sh fills the repository before the health check (tests/stubs.sh's fake cloud) --------
# shellcheck source=tests/stubs.sh
. tests/stubs.sh
SANDBOX="$TMP/sandbox"

# Runs scripts/$2 of output folder $1 with the stand-ins first on PATH.
stubbed() {
  local dir=$1 script=$2
  shift 2
  mkdir -p "$SANDBOX/tmp"
  run env PATH="$STUB_BIN:$PATH" TMPDIR="$SANDBOX/tmp" HEALTH_ATTEMPTS=2 HEALTH_DELAY=0 \
    bash "$dir/scripts/$script" "$@"
}

show_stubbed() {
  echo "exit $rc; stderr:"
  tail -n 20 "$TMP/stderr"
  echo "calls:"
  stub_log | tail -n 20
}

# The line of the stand-ins' log where $1 (an extended regex) first matches; 0 when none does.
first_call() { grep -nE -m1 "$1" "$STUB_STATE/log" | cut -d: -f1 || true; }

E2E="$TMP/e2e"
compile "$(primary_spec examples/triton-tpu)" "$E2E" || exit 1

# From an empty fake project: up.sh, then apply.sh. Every model the health check asks Triton for
# is in the repository (its config.pbtxt from models/, its model.onnx fetched) before the
# Deployment is applied, and so before health.sh asks.
check_apply_uploads() {
  rm -rf "$TMP/stubs" "$SANDBOX"
  stubs_install "$TMP/stubs"
  # A copy as deep as the compiled folder: apply.sh reads the spec at the place the compile recorded
  # relative to the output folder (never searched for), so a copy at that depth finds it too.
  local moved="$TMP/repinned/triton-tpu"
  mkdir -p "$(dirname "$moved")"
  cp -R "$E2E/triton-tpu" "$moved"
  stub_repin "$moved"
  stubbed "$moved" up.sh
  [ "$rc" -eq 0 ] || { show_stubbed; echo "up.sh failed"; return 1; }
  stub_user_images "$moved" >/dev/null  # the TPU steps' image is the user's to push
  stub_reset_calls
  stubbed "$moved" apply.sh --services-only
  [ "$rc" -eq 0 ] || { show_stubbed; echo "apply.sh failed"; return 1; }
  local models m objects="$STUB_STATE/cloud/objects/jk-triton-repository"
  models=$(sed -n 's|.*/v2/models/\([^/]*\)/ready.*|\1|p' "$moved/scripts/health.sh" | sort -u)
  [ -n "$models" ] || { echo "health.sh asks for no model"; return 1; }
  for m in $models; do
    grep -q "^curl .*/v2/models/$m/ready" "$STUB_STATE/log" || { show_stubbed; echo "health.sh did not ask for $m"; return 1; }
    cmp -s "$objects/$m/config.pbtxt" "examples/triton-tpu/models/$m/config.pbtxt" ||
      { echo "$m/config.pbtxt was not uploaded from examples/triton-tpu/models"; ls -R "$STUB_STATE/cloud"; return 1; }
    [ "$(cat "$objects/$m/1/model.onnx")" = "stub download" ] || { echo "$m/1/model.onnx was not fetched and uploaded"; return 1; }
  done
  local upload deploy asked
  upload=$(first_call "^gcloud storage rsync --recursive .*/examples/triton-tpu/models gs://jk-triton-repository$")
  deploy=$(first_call "^kubectl .* apply .*service-triton-deployment.yaml")
  asked=$(first_call "^curl .*/v2/models/")
  [ -n "$upload" ] && [ -n "$deploy" ] && [ -n "$asked" ] || { show_stubbed; echo "no upload, deployment or model check"; return 1; }
  [ "$upload" -lt "$deploy" ] && [ "$deploy" -lt "$asked" ] ||
    { show_stubbed; echo "the repository was filled at line $upload of the log, the Deployment applied at $deploy, the model asked at $asked"; return 1; }
  # Again: the upload adds and replaces, and apply.sh stays idempotent.
  stubbed "$moved" apply.sh --services-only
  [ "$rc" -eq 0 ] || { show_stubbed; echo "the second apply.sh failed"; return 1; }
}
t "apply.sh uploads every model the health check asks for before the server is deployed" check_apply_uploads

# A pool placed by topology: apply.sh reads its nodes' GKE topology labels before applying anything,
# and stops, naming the node, when one lacks them (Kueue would leave every step there waiting).
TAS="$TMP/tas"
compile "$(primary_spec examples/gpt-a4-tas)" "$TAS" || exit 1
check_topology_labels() {
  rm -rf "$TMP/stubs" "$SANDBOX"
  stubs_install "$TMP/stubs"
  stubbed "$TAS/gpt-a4-tas" up.sh
  [ "$rc" -eq 0 ] || { show_stubbed; echo "up.sh failed"; return 1; }
  stub_user_images "$TAS/gpt-a4-tas" >/dev/null
  stub_reset_calls
  STUB_NODES='gke-a4-1|b1|s1|h1\ngke-a4-2|||\n' stubbed "$TAS/gpt-a4-tas" apply.sh
  [ "$rc" -eq 1 ] || { show_stubbed; echo "expected exit 1 on a node without topology labels"; return 1; }
  grep -q "error: node(s) gke-a4-2 of pool a4 lack GKE's topology labels (cloud.google.com/gce-topology-block" "$TMP/stderr" ||
    { show_stubbed; echo "the failure does not name the node"; return 1; }
  if grep -qE "^kubectl .* apply " "$STUB_STATE/log"; then show_stubbed; echo "applied before the labels were checked"; return 1; fi
  stub_reset_calls
  STUB_NODES='gke-a4-1|b1|s1|h1\ngke-a4-2|b1|s2|h7\n' stubbed "$TAS/gpt-a4-tas" apply.sh
  [ "$rc" -eq 0 ] || { show_stubbed; echo "apply.sh failed with every node labelled"; return 1; }
  grep -q "^kubectl .* apply .*topology.yaml" "$STUB_STATE/log" || { show_stubbed; echo "the Topology was not applied"; return 1; }
}
t "apply.sh stops before applying anything when a node of a pool placed by topology lacks GKE's labels" check_topology_labels

# The compiled pin, against the stand-in's download: the SHA-256 differs, and apply.sh stops
# before anything is uploaded or the server deployed.
check_pin_mismatch() {
  rm -rf "$TMP/stubs" "$SANDBOX"
  stubs_install "$TMP/stubs"
  stubbed "$E2E/triton-tpu" up.sh
  [ "$rc" -eq 0 ] || { show_stubbed; return 1; }
  stub_user_images "$E2E/triton-tpu" >/dev/null
  stub_reset_calls
  stubbed "$E2E/triton-tpu" apply.sh
  [ "$rc" -eq 1 ] || { show_stubbed; echo "expected exit 1"; return 1; }
  grep -q "error: https://github.com/onnx/models/raw/.*/densenet-7.onnx is not the file services.triton.triton.source.fetch pins (SHA-256 79c3bc0974696a2ea9efd2f7bca19fdd630834bd0086f1b4a1c3db3dce3b2a51); nothing was uploaded" "$TMP/stderr" ||
    { show_stubbed; echo "the failure does not name the download and its pin"; return 1; }
  if grep -qE "^gcloud storage rsync|service-triton-deployment" "$STUB_STATE/log"; then
    show_stubbed; echo "uploaded or deployed after a SHA-256 mismatch"; return 1
  fi
  [ ! -e "$STUB_STATE/cloud/objects" ] || { echo "the repository holds objects:"; ls -R "$STUB_STATE/cloud/objects"; return 1; }
}
t "a download whose SHA-256 is not the pinned one stops apply.sh before any upload" check_pin_mismatch

# Without a source, apply.sh looks for each model before it deploys the server, and stops at once.
check_apply_without_source() {
  rm -rf "$TMP/stubs" "$SANDBOX"
  stubs_install "$TMP/stubs"
  stubbed "$TMP/internal/serve" up.sh
  [ "$rc" -eq 0 ] || { show_stubbed; return 1; }
  stub_reset_calls
  stubbed "$TMP/internal/serve" apply.sh
  [ "$rc" -eq 1 ] || { show_stubbed; echo "expected exit 1"; return 1; }
  grep -q "apply.sh: error: model 'ensemble' of service 'llm' is not in gs://my-models/repo (no ensemble/config.pbtxt)" "$TMP/stderr" ||
    { show_stubbed; return 1; }
  if grep -q "service-llm-deployment" "$STUB_STATE/log"; then show_stubbed; echo "deployed without the model"; return 1; fi
  # Filled by hand, as the message says, apply.sh goes on.
  mkdir -p "$TMP/repo/ensemble"
  echo 'name: "ensemble"' >"$TMP/repo/ensemble/config.pbtxt"
  env PATH="$STUB_BIN:$PATH" gcloud storage rsync --recursive "$TMP/repo" gs://my-models/repo
  stubbed "$TMP/internal/serve" apply.sh
  [ "$rc" -eq 0 ] || { show_stubbed; echo "apply.sh failed with the repository filled"; return 1; }
}
t "apply.sh without a source stops before deploying a server whose model is missing" check_apply_without_source

tap_done
