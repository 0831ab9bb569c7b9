#!/usr/bin/env bash
# `trainc run --local` with a Dask cluster (TAP): examples/dask-cpu's scheduler and two workers
# start on loopback from the command lines their pods run (Debian's python3-distributed), the
# client step computes through them and checks its answer, and everything is stopped afterwards;
# while the cluster is up, nothing of the run listens beyond loopback (tests/listeners.py).
# A `dask` stand-in that renames one generated flag shows that a broken command line fails the run.
# Usage: tests/run_local_dask_test.sh TRAINC
set -uo pipefail
# shellcheck source=tests/tap.sh
. "$(dirname "${BASH_SOURCE[0]}")/tap.sh"
tap_init "$@"
# Debian's python3 holds dask and distributed; a python3 earlier on PATH (pyenv) may not.
export PATH="/usr/bin:$PATH"
SPEC=examples/dask-cpu/spec.yaml

# tools/install-deps.sh installs python3-distributed: without it this suite fails, never skips.
if ! /usr/bin/python3 -c 'import distributed' 2>/dev/null || ! command -v dask >/dev/null; then
  echo "Bail out! python3-distributed is not installed; run tools/install-deps.sh"
  exit 1
fi

# Dask processes this test started, found by the scheduler address they were given.
leftovers() { pgrep -f 'dask (scheduler|worker) .*127\.0\.0\.1' || true; }

runs_and_computes() {
  local out
  out=$("$TRAINC" run --local "$SPEC" --workdir "$TMP/work" 2>"$TMP/stderr") || {
    echo "run failed:"; printf '%s\n' "$out"; tail -n 30 "$TMP/stderr"; return 1; }
  printf '%s\n' "$out" >"$TMP/stdout"
  grep -q '^  \$ dask scheduler --host=127.0.0.1 --port=[0-9]* --dashboard-address=127.0.0.1:[0-9]* &$' "$TMP/stdout" ||
    { echo "no scheduler command line:"; cat "$TMP/stdout"; return 1; }
  [ "$(grep -c '^  \$ dask worker tcp://127.0.0.1:[0-9]* --name=dask-cpu-[01] --nthreads=1 ' "$TMP/stdout")" = 2 ] ||
    { echo "expected two worker command lines:"; cat "$TMP/stdout"; return 1; }
  grep -q "^sum of squares below 1000000 = 333332833333500000 on 2 workers \['dask-cpu-0', 'dask-cpu-1'\]$" "$TMP/stdout" ||
    { echo "the client did not compute through two workers:"; cat "$TMP/stdout"; return 1; }
}
t "the scheduler, two workers and the client run, and the client's answer is right" runs_and_computes

nothing_left() {
  local pids
  sleep 1
  pids=$(leftovers)
  if [ -n "$pids" ]; then echo "still running:"; ps -o pid,args -p "$pids"; return 1; fi
}
t "no Dask process is left running" nothing_left

