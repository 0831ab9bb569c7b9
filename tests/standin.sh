# shellcheck shell=bash
# Stand-in containers (sourced by tests that run what a pod runs, after tap.sh): a process as the
# pod's uid (setpriv) with the image's /etc/passwd and /etc/group (bind-mounted in a mount namespace
# of its own, so getent and Python's pwd read them as in the image) and a PATH holding only the
# tools the image has (links to this machine's programs; stand-ins for aws and torchrun that record
# their calls; a python3 whose `torch` reports the node's GPUs and the image's CUDA architectures).
# Needs root: standin_usable says why not. Uses $TRAINC (explain --image) and $TMP.

# ---- the images ----------------------------------------------------------------------------
# In the words of stdlib/images.yaml: user, uid, home, tools (beyond the base every Debian or
# Ubuntu image has: bash, coreutils, findutils, getent), and the GPU architectures (sm_XY as XY)
# its torch has kernels for (compute_XY: PTX).
# shellcheck disable=SC2034  # REF is read by the tests that source this
declare -A REF USER_OF UID_OF HOME_OF TOOLS ARCHS USERS CUDA_OF MIN_DRIVER_OF
# image NAME REFERENCE USER UID HOME TOOLS ARCHS [USERS]: USERS, more passwd entries as
# "uid:name:home ...".
image() {
  REF[$1]=$2 USER_OF[$1]=$3 UID_OF[$1]=$4 HOME_OF[$1]=$5 TOOLS[$1]=$6 ARCHS[$1]=$7 USERS[$1]=${8:-}
}
# image_cuda NAME CUDA MIN_DRIVER: the CUDA the image's libraries were built with and the oldest
# NVIDIA driver that runs them (torch sees no GPU on a node whose driver is older).
image_cuda() { CUDA_OF[$1]=$2 MIN_DRIVER_OF[$1]=$3; }
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
print(f["user"], f["uid"], f["home"], ",".join(f["tools"]), ",".join(archs), f["cuda"] or "-", f["minDriver"] or "-")') ||
    { echo "Bail out! trainc explain --image $2 gave no facts"; exit 1; }
  local user uid home tools archs cuda driver
  read -r user uid home tools archs cuda driver <<<"$facts"
  image "$1" "$2" "$user" "$uid" "$home" "${tools//,/ }" "${archs//,/ }"
  image_cuda "$1" "${cuda#-}" "${driver#-}"
}

# What every image here has; the tools above come on top.
BASE_TOOLS="bash env id date tee mkdir touch rm sleep sort tail cut dirname cp cat ls find getent"

# standin_usable: whether this machine can make the stand-in; else prints why not and fails.
standin_usable() {
  [ "$(id -u)" = 0 ] || { echo "not root: changing uid (setpriv) and bind-mounting /etc/passwd (unshare -m) need root"; return 1; }
  command -v setpriv >/dev/null || { echo "setpriv (util-linux) is not installed"; return 1; }
  unshare -m true 2>/dev/null || { echo "unshare -m fails here (no CAP_SYS_ADMIN in this container)"; return 1; }
  [ -x "$PYTHON" ] || { echo "$PYTHON is not installed"; return 1; }
}
# Debian's python3, which any uid can run (a pyenv python under /root is out of its reach).
PYTHON=/usr/bin/python3

# ---- the stand-in ----------------------------------------------------------------------------
# standin_tool TOOL OUT GPUS CC IMAGE: the stand-in of TOOL at OUT.
standin_tool() {
  local t=$1 out=$2 gpus=$3 cc=$4 name=$5
  case "$t" in
    aws)
      cat >"$out" <<SH
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
      cat >"$out" <<SH
#!$POD/bin/bash
printf '%s\n' "\$*" >>'$TMP/calls/torchrun'
mkdir -p out && echo w >out/ckpt-1.pt
SH
      ;;
    python3 | python)
      # The interpreter of this machine, whose torch is the stand-in below; with STANDIN_PY_RECORD,
      # every run but the preflight's GPU check (the code that asks torch for its architectures)
      # is recorded instead.
      cat >"$out" <<SH
