#!/usr/bin/env bash
# Hostile spec values must stay data in everything trainc emits (TAP). A spec whose every field
# that may hold free text holds `$(…)`, backticks, `;`, quotes, newlines, ${IFS}, `../` and glob
# characters is compiled; then its scripts/ and every step's entry script run for real with the
# stand-ins of tests/stubs.sh first on PATH, in a sandbox HOME, TMPDIR and working folder. No
# injected command may run (each would touch a file under $PWNED or a `pwned-*` file), nothing
# may be written outside the output folder and the sandbox, the tools must get the hostile
# values as single intact arguments, and shellcheck must stay clean on every emitted script.
# Values the schema forbids must be rejected with a diagnostic naming the field.
# Usage: tests/injection_test.sh TRAINC
set -uo pipefail
# shellcheck source=tests/tap.sh
. "$(dirname "${BASH_SOURCE[0]}")/tap.sh"
tap_init "$@"
# shellcheck source=tests/stubs.sh
. tests/stubs.sh

PWNED="$TMP/pwned"
SANDBOX="$TMP/sandbox"
rc=0  # exit code of the last run_in_sandbox (tests/stubs.sh)
OUT="$TMP/out"
MARK="trainc-injection-$$"   # the name `../` escapes would write under /tmp
mkdir -p "$PWNED" "$SANDBOX/home" "$SANDBOX/tmp"
touch "$TMP/start"
stubs_install "$TMP/stubs"

# The hostile values, as the tools must receive them.
A_SUB="\$(touch $PWNED/arg)"
A_BT="\`touch $PWNED/arg-bt\`"
A_SEMI="x; touch $PWNED/arg-semi"
A_QUOTES="it's \"quoted\" \\"
A_NL=$'l1\n$(touch '"$PWNED"$'/arg-nl)\nl3'
A_IFS="\${IFS}touch\${IFS}$PWNED/arg-ifs"
A_DOTS="../../../../../../../../tmp/$MARK-arg"
A_GLOB='*?[a-z]{1,2}'
IN_PATH="in \$(touch $PWNED/in)/\`touch $PWNED/in-bt\`;\"q'/"
RESUME_FLAG="--resume=\$(touch\${IFS}$PWNED/rf);\`touch\${IFS}pwned-rf\`"
CMD_NL=$'a\nb'

# YAML single-quoted scalars double their quotes; the newline values are double-quoted.
cat >"$TMP/spec.yaml" <<YAML
apiVersion: trainc/v1
kind: TrainingSystem
name: hostile
gcp: {project: hostile-proj, region: us-central1, zone: us-central1-a}
cluster:
  name: hc
  pools:
    gpu: {machine: n1-standard-4, accelerator: {type: nvidia-tesla-t4, count: 1}, nodes: 3}
    cpu: {machine: e2-standard-4, nodes: 3}
storage:
  runs: {s3: {bucket: bkt, prefix: runs}}
  models: {gcs: {bucket: hostile-models}}
pipeline:
  - name: train
    image: 'reg.example/img:1\$(touch\${IFS}$PWNED/image)\`touch\${IFS}$PWNED/image-bt\`;touch\${IFS}$PWNED/image-semi'
    pool: gpu
    nodes: 2
    workdir: '/workspace/w ;touch $PWNED/workdir; #'
    torchrun:
      script: '\$(touch $PWNED/script).py'
      args:
        - '$A_SUB'
        - '$A_BT'
        - '$A_SEMI'
        - 'it''s "quoted" \\'
        - "l1\\n\$(touch $PWNED/arg-nl)\\nl3"
        - '$A_IFS'
        - '$A_DOTS'
        - '$A_GLOB'
    env: {A: '\$(touch $PWNED/env)', B: "l1\\n\$(touch $PWNED/env-nl)", C: 'it''s "q" \`touch $PWNED/env-bt\`', D: '*'}
    annotations: {example.com/note: '\$(touch $PWNED/annotation); \`touch $PWNED/annotation-bt\`'}
    inputs:
      - {from: 'runs:/in \$(touch $PWNED/in)/\`touch $PWNED/in-bt\`;"q''/', to: 'data \$(touch $PWNED/to)'}
    outputs: {path: 'out \$(touch $PWNED/out)', to: 'runs:/out/\$(touch $PWNED/outto)/', every: 1h}
    checkpoints: {path: 'out \$(touch $PWNED/out)/ck', pattern: '*\$(touch\${IFS}pwned-pat)*.pt', resumeFlag: '$RESUME_FLAG'}
    heartbeat: {file: '/tmp/trainc/hb \$(touch $PWNED/hb)'}
  - name: prep
    image: img
    pool: cpu
    command: [python3, '\$(touch $PWNED/cmd)', '\`touch $PWNED/cmd-bt\`', "a\\nb", '\${IFS}', '../../../../../../../../tmp/$MARK-cmd', '*']
  - name: rjob
    cluster: ray
    command: [python, '\$(touch $PWNED/ray)', '\`touch $PWNED/ray-bt\`', 'it''s; touch $PWNED/ray-semi', "r\nn",
              'q "\$(touch $PWNED/ray-dq)" \`touch $PWNED/ray-dq-bt\`', 'b\\"s \\', 'bare\\"\$HOME', "tab\there", '']
