#!/usr/bin/env bash
# Builds the upstream control plane the cluster tests run (tests/cluster) from the Go module proxy:
# kube-apiserver, kube-controller-manager, kube-scheduler and kubectl from k8s.io/kubernetes, etcd,
# kwok, and the JobSet and Kueue controllers, all `tool`s of the module tools/cluster (go.mod maps
# k8s.io/kubernetes's staging modules to their published versions, which a requiring module must
# do), KubeRay's operator from tools/cluster/kuberay, and Istio's pilot-discovery (istiod) with
# the objects its installer renders (tools/cluster/istio). Every version is in
# tools/cluster/versions.env. Quiet when the set is built.
#
# Where: $TRAINC_CLUSTER_HOME, else ${XDG_CACHE_HOME:-~/.cache}/trainc/cluster, one folder per set
# (the first 12 digits of the sha256 of versions.env, the go.mod and go.sum files and the Go version),
# so a changed pin builds beside the old. Each set holds bin/ and the operators' own config/
# folders (CRDs, webhooks, RBAC) copied from their modules.
#
# Usage: tools/install-cluster.sh            build if missing
#        tools/install-cluster.sh --prefix   print the set's folder (after building)
#        tools/install-cluster.sh --check    exit 0 if built, 1 if not (builds nothing)
# A cold build takes about 30 minutes on two cores (Istio about 8 of them); the Go build cache
# makes a rebuild quick (about 2 minutes).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
src="$root/tools/cluster"
home=${TRAINC_CLUSTER_HOME:-${XDG_CACHE_HOME:-$HOME/.cache}/trainc/cluster}

say() { echo "install-cluster: $*" >&2; }

if ! command -v go >/dev/null 2>&1; then
  say "go is not installed: the cluster tests need Go 1.26 and the Go module proxy"
  exit 3
fi
# shellcheck source=/dev/null
. <(grep -E '^[A-Z]+=v[0-9][0-9A-Za-z.+-]*$' "$src/versions.env")
for v in KUBERNETES ETCD KWOK KUEUE JOBSET KUBERAY ISTIO; do
  if [ -z "${!v:-}" ]; then say "tools/cluster/versions.env has no $v"; exit 2; fi
done
# The module must require what versions.env names.
for want in "go.mod:k8s.io/kubernetes $KUBERNETES" "go.mod:go.etcd.io/etcd/server/v3 $ETCD" "go.mod:sigs.k8s.io/kwok $KWOK" \
            "go.mod:sigs.k8s.io/kueue $KUEUE" "go.mod:sigs.k8s.io/jobset $JOBSET" \
            "kuberay/go.mod:github.com/ray-project/kuberay/ray-operator $KUBERAY" "istio/go.mod:istio.io/istio $ISTIO"; do
  if ! grep -Eq "^[[:space:]]*(require[[:space:]]+)?${want#*:}\b" "$src/${want%%:*}"; then
    say "tools/cluster/${want%%:*} does not require ${want#*:} (versions.env says so)"
    exit 2
  fi
done

key=$( { cat "$src/versions.env" "$src/go.mod" "$src/go.sum" "$src/kuberay/go.mod" "$src/kuberay/go.sum" \
  "$src/istio/go.mod" "$src/istio/go.sum" "$src/istio/render/main.go" "$src/istio/istio-operator.yaml"; go version; } |
  sha256sum | cut -c1-12)
dest="$home/$key"

case "${1:-}" in
  --check) [ -f "$dest/.complete" ]; exit $? ;;
  --prefix|"") ;;
  *) say "unknown option $1"; exit 2 ;;
esac

