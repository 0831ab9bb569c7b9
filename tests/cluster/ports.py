#!/usr/bin/env python3
"""Prints the container ports of the Deployments in a folder of manifests, one per line: the ports
tests/cluster/responder.py answers on for the services of an example on the test cluster.

Usage: ports.py K8S_DIR
"""
import pathlib
import sys

import yaml


def main():
    ports = set()
    for f in sorted(pathlib.Path(sys.argv[1]).glob("*.yaml")):
        for d in yaml.safe_load_all(f.read_text()):
            if not d or d.get("kind") != "Deployment":
                continue
            for c in d["spec"]["template"]["spec"].get("containers") or []:
                ports.update(p["containerPort"] for p in c.get("ports") or [])
    for p in sorted(ports):
        print(p)


if __name__ == "__main__":
    main()
