#!/usr/bin/env bash
# `trainrt train` on Parquet (TAP): one table written as native shards and as Parquet, by trainrt
# datagen and rewritten by DuckDB (npm @duckdb/node-api: default snappy, zstd, several row groups,
# PARQUET_VERSION V2's BYTE_STREAM_SPLIT and DELTA_BINARY_PACKED, DOUBLE/INT32/INT64 columns,
# dictionary-encoded columns, NULLs), trains to the same model.ubj bytes and the same metrics
# whichever format it came in (also with --eval-fraction, --dmatrix dense and two ranks on
# loopback); folders that cannot be trained on (a text or DECIMAL column, not Parquet, no label
# column, native and Parquet mixed, trainrt's Parquet shards without _trainrt_table.json and one
# missing) fail naming the file, the column and the construct.
# Usage: tests/runtime_parquet_train_test.sh TRAINRT TRAINC
set -uo pipefail
# shellcheck source=tests/tap.sh
. "$(dirname "${BASH_SOURCE[0]}")/tap.sh"
tap_init_trainrt "$@"
rc=0  # exit code of the last run() (tests/tap.sh)
export OMP_WAIT_POLICY=PASSIVE

TABLE=(--rows 24011 --features 12 --informative 4 --redundant 2 --seed 3 --shards 2 --quiet)
"$TRAINRT" datagen "${TABLE[@]}" --out "$TMP/native" &&
  "$TRAINRT" datagen "${TABLE[@]}" --format parquet --out "$TMP/pq" ||
  { echo "Bail out! datagen failed"; exit 1; }

FLAGS=(--rounds 8 --threads 2 --param objective=binary:logistic --param max_depth=5 --param seed=5)
# Trains on DIR ($1) into $TMP/model-NAME ($2) with the other arguments; the log is $TMP/model-NAME.log.
train_on() {
  local dir=$1 name=$2
  shift 2
  "$TRAINRT" train --data "$dir" --model-dir "$TMP/model-$name" "${FLAGS[@]}" "$@" 2>"$TMP/model-$name.log" ||
    { echo "train on $dir failed:"; cat "$TMP/model-$name.log"; return 1; }
}
# The metrics of every round, without timings.
metrics_of() { sed 's/.*"metrics":\({[^}]*}\).*/\1/' "$1/metrics.jsonl"; }
same_model() {
  cmp "$TMP/model-$1/model.ubj" "$TMP/model-$2/model.ubj" || return 1
  diff <(metrics_of "$TMP/model-$1") <(metrics_of "$TMP/model-$2") || return 1
}

train_on "$TMP/native" native
train_on "$TMP/native" native-eval --eval-fraction 0.15

check_trainrt_parquet() {
  train_on "$TMP/pq" pq && same_model native pq &&
    grep -q '2 Parquet file(s), 24011 x 12 float32' "$TMP/model-pq.log" ||
    { cat "$TMP/model-pq.log"; return 1; }
  train_on "$TMP/pq" pq-eval --eval-fraction 0.15 && same_model native-eval pq-eval &&
    grep -q '"eval-logloss"' "$TMP/model-pq-eval/metrics.jsonl" || return 1
  train_on "$TMP/native" native-dense --dmatrix dense --eval-fraction 0.15 &&
    train_on "$TMP/pq" pq-dense --dmatrix dense --eval-fraction 0.15 && same_model native-dense pq-dense &&
    grep -q 'loaded as a DMatrix' "$TMP/model-pq-dense.log"
}
t "trainrt-written Parquet trains to the same model and metrics as the native shards (--eval-fraction, --dmatrix dense)" \
  check_trainrt_parquet

# trainrt datagen --compression, where this build has it.
if "$TRAINRT" datagen --help 2>&1 | grep -q -- '--compression'; then
  check_trainrt_compressed() {
    local c
    for c in snappy zstd; do
      "$TRAINRT" datagen "${TABLE[@]}" --format parquet --compression "$c" --out "$TMP/pq-$c" &&
        train_on "$TMP/pq-$c" "pq-$c" && same_model native "pq-$c" || { echo "--compression $c"; return 1; }
    done
  }
  t "trainrt-written Parquet with --compression snappy and zstd trains to the same model" check_trainrt_compressed
else
  t_skip "trainrt-written compressed Parquet" "this trainrt datagen has no --compression"
fi

