#!/usr/bin/env bash
# Train, then serve, under `trainc run --local` (TAP), on the real Triton Inference Server (NVIDIA's
# build in the nvidia-pytriton wheel, which tools/install-python.sh installs): tests/serve's spec
# trains an XGBoost model into a Triton repository's version folder; the service starts after the
# step, and Triton loads the step's model.ubj (its Python backend's model.py reads it) and answers
# an inference request with the model's predictions, checked against XGBoost's own. Without --serve
# the run checks the model ready and stops it; a FIL model (examples/xgb-triton), whose backend the
# local Triton does not have, is named and not served. Skipped, saying why, without Triton or the
# project's Python. Usage: tests/run_local_serve_test.sh TRAINRT TRAINC
set -uo pipefail
if [ "$#" -lt 2 ]; then echo "usage: $0 TRAINRT TRAINC" >&2; exit 2; fi
case "$1" in /*) TRAINRT=$1 ;; */*) TRAINRT=$PWD/$1 ;; *) TRAINRT=$(command -v "$1" || printf '%s' "$1") ;; esac
# shellcheck source=tests/tap.sh
. "$(dirname "${BASH_SOURCE[0]}")/tap.sh"
tap_init "$2"
export OMP_WAIT_POLICY=PASSIVE
HOME_PY=${TRAINC_PYTHON_HOME:-${XDG_CACHE_HOME:-$HOME/.cache}/trainc/python}
PY=$HOME_PY/current/bin/python3
TRITON=${TRAINC_TRITON:-$HOME_PY/triton}

checked_once() {
  run "$TRAINC" run tests/serve/spec.yaml --local --workdir "$TMP/once" --threads 1 --trainrt "$TRAINRT"
  [ "$rc" -eq 0 ] || { echo "exit $rc"; tail -n 30 "$TMP/stdout" "$TMP/stderr"; return 1; }
  # The service comes after the step it needs, and its model is the one the step wrote.
  awk '/^\[2\/2\] train done/ { trained = NR } /^\[service\] scorer/ { served = NR }
       END { exit !(trained && served > trained) }' "$TMP/stdout" || { echo "the service did not start after train:"; cat "$TMP/stdout"; return 1; }
  { [ -s "$TMP/once/stores/models/repo/scorer/1/model.ubj" ] && [ -s "$TMP/once/stores/models/repo/scorer/1/model.py" ]; } ||
    { echo "the repository lacks the step's model.ubj or the spec folder's model.py:"; find "$TMP/once/stores/models/repo"; return 1; }
  grep -q "^service 'scorer' (triton): model(s) scorer ready at http://127.0.0.1:[0-9]*" "$TMP/stdout" ||
    { echo "Triton did not report the model ready:"; tail -n 20 "$TMP/stdout" "$TMP/stderr"; return 1; }
  grep -q "^services stopped: they were ready" "$TMP/stdout" || { echo "the run did not stop the service"; return 1; }
}

