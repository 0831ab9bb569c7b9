#!/usr/bin/env bash
# `trainc plan SPEC --against OLD`: examples compiled, edited one field, compiled again; the plan
# must name the expected consequence (the step that re-runs, the Deployment that rolls, the pool
# resized or replaced), its JSON must meet schemas/plan.v1.schema.json, and it must agree with the
# independent update oracle (../shared/oracle/k8s-update-check OLD NEW, or $TRAINC_ORACLE_DIR):
# every object the oracle refuses the plan calls replace or rerun, and nothing the oracle accepts
# is called replace. Without the oracles the agreement is one skipped test.
# Usage: tests/against_test.sh TRAINC
set -uo pipefail
# shellcheck source=tests/tap.sh
. "$(dirname "${BASH_SOURCE[0]}")/tap.sh"
tap_init "$@"

# example|spec file|text|replacement|expectation (checked by check_plan below)
EDITS=(
  "xgb-a4|spec.yaml|rounds: 2000|rounds: 2500|runs=train; object=JobSet:k8s/train-jobset.yaml:replace,rerun; object=Job:k8s/datagen-job.yaml:unchanged; pools-unchanged"
  "xgb-a4|spec.yaml|autoscaling: {min: 0, max: 2}|autoscaling: {min: 0, max: 4}|runs=; pool=a4:resize"
  "xgb-a4|spec.yaml|system: {machine: e2-standard-4}|system: {machine: e2-standard-8}|runs=; pool=system:replace"
  "vllm-l4|spec.yaml|--max-model-len=8192|--max-model-len=4096|runs=; object=Deployment:k8s/service-chat-deployment.yaml:roll"
  "kueue-gpu|spec.yaml|--model=small|--model=tiny|runs=train-small"
  "kueue-gpu|spec.yaml|prep.py|prep2.py|runs-include=prep; object=LocalQueue:k8s/localqueue.yaml:unchanged"
  "kueue-gpu|spec.yaml|queue: {name: team-a}|queue: {name: team-a, podsReadyTimeout: 7m}|runs=; object=ConfigMap:addons/kueue-manager-config.yaml:update; object=Deployment:addons/kueue-manager-config.yaml:roll"
  "triton-tpu|spec.jsonnet|--model=base|--model=small|runs=finetune; object=JobSet:k8s/finetune-jobset.yaml:replace,rerun"
  "ray-t4|spec.yaml|--results=/results]|--results=/results/v2]|runs=train; object=RayJob:k8s/train-rayjob.yaml:rerun"
  "dask-cpu|spec.yaml|cpu: {pool: cpu, replicas: 2}|cpu: {pool: cpu, replicas: 1}|runs=; object=Deployment:k8s/cluster-dask-cpu-deployment.yaml:update; object=ConfigMap:k8s/sum-of-squares-configmap.yaml:update; object=Job:k8s/sum-of-squares-job.yaml:unchanged"
  "gpt-a4-tas|spec.yaml|torchrun: {script: eval.py}|torchrun: {script: eval2.py}|runs=evaluate"
  "customgpt|spec.yaml|labels: {batch-size: \"1200\"|labels: {batch-size: \"1300\"|runs=train; ckpt=train:clean"
  "customgpt|spec.yaml|resumeFlag: --resume}|resumeFlag: --resume, resumeFrom: data/base.pt}|runs=train; ckpt=train:file:/home/eai_role/code/data/base.pt"
)

