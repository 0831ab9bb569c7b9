#!/usr/bin/env bash
# `trainc run --local` with a Ray cluster (TAP), with the Ray and PyTorch of the project's Python
# environment (tools/install-python.sh): examples/ray-t4 runs end to end on the CPU (a head and one
# worker started with `ray start`, the RayJob's entrypoint submitted to the head's job API, Ray
# Train's TorchTrainer on four CPU workers, its checkpoint written to the store's local folder); a
# spec with two worker groups (three worker nodes) runs a job that sees every node and the
# RayJob's runtime env; a failing entrypoint fails the step with its exit code; while a cluster is
# up nothing of the run listens beyond loopback (tests/listeners.py); no Ray process outlives a run.
# Usage: tests/run_local_ray_test.sh TRAINC
set -uo pipefail
# shellcheck source=tests/tap.sh
. "$(dirname "${BASH_SOURCE[0]}")/tap.sh"
tap_init "$@"

PY=$(project_python)
# tools/install-deps.sh installs the environment: without Ray this suite fails, never skips.
if ! "$PY" -c 'import ray, torch' 2>/dev/null; then
  echo "Bail out! no python with Ray and PyTorch at $PY; run tools/install-python.sh"
  exit 1
fi

# Ray processes a run of this test started: their command lines name the run's temporary folder.
leftovers() { pgrep -f 'trainc-ray-[A-Za-z0-9]{6}' || true; }
nothing_left() {
  local pids
  sleep 1
  pids=$(leftovers)
  if [ -n "$pids" ]; then echo "still running:"; ps -o pid,args -p "$pids" | cut -c1-200; return 1; fi
  if compgen -G '/tmp/trainc-ray-*' >/dev/null; then echo "left behind:"; ls -d /tmp/trainc-ray-*; return 1; fi
}

ray_t4() {
  local rc=0
  timeout 900 "$TRAINC" run --local examples/ray-t4/spec.yaml --workdir "$TMP/t4" >"$TMP/t4.log" 2>&1 || rc=$?
  if [ "$rc" != 0 ]; then echo "run failed (exit $rc):"; tail -n 40 "$TMP/t4.log"; return 1; fi
  grep -q '^  \$ ray start --head --block --node-ip-address=127.0.0.1 ' "$TMP/t4.log" ||
    { echo "no head command line:"; head -n 30 "$TMP/t4.log"; return 1; }
  [ "$(grep -c '^  \$ ray start --block --address=127.0.0.1:[0-9]* ' "$TMP/t4.log")" = 1 ] ||
    { echo "expected one worker command line:"; head -n 30 "$TMP/t4.log"; return 1; }
  grep -q "^  \$ ray job submit --address http://127.0.0.1:[0-9]* --submission-id ray-t4-train-1 --runtime-env-json '{\"env_vars\":{\"NUM_WORKERS\":\"4\",\"USE_GPU\":\"1\"}}' -- python pytorch_training_e2e.py --results=$TMP/t4/stores/results\$" "$TMP/t4.log" ||
    { echo "the job was not submitted with the RayJob's entrypoint and runtime env:"; grep -n 'ray job submit' "$TMP/t4.log"; return 1; }
  grep -q "Ray job 'ray-t4-train-1' SUCCEEDED, driver exit code 0" "$TMP/t4.log" ||
    { echo "the job did not succeed:"; tail -n 30 "$TMP/t4.log"; return 1; }
  grep -q '^final metrics: ' "$TMP/t4.log" || { echo "no final metrics streamed"; tail -n 30 "$TMP/t4.log"; return 1; }
  # Ray Train wrote its run and a checkpoint with the model into the store's folder.
  find "$TMP/t4/stores/results/fashion-mnist" -name model.pt | grep -q . ||
    { echo "no checkpoint under the results store:"; find "$TMP/t4/stores" | head -n 20; return 1; }
  grep -q '^ran with: .*PyTorch 2\.[0-9.]*.*Ray 2\.[0-9.]*' "$TMP/t4.log" ||
    { echo "the summary does not name PyTorch and Ray:"; tail -n 5 "$TMP/t4.log"; return 1; }
}
t "examples/ray-t4 runs: head and worker, the RayJob's submission, TorchTrainer on the CPU, a checkpoint" ray_t4
t "no Ray process or folder is left after it" nothing_left

# Two worker groups, three worker nodes (one group scaled down to two), a job that waits for every
# node and reads the runtime env, and holds the cluster until the sockets have been read.
cat >"$TMP/multi.yaml" <<SPEC
apiVersion: trainc/v1
kind: TrainingSystem
name: ray-multi
cluster:
  pools:
    cpu: {machine: n2-standard-8, nodes: 6}
clusters:
  ray:
    engine: ray
    image: rayproject/ray:2.52.0-py310
    head: {pool: cpu}
    workers:
      small: {pool: cpu, replicas: 1, resources: {requests: {cpu: "1", memory: 2Gi}}}
      big: {pool: cpu, replicas: 3, resources: {requests: {cpu: "2", memory: 4Gi}}}