# Two ranks on loopback through XGBoost 1.7's Python tracker (runtime/train/tracker17.py): file i
# goes to rank i % 2 for Parquet as for native shards, and both tables train to the same model.
two_ranks() {
  local dir=$1 out=$2 portfile=$TMP/port.$RANDOM waited=0 tracker p0 p1 rc0 rc1
  /usr/bin/python3 runtime/train/tracker17.py --world-size 2 --port 0 --port-file "$portfile" --timeout 60 \
    2>"$portfile.log" &
  tracker=$!
  while [ ! -s "$portfile" ] && [ "$waited" -lt 500 ]; do sleep 0.02; waited=$((waited + 1)); done
  [ -s "$portfile" ] || { echo "tracker did not start:"; cat "$portfile.log"; kill "$tracker"; return 1; }
  local dist=(--data "$dir" "${FLAGS[@]}" --threads 1 --world-size 2 --tracker "127.0.0.1:$(cat "$portfile")"
              --init-timeout 30 --eval-fraction 0.1)
  "$TRAINRT" train "${dist[@]}" --rank 0 --model-dir "$out-r0" 2>"$out-r0.log" &
  p0=$!
  "$TRAINRT" train "${dist[@]}" --rank 1 --model-dir "$out-r1" 2>"$out-r1.log" &
  p1=$!
  wait "$p0"; rc0=$?
  wait "$p1"; rc1=$?
  kill "$tracker" 2>/dev/null; wait "$tracker" 2>/dev/null
  [ "$rc0 $rc1" = "0 0" ] || { echo "ranks exited $rc0 $rc1"; tail -n 5 "$out-r0.log" "$out-r1.log"; return 1; }
}
check_two_ranks() {
  two_ranks "$TMP/native" "$TMP/dist-native" && two_ranks "$TMP/pq" "$TMP/dist-pq" || return 1
  grep -q '1 Parquet file(s), 12006 x 12' "$TMP/dist-pq-r0.log" && grep -q '1 Parquet file(s), 12005 x 12' "$TMP/dist-pq-r1.log" ||
    { head -n 3 "$TMP/dist-pq-r0.log" "$TMP/dist-pq-r1.log"; return 1; }
  cmp "$TMP/dist-native-r0/model.ubj" "$TMP/dist-pq-r0/model.ubj" &&
    diff <(metrics_of "$TMP/dist-native-r0") <(metrics_of "$TMP/dist-pq-r0")
}
if /usr/bin/python3 -c 'import xgboost.tracker' 2>/dev/null; then
  t "2 ranks on loopback: each reads its Parquet file, the same model as from native shards" check_two_ranks
else
  t_skip "2 ranks on Parquet" "no xgboost.tracker (python3-xgboost)"
fi

check_errors() {
  mkdir -p "$TMP/junk" "$TMP/mixed" &&
    printf 'not a parquet file at all\n' >"$TMP/junk/part-0.parquet" &&
    cp "$TMP/pq"/part-*.parquet "$TMP/native"/part-*.trs "$TMP/mixed/" || return 1
  run "$TRAINRT" train --data "$TMP/junk" --model-dir "$TMP/m-junk" --rounds 1
  [ "$rc" -ne 0 ] && grep -q 'junk/part-0.parquet: .*not a Parquet file' "$TMP/stderr" || { cat "$TMP/stderr"; return 1; }
  run "$TRAINRT" train --data "$TMP/pq" --label target --model-dir "$TMP/m-nolabel" --rounds 1
  [ "$rc" -ne 0 ] && grep -q "part-00000-of-00002.parquet: no label column 'target' (its columns: f0, f1" "$TMP/stderr" &&
    grep -q -- '--label' "$TMP/stderr" || { cat "$TMP/stderr"; return 1; }
  run "$TRAINRT" train --data "$TMP/mixed" --model-dir "$TMP/m-mixed" --rounds 1
  [ "$rc" -ne 0 ] && grep -q 'both native shards' "$TMP/stderr" || { cat "$TMP/stderr"; return 1; }
  mkdir -p "$TMP/short" && cp "$TMP/pq/part-00001-of-00002.parquet" "$TMP/short/" || return 1
  run "$TRAINRT" train --data "$TMP/short" --model-dir "$TMP/m-short" --rounds 1
  [ "$rc" -ne 0 ] && grep -q 'short/part-00000-of-00002.parquet: missing: .* 2 shards, it holds 1' "$TMP/stderr" ||
    { cat "$TMP/stderr"; return 1; }
  run "$TRAINRT" train --data "$TMP/native" --label y --model-dir "$TMP/m-native-label" --rounds 1
  [ "$rc" -ne 0 ] && grep -q 'native shards, which carry their label' "$TMP/stderr" || { cat "$TMP/stderr"; return 1; }
}
t "unreadable folders fail naming the file and what is wrong: not Parquet, no label column, mixed formats, a missing shard, --label on native" \
  check_errors

