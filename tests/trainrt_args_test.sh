#!/usr/bin/env bash
# Every trainrt command the goldens would run in a pod, checked by trainrt's own parser (TAP), so a
# renamed or misspelled flag fails here rather than in a pod:
#   - `trainrt --check-args` itself: good flags pass without doing work, bad ones exit 2 with the
#     message a real run prints;
#   - each golden/*/k8s/*-configmap.yaml whose entry script runs trainrt: the whole script runs
#     under bash with a stand-in `trainrt` first on PATH that runs `REAL --check-args "$@"` and
#     records each call, with a pod's environment (NODE_RANK, NNODES from the Job's completions,
#     MASTER_ADDR, MASTER_PORT), as rank 0 and as the last rank;
#   - each exec probe of golden/*/k8s/*-job.yaml that runs trainrt;
#   - a renamed flag in a copy of a ConfigMap, and of a Job, must fail.
# Isolation: the scripts' fixed state folder /tmp/trainc is rewritten to a folder under $TMP in the
# extracted copy (other suites use /tmp/trainc at the same time), and an absolute `cd` (the pod's
# workdir) is mapped under that folder by a function defined through BASH_ENV; nothing else in the
# script changes. Under --check-args trainrt reads and writes nothing.
# Usage: tests/trainrt_args_test.sh TRAINRT TRAINC
set -uo pipefail
# shellcheck source=tests/tap.sh
. "$(dirname "${BASH_SOURCE[0]}")/tap.sh"
tap_init_trainrt "$@"
rc=0  # exit code of the last run() (tests/tap.sh)
STATE=/tmp/trainc  # fixed in the generated scripts (the probes read it)

# ---- trainrt --check-args ----------------------------------------------------------------------

# Runs `trainrt --check-args ARGS...` and fails unless it exits with $1.
expect_check() {
  local want=$1
  shift
  run "$TRAINRT" --check-args "$@"
  if [ "$rc" -ne "$want" ]; then
    echo "trainrt --check-args $*: exit $rc (expected $want)"
    cat "$TMP/stdout" "$TMP/stderr"
    return 1
  fi
}

# A good command passes with one line on stdout and leaves --out alone.
datagen_ok() {
  expect_check 0 datagen --rows=1000 --features=20 --shards=4 --shard-index=3 --out="$TMP/table" || return 1
  [ "$(cat "$TMP/stdout")" = "trainrt datagen: arguments ok" ] || { echo "stdout:"; cat "$TMP/stdout"; return 1; }
  [ ! -e "$TMP/table" ] || { echo "--check-args created --out"; return 1; }
}

# What a real run would refuse, --check-args refuses with the same exit code and message.
same_as_real() {
  local sub=$1
  shift
  run "$TRAINRT" "$sub" "$@"
  local real_rc=$rc real_err
  real_err=$(cat "$TMP/stderr")
  expect_check 2 "$sub" "$@" || return 1
  [ "$real_rc" -eq 2 ] || { echo "the real run exited $real_rc (expected 2)"; return 1; }
  [ "$real_err" = "$(cat "$TMP/stderr")" ] || {
    echo "stderr differs; real run:"; printf '%s\n' "$real_err"; echo "--check-args:"; cat "$TMP/stderr"; return 1
  }
  [ -s "$TMP/stderr" ] || { echo "no message on stderr"; return 1; }
}

train_ok() {
  expect_check 0 train --data=/nonexistent/shards --model-dir="$TMP/model" --rounds=5 --param=max_depth=6 || return 1
  grep -qx "trainrt train: arguments ok" "$TMP/stdout" || { cat "$TMP/stdout"; return 1; }
  [ ! -e "$TMP/model" ] || { echo "--check-args created --model-dir"; return 1; }
}

# --tracker-serve needs XGBoost 2.1: a build with an older one still answers for the flags, with a note.
train_build_limit() {
  expect_check 0 train --data=d --model-dir=m --rounds=5 --rank=0 --world-size=2 --tracker=127.0.0.1:29500 \
    --tracker-serve=29500 || return 1
  grep -qx "trainrt train: arguments ok" "$TMP/stdout" || { cat "$TMP/stdout"; return 1; }
  expect_check 2 train --data=d --model-dir=m --rounds=5 --tracker-serve=70000
}

