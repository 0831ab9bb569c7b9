#!/usr/bin/env bash
# `trainc run --local` with a Dask cluster (TAP): examples/dask-cpu's scheduler and two workers
# start on loopback from the command lines their pods run (Debian's python3-distributed), the
# client step computes through them and checks its answer, and everything is stopped afterwards.
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
  grep -q '^  \$ dask scheduler --port=[0-9]* --dashboard-address=:[0-9]* &$' "$TMP/stdout" ||
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
