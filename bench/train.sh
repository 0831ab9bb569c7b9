#!/usr/bin/env bash
# Training benchmark (not a test): `trainrt train` end to end (load shards + DMatrix + ROUNDS rounds
# of hist) against Python xgboost on the same data and parameters (load .npy + DMatrix + the same
# rounds), side by side in one run, each process under /usr/bin/time for wall time and peak RSS;
# also `trainrt train` on the same table as Parquet files (trainrt's writer, 128k-row row groups).
# Usage: bench/train.sh [TRAINRT]   (default build/runtime/trainrt; `./dev.sh build` first)
# Env: ROWS (1000000), FEATURES (50), ROUNDS (50), THREADS (2), REPS (3). Results: bench/results/.
# The peer is the Python xgboost a user installs today, the index's pinned xgboost-cpu 3.2 in the
# project's environment (tools/install-python.sh); PEER_PYTHON=/usr/bin/python3 takes Debian's
# python3-xgboost 1.7.4 instead, the library trainrt links, whose models then match trainrt's bit for bit.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
# shellcheck source=tools/common.sh
. tools/common.sh
TRAINRT=$(absolute_command "${1:-build/runtime/trainrt}")
TESTDATA=$(dirname "$TRAINRT")/train/trainrt-testdata
ROWS=${ROWS:-1000000}
FEATURES=${FEATURES:-50}
ROUNDS=${ROUNDS:-50}
THREADS=${THREADS:-2}
REPS=${REPS:-3}
results=bench/results

bash tools/install-deps.sh time
PY=${PEER_PYTHON:-$(bash tools/install-python.sh --prefix)/bin/python3}
for tool in "$TRAINRT" "$TESTDATA" /usr/bin/time "$PY"; do
  if [ ! -x "$tool" ]; then
    echo "bench: $tool is missing (build with ./dev.sh build; tools/install-python.sh)" >&2
    exit 2
  fi
done
"$PY" -c 'import numpy, xgboost' || { echo "bench: $PY needs numpy and xgboost" >&2; exit 2; }

mkdir -p "$results"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# The same table twice: native shards for trainrt, .npy for Python (until `trainrt datagen` writes
# the shards, trainrt-testdata does).
echo "bench: writing $ROWS x $FEATURES float32 as 4 native shards, as 4 Parquet files and as .npy" >&2
"$TESTDATA" --rows "$ROWS" --features "$FEATURES" --shards 4 --seed 1 --out "$work/shards" --npy "$work/data" \
  --parquet "$work/parquet"
data_mb=$(awk -v r="$ROWS" -v f="$FEATURES" 'BEGIN { printf "%.1f", r * f * 4 / 1e6 }')

cat >"$work/peer.py" <<'EOF'
"""The Python peer: load .npy, build a DMatrix (or QuantileDMatrix), train, save."""
import sys

import numpy as np
import xgboost as xgb

x_path, y_path, kind, rounds, threads, out = sys.argv[1:]
threads = int(threads)
X = np.load(x_path)
y = np.load(y_path)
make = xgb.DMatrix if kind == "dmatrix" else xgb.QuantileDMatrix
d = make(X, label=y, nthread=threads)
params = {"tree_method": "hist", "max_depth": 6, "nthread": threads, "objective": "binary:logistic"}
booster = xgb.train(params, d, int(rounds), evals=[(d, "train")], verbose_eval=False)
booster.save_model(out)
EOF

# Whether two models are the same bytes once the attributes Python's xgb.train adds
# (best_iteration, best_ntree_limit) are cleared.
cat >"$work/same.py" <<'EOF'
import sys

import xgboost as xgb


def raw(path):
    b = xgb.Booster(model_file=path)
    b.set_attr(**{k: None for k in b.attributes()})
    return b.save_raw("ubj")


sys.exit(0 if raw(sys.argv[1]) == raw(sys.argv[2]) else 1)
EOF

# contender name -> command (model written to $work/model-<name>.ubj)
names=("trainrt" "trainrt --dmatrix dense" "python DMatrix" "python QuantileDMatrix" "trainrt on Parquet")
command_for() {
  local m=$work/model-$2
  case $1 in
    "trainrt") echo "$TRAINRT train --data $work/shards --model-dir $m --rounds $ROUNDS --threads $THREADS --param objective=binary:logistic --param max_depth=6" ;;
    "trainrt --dmatrix dense") echo "$TRAINRT train --data $work/shards --model-dir $m --rounds $ROUNDS --threads $THREADS --param objective=binary:logistic --param max_depth=6 --dmatrix dense" ;;
    "python DMatrix") echo "$PY $work/peer.py $work/data.X.npy $work/data.y.npy dmatrix $ROUNDS $THREADS $m.ubj" ;;
    "trainrt on Parquet") echo "$TRAINRT train --data $work/parquet --model-dir $m --rounds $ROUNDS --threads $THREADS --param objective=binary:logistic --param max_depth=6" ;;
    "python QuantileDMatrix") echo "$PY $work/peer.py $work/data.X.npy $work/data.y.npy quantile $ROUNDS $THREADS $m.ubj" ;;
  esac
}

