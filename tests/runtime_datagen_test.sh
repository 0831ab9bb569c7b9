#!/usr/bin/env bash
# `trainrt datagen` and `trainrt inspect` end to end (TAP):
#   the same seed gives the same `inspect` text for native and Parquet, 1 shard or 7, any --threads,
#   all shards at once or one --shard-index at a time, and `datagen --dry-run` prints it too;
#   a rerun skips complete shards (untouched: same mtime) and regenerates deleted, corrupt and torn ones;
#   inspect names a corrupt shard and exits 1; another table's parameters in the same folder exit 1;
#   DuckDB (npm @duckdb/node-api, installed into a cache folder) reads the Parquet shards back with
#   the same row count, sums, minima and maxima; --device cuda gives the CPU's bits on a GPU and exits 3
#   without one (the comparison then SKIPs); bad flags exit 2.
# Usage: tests/runtime_datagen_test.sh TRAINRT TRAINC
set -uo pipefail
# shellcheck source=tests/tap.sh
. "$(dirname "${BASH_SOURCE[0]}")/tap.sh"
tap_init_trainrt "$@"
rc=0  # exit code of the last run() (tests/tap.sh)

# One table, many ways of making it: the flags that define it, then per-run extras.
TABLE=(--rows 30011 --features 17 --informative 4 --redundant 3 --repeated 2 --classes 3
       --weights '0.5,0.3' --flip-y 0.03 --seed 7)
gen() { "$TRAINRT" datagen "${TABLE[@]}" --quiet "$@"; }

# Generates into DIR ($1) with the other arguments and saves `inspect --stats` as DIR.inspect.
gen_inspect() {
  local dir=$1
  shift
  gen --out "$dir" "$@" || { echo "datagen $* failed"; return 1; }
  "$TRAINRT" inspect --stats "$dir" >"$dir.inspect" || { echo "inspect $dir failed"; return 1; }
}

same_text() {
  if ! diff -u "$1" "$2"; then return 1; fi
}

check_invariance() {
  gen_inspect "$TMP/n1" --shards 1 --threads 1 &&
    gen_inspect "$TMP/n7" --shards 7 --threads 3 &&
    gen_inspect "$TMP/p7" --shards 7 --format parquet --threads 2 &&
    gen_inspect "$TMP/p1" --shards 1 --format parquet &&
    same_text "$TMP/n1.inspect" "$TMP/n7.inspect" &&
    same_text "$TMP/n1.inspect" "$TMP/p7.inspect" &&
    same_text "$TMP/n1.inspect" "$TMP/p1.inspect" &&
    grep -qx 'rows: 30011' "$TMP/n1.inspect" &&
    grep -qx 'columns: 18 (17 features + label)' "$TMP/n1.inspect" &&
    [ "$(find "$TMP/n7" -name 'part-*-of-00007.trs' | wc -l)" -eq 7 ] &&
    [ "$(find "$TMP/p7" -name 'part-*-of-00007.parquet' | wc -l)" -eq 7 ]
}
t "inspect is the same for native and Parquet, 1 and 7 shards, 1-3 threads" check_invariance

check_dry_run() {
  "$TRAINRT" datagen "${TABLE[@]}" --dry-run --quiet --out "$TMP/dry" >"$TMP/dry.out" || return 1
  [ ! -e "$TMP/dry" ] || { echo "--dry-run created $TMP/dry"; return 1; }
  "$TRAINRT" inspect "$TMP/n7" >"$TMP/n7.plain" && same_text "$TMP/n7.plain" "$TMP/dry.out"
}
t "--dry-run prints what inspect prints for the written table, and writes nothing" check_dry_run

check_shard_index() {
  local i
  for i in 2 0 1; do
    gen --out "$TMP/idx" --shards 3 --shard-index "$i" || return 1
    if [ "$i" != 1 ] && [ -e "$TMP/idx/_trainrt_table.json" ]; then
      echo "_trainrt_table.json written before every shard was there"
      return 1
    fi
  done
  "$TRAINRT" inspect --stats "$TMP/idx" >"$TMP/idx.inspect" && same_text "$TMP/n1.inspect" "$TMP/idx.inspect"
}
t "one --shard-index at a time: metadata written by the last, same table" check_shard_index

# Byte flip in the middle of FILE ($1) at offset $2.
flip_byte() {
  printf '\xa5' | dd of="$1" bs=1 seek="$2" conv=notrunc status=none
}
mtime() { stat -c %y "$1"; }

# Fails, showing the output, unless the last run() exited with $1 and FILE $2 (stdout or stderr
# of that run) has a line matching the regex $3.
expect() {
  if [ "$rc" -ne "$1" ] || ! grep -qE "$3" "$TMP/$2"; then
    echo "exit $rc (expected $1), $2 lacks /$3/:"
    head -n 20 "$TMP/stdout" "$TMP/stderr"
    return 1
  fi
}

