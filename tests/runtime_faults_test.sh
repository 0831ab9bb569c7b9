#!/usr/bin/env bash
# trainrt under faults (TAP):
#   - `datagen` killed with SIGKILL while a shard is half written, then run again with the same
#     flags, ends with the same files, byte for byte (sha256), as a run never interrupted (native
#     and Parquet); no partial shard is ever visible under its final name, no temporary file is left;
#   - storage that fails under datagen (the output folder removed mid-run, a file size limit making
#     writes fail, a full file system) ends with exit 1, a message naming the file, and no
#     _trainrt_table.json: never a silently short table;
#   - train and inspect refuse a short table (a listed shard missing, a shard truncated, a shard
#     missing with no table description) and corrupt, truncated or foreign shards, naming the file
#     and the byte offset;
#   - a broken _trainrt_table.json (missing fields, wrong types, negative or huge numbers) is
#     refused by inspect and train, naming the file and the field;
#   - library errors (XGBoost, the file system) reach the user as a sentence, with the library's
#     text as detail.
# The full-file-system case mounts a 1 MiB tmpfs and is skipped where mounting is not allowed.
# Usage: tests/runtime_faults_test.sh TRAINRT TRAINC
set -uo pipefail
# shellcheck source=tests/tap.sh
. "$(dirname "${BASH_SOURCE[0]}")/tap.sh"
tap_init_trainrt "$@"
rc=0  # exit code of the last run() (tests/tap.sh)

# Fails, showing the output, unless the last run() exited with $1 and its stderr matches every
# extended regex that follows.
expect() {
  local want=$1 re
  shift
  if [ "$rc" -ne "$want" ]; then
    echo "exit $rc (expected $want); stderr:"
    head -n 20 "$TMP/stderr"
    return 1
  fi
  for re in "$@"; do
    if ! grep -qE -- "$re" "$TMP/stderr"; then
      echo "stderr lacks /$re/:"
      head -n 20 "$TMP/stderr"
      return 1
    fi
  done
  if grep -q 'json.exception\|terminate called\|what():' "$TMP/stderr"; then
    echo "a raw library message or an abort:"
    cat "$TMP/stderr"
    return 1
  fi
}

# Prints "sha256  name" for every file under DIR (hidden ones too), sorted by name.
digests() { (cd "$1" && find . -type f -printf '%P\n' | LC_ALL=C sort | xargs -r -d '\n' sha256sum); }

# ---- killed mid-shard, restarted: the same bytes -------------------------------------------------

# Two shards of ~63 MB: a Parquet shard holds two row groups (~32 MiB each), so its temporary file
# exists while the second one is generated.
BIG=(--rows 1500000 --features 20 --shards 2 --seed 5 --threads 2 --quiet)

# Starts datagen FORMAT into DIR, waits until the second shard's temporary file has data in it
# (the first shard is complete, the second half written), and kills the process with SIGKILL.
kill_mid_shard() {
  local format=$1 dir=$2 pid tmpfile i
  tmpfile="$dir/.part-00001-of-00002.$([ "$format" = parquet ] && echo parquet || echo trs).tmp"
  "$TRAINRT" datagen "${BIG[@]}" --format "$format" --out "$dir" &
  pid=$!
  for ((i = 0; i < 6000; i++)); do
    if [ -s "$tmpfile" ]; then
      kill -KILL "$pid"
      wait "$pid" 2>/dev/null
      echo "killed with $(stat -c %s "$tmpfile") bytes in $(basename "$tmpfile")"
      return 0
    fi
    if ! kill -0 "$pid" 2>/dev/null; then break; fi
    sleep 0.01
  done
  kill -KILL "$pid" 2>/dev/null
  wait "$pid" 2>/dev/null
  echo "never saw $tmpfile with data in it before the run ended"
  return 1
}

check_kill_restart() {
  local format=$1 clean=$TMP/clean-$1 killed=$TMP/killed-$1 name
  "$TRAINRT" datagen "${BIG[@]}" --format "$format" --out "$clean" || { echo "the clean run failed"; return 1; }
  digests "$clean" >"$TMP/clean.sha"
  kill_mid_shard "$format" "$killed" || return 1
  # Nothing half written under a final name: the second shard is absent, the table is not done.
  for name in part-00001-of-00002 _trainrt_table.json; do
    if compgen -G "$killed/$name*" >/dev/null; then echo "after the kill: $name exists"; ls -la "$killed"; return 1; fi
  done
  run "$TRAINRT" datagen "${BIG[@]:0:${#BIG[@]}-1}" --format "$format" --out "$killed"
  expect 0 'part-00000-of-00002\.[a-z]+ is complete; skipped' || return 1
  digests "$killed" >"$TMP/killed.sha"
  if ! diff -u "$TMP/clean.sha" "$TMP/killed.sha"; then echo "the restarted run's files differ"; return 1; fi
  echo "same sha256 for: $(awk '{ print $2 }' "$TMP/killed.sha" | paste -sd' ' -)"
  rm -rf "$clean" "$killed"
}
t "native: datagen killed (SIGKILL) mid-shard and restarted ends byte-identical to a clean run" check_kill_restart native
t "Parquet: datagen killed (SIGKILL) mid-shard and restarted ends byte-identical to a clean run" \
  check_kill_restart parquet

