#!/usr/bin/env bash
# The generated CI pipelines: every path they name exists from the repository root, and, against
# the independent oracles (../shared/oracle next to the project, or $TRAINC_ORACLE_DIR), the GitHub
# workflow and both Cloud Build configs validate with ci-validate and yaml-lint, and every script in
# them (each `run:`, each Cloud Build `bash -c` script with its `$$` unescaped) passes sh-lint.
# Without the oracles (a clone on its own) their checks are one skipped test; with
# TRAINC_REQUIRE_ORACLES=1 (.ci/run) they fail instead.
# Usage: tests/ci_test.sh TRAINC
set -uo pipefail
# shellcheck source=tests/tap.sh
. "$(dirname "${BASH_SOURCE[0]}")/tap.sh"
tap_init "$@"
if ! python3 -c 'import yaml' 2>/dev/null; then
  t_fail "python3 can read YAML" "python3-yaml is missing (tools/install-deps.sh installs it)"
  tap_done
fi

# A zonal system with a gateway-exposed, autoscaled Triton service, a bucket trainc creates, one
# image built from the user's Dockerfile and one from a generated Dockerfile, and both CI kinds.
# A repository (its .git marks the root trainc names paths from) with the builds' files.
SPEC_DIR="$TMP/repo/ml/shop"
mkdir -p "$TMP/repo/.git" "$SPEC_DIR/app"
printf 'FROM python:3.12-slim\nCOPY prep.py /workspace/\n' >"$SPEC_DIR/app/Dockerfile"
printf 'print("prep")\n' >"$SPEC_DIR/app/prep.py"
printf 'print("train")\n' >"$SPEC_DIR/app/train.py"
cat >"$SPEC_DIR/spec.yaml" <<'YAML'
apiVersion: trainc/v1
kind: TrainingSystem
name: shop
gcp:
  project: my-proj
  region: us-central1
  zone: us-central1-a
  state: {bucket: my-proj-tf-state}
cluster:
  pools:
    t4: {machine: n1-standard-4, accelerator: {type: nvidia-tesla-t4, count: 1}, autoscaling: {min: 1, max: 3}}
    cpu: {machine: e2-standard-8}
storage:
  models: {gcs: {bucket: shop-models}}
istio: {}
services:
  triton:
    pool: t4
    triton: {repository: 'models:/repo', models: [densenet_onnx]}
    autoscaling: {min: 1, max: 3}
    expose: {gateway: {}}
pipeline:
  - name: prep
    pool: cpu
    build: {context: app, dockerfile: Dockerfile, tag: v1}
    command: [python, prep.py]
  - name: train
    needs: [prep]
    pool: cpu
    build: {context: app, base: 'python:3.12-slim', copy: [train.py], tag: v2}
    command: [python, train.py]
ci:
  github:
    workloadIdentityProvider: projects/123456/locations/global/workloadIdentityPools/github/providers/repo
    traincImage: us-docker.pkg.dev/my-proj/tools/trainc:0.1.0
    serviceAccount: deployer@my-proj.iam.gserviceaccount.com
    environment: production
  cloudbuild:
    serviceAccount: builder@my-proj.iam.gserviceaccount.com
    timeout: 90m
    machineType: e2-highcpu-8
YAML

OUT="$TMP/repo/deploy"
if ! "$TRAINC" compile "$SPEC_DIR/spec.yaml" -o "$OUT" >"$TMP/compile.out" 2>&1; then
  t_fail "the spec compiles" "$(cat "$TMP/compile.out")"
  tap_done
fi
SYS="$OUT/shop"
WORKFLOW="$SYS/ci/.github/workflows/shop.yaml"
PROVISION="$SYS/ci/cloudbuild.provision.yaml"
DESTROY="$SYS/ci/cloudbuild.destroy.yaml"

t "the three CI files are written" ls "$WORKFLOW" "$PROVISION" "$DESTROY"

