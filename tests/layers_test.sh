#!/usr/bin/env bash
# Includes point down (TAP): tests/layers.py finds no compiler source including a header from a
# layer above its own, and it does find one planted in a copy of the tree. No compiler source is
# over 800 lines.
# Usage: tests/layers_test.sh TRAINC
set -uo pipefail
# shellcheck source=tests/tap.sh
. "$(dirname "${BASH_SOURCE[0]}")/tap.sh"
tap_init "$@"

t "no compiler source includes a header from a layer above its own" python3 tests/layers.py .

# Files with one job each: no compiler source (tests included) over 800 lines.
short_sources() {
  local long
  long=$(find compiler \( -name '*.cpp' -o -name '*.h' \) -exec wc -l {} + | awk '$2 != "total" && $1 > 800 { print $2 ": " $1 " lines" }')
  [ -z "$long" ] || { echo "$long"; return 1; }
}
t "no compiler source is over 800 lines" short_sources

# The check can fail: a copy of the tree where the checks include an emitter, and one with a
# folder that has no layer.
mkdir -p "$TMP/up" "$TMP/unplaced"
cp -r compiler "$TMP/up/"
printf '#include "emit/emitter.h"\n' >>"$TMP/up/compiler/checks/checks.cpp"
up_is_refused() {
  local out
  if out=$(python3 tests/layers.py "$TMP/up"); then
    echo "an include from checks/ of emit/emitter.h passed"
    return 1
  fi
  grep -q "compiler/checks/checks.cpp:.*includes emit/emitter.h from layer 'emit', above its own layer 'checks'" <<<"$out" ||
    { echo "unexpected report: $out"; return 1; }
}
t "an include that points up is reported at its file and line" up_is_refused

cp -r compiler "$TMP/unplaced/"
mkdir -p "$TMP/unplaced/compiler/helpers"
printf '#pragma once\n' >"$TMP/unplaced/compiler/helpers/x.h"
unplaced_is_refused() {
  local out
  if out=$(python3 tests/layers.py "$TMP/unplaced"); then
    echo "a folder with no layer passed"
    return 1
  fi
  grep -q "compiler/helpers/: a folder with no layer" <<<"$out" || { echo "unexpected report: $out"; return 1; }
}
t "a folder with no layer is reported" unplaced_is_refused

tap_done