# ---- storage that fails under datagen ------------------------------------------------------------

# No table description and no temporary file may be left in DIR.
no_table_left() {
  if [ -e "$1/_trainrt_table.json" ]; then echo "$1/_trainrt_table.json was written"; return 1; fi
  if compgen -G "$1/.part-*.tmp" >/dev/null; then echo "temporary files left:"; ls -la "$1"; return 1; fi
}

check_folder_removed() {
  local dir=$TMP/vanish pid i
  "$TRAINRT" datagen "${BIG[@]}" --out "$dir" >"$TMP/stdout" 2>"$TMP/stderr" &
  pid=$!
  for ((i = 0; i < 6000; i++)); do
    if compgen -G "$dir/.part-*.tmp" >/dev/null; then break; fi
    sleep 0.01
  done
  for ((i = 0; i < 100; i++)); do
    rm -rf "$dir" 2>/dev/null
    [ -e "$dir" ] || break
  done
  rc=0
  wait "$pid" || rc=$?
  expect 1 'writing the table in .*vanish failed' 'No such file or directory' 'run the same command again' || return 1
  [ ! -e "$dir/_trainrt_table.json" ] || { echo "a table description appeared"; return 1; }
}
t "datagen: the output folder removed mid-run: exit 1 naming the file, no table" check_folder_removed

# Writes fail with EFBIG past 2 MiB (RLIMIT_FSIZE, SIGXFSZ ignored): what a full or failing disk does.
check_write_fails() {
  local format=$1 dir=$TMP/fsize-$1
  mkdir -p "$dir"
  # shellcheck disable=SC2016  # the inner shell expands "$@"
  run bash -c 'trap "" XFSZ; ulimit -f 2048; exec "$@"' _ "$TRAINRT" datagen --rows 100000 --features 20 --shards 2 \
    --format "$format" --quiet --out "$dir"
  expect 1 "cannot write .*\.part-00000-of-00002\.[a-z]+\.tmp \(at byte [0-9]+\): File too large" \
    'The table is not complete' || return 1
  no_table_left "$dir"
}
t "datagen native: a failing write (EFBIG) exits 1 naming the file and offset, leaves no table" check_write_fails native
t "datagen Parquet: a failing write (EFBIG) exits 1 naming the file and offset, leaves no table" \
  check_write_fails parquet

# A 1 MiB tmpfs: ENOSPC for real (root only; skipped where mounting is not allowed).
check_full_disk() {
  local mnt=$TMP/full
  mkdir -p "$mnt"
  if ! mount -t tmpfs -o size=1m tmpfs "$mnt" 2>/dev/null; then
    echo "SKIP"
    return 0
  fi
  run "$TRAINRT" datagen --rows 100000 --features 20 --shards 2 --quiet --out "$mnt/table"
  local ok=0
  expect 1 'No space left on device' "part-00000-of-00002\.trs\.tmp" || ok=1
  no_table_left "$mnt/table" || ok=1
  umount "$mnt"
  return "$ok"
}
# t would hide the SKIP: run it by hand, printing TAP's skip directive.
full_out=$(check_full_disk 2>&1)
full_rc=$?
tap_n=$((tap_n + 1))
if [ "$full_out" = SKIP ]; then
  echo "ok $tap_n - datagen on a full file system (ENOSPC) # SKIP cannot mount a tmpfs here"
elif [ "$full_rc" -eq 0 ]; then
  echo "ok $tap_n - datagen on a full file system (ENOSPC): exit 1 naming the file, no table"
else
  tap_failed=$((tap_failed + 1))
  echo "not ok $tap_n - datagen on a full file system (ENOSPC): exit 1 naming the file, no table"
  printf '%s\n' "$full_out" | diag 40
fi