# A real preflight here would exit 3 (no GPU), a real probe 5 (no heartbeat), a real inspect 1.
no_work_done() {
  expect_check 0 preflight --expect-gpus=8 --rank=1 --world-size=2 --coordinator=127.0.0.1:1 || return 1
  grep -qx "trainrt preflight: arguments ok" "$TMP/stdout" || { cat "$TMP/stdout"; return 1; }
  expect_check 0 probe live --heartbeat="$TMP/none" --max-age=1h || return 1
  grep -qx "trainrt probe live: arguments ok" "$TMP/stdout" || { cat "$TMP/stdout"; return 1; }
  expect_check 0 probe ready --path="$TMP/none" || return 1
  expect_check 0 inspect "$TMP/none" || return 1
  grep -qx "trainrt inspect: arguments ok" "$TMP/stdout" || { cat "$TMP/stdout"; return 1; }
}

bad_values() {
  expect_check 2 preflight --rank=2 --world-size=2 --coordinator=127.0.0.1:1 || return 1
  expect_check 2 probe live --heartbeat=x --max-age=soon || return 1
  expect_check 2 probe ready || return 1
  expect_check 2 datagen --rows=10 --out=x --shards=4 --shard-index=4
}

# Every number a flag takes is range-checked on its text: exit 2 with one message naming the flag and
# the range (not CLI11's "could not be converted", not a wrapped-around value, not an abort).
# Each case: FLAG<TAB>RANGE TEXT<TAB>ARGS... (ARGS start with the subcommand).
numbers_checked() {
  local line flag range bad=0
  local -a args
  while IFS=$'\t' read -r flag range line; do
    read -r -a args <<<"$line"
    run "$TRAINRT" "${args[@]}"
    if [ "$rc" -ne 2 ] || ! grep -qF -- "$flag: must be $range; got" "$TMP/stderr" ||
      grep -q 'could not be converted\|terminate\|what()' "$TMP/stderr"; then
      echo "trainrt ${args[*]}: exit $rc, expected 2 and '$flag: must be $range; got ...'; stderr:"
      sed 's/^/  /' "$TMP/stderr"
      bad=1
    fi
  done <<'CASES'
--shards	a whole number from 1 to 99999	datagen --rows 10 --out x --shards 9223372036854775807
--shards	a whole number from 1 to 99999	datagen --rows 10 --out x --shards -1
--features	a whole number from 1 to 65536	datagen --rows 10 --out x --features 4000000000
--features	a whole number from 1 to 65536	datagen --rows 10 --out x --features 0x10
--rows	a whole number from 1 to 4611686018427387904	datagen --rows -5 --out x
--rows	a whole number from 1 to 4611686018427387904	datagen --rows 1e9 --out x
--seed	a whole number from 0 to 18446744073709551615	datagen --rows 10 --out x --seed -1
--seed	a whole number from 0 to 18446744073709551615	datagen --rows 10 --out x --seed 18446744073709551616
--informative	a whole number from 0 to 65536	datagen --rows 10 --out x --informative -2
--classes	a whole number from 2 to 65536	datagen --rows 10 --out x --classes 1
--flip-y	a number from 0 to 1	datagen --rows 10 --out x --flip-y nan
--flip-y	a number from 0 to 1	datagen --rows 10 --out x --flip-y -0.5
--class-sep	a number from -1000000000 to 1000000000	datagen --rows 10 --out x --class-sep 1e400
--noise	a number from 0 to 1e+30	datagen --rows 10 --out x --task regression --noise inf
--shard-index	a whole number from 0 to 99998	datagen --rows 10 --out x --shard-index -1
--threads	a whole number from 0 to 4096	datagen --rows 10 --out x --threads 99999999999
--rounds	a whole number from 1 to 1000000000	train --data d --model-dir m --rounds 0
--rounds	a whole number from 1 to 1000000000	train --data d --model-dir m --rounds 99999999999
--eval-fraction	a number from 0 to 0.999	train --data d --model-dir m --rounds 5 --eval-fraction NaN
--world-size	a whole number from 1 to 65536	train --data d --model-dir m --rounds 5 --world-size 0
--tracker-serve	a whole number from 1 to 65535	train --data d --model-dir m --rounds 5 --tracker-serve 70000
--iters	a whole number from 1 to 1000000	preflight --iters -3
--timeout	a number from 0.001 to 604800	preflight --timeout 1e400
CASES
  # An empty value: CLI11 refuses it before the range check, naming the flag.
  run "$TRAINRT" datagen --rows 10 --out x --shards=
  if [ "$rc" -ne 2 ] || ! grep -q -- '^--shards: ' "$TMP/stderr"; then
    echo "datagen --shards=: exit $rc; stderr:"; cat "$TMP/stderr"; bad=1
  fi
  return "$bad"
}