#!$POD/bin/bash
if [ -n '${STANDIN_PY_RECORD:-}' ] && [[ "\${1:-} \${2:-}" != "-c "*get_arch_list* ]]; then
  printf '%s\n' "\$*" >>'$TMP/calls/$t'; exit 0
fi
export PYTHONPATH='$TMP/torch' FAKE_GPUS='$gpus' FAKE_CC='$cc' FAKE_ARCHS='${ARCHS[$name]}'
export FAKE_CUDA='${CUDA_OF[$name]:-}' FAKE_MIN_DRIVER='${MIN_DRIVER_OF[$name]:-}' FAKE_DRIVER='${STANDIN_DRIVER:-}'
exec '$PYTHON' "\$@"
SH
      ;;
    dask)
      # This machine's Dask (python3-distributed) runs for real; without it the call is recorded.
      if "$PYTHON" -c 'import distributed' 2>/dev/null; then
        printf '#!%s\nexec %s -m dask "$@"\n' "$POD/bin/bash" "'$PYTHON'" >"$out"
      else
        printf '#!%s\nprintf "%%s\\n" "$*" >>%s\n' "$POD/bin/bash" "'$TMP/calls/$t'" >"$out"
      fi
      ;;
    *) printf '#!%s\nprintf "%%s\\n" "$*" >>%s\n' "$POD/bin/bash" "'$TMP/calls/$t'" >"$out" ;;
  esac
  chmod 755 "$out"
}

# standin IMAGE UID GPUS CC SCRIPT [NAME=VALUE...]: runs SCRIPT as a pod of IMAGE whose process
# runs as UID on a node whose GPUs have compute capability CC, with the container's env NAME=VALUE
# (and TRAINC_RUN, from the pod's run label; HOME, when not given, is the passwd entry's home of UID, else /, as the container runtime
# sets it). The pod's filesystem is $POD (TRAINC_POD_ROOT): the home, /tmp and /workspace under
# it; the bucket is $TMP/bucket. Sets rc, SECS (how long it ran) and leaves its output in
# $TMP/pod.out and the stand-ins' calls in $TMP/calls.
# Optional settings: STANDIN_INJECTED, tools an init container copies to /opt/trainc-tools/<tool>/
# (as trainc's pods get the AWS CLI); STANDIN_VOLUMES, the folders the pod mounts (made under $POD,
# writable by UID); STANDIN_PY_RECORD=1, python3 records its runs but the preflight's (the first
# minute ends when the program starts); STANDIN_PREPARE, a function called with $POD before the
# run (what the node puts in host paths); STANDIN_NET="NAME...", the pod gets a network of its own
# (loopback alone) in which each NAME (the Services it reaches) resolves to 127.0.0.1;
# STANDIN_TIMEOUT, seconds before the run is stopped (30); STANDIN_DRIVER, the node's NVIDIA driver
# version (torch sees no GPU when it is older than the image's CUDA needs; unset: any driver).
POD=$TMP/pod
# Brings loopback up in a new network namespace (no `ip` on a minimal root): SIOCGIFFLAGS, then
# SIOCSIFFLAGS with IFF_UP.
LO_UP='import fcntl, socket, struct
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
flags = struct.unpack("16sH", fcntl.ioctl(s, 0x8913, struct.pack("16sH", b"lo", 0)))[1]
fcntl.ioctl(s, 0x8914, struct.pack("16sH", b"lo", flags | 1))'