check_out_not_folder() {
  run "$TRAINRT" datagen --rows 1000 --features 5 --quiet --out /dev/null/table
  expect 1 '^trainrt datagen: cannot use the output folder /dev/null/table' '^  Check that the folder' || return 1
  grep -q 'filesystem error' "$TMP/stderr" && { echo "the library's phrasing leads:"; cat "$TMP/stderr"; return 1; }
  return 0
}
t "datagen: an output path that cannot be a folder gives a sentence, not a raw filesystem_error" check_out_not_folder

# ---- short, corrupt, truncated and foreign shards ------------------------------------------------

SMALL=(--rows 3000 --features 6 --shards 3 --seed 3 --quiet)
"$TRAINRT" datagen "${SMALL[@]}" --out "$TMP/native" || echo "Bail out! cannot write a native table"
"$TRAINRT" datagen "${SMALL[@]}" --format parquet --out "$TMP/parquet" || echo "Bail out! cannot write a Parquet table"
"$TRAINRT" datagen "${SMALL[@]:0:6}" --seed 4 --quiet --out "$TMP/other" || echo "Bail out! cannot write a second table"
"$TRAINRT" datagen "${SMALL[@]:0:6}" --seed 4 --quiet --format parquet --out "$TMP/other-parquet" ||
  echo "Bail out! cannot write a second Parquet table"
N1=part-00001-of-00003.trs
P1=part-00001-of-00003.parquet

# A fresh copy of table $1 in $TMP/case (the originals stay intact for the next case).
copy_table() { rm -rf "$TMP/case" && cp -a "$TMP/$1" "$TMP/case"; }
train() { "$TRAINRT" train --data "$TMP/case" --model-dir "$TMP/model-$RANDOM" --rounds 2 --threads 1 "$@"; }

check_listed_missing() {
  copy_table native && rm "$TMP/case/$N1"
  run train
  expect 1 "^trainrt train: .*_trainrt_table\.json: lists $N1, which is not in" || return 1
  run "$TRAINRT" inspect "$TMP/case"
  expect 1 "^trainrt inspect: .*$N1: missing, though _trainrt_table\.json lists it"
}
t "a shard listed in _trainrt_table.json is missing: train and inspect refuse, naming it" check_listed_missing

check_missing_no_description() {
  copy_table native && rm "$TMP/case/$N1" "$TMP/case/_trainrt_table.json"
  run train
  expect 1 "$N1: missing: .*part-00000-of-00003\.trs says the table has 3 shards, the folder holds 2" \
    'refusing to train on a short table'
}
t "a shard missing and no description: train refuses from the shards' headers, naming a file" \
  check_missing_no_description

check_truncated() {
  copy_table native && truncate -s 5000 "$TMP/case/$N1"
  run train
  expect 1 "$N1: the file is 5000 bytes but its header \(1000 rows x 6 features\) needs 28064" || return 1
  run "$TRAINRT" inspect "$TMP/case"
  expect 1 "$N1: file size 5000 does not match its header" || return 1
  copy_table parquet && truncate -s 20000 "$TMP/case/$P1"
  run "$TRAINRT" inspect "$TMP/case"
  expect 1 "$P1: no PAR1 magic at byte 19996 \(the end\): torn or not Parquet"
}
t "truncated native and Parquet shards are refused, naming the file and the byte" check_truncated

check_corrupt() {
  copy_table native && printf '\xa5' | dd of="$TMP/case/$N1" bs=1 seek=9000 conv=notrunc status=none
  run train
  expect 1 "$N1: payload checksum [0-9a-f]+ does not match" || return 1
  run "$TRAINRT" inspect "$TMP/case"
  expect 1 "$N1: payload checksum mismatch over bytes 64\.\.28064" || return 1
  copy_table native && printf 'XXXX' | dd of="$TMP/case/$N1" bs=1 seek=0 conv=notrunc status=none
  run train
  expect 1 "$N1: not a trainrt shard \(bad magic\)" || return 1
  run "$TRAINRT" inspect "$TMP/case"
  expect 1 "$N1: not a trainrt shard \(bad magic at byte 0\)" || return 1
  copy_table parquet && printf '\xa5' | dd of="$TMP/case/$P1" bs=1 seek=2000 conv=notrunc status=none
  run "$TRAINRT" inspect "$TMP/case"
  expect 1 "$P1: row group 0, column 'f[0-9]': page CRC mismatch \(corrupt data in bytes [0-9]+\.\.[0-9]+\)" || return 1
  copy_table parquet && printf 'PAR0' | dd of="$TMP/case/$P1" bs=1 seek=0 conv=notrunc status=none
  run "$TRAINRT" inspect "$TMP/case"
  expect 1 "$P1: no PAR1 magic at byte 0"
}
t "corrupt native and Parquet shards are refused, naming the file and the byte" check_corrupt