# check_plan JSON EXPECTATION: the plan's `against` section meets the expectation.
check_plan() {
  python3 - "$1" "$2" <<'PY'
import json, sys
doc = json.load(open(sys.argv[1]))
a = doc["against"]
runs = [r["step"] for r in a["runs"]]
problems = []
for part in [p.strip() for p in sys.argv[2].split(";") if p.strip()]:
    if part.startswith("runs="):
        want = [s for s in part[5:].split(",") if s]
        if runs != want:
            problems.append(f"steps that run: {runs}, expected {want}")
    elif part.startswith("runs-include="):
        for s in part[13:].split(","):
            if s not in runs:
                problems.append(f"step {s} does not run ({runs})")
    elif part.startswith("runs-exclude="):
        for s in part[13:].split(","):
            if s in runs:
                problems.append(f"step {s} runs ({runs})")
    elif part.startswith("object="):
        kind, file, actions = part[7:].split(":")
        found = [o["action"] for o in a["objects"] if o["kind"] == kind and o["file"] == file and o["action"] not in ("remove", "keep")]
        if not found or found[0] not in actions.split(","):
            problems.append(f"{kind} {file}: {found}, expected one of {actions}")
    elif part.startswith("pool="):
        pool, action = part[5:].split(":")
        found = [p["action"] for p in a["pools"] if p["pool"] == pool]
        if found != [action]:
            problems.append(f"pool {pool}: {found}, expected {action}")
    elif part.startswith("ckpt="):
        step, where, *file = part[5:].split(":")
        found = [(r.get("checkpoints"), r.get("resumeFile")) for r in a["runs"] if r["step"] == step]
        if found != [(where, file[0] if file else None)]:
            problems.append(f"run of {step} starts from {found}, expected {where} {file}")
    elif part == "pools-unchanged":
        changed = [p["pool"] for p in a["pools"] if p["action"] != "unchanged"]
        if changed:
            problems.append(f"pools changed: {changed}")
for p in problems:
    print(p)
sys.exit(1 if problems else 0)
PY
}

# agree JSON REPORT: the oracle's REFUSED objects are replace or rerun in the plan, and the plan's
# replace objects are REFUSED by the oracle.
agree() {
  python3 - "$1" "$2" <<'PY'
import json, re, sys
a = json.load(open(sys.argv[1]))["against"]
refused = set()
for line in open(sys.argv[2]):
    m = re.match(r"REFUSED\s+(\S+)\s+(\S+)", line)
    if m:
        refused.add(f"{m.group(1)} {m.group(2)}")
def describe(o):
    return f"{o['kind']} {o['namespace'] + '/' if o['namespace'] else ''}{o['name']}"
actions = {describe(o): o["action"] for o in a["objects"] if o["action"] not in ("remove", "keep")}
problems = []
for r in sorted(refused):
    if actions.get(r) not in ("replace", "rerun"):
        problems.append(f"the oracle refuses {r}; the plan says {actions.get(r)}")
for d, act in sorted(actions.items()):
    if act == "replace" and d not in refused:
        problems.append(f"the plan replaces {d}; the oracle accepts it")
for p in problems:
    print(p)
sys.exit(1 if problems else 0)
PY
}

validate_schema() {
  python3 - "$1" <<'PY'
import json, sys
try:
    import jsonschema
except ImportError:
    sys.exit(0)  # the unit tests validate the JSON with valijson
jsonschema.validate(json.load(open(sys.argv[1])), json.load(open("schemas/plan.v1.schema.json")))
PY
}

rc=0  # each run's exit status (tests/tap.sh run)
have_oracle=0
if oracles_present "plan --against agrees with k8s-update-check" k8s-update-check; then have_oracle=1; fi

i=0
for edit in "${EDITS[@]}"; do
  IFS='|' read -r example file from to expect <<<"$edit"
  i=$((i + 1))
  src="$TMP/src$i/$example"
  mkdir -p "$TMP/src$i"
  cp -r "examples/$example" "$src"
  run "$TRAINC" compile "$src/$file" -o "$TMP/old$i"
  if [ "$rc" -ne 0 ]; then
    t_fail "$example: compiles" "$(cat "$TMP/stderr")"
    continue
  fi
  FROM=$from TO=$to python3 -c '
