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

# ---- the images ----------------------------------------------------------------------------
# In the words of stdlib/images.yaml: user, uid, home, tools (beyond the base every Debian or
# Ubuntu image has: bash, coreutils, findutils, getent), and the GPU architectures (sm_XY as XY)
# its torch has kernels for (compute_XY: PTX).
declare -A REF USER_OF UID_OF HOME_OF TOOLS ARCHS
image() {  # image NAME REFERENCE USER UID HOME TOOLS ARCHS
  REF[$1]=$2 USER_OF[$1]=$3 UID_OF[$1]=$4 HOME_OF[$1]=$5 TOOLS[$1]=$6 ARCHS[$1]=$7
}
# known_image NAME REFERENCE: an image stdlib/images.yaml knows, as `trainc explain --image` reads
# it (the same facts check judges by), so the stand-in holds what check assumes the image holds.
known_image() {
  local facts
  facts=$("$TRAINC" explain --image "$2" --format json | /usr/bin/python3 -c '
import json, sys
f = json.load(sys.stdin)
if not f["known"] or f["uid"] is None:
    sys.exit("unknown")
archs = [str(a) for a in f["archs"]] + (["compute_%d" % f["ptx"]] if f["ptx"] else [])
print(f["user"], f["uid"], f["home"], ",".join(f["tools"]), ",".join(archs))') ||
    { echo "Bail out! trainc explain --image $2 gave no facts"; exit 1; }
  local user uid home tools archs
  read -r user uid home tools archs <<<"$facts"
  image "$1" "$2" "$user" "$uid" "$home" "${tools//,/ }" "${archs//,/ }"
}
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
# A user whose home is / (useradd --no-create-home, no HOME): uid 1000 cannot write there.
image homeless registry.test/ml/homeless:1.0 app 1000 / "python3 python" ""

# What every image here has; the tools above come on top.
BASE_TOOLS="bash env id date tee mkdir touch rm sleep sort tail cut dirname cp cat ls find getent"

# ---- can this machine make the stand-in? -----------------------------------------------------
skip_all() {
  echo "ok 1 - stand-in containers for the entry scripts # SKIP $1"
  echo "1..1"
  exit 0
}
[ "$(id -u)" = 0 ] || skip_all "not root: changing uid (setpriv) and bind-mounting /etc/passwd (unshare -m) need root"
command -v setpriv >/dev/null || skip_all "setpriv (util-linux) is not installed"
unshare -m true 2>/dev/null || skip_all "unshare -m fails here (no CAP_SYS_ADMIN in this container)"
# Debian's python3, which any uid can run (a pyenv python under /root is out of its reach).
PYTHON=/usr/bin/python3
[ -x "$PYTHON" ] || skip_all "$PYTHON is not installed"
chmod 755 "$TMP"  # the pod's uid walks into it

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

# ---- the stand-in ----------------------------------------------------------------------------
# standin IMAGE UID GPUS CC SCRIPT [NAME=VALUE...]: runs SCRIPT as a pod of IMAGE whose process
# runs as UID on a node whose GPUs have compute capability CC, with the container's env NAME=VALUE
# (HOME, when not given, is the passwd entry's home of UID, else /, as the container runtime
# sets it). The pod's filesystem is $POD (TRAINC_POD_ROOT): the home, /tmp and /workspace under
# it; the bucket is $TMP/bucket. Sets rc, SECS (how long it ran) and leaves its output in
# $TMP/pod.out and the stand-ins' calls in $TMP/calls.
POD=$TMP/pod
standin() {
  local name=$1 uid=$2 gpus=$3 cc=$4 script=$5
  shift 5
  local user=${USER_OF[$name]} iuid=${UID_OF[$name]} home=${HOME_OF[$name]} t
  rm -rf "$POD" "$TMP/calls"
  mkdir -p "$POD/etc" "$POD/bin" "$POD/tmp" "$POD/workspace" "$TMP/calls" "$TMP/bucket/bkt/runs/code"
  chmod 755 "$POD" "$POD/etc" "$POD/bin"
  chmod 1777 "$POD/tmp" "$TMP/calls"
  chmod -R a+rwX "$TMP/bucket"
  chown "$uid:$uid" "$POD/workspace"
  # The image's /etc/passwd and /etc/group.
  printf 'root:x:0:0:root:/root:/bin/bash\n' >"$POD/etc/passwd"
  printf 'root:x:0:\n' >"$POD/etc/group"
  if [ "$iuid" != 0 ]; then
    printf '%s:x:%s:%s::%s:/bin/bash\n' "$user" "$iuid" "$iuid" "$home" >>"$POD/etc/passwd"
    printf '%s:x:%s:\n' "$user" "$iuid" >>"$POD/etc/group"
  fi
  mkdir -p "$POD/root"
  chmod 700 "$POD/root"
  if [ "$home" != / ] && [ "$home" != /root ]; then mkdir -p "$POD$home" && chown "$iuid:$iuid" "$POD$home"; fi
  # The image's tools.
  for t in $BASE_TOOLS; do ln -s "$(command -v "$t")" "$POD/bin/$t" || return 1; done
  for t in ${TOOLS[$name]}; do
    case " $BASE_TOOLS " in *" $t "*) continue ;; esac
    case "$t" in
      aws)
        cat >"$POD/bin/aws" <<SH