# --size: 1e400TB once aborted in std::stod; it is refused like any other bad size.
size_checked() {
  local size
  for size in 1e400TB 9999999PB -1GB nanGB 1.5.5GB; do
    run "$TRAINRT" datagen --size "$size" --dry-run
    if [ "$rc" -ne 2 ] || ! grep -qF -- "--size '$size' is not a size such as 6TB" "$TMP/stderr"; then
      echo "datagen --size '$size': exit $rc; stderr:"; cat "$TMP/stderr"; return 1
    fi
  done
  run "$TRAINRT" datagen --weights 0.5,nan --rows 10 --dry-run
  [ "$rc" -eq 2 ] && grep -qF -- "--weights: '0.5,nan' is not a comma-separated list of numbers from 0 to 1" \
    "$TMP/stderr" || { echo "--weights 0.5,nan: exit $rc"; cat "$TMP/stderr"; return 1; }
}

# Every subcommand reports a problem one way (runtime/report.h): "trainrt SUB: message" as the first line.
# Each case: EXIT<TAB>FIRST LINE OF STDERR<TAB>ARGS...
one_report_style() {
  local want line first bad=0
  local -a args
  while IFS=$'\t' read -r want first line; do
    read -r -a args <<<"$line"
    run "$TRAINRT" "${args[@]}"
    if [ "$rc" -ne "$want" ] || [ "$(head -n 1 "$TMP/stderr")" != "$first" ]; then
      echo "trainrt ${args[*]}: exit $rc, expected $want and '$first' first; stderr:"
      sed 's/^/  /' "$TMP/stderr"
      bad=1
    fi
  done <<CASES
2	trainrt datagen: --out is required (or --dry-run)	datagen --rows 10
2	trainrt train: --param 'foo' is not key=value (for example --param max_depth=6)	train --data d --model-dir m --rounds 5 --param foo
2	trainrt preflight: rank 2 is outside 0..1 (world size 2)	preflight --rank=2 --world-size=2 --coordinator=127.0.0.1:1
1	trainrt inspect: $TMP/none: no _trainrt_table.json (not a trainrt table, or its generation has not finished: run trainrt datagen again to complete it)	inspect $TMP/none
CASES
  return "$bad"
}

help_mentions_it() {
  run "$TRAINRT" --help
  if [ "$rc" -ne 0 ] || ! grep -q -- "--check-args" "$TMP/stdout"; then echo "rc=$rc"; cat "$TMP/stdout"; return 1; fi
}

t "--check-args datagen: a good command prints 'arguments ok' and writes nothing" datagen_ok
t "--check-args train: a good command passes without reading --data or writing --model-dir" train_ok
t "--check-args train: a misspelled flag (--round=5) exits 2 as a real run does" \
  same_as_real train --data=d --model-dir=m --round=5
t "--check-args datagen: --informative=0 for classification exits 2 as a real run does" \
  same_as_real datagen --rows=1000 --informative=0 --out="$TMP/table"