import os, sys
p = sys.argv[1]
s = open(p).read()
assert os.environ["FROM"] in s, os.environ["FROM"]
open(p, "w").write(s.replace(os.environ["FROM"], os.environ["TO"], 1))' "$src/$file"
  run "$TRAINC" compile "$src/$file" -o "$TMP/new$i"
  if [ "$rc" -ne 0 ]; then
    t_fail "$example: the edited spec ($from -> $to) compiles" "$(cat "$TMP/stderr")"
    continue
  fi
  name=$(basename "$(find "$TMP/old$i" -mindepth 1 -maxdepth 1 -type d | head -1)")
  run "$TRAINC" plan "$src/$file" --against "$TMP/old$i/$name" --format json
  cp "$TMP/stdout" "$TMP/plan$i.json"
  t "$example: plan --against after '$from' -> '$to' exits 0" test "$rc" -eq 0
  t "$example ($from -> $to): $expect" check_plan "$TMP/plan$i.json" "$expect"
  t "$example ($from -> $to): the JSON meets plan.v1.schema.json" validate_schema "$TMP/plan$i.json"
  if [ "$have_oracle" = 1 ]; then
    "$ORACLE/k8s-update-check" "$TMP/old$i/$name/k8s" "$TMP/new$i/$name/k8s" >"$TMP/oracle$i.txt" 2>&1
    t "$example ($from -> $to): the plan agrees with k8s-update-check" agree "$TMP/plan$i.json" "$TMP/oracle$i.txt"
  fi
done

# The same output against itself: nothing runs, nothing changes; the text says so.
run "$TRAINC" compile examples/xgb-a4/spec.yaml -o "$TMP/same"
# Reordering a step's needs changes nothing it runs: the same output, nothing re-runs.
mkdir -p "$TMP/reorder"
reorder_spec() {
  cat >"$TMP/reorder/spec.yaml" <<SPEC
apiVersion: trainc/v1
kind: TrainingSystem
name: reorder
pipeline:
  - {name: a, image: img, command: [echo, a]}
  - {name: b, image: img, command: [echo, b]}
  - {name: c, image: img, command: [echo, c], needs: [$1]}
SPEC
}
reorder_spec "a, b"
run "$TRAINC" compile "$TMP/reorder/spec.yaml" -o "$TMP/reorder/old"
reorder_spec "b, a"
run "$TRAINC" plan "$TMP/reorder/spec.yaml" --against "$TMP/reorder/old/reorder"
t "needs reordered ([a, b] -> [b, a]): nothing runs" grep -q '^Steps that run: none' "$TMP/stdout"

# A service of one pod on a pool with no room for another: a roll stops it before its replacement
# starts, and plan --against and the runbook say so; with room for one more node, the Deployment
# surges a pod first (maxSurge 1) and neither says it.
mkdir -p "$TMP/outage"
outage_spec() {  # outage_spec POOL_NODES MAX_MODEL_LEN
  cat >"$TMP/outage/spec.yaml" <<SPEC
apiVersion: trainc/v1
kind: TrainingSystem
name: outage
gcp: {project: my-project, region: us-central1, zone: us-central1-a}
cluster:
  pools:
    system: {machine: e2-standard-4}
    l4: {machine: g2-standard-8, autoscaling: {min: 1, max: $1}}
services:
  chat:
    pool: l4
    vllm: {model: Qwen/Qwen2.5-0.5B-Instruct, args: [--max-model-len=$2]}
SPEC
}
for nodes in 1 2; do
  outage_spec "$nodes" 8192
  run "$TRAINC" compile "$TMP/outage/spec.yaml" -o "$TMP/outage/old$nodes"
  outage_spec "$nodes" 4096
  run "$TRAINC" compile "$TMP/outage/spec.yaml" -o "$TMP/outage/new$nodes"
  run "$TRAINC" plan "$TMP/outage/spec.yaml" --against "$TMP/outage/old$nodes/outage"
  deploy="$TMP/outage/new$nodes/outage/k8s/service-chat-deployment.yaml"
  if [ "$nodes" = 1 ]; then
    t "one pod, no room for another: the roll is named an outage, with how long" \
      grep -q "its only pod stops before its replacement starts (pool 'l4' has no room for another): the service is down until the new pod is ready, up to 20m" "$TMP/stdout"
    t "... and the runbook says it" grep -q "at one replica its only pod stops before its replacement starts" "$TMP/outage/new$nodes/outage/README.md"
    t "... the Deployment stops one pod before starting one (maxSurge 0)" grep -q "maxSurge: 0" "$deploy"
  else
    # Kubernetes' default strategy (maxSurge 25%, rounded up: one pod) or trainc's own, never 0.
    t "room for a second node: the Deployment starts a pod before stopping one (no maxSurge 0)" \
      bash -c '! grep -q "maxSurge: 0" "$1"' _ "$deploy"
    t "... and neither plan --against nor the runbook speaks of an outage" \
      bash -c '! grep -q "only pod stops" "$1" "$2"' _ "$TMP/stdout" "$TMP/outage/new$nodes/outage/README.md"
  fi