check_restart() {
  local dir=$TMP/restart s
  gen_inspect "$dir" --shards 5 || return 1
  declare -A before
  for s in 0 2 4; do before[$s]=$(mtime "$dir/part-0000$s-of-00005.trs"); done
  rm "$dir/part-00001-of-00005.trs"
  flip_byte "$dir/part-00003-of-00005.trs" 5000
  echo junk >"$dir/.part-00004-of-00005.trs.tmp"  # left by a killed run
  run "$TRAINRT" inspect "$dir"
  expect 1 stderr 'part-00001-of-00005.trs: missing' || return 1
  run "$TRAINRT" datagen "${TABLE[@]}" --out "$dir" --shards 5
  expect 0 stderr 'part-00003-of-00005.trs is incomplete or damaged' || return 1
  expect 0 stderr 'part-00000-of-00005.trs is complete; skipped' || return 1
  for s in 0 2 4; do
    if [ "${before[$s]}" != "$(mtime "$dir/part-0000$s-of-00005.trs")" ]; then
      echo "complete shard $s was rewritten"
      return 1
    fi
  done
  [ ! -e "$dir/.part-00004-of-00005.trs.tmp" ] || { echo "stale temporary file left behind"; return 1; }
  "$TRAINRT" inspect --stats "$dir" >"$dir.after" && same_text "$dir.inspect" "$dir.after"
}
t "rerun: complete shards skipped (same mtime), deleted and corrupt ones regenerated, same table" check_restart

check_corrupt_named() {
  local dir=$TMP/corrupt
  gen --out "$dir" --shards 3 || return 1
  flip_byte "$dir/part-00002-of-00003.trs" 3000
  run "$TRAINRT" inspect "$dir"
  expect 1 stderr 'part-00002-of-00003.trs: payload checksum mismatch' 
}
t "inspect names a corrupt native shard and exits 1" check_corrupt_named

check_parquet_torn() {
  local dir=$TMP/ptorn size
  gen_inspect "$dir" --shards 3 --format parquet || return 1
  size=$(stat -c %s "$dir/part-00001-of-00003.parquet")
  truncate -s $((size - 100)) "$dir/part-00001-of-00003.parquet"
  flip_byte "$dir/part-00002-of-00003.parquet" 2000
  run "$TRAINRT" inspect "$dir"
  expect 1 stderr 'part-00001-of-00003.parquet' || return 1
  gen --out "$dir" --shards 3 --format parquet || return 1
  # The flipped byte is inside a page: the footer still checks out, so the rerun keeps that shard
  # (it checks footers, not data) and inspect, which checks page CRCs, names it.
  run "$TRAINRT" inspect "$dir"
  expect 1 stderr 'part-00002-of-00003.parquet.*CRC' || return 1
  rm "$dir/part-00002-of-00003.parquet"
  gen --out "$dir" --shards 3 --format parquet || return 1
  "$TRAINRT" inspect --stats "$dir" >"$dir.after" && same_text "$dir.inspect" "$dir.after"
}
t "Parquet: a torn shard is regenerated; a page CRC mismatch is named by inspect" check_parquet_torn

