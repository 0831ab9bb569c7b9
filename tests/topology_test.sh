#!/usr/bin/env bash
# The topology contract (TAP): the Topology's levels are labels GKE sets on the nodes of the pool each
# flavor with a Topology selects, and every queued pod template on such a pool asks once. The judge,
# tests/topology_contract.py, reads only compiled output (k8s/, terraform/node_pools.tf,
# scripts/up.sh). It passes on every example and on golden/gpt-a4-tas; it fails on mutations of that
# golden, one broken link each; specs written here get the placement they ask for, or are refused
# with the reason; and the Kueue CRD oracle (its CEL rules) accepts the golden's Topology and flavor.
# Usage: tests/topology_test.sh TRAINC
set -uo pipefail
# shellcheck source=tests/tap.sh
. "$(dirname "${BASH_SOURCE[0]}")/tap.sh"
tap_init "$@"
rc=0  # exit code of the last run() (tests/tap.sh)

JUDGE=tests/topology_contract.py
GOLDEN=golden/gpt-a4-tas
SUB=cloud.google.com/gce-topology-subblock

# judge_passes DIR: the judge exits 0 on DIR, and says what it checked.
judge_passes() {
  run python3 "$JUDGE" "$1"
  if [ "$rc" -ne 0 ]; then
    echo "exit $rc on $1:"; cat "$TMP/stdout" "$TMP/stderr"; return 1
  fi
  grep -q 'ResourceFlavor(s)' "$TMP/stdout" || { echo "no summary:"; cat "$TMP/stdout"; return 1; }
}

# --- every example, and the golden ---------------------------------------------------------------
mkdir -p "$TMP/examples"
tas_examples=0
while read -r spec; do
  name=$(basename "$(dirname "$spec")")
  out="$TMP/examples/$(basename "$spec" | tr . -)"
  mkdir -p "$out"
  if ! "$TRAINC" compile "$spec" -o "$out" >"$TMP/compile.log" 2>&1; then
    t_fail "compile $spec" "$(cat "$TMP/compile.log")"
    continue
  fi
  if [ -f "$out/$name/k8s/topology.yaml" ]; then tas_examples=$((tas_examples + 1)); fi
  t "the topology contract holds for $spec" judge_passes "$out/$name"
done < <(example_specs)
t "some example has a Topology (the contract is not checked on nothing)" test "$tas_examples" -gt 0
t "the topology contract holds for $GOLDEN" judge_passes "$GOLDEN"