# --serve: the run stays up; an inference request gets the model's predictions, the same as
# XGBoost's own for the same rows; an interrupt stops the service and ends the run with 0.
served_predictions() {
  "$TRAINC" run tests/serve/spec.yaml --local --serve --workdir "$TMP/serve" --threads 1 --trainrt "$TRAINRT" \
    >"$TMP/serve.out" 2>"$TMP/serve.err" &
  local pid=$! port="" i
  for ((i = 0; i < 600; i++)); do
    port=$(sed -n "s|^service 'scorer' (triton): model(s) scorer ready at http://127.0.0.1:\([0-9]*\) .*|\1|p" "$TMP/serve.out")
    [ -n "$port" ] && grep -q '^serving until interrupted' "$TMP/serve.out" && break
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.5
  done
  [ -n "$port" ] || { kill -INT "$pid" 2>/dev/null; wait "$pid"; echo "no service came up:"; tail -n 20 "$TMP/serve.out" "$TMP/serve.err"; return 1; }
  "$PY" - "$port" "$TMP/serve/stores/models/repo/scorer/1/model.ubj" <<'PY' || { kill -INT "$pid"; wait "$pid"; return 1; }
import json, sys, urllib.request
import numpy as np, xgboost as xgb
port, model = sys.argv[1], sys.argv[2]
rows = np.random.default_rng(7).normal(size=(5, 8)).astype(np.float32)
body = json.dumps({"inputs": [{"name": "input__0", "shape": list(rows.shape), "datatype": "FP32",
                               "data": rows.flatten().tolist()}]}).encode()
req = urllib.request.Request(f"http://127.0.0.1:{port}/v2/models/scorer/infer", data=body,
                             headers={"Content-Type": "application/json"})
got = np.array(json.load(urllib.request.urlopen(req, timeout=30))["outputs"][0]["data"], dtype=np.float32)
want = xgb.Booster(model_file=model).inplace_predict(rows).astype(np.float32)
if got.shape != want.shape or not np.allclose(got, want, atol=1e-6) or not ((got > 0) & (got < 1)).all():
    print(f"Triton answered {got}, XGBoost predicts {want}")
    sys.exit(1)
PY
  kill -INT "$pid"
  wait "$pid"
  local rc=$?
  [ "$rc" -eq 0 ] || { echo "the interrupted run exited $rc"; tail -n 10 "$TMP/serve.out" "$TMP/serve.err"; return 1; }
  grep -q '^services stopped$' "$TMP/serve.out" || { echo "the run did not say it stopped the services"; return 1; }
}

# examples/xgb-triton's model runs on the FIL backend, which NVIDIA's nvidia-pytriton build lacks:
# the steps run, the service is named as not served, and the run succeeds.
fil_not_served() {
  run "$TRAINC" run examples/xgb-triton/spec.yaml --local --scale 0.005 --workdir "$TMP/fil" --threads 1 --trainrt "$TRAINRT"
  [ "$rc" -eq 0 ] || { echo "exit $rc"; tail -n 20 "$TMP/stdout" "$TMP/stderr"; return 1; }
  grep -q "model 'fraud' of service 'fraud' runs on Triton's 'fil' backend, which the local Triton (NVIDIA's nvidia-pytriton build) does not have (python only): not served here" "$TMP/stdout" ||
    { echo "the FIL model was not named:"; tail -n 20 "$TMP/stdout"; return 1; }
}

# A model that fails to load (its model.py raises) fails the run, with Triton's own error line.
broken_model() {
  mkdir -p "$TMP/broken"
  cp -r tests/serve/. "$TMP/broken/"
  printf 'raise RuntimeError("this model cannot load")\n' >"$TMP/broken/repo/scorer/1/model.py"
  run "$TRAINC" run "$TMP/broken/spec.yaml" --local --workdir "$TMP/broken-work" --threads 1 --trainrt "$TRAINRT"
  [ "$rc" -ne 0 ] || { echo "the run succeeded with a model that cannot load"; return 1; }
  { grep -q "trainc: service 'scorer': Triton exited (1) before it was ready:" "$TMP/stderr" &&
    grep -q "this model cannot load" "$TMP/stderr"; } || { echo "the failure does not show Triton's error:"; cat "$TMP/stderr"; return 1; }
}

if [ ! -x "$TRITON/pytriton/tritonserver/bin/tritonserver" ] || ! "$PY" -c 'import numpy, xgboost' 2>/dev/null; then
  for name in "train then serve, checked ready" "train then serve with --serve" "a FIL model" "a broken model"; do
    t_skip "$name" "no Triton at $TRITON or no project Python at $PY: tools/install-python.sh installs them"
  done
else
  t "run --local: the service starts after the step it needs, Triton loads the step's model, the run checks it ready and stops it" checked_once
  t "run --local --serve: Triton answers an inference request with the trained model's predictions; Ctrl-C stops it" served_predictions
  t "run --local: a model on a backend the local Triton lacks (FIL) is named and not served; the run succeeds" fil_not_served
  t "run --local: a model Triton cannot load fails the run, showing Triton's error" broken_model
fi
