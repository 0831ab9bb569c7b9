#!/usr/bin/env bash
# Generated entry scripts run in a stand-in container (TAP): the pod's uid (setpriv), the image's
# /etc/passwd and /etc/group (bind-mounted in a mount namespace of its own, so getent and Python's
# pwd read them as in the image), and a PATH holding only the tools the image has (links to this
# machine's programs; stand-ins for aws and torchrun that record their calls; a python3 whose
# `torch` reports the node's GPUs and the image's CUDA architectures). The preflight must stop
# a pod that would die in its first minute, within a second, with one line naming the image, what
# is missing and the fix, and exit 78 before any sync; and let a pod that would run, run.
# Needs root (to change uid and mount); otherwise every case is skipped, saying why.
# Usage: tests/standin_test.sh TRAINC
set -uo pipefail
# shellcheck source=tests/tap.sh
. "$(dirname "${BASH_SOURCE[0]}")/tap.sh"
tap_init "$@"

# shellcheck source=tests/standin.sh
. tests/standin.sh

# ---- the images ----------------------------------------------------------------------------
# pytorch/pytorch as its publisher builds it: root, no AWS CLI, kernels up to Hopper.
known_image pytorch pytorch/pytorch:2.5.1-cuda12.4-cudnn9-runtime
# The same with the AWS CLI added (kernels still up to Hopper).
image pytorch-aws registry.test/ml/pytorch-aws:2.5.1 root 0 /root "python3 python pip torchrun aws" "50 60 70 75 80 86 90"
# An image with a user of its own, its home, the AWS CLI and a torch built through Blackwell.
image trainer registry.test/ml/trainer:1.0 trainer 1000 /home/trainer "python3 python torchrun aws" "80 86 90 100 120"
# Kernels up to sm_86, and PTX of sm_90 that the driver compiles for newer GPUs.
image ptx registry.test/ml/ptx:1.0 root 0 /root "python3 torchrun aws" "80 86 compute_90"
# vllm/vllm-openai: root only; a pod run as uid 1000 has no passwd entry.
known_image vllm vllm/vllm-openai:v0.31.0
# pytorch/pytorch as a CUDA 13 build, whose libraries need a 580-series driver.
known_image pytorch13 pytorch/pytorch:2.9.0-cuda13.0-cudnn9-runtime
# A user whose home is / (useradd --no-create-home, no HOME): uid 1000 cannot write there.
image homeless registry.test/ml/homeless:1.0 app 1000 / "python3 python" ""

# ---- can this machine make the stand-in? -----------------------------------------------------
skip_all() {
  echo "ok 1 - stand-in containers for the entry scripts # SKIP $1"
  echo "1..1"
  exit 0
}
reason=$(standin_usable) || skip_all "$reason"
standin_setup
rc=0 SECS=0

# ---- the specs -------------------------------------------------------------------------------
# A torchrun step on 4 GPUs syncing from and to S3 (the docs' S3 example's shape), and a Python
# command step that asks getpass who it runs as (what torch, Hugging Face and vLLM do).
cat >"$TMP/s3.yaml" <<'SPEC'
apiVersion: trainc/v1
kind: TrainingSystem
name: standin
storage:
  runs: {s3: {bucket: bkt, prefix: runs}}
pipeline:
  - name: train
    image: IMAGE
    gpus: 4
    torchrun: {script: train.py, args: [--epochs, 2]}
    inputs:
      - {from: "runs:/code/", to: .}
    outputs: {path: out, to: "runs:/out/", every: 1h}
    checkpoints: {path: out, pattern: "*.pt", resumeFlag: --resume}
SPEC
cat >"$TMP/py.yaml" <<'SPEC'
apiVersion: trainc/v1
kind: TrainingSystem
name: standin
pipeline:
  - name: whoami
    image: IMAGE
    command: [python3, -c, 'import getpass, pathlib; pathlib.Path("user.txt").write_text(getpass.getuser())']
SPEC
cat >"$TMP/gpu.yaml" <<'SPEC'
apiVersion: trainc/v1
kind: TrainingSystem
name: standin
pipeline:
  - name: train
    image: IMAGE
    gpus: 4
    torchrun: {script: train.py}
