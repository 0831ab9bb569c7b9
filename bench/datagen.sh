#!/usr/bin/env bash
# Times synthetic data generation, 1,000,000 rows x 50 features (classification, make_classification's
# defaults: 2 informative, 2 redundant, 2 classes, 2 clusters per class, flip_y 0.01), 2 shards,
# seed 1, and prints one table, side by side in one run:
#   dd of the native table's bytes from /dev/zero   the write floor of the output folder
#   trainrt datagen --dry-run, 2 threads and 1      generating and checksumming, no files (the 1-thread
#                                                    row gives the ns per value per core; a 16-row
#                                                    run gives the process's fixed start-up cost)
#   trainrt datagen, native and Parquet shards      the whole process; Parquet uncompressed, zstd, snappy
#   DuckDB COPY (SELECT random()::FLOAT ... FROM range(N)) TO '.parquet'   npm @duckdb/node-api, 2 threads,
#                                                    the statement alone (DuckDB's default codec, snappy)
#   scikit-learn make_classification              the call alone, in memory (the index's scikit-learn 1.9)
#   dask.array                                    normals + a linear label, 2 threads, in memory
# then the ratios the targets are stated in: Parquet / native, native / (dry-run + floor), ns per
# value per core. The peers keep their arrays in memory, so trainrt writes to memory too: its shards
# go to a folder under /dev/shm (tmpfs) by default; OUT_ROOT=/some/disk/folder times a disk instead
# (add FSYNC=1 to time trainrt's default fsync too; the dd floor then uses conv=fsync).
# Runs alternate (each contender once, then again, ...) so that load on the machine hits all alike;
# the table gives medians. Not a test: nothing fails on a slow run.
#
# bench/datagen.sh --gpu [TRAINRT]: times `trainrt datagen --device cuda --dry-run` (GPU_ROWS rows,
# default 10,000,000) and reports GB/s of generated table against the device's memory bandwidth
# (from cudaGetDeviceProperties when a CUDA toolkit is there to build the query, else
# GPU_BANDWIDTH_GBPS). Without a GPU it says so and exits 0.
#
# Usage: bench/datagen.sh [--gpu] [TRAINRT]   (default build/runtime/trainrt)
# Env: RUNS (default 5), ROWS (default 1000000), FEATURES (default 50), THREADS (default 2),
#      OUT_ROOT (default /dev/shm when it exists, else the temp folder), FSYNC (default 0),
#      PEERS=0 to leave out DuckDB, scikit-learn and dask.
# Results: bench/results/datagen.md (and .json); bench/results/datagen-gpu.md with --gpu.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
# shellcheck source=tools/common.sh
. tools/common.sh
gpu=0
if [ "${1:-}" = --gpu ]; then
  gpu=1
  shift
fi
TRAINRT=$(absolute_command "${1:-build/runtime/trainrt}")
if [ ! -x "$TRAINRT" ]; then
  echo "bench: $TRAINRT is not built; run ninja -C build" >&2
  exit 2