# --- mutations of the golden: each must fail, naming the problem -----------------------------------
# mutant NAME PATTERN EDIT...: copies the golden to $TMP/NAME, runs EDIT (a command, in the copy),
# checks it changed something, and expects the judge to exit 1 with a line matching PATTERN (ERE).
mutant() {
  local name=$1 pattern=$2 dir="$TMP/mutant-$1"
  shift 2
  rm -rf "$dir"
  cp -a "$GOLDEN" "$dir"
  (cd "$dir" && "$@") || { echo "the edit failed: $*"; return 1; }
  if diff -rq "$GOLDEN" "$dir" >/dev/null; then echo "the edit changed nothing: $*"; return 1; fi
  run python3 "$JUDGE" "$dir"
  if [ "$rc" -ne 1 ]; then echo "exit $rc (expected 1) after: $*"; cat "$TMP/stdout" "$TMP/stderr"; return 1; fi
  if ! grep -Eq -- "$pattern" "$TMP/stdout"; then
    echo "no line matches /$pattern/:"; cat "$TMP/stdout"; return 1
  fi
  grep -E -- "$pattern" "$TMP/stdout" | head -n 3
}
set_level_rack() { sed -i "s|nodeLabel: $SUB\$|nodeLabel: cloud.google.com/gce-topology-rack|" k8s/topology.yaml; }
flavor_elsewhere() { sed -i 's|cloud.google.com/gke-nodepool: a4$|cloud.google.com/gke-nodepool: a4-gone|' k8s/flavor-a4.yaml; }
drop_annotation() { sed -i '/kueue.x-k8s.io\/podset-preferred-topology:/d' k8s/pretrain-jobset.yaml; }
second_annotation() {
  sed -i "/kueue.x-k8s.io\/podset-preferred-topology:/a\\                kueue.x-k8s.io/podset-required-topology: $SUB" k8s/pretrain-jobset.yaml
}
rename_topology() { sed -i 's|^  name: \(gpt-a4-tas-[0-9a-f]*\)$|  name: \1-renamed|' k8s/topology.yaml; }
machine_g2() {
  sed -i 's|machine_type = "a4-highgpu-8g"|machine_type = "g2-standard-96"|' terraform/node_pools.tf &&
    sed -i 's|--machine-type=a4-highgpu-8g|--machine-type=g2-standard-96|' scripts/up.sh
}
machine_g2_upsh_only() { sed -i 's|--machine-type=a4-highgpu-8g|--machine-type=g2-standard-96|' scripts/up.sh; }
slice_without_size() {
  sed -i "/kueue.x-k8s.io\/podset-preferred-topology:/a\\                kueue.x-k8s.io/podset-slice-required-topology: $SUB" k8s/pretrain-jobset.yaml
}
unnamed_topology() { sed -i '/^  topologyName:/d' k8s/flavor-a4.yaml; }
flavor_unlabelled() { sed -i -e '/^  nodeLabels:$/d' -e '/^    cloud.google.com\/gke-nodepool: a4$/d' k8s/flavor-a4.yaml; }
hostname_first() {
  sed -i -e 's|nodeLabel: kubernetes.io/hostname|nodeLabel: HOLD|' \
    -e 's|nodeLabel: cloud.google.com/gce-topology-block|nodeLabel: kubernetes.io/hostname|' \
    -e 's|nodeLabel: HOLD|nodeLabel: cloud.google.com/gce-topology-block|' k8s/topology.yaml
}
unconstrained_many() {
  sed -i 's|kueue.x-k8s.io/podset-preferred-topology: .*|kueue.x-k8s.io/podset-unconstrained-topology: "true"|' k8s/pretrain-jobset.yaml
}

t "a Topology level GKE does not set (gce-topology-rack) fails the judge" \
  mutant rack 'k8s/flavor-a4.yaml: ResourceFlavor gpt-a4-tas-a4-[0-9a-f]+: .*gce-topology-rack is not a label GKE sets' set_level_rack
t "a flavor selecting a node pool Terraform does not create fails the judge" \
  mutant pool 'k8s/flavor-a4.yaml: .*a4-gone, a node pool terraform/node_pools.tf does not create' flavor_elsewhere
t "pretrain-jobset.yaml without its topology annotation fails the judge" \
  mutant bare 'k8s/pretrain-jobset.yaml: JobSet gpt-a4-tas-pretrain-[0-9a-f]+ spec.replicatedJobs\[0\] \(node\)\.template\.spec\.template: .*must carry exactly one of.*carries none' drop_annotation
t "a second topology annotation on a template fails the judge" \
  mutant twice 'k8s/pretrain-jobset.yaml: JobSet gpt-a4-tas-pretrain-[0-9a-f]+ spec.replicatedJobs\[0\] \(node\)\.template\.spec\.template: .*must carry exactly one of.*podset-required-topology' second_annotation
t "a renamed Topology (the flavor's topologyName dangles) fails the judge" \
  mutant dangling "k8s/flavor-a4.yaml: ResourceFlavor gpt-a4-tas-a4-[0-9a-f]+: spec.topologyName names Topology 'gpt-a4-tas-[0-9a-f]+', which the output does not hold" rename_topology
t "the a4 pool on g2-standard-96 (Terraform and up.sh) fails the judge: GKE labels no block there" \
  mutant g2 "Topology 'gpt-a4-tas-[0-9a-f]+' level 0 cloud.google.com/gce-topology-block: GKE sets it only on .*node pool 'a4' is g2-standard-96" machine_g2
t "Terraform and up.sh disagreeing on the pool's machine fails the judge" \
  mutant disagree "node pool 'a4' is a4-highgpu-8g in terraform/node_pools.tf but g2-standard-96 in scripts/up.sh" machine_g2_upsh_only
