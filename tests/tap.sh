# shellcheck shell=bash
# TAP plumbing for the tests/*_test.sh scripts (sourced). Each script is called as `SCRIPT TRAINC`
# (meson passes the built binary), runs from the repo root, and prints `1..N` at the end.
#   tap_init "$@"           resolves TRAINC, cd's to the repo root, makes $TMP (removed on exit)
#                           (kept when TRAINC_KEEP_TMP=1, to read what a failing test left)
#   t NAME CMD [ARG...]     one test: ok when CMD succeeds; what CMD prints becomes `# ` lines
#                           (TAP_ONLY=REGEX runs only the tests whose names match)
#   tap_done                prints the plan; exits 1 when a test failed
#   oracles_present NAME TOOL...   sets $ORACLE; true when the independent oracles are there (below)
#   torch_tools_present     sets $TORCH_TOOLS_MISSING; true when `run --local`'s PyTorch cases can run (below)

tap_init() {
  if [ "$#" -lt 1 ]; then
    echo "usage: $0 TRAINC" >&2
    exit 2
  fi
  local root
  root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
  # shellcheck source=tools/common.sh
  . "$root/tools/common.sh"
  TRAINC=$(absolute_command "$1")
  cd "$root" || exit 2
  if [ ! -x "$TRAINC" ]; then
    echo "Bail out! trainc binary not found or not executable: $1"
    exit 1
  fi
  TMP=$(mktemp -d "${TMPDIR:-/tmp}/trainc-test.XXXXXX")
  trap '[ -n "${TRAINC_KEEP_TMP:-}" ] || rm -rf "$TMP"' EXIT
  tap_n=0
  tap_failed=0
}

# For the runtime suites, called as `SCRIPT TRAINRT TRAINC`: resolves TRAINRT (bailing out when it
# is not executable), then does what tap_init does with TRAINC.
tap_init_trainrt() {
  if [ "$#" -lt 2 ]; then
    echo "usage: $0 TRAINRT TRAINC" >&2
    exit 2
  fi
  # shellcheck source=tools/common.sh
  . "$(dirname "${BASH_SOURCE[0]}")/../tools/common.sh"
  TRAINRT=$(absolute_command "$1")
  shift
  tap_init "$@"
  if [ ! -x "$TRAINRT" ]; then
    echo "Bail out! trainrt binary not found or not executable: $TRAINRT"
    exit 1
  fi
}

# Writes stdin as TAP diagnostic lines, at most $1 (default 40) of them.
diag() {
  local max=${1:-40}
  awk -v max="$max" 'NR <= max { print "# " $0 } NR == max + 1 { print "# ..." }'
}

t() {
  local name=$1 out
  shift
  # TAP_ONLY=PATTERN (an extended regex) runs only the tests whose names match it, the others
  # reported as skipped: for working on one case of a long suite.
  if [ -n "${TAP_ONLY:-}" ] && ! [[ $name =~ $TAP_ONLY ]]; then
    t_skip "$name" "TAP_ONLY=$TAP_ONLY"
    return 0
  fi
  tap_n=$((tap_n + 1))
  if out=$("$@" 2>&1); then
    echo "ok $tap_n - $name"
  else
    tap_failed=$((tap_failed + 1))
    echo "not ok $tap_n - $name"
    if [ -n "$out" ]; then printf '%s\n' "$out" | diag 60; fi
  fi
}

# t_skip NAME REASON: a test that cannot run here, reported as skipped with why.
t_skip() {
  tap_n=$((tap_n + 1))
  echo "ok $tap_n - $1 # SKIP $2"
}

# A test that fails with a message, for problems found outside a check function.
t_fail() {
  local name=$1
  shift
  t "$name" fail_with "$@"
}
fail_with() {
  printf '%s\n' "$@"
  return 1
}

