#!/usr/bin/env python3
"""What answers inside a service's pods on the test cluster: an HTTP server on each port given,
on every address of the cluster's network namespace, that says 200 to every GET; to GET /v1/models
it lists the models given (as vLLM's OpenAI-compatible server does).

The images are never pulled here, so nothing of the server a pod would run can answer. What this
stands in for is only that last hop; everything before it is the cluster's own: the API server's
service proxy resolving the Service's (named) target port through its EndpointSlices to a ready
pod's address, in the pod address range that tests/cluster/netns.sh routes to this namespace's
loopback. A request that reaches it was routed as it would be on GKE, with one exception: the
Istio ingress gateway's proxy (Envoy, a C++ program) cannot run here, so a request to the gateway's
external address (port 80, given by tests/cluster/loadbalancer.py) is answered here directly,
routed by nothing of Istio's.

Usage: responder.py [--models NAME,...] PORT...   (runs until killed; each request is one line on stderr)
"""
import http.server
import json
import sys
import threading


MODELS = []


class Ready(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        body = b"{}\n"
        if self.path.rstrip("/") == "/v1/models":
            body = json.dumps({"object": "list", "data": [{"id": m, "object": "model"} for m in MODELS]}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, fmt, *args):
        sys.stderr.write(f"responder:{self.server.server_address[1]}: {self.address_string()} {fmt % args}\n")


def main():
    args = sys.argv[1:]
    if args[:1] == ["--models"]:
        MODELS.extend(m for m in args[1].split(",") if m)
        args = args[2:]
    ports = sorted({int(p) for p in args})
    if not ports:
        raise SystemExit("usage: responder.py PORT...")
    servers = [http.server.ThreadingHTTPServer(("0.0.0.0", p), Ready) for p in ports]
    for s in servers[1:]:
        threading.Thread(target=s.serve_forever, daemon=True).start()
    sys.stderr.write(f"responder: answering on ports {', '.join(map(str, ports))}\n")
    servers[0].serve_forever()


if __name__ == "__main__":
    main()