# shellcheck disable=SC2034  # rc and SECS are for the caller
standin() {
  local name=$1 uid=$2 gpus=$3 cc=$4 script=$5
  shift 5
  local user=${USER_OF[$name]} iuid=${UID_OF[$name]} home=${HOME_OF[$name]} t entry
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
  for entry in ${USERS[$name]}; do
    IFS=: read -r t user home <<<"$entry"
    printf '%s:x:%s:%s::%s:/bin/bash\n' "$user" "$t" "$t" "$home" >>"$POD/etc/passwd"
    printf '%s:x:%s:\n' "$user" "$t" >>"$POD/etc/group"
    mkdir -p "$POD$home" && chown "$t:$t" "$POD$home"
  done
  user=${USER_OF[$name]} home=${HOME_OF[$name]}
  mkdir -p "$POD/root"
  chmod 700 "$POD/root"
  if [ "$home" != / ] && [ "$home" != /root ]; then mkdir -p "$POD$home" && chown "$iuid:$iuid" "$POD$home"; fi
  for t in ${STANDIN_VOLUMES:-}; do mkdir -p "$POD$t" && chown "$uid:$uid" "$POD$t"; done
  if [ -n "${STANDIN_PREPARE:-}" ]; then "$STANDIN_PREPARE" "$POD" || return 1; fi
  for t in ${STANDIN_INJECTED:-}; do
    mkdir -p "$POD/opt/trainc-tools/$t"
    standin_tool "$t" "$POD/opt/trainc-tools/$t/$t" "$gpus" "$cc" "$name"
  done
  # The image's tools.
  for t in $BASE_TOOLS; do ln -s "$(command -v "$t")" "$POD/bin/$t" || return 1; done
  for t in ${TOOLS[$name]}; do
    case " $BASE_TOOLS " in *" $t "*) continue ;; esac
    standin_tool "$t" "$POD/bin/$t" "$gpus" "$cc" "$name"
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
  local namespaces=-m
  if [ -n "${STANDIN_NET:-}" ]; then
    namespaces=-mn
    # The kubelet's /etc/hosts names the pod itself too.
    { printf '127.0.0.1\tlocalhost %s\n' "$(hostname)"; for t in $STANDIN_NET; do printf '127.0.0.1\t%s\n' "$t"; done; } >"$POD/etc/hosts"
  fi
  rc=0
  local t0
  t0=$(date +%s%N)
  (cd "$POD/workspace" && unshare "$namespaces" "$POD/bin/bash" -c \
    'mount --bind "$1/etc/passwd" /etc/passwd && mount --bind "$1/etc/group" /etc/group &&
     { [ ! -d "$1/opt" ] || mount --bind "$1/opt" /opt; } &&
     { [ ! -f "$1/etc/hosts" ] || { mount --bind "$1/etc/hosts" /etc/hosts && "$2" -c "$3"; }; } && shift 3 && exec "$@"' \
    standin "$POD" "$PYTHON" "$LO_UP" setpriv --reuid="$uid" --regid="$uid" --clear-groups \
    env -i PATH="$POD/bin" TRAINC_POD_ROOT="$POD" TRAINC_RUN=stand-in-run "${env[@]}" "$(command -v timeout)" "${STANDIN_TIMEOUT:-30}" \
    "$POD/bin/bash" "$script") >"$TMP/pod.out" 2>&1 || rc=$?
  SECS=$(( ($(date +%s%N) - t0) / 1000000 ))  # milliseconds
}

# standin_setup: $TMP open to the pod's uid, and torch as the image and node have it: FAKE_GPUS
# GPUs of compute capability FAKE_CC, and a build for CUDA FAKE_CUDA with kernels for FAKE_ARCHS.
# On a node whose driver (FAKE_DRIVER) is older than the build needs (FAKE_MIN_DRIVER), CUDA
# cannot initialise: torch warns and sees no GPU, as the real one does.
standin_setup() {
chmod 755 "$TMP"  # the pod's uid walks into it
mkdir -p "$TMP/torch/torch"
cat >"$TMP/torch/torch/__init__.py" <<'PY'
import os
__version__ = "2.5.1+stand-in"
class version:
    cuda = os.environ.get("FAKE_CUDA") or "12.4"
def _driver_runs_build():
    have, need = os.environ.get("FAKE_DRIVER"), os.environ.get("FAKE_MIN_DRIVER")
    if not have or not need:
        return True
    number = lambda v: tuple(int(x) for x in v.split("."))
    return number(have) >= number(need)
class cuda:
    @staticmethod
    def device_count():
        if not _driver_runs_build():
            import sys
            print("UserWarning: CUDA initialization: The NVIDIA driver on your system is too old "
                  f"(found version {os.environ['FAKE_DRIVER']})", file=sys.stderr)
            return 0
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
}