done

# Train, then serve: a service that needs a step is applied once that step is done, and a new run
# of the step rolls the service (its pod template names the run it serves).
mkdir -p "$TMP/serve/repo/xgb"
fil_config() {  # fil_config [EXTRA LINE]: Triton's FIL backend on the UBJSON file trainrt writes
  printf 'backend: "fil"\n%s\nparameters [{ key: "model_type" value: { string_value: "xgboost_ubj" } }]\n' "$1" \
    >"$TMP/serve/repo/xgb/config.pbtxt"
}
fil_config 'default_model_filename: "model.ubj"'
serve_spec() {  # serve_spec ROUNDS WRITTEN_TO NEEDS
  cat >"$TMP/serve/spec.yaml" <<SPEC
apiVersion: trainc/v1
kind: TrainingSystem
name: serve
gcp: {project: my-project, region: us-central1, zone: us-central1-a}
runtime: {image: us-docker.pkg.dev/my-project/ml/trainrt:0.1.0}
identity: {serviceAccount: serve-ksa, gcpServiceAccount: serve-gsa}
cluster: {pools: {cpu: {machine: n2-standard-8, nodes: 2}}}
storage: {models: {gcs: {bucket: serve-models}}}
pipeline:
  - {name: datagen, pool: cpu, datagen: {rows: 100000, features: 16, to: "models:/table"}}
  - {name: train, needs: [datagen], pool: cpu, xgboost: {from: "models:/table", to: "$2", rounds: $1}}
services:
  scorer: {pool: cpu, needs: [$3], triton: {repository: "models:/repo", models: [xgb], source: {from: repo}}}
SPEC
}
serve_spec 50 "models:/repo/xgb/1" train
run "$TRAINC" compile "$TMP/serve/spec.yaml" -o "$TMP/serve/old"
t "train, then serve: the spec compiles, with no warning" bash -c '[ "$1" -eq 0 ] && ! grep -q warning "$2"' _ "$rc" "$TMP/stderr"
serve_order() {
  local apply=$TMP/serve/old/serve/scripts/apply.sh train_job
  train_job=$(sed -n 's/^  name: \(serve-train-.*\)$/\1/p' "$TMP/serve/old/serve/k8s/train-job.yaml" | head -1)
  # The service's objects come after the wait for the train Job, and health.sh after them.
  awk -v job="$train_job" '
    $0 == "wait_job " job { waited = NR }
    /service-scorer-deployment.yaml/ && !applied { applied = NR }
    /health.sh"$/ && !health { health = NR }
    END { exit !(waited && applied > waited && health > applied) }' "$apply" ||
    { echo "train job $train_job; apply.sh:"; grep -n "wait_job\|scorer\|health.sh" "$apply"; return 1; }
  grep -q "trainc.dev/serves-runs: train=${train_job#serve-train-}" "$TMP/serve/old/serve/k8s/service-scorer-deployment.yaml" ||
    { echo "the pod template does not name run ${train_job#serve-train-}"; return 1; }
}
t "... apply.sh applies the service once the train Job is done, then asks health.sh; its pods name the run" serve_order
serve_spec 60 "models:/repo/xgb/1" train
run "$TRAINC" plan "$TMP/serve/spec.yaml" --against "$TMP/serve/old/serve" --format json
cp "$TMP/stdout" "$TMP/serve/plan.json"
t "... a new run of train rolls the service" check_plan "$TMP/serve/plan.json" \
  "runs=train; object=Deployment:k8s/service-scorer-deployment.yaml:roll"