clusters:
  ray:
    engine: ray
    image: rayproject/ray:2.52.0
    head: {pool: cpu}
    workers: {w: {pool: cpu, replicas: 1}}
services:
  triton:
    pool: gpu
    triton: {repository: 'models:/repo \$(touch $PWNED/repo)', models: [m1], args: ['--log-info=\$(touch $PWNED/triton)']}
YAML

compile_hostile() {
  "$TRAINC" compile "$TMP/spec.yaml" -o "$OUT" >"$TMP/compile.out" 2>&1 || { cat "$TMP/compile.out"; return 1; }
  [ -x "$OUT/hostile/scripts/up.sh" ] || { echo "no scripts/up.sh"; return 1; }
}
t "a spec with hostile values in every free-text field compiles" compile_hostile

# ---- values the schema forbids: rejected, the field named -----------------------------------
# rejected FIELD-IN-DIAGNOSTIC YAML-FRAGMENT...: a minimal spec plus the fragment fails with exit 1
# and a diagnostic that names the field.
rejected() {
  local field=$1 rc=0
  shift
  {
    printf '%s\n' 'apiVersion: trainc/v1' 'kind: TrainingSystem'
    printf '%s\n' "$@"
  } >"$TMP/bad.yaml"
  "$TRAINC" compile "$TMP/bad.yaml" -o "$TMP/bad-out" >"$TMP/bad.err" 2>&1 || rc=$?
  [ "$rc" -eq 1 ] || { echo "exit $rc, expected 1:"; cat "$TMP/bad.err"; return 1; }
  grep -qF -- "$field" "$TMP/bad.err" || { echo "the diagnostic does not name $field:"; cat "$TMP/bad.err"; return 1; }
  [ ! -e "$TMP/bad-out" ] || { echo "a rejected spec wrote output"; return 1; }
}
STEP='pipeline: [{name: s, image: img, command: [x]}]'
t "a system name with a command substitution is rejected" \
  rejected name "name: 'a\$(touch $PWNED/name)'" "$STEP"
t "a label value with a command substitution is rejected" \
  rejected labels "name: ok" "labels: {team: '\$(touch $PWNED/label)'}" "$STEP"
t "a step name with ';' is rejected" \
  rejected 'pipeline[0].name' "name: ok" "pipeline: [{name: 'a;touch', image: img, command: [x]}]"
t "an image with a space is rejected" \
  rejected 'pipeline[0].image' "name: ok" "pipeline: [{name: s, image: 'img \$(touch $PWNED/i)', command: [x]}]"
t "an S3 prefix with '../' is rejected" \
  rejected prefix "name: ok" "storage: {d: {s3: {bucket: bkt, prefix: '../../etc'}}}" "$STEP"
t "a GCS prefix smuggling mount options (',', '=') is rejected" \
  rejected prefix "name: ok" "storage: {d: {gcs: {bucket: bkt-1, prefix: 'd,uid=0,o=allow_other'}}}" "$STEP"
t "a store path climbing out with '../' is rejected" \
  rejected 'inputs[0].from' "name: ok" "storage: {d: {s3: {bucket: bkt}}}" \
  "pipeline: [{name: s, image: img, command: [x], inputs: [{from: 'd:/../../../etc', to: x}]}]"
t "a resume flag with a space is rejected" \
  rejected resumeFlag "name: ok" "storage: {d: {s3: {bucket: bkt}}}" \
  "pipeline: [{name: s, image: img, command: [x], outputs: {path: o, to: 'd:/o/'}, checkpoints: {path: o, resumeFlag: '--r \$(touch $PWNED/r)'}}]"
