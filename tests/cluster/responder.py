#!/usr/bin/env python3
"""What answers inside a service's pods on the test cluster: an HTTP server on each port given,
on every address of the cluster's network namespace, that says 200 to every GET; to GET /v1/models
it lists the models given (as vLLM's OpenAI-compatible server does); and on /api/jobs/ it is a Ray
head's job server as KubeRay's HTTPMode asks it (Ray's job REST API: a job POSTed is RUNNING, then
SUCCEEDED --run-seconds later; GET /api/jobs/ID says which; an unknown ID is 404).

The images are never pulled here, so nothing of the server a pod would run can answer. What this
stands in for is only that last hop; everything before it is the cluster's own: the API server's
service proxy resolving the Service's (named) target port through its EndpointSlices to a ready
pod's address, in the pod address range that tests/cluster/netns.sh routes to this namespace's
loopback. A request that reaches it was routed as it would be on GKE, with one exception: the
Istio ingress gateway's proxy (Envoy, a C++ program) cannot run here, so a request to the gateway's
external address (port 80, given by tests/cluster/network.py) is answered here directly,
routed by nothing of Istio's.

Usage: responder.py [--models NAME,...] [--run-seconds S] PORT...
  (runs until killed; each request is one line on stderr)
"""
import http.server
import json
import sys
import threading
import time


MODELS = []
RUN_SECONDS = [5.0]
JOBS = {}  # submission id -> (entrypoint, submitted at)
LOCK = threading.Lock()


def job_info(sid):
    entrypoint, at = JOBS[sid]
    done = time.time() >= at + RUN_SECONDS[0]
    info = {"job_id": sid, "submission_id": sid, "entrypoint": entrypoint, "start_time": int(at * 1000),
            "status": "SUCCEEDED" if done else "RUNNING", "message": "responder.py: no Ray runs here"}
    if done:
        info["end_time"] = int((at + RUN_SECONDS[0]) * 1000)
    return info


class Ready(http.server.BaseHTTPRequestHandler):
    def reply(self, code, obj):
        body = json.dumps(obj).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_POST(self):
        if self.path.rstrip("/") != "/api/jobs":
            return self.reply(404, {"error": "not found"})
        request = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
        with LOCK:
            sid = request.get("submission_id") or f"raysubmit_{len(JOBS) + 1}"
            if sid in JOBS:
                return self.reply(500, {"error": f"Job with submission_id {sid} already exists. Please use a different submission_id."})
            JOBS[sid] = (request.get("entrypoint", ""), time.time())
        self.reply(200, {"job_id": sid, "submission_id": sid})

    def do_GET(self):
        path = self.path.rstrip("/")
        if path.startswith("/api/jobs"):
            with LOCK:
                if path == "/api/jobs":
                    return self.reply(200, [job_info(sid) for sid in JOBS])
                sid = path[len("/api/jobs/"):]
                if sid not in JOBS:
                    return self.reply(404, {"error": f"Job {sid} does not exist"})
                return self.reply(200, job_info(sid))
        body = b"{}\n"
        if path == "/v1/models":
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
    while args[:1] in (["--models"], ["--run-seconds"]):
        if args[0] == "--models":
            MODELS.extend(m for m in args[1].split(",") if m)
        else:
            RUN_SECONDS[0] = float(args[1])
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
