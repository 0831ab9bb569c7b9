#!/usr/bin/env bash
# Installs trainc's Python environment from the Python package index: a virtual environment of
# Debian's python3 holding tools/python/requirements.lock (PyTorch 2, torchvision, Ray, the CUDA 13
# toolchain and NCCL from NVIDIA's wheels, the benchmarks' XGBoost and scikit-learn), never the
# system Python's site-packages. Quiet when it is already there.
#
# Where: $TRAINC_PYTHON_HOME, else ${XDG_CACHE_HOME:-~/.cache}/trainc/python, one folder per lock
# (its sha256's first 12 digits), so that a changed lock makes a new environment beside the old.
# The wheels are downloaded into `wheels/` there first (pip download checks each against the lock's
# hash) and installed from it with no index: a new lock downloads only the files it changed. `current` links to the
# environment of this checkout's lock: `trainc run --local` finds its python3 there, and dev.sh
# builds trainrt with the CUDA toolkit in its `cuda` folder, laid out as /usr/local/cuda is
# (bin/nvcc, include, lib64, nvvm; links into the wheels).
#
# Usage: tools/install-python.sh            install if missing
#        tools/install-python.sh --prefix   print the environment's folder (after installing)
#        tools/install-python.sh --cuda-home   print its CUDA toolkit folder (after installing)
# The first install downloads about 3.2 GB (torch's CUDA libraries are most of it) and takes
# 6.6 GB on disk for the environment, plus the downloaded wheels.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
lock="$root/tools/python/requirements.lock"
reqs="$root/tools/python/requirements.in"
home=${TRAINC_PYTHON_HOME:-${XDG_CACHE_HOME:-$HOME/.cache}/trainc/python}
python=/usr/bin/python3   # Debian's: the lock is made for its CPython 3.11 (tools/python/lock.py)

key=$(sha256sum "$lock" | cut -c1-12)
env_dir="$home/$key"

say() { echo "install-python: $*" >&2; }

# pip in a virtual environment trusts its own copy of Mozilla's CAs; the system's bundle also holds
# the local CAs a proxy may need (update-ca-certificates adds /usr/local/share/ca-certificates).
if [ -z "${PIP_CERT:-}" ] && [ -f /etc/ssl/certs/ca-certificates.crt ]; then
  export PIP_CERT=/etc/ssl/certs/ca-certificates.crt
fi

