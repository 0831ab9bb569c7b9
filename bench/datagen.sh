#!/usr/bin/env bash
# Times synthetic data generation, 1,000,000 rows x 50 features (classification, make_classification's
# defaults: 2 informative, 2 redundant, 2 classes, 2 clusters per class, flip_y 0.01), side by side:
#   trainrt datagen --threads 2            the whole process, writing native shards (then Parquet,
#                                          then --dry-run: generating and checksumming, no files)
#   scikit-learn make_classification      the call alone, in memory (Debian's python3-sklearn)
#   dask.array                            normals + a linear label, computed with 2 threads, in memory
# The peers keep their arrays in memory, so trainrt writes to memory too: its shards go to a folder
# under /dev/shm (tmpfs) by default; OUT_ROOT=/some/disk/folder times the disk instead.
# Runs alternate (trainrt, sklearn, dask, trainrt, ...) so that load on the machine hits all alike;
# the table gives medians and ratios. Not a test: nothing fails on a slow run.
# Usage: bench/datagen.sh [TRAINRT]   (default build/runtime/trainrt)
# Env: RUNS (default 5), ROWS (default 1000000), FEATURES (default 50), THREADS (default 2),
#      OUT_ROOT (default /dev/shm when it exists, else the temp folder).
# Results: bench/results/datagen.md (and .json).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
# shellcheck source=tools/common.sh
. tools/common.sh
TRAINRT=$(absolute_command "${1:-build/runtime/trainrt}")
if [ ! -x "$TRAINRT" ]; then
  echo "bench: $TRAINRT is not built; run ninja -C build" >&2
  exit 2
fi
bash tools/install-deps.sh python3-sklearn python3-dask
mkdir -p bench/results
out_root=${OUT_ROOT:-}
if [ -z "$out_root" ] && [ -d /dev/shm ] && [ -w /dev/shm ]; then out_root=/dev/shm; fi
tmp=$(mktemp -d "${out_root:-${TMPDIR:-/tmp}}/trainrt-bench.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

# Debian's scikit-learn and dask belong to /usr/bin/python3, not to a python3 earlier on PATH.
/usr/bin/python3 - "$TRAINRT" "$tmp" "${RUNS:-5}" "${ROWS:-1000000}" "${FEATURES:-50}" "${THREADS:-2}" <<'PY'
import json, os, resource, shutil, statistics, subprocess, sys, time

trainrt, tmp, runs, rows, features, threads = sys.argv[1], sys.argv[2], *map(int, sys.argv[3:])
import numpy as np
import sklearn
from sklearn.datasets import make_classification
import dask
import dask.array as da

def children_cpu():
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime

def run_trainrt(fmt):
    """Wall and CPU seconds (user + system, all threads) of the whole trainrt process."""
    out = os.path.join(tmp, "table")
    shutil.rmtree(out, ignore_errors=True)
    cmd = [trainrt, "datagen", f"--rows={rows}", f"--features={features}", f"--threads={threads}", "--quiet"]
    cmd += ["--dry-run"] if fmt == "none" else [f"--format={fmt}", f"--out={out}"]
    c, t = children_cpu(), time.perf_counter()
    subprocess.run(cmd, check=True)
    return time.perf_counter() - t, children_cpu() - c

def timed(fn):
    """Wall and CPU seconds (this process, all threads) of fn()."""
    c, t = time.process_time(), time.perf_counter()
    fn()
    return time.perf_counter() - t, time.process_time() - c

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

contenders = {
    f"trainrt datagen --threads {threads} (native shards)": lambda: run_trainrt("native"),
    f"trainrt datagen --threads {threads} (Parquet shards)": lambda: run_trainrt("parquet"),
    f"trainrt datagen --threads {threads} --dry-run (generate + checksum, in memory)": lambda: run_trainrt("none"),
    "sklearn make_classification (in memory)": run_sklearn,
    f"dask.array normals + linear label, {threads} threads (in memory)": run_dask,
}
times = {name: [] for name in contenders}
for name, fn in contenders.items():  # warm-up: page cache, imports, thread pools
    fn()
for _ in range(runs):
    for name, fn in contenders.items():
        times[name].append(fn())

sk_name = "sklearn make_classification (in memory)"
sk_wall = statistics.median(w for w, _ in times[sk_name])
sk_cpu = statistics.median(c for _, c in times[sk_name])
cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), "?")
lines = [
    f"Machine: {os.cpu_count()} cores ({cpu}), load average {os.getloadavg()[0]:.2f} at the end; "
    f"scikit-learn {sklearn.__version__}, dask {dask.__version__}, numpy {np.__version__}.",
    f"{rows:,} rows x {features} features, median of {runs} runs (after one warm-up each).",
    "",
    "| what | wall s, median | wall s, min | CPU s, median | sklearn / this, wall | sklearn / this, CPU |",
    "|---|---:|---:|---:|---:|---:|",
]
for name, ts in times.items():
    wall = statistics.median(w for w, _ in ts)
    cpu_s = statistics.median(c for _, c in ts)
    lines.append(f"| {name} | {wall:.3f} | {min(w for w, _ in ts):.3f} | {cpu_s:.3f} | "
                 f"{sk_wall / wall:.1f}x | {sk_cpu / cpu_s:.1f}x |")
lines += ["", f"trainrt wrote its shards under {os.path.dirname(tmp)}.",
          f"Command: bench/datagen.sh (RUNS={runs} ROWS={rows} FEATURES={features} THREADS={threads})"]
text = "\n".join(lines)
print(text)
with open("bench/results/datagen.md", "w") as f:
    f.write(text + "\n")
with open("bench/results/datagen.json", "w") as f:
    json.dump({"rows": rows, "features": features, "threads": threads,
               "runs_wall_cpu_seconds": times}, f, indent=2)
PY
