#!/usr/bin/env bash
# The first minute of every container of five systems a new user wrote from the docs alone
# (tests/firstminute/*.yaml: vLLM chat on L4 with a gated model, a topology-placed pretrain on 4
# A4 nodes, Ray on A4, Dask next to trainrt, single-pod torchrun with S3), in stand-in containers
# (tests/standin.sh) (TAP). Each spec passes `trainc check`; then every container of every pod
# template it compiles to runs as the pod would: as its uid, with the image's passwd and only the
# image's tools on PATH (the facts `trainc explain --image` gives, or a generated Dockerfile's base
# with the user it adds), the container's env, the volumes it mounts and the tools trainc's init
# containers copy in. A container that runs trainc's entry script runs it whole (its preflight,
# the syncs, then the program, which the stand-in records); any other container must find its
# program on PATH, write its HOME and have Python's getpass name its user (what torch, Hugging
# Face, vLLM and Ray do at start); a Dask scheduler or worker then runs its own command line with
# this machine's Dask until it is ready (RUNNER, below). Needs root; otherwise every case is
# skipped, saying why.
# Usage: tests/firstminute_test.sh TRAINC
set -uo pipefail
# shellcheck source=tests/tap.sh
. "$(dirname "${BASH_SOURCE[0]}")/tap.sh"
tap_init "$@"
# shellcheck source=tests/standin.sh
. tests/standin.sh

if ! reason=$(standin_usable) || ! reason=$("$PYTHON" -c 'import yaml' 2>&1); then
  echo "ok 1 - first minute of the new users' systems # SKIP $reason"
  echo "1..1"
  exit 0
fi
standin_setup
rc=0

# Images trainc pins whose containers run nothing of the user's: GKE's pause image (the gIB
# installer DaemonSet's long-running container).
PINNED_IDLE="gke.gcr.io/pause:3.8"

# What the node holds in the host paths pods mount: on an RDMA pool, the gIB installer's NCCL
# environment script (GKE's "Run A4 with GPUDirect RDMA": `source /usr/local/gib/scripts/set_nccl_env.sh`).
node_paths() {
  if [ -d "$1/usr/local/gib" ]; then
    mkdir -p "$1/usr/local/gib/scripts"
    printf 'export NCCL_NET=gIB\n' >"$1/usr/local/gib/scripts/set_nccl_env.sh"
  fi
}

# The probe of a container that runs no entry script: its program, its HOME, its user's name.
PROBE=$TMP/probe.sh
cat >"$PROBE" <<'SH'
program=$FIRST_MINUTE_PROGRAM
command -v "$program" >/dev/null || { echo "first minute: no '$program' on PATH"; exit 127; }
if [ -z "${HOME:-}" ] || ! { : >"$HOME/.first-minute"; } 2>/dev/null; then
  echo "first minute: HOME (${HOME:-unset}) is not writable by uid $(id -u)"; exit 1
fi
if command -v python3 >/dev/null; then
  python3 -c 'import getpass; print("first minute: user", getpass.getuser())' || exit 1
  # A GPU container's CUDA libraries must run on the node's driver: torch (the stand-in's, which
  # models the image's build and the node's driver) stands for them.
  if [ "${FIRST_MINUTE_GPUS:-0}" -gt 0 ]; then
    python3 -c 'import sys, torch
seen, want = torch.cuda.device_count(), int(sys.argv[1])
if seen < want:
    sys.exit(f"first minute: CUDA {torch.version.cuda} sees {seen} of {want} GPU(s): the node driver cannot run it")' "$FIRST_MINUTE_GPUS" || exit 1
  fi
fi
SH
chmod 644 "$PROBE"

# The first minute of a container whose program the stand-in runs for real (Dask's): the probe's
# checks, then the container's own command line (FIRST_MINUTE_ARGV) until it is ready, in a
# network of its own: its readiness probe passes (FIRST_MINUTE_READY, as the kubelet would call
# it), or, for a Dask worker, which has none, it registers with a scheduler that stands in for the
# cluster's at the address the worker names (the Service's name resolves to loopback here).
RUNNER=$TMP/runner.sh
cat >"$RUNNER" <<'SH'
. "$FIRST_MINUTE_PROBE"
mapfile -t argv <"$FIRST_MINUTE_ARGV"
# Nothing started here outlives the first minute.
trap 'kill $(jobs -p) 2>/dev/null; sleep 1; kill -KILL $(jobs -p) 2>/dev/null; wait' EXIT
ready() {
  case "$FIRST_MINUTE_READY" in
    http\ *) set -- $FIRST_MINUTE_READY
      python3 -c 'import sys, urllib.request; urllib.request.urlopen(sys.argv[1], timeout=2)' "http://127.0.0.1:$2$3" 2>/dev/null ;;
    tcp\ *) (exec 3<>"/dev/tcp/127.0.0.1/${FIRST_MINUTE_READY#tcp }") 2>/dev/null ;;
    *) [[ $(<program.log) == *"Registered to:"* ]] ;;
  esac
}
if [ "$FIRST_MINUTE_READY" = - ] && [ "${argv[0]} ${argv[1]}" = "dask worker" ]; then
  dask scheduler --host 127.0.0.1 --port "${argv[2]##*:}" --no-dashboard >scheduler.log 2>&1 &
fi
"${argv[@]}" >program.log 2>&1 &
program=$!
for ((i = 0; i < 100; i++)); do
  if ready; then echo "first minute: ${argv[0]} ${argv[1]} is ready ($FIRST_MINUTE_READY)"; exit 0; fi
  if ! kill -0 "$program" 2>/dev/null; then echo "first minute: ${argv[*]} exited:"; tail -n 5 program.log; exit 1; fi
  sleep 0.25