t "a workdir with a command substitution is rejected (a Dockerfile's WORKDIR would substitute it)" \
  rejected 'pipeline[0].workdir' "name: ok" "pipeline: [{name: s, image: img, command: [x], workdir: '/w \$(touch $PWNED/w)'}]"
t "a GCP project with ';' is rejected" \
  rejected project "name: ok" "gcp: {project: 'p;touch x', region: us-central1}" "$STEP"

# The manifests hold the values as given (read back with PyYAML, when it is installed).
yaml_intact() {
  if ! python3 -c 'import yaml' 2>/dev/null; then echo "PyYAML is not installed: not checked"; return 0; fi
  python3 - "$OUT/hostile/k8s/train-jobset.yaml" "$PWNED" <<'PY'
import sys, yaml
sys.path.insert(0, "tests")
from kubelet_expansion import container_view
top = yaml.safe_load(open(sys.argv[1]))
job = top["spec"]["replicatedJobs"][0]["template"]  # the step runs on several nodes: a gang's JobSet
job["metadata"]["annotations"] = top["metadata"].get("annotations", {})
pw = sys.argv[2]
# As the container sees them, after the kubelet expanded $(VAR) and $$.
env, _ = container_view(job["spec"]["template"]["spec"]["containers"][0])
want = {"A": "$(touch %s/env)" % pw, "B": "l1\n$(touch %s/env-nl)" % pw,
        "C": "it's \"q\" `touch %s/env-bt`" % pw, "D": "*"}
bad = [(k, env.get(k), v) for k, v in want.items() if env.get(k) != v]
note = job["metadata"]["annotations"].get("example.com/note")
if note != "$(touch %s/annotation); `touch %s/annotation-bt`" % (pw, pw):
    bad.append(("annotation", note))
image = job["spec"]["template"]["spec"]["containers"][0]["image"]
if not image.startswith("reg.example/img:1$(touch${IFS}"):
    bad.append(("image", image))
for b in bad:
    print("not intact:", b)
sys.exit(1 if bad else 0)
PY
}
t "the JobSet's env values, annotation and image read back intact" yaml_intact

