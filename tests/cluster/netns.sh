#!/usr/bin/env bash
# Runs a command in a network namespace of its own, where the test cluster's pods get addresses
# that Services can use: the namespace has only its loopback device, and the benchmarking range
# 198.18.0.0/15 (RFC 2544, set aside for tests of network equipment) is routed to that loopback.
# kwok gives pods addresses from it (cluster.sh, under TRAINC_CLUSTER_NETNS=1), the EndpointSlice
# controller accepts them (it refuses loopback ones), and whatever dials a pod (the API server's
# service proxy, an operator) reaches this namespace's loopback and nothing beyond it: the
# namespace has no other device.
#
# Usage: netns.sh CMD [ARG...]   (needs root, or a user namespace; exits 3 when it cannot be made)
set -euo pipefail
if [ "${TRAINC_CLUSTER_NETNS:-}" != 1 ]; then
  unshare --net true 2>/dev/null || { echo "netns.sh: cannot make a network namespace (unshare --net)" >&2; exit 3; }
  exec unshare --net -- env TRAINC_CLUSTER_NETNS=1 bash "$0" "$@"
fi
ip link set lo up
ip route add local 198.18.0.0/15 dev lo
exec "$@"