# DuckDB from npm rewrites the table; installed once into a cache folder (as tests/runtime_datagen_test.sh
# does); skipped when npm or the registry is not reachable.
CACHE=${XDG_CACHE_HOME:-$HOME/.cache}/trainc-test-npm
duckdb_ready() {
  command -v node >/dev/null && command -v npm >/dev/null || return 1
  [ -d "$CACHE/node_modules/@duckdb/node-api" ] ||
    npm install --prefix "$CACHE" --no-audit --no-fund --silent @duckdb/node-api >/dev/null 2>&1
}
# Runs the SQL statements given as arguments, one by one, printing each result's rows as JSON.
duckdb() {
  local script=$CACHE/trainrt-parquet-train.mjs
  # The script sits in the cache folder so that Node resolves @duckdb/node-api from there.
  cat >"$script" <<'EOF'
import { DuckDBInstance } from '@duckdb/node-api';
const db = await DuckDBInstance.create(':memory:');
const con = await db.connect();
for (const sql of process.argv.slice(2)) {
  const r = await con.runAndReadAll(sql);
  console.log(JSON.stringify(r.getRows(), (k, v) => (typeof v === 'bigint' ? Number(v) : v)));
}
EOF
  (cd "$TMP" && node "$script" "$@")
}
# COPY (SELECT ... FROM the trainrt-written table) TO DIR/part-0.parquet WITH (OPTIONS).
copy_to() {
  local dir=$1 select=$2 options=${3:-FORMAT parquet}
  mkdir -p "$TMP/$dir" &&
    duckdb "COPY (SELECT $select FROM read_parquet('pq/*.parquet')) TO '$dir/part-0.parquet' ($options)" >/dev/null
}
# The encodings DuckDB used for column COL ($2) of DIR ($1), e.g. ["PLAIN_DICTIONARY"].
encodings_of() {
  duckdb "SELECT DISTINCT encodings FROM parquet_metadata('$1/*.parquet') WHERE path_in_schema = '$2'"
}
REST="f3, f4, f5, f6, f7, f8, f9, f10, f11"
HAVE_DUCKDB=0
if duckdb_ready; then HAVE_DUCKDB=1; fi
# t, or a skipped test when DuckDB is not there.
dt() {
  if [ "$HAVE_DUCKDB" = 1 ]; then
    t "$@"
  else
    t_skip "$1" "npm or @duckdb/node-api not available"
  fi
}

check_duckdb_codecs() {
  copy_to dd-snappy '*' && copy_to dd-zstd '*' 'FORMAT parquet, COMPRESSION zstd' &&
    copy_to dd-groups '*' 'FORMAT parquet, COMPRESSION zstd, ROW_GROUP_SIZE 3000' || return 1
  local groups
  groups=$(duckdb "SELECT count(DISTINCT row_group_id) > 2 FROM parquet_metadata('dd-groups/*.parquet')")
  [ "$groups" = '[[true]]' ] || { echo "row groups: $groups"; return 1; }
  train_on "$TMP/dd-snappy" dd-snappy && same_model native dd-snappy &&
    train_on "$TMP/dd-zstd" dd-zstd && same_model native dd-zstd &&
    train_on "$TMP/dd-groups" dd-groups && same_model native dd-groups
}
dt "DuckDB's Parquet (default snappy, zstd, several row groups) trains to the same model as the native shards" \
  check_duckdb_codecs

check_duckdb_v2() {
  # DuckDB's PARQUET_VERSION V2 means its newer encodings (data pages stay v1; the unit tests
  # cover v2 pages): BYTE_STREAM_SPLIT floats, DELTA_BINARY_PACKED integers.
  copy_to dd-v2 '*' 'FORMAT parquet, PARQUET_VERSION V2, COMPRESSION zstd' || return 1
  encodings_of dd-v2 f0 | grep -q BYTE_STREAM_SPLIT || { encodings_of dd-v2 f0; return 1; }
  train_on "$TMP/dd-v2" dd-v2 && same_model native dd-v2 || return 1
  copy_to dd-v2-ints "f0, round(f1 * 1000)::INTEGER AS f1, round(f2 * 1000)::BIGINT AS f2, $REST, label" \
    'FORMAT parquet, PARQUET_VERSION V2' &&
    copy_to dd-v2-floats "f0, (round(f1 * 1000) + 0)::FLOAT AS f1, (round(f2 * 1000) + 0)::FLOAT AS f2, $REST, label" ||
    return 1
  encodings_of dd-v2-ints f1 | grep -q DELTA_BINARY_PACKED || { encodings_of dd-v2-ints f1; return 1; }
  encodings_of dd-v2-ints f2 | grep -q DELTA_BINARY_PACKED || { encodings_of dd-v2-ints f2; return 1; }
  train_on "$TMP/dd-v2-ints" dd-v2-ints && train_on "$TMP/dd-v2-floats" dd-v2-floats && same_model dd-v2-floats dd-v2-ints
}
dt "DuckDB's PARQUET_VERSION V2 (BYTE_STREAM_SPLIT floats, DELTA_BINARY_PACKED integers, zstd) trains to the same model" \
  check_duckdb_v2