# The independent oracles (validators kept outside the project): shared/oracle beside the source
# root, as .ci/run has them, or the folder $TRAINC_ORACLE_DIR names. A clone on its own has none.
# oracles_present NAME TOOL...: sets ORACLE and is true when every TOOL is in it. Otherwise it
# reports NAME, the test(s) that need them, as one TAP line and is false: skipped, saying why, when
# the folder is absent; failed when TRAINC_REQUIRE_ORACLES=1 (.ci/run sets it) or when the folder
# is there but lacks a TOOL.
oracles_present() {
  local name=$1 tool missing=() absent
  shift
  if [ -n "${TRAINC_ORACLE_DIR:-}" ]; then
    ORACLE=$TRAINC_ORACLE_DIR
    absent="the oracles are not at $ORACLE (TRAINC_ORACLE_DIR)"
  else
    ORACLE="$(cd .. && pwd)/shared/oracle"
    absent="the oracles (../shared/oracle) are not beside this clone"
  fi
  for tool in "$@"; do
    if [ ! -x "$ORACLE/$tool" ]; then missing+=("$tool"); fi
  done
  if [ "${#missing[@]}" -eq 0 ]; then return 0; fi
  if [ -d "$ORACLE" ]; then
    t_fail "$name" "the oracle folder $ORACLE lacks ${missing[*]}"
  elif [ "${TRAINC_REQUIRE_ORACLES:-}" = 1 ]; then
    t_fail "$name" "$absent, and TRAINC_REQUIRE_ORACLES=1 (set by .ci/run) requires them"
  else
    t_skip "$name" "$absent"
  fi
  return 1
}

# What `trainc run --local` needs to run PyTorch against a local S3 server (tools/install-deps.sh
# installs it): a python3 on PATH that imports torch (python3-torch), the aws CLI (awscli), and node
# with s3rver ($TRAINC_S3RVER, else npm's copy in trainc's cache, where run --local looks too).
# The python3 of the project's environment (tools/install-python.sh), where `trainc run --local`
# finds PyTorch and Ray: the same path as run/local_pods.cpp's project_python().
project_python() {
  printf '%s\n' "${TRAINC_PYTHON_HOME:-${XDG_CACHE_HOME:-$HOME/.cache}/trainc/python}/current/bin/python3"
}

# torch_tools_present: sets TORCH_TOOLS_MISSING to what is absent, as one phrase ("" when nothing
# is), and is true when nothing is. Scripts skip their PyTorch cases, saying so, when it is false.
# shellcheck disable=SC2034  # TORCH_TOOLS_MISSING is read by the scripts that source this file
torch_tools_present() {
  local s3rver d torch='' missing=() path_dirs
  s3rver=${TRAINC_S3RVER:-${XDG_CACHE_HOME:-$HOME/.cache}/trainc/s3rver/node_modules/s3rver/bin/s3rver.js}
  # Where `trainc run --local` looks: the project's environment, then PATH.
  if "$(project_python)" -c 'import torch' 2>/dev/null; then torch=$(project_python); fi
  IFS=: read -ra path_dirs <<<"$PATH"
  for d in "${path_dirs[@]}"; do
    if [ -n "$torch" ]; then break; fi
    if [ -x "$d/python3" ] && "$d/python3" -c 'import torch' 2>/dev/null; then torch=$d/python3; break; fi
  done
  [ -n "$torch" ] || missing+=("a python3 that imports torch (tools/install-python.sh)")
  command -v aws >/dev/null || missing+=("the aws CLI (awscli)")
  command -v node >/dev/null && [ -f "$s3rver" ] || missing+=("s3rver at $s3rver (npm)")
  TORCH_TOOLS_MISSING=${missing[*]}
  [ "${#missing[@]}" -eq 0 ]
}

tap_done() {
  echo "1..$tap_n"
  if [ "$tap_failed" -gt 0 ]; then exit 1; fi
  exit 0
}

# Runs CMD, storing its exit code in $rc, stdout in $TMP/stdout and stderr in $TMP/stderr.
# Tests run one after another, so one pair of files serves them all.
# shellcheck disable=SC2034  # rc is read by the scripts that source this file
run() {
  rc=0
  "$@" >"$TMP/stdout" 2>"$TMP/stderr" || rc=$?
}