fi
mkdir -p bench/results
out_root=${OUT_ROOT:-}
if [ -z "$out_root" ] && [ -d /dev/shm ] && [ -w /dev/shm ]; then out_root=/dev/shm; fi
tmp=$(mktemp -d "${out_root:-${TMPDIR:-/tmp}}/trainrt-bench.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

# The device's peak memory bandwidth in GB/s from the CUDA runtime (2 x memory clock x bus width),
# or nothing when no toolkit is there to build the query.
gpu_bandwidth() {
  local cuda=${CUDA_HOME:-/usr/local/cuda}
  [ -f "$cuda/include/cuda_runtime.h" ] || return 0
  cat >"$tmp/bw.cpp" <<'EOF'
#include <cstdio>
#include <cuda_runtime.h>
int main() {
  cudaDeviceProp p;
  int clock_khz = 0;
  if (cudaGetDeviceProperties(&p, 0) != cudaSuccess ||
      cudaDeviceGetAttribute(&clock_khz, cudaDevAttrMemoryClockRate, 0) != cudaSuccess)
    return 1;
  std::printf("%.1f %s\n", 2.0 * clock_khz * 1e3 * (p.memoryBusWidth / 8.0) / 1e9, p.name);
  return 0;
}
EOF
  c++ -O1 -I"$cuda/include" "$tmp/bw.cpp" -L"$cuda/lib64" -lcudart -Wl,-rpath,"$cuda/lib64" -o "$tmp/bw" \
    2>/dev/null && "$tmp/bw" 2>/dev/null || true
}

if [ "$gpu" = 1 ]; then
  if ! command -v nvidia-smi >/dev/null || ! nvidia-smi -L 2>/dev/null | grep -q '^GPU '; then
    echo "bench/datagen.sh --gpu: no GPU here: skipped"
    exit 0
  fi
  rows=${GPU_ROWS:-10000000}
  features=${FEATURES:-50}
  runs=${RUNS:-5}
  read -r peak name <<<"$(gpu_bandwidth)" || true
  peak=${GPU_BANDWIDTH_GBPS:-${peak:-}}
  name=${name:-$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)}
  best=""
  for i in $(seq 0 "$runs"); do  # run 0 warms up the driver and the page cache
    start=$(date +%s.%N)
    rc=0
    "$TRAINRT" datagen --rows "$rows" --features "$features" --seed 1 --device cuda --dry-run --quiet \
      >/dev/null 2>"$tmp/err" || rc=$?
    end=$(date +%s.%N)
    if [ "$rc" -eq 3 ]; then
      echo "bench/datagen.sh --gpu: no GPU here: skipped ($(head -1 "$tmp/err"))"
      exit 0
    fi
    [ "$rc" -eq 0 ] || { cat "$tmp/err" >&2; exit 1; }
    [ "$i" -eq 0 ] && continue
    best=$(awk -v a="${best:-1e9}" -v s="$start" -v e="$end" 'BEGIN { t = e - s; print (t < a ? t : a) }')
  done
  bytes=$(awk -v r="$rows" -v f="$features" 'BEGIN { printf "%.0f", r * (f + 1) * 4 }')
  gbps=$(awk -v b="$bytes" -v t="$best" 'BEGIN { printf "%.2f", b / t / 1e9 }')
  {
    echo "GPU: $name; peak memory bandwidth ${peak:-unknown (set GPU_BANDWIDTH_GBPS)} GB/s."
    echo "trainrt datagen --device cuda --dry-run, $rows rows x $features features ($bytes bytes), best of $runs:"
    echo "$best s, $gbps GB/s of table$( [ -n "$peak" ] && awk -v g="$gbps" -v p="$peak" \
      'BEGIN { printf ", %.1f%% of the memory bandwidth", 100 * g / p }')."
    echo "(The whole process: CUDA start-up, generation, the copy to the host and the host's checksum.)"
  } | tee bench/results/datagen-gpu.md
  exit 0
fi

peers=${PEERS:-1}
if [ "$peers" = 1 ]; then
  bash tools/install-deps.sh
  # DuckDB from npm, in the cache folder the tests install it into (tests/runtime_datagen_test.sh).
  npm_cache=${XDG_CACHE_HOME:-$HOME/.cache}/trainc-test-npm
  if command -v node >/dev/null && { [ -d "$npm_cache/node_modules/@duckdb/node-api" ] ||
    npm install --prefix "$npm_cache" --no-audit --no-fund --silent @duckdb/node-api >/dev/null 2>&1; }; then
    # The script sits in the cache folder so that Node resolves @duckdb/node-api from there.
    cat >"$npm_cache/trainrt-bench-duckdb.mjs" <<'EOF'
