#!/usr/bin/env bash
# CLI tests (TAP): exit codes, `schema`, missing files, the overwrite guard, JSON diagnostics, and
# `check` writing nothing. The example and the error case used are picked by globbing.
# Usage: tests/cli_test.sh TRAINC
set -uo pipefail
# shellcheck source=tests/tap.sh
. "$(dirname "${BASH_SOURCE[0]}")/tap.sh"
tap_init "$@"
rc=0  # exit code of the last run() (tests/tap.sh)

expect_exit() {
  local want=$1
  shift
  run "$TRAINC" "$@"
  if [ "$rc" -ne "$want" ]; then
    echo "trainc $* exited $rc (expected $want)"
    echo "stdout:"; head -n 10 "$TMP/stdout"
    echo "stderr:"; head -n 10 "$TMP/stderr"
    return 1
  fi
}

check_prints() {
  expect_exit 0 "$@" || return 1
  if [ ! -s "$TMP/stdout" ]; then echo "trainc $* printed nothing on stdout"; return 1; fi
}

check_schema() {
  expect_exit 0 schema || return 1
  if ! python3 -m json.tool "$TMP/stdout" >/dev/null; then echo "trainc schema does not print valid JSON"; return 1; fi
  if [ ! -f schemas/trainc.v1.schema.json ]; then echo "schemas/trainc.v1.schema.json is missing"; return 1; fi
  python3 - "$TMP/stdout" schemas/trainc.v1.schema.json <<'PY'
import json, sys
printed, committed = (json.load(open(p)) for p in sys.argv[1:3])
if printed != committed:
    sys.exit("trainc schema differs from schemas/trainc.v1.schema.json (parsed JSON compared)")
PY
}

check_missing_spec() {
  local missing="$TMP/no-such-dir/no-such-spec.yaml"
  expect_exit 2 check "$missing" || return 1
  if ! grep -qF "no-such-spec.yaml" "$TMP/stderr"; then
    echo "stderr does not name the missing file:"; head -n 10 "$TMP/stderr"; return 1
  fi
}

check_refuses_foreign_folder() {
  local spec=$1 name=$2 out
  out=$(mktemp -d "$TMP/foreign.XXXX")
  mkdir "$out/$name"
  echo "written by a user" >"$out/$name/user-file"
  expect_exit 2 compile "$spec" -o "$out" || return 1
  if [ "$(ls -A "$out/$name")" != "user-file" ] || [ "$(cat "$out/$name/user-file")" != "written by a user" ]; then
    echo "trainc changed a folder it did not create:"; (cd "$out" && find . | sort); return 1
  fi
  if [ ! -s "$TMP/stderr" ]; then echo "trainc refused silently (nothing on stderr)"; return 1; fi
}

check_recompile() {
  local spec=$1 name=$2 out
  out=$(mktemp -d "$TMP/again.XXXX")
  expect_exit 0 compile "$spec" -o "$out" || return 1
  expect_exit 0 compile "$spec" -o "$out" || { echo "(second compile over its own output)"; return 1; }
  if [ ! -f "$out/$name/.trainc-manifest" ]; then echo "$out/$name/.trainc-manifest is missing"; return 1; fi
}

check_json_diagnostics() {
  local spec=$1
  expect_exit 1 --diagnostics=json check "$spec" || return 1
  python3 - "$TMP/stderr" <<'PY'
import json, sys
text = open(sys.argv[1]).read()
try:
    doc = json.loads(text)
except ValueError:
    try:  # one JSON object a line
        doc = [json.loads(line) for line in text.splitlines() if line.strip()]
    except ValueError as e:
        sys.exit(f"stderr is neither JSON nor JSON Lines ({e}):\n{text[:800]}")
if isinstance(doc, dict):
    doc = doc.get("diagnostics", [doc])
if not isinstance(doc, list) or not doc:
    sys.exit(f"no diagnostics found in:\n{text[:800]}")
for d in doc:
    missing = [k for k in ("file", "line", "column", "path", "message") if not isinstance(d, dict) or k not in d]
    if missing:
        sys.exit(f"diagnostic lacks {', '.join(missing)}: {json.dumps(d)[:400]}")
    if not isinstance(d["line"], int) or not isinstance(d["column"], int):
        sys.exit(f"line and column must be integers: {json.dumps(d)[:400]}")
PY
}

