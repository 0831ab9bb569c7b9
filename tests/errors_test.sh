#!/usr/bin/env bash
# Error-case tests (TAP): each tests/errors/<case>/ holds one spec.yaml or spec.jsonnet, a one-line
# README and expected.stderr (+ expected.exit when the exit code is not 1). `trainc check` run from
# the repo root must print exactly expected.stderr and exit as expected; `trainc compile` must write
# nothing. All the cases that exit 1 are also checked together, in one `trainc check`.
# Usage: tests/errors_test.sh TRAINC
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

# All the cases that exit 1, in ONE `trainc check` (the way a pre-commit hook passes every staged
# spec; trainc compiles them side by side on several threads): the same diagnostic lines as the
# cases one by one (compared as multisets, since the lines of all files are sorted together), and
# the sum of their error counts.
check_all_in_one() {
  local specs=() expected=0 dir spec n
  : >"$TMP/one-by-one"
  for dir in "${cases[@]}"; do
    [ "$(case_expected_exit "$dir")" = 1 ] || continue
    spec=$(case_spec "$dir") || return 1
    specs+=("$spec")
    n=$(grep -Ex '[0-9]+ errors?(, [0-9]+ warnings?)?' "$dir/expected.stderr" | grep -Eo '^[0-9]+')
    expected=$((expected + ${n:-0}))
    grep -Evx '[0-9]+ errors?(, [0-9]+ warnings?)?' "$dir/expected.stderr" >>"$TMP/one-by-one"
  done
  [ "${#specs[@]}" -ge "$MIN_CASES" ] || { echo "only ${#specs[@]} cases exit 1"; return 1; }
  run "$TRAINC" check "${specs[@]}"
  [ "$rc" = 1 ] || { echo "trainc check of ${#specs[@]} cases exited $rc (expected 1)"; head -n 20 "$TMP/stderr"; return 1; }
  grep -Eqx "$expected errors?(, [0-9]+ warnings?)?" "$TMP/stderr" ||
    { echo "expected $expected errors in all, got: $(tail -n 1 "$TMP/stderr")"; return 1; }
  local d
  if ! d=$(diff <(LC_ALL=C sort "$TMP/one-by-one") \
    <(grep -Evx '[0-9]+ errors?(, [0-9]+ warnings?)?' "$TMP/stderr" | LC_ALL=C sort)); then
    echo "the diagnostics of ${#specs[@]} cases in one check differ from the cases one by one (< alone, > together):"
    printf '%s\n' "$d" | head -n 40
    return 1
  fi
}
t "every case that exits 1, in one check: the same diagnostics as one by one" check_all_in_one

for dir in "${cases[@]}"; do
  c=$(basename "$dir")
  t "$c: one spec and a README" check_layout "$dir"
  t "$c: check prints expected.stderr and exits as expected" check_stderr "$dir"
  t "$c: compile writes nothing" check_compile_writes_nothing "$dir"
done

tap_done
