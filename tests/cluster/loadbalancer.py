#!/usr/bin/env python3
"""Plays Google Cloud's load balancer controller on the test cluster: gives each Service of type
LoadBalancer an external address, as GKE's does once the cloud's load balancer exists. The address
is from the benchmarking range that tests/cluster/netns.sh routes to its namespace's loopback
(198.18.255.0/24 here, apart from kwok's pod addresses), so a client's request to it reaches
tests/cluster/responder.py and nothing beyond this machine. Runs only in that namespace.

Usage: loadbalancer.py KUBECTL KUBECONFIG   (runs until killed)
"""
import json
import os
import subprocess
import sys
import time


def main():
    if os.environ.get("TRAINC_CLUSTER_NETNS") != "1":
        raise SystemExit("loadbalancer.py: only inside tests/cluster/netns.sh's network namespace")
    k, kc = sys.argv[1:3]
    given = {}
    while True:
        out = subprocess.run([k, "--kubeconfig", kc, "get", "services", "-A", "-o", "json"],
                             capture_output=True, text=True)
        if out.returncode == 0:
            for s in json.loads(out.stdout)["items"]:
                if s["spec"].get("type") != "LoadBalancer" or (s.get("status") or {}).get("loadBalancer", {}).get("ingress"):
                    continue
                key = s["metadata"]["namespace"] + "/" + s["metadata"]["name"]
                ip = given.setdefault(key, f"198.18.255.{len(given) + 1}")
                patch = json.dumps({"status": {"loadBalancer": {"ingress": [{"ip": ip, "ipMode": "VIP"}]}}})
                subprocess.run([k, "--kubeconfig", kc, "patch", "service", s["metadata"]["name"], "-n",
                                s["metadata"]["namespace"], "--subresource=status", "--type=merge", "-p", patch],
                               capture_output=True)
                print(f"loadbalancer: {key} at {ip}", file=sys.stderr, flush=True)
        time.sleep(1)


if __name__ == "__main__":
    main()