if [ ! -f "$dest/.complete" ]; then
  start=$SECONDS
  tmp="$dest.tmp.$$"
  rm -rf "$tmp"
  mkdir -p "$tmp/bin" "$tmp/config"
  trap 'rm -rf "$tmp"' EXIT
  minor=${KUBERNETES#v1.}; minor=${minor%%.*}
  # The version the components report (/version, kubectl version), as a release build sets it.
  ldflags="-s -w"
  for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    ldflags="$ldflags -X $pkg.gitVersion=$KUBERNETES -X $pkg.gitMajor=1 -X $pkg.gitMinor=$minor -X $pkg.gitTreeState=clean"
  done
  say "building kube-apiserver, kube-controller-manager, kube-scheduler, kubectl $KUBERNETES, etcd $ETCD, kwok $KWOK, JobSet $JOBSET, Kueue $KUEUE, KubeRay $KUBERAY, Istio $ISTIO"
  export GOFLAGS=-mod=readonly
  (cd "$src" && go build -trimpath -ldflags "$ldflags" -o "$tmp/bin/" \
    k8s.io/kubernetes/cmd/kube-apiserver k8s.io/kubernetes/cmd/kube-controller-manager \
    k8s.io/kubernetes/cmd/kube-scheduler k8s.io/kubernetes/cmd/kubectl)
  say "Kubernetes built ($((SECONDS - start)) s)"
  (cd "$src" && go build -trimpath -ldflags "-s -w" -o "$tmp/bin/etcd" go.etcd.io/etcd/server/v3)
  (cd "$src" && go build -trimpath -ldflags "-s -w" -o "$tmp/bin/" sigs.k8s.io/kwok/cmd/kwok sigs.k8s.io/kueue/cmd/kueue \
    sigs.k8s.io/jobset)
  (cd "$src/kuberay" && go build -trimpath -ldflags "-s -w" -o "$tmp/bin/" github.com/ray-project/kuberay/ray-operator)
  say "etcd, kwok and the controllers built ($((SECONDS - start)) s)"
  # Istio as its own build does it: no cgo, its release's build tags.
  (cd "$src/istio" && CGO_ENABLED=0 go build -trimpath -tags vtprotobuf,disable_pgv -ldflags "-s -w" -o "$tmp/bin/" \
    istio.io/istio/pilot/cmd/pilot-discovery)
  (cd "$src/istio" && CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o "$tmp/bin/istio-render" ./render)
  mkdir -p "$tmp/config/istio"
  "$tmp/bin/istio-render" "$src/istio/istio-operator.yaml" >"$tmp/config/istio/istio.yaml"
  say "Istio built ($((SECONDS - start)) s)"
  # The operators' own CRDs, webhooks and release kustomizations, and kwok's stages, from the
  # module cache.
  dir_of() { (cd "$src" && go list -m -f '{{.Dir}}' "$1"); }
  copy_tree() { cp -r "$1" "$2"; chmod -R u+w "$2"; }
  copy_tree "$(dir_of sigs.k8s.io/kueue)/config" "$tmp/config/kueue"
  copy_tree "$(dir_of sigs.k8s.io/jobset)/config" "$tmp/config/jobset"
  copy_tree "$(cd "$src/kuberay" && go list -m -f '{{.Dir}}' github.com/ray-project/kuberay/ray-operator)/config" "$tmp/config/kuberay"
  copy_tree "$(dir_of sigs.k8s.io/kwok)/kustomize" "$tmp/config/kwok"
  cp "$src/versions.env" "$tmp/versions.env"
  echo "$((SECONDS - start))" >"$tmp/build-seconds"
  touch "$tmp/.complete"
  rm -rf "$dest"
  mv "$tmp" "$dest"
  trap - EXIT
  say "built in $((SECONDS - start)) s: $dest"
fi
# GKE serves the ProvisioningRequest API (autoscaling.x-k8s.io) its cluster autoscaler answers: the
# CRD, from the module Kueue's client of that API comes from (its go.sum pins it), for queued
# provisioning on the tests' control plane. Added to a set built before this step too.
if [ ! -f "$dest/config/autoscaler/autoscaling.x-k8s.io_provisioningrequests.yaml" ]; then
  apis=$(cd "$src" && GOFLAGS=-mod=readonly go mod download -json k8s.io/autoscaler/cluster-autoscaler/apis |
    python3 -c 'import json, sys; print(json.load(sys.stdin)["Dir"])')
  mkdir -p "$dest/config/autoscaler.tmp"
  cp "$apis/config/crd/autoscaling.x-k8s.io_provisioningrequests.yaml" "$dest/config/autoscaler.tmp/"
  chmod -R u+w "$dest/config/autoscaler.tmp"
  rm -rf "$dest/config/autoscaler"
  mv "$dest/config/autoscaler.tmp" "$dest/config/autoscaler"
fi
if [ "${1:-}" = --prefix ]; then echo "$dest"; fi