// One DuckDB COPY of a random FLOAT table to Parquet, timed alone: {"wall", "cpu", "version"} on stdout.
import { DuckDBInstance, version } from '@duckdb/node-api';
const [out, rows, features, threads] = process.argv.slice(2);
const db = await DuckDBInstance.create(':memory:', { threads: String(threads) });
const con = await db.connect();
const cols = Array.from({ length: Number(features) }, (_, i) => `random()::FLOAT AS f${i}`).join(', ');
const sql = `COPY (SELECT ${cols}, (random() < 0.5)::INTEGER::FLOAT AS label FROM range(${rows})) ` +
  `TO '${out}' (FORMAT parquet)`;
const cpu0 = process.cpuUsage();
const t0 = performance.now();
await con.run(sql);
const wall = (performance.now() - t0) / 1000;
const cpu = process.cpuUsage(cpu0);
console.log(JSON.stringify({ wall, cpu: (cpu.user + cpu.system) / 1e6, version: version() }));
EOF
    duckdb_script=$npm_cache/trainrt-bench-duckdb.mjs
  else
    echo "bench: node or @duckdb/node-api not available: the DuckDB row is left out" >&2
    duckdb_script=""
  fi
else
  duckdb_script=""
fi

# scikit-learn and dask from the Python package index, pinned, in the project's environment
# (tools/install-python.sh); PEER_PYTHON picks another python (/usr/bin/python3: Debian's).
"${PEER_PYTHON:-$(bash tools/install-python.sh --prefix)/bin/python3}" - "$TRAINRT" "$tmp" "${RUNS:-5}" "${ROWS:-1000000}" "${FEATURES:-50}" "${THREADS:-2}" \
  "${FSYNC:-0}" "$peers" "$duckdb_script" <<'PY'
import json, os, resource, shutil, statistics, subprocess, sys, time

trainrt, tmp = sys.argv[1], sys.argv[2]
runs, rows, features, threads, fsync, peers = map(int, sys.argv[3:9])
duckdb_script = sys.argv[9]
values = rows * features  # the issue's unit: feature values (labels not counted)

def children_cpu():
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime

def folder_bytes(path):
    return sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(path) for f in fs
               if f.startswith("part-"))

sizes = {}

def run_process(cmd, name=None, out=None):
    """Wall and CPU seconds (user + system, all threads) of a whole child process."""
    c, t = children_cpu(), time.perf_counter()
    p = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    wall, cpu = time.perf_counter() - t, children_cpu() - c
    if p.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)}: exit {p.returncode}: {p.stderr.strip()[:300]}")
    if name and out:
        sizes[name] = folder_bytes(out) if os.path.isdir(out) else os.path.getsize(out)
    return wall, cpu

def trainrt_cmd(extra, nthreads=threads):
    return [trainrt, "datagen", f"--rows={rows}", f"--features={features}", "--shards=2", "--seed=1",
            f"--threads={nthreads}", "--quiet", "--fsync" if fsync else "--no-fsync"] + extra

def run_trainrt(name, fmt, codec=None):
    out = os.path.join(tmp, "table")
    shutil.rmtree(out, ignore_errors=True)
    extra = [f"--format={fmt}", f"--out={out}"] + ([f"--compression={codec}"] if codec else [])
    return run_process(trainrt_cmd(extra), name, out)

def run_dry(nthreads):
    return run_process(trainrt_cmd(["--dry-run"], nthreads))

def run_start():
    """The same process with 16 rows: start-up (loading the libraries trainrt links, XGBoost and NCCL
    among them) and exit, so that generation can be told apart from the process's fixed cost."""
    cmd = trainrt_cmd(["--dry-run"], 1)
    return run_process([a if not a.startswith("--rows=") else "--rows=16" for a in cmd])

native_bytes = None

def run_dd(name):
    out = os.path.join(tmp, "dd.bin")
    if os.path.exists(out):
        os.remove(out)
    cmd = ["dd", "if=/dev/zero", f"of={out}", "bs=1M", f"count={native_bytes}", "iflag=count_bytes"]
    return run_process(cmd + (["conv=fsync"] if fsync else []), name, out)