# Each rep runs every contender once, in a rotated order so none always goes first.
: >"$work/runs.tsv"
for ((rep = 0; rep < REPS; rep++)); do
  for ((k = 0; k < ${#names[@]}; k++)); do
    i=$(((k + rep) % ${#names[@]}))
    name=${names[$i]}
    rm -rf "$work/model-$i" "$work/model-$i.ubj"
    echo "bench: rep $((rep + 1))/$REPS: $name" >&2
    # shellcheck disable=SC2046  # the command is split on purpose
    /usr/bin/time -f '%e %M %U %S' -o "$work/time" $(command_for "$name" "$i") 2>"$work/log-$i" >/dev/null ||
      { echo "bench: $name failed:" >&2; tail -n 5 "$work/log-$i" >&2; exit 1; }
    read -r wall rss_kb user sys <"$work/time"
    printf '%s\t%s\t%s\t%s\t%s\n' "$i" "$rep" "$wall" "$rss_kb" "$(awk -v u="$user" -v s="$sys" 'BEGIN { print u + s }')" \
      >>"$work/runs.tsv"
  done
done

model_of() { if [ -f "$work/model-$1/model.ubj" ]; then echo "$work/model-$1/model.ubj"; else echo "$work/model-$1.ubj"; fi; }
median() { sort -n | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
# column COL of contender I's runs, one a line
column() { awk -F'\t' -v i="$1" -v c="$2" '$1 == i { print $c }' "$work/runs.tsv"; }
# contender I's time (column COL) over the peer's in the same rep, one ratio per rep: the machine's
# load changes from minute to minute, so runs are compared with their neighbours
paired() {
  awk -F'\t' -v i="$1" -v p="${3:-$peer}" -v c="$2" '$1 == i { a[$2] = $c } $1 == p { b[$2] = $c }
    END { for (r in a) if (r in b) print a[r] / b[r] }' "$work/runs.tsv"
}
peer=2  # python DMatrix: the run a user would otherwise do

summary=$results/train-summary.md
{
  echo "Training benchmark: $ROWS x $FEATURES float32 ($data_mb MB), $ROUNDS rounds, hist, max_depth 6, $THREADS threads, $REPS reps"
  echo "($(nproc) cores; XGBoost $("$PY" -c 'import xgboost; print(xgboost.__version__)'); load average at the end: $(cut -d' ' -f1-3 /proc/loadavg))"
  echo
  echo "| run | wall s (median) | wall / python DMatrix (median of per-rep ratios) | CPU s (median) | CPU / python DMatrix | peak RSS MB (max) | peak RSS / data | same model as python DMatrix |"
  echo "|---|---:|---:|---:|---:|---:|---:|---|"
  for ((i = 0; i < ${#names[@]}; i++)); do
    wall=$(column "$i" 3 | median)
    wall_ratio=$(paired "$i" 3 | median)
    cpu=$(column "$i" 5 | median)
    cpu_ratio=$(paired "$i" 5 | median)
    rss=$(column "$i" 4 | awk '$1 > m { m = $1 } END { printf "%.0f", m * 1024 / 1e6 }')
    same=no
    if "$PY" "$work/same.py" "$(model_of "$i")" "$(model_of $peer)"; then same=yes; fi
    awk -v n="${names[$i]}" -v w="$wall" -v wr="$wall_ratio" -v c="$cpu" -v cr="$cpu_ratio" -v r="$rss" -v d="$data_mb" \
      -v s="$same" 'BEGIN { printf "| %s | %.2f | %.2f | %.2f | %.2f | %s | %.2f | %s |\n", n, w, wr, c, cr, r, r / d, s }'
  done
  echo
  printf 'trainrt on Parquet / trainrt on native shards (median of per-rep ratios): wall %.2f, CPU %.2f\n' \
    "$(paired 4 3 0 | median)" "$(paired 4 5 0 | median)"
  echo
  echo "Targets: trainrt wall <= 1.10 x python DMatrix; trainrt peak RSS <= 1.5 x the float32 data; Parquet <= 1.2 x native."
  echo "Every run (contender, rep, wall s, peak RSS KB, CPU s): bench/results/train-runs.tsv"
} | tee "$summary"
cp "$work/runs.tsv" "$results/train-runs.tsv"