t "... and the plan says why" grep -q "it serves a new run of the steps it needs" "$TMP/serve/plan.json"
serve_spec 50 "models:/elsewhere" train
run "$TRAINC" check "$TMP/serve/spec.yaml"
t "... a service whose model folder no step it needs writes gets a warning" \
  grep -q "service 'scorer' serves gs://serve-models/repo and needs 'train', but no step it needs writes there ('train' writes models:/elsewhere)" "$TMP/stderr"
fil_config ''
serve_spec 50 "models:/repo/xgb/1" train
run "$TRAINC" check "$TMP/serve/spec.yaml"
t "... a FIL config that would look for another file than trainrt's model.ubj gets a warning" \
  grep -q "model 'xgb' is served by Triton's FIL backend, which loads xgb/1/xgboost.ubj (model_type xgboost_ubj, no default_model_filename), but step 'train' writes xgb/1/model.ubj" "$TMP/stderr"
fil_config 'default_model_filename: "model.ubj"'
serve_spec 50 "models:/repo/xgb/1" trian
run "$TRAINC" check "$TMP/serve/spec.yaml"
t "... an unknown step in a service's needs is an error with a suggestion" \
  grep -q "unknown step 'trian' in needs of service 'scorer'; did you mean 'train'?" "$TMP/stderr"

# A step on a schedule: a CronJob whose Jobs are each a run of their own, applied after the steps
# it needs; an edit updates the CronJob in place and starts nothing now.
mkdir -p "$TMP/sched"
sched_spec() {  # sched_spec SCRIPT
  cat >"$TMP/sched/spec.yaml" <<SPEC
apiVersion: trainc/v1
kind: TrainingSystem
name: nightly
gcp: {project: my-project, region: us-central1}
storage: {ck: {s3: {bucket: evals}}}
pipeline:
  - {name: train, image: python:3.12, command: [python3, train.py]}
  - name: evaluate
    needs: [train]
    image: python:3.12
    command: [python3, $1]
    schedule: {cron: "*/30 1-5 * * MON-FRI", timeZone: Europe/Berlin}
    outputs: {path: out, to: "ck:/evals/"}
    checkpoints: {path: out/ckpt}
SPEC
}
sched_spec eval.py
run "$TRAINC" compile "$TMP/sched/spec.yaml" -o "$TMP/sched/old"
CJ=$TMP/sched/old/nightly/k8s/evaluate-cronjob.yaml
t "schedule: the spec compiles to a CronJob named <system>-<step>" bash -c '[ "$1" -eq 0 ] && grep -q "^  name: nightly-evaluate$" "$2"' _ "$rc" "$CJ"
t "... with the schedule, the time zone, no overlap and the step's history" bash -c \
  'grep -q "^  schedule: \"\*/30 1-5 \* \* MON-FRI\"$" "$1" && grep -q "^  timeZone: Europe/Berlin$" "$1" &&
   grep -q "^  concurrencyPolicy: Forbid$" "$1" && grep -q "^  successfulJobsHistoryLimit: 3$" "$1"' _ "$CJ"
t "... each scheduled Job is a run of its own: TRAINC_RUN is the Job's name" \
  grep -q "fieldPath: \"metadata.labels\['batch.kubernetes.io/job-name'\]\"" "$CJ"
sched_order() {
  local apply=$TMP/sched/old/nightly/scripts/apply.sh
  awk '/^wait_job nightly-train-/ { waited = NR } /evaluate-cronjob.yaml/ { applied = NR }
       END { exit !(waited && applied > waited) }' "$apply" || { grep -n "wait_job\|cronjob" "$apply"; return 1; }
  grep -q 'LIST_SELECTOR="$SELECTOR,!trainc.dev/schedule" listed' "$apply" || { echo "run pruning would take the CronJob's Jobs"; return 1; }
}
t "... apply.sh applies it once train is done, and leaves its Jobs to the CronJob's history" sched_order
if oracles_present "the CronJob meets the API server's schema" k8s-validate; then
  run "$ORACLE/k8s-validate" "$CJ"
  t "the CronJob meets the API server's schema (k8s-validate)" test "$rc" -eq 0