t "a slice annotation without podset-slice-size fails the judge" \
  mutant slice 'k8s/pretrain-jobset.yaml: .*podset-slice-required-topology without kueue.x-k8s.io/podset-slice-size' slice_without_size
t "a 4-pod PodSet marked unconstrained fails the judge" \
  mutant loose 'k8s/pretrain-jobset.yaml: .*a PodSet of 4 pods is unconstrained' unconstrained_many
t "a Topology no flavor names fails the judge" \
  mutant orphan 'k8s/topology.yaml: Topology gpt-a4-tas-[0-9a-f]+: no ResourceFlavor names it' unnamed_topology
t "a flavor with a topologyName but no nodeLabels fails the judge (Kueue's CEL rule)" \
  mutant unlabelled 'k8s/flavor-a4.yaml: ResourceFlavor gpt-a4-tas-a4-[0-9a-f]+: has a topologyName but no nodeLabels' flavor_unlabelled
t "kubernetes.io/hostname as the first level fails the judge" \
  mutant hostname 'k8s/topology.yaml: Topology gpt-a4-tas-[0-9a-f]+: kubernetes.io/hostname may only be the last' hostname_first

# --- specs written here -----------------------------------------------------------------------------
# spec NAME POOL-LINES NODES: a system NAME with an a3-ultragpu-8g pool `h200` (POOL-LINES under it,
# indented six spaces, saying how it gets its nodes: A3 Ultra is not offered on demand) behind a queue, and a NODES-node torchrun step on it.
spec() {
  cat >"$TMP/$1.yaml" <<EOF
apiVersion: trainc/v1
kind: TrainingSystem
name: $1
gcp: {project: my-project, region: us-central1, zone: us-central1-b}
queue: {name: research}
cluster:
  pools:
    h200:
      machine: a3-ultragpu-8g
$2
pipeline:
  - name: pretrain
    image: us-docker.pkg.dev/my-project/ml/gpt:1.0
    pool: h200
    nodes: $3
    gpus: 8
    torchrun: {script: train.py}
EOF
}

# compiled NAME: compiles $TMP/NAME.yaml into $TMP/out.
compiled() {
  run "$TRAINC" compile "$TMP/$1.yaml" -o "$TMP/out"
  if [ "$rc" -ne 0 ]; then echo "compile exit $rc:"; cat "$TMP/stderr"; return 1; fi
}

# No Topology in the output, and no TAS annotation anywhere in it.
untouched() {
  local dir=$1 hits
  if [ -e "$dir/k8s/topology.yaml" ]; then echo "$dir/k8s/topology.yaml exists"; return 1; fi
  hits=$(grep -rn -e 'kind: Topology$' -e 'topologyName:' -e 'kueue.x-k8s.io/podset-[a-z-]*topology' "$dir/k8s" || true)
  if [ -n "$hits" ]; then echo "topology-aware placement left in $dir:"; echo "$hits"; return 1; fi
}

subblock_required() {
  spec sub-required "      nodes: 2
      provisioning: reservation
      reservation: h200-block-1
      placement: {level: subblock, required: true}" 2
  compiled sub-required || return 1
  local job="$TMP/out/sub-required/k8s/pretrain-jobset.yaml"
  grep -qx "                kueue.x-k8s.io/podset-required-topology: $SUB" "$job" ||
    { echo "$job does not require one sub-block:"; grep -n 'kueue.x-k8s.io' "$job"; return 1; }
  judge_passes "$TMP/out/sub-required"
}
t "a fixed a3-ultragpu-8g pool with placement {level: subblock, required: true}: the 2-node JobSet requires one sub-block, and the contract holds" \
  subblock_required

autoscaled_plain() {
  spec autoscaled "      provisioning: spot
      autoscaling: {min: 0, max: 4}" 2
  compiled autoscaled || return 1
  untouched "$TMP/out/autoscaled" || return 1
  judge_passes "$TMP/out/autoscaled" || return 1
  run "$TRAINC" plan "$TMP/autoscaled.yaml"
  if [ "$rc" -ne 0 ]; then echo "plan exit $rc:"; cat "$TMP/stderr"; return 1; fi
  grep -i "pool 'h200'.*no topology-aware placement.*nodes that exist" "$TMP/stdout" ||
    { echo "trainc plan gives no note why pool 'h200' is not placed by topology:"; cat "$TMP/stdout"; return 1; }
}
t "the same pool autoscaled {min: 0, max: 4} without placement: no Topology, no annotations, and plan says why" \
  autoscaled_plain

