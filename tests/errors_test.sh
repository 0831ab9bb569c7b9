#!/usr/bin/env bash
# Error-case tests (TAP): each tests/errors/<case>/ holds one spec.yaml or spec.jsonnet, a one-line
# README and expected.stderr (+ expected.exit when the exit code is not 1). `trainc check` run from
# the repo root must print exactly expected.stderr and exit as expected; `trainc compile` must write
# nothing. Usage: tests/errors_test.sh TRAINC
set -uo pipefail
# shellcheck source=tests/tap.sh
. "$(dirname "${BASH_SOURCE[0]}")/tap.sh"
tap_init "$@"
rc=0  # exit code of the last run() (tests/tap.sh)

MIN_CASES=15
HINT="if the new output is right, run ./dev.sh golden and review tests/errors/*/expected.stderr"

check_layout() {
  local dir=$1 ok=0
  case_spec "$dir" >/dev/null || ok=1
  if [ ! -s "$dir/README" ] && [ ! -s "$dir/README.md" ]; then echo "$dir: README is missing"; ok=1; fi
  return "$ok"
}

check_stderr() {
  local dir=$1 spec expected d
  spec=$(case_spec "$dir") || return 1
  expected=$(case_expected_exit "$dir")
  run "$TRAINC" check "$spec"
  local ok=0
  if [ "$rc" != "$expected" ]; then echo "trainc check $spec exited $rc (expected $expected)"; ok=1; fi
  if [ ! -f "$dir/expected.stderr" ]; then
    echo "$dir/expected.stderr is missing; $HINT"; ok=1
  elif ! d=$(diff -u --label "$dir/expected.stderr" --label "stderr" "$dir/expected.stderr" "$TMP/stderr"); then
    printf '%s\n' "$d" | head -n 40
    echo "$HINT"
    ok=1
  fi
  return "$ok"
}

check_compile_writes_nothing() {
  local dir=$1 spec expected out left
  spec=$(case_spec "$dir") || return 1
  expected=$(case_expected_exit "$dir")
  out=$(mktemp -d "$TMP/out.XXXX")
  run "$TRAINC" compile "$spec" -o "$out"
  local ok=0
  if [ "$rc" != "$expected" ]; then echo "trainc compile $spec exited $rc (expected $expected)"; ok=1; fi
  left=$(cd "$out" && find . -mindepth 1 | sort)
  if [ -n "$left" ]; then
    echo "trainc compile wrote into the output folder although the spec has errors:"
    printf '%s\n' "$left" | head -n 20
    ok=1
  fi
  return "$ok"
}

mapfile -t cases < <(error_cases)
if [ "${#cases[@]}" -ge "$MIN_CASES" ]; then
  t "at least $MIN_CASES error cases (found ${#cases[@]})" true
else
  t_fail "at least $MIN_CASES error cases (found ${#cases[@]})" "add cases under tests/errors/<case>/"
fi

for dir in "${cases[@]}"; do
  c=$(basename "$dir")
  t "$c: one spec and a README" check_layout "$dir"
  t "$c: check prints expected.stderr and exits as expected" check_stderr "$dir"
  t "$c: compile writes nothing" check_compile_writes_nothing "$dir"
done

tap_done
