#!/usr/bin/env python3
"""What tests/cluster/responder.py answers for an example's services on the test cluster, from its
folder of manifests:

  ports.py K8S_DIR            the container ports of its Deployments and of its RayClusters' head
                              (the dashboard's job API), and the ports of its Istio Gateways'
                              servers (the ingress gateway's), one per line;
  ports.py --models K8S_DIR   the model names its vLLM containers serve (--served-model-name), one
                              per line, which /v1/models lists.
"""
import pathlib
import sys

import yaml


def docs(folder):
    for f in sorted(pathlib.Path(folder).glob("*.yaml")):
        for d in yaml.safe_load_all(f.read_text()):
            if d:
                yield d


def main():
    models = sys.argv[1] == "--models"
    folder = sys.argv[-1]
    found = set()
    for d in docs(folder):
        if d.get("kind") == "Gateway" and d["apiVersion"].startswith("networking.istio.io/") and not models:
            found.update(s["port"]["number"] for s in d["spec"].get("servers") or [])
        if d.get("kind") == "Deployment":
            containers = d["spec"]["template"]["spec"].get("containers") or []
        elif d.get("kind") == "RayCluster" and not models:
            containers = d["spec"]["headGroupSpec"]["template"]["spec"].get("containers") or []
        else:
            continue
        for c in containers:
            if models:
                words = list(c.get("command") or []) + list(c.get("args") or [])
                for i, w in enumerate(words):
                    if w == "--served-model-name" and i + 1 < len(words):
                        found.add(words[i + 1])
                    elif w.startswith("--served-model-name="):
                        found.add(w.split("=", 1)[1])
            else:
                found.update(p["containerPort"] for p in c.get("ports") or [])
    for x in sorted(found):
        print(x)


if __name__ == "__main__":
    main()