pipeline:
  - name: nodes
    cluster: ray
    env: {GREETING: "hello from the runtime env", READY: "$TMP/ready", GO: "$TMP/go"}
    command:
      - python
      - -c
      - |
        import os, time, ray
        ray.init()
        while len([n for n in ray.nodes() if n["Alive"]]) < 4:
            time.sleep(0.2)
        @ray.remote
        def where():
            return os.environ["GREETING"], ray.get_runtime_context().get_node_id()
        seen = ray.get([where.remote() for _ in range(16)])
        print("nodes alive:", len([n for n in ray.nodes() if n["Alive"]]), "cpus:", int(ray.cluster_resources()["CPU"]))
        print("runtime env:", sorted({g for g, _ in seen}))
        open(os.environ["READY"], "w").close()
        while not os.path.exists(os.environ["GO"]):
            time.sleep(0.2)
  - name: fails
    needs: [nodes]
    cluster: ray
    command: [python, -c, "import sys; print('failing on purpose'); sys.exit(7)"]
SPEC

multi_and_loopback() {
  rm -f "$TMP/ready" "$TMP/go"
  "$TRAINC" run --local "$TMP/multi.yaml" --workdir "$TMP/multi" >"$TMP/multi.log" 2>&1 &
  local pid=$! rc=0 n=1500 status=0
  while [ ! -e "$TMP/ready" ] && [ "$n" -gt 0 ] && kill -0 "$pid" 2>/dev/null; do sleep 0.2; n=$((n - 1)); done
  if [ ! -e "$TMP/ready" ]; then
    echo "the job never saw four nodes"; kill -INT "$pid"; wait "$pid"; tail -n 30 "$TMP/multi.log"; return 1
  fi
  /usr/bin/python3 tests/listeners.py "$pid" >"$TMP/listeners" || rc=1
  touch "$TMP/go"
  wait "$pid" || status=$?
  cat "$TMP/listeners"
  [ "$rc" -eq 0 ] || { echo "the run listened beyond loopback (lines with !)"; return 1; }
  # The GCS, the dashboard, and each node's raylet, object manager and agents: the check saw them.
  [ "$(wc -l <"$TMP/listeners")" -ge 12 ] || { echo "expected at least 12 listening sockets"; return 1; }
  # The head asks for what an n2-standard-8 leaves (7 CPUs), the workers for 1, 2 and 2.
  grep -q '^nodes alive: 4 cpus: 12$' "$TMP/multi.log" ||
    { echo "expected the head and three workers, 7 + 1 + 2 + 2 CPUs:"; grep -n 'nodes alive\|ray start' "$TMP/multi.log"; return 1; }
  grep -q "(worker group 'big' runs 2 of its 3 workers here)" "$TMP/multi.log" ||
    { echo "the scaled-down group was not reported"; return 1; }
  grep -q "^runtime env: \['hello from the runtime env'\]$" "$TMP/multi.log" ||
    { echo "the tasks did not see the RayJob's runtime env:"; grep -n 'runtime env' "$TMP/multi.log"; return 1; }
  printf '%s\n' "$status" >"$TMP/multi.status"
}
t "a cluster of two worker groups: every node joins, the runtime env reaches the tasks, only loopback listens" multi_and_loopback

failing_entrypoint() {
  [ "$(cat "$TMP/multi.status" 2>/dev/null)" = 7 ] ||
    { echo "the run exited $(cat "$TMP/multi.status" 2>/dev/null), not the entrypoint's 7"; tail -n 20 "$TMP/multi.log"; return 1; }
  grep -q '^failing on purpose$' "$TMP/multi.log" || { echo "the failing job's log was not streamed"; return 1; }
  grep -q "Ray job 'ray-multi-fails-2' FAILED, driver exit code 7" "$TMP/multi.log" ||
    { echo "no FAILED line for the job"; tail -n 20 "$TMP/multi.log"; return 1; }
  grep -q "^trainc: step 'fails' failed (exit 7)" "$TMP/multi.log" ||
    { echo "the step's failure does not carry the exit code"; tail -n 20 "$TMP/multi.log"; return 1; }
}
t "a failing entrypoint fails its step with the entrypoint's exit code" failing_entrypoint
t "no Ray process or folder is left after those runs" nothing_left

no_ray_python() {
  local rc=0
  timeout 60 "$TRAINC" run --local "$TMP/multi.yaml" --workdir "$TMP/noray" --python /usr/bin/python3 >"$TMP/noray.log" 2>&1 || rc=$?
  [ "$rc" = 2 ] || { echo "expected exit 2, got $rc"; cat "$TMP/noray.log"; return 1; }
  grep -q "Ray steps need a python3 that imports torch and ray ('/usr/bin/python3' does not): run tools/install-python.sh" "$TMP/noray.log" ||
    { echo "no message saying what to do:"; cat "$TMP/noray.log"; return 1; }
}
t "a python without Ray is refused at once, saying what to install" no_ray_python
tap_done