#!$POD/bin/bash
# aws s3 sync SRC DST: s3://bkt/x is the folder $TMP/bucket/bkt/x.
printf '%s\n' "\$*" >>'$TMP/calls/aws'
map() { case "\$1" in s3://*) printf '%s\n' '$TMP/bucket/'"\${1#s3://}" ;; *) printf '%s\n' "\$1" ;; esac; }
src=\$(map "\$3") dst=\$(map "\$4")
mkdir -p "\$dst"
if [ -d "\$src" ]; then cp -r "\$src/." "\$dst/"; fi
SH
        ;;
      torchrun)
        cat >"$POD/bin/torchrun" <<SH
#!$POD/bin/bash
printf '%s\n' "\$*" >>'$TMP/calls/torchrun'
mkdir -p out && echo w >out/ckpt-1.pt
SH
        ;;
      python3 | python)
        # The interpreter of this machine, whose torch is the stand-in below.
        cat >"$POD/bin/$t" <<SH
#!$POD/bin/bash
export PYTHONPATH='$TMP/torch' FAKE_GPUS='$gpus' FAKE_CC='$cc' FAKE_ARCHS='${ARCHS[$name]}'
exec '$PYTHON' "\$@"
SH
        ;;
      *) printf '#!%s\nprintf "%%s\\n" "$*" >>%s\n' "$POD/bin/bash" "'$TMP/calls/$t'" >"$POD/bin/$t" ;;
    esac
    chmod 755 "$POD/bin/$t"
  done
  # HOME as the container runtime sets it, unless the env gives it.
  local -a env=("$@")
  if ! printf '%s\n' "${env[@]}" | grep -q '^HOME='; then
    local h
    h=$(awk -F: -v u="$uid" '$3 == u { print $6 }' "$POD/etc/passwd")
    env+=("HOME=${h:-/}")
  fi
  # Pod paths (HOME) live under the pod's root.
  local i
  for i in "${!env[@]}"; do
    case "${env[$i]}" in HOME=/*) env[i]="HOME=$POD${env[$i]#HOME=}" ;; esac
  done
  rc=0
  local t0
  t0=$(date +%s%N)
  (cd "$POD/workspace" && unshare -m "$POD/bin/bash" -c \
    'mount --bind "$1/etc/passwd" /etc/passwd && mount --bind "$1/etc/group" /etc/group && shift && exec "$@"' \
    standin "$POD" setpriv --reuid="$uid" --regid="$uid" --clear-groups \
    env -i PATH="$POD/bin" TRAINC_POD_ROOT="$POD" "${env[@]}" "$(command -v timeout)" 30 "$POD/bin/bash" "$script") >"$TMP/pod.out" 2>&1 || rc=$?
  SECS=$(( ($(date +%s%N) - t0) / 1000000 ))  # milliseconds
}

# torch as the image and node have it: FAKE_GPUS GPUs of compute capability FAKE_CC, and a build
# with kernels for FAKE_ARCHS.
mkdir -p "$TMP/torch/torch"
cat >"$TMP/torch/torch/__init__.py" <<'PY'
import os
__version__ = "2.5.1+stand-in"
class version:
    cuda = "12.4"
class cuda:
    @staticmethod
    def device_count():
        return int(os.environ["FAKE_GPUS"])
    @staticmethod
    def get_arch_list():
        return [a if a.startswith("compute_") else f"sm_{a}" for a in os.environ["FAKE_ARCHS"].split()]
    @staticmethod
    def get_device_capability(i):
        cc = int(os.environ["FAKE_CC"])
        return cc // 10, cc % 10
    @staticmethod
    def get_device_name(i):
        return {"100": "NVIDIA B200", "90": "NVIDIA H100 80GB HBM3", "89": "NVIDIA L4"}.get(os.environ["FAKE_CC"], "GPU")
PY
chmod -R a+rX "$TMP/torch"

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