done
echo "first minute: ${argv[*]} not ready in 25s:"; tail -n 5 program.log
exit 1
SH
chmod 644 "$RUNNER"

# runs_for_real PROGRAM: whether the stand-in runs PROGRAM itself rather than recording the call.
runs_for_real() { [ "$1" = dask ] && "$PYTHON" -c 'import distributed' 2>/dev/null; }

# first_minute SPEC: check, compile, and run every container of SPEC's output in its stand-in.
first_minute() {
  local spec=$1 name out list
  name=$(basename "$spec" .yaml)
  "$TRAINC" check "$spec" >"$TMP/check.out" 2>&1 || { echo "check refused it:"; cat "$TMP/check.out"; return 1; }
  rm -rf "$TMP/out" "$TMP/scripts"
  mkdir -p "$TMP/scripts"
  "$TRAINC" compile "$spec" -o "$TMP/out" >/dev/null || return 1
  out=$(find "$TMP/out" -mindepth 1 -maxdepth 1 -type d)
  list=$TMP/containers-$name
  "$PYTHON" tests/first_minute.py "$TRAINC" "$spec" "$out" . "$TMP/scripts" >"$list" || return 1
  local kind key ref user uid home tools archs users cuda min_driver where gpus cc program script injected volumes
  local envfile argv ready driver
  local -a env
  local ran=0 real=0 bad=0 call services
  services=$(awk -F'\t' '$1 == "services" { $1 = ""; print }' "$list")
  driver=$(awk -F'\t' '$1 == "driver" { print $2 }' "$list")
  # shellcheck disable=SC2034  # read by standin (tests/standin.sh): every GPU node's driver
  local STANDIN_DRIVER=$driver
  while IFS=$'\t' read -r kind key ref user uid home tools archs users cuda min_driver; do
    [ "$kind" = image ] || continue
    if [ "$user" = unknown ]; then
      case " $PINNED_IDLE " in *" $ref "*) continue ;; esac
      echo "image $ref is unknown to trainc (stdlib/images.yaml) and built by nothing here: nothing to stand in for"
      bad=1
      continue
    fi
    [ "$archs" = - ] && archs=
    [ "$users" = - ] && users=
    image "$key" "$ref" "$user" "$uid" "$home" "$tools" "$archs" "$users"
    image_cuda "$key" "${cuda#-}" "${min_driver#-}"
  done <"$list"
  while IFS=$'\t' read -r where key uid gpus cc program script injected volumes envfile argv ready; do
    case "$where" in image | services | driver) continue ;; esac
    [ -n "${REF[$key]:-}" ] || continue  # a pinned idle container
    mapfile -t env <"$envfile"
    [ "$injected" = - ] && injected=
    [ "$volumes" = - ] && volumes=
    if [ "$script" != - ]; then
      STANDIN_PY_RECORD=1 STANDIN_PREPARE=node_paths STANDIN_INJECTED=$injected STANDIN_VOLUMES=$volumes standin "$key" "$uid" "$gpus" "$cc" "$script" "${env[@]}"
      if [ "$rc" != 0 ] || grep -q '^trainc preflight' "$TMP/pod.out"; then
        echo "$where (${REF[$key]}, uid $uid): its entry script exited $rc:"; tail -n 5 "$TMP/pod.out"; bad=1; continue
      fi
      # The program started: the launcher or interpreter the stand-in records.
      local started=
      for call in "$TMP"/calls/*; do [ "${call##*/}" = aws ] || [ ! -e "$call" ] || started=${call##*/}; done
      if [ -z "$started" ]; then
        echo "$where: the entry script ended without starting its program:"; tail -n 5 "$TMP/pod.out"; bad=1; continue
      fi
    elif runs_for_real "$program"; then
      STANDIN_NET=$services STANDIN_TIMEOUT=40 STANDIN_INJECTED=$injected STANDIN_VOLUMES=$volumes \
        standin "$key" "$uid" "$gpus" "$cc" "$RUNNER" "${env[@]}" "FIRST_MINUTE_PROGRAM=$program" "FIRST_MINUTE_GPUS=$gpus" \
        "FIRST_MINUTE_PROBE=$PROBE" "FIRST_MINUTE_ARGV=$argv" "FIRST_MINUTE_READY=$ready"
      if [ "$rc" != 0 ]; then
        echo "$where (${REF[$key]}, uid $uid): exit $rc:"; tail -n 8 "$TMP/pod.out"; bad=1; continue
      fi
      real=$((real + 1))
    else
      # (standin runs SCRIPT with no arguments: the program comes through the env.)
      STANDIN_PREPARE=node_paths STANDIN_INJECTED=$injected STANDIN_VOLUMES=$volumes standin "$key" "$uid" "$gpus" "$cc" "$PROBE" "${env[@]}" \
        "FIRST_MINUTE_PROGRAM=$program" "FIRST_MINUTE_GPUS=$gpus"
      if [ "$rc" != 0 ]; then
        echo "$where (${REF[$key]}, uid $uid, program $program): exit $rc:"; tail -n 5 "$TMP/pod.out"; bad=1; continue
      fi
    fi
    ran=$((ran + 1))
  done <"$list"
  [ "$bad" = 0 ] || return 1
  [ "$ran" -gt 0 ] || { echo "no container ran"; return 1; }
  echo "$ran container(s) through their first minute, $real of them running their own command line until ready"
}

for spec in tests/firstminute/*.yaml; do
  t "$(sed -n '1s/^# //p' "$spec" | sed 's/: .*//') ($spec): check passes and every container's first minute succeeds" first_minute "$spec"
done
tap_done
