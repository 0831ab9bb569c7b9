#!/usr/bin/env bash
# Docs tests (TAP): docs/reference.md is the schema's field reference, docs/tutorial.md's commands
# print what it quotes, and every complete spec in docs/*.md and README.md (a block fenced ```yaml spec,
# which renders as YAML; tours of alternatives stay plain ```yaml) passes `trainc check`, so an
# example in the guide cannot drift from what trainc accepts. Usage: tests/docs_test.sh TRAINC
set -uo pipefail
# shellcheck source=tests/tap.sh
. "$(dirname "${BASH_SOURCE[0]}")/tap.sh"
tap_init "$@"
rc=0  # exit code of the last run() (tests/tap.sh)

check_spec() {
  run "$TRAINC" check "$1"
  if [ "$rc" -ne 0 ]; then echo "trainc check failed on the spec at $2:"; cat "$TMP/stdout" "$TMP/stderr"; return 1; fi
}

# docs/reference.md is what `trainc explain --markdown` prints from the schema.
check_reference() {
  run "$TRAINC" explain --markdown
  if [ "$rc" -ne 0 ]; then echo "trainc explain --markdown exited $rc"; cat "$TMP/stderr"; return 1; fi
  if ! diff -u docs/reference.md "$TMP/stdout" >"$TMP/reference.diff"; then
    echo "docs/reference.md differs from the schema's field reference; run ./dev.sh golden and commit it:"
    head -n 40 "$TMP/reference.diff"
    return 1
  fi
}
t "docs/reference.md matches the schema (trainc explain --markdown)" check_reference

# docs/tutorial.md: its commands run in an empty folder print what it quotes (tests/tutorial.py).
check_tutorial() {
  if ! python3 tests/tutorial.py "$TRAINC" docs/tutorial.md >"$TMP/tutorial.out" 2>&1; then
    cat "$TMP/tutorial.out"
    echo "the tutorial's quoted output drifted; if the new output is right, run ./dev.sh golden and commit it"
    return 1
  fi
}
t "docs/tutorial.md: every command prints what the tutorial quotes" check_tutorial

n=0 d=0
for doc in README.md docs/*.md; do
  d=$((d + 1))
  # Writes each complete spec block to $TMP/doc<d>-<k>.yaml and prints "<file> <doc>:<line>" for it.
  while read -r file where; do
    n=$((n + 1))
    t "the spec at $where passes trainc check" check_spec "$file" "$where"
  done < <(awk -v doc="$doc" -v dir="$TMP" -v d="$d" '
    /^```yaml spec$/ { inblock = 1; start = NR + 1; text = ""; next }
    inblock && /^```$/ { inblock = 0; k++; f = dir "/doc" d "-" k ".yaml"
      printf "%s", text > f; close(f); print f, doc ":" start; next }
    inblock { text = text $0 "\n" }' "$doc")
done
t "the docs hold complete specs to check (at least 2)" test "$n" -ge 2
tap_done