duckdb_version = None

def run_duckdb(name):
    global duckdb_version
    out = os.path.join(tmp, "duckdb.parquet")
    if os.path.exists(out):
        os.remove(out)
    p = subprocess.run(["node", duckdb_script, out, str(rows), str(features), str(threads)],
                       capture_output=True, text=True)
    if p.returncode != 0:
        raise RuntimeError(f"duckdb: exit {p.returncode}: {p.stderr.strip()[:300]}")
    r = json.loads(p.stdout.strip().splitlines()[-1])
    duckdb_version = r["version"]
    sizes[name] = os.path.getsize(out)
    return r["wall"], r["cpu"]

def timed(fn):
    """Wall and CPU seconds (this process, all threads) of fn()."""
    c, t = time.process_time(), time.perf_counter()
    fn()
    return time.perf_counter() - t, time.process_time() - c

where = "tmpfs" if os.path.dirname(tmp).startswith("/dev/shm") else os.path.dirname(tmp)
sync = " with fsync" if fsync else ""
N = {
    "dd": f"dd of the native table's bytes from /dev/zero ({where}{sync}): the write floor",
    "dry2": f"trainrt datagen --dry-run, {threads} threads (generate + checksum, no files)",
    "dry1": "trainrt datagen --dry-run, 1 thread",
    "start": "trainrt datagen --dry-run --rows 16, 1 thread (the process's start and exit alone)",
    "native": f"trainrt datagen, native shards{sync}",
    "pq": f"trainrt datagen, Parquet, uncompressed{sync}",
    "zstd": f"trainrt datagen, Parquet, --compression zstd{sync}",
    "snappy": f"trainrt datagen, Parquet, --compression snappy{sync}",
    "duckdb": f"DuckDB COPY random()::FLOAT table TO .parquet, {threads} threads (snappy)",
    "sklearn": "scikit-learn make_classification (in memory)",
    "dask": f"dask.array normals + linear label, {threads} threads (in memory)",
}
contenders = {
    N["dd"]: lambda: run_dd(N["dd"]),
    N["dry2"]: lambda: run_dry(threads),
    N["dry1"]: lambda: run_dry(1),
    N["start"]: run_start,
    N["native"]: lambda: run_trainrt(N["native"], "native"),
    N["pq"]: lambda: run_trainrt(N["pq"], "parquet"),
    N["zstd"]: lambda: run_trainrt(N["zstd"], "parquet", "zstd"),
    N["snappy"]: lambda: run_trainrt(N["snappy"], "parquet", "snappy"),
}
versions = ""
if peers:
    import numpy as np
    import sklearn
    from sklearn.datasets import make_classification
    import dask
    import dask.array as da

    def run_sklearn():
        return timed(lambda: make_classification(n_samples=rows, n_features=features, random_state=0))

    def run_dask():
        # What a dask.array user writes for "random features and a label", chunked over the rows.
        def work():
            rs = da.random.RandomState(0)
            X = rs.standard_normal((rows, features), chunks=(max(1, rows // (4 * threads)), features)).astype(np.float32)
            w = np.random.RandomState(1).uniform(-1, 1, size=(2,))
            y = (X[:, :2] @ w > 0).astype(np.float32)
            dask.compute(X, y, scheduler="threads", num_workers=threads)
        return timed(work)

    if duckdb_script:
        contenders[N["duckdb"]] = lambda: run_duckdb(N["duckdb"])
    contenders[N["sklearn"]] = run_sklearn
    contenders[N["dask"]] = run_dask
    versions = f"scikit-learn {sklearn.__version__}, dask {dask.__version__}, numpy {np.__version__}"

# The dd floor writes as many bytes as the native table: make one first.
run_trainrt(N["native"], "native")
native_bytes = sizes[N["native"]]
times = {name: [] for name in contenders}
failed = {}
for name, fn in contenders.items():  # warm-up: page cache, imports, thread pools
    try:
        fn()
    except RuntimeError as e:
        failed[name] = str(e)
        print(f"bench: {name}: {e}", file=sys.stderr)
for _ in range(runs):
    for name, fn in contenders.items():
        if name not in failed:
            times[name].append(fn())

def med(name, i=0):
    return statistics.median(t[i] for t in times[name]) if times.get(name) else float("nan")

sk = N["sklearn"] if peers else None
cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), "?")
head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], capture_output=True, text=True).stdout
lines = [
    f"Machine: {os.cpu_count()} cores ({cpu}), load average {os.getloadavg()[0]:.2f} at the end"
    + (f"; {versions}" + (f", DuckDB {duckdb_version}" if duckdb_version else "") if versions else "") + ".",
    f"{rows:,} rows x {features} features, 2 shards, seed 1; median of {runs} runs (after one warm-up each); "
    f"commit {head}{' + local changes' if dirty else ''}.",
    "",
    "| what | wall s | CPU s | MB written | ns per value per core | sklearn / this, wall |",
    "|---|---:|---:|---:|---:|---:|",
]
for name in contenders:
    if name in failed:
        lines.append(f"| {name} | failed | | | | |")
        continue
    wall, cpu_s = med(name), med(name, 1)
    mb = f"{sizes[name] / 1e6:.1f}" if name in sizes else ""
    ns = f"{cpu_s / values * 1e9:.2f}" if name.startswith("trainrt") and name != N["start"] else ""
    ratio = f"{med(sk) / wall:.1f}x" if sk and sk not in failed else ""
    lines.append(f"| {name} | {wall:.3f} | {cpu_s:.3f} | {mb} | {ns} | {ratio} |")