check_foreign() {
  copy_table native && cp "$TMP/other/$N1" "$TMP/case/$N1"
  run "$TRAINRT" inspect "$TMP/case"
  expect 1 "$N1: its header \(bytes 0\.\.64: .*seed 4\) does not match _trainrt_table\.json" || return 1
  copy_table parquet && cp "$TMP/other-parquet/$P1" "$TMP/case/$P1"
  run "$TRAINRT" inspect "$TMP/case"
  expect 1 "$P1: its footer \(bytes [0-9]+\.\.[0-9]+\) gives rows, columns or table fingerprint that do not match"
}
t "a shard of another table (same name, other seed) is refused, naming the file and where" check_foreign

# ---- _trainrt_table.json validated ---------------------------------------------------------------

# Rewrites $TMP/case/_trainrt_table.json with the jq-free edit PYTHON (on `j`), then expects inspect
# and train to exit 1 naming the file and the FIELD.
broken_description() {
  local field=$1 edit=$2
  copy_table native
  python3 - "$TMP/case/_trainrt_table.json" "$edit" <<'PY' || return 1
import json, sys
path, edit = sys.argv[1], sys.argv[2]
j = json.load(open(path))
exec(edit)
open(path, "w").write(json.dumps(j))
PY
  run "$TRAINRT" inspect "$TMP/case"
  expect 1 "_trainrt_table\.json: .*'$field'" || { echo "(inspect, after: $edit)"; return 1; }
  run train
  expect 1 "_trainrt_table\.json: .*'$field'" || { echo "(train, after: $edit)"; return 1; }
}

check_descriptions() {
  broken_description rows 'del j["rows"]' &&
    broken_description features 'j["features"] = "six"' &&
    broken_description features 'j["features"] = -6' &&
    broken_description features 'j["features"] = 4000000000' &&
    broken_description rows 'j["rows"] = 1e30' &&
    broken_description rows 'j["rows"] = 2999' &&
    broken_description files 'j["files"] = {}' &&
    broken_description 'files\[1\]\.rows' 'j["files"][1]["rows"] = -1000' &&
    broken_description 'files\[2\]\.name' 'j["files"][2]["name"] = "../x.trs"' &&
    broken_description 'files\[0\]\.name' 'j["files"][0]["name"] = 7' || return 1
  copy_table native && printf '{"rows": 3000, "features": ' >"$TMP/case/_trainrt_table.json"
  run "$TRAINRT" inspect "$TMP/case"
  expect 1 "_trainrt_table\.json: it is not valid JSON" || return 1
  run train
  expect 1 "_trainrt_table\.json: not valid JSON"
}
t "a broken _trainrt_table.json (missing field, wrong type, negative, huge, disagreeing) names file and field" \
  check_descriptions

check_inspect_only_fields() {
  local edit
  for edit in 'j["format"] = "csv"' 'j["shards"] = 9223372036854775807' 'j["seed"] = -1' 'j["trainrt_table"] = 2' \
    'j["files"][1]["first_row"] = 5'; do
    copy_table native
    python3 -c 'import json, sys; j = json.load(open(sys.argv[1])); exec(sys.argv[2]); json.dump(j, open(sys.argv[1], "w"))' \
      "$TMP/case/_trainrt_table.json" "$edit" || return 1
    run "$TRAINRT" inspect "$TMP/case"
    expect 1 "_trainrt_table\.json: field '[^']+' is .*(expected|says)" || { echo "(after: $edit)"; return 1; }
  done
}
t "inspect checks every field of _trainrt_table.json: format, shards, seed, version, first_row" check_inspect_only_fields

# ---- library errors as sentences -----------------------------------------------------------------

check_xgboost_wrapped() {
  copy_table native
  run train --param max_depth=deep
  expect 1 '^trainrt train: XGBoost refused to go on: .*max_depth' '^  If it names a parameter, fix that --param'
}
t "an XGBoost error reaches the user as a sentence with XGBoost's text as detail" check_xgboost_wrapped

check_model_dir_unusable() {
  copy_table native
  run "$TRAINRT" train --data "$TMP/case" --model-dir /dev/null/model --rounds 2
  expect 1 '^trainrt train: cannot use /dev/null/model' '^  Check that the folder' || return 1
  grep -q 'filesystem error' "$TMP/stderr" && { echo "the library's phrasing leads:"; cat "$TMP/stderr"; return 1; }
  return 0
}
t "train: a --model-dir that cannot be made gives a sentence naming it" check_model_dir_unusable

tap_done
