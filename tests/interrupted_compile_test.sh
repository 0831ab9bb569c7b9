#!/usr/bin/env bash
# Interrupted and failed compiles (TAP). Every example is compiled into one output folder that
# already holds an older output of each (every file changed, so old and new differ in every file),
# and trainc is stopped by SIGKILL:
#   * at chosen points of the write, through the test hook TRAINC_TEST_KILL_AT_STEP=N (the process
#     kills itself before write step N: each file written to the temporary folder, the exchange
#     into place, the removal of the previous tree; io/tree_writer.cpp), because a kill from
#     outside cannot be timed to land on each of those points;
#   * from outside (kill -KILL) after varied delays, spread over a whole compile's run time.
# After each kill: every output folder holds, byte for byte (sha256 of every file), either its
# previous tree or the complete new one, and nothing else appears at the output root but hidden
# temporaries; the next compile succeeds, leaves no temporaries and equals a clean compile. A
# compile that fails on a spec error leaves the existing output untouched.
# Usage: tests/interrupted_compile_test.sh TRAINC
set -uo pipefail
# shellcheck source=tests/tap.sh
. "$(dirname "${BASH_SOURCE[0]}")/tap.sh"
tap_init "$@"

specs=()  # one spec per example folder (a folder may hold the same system as YAML and Jsonnet)
for d in examples/*/; do
  if [ -f "${d}spec.yaml" ]; then specs+=("${d}spec.yaml"); elif [ -f "${d}spec.jsonnet" ]; then specs+=("${d}spec.jsonnet"); fi
done

# sha256 of every file under DIR (path and content), as one line.
tree_hash() {
  (cd "$1" && find . -type f -print0 | LC_ALL=C sort -z | xargs -0 -r sha256sum) | sha256sum | cut -d' ' -f1
}

# The clean output every interrupted compile is compared with, and the older output it replaces.
# Every compile writes to one path, $dest, since the output names its own folder (not `out`:
# tests/tap.sh's t declares a local of that name).
clean=$TMP/clean
dest=$TMP/out
prepare() {
  rm -rf "$dest"
  "$TRAINC" compile "${specs[@]}" -o "$dest" >/dev/null || { echo "the clean compile failed"; return 1; }
  mv "$dest" "$clean"
  folders=()
  for d in "$clean"/*/; do folders+=("$(basename "$d")"); done
  if [ "${#folders[@]}" -lt 5 ]; then echo "only ${#folders[@]} output folders"; return 1; fi
  declare -gA new_hash old_hash
  for f in "${folders[@]}"; do new_hash[$f]=$(tree_hash "$clean/$f"); done
  rm -rf "$TMP/old"
  cp -a "$clean" "$TMP/old"
  # An older output: same files (so trainc owns the folder), every one of them different.
  find "$TMP/old" -type f ! -name .trainc-manifest -exec sh -c 'for f; do echo "# older" >>"$f"; done' sh {} +
  for f in "${folders[@]}"; do old_hash[$f]=$(tree_hash "$TMP/old/$f"); done
  files=$(find "$clean" -type f | wc -l)
  steps=$((files + 2 * ${#folders[@]}))  # files, then an exchange and a removal per folder
}

# Asserts OUT holds, per folder, the old or the new tree whole; prints "NEW OLD" counts to $TMP/counts.
check_whole() {
  local out=$1 f h n_new=0 n_old=0 bad=0 entry
  for f in "${folders[@]}"; do
    if [ ! -d "$out/$f" ]; then echo "$out/$f is missing"; bad=1; continue; fi
    h=$(tree_hash "$out/$f")
    if [ "$h" = "${new_hash[$f]}" ]; then n_new=$((n_new + 1));
    elif [ "$h" = "${old_hash[$f]}" ]; then n_old=$((n_old + 1));
    else echo "$out/$f is neither its previous tree nor the new one:"; diff -r "$clean/$f" "$out/$f" | head -n 5; bad=1; fi
  done
  for entry in "$out"/*; do
    case " ${folders[*]} " in *" $(basename "$entry") "*) ;; *) echo "unexpected $entry at the output root"; bad=1 ;; esac
  done
  echo "$n_new $n_old" >"$TMP/counts"
  return "$bad"
}

# The next compile succeeds, removes the temporaries and gives the clean output.
check_recovers() {
  local out=$1 left
  "$TRAINC" compile "${specs[@]}" -o "$out" >"$TMP/recover.log" 2>&1 || { echo "the next compile failed:"; cat "$TMP/recover.log"; return 1; }
  left=$(find "$out" -mindepth 1 -maxdepth 1 -name '.*')
  if [ -n "$left" ]; then echo "temporaries left after the next compile: $left"; return 1; fi
  diff -r "$clean" "$out" >"$TMP/recover.diff" || { echo "the next compile differs from a clean one:"; head -n 10 "$TMP/recover.diff"; return 1; }
}

# Kills the compile before write step N (test hook), then checks the output and the recovery.
kill_at_step() {
  local n=$1 rc=0 counts
  rm -rf "$dest"
  cp -a "$TMP/old" "$dest"
  TRAINC_TEST_KILL_AT_STEP=$n "$TRAINC" compile "${specs[@]}" -o "$dest" >/dev/null 2>&1 || rc=$?
  if [ "$rc" -ne 137 ]; then echo "expected the compile to die of SIGKILL (137), got exit $rc"; return 1; fi
  check_whole "$dest" || return 1
  read -r counts <"$TMP/counts"
  echo "step $n: new/old folders $counts"
  # Before the first exchange nothing is new; once the last has happened everything is.
  if [ "$n" -eq 0 ] && [ "${counts%% *}" -ne 0 ]; then echo "a folder was replaced before step 0"; return 1; fi
  if [ "$n" -eq $((steps - 1)) ] && [ "${counts%% *}" -ne "${#folders[@]}" ]; then echo "not every folder was replaced"; return 1; fi
  check_recovers "$dest"
}

# Kills the compile from outside after DELAY seconds.
kill_after() {
  local delay=$1 pid rc=0
  rm -rf "$dest"
  cp -a "$TMP/old" "$dest"
  "$TRAINC" compile "${specs[@]}" -o "$dest" >/dev/null 2>&1 &
  pid=$!
  sleep "$delay"
  kill -KILL "$pid" 2>/dev/null
  wait "$pid" || rc=$?
  check_whole "$dest" || return 1
  echo "killed after ${delay}s (exit $rc): new/old folders $(cat "$TMP/counts")"
  check_recovers "$dest"
}

# A spec error anywhere in the list: nothing is written, the output (temporaries included) is untouched.
failed_compile_keeps_output() {
  local before after rc=0
  rm -rf "$dest"
  cp -a "$TMP/old" "$dest"
  mkdir -p "$TMP/broken"
  printf 'name: broken\nthis is: [not a spec\n' >"$TMP/broken/spec.yaml"
  before=$(tree_hash "$dest")
  "$TRAINC" compile "${specs[@]}" "$TMP/broken/spec.yaml" -o "$dest" >/dev/null 2>&1 || rc=$?
  if [ "$rc" -ne 1 ]; then echo "expected exit 1 for a spec error, got $rc"; return 1; fi
  after=$(tree_hash "$dest")
  if [ "$before" != "$after" ]; then echo "a failed compile changed the output"; return 1; fi
  if [ -n "$(find "$dest" -mindepth 1 -maxdepth 1 -name '.*')" ]; then echo "a failed compile left temporaries"; return 1; fi
}

# The temporaries of a compile that is still running are not touched by another.
running_temporaries_kept() {
  rm -rf "$dest"
  cp -a "$TMP/old" "$dest"
  mkdir "$dest/.${folders[0]}.tmp-$$"
  "$TRAINC" compile "${specs[@]}" -o "$dest" >/dev/null 2>&1 || { echo "compile failed"; return 1; }
  if [ ! -d "$dest/.${folders[0]}.tmp-$$" ]; then echo "the temporary of a running process was removed"; return 1; fi
}

# prepare sets the variables the tests read, so it runs here rather than in t's subshell.
folders=()
if prepare >"$TMP/prepare.log" 2>&1; then prepared=true; else prepared=false; fi
t "a clean compile of ${#specs[@]} examples, and an older output to replace" "$prepared"
if $prepared; then
  # Points spread over the whole write, plus the first folder's every step.
  first_files=$(find "$clean/${folders[0]}" -type f | wc -l)
  points=(0 1 $((first_files - 1)) "$first_files" $((first_files + 1)) $((first_files + 2)))
  for i in 1 2 3 4 5 6 7; do points+=($((steps * i / 8))); done
  points+=($((steps - 2)) $((steps - 1)))
  for n in $(printf '%s\n' "${points[@]}" | sort -n -u); do
    t "SIGKILL before write step $n of $steps: each folder old or new, whole; the next compile recovers" kill_at_step "$n"
  done
  start=$(date +%s%N)
  rm -rf "$dest"
  "$TRAINC" compile "${specs[@]}" -o "$dest" >/dev/null 2>&1
  total_ms=$((($(date +%s%N) - start) / 1000000))
  for pct in 10 30 50 70 85 90 95 98; do
    ms=$((total_ms * pct / 100))
    t "SIGKILL from outside after ${ms} ms (${pct}% of a ${total_ms} ms compile)" kill_after "$(printf '%d.%03d' $((ms / 1000)) $((ms % 1000)))"
  done
  t "a compile that fails on a spec error leaves the output untouched" failed_compile_keeps_output
  t "the temporaries of a running compile are left alone" running_temporaries_kept
fi
tap_done