fi
sched_spec eval2.py
run "$TRAINC" compile "$TMP/sched/spec.yaml" -o "$TMP/sched/new"
run "$TRAINC" plan "$TMP/sched/spec.yaml" --against "$TMP/sched/old/nightly" --format json
cp "$TMP/stdout" "$TMP/sched/plan.json"
t "an edited scheduled step starts nothing now: its CronJob is updated in place" check_plan "$TMP/sched/plan.json" \
  "runs=; object=CronJob:k8s/evaluate-cronjob.yaml:update"
if [ "$have_oracle" = 1 ]; then
  "$ORACLE/k8s-update-check" "$TMP/sched/old/nightly/k8s" "$TMP/sched/new/nightly/k8s" >"$TMP/sched/update.txt" 2>&1
  t "... and the API server accepts the update (k8s-update-check)" grep -q "^0 refused" "$TMP/sched/update.txt"
fi

run "$TRAINC" plan examples/xgb-a4/spec.yaml --against "$TMP/same/xgb-a4"
t "the same output: nothing runs" grep -q '^Steps that run: none' "$TMP/stdout"
t "the same output: every object unchanged" grep -Eq '^Summary: 0 step\(s\) run; objects: [0-9]+ unchanged$' "$TMP/stdout"
# The output root works too (DIR/<system>), and a folder with no output is a usage error.
run "$TRAINC" plan examples/xgb-a4/spec.yaml --against "$TMP/same"
t "plan --against DIR finds DIR/<system>" grep -q "^Changes against $TMP/same/xgb-a4 " "$TMP/stdout"
run "$TRAINC" plan examples/xgb-a4/spec.yaml --against "$TMP/nothing"
t "plan --against a folder with no output exits 2" test "$rc" -eq 2
t "... and says what to give" grep -q 'holds no k8s/ folder' "$TMP/stderr"
# An untrusted OLD folder (CI compares with a base branch a pull request can change): each hostile
# file ends plan --against within seconds, exit 2, saying which file and why, and nothing from it
# reaches the terminal raw. The same folders under `trainc diff`.
hostile_old() {  # hostile_old NAME: a fresh copy of the xgb-a4 output in $TMP/hostile/NAME/xgb-a4
  rm -rf "$TMP/hostile/$1"
  mkdir -p "$TMP/hostile/$1"
  cp -r "$TMP/same/xgb-a4" "$TMP/hostile/$1/"
  echo "$TMP/hostile/$1/xgb-a4"
}
# plan_refuses DIR WHAT: plan --against DIR ends in 20 s with exit 2 and WHAT on stderr; trainc diff
# of DIR's root ends in 20 s, exit 1 or 2, with WHAT on stderr too unless a second argument says so.
plan_refuses() {
  rc=0
  timeout 20 "$TRAINC" plan examples/xgb-a4/spec.yaml --against "$1" >"$TMP/stdout" 2>"$TMP/stderr" || rc=$?
  [ "$rc" -eq 2 ] || { echo "plan --against: exit $rc (124: still running after 20 s), expected 2"; head -c 600 "$TMP/stderr"; return 1; }
  grep -qF -- "$2" "$TMP/stderr" || { echo "plan --against: expected '$2' in:"; head -c 600 "$TMP/stderr"; return 1; }
  if grep -q $'\x1b' "$TMP/stdout" "$TMP/stderr"; then echo "an escape byte reached the output"; return 1; fi
  rc=0
  timeout 20 "$TRAINC" diff examples/xgb-a4/spec.yaml --against "$(dirname "$1")" >"$TMP/stdout" 2>"$TMP/stderr" || rc=$?
  [ "$rc" -eq 1 ] || [ "$rc" -eq 2 ] || { echo "diff: exit $rc (124: still running after 20 s)"; head -c 600 "$TMP/stderr"; return 1; }
  if grep -q $'\x1b' "$TMP/stdout" "$TMP/stderr"; then echo "diff: an escape byte reached the output"; return 1; fi
  [ -n "${3:-}" ] || grep -qF -- "$2" "$TMP/stderr" || { echo "diff: expected '$2' in:"; head -c 600 "$TMP/stderr"; return 1; }
}
old_commas() {
  local d; d=$(hostile_old commas)
  printf ',' >"$d/k8s/zz.yaml"
  plan_refuses "$d" "k8s/zz.yaml: not an output's YAML" diff-reads-it-as-text
}
old_alias_bomb() {
  local d; d=$(hostile_old bomb)
  { echo 'a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]'
    for x in b c d e f g h i; do echo "$x: &$x [*${prev:-a},*${prev:-a},*${prev:-a},*${prev:-a},*${prev:-a},*${prev:-a},*${prev:-a},*${prev:-a},*${prev:-a}]"; prev=$x; done
  } >"$d/k8s/zz.yaml"
  plan_refuses "$d" "an anchor" diff-reads-it-as-text
}
old_dev_zero() {
  local d; d=$(hostile_old zero)
  rm "$d/model.yaml"
  ln -s /dev/zero "$d/model.yaml"
  plan_refuses "$d" "model.yaml' is a symbolic link"
}
old_link_out() {
  local d; d=$(hostile_old linkout)
  echo "secret: do-not-read" >"$TMP/hostile/outside.yaml"
  ln -s "$TMP/hostile/outside.yaml" "$d/k8s/zz.yaml"
  plan_refuses "$d" "k8s/zz.yaml' is a symbolic link"
  if grep -q "do-not-read" "$TMP/stdout" "$TMP/stderr"; then echo "the linked file was read"; return 1; fi
  rm "$d/k8s/zz.yaml"
  ln -s /tmp "$d/k8s/sub"
  rc=0
  timeout 20 "$TRAINC" plan examples/xgb-a4/spec.yaml --against "$d" >"$TMP/stdout" 2>"$TMP/stderr" || rc=$?
  [ "$rc" -eq 0 ] || { echo "a linked folder in k8s/ (not followed): exit $rc"; cat "$TMP/stderr"; return 1; }
}
old_escapes() {
  local d; d=$(hostile_old escapes)
  # An object of the old output named with an OSC 52 sequence (writes the clipboard).
  printf 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: "x\\e]52;c;aGk=\\ax"\n  namespace: xgb-a4\n' >"$d/k8s/zz.yaml"
  rc=0
  timeout 20 "$TRAINC" plan examples/xgb-a4/spec.yaml --against "$d" >"$TMP/stdout" 2>"$TMP/stderr" || rc=$?
  [ "$rc" -eq 0 ] || { echo "exit $rc"; cat "$TMP/stderr"; return 1; }
  if grep -q $'\x1b' "$TMP/stdout" "$TMP/stderr"; then echo "an escape byte reached the output"; return 1; fi
  grep -qF 'x\x1b]52;c;aGk=\x07x' "$TMP/stdout" || { echo "the name is not shown escaped:"; grep -a 52 "$TMP/stdout"; return 1; }
}
old_not_utf8() {
  local d; d=$(hostile_old latin1)
  printf 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: caf\xe9\n' >"$d/k8s/zz.yaml"
  plan_refuses "$d" "k8s/zz.yaml' is not UTF-8 text"
}
t "untrusted OLD: a k8s/*.yaml of only ',' ends at once (yaml-cpp's LoadAll looped for ever)" old_commas
t "untrusted OLD: an alias bomb is refused at its first anchor" old_alias_bomb
t "untrusted OLD: model.yaml -> /dev/zero is refused, not read" old_dev_zero
t "untrusted OLD: links out of OLD are not followed" old_link_out
t "untrusted OLD: terminal escapes in object names are shown escaped" old_escapes
t "untrusted OLD: text that is not UTF-8 is a clear error" old_not_utf8
tap_done
