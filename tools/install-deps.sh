#!/usr/bin/env bash
# Installs what building and testing trainc needs, from Debian's archive. Quiet when nothing is missing.
# Usage: tools/install-deps.sh [EXTRA_PACKAGE...]    (bench/compile.sh adds hyperfine)
# valijson comes as headers only: its Debian package drags in Qt and Poco through Depends, so the
# .deb is downloaded and unpacked into third_party/valijson (headers in third_party/valijson/usr/include).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# libxgboost-dev: trainrt trains through XGBoost's C API. python3-xgboost: XGBoost 1.7's tracker is
# Python (the distributed training tests start it). nodejs/npm: the Parquet tests read files back
# with DuckDB from the npm registry. python3-distributed/python3-dask: `trainc run --local` starts
# Dask clusters with Debian's `dask` command (tests/run_local_dask_test.sh). pre-commit/git:
# tests/precommit_test.sh runs the project's hooks with the real pre-commit in a git repository.
# python3-yaml: tests/ci_test.sh reads the generated CI files to lint every script in them.
# libgraphviz-dev: trainc lays out graph.svg with Graphviz's library; graphviz (the `dot` command)
# and zsh: tests/inspect_test.sh checks the DOT with dot and the zsh completion script with zsh.
# libmimalloc-dev: trainc's allocator; libyaml-dev: reads emitted manifests back (see meson.build).
# librsvg2-bin (rsvg-convert), python3-pil, fontconfig and fonts-dejavu-core: tests/inspect_test.sh
# renders every example's graph.svg as a reader's viewer does, in DejaVu Sans, and checks with
# tests/graph_fit.py that each label stays inside its box. cmark: tests/runbook_test.sh renders a
# runbook with CommonMark's reference implementation to check that spec text stays text.
# The shellcheck package: tests/injection_test.sh and tests/taint_test.sh lint every script a hostile
# spec gives.
# awscli: `trainc run --local` syncs S3 stores with the aws CLI (tests/run_local_torch_test.sh). Its
# S3 server, s3rver, comes from npm into a cache folder (below), where the run looks for it. PyTorch
# 2, Ray, the CUDA toolkit and NCCL come from the Python package index into a virtual environment
# of Debian's python3 (python3-venv), tools/install-python.sh, called at the end; pip there trusts
# the system's CA bundle (ca-certificates), which holds a proxy's local CA where there is one.
# procps (ps, pgrep): tests/run_local_torch_test.sh, run_local_dask_test.sh and entry_script_test.sh
# find the processes a run leaves; a debootstrap minbase root has no ps.
packages=(meson ninja-build pkg-config g++ libyaml-cpp-dev libyaml-dev libjsonnet-dev doctest-dev
          nlohmann-json3-dev libcli11-dev libfmt-dev libssl-dev python3 diffutils
          libxgboost-dev python3-xgboost python3-numpy python3-distributed python3-dask pre-commit git
          python3-yaml libgraphviz-dev graphviz zsh libmimalloc-dev libzstd-dev libsnappy-dev libdeflate-dev zlib1g-dev
          librsvg2-bin python3-pil fontconfig fonts-dejavu-core cmark shellcheck
          python3-venv ca-certificates awscli procps "$@")
valijson_dir="$root/third_party/valijson"

is_root() { [ "$(id -u)" -eq 0 ]; }

apt_updated=0
apt_update() {
  if [ "$apt_updated" -eq 0 ]; then
    apt-get update -qq >&2
    apt_updated=1
  fi
}

if ! command -v dpkg-query >/dev/null 2>&1; then
  echo "install-deps: not a Debian system; make sure these are installed: ${packages[*]} libvalijson-dev" >&2
  exit 0
fi

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
    missing+=("$p")
  fi
done

# Node.js may come from elsewhere (with npm bundled); Debian's packages only when there is none.
if ! command -v npm >/dev/null 2>&1; then missing+=(nodejs npm); fi

if [ "${#missing[@]}" -gt 0 ]; then
  if ! is_root; then
    echo "install-deps: missing Debian packages: ${missing[*]}" >&2
    echo "  run: sudo apt-get update && sudo apt-get install -y --no-install-recommends ${missing[*]}" >&2
    exit 2
  fi
  echo "install-deps: installing ${missing[*]}" >&2
  apt_update
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2
fi

if [ ! -f "$valijson_dir/usr/include/valijson/validator.hpp" ]; then
  echo "install-deps: unpacking libvalijson-dev headers into third_party/valijson" >&2
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' EXIT
  download() {
    # As root, apt hands the download to its '_apt' user, who cannot write into a private temp dir.
    local opts=()
    if is_root; then opts=(-o APT::Sandbox::User=root); fi
    (cd "$tmp" && apt-get download -qq "${opts[@]}" libvalijson-dev) >&2
  }
  if ! download; then
    if ! is_root; then
      echo "install-deps: 'apt-get download libvalijson-dev' failed; run 'sudo apt-get update' and retry" >&2
      exit 2
    fi
    apt_update
    download
  fi
  rm -rf "$valijson_dir"
  mkdir -p "$valijson_dir"
  dpkg -x "$tmp"/libvalijson-dev_*.deb "$valijson_dir"
  test -f "$valijson_dir/usr/include/valijson/validator.hpp"
fi

# s3rver (npm), the S3 server of `trainc run --local`, where the run finds it by default.
s3rver_prefix=${XDG_CACHE_HOME:-$HOME/.cache}/trainc/s3rver
if [ ! -f "$s3rver_prefix/node_modules/s3rver/bin/s3rver.js" ]; then
  echo "install-deps: installing s3rver from npm into $s3rver_prefix" >&2
  mkdir -p "$s3rver_prefix"
  npm install --prefix "$s3rver_prefix" --no-audit --no-fund --silent s3rver@3.7.1 >&2
fi

# PyTorch 2, Ray, the CUDA 13 toolchain and NCCL, from the Python package index (tools/install-python.sh).
bash "$root/tools/install-python.sh"
