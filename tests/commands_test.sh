#!/usr/bin/env bash
# One builder writes every gcloud, kubectl and helm command (TAP): tests/commands.py finds no
# emitter string that starts one by hand outside its allow-list, and it does find one planted in a
# copy of the tree, and an allow-list entry left over once its command is gone.
# Usage: tests/commands_test.sh TRAINC
set -uo pipefail
# shellcheck source=tests/tap.sh
. "$(dirname "${BASH_SOURCE[0]}")/tap.sh"
tap_init "$@"

t "no emitter writes a gcloud, kubectl or helm command by hand" python3 tests/commands.py .

# The check can fail: a copy of the tree whose runbook formats a kubectl command, one whose script
# runs a gcloud command written into a string, and one where an allowed command is gone.
for case in runbook script stale; do mkdir -p "$TMP/$case" && cp -r compiler "$TMP/$case/"; done
printf '%s\n' 'std::string planted(const std::string& ns) {' \
  '  return fmt::format("kubectl get pods -n {}\n", ns);' '}' >>"$TMP/runbook/compiler/emit/emit_runbook.cpp"
printf '%s\n' 'const char* kPlanted = "if ! run gcloud compute zones list; then";' \
  >>"$TMP/script/compiler/emit/emit_scripts_up.cpp"
sed -i "s/\`kubectl scale\` lasts/scaling lasts/" "$TMP/stale/compiler/emit/emit_runbook.cpp"

reported() {  # reported CASE PATTERN: tests/commands.py fails on the copy and prints PATTERN
  local out
  if out=$(python3 tests/commands.py "$TMP/$1"); then
    echo "the planted command passed"
    return 1
  fi
  grep -q -- "$2" <<<"$out" || { echo "unexpected report: $out"; return 1; }
}
t "a kubectl command formatted in the runbook is reported at its file and line" \
  reported runbook 'compiler/emit/emit_runbook.cpp:[0-9]*: a command written by hand .*"kubectl get pods -n {}'
t "a gcloud command in a script's string is reported" \
  reported script 'compiler/emit/emit_scripts_up.cpp:[0-9]*: a command written by hand .*run gcloud compute zones list'
t "an allow-list entry that matches nothing is reported" \
  reported stale "allowed '\`kubectl scale\` lasts' in emit_runbook.cpp .* matches nothing"

tap_done