check_other_table() {
  local n=${#TABLE[@]}
  run "$TRAINRT" datagen "${TABLE[@]:0:n-2}" --seed 8 --out "$TMP/n1" --shards 1 --quiet  # TABLE ends with --seed 7
  expect 1 stderr 'already holds a different table \(seed: 8 here, 7 there\)' 
}
t "a folder holding another table is refused (exit 1)" check_other_table

check_progress() {
  run "$TRAINRT" datagen "${TABLE[@]}" --out "$TMP/progress" --shards 2
  expect 0 stderr '^datagen: part-00001-of-00002.trs written; 2/2 shards' || return 1
  expect 0 stderr '^datagen: done: ' || return 1
  run "$TRAINRT" datagen "${TABLE[@]}" --out "$TMP/progress-quiet" --shards 2 --quiet
  if [ "$rc" -ne 0 ] || [ -s "$TMP/stderr" ] || [ -s "$TMP/stdout" ]; then
    echo "--quiet: exit $rc, printed: $(cat "$TMP/stdout" "$TMP/stderr")"
    return 1
  fi
}
t "progress on stderr; nothing with --quiet" check_progress

check_size_and_regression() {
  "$TRAINRT" datagen --size 1MB --features 9 --task regression --noise 0.5 --bias 3 --seed 1 \
    --out "$TMP/reg" --quiet || return 1
  run "$TRAINRT" inspect "$TMP/reg"
  expect 0 stdout '^rows: 25000$' 
}
t "--size 1MB of 9 features + label is 25000 rows; regression tables inspect" check_size_and_regression

# Whether trainrt has the CUDA kernel, as `trainrt --version` reports it: yes, no, or unknown.
kernel=$("$TRAINRT" --version 2>/dev/null | sed -n 's/^cuda kernel (datagen --device cuda): \(yes\|no\)$/\1/p')
kernel=${kernel:-unknown}
# Where a build must have CUDA (.ci/run, dev.sh's builds set TRAINC_REQUIRE_CUDA=1), one without it
# fails here rather than passing every suite on the CPU path alone.
check_required_cuda() {
  local v
  v=$("$TRAINRT" --version 2>&1) || { echo "trainrt --version failed: $v"; return 1; }
  printf '%s\n' "$v" | grep -qx 'cuda kernel (datagen --device cuda): yes' &&
    printf '%s\n' "$v" | grep -qx 'cuda runtime + nccl (preflight): yes' || {
    echo "TRAINC_REQUIRE_CUDA=1, but this trainrt was built without CUDA (meson found no nvcc, cudart or NCCL;"
    echo "tools/install-python.sh installs them, dev.sh builds with its 'cuda' folder):"
    printf '%s\n' "$v"
    return 1
  }
}
if [ "${TRAINC_REQUIRE_CUDA:-0}" = 1 ]; then
  t "the build has the CUDA kernel, the CUDA runtime and NCCL (TRAINC_REQUIRE_CUDA=1)" check_required_cuda
fi
# Without a usable GPU: exit 3, nothing written, and, in a build without the kernel, that it is missing.
check_cuda() {
  run "$TRAINRT" datagen "${TABLE[@]}" --out "$TMP/cuda" --device cuda
  expect 3 stderr '^trainrt datagen: --device cuda needs a usable GPU: ' || return 1
  if [ "$kernel" = no ]; then
    expect 3 stderr 'needs a usable GPU: this trainrt was built without CUDA \(' || return 1
  fi
  [ ! -e "$TMP/cuda/_trainrt_table.json" ] || { echo "wrote a table without a GPU"; return 1; }
}
# The CUDA kernel's table, bit for bit the CPU's: same inspect text (checksum over every value).
check_cuda_bits() {
  gen_inspect "$TMP/cuda" --shards 3 --device cuda && same_text "$TMP/n1.inspect" "$TMP/cuda.inspect"
}
if [ "$kernel" = unknown ]; then
  t_fail "trainrt --version says whether the CUDA kernel is built in" \
    "no 'cuda kernel (datagen --device cuda): yes|no' line in: $("$TRAINRT" --version 2>&1)"
elif "$TRAINRT" datagen --rows 16 --features 2 --quiet --dry-run --device cuda --out "$TMP/cuda-probe" >/dev/null 2>&1; then
  t "--device cuda: the GPU's table is the CPU's, bit for bit" check_cuda_bits
else
  t "--device cuda without a usable GPU exits 3 with a message (CUDA kernel built in: $kernel)" check_cuda
  tap_n=$((tap_n + 1))
  if [ "$kernel" = no ]; then
    echo "ok $tap_n - the GPU's table is the CPU's, bit for bit # SKIP trainrt was built without the CUDA kernel"
  else
    echo "ok $tap_n - the GPU's table is the CPU's, bit for bit # SKIP no usable CUDA GPU"
  fi
fi

check_usage() {
  local args
  for args in "--rows 10 --features 3 --informative 3 --redundant 1" "--rows 5 --shards 6" \
    "--size 6 tera" "--rows 10 --size 1GB" "--rows 100 --classes 8 --informative 2" "--rows 10 --weights 0.8,0.7" \
    "--rows 10 --format csv" "--rows 10 --shards 2 --shard-index 2" "--rows 10 --compression zstd" \
    "--rows 10 --format parquet --compression gzip" "--rows 10 --format parquet --compression zstandard"; do
    # shellcheck disable=SC2086  # word splitting of the flag set is intended
    run "$TRAINRT" datagen $args --out "$TMP/usage"
    if [ "$rc" -ne 2 ] || [ ! -s "$TMP/stderr" ]; then
      echo "datagen $args: exit $rc (expected 2 and a message)"
      return 1
    fi
  done
  # The last one: a near miss is named.
  grep -q "did you mean 'zstd'" "$TMP/stderr" || { cat "$TMP/stderr"; return 1; }
  [ ! -e "$TMP/usage" ] || { echo "a usage error created the output folder"; return 1; }
}
t "bad flags exit 2 with a message" check_usage

# DuckDB from npm reads the Parquet shards back. Installed once into a cache folder; skipped when
# npm or the registry is not reachable.
CACHE=${XDG_CACHE_HOME:-$HOME/.cache}/trainc-test-npm
duckdb_ready() {
  command -v node >/dev/null && command -v npm >/dev/null || return 1
  [ -d "$CACHE/node_modules/@duckdb/node-api" ] ||
    npm install --prefix "$CACHE" --no-audit --no-fund --silent @duckdb/node-api >/dev/null 2>&1
}

check_duckdb() {
  local script=$CACHE/trainrt-datagen-check.mjs
  # The script sits in the cache folder so that Node resolves @duckdb/node-api from there.
  cat >"$script" <<'EOF'
// Compares DuckDB's aggregates over DIR/*.parquet with `trainrt inspect --stats` output; with a
// third argument, also that every column chunk is compressed with that codec.
import { DuckDBInstance } from '@duckdb/node-api';
import { readFileSync } from 'node:fs';
const [dir, inspectFile, codec = 'uncompressed'] = process.argv.slice(2);
const want = {};
for (const line of readFileSync(inspectFile, 'utf8').split('\n')) {
  let m = line.match(/^rows: (\d+)$/);
  if (m) want.rows = Number(m[1]);
  m = line.match(/^(\w+): sum (\S+) min (\S+) max (\S+)$/);
  if (m) want[m[1]] = { sum: Number(m[2]), min: Number(m[3]), max: Number(m[4]) };
}
const cols = Object.keys(want).filter((k) => k !== 'rows');
const db = await DuckDBInstance.create(':memory:');
const con = await db.connect();
const sel = cols.map((c) => `sum("${c}")::DOUBLE, min("${c}")::DOUBLE, max("${c}")::DOUBLE`).join(', ');
const reader = await con.runAndReadAll(`SELECT count(*)::DOUBLE, ${sel} FROM read_parquet('${dir}/*.parquet')`);
const row = reader.getRows()[0].map(Number);
const types = await con.runAndReadAll(
  `SELECT DISTINCT type, repetition_type FROM parquet_schema('${dir}/*.parquet') WHERE name <> 'schema'`);
let bad = 0;
const fail = (msg) => { console.log(msg); bad++; };
if (JSON.stringify(types.getRows()) !== JSON.stringify([['FLOAT', 'REQUIRED']]))
  fail(`column types: ${JSON.stringify(types.getRows())}`);
if (row[0] !== want.rows) fail(`rows: duckdb ${row[0]}, trainrt ${want.rows}`);
const codecs = await con.runAndReadAll(`SELECT DISTINCT compression FROM parquet_metadata('${dir}/*.parquet')`);
if (JSON.stringify(codecs.getRows()) !== JSON.stringify([[codec.toUpperCase()]]))
  fail(`codecs: ${JSON.stringify(codecs.getRows())}, expected ${codec}`);
cols.forEach((c, i) => {
  const [sum, min, max] = row.slice(1 + 3 * i, 4 + 3 * i);
  const w = want[c];
  if (Math.abs(sum - w.sum) > 1e-6 * Math.max(1, Math.abs(w.sum))) fail(`${c}: sum ${sum} vs ${w.sum}`);
  if (Math.fround(min) !== Math.fround(w.min) || Math.fround(max) !== Math.fround(w.max))
    fail(`${c}: min/max ${min}/${max} vs ${w.min}/${w.max}`);
});
console.log(`duckdb: ${row[0]} rows, ${cols.length} columns compared`);
process.exit(bad ? 1 : 0);
EOF
  node "$script" "$TMP/p7" "$TMP/n1.inspect"
}

# Compressed shards: DuckDB reads the same values, and so does trainrt inspect (same text as the
# uncompressed table's), the codec is recorded in the table's metadata, and a rerun keeps them.
check_duckdb_compressed() {
  local codec
  for codec in snappy zstd; do
    gen_inspect "$TMP/p7-$codec" --shards 7 --format parquet --compression "$codec" --threads 2 || return 1
    node "$CACHE/trainrt-datagen-check.mjs" "$TMP/p7-$codec" "$TMP/n1.inspect" "$codec" || return 1
    same_text "$TMP/n1.inspect" "$TMP/p7-$codec.inspect" || return 1
    grep -q "\"compression\": \"$codec\"" "$TMP/p7-$codec/_trainrt_table.json" || {
      echo "no compression $codec in _trainrt_table.json"
      return 1
    }
    gen --out "$TMP/p7-$codec" --shards 7 --format parquet --compression "$codec" || return 1
    run gen --out "$TMP/p7-$codec" --shards 7 --format parquet
    [ "$rc" -eq 1 ] && grep -q compression "$TMP/stderr" || {
      echo "an uncompressed rerun into the $codec table: exit $rc"
      cat "$TMP/stderr"
      return 1
    }
  done
}
if duckdb_ready; then
  t "DuckDB reads the Parquet shards: same rows, sums, minima and maxima as trainrt inspect" check_duckdb
  t "--compression snappy and zstd: DuckDB and trainrt inspect read the uncompressed table's values" \
    check_duckdb_compressed
else
  t_skip "DuckDB reads the Parquet shards" "npm or @duckdb/node-api not available"
fi

tap_done