check_check_writes_nothing() {
  local spec=$1 root=$PWD cwd marker changed
  cwd=$(mktemp -d "$TMP/cwd.XXXX")
  marker="$TMP/marker"
  touch "$marker"
  sleep 0.01
  rc=0
  (cd "$cwd" && "$TRAINC" check "$root/$spec" >"$TMP/stdout" 2>"$TMP/stderr") || rc=$?
  if [ "$rc" -ne 0 ]; then echo "trainc check $spec exited $rc:"; head -n 20 "$TMP/stderr"; return 1; fi
  if [ -n "$(ls -A "$cwd")" ]; then echo "trainc check wrote into its working folder:"; ls -A "$cwd"; return 1; fi
  changed=$(find . \( -path ./build -o -path ./out -o -path ./.git \) -prune -o -newer "$marker" -print | head -n 20)
  if [ -n "$changed" ]; then echo "files in the repo changed during trainc check:"; printf '%s\n' "$changed"; return 1; fi
}

check_same_system_twice() {
  local spec=$1 copy="$TMP/twin/${1##*/}"
  cp -r "$(dirname "$spec")" "$TMP/twin"  # the whole folder, for any local imports
  expect_exit 1 check "$spec" "$copy" || return 1
  if ! grep -qF "is also defined by '$spec'" "$TMP/stderr"; then
    echo "stderr does not name the first spec:"; head -n 10 "$TMP/stderr"; return 1
  fi
}

t "--version exits 0 and prints a version" check_prints --version
t "--help exits 0 and prints usage" check_prints --help
t "no arguments exits 2" expect_exit 2
t "an unknown subcommand exits 2" expect_exit 2 no-such-subcommand
t "schema prints schemas/trainc.v1.schema.json" check_schema
t "a missing spec file exits 2 and names the file" check_missing_spec

example=""
for dir in examples/*/; do
  if example=$(primary_spec "${dir%/}"); then break; fi
done
if [ -n "$example" ]; then
  name=$(basename "$(dirname "$example")")
  t "compile refuses to overwrite a folder it did not create ($name)" check_refuses_foreign_folder "$example" "$name"
  t "compile over its own previous output succeeds ($name)" check_recompile "$example" "$name"
  t "check on a valid example exits 0 and writes nothing ($example)" check_check_writes_nothing "$example"
  t "two specs of one system exit 1 and name the first ($example)" check_same_system_twice "$example"
else
  t_fail "an example to run the CLI tests on" "no examples/*/spec.yaml or spec.jsonnet found"
fi

error_spec=""
while read -r dir; do
  if [ "$(case_expected_exit "$dir")" = 1 ] && error_spec=$(case_spec "$dir" 2>/dev/null); then break; fi
  error_spec=""
done < <(error_cases)
if [ -n "$error_spec" ]; then
  t "--diagnostics=json gives file/line/column/path/message on stderr ($error_spec)" check_json_diagnostics "$error_spec"
else
  t_fail "an error case to test --diagnostics=json on" "no tests/errors/<case> with exit code 1 found"
fi

# Spec text that is not UTF-8 still gives JSON diagnostics (invalid bytes replaced), not a crash.
printf 'apiVersion: trainc/v1\nkind: TrainingSystem\nname: x\377\376\npipeline: []\n' >"$TMP/latin1.yaml"
t "--diagnostics=json on a spec that is not UTF-8 exits 1 with JSON" check_json_diagnostics "$TMP/latin1.yaml"

tap_done
