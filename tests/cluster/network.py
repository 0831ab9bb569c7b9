#!/usr/bin/env python3
"""Plays two parts of the network a GKE cluster has and the test cluster lacks, once a second,
inside tests/cluster/netns.sh's network namespace only:

  - Google Cloud's load balancer controller: each Service of type LoadBalancer gets an external
    address, as GKE's does once the cloud's load balancer exists, from 198.18.255.0/24 (apart from
    kwok's pod addresses; routed to the namespace's loopback, so a client's request to it reaches
    tests/cluster/responder.py and nothing beyond this machine);
  - cluster DNS with kube-proxy, for the operators that dial a Service by its name (KubeRay asks a
    Ray head's dashboard at NAME.NAMESPACE.svc.cluster.local): HOSTS gets a line per Service with a
    ready endpoint, naming it by the first one's address, as the Service's cluster address would
    reach it (that address routes nowhere here: no kube-proxy). tests/cluster/operators.sh mounts
    HOSTS over /etc/hosts for the operators' processes alone.

Usage: network.py KUBECTL KUBECONFIG HOSTS   (runs until killed)
"""
import json
import os
import subprocess
import sys
import time


def get(k, kc, *args):
    out = subprocess.run([k, "--kubeconfig", kc, "get", *args, "-A", "-o", "json"], capture_output=True, text=True)
    return json.loads(out.stdout)["items"] if out.returncode == 0 else None


def main():
    if os.environ.get("TRAINC_CLUSTER_NETNS") != "1":
        raise SystemExit("network.py: only inside tests/cluster/netns.sh's network namespace")
    k, kc, hosts = sys.argv[1:4]
    given = {}
    written = None
    while True:
        services = get(k, kc, "services")
        slices = get(k, kc, "endpointslices")
        if services is not None and slices is not None:
            for s in services:
                if s["spec"].get("type") != "LoadBalancer" or (s.get("status") or {}).get("loadBalancer", {}).get("ingress"):
                    continue
                key = s["metadata"]["namespace"] + "/" + s["metadata"]["name"]
                ip = given.setdefault(key, f"198.18.255.{len(given) + 1}")
                patch = json.dumps({"status": {"loadBalancer": {"ingress": [{"ip": ip, "ipMode": "VIP"}]}}})
                subprocess.run([k, "--kubeconfig", kc, "patch", "service", s["metadata"]["name"], "-n",
                                s["metadata"]["namespace"], "--subresource=status", "--type=merge", "-p", patch],
                               capture_output=True)
                print(f"network: load balancer {key} at {ip}", file=sys.stderr, flush=True)
            lines = ["127.0.0.1 localhost"]
            for sl in sorted(slices, key=lambda x: x["metadata"]["name"]):
                svc = (sl["metadata"].get("labels") or {}).get("kubernetes.io/service-name")
                ready = [e["addresses"][0] for e in sl.get("endpoints") or []
                         if (e.get("conditions") or {}).get("ready") and e.get("addresses")]
                if svc and ready:
                    ns = sl["metadata"]["namespace"]
                    lines.append(f"{ready[0]} {svc}.{ns}.svc.cluster.local {svc}.{ns}.svc")
            text = "\n".join(dict.fromkeys(lines)) + "\n"
            if text != written:
                # In place: HOSTS is mounted over /etc/hosts, which a new file would not replace.
                with open(hosts, "r+" if os.path.exists(hosts) else "w") as f:
                    f.write(text)
                    f.truncate()
                written = text
        time.sleep(1)


if __name__ == "__main__":
    main()