check_duckdb_types() {
  # DOUBLE, low-cardinality INT32 and INT64 (dictionary-encoded) columns and an INTEGER label named y,
  # against the same values as FLOAT with the label named label (+ 0: no -0.0, which DuckDB's
  # dictionaries fold into 0.0 in some row groups and not others).
  copy_to dd-types "f0::DOUBLE AS f0, round(f1 * 4)::INTEGER AS f1, round(f2 * 4)::BIGINT AS f2, $REST, label::INTEGER AS y" \
    'FORMAT parquet, ROW_GROUP_SIZE 5000' &&
    copy_to dd-floats "f0, (round(f1 * 4) + 0)::FLOAT AS f1, (round(f2 * 4) + 0)::FLOAT AS f2, $REST, label" || return 1
  local types
  types=$(duckdb "SELECT string_agg(type, ',' ORDER BY name) FROM parquet_schema('dd-types/part-0.parquet') WHERE name IN ('f0', 'f1', 'f2', 'y')")
  [ "$types" = '[["DOUBLE,INT32,INT64,INT32"]]' ] || { echo "types: $types"; return 1; }
  encodings_of dd-types f1 | grep -q DICTIONARY || { encodings_of dd-types f1; return 1; }
  encodings_of dd-types f2 | grep -q DICTIONARY || { encodings_of dd-types f2; return 1; }
  train_on "$TMP/dd-types" dd-types --label y && train_on "$TMP/dd-floats" dd-floats && same_model dd-floats dd-types
}
dt "DOUBLE, dictionary-encoded INT32 and INT64 columns and an INTEGER label (--label y) train as their float values" \
  check_duckdb_types

check_duckdb_nulls() {
  # NULLs (definition levels) must read as the missing value, like NaN written as a value.
  copy_to dd-nulls "CASE WHEN f0 > 1 THEN NULL ELSE f0 END AS f0, f1, CASE WHEN f2 < 0 THEN NULL ELSE f2 END AS f2, $REST, label" &&
    copy_to dd-nan "CASE WHEN f0 > 1 THEN 'NaN'::FLOAT ELSE f0 END AS f0, f1, CASE WHEN f2 < 0 THEN 'NaN'::FLOAT ELSE f2 END AS f2, $REST, label" ||
    return 1
  local nulls
  nulls=$(duckdb "SELECT count(*) > 1000 FROM read_parquet('dd-nulls/*.parquet') WHERE f0 IS NULL OR f2 IS NULL")
  [ "$nulls" = '[[true]]' ] || { echo "nulls: $nulls"; return 1; }
  train_on "$TMP/dd-nulls" dd-nulls && train_on "$TMP/dd-nan" dd-nan && same_model dd-nan dd-nulls &&
    ! cmp -s "$TMP/model-dd-nulls/model.ubj" "$TMP/model-native/model.ubj"
}
dt "NULLs train as missing values (the same model as NaN in their place)" check_duckdb_nulls

check_duckdb_eval_split() {
  # One DuckDB file per native shard, in row groups the held-out rows cut through.
  local i
  mkdir -p "$TMP/dd-eval" || return 1
  for i in 0 1; do
    duckdb "COPY (SELECT * FROM read_parquet('pq/part-0000$i-of-00002.parquet')) TO 'dd-eval/part-$i.parquet' (FORMAT parquet, ROW_GROUP_SIZE 2048)" >/dev/null ||
      return 1
  done
  train_on "$TMP/dd-eval" dd-eval --eval-fraction 0.15 && same_model native-eval dd-eval
}
dt "--eval-fraction holds out the same rows of each file, through row groups" check_duckdb_eval_split

check_duckdb_unsupported() {
  copy_to dd-text "f0, 'row ' || f1::VARCHAR AS name, label" || return 1
  run "$TRAINRT" train --data "$TMP/dd-text" --model-dir "$TMP/m-text" --rounds 1
  [ "$rc" -ne 0 ] && grep -q "dd-text/part-0.parquet: unsupported column type: column 'name' is BYTE_ARRAY" "$TMP/stderr" ||
    { cat "$TMP/stderr"; return 1; }
  copy_to dd-decimal "f0, f1::DECIMAL(9, 3) AS d, label" || return 1
  run "$TRAINRT" train --data "$TMP/dd-decimal" --model-dir "$TMP/m-decimal" --rounds 1
  [ "$rc" -ne 0 ] && grep -q "column 'd' has .*DECIMAL" "$TMP/stderr" || { cat "$TMP/stderr"; return 1; }
}
dt "a text or DECIMAL column fails naming the file, the column and its type" check_duckdb_unsupported

tap_done
