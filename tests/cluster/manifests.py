#!/usr/bin/env python3
"""An operator's release manifests (`kustomize build config/default` of its own module, as its
release's manifests.yaml is made) made to run on the loopback test cluster, read on stdin:

  - every webhook of its Mutating/ValidatingWebhookConfigurations is called at
    https://127.0.0.1:PORT<path> with the harness's CA, where the controller runs as a process
    (the API server cannot reach a Service here: no kube-proxy and no pod network);
  - APIServices (Kueue's visibility API) are left out: the aggregator would reach them only
    through a Service;
  - everything else (CRDs, RBAC, the controller's Deployment, whose pod kwok keeps Running on a node
    and so takes its room there, Services, Secrets) is kept as released.

With HOLD (a Deployment's name), that Deployment's pods carry the annotation
test.trainc.dev/hold-ready, which keeps them un-Ready in kwok (cluster.sh's stages) until the
harness removes it: operators.sh does once the controller's process, restarted for that pod, serves,
as the pod's readiness probe would say.

Usage: manifests.py PORT CA.crt [HOLD] < manifests.yaml > patched.yaml
"""
import base64
import sys
from urllib.parse import quote

import yaml


def main():
    port, ca_file = sys.argv[1], sys.argv[2]
    hold = sys.argv[3] if len(sys.argv) > 3 else None
    ca = base64.b64encode(open(ca_file, "rb").read()).decode()
    out = []
    for doc in yaml.safe_load_all(sys.stdin):
        if not doc:
            continue
        kind = doc.get("kind")
        if kind == "APIService":
            continue
        if kind in ("MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"):
            for w in doc.get("webhooks") or []:
                cc = w.get("clientConfig") or {}
                path = (cc.get("service") or {}).get("path", "/")
                w["clientConfig"] = {"url": f"https://127.0.0.1:{port}{quote(path)}", "caBundle": ca}
            # cert-manager or the controller's own cert rotation would inject its CA here.
            (doc.get("metadata") or {}).get("annotations", {}).pop("cert-manager.io/inject-ca-from", None)
        if kind == "Deployment" and hold and doc["metadata"]["name"] == hold:
            tmpl = doc["spec"]["template"].setdefault("metadata", {})
            tmpl.setdefault("annotations", {})["test.trainc.dev/hold-ready"] = "until its process serves"
        out.append(doc)
    yaml.safe_dump_all(out, sys.stdout, sort_keys=False)


if __name__ == "__main__":
    main()