# While the cluster is up, every socket the run listens on is on loopback: an unauthenticated Dask
# scheduler runs any client's code. The client holds the run until the sockets have been read.
only_loopback() {
  cat >"$TMP/hold.yaml" <<SPEC
apiVersion: trainc/v1
kind: TrainingSystem
name: dask-hold
cluster:
  pools:
    cpu: {machine: n2-standard-8, nodes: 3}
clusters:
  dask:
    engine: dask
    image: ghcr.io/dask/dask:2024.12.1
    scheduler: {pool: cpu, resources: {requests: {cpu: "2", memory: 8Gi}, limits: {memory: 8Gi}}}
    workers:
      cpu: {pool: cpu, replicas: 2}
pipeline:
  - name: hold
    cluster: dask
    env: {READY: "$TMP/ready", GO: "$TMP/go"}
    command:
      - python3
      - -c
      - |
        import os, time
        from distributed import Client
        with Client() as client:
            client.wait_for_workers(2)
            open(os.environ["READY"], "w").close()
            while not os.path.exists(os.environ["GO"]):
                time.sleep(0.2)
SPEC
  rm -f "$TMP/ready" "$TMP/go"
  "$TRAINC" run --local "$TMP/hold.yaml" --workdir "$TMP/hold" >"$TMP/hold.log" 2>&1 &
  local pid=$! rc=0 n=600
  while [ ! -e "$TMP/ready" ] && [ "$n" -gt 0 ] && kill -0 "$pid" 2>/dev/null; do sleep 0.2; n=$((n - 1)); done
  if [ ! -e "$TMP/ready" ]; then
    echo "the client never saw two workers"; kill -INT "$pid"; wait "$pid"; tail -n 20 "$TMP/hold.log"; return 1
  fi
  /usr/bin/python3 tests/listeners.py "$pid" >"$TMP/listeners" || rc=1
  touch "$TMP/go"
  wait "$pid" || { echo "the run failed (exit $?)"; tail -n 20 "$TMP/hold.log"; return 1; }
  cat "$TMP/listeners"
  [ "$rc" -eq 0 ] || { echo "the run listened beyond loopback (lines with !)"; return 1; }
  # The scheduler and its dashboard, each worker and its nanny: the check saw the cluster.
  [ "$(wc -l <"$TMP/listeners")" -ge 6 ] || { echo "expected at least 6 listening sockets"; return 1; }
}
t "every socket the run listens on while its Dask cluster is up is on loopback" only_loopback
t "no Dask process is left after that run" nothing_left

# A client step runs in its image's build context (here the cluster's build), where the image holds
# its files, not in the spec's folder.
client_in_build_context() {
  mkdir -p "$TMP/ctx/app"
  printf '%s\n' 'import os' 'open(os.environ["WHERE"], "w").write(os.getcwd())' >"$TMP/ctx/app/where.py"
  cat >"$TMP/ctx/spec.yaml" <<SPEC
apiVersion: trainc/v1
kind: TrainingSystem
name: dask-ctx
gcp: {project: my-project, region: us-central1, zone: us-central1-b}
cluster:
  pools:
    cpu: {machine: n2-standard-8, nodes: 3}
clusters:
  dask:
    engine: dask
    build: {context: app, base: "ghcr.io/dask/dask:2024.12.1", copy: [where.py]}
    scheduler: {pool: cpu}
    workers:
      cpu: {pool: cpu, replicas: 1}
pipeline:
  - name: where
    cluster: dask
    env: {WHERE: "$TMP/where.txt"}
    command: [python3, where.py]
SPEC
  rm -f "$TMP/where.txt"
  timeout 300 "$TRAINC" run --local "$TMP/ctx/spec.yaml" --workdir "$TMP/ctx-work" >"$TMP/ctx.log" 2>&1 ||
    { echo "run failed (exit $?):"; tail -n 20 "$TMP/ctx.log"; return 1; }
  [ "$(cat "$TMP/where.txt")" = "$(cd "$TMP/ctx/app" && pwd -P)" ] ||
    { echo "the client ran in '$(cat "$TMP/where.txt" 2>&1)', not its build context"; tail -n 20 "$TMP/ctx.log"; return 1; }
}
t "a client step runs in its image's build context" client_in_build_context
t "no Dask process is left after that run" nothing_left

broken_flag_fails() {
  mkdir -p "$TMP/bin"
  # Passes everything to the real dask, but renames --nthreads as a broken generator would.
  cat >"$TMP/bin/dask" <<'STUB'
#!/usr/bin/env bash
args=()
for a in "$@"; do args+=("${a/--nthreads=/--nthread=}"); done
exec /usr/bin/dask "${args[@]}"
STUB
  chmod +x "$TMP/bin/dask"
  local rc=0
  PATH="$TMP/bin:$PATH" timeout 300 "$TRAINC" run --local "$SPEC" --workdir "$TMP/work2" >"$TMP/out2" 2>&1 || rc=$?
  if [ "$rc" = 0 ]; then echo "the run passed with a broken worker command line"; tail -n 20 "$TMP/out2"; return 1; fi
  grep -q -- '--nthread' "$TMP/out2" || { echo "failed, but not because of the flag:"; tail -n 20 "$TMP/out2"; return 1; }
}
t "a worker command line with a renamed flag fails the run" broken_flag_fails
t "no Dask process is left after the failed run" nothing_left
tap_done