# ---- shellcheck over everything emitted ---------------------------------------------------------
extract_entry_scripts() {
  local cm step
  mkdir -p "$TMP/entry"
  for cm in "$OUT"/hostile/k8s/*-configmap.yaml; do
    step=$(basename "$cm" -configmap.yaml)
    stub_entry_script "$cm" "$TMP/entry/$step.sh" "$SANDBOX/pod-$step" || return 1
  done
  [ -s "$TMP/entry/train.sh" ] && [ -s "$TMP/entry/prep.sh" ] || { echo "entry scripts missing:"; ls "$TMP/entry"; return 1; }
}
t "the entry scripts are in the ConfigMaps" extract_entry_scripts

lint() { lint_scripts "$OUT"/hostile/scripts/*.sh "$TMP"/entry/*.sh; }
t "bash -n and shellcheck pass on every emitted script" lint

# ---- running them ---------------------------------------------------------------------------------
run_in_sandbox() { stub_run_in_sandbox 120 "$@"; }

scripts_run() {
  local s
  for s in up.sh apply.sh status.sh health.sh; do
    run_in_sandbox bash "$OUT/hostile/scripts/$s"
    [ "$rc" -eq 0 ] || { echo "$s exited $rc:"; tail -n 15 "$TMP/stderr"; return 1; }
    # The spec names no source for Triton's repository: its model is put there by hand.
    if [ "$s" = up.sh ]; then
      mkdir -p "$TMP/repository/m1" && echo 'name: "m1"' >"$TMP/repository/m1/config.pbtxt"
      run_in_sandbox gcloud storage rsync --recursive "$TMP/repository" "gs://hostile-models/repo \$(touch $PWNED/repo)"
      [ "$rc" -eq 0 ] || { echo "the repository was not filled:"; cat "$TMP/stderr"; return 1; }
    fi
  done
  run_in_sandbox bash "$OUT/hostile/scripts/down.sh" --yes --delete-data
  [ "$rc" -eq 0 ] || { echo "down.sh exited $rc:"; tail -n 15 "$TMP/stderr"; return 1; }
}
t "up.sh, apply.sh, status.sh, health.sh and down.sh run to the end under stand-ins" scripts_run

entry_fresh() {
  run_in_sandbox bash "$TMP/entry/train.sh"
  [ "$rc" -eq 0 ] || { echo "train's entry script exited $rc:"; tail -n 15 "$TMP/stdout" "$TMP/stderr"; return 1; }
  run_in_sandbox bash "$TMP/entry/prep.sh"
  [ "$rc" -eq 0 ] || { echo "prep's entry script exited $rc:"; tail -n 15 "$TMP/stdout" "$TMP/stderr"; return 1; }
  if stub_saw torchrun "$RESUME_FLAG"; then echo "the resume flag on a fresh run"; return 1; fi
}
t "the entry scripts run to the end (fresh)" entry_fresh
intact() {
  local tool=$1 v
  shift
  for v in "$@"; do
    stub_saw "$tool" "$v" || { printf '%s did not get this as one argument: %q\ncalls:\n' "$tool" "$v"; stub_log | tail -n 5; return 1; }
  done
}
t "python3 (a command step) got every hostile argument intact" \
  intact python3 "\$(touch $PWNED/cmd)" "\`touch $PWNED/cmd-bt\`" "$CMD_NL" "\${IFS}" "../../../../../../../../tmp/$MARK-cmd" '*'

# A checkpoint in the bucket, whose name matches the hostile pattern, for the resumed run.
CKPT_NAME="step-2\$(touch\${IFS}pwned-pat)x.pt"
entry_resumed() {
  local ck="$SANDBOX/bucket/bkt/runs/out/\$(touch $PWNED/outto)/ck"
  mkdir -p "$ck"
  # The run started before it wrote the checkpoint (a retry of the same run resumes).
  touch -d '2020-01-01' "$ck/.trainc-run-stand-in-run"
  echo w >"$ck/$CKPT_NAME"
  stub_reset_calls
  run_in_sandbox bash "$TMP/entry/train.sh"
  [ "$rc" -eq 0 ] || { echo "train's entry script exited $rc:"; tail -n 15 "$TMP/stdout" "$TMP/stderr"; return 1; }
  local want="$SANDBOX/pod-train/workspace/w ;touch $PWNED/workdir; #/out \$(touch $PWNED/out)/ck/$CKPT_NAME"
  local args
  args=$(stub_last_args torchrun)
  stub_saw torchrun "$RESUME_FLAG" || { echo "no intact resume flag; torchrun got:"; echo "$args"; return 1; }
  stub_saw torchrun "$want" || { echo "the checkpoint path is not one intact argument; torchrun got:"; echo "$args"; return 1; }
  [ "$(cat "$STUB_STATE/torchrun.resume")" = "$want" ] || { echo "TRAINC_RESUME_FROM:"; cat "$STUB_STATE/torchrun.resume"; return 1; }
}
t "a resumed run passes the hostile resume flag and checkpoint path intact" entry_resumed

t "torchrun got every hostile argument intact" \
  intact torchrun "$A_SUB" "$A_BT" "$A_SEMI" "$A_QUOTES" "$A_NL" "$A_IFS" "$A_DOTS" "$A_GLOB" \
  "$SANDBOX/pod-train/workspace/w ;touch $PWNED/workdir; #/\$(touch $PWNED/script).py"
t "aws got the hostile store paths intact" \
  intact aws "s3://bkt/runs/$IN_PATH" "s3://bkt/runs/out/\$(touch $PWNED/outto)/" \
  "$SANDBOX/pod-train/workspace/w ;touch $PWNED/workdir; #/data \$(touch $PWNED/to)"

# A RayJob's entrypoint is one string that Ray runs through a shell: run it so, with the stand-ins.
ray_entrypoint() {
  if ! python3 -c 'import yaml' 2>/dev/null; then echo "PyYAML is not installed: not checked"; return 0; fi
  python3 -c 'import sys, yaml; doc = yaml.safe_load(open(sys.argv[1]))["spec"]
assert doc["submissionMode"] == "HTTPMode", doc["submissionMode"]
sys.stdout.write(doc["entrypoint"])' "$OUT/hostile/k8s/rjob-rayjob.yaml" >"$TMP/ray-entrypoint" || return 1
  stub_reset_calls
  # HTTPMode: KubeRay posts the string to the job API as written, and Ray's job supervisor runs it
  # with one `sh -c` (the ray-job stand-in).
  run_in_sandbox ray-job "$(cat "$TMP/ray-entrypoint")"
  [ "$rc" -eq 0 ] || { echo "the entrypoint exited $rc:"; cat "$TMP/ray-entrypoint"; cat "$TMP/stderr"; return 1; }
  intact python "\$(touch $PWNED/ray)" "\`touch $PWNED/ray-bt\`" "it's; touch $PWNED/ray-semi" $'r\nn' \
    "q \"\$(touch $PWNED/ray-dq)\" \`touch $PWNED/ray-dq-bt\`" 'b\"s \' 'bare\"$HOME' $'tab\there' ''
}
t "a RayJob entrypoint run through the one shell of Ray's job supervisor passes every hostile argument intact" ray_entrypoint

# The shell liveness probe, run as the kubelet runs it (its exec command, here with the pod's
# /tmp/trainc under the sandbox): a fresh heartbeat passes, an old one fails, nothing is injected.
liveness_probe() {
  local hb=$SANDBOX/tmp/trainc/"hb \$(touch $PWNED/hb)"
  python3 - "$OUT/hostile/k8s/train-jobset.yaml" "$SANDBOX" >"$TMP/probe" <<'PY' || return 1
import sys, yaml
job = yaml.safe_load(open(sys.argv[1]))["spec"]["replicatedJobs"][0]["template"]
argv = job["spec"]["template"]["spec"]["containers"][0]["livenessProbe"]["exec"]["command"]
assert argv[:2] == ["/bin/sh", "-c"] and len(argv) == 3, argv
sys.stdout.write(argv[2].replace("/tmp/trainc/", sys.argv[2] + "/tmp/trainc/"))
PY
  mkdir -p "$(dirname "$hb")"  # the value holds slashes: folders under the sandbox's /tmp/trainc
  touch "$hb"
  run_in_sandbox /bin/sh -c "$(cat "$TMP/probe")"
  [ "$rc" -eq 0 ] || { echo "the probe failed on a fresh heartbeat ($rc):"; cat "$TMP/probe"; cat "$TMP/stderr"; return 1; }
  touch -d '3 hours ago' "$hb"
  run_in_sandbox /bin/sh -c "$(cat "$TMP/probe")"
  [ "$rc" -ne 0 ] || { echo "the probe passed on a heartbeat 3 hours old:"; cat "$TMP/probe"; return 1; }
}
t "the shell liveness probe judges the hostile heartbeat file's age and runs nothing else" liveness_probe

# ---- nothing ran, nothing escaped ------------------------------------------------------------------
nothing_injected() {
  local found
  found=$(find "$PWNED" -mindepth 1)
  [ -z "$found" ] || { echo "injected commands ran; they made:"; echo "$found"; return 1; }
  found=$(find "$TMP" -name 'pwned-*' ! -path "$SANDBOX/bucket/*" ! -path "$SANDBOX/pod-train/workspace/*/out*/ck/$CKPT_NAME")
  [ -z "$found" ] || { echo "injected commands ran; they made:"; echo "$found"; return 1; }
}
t "no injected command ran" nothing_injected