t "--check-args train: a flag this build's XGBoost cannot run passes; a bad value still exits 2" train_build_limit
t "--check-args preflight, probe, inspect: pass where a real run here would fail" no_work_done
t "--check-args preflight, probe, datagen: bad values exit 2" bad_values
t "trainrt --help lists --check-args" help_mentions_it
t "datagen, train, preflight and inspect report a problem as 'trainrt SUB: message'" one_report_style
t "every numeric flag is range-checked: exit 2 naming the flag and its range (overflow, negative, NaN, empty)" \
  numbers_checked
t "--size 1e400TB and other impossible sizes exit 2 with a message; --weights with NaN too" size_checked

# ---- the goldens' entry scripts ----------------------------------------------------------------

# Prints the ConfigMap's entry script (a literal block indented by four spaces).
extract_script() {
  awk '/^  entrypoint.sh: \|/ { on = 1; next } on && /^[^ ]/ { on = 0 } on { sub(/^    /, ""); print }' "$1"
}

# Whether the ConfigMap's entry script mentions trainrt. (No `cmd | grep -q` in this file: under
# pipefail, grep's early exit makes the writer's SIGPIPE fail the pipeline.)
runs_trainrt() { grep -qw trainrt <(extract_script "$1"); }

# Reads a Job manifest: prints `completions N`, then one line per exec probe whose command starts
# with trainrt: `probe<TAB>KIND<TAB>CONTAINER<TAB>ARG<TAB>ARG...`. Uses PyYAML when python3 has it,
# else reads the shape trainc writes line by line.
read_job() {
  python3 - "$1" <<'PY'
import sys

path = sys.argv[1]
text = open(path).read()
KINDS = ("livenessProbe", "readinessProbe", "startupProbe")

def emit(completions, probes):
    print("completions", completions)
    for kind, container, argv in probes:
        print("\t".join(["probe", kind, container] + [str(a) for a in argv]))

try:
    import yaml
except ImportError:
    yaml = None

if yaml is not None:
    completions, probes = 1, []
    for doc in yaml.safe_load_all(text):
        if not doc or doc.get("kind") != "Job":
            continue
        spec = doc.get("spec") or {}
        completions = spec.get("completions") or 1
        pod = ((spec.get("template") or {}).get("spec")) or {}
        for c in (pod.get("initContainers") or []) + (pod.get("containers") or []):
            for kind in KINDS:
                cmd = (((c.get(kind) or {}).get("exec")) or {}).get("command") or []
                if cmd and str(cmd[0]).rsplit("/", 1)[-1] == "trainrt":
                    probes.append((kind, c.get("name", "?"), cmd[1:]))
    emit(completions, probes)
    sys.exit(0)

# Without PyYAML: `  completions: N` under the Job's spec, `- name: X` for containers, and a probe's
# `command:` list items, each `- item` on its own line.
import re
completions, probes, container, kind, items, indent, cindent = 1, [], "?", None, None, None, None
def close():
    global items
    if items and items[0].rsplit("/", 1)[-1] == "trainrt":
        probes.append((kind, container, items[1:]))
    items = None
for line in text.splitlines():
    m = re.match(r"^  completions: (\d+)\s*$", line)
    if m:
        completions = int(m.group(1))
    if items is not None:
        m = re.match(r"^(\s*)- (.*)$", line)
        if m and len(m.group(1)) >= indent:
            items.append(m.group(2).strip().strip('"').strip("'"))
            continue
        close()
    m = re.match(r"^(\s*)(containers|initContainers):\s*$", line)
    if m:
        cindent = len(m.group(1))
    m = re.match(r"^(\s*)- name: (\S+)\s*$", line)
    if m and cindent is not None and len(m.group(1)) in (cindent, cindent + 2):
        container = m.group(2)
    m = re.match(r"^(\s*)(\w+Probe):\s*$", line)
    if m:
        kind = m.group(2) if m.group(2) in KINDS else None
        continue
    m = re.match(r"^(\s*)command:\s*$", line)
    if m and kind is not None:
        items, indent = [], len(m.group(1))
        continue
    if re.match(r"^\s*(volumes|containers|initContainers):", line):
        kind = None
        if line.strip() == "volumes:":
            cindent = None
close()
emit(completions, probes)
PY
}