# /usr/local/cuda's layout over the wheels' folders: nvcc finds its front end (crt), NVVM and the
# runtime's headers relative to itself, and meson's CUDA dependency finds cudart and NCCL in lib64.
make_cuda_home() {
  local site cu nccl cuda="$env_dir/cuda" d f
  site=$("$env_dir/bin/python3" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
  cu="$site/nvidia/cu13"
  nccl="$site/nvidia/nccl"
  if [ ! -x "$cu/bin/nvcc" ]; then say "no nvcc in $cu/bin: the nvidia-cuda-nvcc wheel's layout changed"; return 1; fi
  rm -rf "$cuda"
  mkdir -p "$cuda/lib64" "$cuda/include"
  # nvcc reads nvcc.profile beside its own file, found through /proc/self/exe, and takes the folder
  # above as the toolkit's (TOP: include, lib64, nvvm): a symbolic link to the wheel's bin would
  # make TOP the wheel's folder, which has no lib64. Hard links (a copy across file systems) keep
  # TOP here.
  cp -al "$cu/bin" "$cuda/bin" 2>/dev/null || cp -a "$cu/bin" "$cuda/bin"
  ln -s "$cu/nvvm" "$cuda/nvvm"
  ln -s lib64 "$cuda/lib"
  for d in "$cu/include" "$nccl/include"; do
    for f in "$d"/*; do [ -e "$f" ] && ln -sfn "$f" "$cuda/include/$(basename "$f")"; done
  done
  for d in "$cu/lib" "$nccl/lib"; do
    for f in "$d"/*; do [ -e "$f" ] && ln -sfn "$f" "$cuda/lib64/$(basename "$f")"; done
  done
  # The wheels ship only the versioned sonames; the linker wants the plain names.
  for f in "$cuda"/lib64/lib*.so.*; do
    local plain=${f%%.so.*}.so
    [ -e "$plain" ] || ln -s "$(basename "$f")" "$plain"
  done
  "$cuda/bin/nvcc" --version | sed -n 's/^Cuda compilation tools, release \([0-9.]*\).*/{"cuda": {"name": "CUDA SDK", "version": "\1"}}/p' \
    >"$cuda/version.json"
  test -s "$cuda/version.json"
}

install_env() {
  if ! "$python" -c 'import ensurepip, venv' 2>/dev/null; then
    say "$python has no venv module: install Debian's python3-venv (tools/install-deps.sh does)"
    return 2
  fi
  local tag want start
  tag=$("$python" -c 'import platform, sys; print(f"{sys.version_info[0]}.{sys.version_info[1]} {platform.machine()}")')
  want=$(sed -n 's/^# for CPython \([0-9]*\.[0-9]*\)\.[0-9]* on \([^ ]*\) .*/\1 \2/p' "$lock")
  mkdir -p "$home"
  rm -rf "$env_dir"
  start=$SECONDS
  "$python" -m venv "$env_dir"
  if [ "$tag" = "$want" ]; then
    say "downloading $(grep -c '^[a-z]' "$lock") pinned packages (tools/python/requirements.lock) into $home/wheels:" \
        "about 3.2 GB the first time (PyTorch's CUDA libraries), then only what a new lock changes"
    "$env_dir/bin/pip" download --disable-pip-version-check --no-input --progress-bar off -q \
      --require-hashes --no-deps -r "$lock" -d "$home/wheels" >&2
    say "installing them into $env_dir"
    "$env_dir/bin/pip" install --disable-pip-version-check --no-input --progress-bar off -q \
      --no-index --find-links "$home/wheels" --require-hashes --no-deps -r "$lock" >&2
  else
    say "the lock is for CPython $want, this is $tag: installing tools/python/requirements.in (pinned, no hashes)"
    "$env_dir/bin/pip" install --disable-pip-version-check --no-input --progress-bar off -q -r "$reqs" >&2
  fi
  make_cuda_home
  # The checks a user's run depends on: every package imports, and nvcc runs.
  "$env_dir/bin/python3" -c 'import torch, torchvision, ray, xgboost, sklearn' >&2
  "$env_dir/cuda/bin/nvcc" --version >/dev/null
  touch "$env_dir/.complete"
  say "installed in $((SECONDS - start)) s: $(du -sh "$env_dir" | cut -f1) in $env_dir"
}

if [ ! -f "$env_dir/.complete" ]; then
  mkdir -p "$home"
  # One install at a time (two suites, two checkouts of the same lock).
  exec 9>"$home/.lock"
  flock 9
  if [ ! -f "$env_dir/.complete" ]; then
    if ! install_env; then
      rm -rf "$env_dir"
      say "installing the Python environment failed; nothing was left in $env_dir"
      exit 1
    fi
  fi
  flock -u 9
fi
if [ "$(readlink "$home/current" 2>/dev/null)" != "$key" ]; then
  ln -sfn "$key" "$home/current.tmp.$$" && mv -T "$home/current.tmp.$$" "$home/current"
fi

# Triton for `trainc run --local`'s Triton services (tools/python/triton.lock): NVIDIA's build in the
# nvidia-pytriton wheel, unpacked into its own folder (a zip keeps no file modes: the binaries are
# made executable again), and `triton` linked to it. About 55 MB.
triton_lock="$root/tools/python/triton.lock"
triton_key="triton-$(sha256sum "$triton_lock" | cut -c1-12)"
triton_dir="$home/$triton_key"
install_triton() {
  local wheel
  rm -rf "$triton_dir"
  # Called where set -e does not hold (`if ! install_triton`): each step says when it failed.
  "$env_dir/bin/pip" download --disable-pip-version-check --no-input --progress-bar off -q \
    --require-hashes --no-deps -r "$triton_lock" -d "$home/wheels" >&2 || return 1
  wheel=$(sed -n 's/.*# \(nvidia_pytriton-.*\.whl\)$/\1/p' "$triton_lock")
  mkdir -p "$triton_dir" || return 1
  "$env_dir/bin/python3" -m zipfile -e "$home/wheels/$wheel" "$triton_dir" || return 1
  chmod +x "$triton_dir/pytriton/tritonserver/bin/tritonserver" \
    "$triton_dir"/pytriton/tritonserver/python_backend_stubs/*/triton_python_backend_stub || return 1
  # The server starts with the wheel's own libraries: it prints its usage (and exits 1).
  local usage
  usage=$(LD_LIBRARY_PATH="$triton_dir/nvidia_pytriton.libs" "$triton_dir/pytriton/tritonserver/bin/tritonserver" \
    --help 2>&1) || true
  case $usage in
    *--model-repository*) ;;
    *) say "Triton's server does not start here: ${usage:0:300}"; return 1 ;;
  esac
  touch "$triton_dir/.complete"
  say "installed Triton ($wheel) in $triton_dir"
}
if [ ! -f "$triton_dir/.complete" ]; then
  exec 9>"$home/.lock"
  flock 9
  if [ ! -f "$triton_dir/.complete" ] && ! install_triton; then
    rm -rf "$triton_dir"
    say "installing Triton failed; nothing was left in $triton_dir"
    exit 1
  fi
  flock -u 9
fi
if [ "$(readlink "$home/triton" 2>/dev/null)" != "$triton_key" ]; then
  ln -sfn "$triton_key" "$home/triton.tmp.$$" && mv -T "$home/triton.tmp.$$" "$home/triton"
fi

case ${1:-} in
  --prefix) echo "$env_dir" ;;
  --cuda-home) echo "$env_dir/cuda" ;;
  '') ;;
  *) say "unknown argument '$1' (--prefix, --cuda-home)"; exit 2 ;;
esac