# refused NAME PATTERN...: `trainc check` on $TMP/NAME.yaml exits 1 and its errors match every PATTERN.
refused() {
  local name=$1 p
  shift
  run "$TRAINC" check "$TMP/$name.yaml"
  if [ "$rc" -ne 1 ]; then echo "check exit $rc (expected 1):"; cat "$TMP/stdout" "$TMP/stderr"; return 1; fi
  for p in "$@"; do
    grep -Eq -- "$p" "$TMP/stderr" || { echo "no error matches /$p/:"; cat "$TMP/stderr"; return 1; }
  done
  grep -m1 'error:' "$TMP/stderr"
}
spec autoscaled-block "      provisioning: spot
      autoscaling: {min: 0, max: 4}
      placement: {level: block}" 2
t "an autoscaled pool asking placement {level: block} with a 2-node step is refused, naming the step" \
  refused autoscaled-block "error: step 'pretrain' .*pool 'h200'" "nodes that exist"

cat >"$TMP/t4-block.yaml" <<'EOF'
apiVersion: trainc/v1
kind: TrainingSystem
name: t4-block
gcp: {project: my-project, region: us-central1, zone: us-central1-b}
queue: {name: research}
cluster:
  pools:
    t4:
      machine: n1-standard-8
      accelerator: {type: nvidia-tesla-t4, count: 1}
      nodes: 2
      placement: {level: block}
pipeline:
  - name: pretrain
    image: us-docker.pkg.dev/my-project/ml/gpt:1.0
    pool: t4
    nodes: 2
    gpus: 1
    torchrun: {script: train.py}
EOF
t "an n1-standard-8 + T4 pool asking placement {level: block} is refused: GKE labels no block there" \
  refused t4-block "error: pool 't4' asks for placement by block" "n1-standard-8"

level_none() {
  spec level-none "      nodes: 2
      provisioning: reservation
      reservation: h200-block-1
      placement: {level: none}" 2
  compiled level-none || return 1
  untouched "$TMP/out/level-none" || return 1
  judge_passes "$TMP/out/level-none"
}
t "placement {level: none} on a fixed a3-ultragpu-8g pool: no Topology, no annotations" level_none