# Runs the entry script of CONFIGMAP as rank RANK of NNODES in a fresh pod folder under $TMP, with
# the stand-in trainrt; sets POD to that folder and SCRIPT_RC to the script's exit status.
# Each trainrt call is recorded in $POD/calls/<time>.XXXX/{argv,rc,out,err}.
run_pod() {
  local configmap=$1 rank=$2 nnodes=$3
  POD=$(mktemp -d "$TMP/pod.XXXXXX")
  mkdir -p "$POD/bin" "$POD/calls" "$POD/root/tmp" "$POD/home"
  cat >"$POD/bin/trainrt" <<'STUB'
#!/usr/bin/env bash
# Stand-in for trainrt: runs the real one with --check-args and records the call.
call=$(mktemp -d "$TRAINRT_CALLS/$(date +%s%N).XXXX")
printf '%s\n' "$@" >"$call/argv"
rc=0
"$REAL_TRAINRT" --check-args "$@" >"$call/out" 2>"$call/err" || rc=$?
echo "$rc" >"$call/rc"
cat "$call/out"
cat "$call/err" >&2
exit "$rc"
STUB
  cat >"$POD/bash_env" <<'SHIM'
# Sourced by the entry script's bash (BASH_ENV): the pod's workdir under its root (TRAINC_POD_ROOT),
# which the container runtime would make, is made before `cd` goes there.
cd() {
  if [ "$#" -eq 1 ] && [[ $1 == "$POD_ROOT"/* ]]; then mkdir -p -- "$1"; fi
  builtin cd "$@"
}
SHIM
  chmod +x "$POD/bin/trainrt"
  # The gIB plugin's NCCL settings, which the node's installer leaves on RDMA nodes.
  mkdir -p "$POD/root/usr/local/gib/scripts"
  echo 'export NCCL_NET=gIB' >"$POD/root/usr/local/gib/scripts/set_nccl_env.sh"
  extract_script "$configmap" >"$POD/entrypoint.sh"
  SCRIPT_RC=0
  timeout 300 env -i PATH="$POD/bin:/usr/local/bin:/usr/bin:/bin" HOME="$POD/home" TMPDIR="$POD/root/tmp" \
    BASH_ENV="$POD/bash_env" POD_ROOT="$POD/root" TRAINC_POD_ROOT="$POD/root" REAL_TRAINRT="$TRAINRT" TRAINRT_CALLS="$POD/calls" \
    NODE_RANK="$rank" NNODES="$nnodes" MASTER_ADDR=127.0.0.1 MASTER_PORT=29500 \
    bash "$POD/entrypoint.sh" >"$POD/output" 2>&1 </dev/null &
  local pid=$!
  wait "$pid" || SCRIPT_RC=$?
  # timeout leads its own process group; what the script left running (the keepalive's last
  # `sleep 30`) is ended with it.
  kill -- "-$pid" 2>/dev/null || true
}

# The subcommand of a recorded call ("train", "probe live").
call_name() {
  awk '!/^-/ { printf "%s%s", sep, $0; sep = " "; if ($0 != "probe") exit }' "$1/argv"
}

# Checks the calls recorded in $POD: prints one line per problem (with the call's stderr) and the
# subcommands seen, one a line, to $POD/names. Fails when a call failed or there was none.
judge_calls() {
  local label=$1 call bad=0 n=0 name
  : >"$POD/names"
  for call in "$POD"/calls/*/; do
    [ -f "$call/rc" ] || continue
    n=$((n + 1))
    name=$(call_name "$call")
    echo "$name" >>"$POD/names"
    if [ "$(cat "$call/rc")" -ne 0 ]; then
      bad=1
      echo "$label: trainrt $(tr '\n' ' ' <"$call/argv")"
      echo "  exit $(cat "$call/rc"):"
      sed 's/^/  /' "$call/err"
    elif ! grep -qx "trainrt $name: arguments ok" "$call/out"; then
      bad=1
      echo "$label: trainrt $name did not print 'arguments ok' (was --check-args honoured?)"
    fi
  done
  [ "$n" -gt 0 ] || { echo "$label: the script never called trainrt"; bad=1; }
  return "$bad"
}

# Runs CONFIGMAP's script as rank 0 and as the last rank of its Job (JOB) and checks every trainrt
# call. Prints problems; writes the subcommands called to $TMP/names and notes to $TMP/notes.
check_entry_script() {
  local configmap=$1 job=$2 nnodes=1 rank ok=0 line others ranks=(0)
  : >"$TMP/names"
  : >"$TMP/notes"
  # Only the state folder is moved into the pod folder; another fixed path under /tmp would be shared.
  others=$(extract_script "$configmap" | sed "s|$STATE||g" | grep '/tmp/')
  if [ -n "$others" ]; then
    echo "the entry script uses a path under /tmp other than $STATE; teach this test to move it:"
    printf '%s\n' "$others"
    return 1
  fi
  if [ -f "$job" ]; then
    while read -r line; do
      case "$line" in completions\ *) nnodes=${line#completions } ;; esac
    done < <(read_job "$job")
  fi
  if [ "$nnodes" -gt 1 ]; then ranks+=($((nnodes - 1))); fi
  for rank in "${ranks[@]}"; do
    run_pod "$configmap" "$rank" "$nnodes"
    if ! judge_calls "rank $rank of $nnodes"; then ok=1; fi
    if [ "$SCRIPT_RC" -ne 0 ]; then
      ok=1
      echo "rank $rank of $nnodes: the entry script exited $SCRIPT_RC; its output:"
      tail -n 20 "$POD/output" | sed 's/^/  /'
    fi
    cat "$POD/names" >>"$TMP/names"
    cat "$POD"/calls/*/err 2>/dev/null | sed "s/^/rank $rank: /" >>"$TMP/notes"
    rm -rf "$POD"
  done
  return "$ok"
}

# Replays a result computed earlier: prints FILE and exits with RC (for t's name to name the result).
replay() {
  cat "$2"
  return "$1"
}

# The distinct subcommands in $TMP/names, in order of first call: "preflight, train".
names_seen() { awk '!seen[$0]++' "$TMP/names" | paste -sd, - | sed 's/,/, /g'; }

scripts=0
probes=0
for configmap in golden/*/k8s/*-configmap.yaml; do
  [ -f "$configmap" ] || continue
  runs_trainrt "$configmap" || continue
  scripts=$((scripts + 1))
  result=0
  check_entry_script "$configmap" "${configmap%-configmap.yaml}-job.yaml" >"$TMP/result" 2>&1 || result=$?
  called=$(names_seen)
  t "$configmap: trainrt ${called:-(none)} arguments ok" replay "$result" "$TMP/result"
  if [ "$result" -eq 0 ] && [ -s "$TMP/notes" ]; then sort -u "$TMP/notes" | diag 10; fi
done
[ "$scripts" -gt 0 ] || t_fail "at least one golden entry script runs trainrt" "no golden/*/k8s/*-configmap.yaml runs trainrt"

# Checks every trainrt exec probe of JOB with --check-args; prints one line per probe to $TMP/names.
check_probes() {
  local job=$1 kind container bad=0 fields
  : >"$TMP/names"
  while IFS=$'\t' read -r -a fields; do
    [ "${fields[0]:-}" = probe ] || continue
    kind=${fields[1]} container=${fields[2]}
    echo "$kind (${fields[*]:3:2})" >>"$TMP/names"
    run "$TRAINRT" --check-args "${fields[@]:3}"
    if [ "$rc" -ne 0 ]; then
      bad=1
      echo "$kind of container '$container': trainrt ${fields[*]:3}"
      echo "  exit $rc:"
      sed 's/^/  /' "$TMP/stderr"
    fi
  done < <(read_job "$job")
  return "$bad"
}

for job in golden/*/k8s/*-job.yaml; do
  [ -f "$job" ] || continue
  result=0
  check_probes "$job" >"$TMP/result" 2>&1 || result=$?
  [ -s "$TMP/names" ] || continue
  probes=$((probes + 1))
  t "$job: exec probes $(names_seen): trainrt arguments ok" replay "$result" "$TMP/result"
done
[ "$probes" -gt 0 ] || t_fail "at least one golden Job probes with trainrt" "no golden/*/k8s/*-job.yaml probe runs trainrt"

# ---- the test can fail -------------------------------------------------------------------------

# A copy of the first ConfigMap that runs `trainrt train` (else any that runs trainrt), with its
# first `--flag=` in the script renamed (--rounds= -> --round=, else the flag minus its last letter):
# the check must fail and name the renamed flag.
renamed_flag_fails() {
  local configmap="" c flag copy out
  for c in golden/*/k8s/*-configmap.yaml; do
    runs_trainrt "$c" || continue
    [ -z "$configmap" ] && configmap=$c
    if grep -q -- '--rounds=' <(extract_script "$c"); then configmap=$c; break; fi
  done
  [ -n "$configmap" ] || { echo "no ConfigMap runs trainrt"; return 1; }
  if grep -q -- '--rounds=' "$configmap"; then
    flag=--rounds
  else
    flag=$(grep -o -m1 -E -- '--[a-z][a-z-]*[a-z]=' "$configmap" | head -n 1 | sed 's/=$//')
  fi
  [ -n "$flag" ] || { echo "$configmap has no --flag= to rename"; return 1; }
  copy="$TMP/renamed-configmap.yaml"
  sed "s/$flag=/${flag%?}=/g" "$configmap" >"$copy"
  if cmp -s "$configmap" "$copy"; then echo "renaming $flag changed nothing"; return 1; fi
  if out=$(check_entry_script "$copy" "${configmap%-configmap.yaml}-job.yaml" 2>&1); then
    echo "$configmap with $flag= renamed to ${flag%?}= passed the check:"
    printf '%s\n' "$out"
    return 1
  fi
  # The failure must come from trainrt refusing the call that has the renamed flag.
  if ! grep -q -- "^rank [0-9]* of [0-9]*: trainrt .* ${flag%?}=" <<<"$out" || ! grep -qx '  exit 2:' <<<"$out"; then
    echo "the failure is not trainrt refusing ${flag%?}=:"; printf '%s\n' "$out"; return 1
  fi
  { echo "renamed $flag= to ${flag%?}= in a copy of $configmap; the check failed with:"
    printf '%s\n' "$out" | head -n 5; } >"$TMP/evidence"
}

# The same for a probe: --max-age renamed to --max-ages in a copy of the first Job probing with trainrt.
renamed_probe_flag_fails() {
  local job="" j copy out
  for j in golden/*/k8s/*-job.yaml; do
    if grep -q $'^probe\t.*\t--max-age' <(read_job "$j"); then job=$j; break; fi
  done
  [ -n "$job" ] || { echo "no Job has a trainrt probe with --max-age"; return 1; }
  copy="$TMP/renamed-job.yaml"
  sed 's/--max-age$/--max-ages/' "$job" >"$copy"
  if out=$(check_probes "$copy" 2>&1); then
    echo "$job with --max-age renamed to --max-ages passed the check"
    return 1
  fi
  grep -q -- "--max-ages" <<<"$out" || { echo "the failure does not name --max-ages:"; printf '%s\n' "$out"; return 1; }
  { echo "renamed --max-age to --max-ages in a copy of $job; the check failed with:"
    printf '%s\n' "$out" | head -n 3; } >"$TMP/evidence"
}

# t shows a passing test's output nowhere: the evidence that the check failed follows as diagnostics.
: >"$TMP/evidence"
t "a renamed flag in a copy of a golden ConfigMap fails the check" renamed_flag_fails
diag 8 <"$TMP/evidence"
: >"$TMP/evidence"
t "a renamed flag in a copy of a golden Job's probe fails the check" renamed_probe_flag_fails
diag 8 <"$TMP/evidence"
tap_done