# Writes each script of the CI files to $TMP/scripts/NAME.sh, headed with the shell that runs it:
# GitHub runs a `run:` with `bash -e`; Cloud Build runs `bash -c SCRIPT` after replacing `$$` with `$`.
extract_scripts() {
  python3 - "$TMP/scripts" "$WORKFLOW" "$PROVISION" "$DESTROY" <<'PY'
import os, re, sys, yaml
out, workflow, configs = sys.argv[1], sys.argv[2], sys.argv[3:]
os.makedirs(out, exist_ok=True)
n = 0
def write(name, text):
    global n
    n += 1
    with open(os.path.join(out, re.sub(r'[^A-Za-z0-9_.-]', '_', name) + '.sh'), 'w') as f:
        f.write('#!/usr/bin/env bash\n' + text + ('' if text.endswith('\n') else '\n'))
with open(workflow) as f:
    wf = yaml.safe_load(f)
for job, spec in wf['jobs'].items():
    for i, step in enumerate(spec['steps']):
        if 'run' in step:
            write(f'github-{job}-{i}', 'set -e\n' + step['run'])
for path in configs:
    with open(path) as f:
        cfg = yaml.safe_load(f)
    for step in cfg['steps']:
        if step.get('entrypoint') == 'bash':
            args = step['args']
            assert args[0] == '-c', args
            write(f'cloudbuild-{os.path.basename(path)}-{step["id"]}', args[1].replace('$$', '$'))
print(n)
PY
}

# Every path the pipelines name (working directories, the spec, Dockerfiles, build contexts,
# scripts, Terraform's folder) exists from the repository root, where CI runs them. A GitHub
# working-directory is relative to the workspace, where actions/checkout's `path` put the repository.
paths_exist() {
  python3 - "$TMP/repo" "$WORKFLOW" "$PROVISION" "$DESTROY" <<'PY'
import os, re, shlex, sys, yaml
root, files = sys.argv[1], sys.argv[2:]
named = set()
def checkout_path(node):
    """The repository's folder in the GitHub workspace (actions/checkout's `path`), '' for the root."""
    if isinstance(node, dict):
        if str(node.get('uses', '')).startswith('actions/checkout@'):
            return (node.get('with') or {}).get('path', '')
        node = list(node.values())
    if isinstance(node, list):
        for v in node:
            found = checkout_path(v)
            if found is not None:
                return found
    return None
checkout = ''
def scan(node):
    if isinstance(node, dict):
        for k, v in node.items():
            if k == 'working-directory' and isinstance(v, str):
                if checkout and v != checkout and not v.startswith(checkout + '/'):
                    named.add('outside the checkout: ' + v)
                named.add(os.path.relpath(v, checkout or '.'))
            elif k == 'dir' and isinstance(v, str):
                named.add(v)
            scan(v)
    elif isinstance(node, list):
        for v in node:
            scan(v)
    elif isinstance(node, str):
        for m in re.finditer(r'docker build -f (\S+) -t \S+ (\S+)', node):
            named.update(shlex.split(m.group(1)) + shlex.split(m.group(2)))
        for m in re.finditer(r'bash (\S+/scripts/\w+\.sh)', node):
            named.add(m.group(1))
        for m in re.finditer(r' diff (\S+) --against (\S+)', node):
            named.update([m.group(1), m.group(2)])
for f in files:
    with open(f) as fh:
        doc = yaml.safe_load(fh)
    checkout = checkout_path(doc) or ''
    scan(doc)
missing = sorted(p for p in named if p.startswith('..') or os.path.isabs(p) or not os.path.exists(os.path.join(root, p)))
print(f'{len(named)} paths named')
if missing or len(named) < 6:
    print('missing from the repository root:', missing)
    sys.exit(1)
PY
}
t "every path the pipelines name exists from the repository root" paths_exist

count=$(extract_scripts) || count=0
t "the CI files hold scripts (found ${count})" test "$count" -ge 10

if oracles_present "ci-validate and yaml-lint on the three CI files, sh-lint on the $count scripts in them" \
  ci-validate yaml-lint sh-lint; then
  t "ci-validate (kind from the file name): the GitHub workflow" "$ORACLE/ci-validate" "$WORKFLOW"
  t "ci-validate (kind from the file name): the Cloud Build configs" "$ORACLE/ci-validate" "$PROVISION" "$DESTROY"
  t "yaml-lint: the three files" "$ORACLE/yaml-lint" "$WORKFLOW" "$PROVISION" "$DESTROY"
  for script in "$TMP"/scripts/*.sh; do
    [ -e "$script" ] || continue
    t "sh-lint: $(basename "$script" .sh)" "$ORACLE/sh-lint" "$script"
  done
fi

tap_done