def ratio_line(text, num, den, target=None):
    """Wall ratio (the target's) and, steadier on a loaded machine, the CPU-seconds ratio."""
    r = med(num) / den(0)
    verdict = "" if target is None else (f", target <= {target}: {'met' if r <= target else 'NOT met'}")
    return f"- {text}: {r:.2f} (CPU seconds: {med(num, 1) / den(1):.2f}{verdict})"

native = lambda i: med(N["native"], i)
lines += ["", "Ratios of medians, wall (CPU):",
          ratio_line("Parquet uncompressed / native", N["pq"], native, 1.3),
          ratio_line("Parquet zstd / native", N["zstd"], native),
          ratio_line("Parquet snappy / native", N["snappy"], native),
          ratio_line("native / (dry-run + dd floor)", N["native"], lambda i: med(N["dry2"], i) + med(N["dd"], i), 1.5),
          f"- generation, 1 thread: {med(N['dry1'], 1) / values * 1e9:.2f} ns of CPU per value with the "
          f"process's start; {(med(N['dry1'], 1) - med(N['start'], 1)) / values * 1e9:.2f} without it "
          f"(target <= 1.5); {threads} threads: {med(N['dry2'], 1) / values * 1e9:.2f} with the start",
          ]
if N["zstd"] in sizes and N["pq"] in sizes:
    lines.append(f"- bytes: zstd {sizes[N['zstd']] / sizes[N['pq']]:.3f}, snappy "
                 f"{sizes[N['snappy']] / sizes[N['pq']]:.3f} of uncompressed Parquet")
lines += ["", f"Command: bench/datagen.sh (RUNS={runs} ROWS={rows} FEATURES={features} THREADS={threads}"
          f"{' FSYNC=1' if fsync else ''}; output under {os.path.dirname(tmp)})"]
text = "\n".join(lines)
print(text)
with open("bench/results/datagen.md", "w") as f:
    f.write(text + "\n")
with open("bench/results/datagen.json", "w") as f:
    json.dump({"rows": rows, "features": features, "threads": threads, "fsync": bool(fsync),
               "bytes": sizes, "failed": failed, "runs_wall_cpu_seconds": times}, f, indent=2)
PY