nothing_outside() {
  local found
  # `../` values would land in /tmp, from any working folder.
  found=$(find /tmp / -maxdepth 1 -name "$MARK*" 2>/dev/null)
  [ -z "$found" ] || { echo "written outside the sandbox:"; echo "$found"; return 1; }
  # Nothing named after a hostile value, new at the top of the file system, in /etc, /tmp, the
  # user's home or the repository (other programs may write there meanwhile: only names that
  # could come from the spec count; the other suites' own folders, such as the taint suite's
  # pwned/ marker folder, are theirs).
  found=$(find / /etc /tmp "${HOME:-/root}" . -maxdepth 2 -newer "$TMP/start" \
    \( -name '*touch*' -o -name '*pwned*' -o -name '*$(*' -o -name '*`*' -o -name "$MARK*" -o -name 'w $(*' \) \
    ! -path "$TMP/*" ! -path "${TMPDIR:-/tmp}/trainc-test.*/*" 2>/dev/null)
  [ -z "$found" ] || { echo "written outside the sandbox:"; echo "$found"; return 1; }
  # The pods' folders are inside the sandbox.
  [ -d "$SANDBOX/pod-train/tmp/trainc" ] || { echo "the entry script's state is not in the sandbox"; return 1; }
  [ ! -e "/workspace/w ;touch $PWNED/workdir; #" ] || { echo "the workdir was made outside the sandbox"; return 1; }
}
t "nothing was written outside the output folder and the sandbox" nothing_outside

tap_done