SPEC

# script_of SPEC IMAGE OUT: the entry script of SPEC's only step with IMAGE, into OUT.
script_of() {
  sed "s|image: IMAGE|image: $2|" "$TMP/$1.yaml" >"$TMP/spec-$1.yaml"
  rm -rf "$TMP/out"
  "$TRAINC" compile "$TMP/spec-$1.yaml" -o "$TMP/out" >/dev/null || return 1
  awk '/^  entrypoint.sh: \|/ { on = 1; next } on && /^[^ ]/ { on = 0 } on { sub(/^    /, ""); print }' \
    "$TMP"/out/standin/k8s/*-configmap.yaml >"$3"
  chmod 644 "$3"
  [ -s "$3" ]
}

# The one preflight line of the pod's output (fails unless there is exactly one).
preflight_line() {
  local lines
  lines=$(grep '^trainc preflight: ' "$TMP/pod.out")
  [ "$(printf '%s\n' "$lines" | grep -c .)" = 1 ] || { echo "not one preflight line:"; cat "$TMP/pod.out"; return 1; }
  printf '%s\n' "$lines"
}

# stopped WANT...: the pod exited 78 within a second, before any sync (no aws call, no state
# folder), with one line holding every WANT.
stopped() {
  local line w
  [ "$rc" = 78 ] || { echo "exit $rc, not 78:"; cat "$TMP/pod.out"; return 1; }
  [ "$SECS" -lt 1000 ] || { echo "stopped after ${SECS}ms, not within a second"; return 1; }
  line=$(preflight_line) || { echo "$line"; return 1; }
  for w in "$@"; do
    [[ $line == *"$w"* ]] || { echo "the line lacks '$w': $line"; return 1; }
  done
  [ ! -e "$TMP/calls/aws" ] || { echo "synced before stopping:"; cat "$TMP/calls/aws"; return 1; }
  [ ! -e "$POD/tmp/trainc" ] || { echo "the script did work before its preflight stopped it"; return 1; }
  [ ! -e "$TMP/calls/torchrun" ] || { echo "the trainer ran"; return 1; }
  echo "$line"
}

S3_SCRIPT=$TMP/s3-entry.sh
PY_SCRIPT=$TMP/py-entry.sh

no_aws() {
  script_of s3 "${REF[pytorch]}" "$S3_SCRIPT" || return 1
  standin pytorch 0 4 90 "$S3_SCRIPT"
  stopped "image '${REF[pytorch]}' cannot run step 'train'" "no 'aws' on PATH" "add the AWS CLI to the image"
}
t "an image without aws on an S3 step stops in its first second, before any sync, naming the image and the fix" no_aws

no_kernels() {
  script_of s3 "${REF[pytorch-aws]}" "$S3_SCRIPT" || return 1
  standin pytorch-aws 0 4 100 "$S3_SCRIPT"
  [ "$rc" = 78 ] || { echo "exit $rc, not 78:"; cat "$TMP/pod.out"; return 1; }
  local line
  line=$(preflight_line) || { echo "$line"; return 1; }
  [[ $line == *"image '${REF[pytorch-aws]}'"*"has no kernels for GPU 0 (NVIDIA B200, sm_100)"*"built for sm_50 "*" sm_90: use an image whose torch is built for sm_100"* ]] ||
    { echo "the line does not say the GPU has no kernels: $line"; return 1; }
  [ ! -e "$TMP/calls/aws" ] || { echo "synced before stopping"; return 1; }
  echo "$line"
}
t "a torch without kernels for the node's GPU (sm_100) stops before any sync" no_kernels

too_few_gpus() {
  script_of s3 "${REF[trainer]}" "$S3_SCRIPT" || return 1
  standin trainer 1000 2 90 "$S3_SCRIPT"
  [ "$rc" = 78 ] || { echo "exit $rc, not 78:"; cat "$TMP/pod.out"; return 1; }
  grep -q "^trainc preflight: .*sees 2 of the 4 GPU(s) the pod was given" "$TMP/pod.out" || { cat "$TMP/pod.out"; return 1; }
}
t "torch seeing fewer GPUs than the pod was given stops it" too_few_gpus

# A build for a newer CUDA than the node's driver runs: CUDA cannot initialise and torch sees no GPU.
# The node's driver is the one GKE installs for trainc's pools (gpu-driver-version LATEST,
# stdlib/images.yaml gkeLatestDriver); a 580 driver runs the build.
GPU_SCRIPT=$TMP/gpu-entry.sh
old_driver() {
  local latest
  latest=$(awk '/^gkeLatestDriver:/ { on = 1 } on && $1 == "version:" { gsub(/"/, "", $2); print $2; exit }' stdlib/images.yaml)
  [ -n "$latest" ] || { echo "no gkeLatestDriver version in stdlib/images.yaml"; return 1; }
  script_of gpu "${REF[pytorch13]}" "$GPU_SCRIPT" || return 1
  STANDIN_DRIVER=$latest standin pytorch13 0 4 100 "$GPU_SCRIPT"
  [ "$rc" = 78 ] || { echo "driver $latest: exit $rc, not 78:"; cat "$TMP/pod.out"; return 1; }
  grep -q "^trainc preflight: .*(CUDA 13.0) sees 0 of the 4 GPU(s) the pod was given: the NVIDIA driver on the node must run CUDA 13.0" \
    "$TMP/pod.out" || { echo "driver $latest: the preflight does not name the driver:"; cat "$TMP/pod.out"; return 1; }
  [ ! -e "$TMP/calls/torchrun" ] || { echo "driver $latest: the trainer ran"; return 1; }
  STANDIN_DRIVER=580.65.06 standin pytorch13 0 4 100 "$GPU_SCRIPT"
  [ "$rc" = 0 ] && [ -e "$TMP/calls/torchrun" ] || { echo "driver 580.65.06: exit $rc, trainer not started:"; cat "$TMP/pod.out"; return 1; }
}
t "a CUDA 13 build on a node with GKE's LATEST driver (570) stops, naming the driver; a 580 driver runs it" old_driver

# Kernels of the same major version and a lower minor one run (sm_86 on an L4, sm_89); PTX runs on
# any newer GPU (compute_90 on a B200); nothing runs on a GPU newer than every cubin without PTX.
kernel_compatibility() {
  script_of s3 "${REF[ptx]}" "$S3_SCRIPT" || return 1
  standin ptx 0 4 89 "$S3_SCRIPT"
  [ "$rc" = 0 ] || { echo "sm_86 kernels on sm_89: exit $rc"; cat "$TMP/pod.out"; return 1; }
  standin ptx 0 4 100 "$S3_SCRIPT"
  [ "$rc" = 0 ] || { echo "compute_90 PTX on sm_100: exit $rc"; cat "$TMP/pod.out"; return 1; }
  standin pytorch-aws 0 4 89 "$S3_SCRIPT"
  [ "$rc" = 0 ] || { echo "sm_86 of pytorch on sm_89: exit $rc"; cat "$TMP/pod.out"; return 1; }
  standin trainer 1000 4 75 "$S3_SCRIPT"  # a T4 (sm_75) under a torch built from sm_80
  [ "$rc" = 78 ] || { echo "sm_80 kernels on sm_75: exit $rc, not 78"; cat "$TMP/pod.out"; return 1; }
}
t "cubins run on the same major version and a newer minor one, PTX on any newer GPU, nothing on an older GPU" kernel_compatibility

# What the stand-in must show for the preflight to matter: Python's getpass fails for a uid the
# image's passwd lacks, unless USER or LOGNAME is set.
getpass_fails_without_entry() {
  printf '%s\n' "python3 -c 'import getpass; getpass.getuser()'" >"$TMP/who.sh"
  chmod 644 "$TMP/who.sh"
  standin vllm 1000 0 0 "$TMP/who.sh" HOME=/tmp
  [ "$rc" != 0 ] && grep -q "KeyError: 'getpwuid(): uid not found" "$TMP/pod.out" ||
    { echo "getpass did not fail as uid 1000 in an image without it (exit $rc):"; cat "$TMP/pod.out"; return 1; }
}
t "in the stand-in, getpass.getuser() fails for a uid the image's passwd lacks (as in the pod)" getpass_fails_without_entry

unknown_uid() {
  script_of py "${REF[vllm]}" "$PY_SCRIPT" || return 1
  standin vllm 1000 0 0 "$PY_SCRIPT" HOME=/tmp
  stopped "image '${REF[vllm]}' cannot run step 'whoami'" "uid 1000 has no passwd entry and neither USER nor LOGNAME is set" \
    "set env USER and LOGNAME"
}
t "a uid the image does not know, without USER or LOGNAME, stops with the fix" unknown_uid

unknown_uid_named() {
  script_of py "${REF[vllm]}" "$PY_SCRIPT" || return 1
  standin vllm 1000 0 0 "$PY_SCRIPT" HOME=/tmp USER=vllm LOGNAME=vllm
  [ "$rc" = 0 ] || { echo "exit $rc:"; cat "$TMP/pod.out"; return 1; }
  [ "$(cat "$POD/workspace/user.txt" 2>/dev/null)" = vllm ] || { echo "the command did not run as 'vllm':"; cat "$TMP/pod.out"; return 1; }
}
t "the same uid with USER and LOGNAME set passes, and getpass answers" unknown_uid_named

# An image without getent: the script reads /etc/passwd itself.
unknown_uid_without_getent() {
  local BASE_TOOLS=${BASE_TOOLS/ getent/}
  script_of py "${REF[vllm]}" "$PY_SCRIPT" || return 1
  standin vllm 1000 0 0 "$PY_SCRIPT" HOME=/tmp
  [ ! -e "$POD/bin/getent" ] || { echo "getent is on the stand-in's PATH"; return 1; }
  stopped "uid 1000 has no passwd entry" || return 1
  standin vllm 0 0 0 "$PY_SCRIPT"  # root has an entry
  [ "$rc" = 0 ] || { echo "root without getent: exit $rc"; cat "$TMP/pod.out"; return 1; }
}
t "without getent, a uid missing from the image's /etc/passwd stops, and root passes" unknown_uid_without_getent

unwritable_home() {
  script_of py "${REF[homeless]}" "$PY_SCRIPT" || return 1
  standin homeless 1000 0 0 "$PY_SCRIPT"
  stopped "image '${REF[homeless]}' cannot run step 'whoami'" "is not writable by uid 1000" "set env HOME on the step"
}
t "a HOME the uid cannot write (/) stops with the fix" unwritable_home

good_image() {
  script_of s3 "${REF[trainer]}" "$S3_SCRIPT" || return 1
  echo 'print("hi")' >"$TMP/bucket/bkt/runs/code/train.py"
  standin trainer 1000 4 90 "$S3_SCRIPT"
  [ "$rc" = 0 ] || { echo "exit $rc:"; cat "$TMP/pod.out"; return 1; }
  if grep -q '^trainc preflight' "$TMP/pod.out"; then echo "the preflight spoke:"; cat "$TMP/pod.out"; return 1; fi
  grep -q -- '--nproc-per-node=4' "$TMP/calls/torchrun" 2>/dev/null || { echo "the trainer did not run:"; cat "$TMP/pod.out"; return 1; }
  grep -q '^s3 sync s3://bkt/runs/code/' "$TMP/calls/aws" || { echo "the inputs were not synced"; return 1; }
  [ -e "$TMP/bucket/bkt/runs/out/ckpt-1.pt" ] || { echo "the outputs were not synced"; return 1; }
  local left
  left=$(find "$POD/home/trainer" -mindepth 1)
  [ -z "$left" ] || { echo "the preflight left files in HOME: $left"; return 1; }
}
t "the good image (its own user and home, aws, kernels for the GPU) passes its preflight and runs the trainer" good_image

# The same with a uid the image does not name: torchrun's Python needs USER/LOGNAME there too.
good_image_unknown_uid() {
  standin trainer 2000 4 90 "$S3_SCRIPT" HOME=/tmp
  stopped "uid 2000 has no passwd entry"
}
t "the good image run as a uid it does not name, without USER/LOGNAME, stops" good_image_unknown_uid

tap_done