# A RayJob: Kueue makes a PodSet of the head (one pod) and of each worker group (its replicas).
ray_groups() {
  cat >"$TMP/ray-tas.yaml" <<'EOF'
apiVersion: trainc/v1
kind: TrainingSystem
name: ray-tas
gcp: {project: my-project, region: us-central1, zone: us-central1-b}
queue: {name: research}
cluster:
  pools:
    h200: {machine: a3-ultragpu-8g, nodes: 3, provisioning: reservation, reservation: h200-block-1}
clusters:
  ray:
    engine: ray
    image: rayproject/ray:2.52.0-py310-gpu
    perJob: true
    head: {pool: h200}
    workers:
      gpu: {pool: h200, replicas: 2}
pipeline:
  - name: train
    cluster: ray
    command: [python, train.py]
EOF
  compiled ray-tas || return 1
  local dir="$TMP/out/ray-tas" ray
  ray=$(grep -l '^kind: RayJob$' "$dir"/k8s/*.yaml) || { echo "no RayJob in $dir/k8s"; return 1; }
  judge_passes "$dir" || return 1
  grep -q ' 2 on pools with a Topology' "$TMP/stdout" ||
    { echo "the judge did not find the head and the worker group on the pool:"; cat "$TMP/stdout"; return 1; }
  # Mutated: the one-pod head asks for a block, the two-pod worker group for nothing.
  sed -i 's|kueue.x-k8s.io/podset-unconstrained-topology: "true"|kueue.x-k8s.io/podset-preferred-topology: cloud.google.com/gce-topology-block|' "$ray"
  sed -i '0,/kueue.x-k8s.io\/podset-preferred-topology: cloud.google.com\/gce-topology-block/! {/kueue.x-k8s.io\/podset-preferred-topology:/d}' "$ray"
  run python3 "$JUDGE" "$dir"
  if [ "$rc" -ne 1 ]; then echo "exit $rc on the mutated RayJob (expected 1):"; cat "$TMP/stdout"; return 1; fi
  if ! grep -q 'headGroupSpec.template: a PodSet of 1 pod asks' "$TMP/stdout" ||
    ! grep -q 'workerGroupSpecs\[0\] (gpu).template: .*carries none' "$TMP/stdout"; then
    echo "the mutated head and worker group were not both reported:"; cat "$TMP/stdout"; return 1
  fi
}
t "a per-job Ray cluster on a fixed a3-ultragpu-8g pool: the contract holds, and a head asking a block or a worker group asking nothing fails it" \
  ray_groups

# A JobSet (trainc makes them for TPU pools, which get no Topology): one PodSet per replicatedJob,
# replicas x parallelism pods, judged like a Job's template when it runs on a pool with a Topology.
jobset_on_a4() {
  local dir="$TMP/jobset" annotation=$1
  rm -rf "$dir"
  cp -a "$GOLDEN" "$dir"
  cat >"$dir/k8s/extra-jobset.yaml" <<EOF
apiVersion: jobset.x-k8s.io/v1alpha2
kind: JobSet
metadata:
  name: extra
  labels: {kueue.x-k8s.io/queue-name: research}
spec:
  replicatedJobs:
    - name: slice
      replicas: 2
      template:
        spec:
          parallelism: 2
          completions: 2
          template:
            metadata:
              annotations: {$annotation}
            spec:
              nodeSelector: {cloud.google.com/gke-nodepool: a4}
              containers: [{name: c, image: busybox}]
EOF
  run python3 "$JUDGE" "$dir"
}
# A GPU step that names no pool, where the only pool with GPUs is placed by topology: Kueue can only
# give it that flavor, which takes PodSets that ask, so the Job asks (unconstrained).
pool_less() {
  cat >"$TMP/pool-less.yaml" <<'EOF'
apiVersion: trainc/v1
kind: TrainingSystem
name: pool-less
gcp: {project: my-project, region: us-central1, zone: us-central1-b}
queue: {}
cluster:
  pools:
    cpu: {machine: e2-standard-8}
    a4: {machine: a4-highgpu-8g, nodes: 2, provisioning: reservation, reservation: a4-block-1}
pipeline:
  - {name: gpu, image: us-docker.pkg.dev/my-project/ml/x:1, gpus: 8, command: [x], resources: {requests: {cpu: "100", memory: 1000Gi}}}
  - {name: cpu, image: us-docker.pkg.dev/my-project/ml/x:1, command: [x]}
EOF
  compiled pool-less || return 1
  grep -qx '        kueue.x-k8s.io/podset-unconstrained-topology: "true"' "$TMP/out/pool-less/k8s/gpu-job.yaml" ||
    { echo "the pool-less GPU step does not ask:"; grep -n kueue "$TMP/out/pool-less/k8s/gpu-job.yaml"; return 1; }
  if grep -q 'podset-' "$TMP/out/pool-less/k8s/cpu-job.yaml"; then echo "the CPU step asks for topology"; return 1; fi
  judge_passes "$TMP/out/pool-less"
}
t "a GPU step naming no pool, whose only GPU pool is placed by topology, asks unconstrained; a CPU one asks nothing" pool_less

jobset_judged() {
  jobset_on_a4 "kueue.x-k8s.io/podset-required-topology: $SUB"
  if [ "$rc" -ne 0 ]; then echo "exit $rc on a JobSet requiring one sub-block:"; cat "$TMP/stdout"; return 1; fi
  jobset_on_a4 'kueue.x-k8s.io/podset-unconstrained-topology: "true"'
  if [ "$rc" -ne 1 ]; then echo "exit $rc on an unconstrained 4-pod JobSet (expected 1):"; cat "$TMP/stdout"; return 1; fi
  grep -q 'JobSet extra spec.replicatedJobs\[0\] (slice).template.spec.template: a PodSet of 4 pods is unconstrained' "$TMP/stdout" ||
    { echo "the JobSet's 4-pod PodSet was not reported:"; cat "$TMP/stdout"; return 1; }
}
t "a queued JobSet on the A4 pool: the judge counts replicas x parallelism and reads the replicated Job's template" jobset_judged

# --- the Kueue CRD oracle -----------------------------------------------------------------------------
oracle_accepts() {
  run "$ORACLE/k8s-validate" "$GOLDEN/k8s/topology.yaml" "$GOLDEN/k8s/flavor-a4.yaml"
  if [ "$rc" -ne 0 ]; then echo "k8s-validate exit $rc:"; cat "$TMP/stdout" "$TMP/stderr"; return 1; fi
  if ! grep -q 'Topology/gpt-a4-tas' "$TMP/stdout" || ! grep -q 'ResourceFlavor/gpt-a4-tas-a4' "$TMP/stdout"; then
    echo "k8s-validate did not report both objects:"; cat "$TMP/stdout"; return 1
  fi
}
# And it is no rubber stamp: hostname above another level breaks a CEL rule of the Topology.
oracle_refuses_hostname_first() {
  local bad="$TMP/hostname-first"
  rm -rf "$bad"
  mkdir -p "$bad/k8s"
  cp "$GOLDEN/k8s/topology.yaml" "$bad/k8s/"
  (cd "$bad" && hostname_first) || return 1
  run "$ORACLE/k8s-validate" "$bad/k8s/topology.yaml"
  if [ "$rc" -eq 0 ]; then echo "k8s-validate accepted kubernetes.io/hostname as the first level:"; cat "$TMP/stdout"; return 1; fi
  grep -q 'kubernetes.io/hostname label can only be used at the lowest level' "$TMP/stdout" ||
    { echo "k8s-validate refused it for another reason:"; cat "$TMP/stdout" "$TMP/stderr"; return 1; }
}
if oracles_present "the Kueue CRD oracle accepts $GOLDEN/k8s/topology.yaml and flavor-a4.yaml" k8s-validate; then
  t "the Kueue CRD oracle accepts $GOLDEN/k8s/topology.yaml and flavor-a4.yaml" oracle_accepts
  t "the Kueue CRD oracle refuses a Topology with kubernetes.io/hostname first" oracle_refuses_hostname_first
fi

# Kueue's configuration (addons/): the oracle judges it as a ConfigMap (Kueue's Configuration is no
# Kubernetes kind it knows; trainc-unit-tests checks its fields against Kueue's source), and yamllint.
kueue_config_valid() {
  run "$ORACLE/k8s-validate" "$GOLDEN/addons/kueue-manager-config.yaml"
  if [ "$rc" -ne 0 ]; then echo "k8s-validate exit $rc:"; cat "$TMP/stdout" "$TMP/stderr"; return 1; fi
  grep -q 'ConfigMap/kueue-manager-config' "$TMP/stdout" || { echo "not judged:"; cat "$TMP/stdout"; return 1; }
  run "$ORACLE/yaml-lint" "$GOLDEN/addons/kueue-manager-config.yaml"
  if [ "$rc" -ne 0 ]; then echo "yaml-lint exit $rc:"; cat "$TMP/stdout" "$TMP/stderr"; return 1; fi
}
# No rubber stamp: a ConfigMap whose data is not a map of strings is refused.
kueue_config_refused() {
  sed 's/^data:$/data: []/' "$GOLDEN/addons/kueue-manager-config.yaml" >"$TMP/bad-config.yaml"
  run "$ORACLE/k8s-validate" "$TMP/bad-config.yaml"
  [ "$rc" -ne 0 ] || { echo "k8s-validate accepted a ConfigMap with list data"; return 1; }
}
if oracles_present "the oracle accepts Kueue's configuration" k8s-validate yaml-lint; then
  t "the oracle accepts $GOLDEN/addons/kueue-manager-config.yaml as a ConfigMap, and yamllint" kueue_config_valid
  t "the oracle refuses a broken copy of it" kueue_config_refused
fi

tap_done
