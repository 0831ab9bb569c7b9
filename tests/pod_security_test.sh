#!/usr/bin/env bash
# Pod Security Standards (TAP). Every example's pods are judged by tests/pod_security.py, written from
# the Kubernetes Pod Security Standards and the upstream sources of what mutates trainc's pods, independently
# of trainc. The pods judged are the final ones, as the cluster makes them: KubeRay's head and workers with the
# containers it adds, its submitter pod, the GCS FUSE and Istio sidecars. Every final pod is admitted by the
# enforce level of the namespace it lands in; pods in the system's namespace meet "restricted" unless their
# workload opts out in the spec; the namespace enforces exactly the strictest level all its pods meet (and
# warns and audits at restricted); every pod that is not restricted, trainc's DaemonSets in kube-system too, is
# named in the output README's Pod security table with a reason. The exceptions are printed as diagnostics.
# Usage: tests/pod_security_test.sh TRAINC
set -uo pipefail
# shellcheck source=tests/tap.sh
. "$(dirname "${BASH_SOURCE[0]}")/tap.sh"
tap_init "$@"

rank() { case $1 in restricted) echo 0 ;; baseline) echo 1 ;; *) echo 2 ;; esac; }

# README.md LEVELS: every pod in LEVELS (pod_security.py's columns) that is not restricted is
# named (`kind/name`) in one row of the README's Pod security table, at its level or a less strict
# one, with a reason: the spec's or trainc's. Pods in other namespaces (kube-system) too.
listed_in_readme() {
  python3 - "$1" "$2" <<'PY'
import re, sys
RANK = {"restricted": 0, "baseline": 1, "privileged": 2}
readme, levels = open(sys.argv[1]).read(), open(sys.argv[2]).read().splitlines()
section = readme.split("\n## Pod security\n", 1)[1].split("\n## ", 1)[0] if "\n## Pod security\n" in readme else ""
rows = []
for line in section.splitlines():
    cells = [c.strip() for c in re.split(r"(?<!\\)\|", line)[1:-1]]
    if len(cells) != 6 or cells[0] == "workload" or set(cells[0]) <= set("-"):
        continue
    rows.append(cells)
if not rows:
    print("README.md has no Pod security table")
bad = 0
for line in levels:
    level, _, obj, path, _ = line.split("\t")
    if level == "restricted":
        continue
    kind, name = obj.split("/", 1)
    ref = f"{kind.lower()}/{name}"
    found = [r for r in rows if ref in re.findall(r"`([^`]+)`", r[1])]
    if len(found) != 1:
        print(f"{obj} ({path}) is {level}, and {len(found)} rows of the Pod security table name `{ref}`")
        bad = 1
        continue
    workload, _, listed, _, reason, need = found[0]
    if max(RANK[w] for w in re.findall(r"restricted|baseline|privileged", listed)) < RANK[level]:
        print(f"{obj} is {level}, and its row ({workload}) says {listed}")
        bad = 1
    if reason == "-" and need == "-":
        print(f"{obj} is {level}, and its row ({workload}) gives no reason")
        bad = 1
sys.exit(bad)
PY
}

# DIR: pod_security.py's options, one a line, for the cluster the tree DIR's scripts/apply.sh sets up: the
# Istio CNI when it installs istiod with it.
cluster_options() {
  if grep -qs 'pilot\.cni\.enabled=true' "$1/scripts/apply.sh"; then echo --istio-cni; fi
}

# FINAL: pod_security.py's --final lines as the template mode's columns (LEVEL FILE KIND/NAME POD VIOLATIONS).
as_levels() { awk -F'\t' -v OFS='\t' '{ print $2, $5, $6, $7, $9 }' "$1"; }

# NAME: the compiled tree at $TMP/out/NAME meets the rules above.
judge() {
  local name=$1 dir="$TMP/out/$1" ns_file verdict level ns enforce object pod added violations
  local worst=restricted bad=0 rc
  ns_file="$dir/k8s/namespace.yaml"
  mapfile -t manifests < <(find "$dir/k8s" -maxdepth 1 -name '*.yaml' ! -name kustomization.yaml | sort)
  mapfile -t options < <(cluster_options "$dir")
  python3 tests/pod_security.py --final "${options[@]}" "${manifests[@]}" >"$TMP/$name.final"
  rc=$?
  if [ "$rc" != 0 ] && [ "$rc" != 3 ]; then echo "pod_security.py failed"; return 1; fi
  [ -s "$TMP/$name.final" ] || { echo "no pods found in $dir/k8s"; return 1; }
  while IFS=$'\t' read -r verdict level ns enforce _ object pod added violations; do
    [ "$level" = restricted ] || echo "exception in $ns: $object ($pod) is $level: $violations"
    if [ "$verdict" != admitted ]; then
      echo "refused: $object ($pod, with $added) is $level; namespace $ns enforces $enforce"
      bad=1
    fi
    # The namespace's level counts only its own pods.
    if [ "$ns" != kube-system ] && [ "$(rank "$level")" -gt "$(rank "$worst")" ]; then worst=$level; fi
  done <"$TMP/$name.final"
  as_levels "$TMP/$name.final" >"$TMP/$name.levels"
  listed_in_readme "$dir/README.md" "$TMP/$name.levels" || bad=1
  if [ -f "$ns_file" ]; then
    enforce=$(sed -n 's/^ *pod-security.kubernetes.io\/enforce: *//p' "$ns_file")
    if [ "$enforce" != "$worst" ]; then
      echo "namespace enforces '$enforce'; its strictest common level is '$worst'"
      bad=1
    fi
    for mode in warn audit; do
      grep -q "pod-security.kubernetes.io/$mode: restricted" "$ns_file" || { echo "namespace does not $mode at restricted"; bad=1; }
    done
  fi
  return "$bad"
}

mkdir -p "$TMP/out"
while read -r spec; do
  name=$(basename "$(dirname "$spec")")
  if ! "$TRAINC" compile "$spec" -o "$TMP/out" >"$TMP/compile.log" 2>&1; then
    t_fail "compile $spec" "$(cat "$TMP/compile.log")"
    continue
  fi
  t "final pods of $name are admitted by their namespace, which enforces their strictest common level" judge "$name"
  if [ -s "$TMP/$name.final" ]; then
    awk -F'\t' '{ print $6 " (" $7 "): " $2 ($8 == "-" ? "" : ", with " $8) }' "$TMP/$name.final" | diag
  fi
done < <(example_specs)

# The table keeps the spec's reason and trainc's apart: for each workload whose YAML spec gives
# `security.reason`, its row's "reason given in the spec" cell is that text alone, and the cell of what
# trainc found its pods do does not repeat it.
reasons_apart() {
  python3 - "$TMP/out" "$@" <<'PY'
import re, sys, yaml
out, bad, checked = sys.argv[1], 0, 0
for spec in sys.argv[2:]:
    name = spec.split("/")[-2]
    d = yaml.safe_load(open(spec))
    given = {f"step `{st['name']}`": (st.get("security") or {}).get("reason") for st in d.get("pipeline") or []}
    for kind in ("clusters", "services"):
        for n, w in (d.get(kind) or {}).items():
            given[f"{kind[:-1]} `{n}`"] = (w.get("security") or {}).get("reason")
    readme = open(f"{out}/{name}/README.md").read()
    rows = {}
    for line in readme.split("\n## Pod security\n", 1)[1].split("\n## ", 1)[0].splitlines():
        cells = [c.strip() for c in re.split(r"(?<!\\)\|", line)[1:-1]]
        if len(cells) == 6:
            rows[cells[0]] = cells
    for what, reason in given.items():
        if not reason:
            continue
        checked += 1
        cells = rows.get(what, [""] * 6)
        if cells[4] != reason.replace("|", "\\|") or reason in cells[5]:
            print(f"{name}: {what}: the spec's reason {reason!r}; its row says {cells[4]!r} and {cells[5]!r}")
            bad = 1
if not checked:
    print("no workload with a security reason was checked")
    bad = 1
sys.exit(bad)
PY
}
mapfile -t yaml_specs < <(example_specs | grep '\.yaml$')
t "the spec's reason and what trainc found stand in cells of their own" reasons_apart "${yaml_specs[@]}"

# The judge is not a rubber stamp: a pod with no securityContext is not restricted, one with a hostPath
# volume is privileged.
cat >"$TMP/plain.yaml" <<'YAML'
apiVersion: v1
kind: Pod
metadata: {name: plain}
spec:
  containers: [{name: c, image: busybox}]
---
apiVersion: v1
kind: Pod
metadata: {name: host}
spec:
  securityContext: {runAsNonRoot: true, runAsUser: 1000, seccompProfile: {type: RuntimeDefault}}
  containers:
    - name: c
      image: busybox
      securityContext: {allowPrivilegeEscalation: false, capabilities: {drop: [ALL]}}
  volumes: [{name: h, hostPath: {path: /etc}}]
YAML
levels_of_plain() {
  local got
  got=$(python3 tests/pod_security.py "$TMP/plain.yaml" | cut -f1,3 | tr '\t\n' ' ,')
  [ "$got" = "baseline Pod/plain,privileged Pod/host," ] || { echo "judged: $got"; return 1; }
}
t "a pod without securityContext is baseline, one with a hostPath volume privileged" levels_of_plain

# The final pods are the cluster's, and the judge sees what each mutator adds. Planted copies of the compiled
# objects, changed as the test says, must be refused in their namespace.
# IN OUT CODE [ARG]: writes OUT, the YAML documents of IN after the Python statement CODE ran on each of them
# (`d`; ARG is sys.argv[4]).
edit_yaml() {
  python3 - "$@" <<'PY'
import sys, yaml
src, out, code = sys.argv[1:4]
docs = [d for d in yaml.safe_load_all(open(src)) if d]
for d in docs:
    exec(code)
yaml.safe_dump_all(docs, open(out, "w"))
PY
}
# FILE...: pod_security.py --final's pods as "VERDICT LEVEL KIND/NAME (POD) ADDED: VIOLATIONS", one a line.
final_of() {
  python3 tests/pod_security.py --final "$@" >"$TMP/final.out"
  case $? in 0 | 3) ;; *) echo "pod_security.py failed"; return 1 ;; esac
  awk -F'\t' '{ print $1 " " $2 " " $6 " (" $7 ") " $8 ": " $9 }' "$TMP/final.out"
}
# PATTERN TEXT: TEXT has a line matching the extended regular expression PATTERN, else says so.
has_line() { grep -Eq -- "$1" <<<"$2" || { echo "no line matches '$1' in:"; echo "$2"; return 1; }; }

ray_autoscaler() {
  local k8s="$TMP/out/ray-t4/k8s" got
  got=$(final_of "$k8s/namespace.yaml" "$k8s/cluster-ray-raycluster.yaml") || return 1
  has_line '^admitted restricted RayCluster/ray-t4-ray \(head\) autoscaler \(KubeRay\), gke-gcsfuse-sidecar' "$got" || return 1
  has_line '^admitted restricted RayCluster/ray-t4-ray \(worker gpu\) wait-gcs-ready \(KubeRay\)' "$got" || return 1
  edit_yaml "$k8s/cluster-ray-raycluster.yaml" "$TMP/ray.yaml" 'd["spec"]["autoscalerOptions"].pop("securityContext")'
  got=$(final_of "$k8s/namespace.yaml" "$TMP/ray.yaml") || return 1
  has_line '^refused baseline RayCluster/ray-t4-ray \(head\) .*containers autoscaler allowPrivilegeEscalation not false' "$got" || return 1
  # wait-gcs-ready copies the Ray container's securityContext, whatever it is.
  edit_yaml "$k8s/cluster-ray-raycluster.yaml" "$TMP/ray.yaml" \
    'd["spec"]["workerGroupSpecs"][0]["template"]["spec"]["containers"][0].pop("securityContext")'
  got=$(final_of "$k8s/namespace.yaml" "$TMP/ray.yaml") || return 1
  has_line '^refused baseline RayCluster/ray-t4-ray \(worker gpu\) .*initContainers wait-gcs-ready allowPrivilegeEscalation not false' "$got"
}
t "KubeRay's autoscaler gets autoscalerOptions.securityContext: without it the ray-t4 head is refused" ray_autoscaler

ray_submitter() {
  local k8s="$TMP/out/ray-t4/k8s" got
  got=$(final_of "$k8s/namespace.yaml" "$k8s/cluster-ray-raycluster.yaml" "$k8s/train-rayjob.yaml") || return 1
  ! grep -q 'RayJob/' <<<"$got" || { echo "HTTPMode made a pod: $got"; return 1; }
  edit_yaml "$k8s/train-rayjob.yaml" "$TMP/rayjob.yaml" 'd["spec"].pop("submissionMode")'
  got=$(final_of "$k8s/namespace.yaml" "$k8s/cluster-ray-raycluster.yaml" "$TMP/rayjob.yaml") || return 1
  has_line '^refused baseline RayJob/ray-t4-train-[0-9a-f]{10} \(submitter\) ray-job-submitter \(KubeRay\): .*runAsNonRoot not true' "$got" || return 1
  # A restricted submitterPodTemplate is what K8sJobMode would need.
  cat >"$TMP/submitter.yaml" <<'YAML'
spec:
  securityContext: {runAsNonRoot: true, seccompProfile: {type: RuntimeDefault}}
  containers:
    - name: submit
      image: ray
      securityContext: {allowPrivilegeEscalation: false, capabilities: {drop: [ALL]}}
YAML
  edit_yaml "$k8s/train-rayjob.yaml" "$TMP/rayjob.yaml" \
    'd["spec"].pop("submissionMode"); d["spec"]["submitterPodTemplate"] = yaml.safe_load(open(sys.argv[4]))' \
    "$TMP/submitter.yaml"
  got=$(final_of "$k8s/namespace.yaml" "$TMP/rayjob.yaml") || return 1
  has_line '^admitted restricted RayJob/ray-t4-train-[0-9a-f]{10} \(submitter\) -: $' "$got"
}
t "a RayJob without submissionMode gets KubeRay's submitter pod, which a restricted namespace refuses" ray_submitter

istio_sidecar() {
  local k8s="$TMP/out/vllm-l4/k8s" got
  edit_yaml "$k8s/namespace.yaml" "$TMP/ns.yaml" \
    'd["metadata"]["labels"]["pod-security.kubernetes.io/enforce"] = "restricted"'
  got=$(final_of "$TMP/ns.yaml" "$k8s/service-chat-deployment.yaml") || return 1
  has_line '^refused privileged Deployment/vllm-l4-chat \(.*\) istio-init \(Istio\), istio-proxy \(Istio\): .*'\
'istio-init adds capability NET_ADMIN' "$got" || return 1
  got=$(final_of --istio-cni "$TMP/ns.yaml" "$k8s/service-chat-deployment.yaml") || return 1
  has_line '^admitted restricted Deployment/vllm-l4-chat \(.*\) istio-validation \(Istio\), istio-proxy \(Istio\): $' "$got" || return 1
  # A pod labelled out of injection gets no sidecar; outside a labelled namespace, only a pod labelled in does.
  edit_yaml "$k8s/service-chat-deployment.yaml" "$TMP/deployment.yaml" \
    'd["spec"]["template"]["metadata"]["labels"]["sidecar.istio.io/inject"] = "false"'
  got=$(final_of "$TMP/ns.yaml" "$TMP/deployment.yaml") || return 1
  has_line '^admitted restricted Deployment/vllm-l4-chat \(.*\) -: $' "$got" || return 1
  edit_yaml "$k8s/namespace.yaml" "$TMP/ns.yaml" 'd["metadata"]["labels"].pop("istio-injection")'
  got=$(final_of "$TMP/ns.yaml" "$k8s/service-chat-deployment.yaml" "$TMP/out/jax-l4/k8s/train-jobset.yaml") || return 1
  has_line '^admitted privileged Deployment/vllm-l4-chat \(.*\) istio-init \(Istio\), istio-proxy \(Istio\)' "$got" || return 1
  has_line '^admitted restricted JobSet/jax-l4-train-[0-9a-f]{10} \(.*\) gke-gcsfuse-sidecar \(GCS FUSE\): $' "$got"
}
t "Istio's init container makes a pod privileged unless istiod runs with the Istio CNI" istio_sidecar

istio_cni_option() {
  local got
  mkdir -p "$TMP/cni/scripts"
  echo 'helm upgrade --install istiod istiod --set pilot.cni.enabled=true' >"$TMP/cni/scripts/apply.sh"
  got=$(cluster_options "$TMP/cni")$(cluster_options "$TMP/out/vllm-l4")
  [ "$got" = --istio-cni ] || { echo "options: '$got'"; return 1; }
}
t "the Istio CNI is assumed only where apply.sh installs istiod with it" istio_cni_option

gcsfuse_sidecar() {
  local k8s="$TMP/out/jax-l4/k8s" got
  # The pod template of the JobSet's Indexed Job (replicatedJob "node").
  local pod='d["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]'
  edit_yaml "$k8s/train-jobset.yaml" "$TMP/jobset.yaml" \
    "$pod"'["metadata"]["annotations"]["gke-gcsfuse/enable-numa-pinning"] = "true"'
  got=$(final_of "$k8s/namespace.yaml" "$TMP/jobset.yaml") || return 1
  has_line '^refused privileged JobSet/jax-l4-train-[0-9a-f]{10} .*initContainers gke-gcsfuse-sidecar seccompProfile Unconfined' "$got" || return 1
  edit_yaml "$k8s/train-jobset.yaml" "$TMP/jobset.yaml" \
    "$pod"'["metadata"]["annotations"]["gke-gcsfuse/volumes"] = "false"'
  got=$(final_of "$k8s/namespace.yaml" "$TMP/jobset.yaml") || return 1
  has_line '^admitted restricted JobSet/jax-l4-train-[0-9a-f]{10} \(template \.spec\.replicatedJobs\[0\]\.template\.spec\.template\.spec\) -: $' "$got"
}
t "the GCS FUSE sidecar is added where the pod asks for it, restricted unless NUMA-pinned" gcsfuse_sidecar

# A step on an RDMA pool that does not opt out is refused, naming the level it needs and the fix.
needs_opt_out() {
  sed '/security: {level: privileged/d' examples/xgb-a4/spec.yaml >"$TMP/xgb-a4.yaml"
  if "$TRAINC" check "$TMP/xgb-a4.yaml" >"$TMP/check.log" 2>&1; then echo "check passed"; return 1; fi
  grep -q "step 'datagen' needs Pod Security level 'privileged'" "$TMP/check.log" || { cat "$TMP/check.log"; return 1; }
  grep -q 'security: {level: privileged, reason: "..."}' "$TMP/check.log" || { cat "$TMP/check.log"; return 1; }
}
t "an RDMA step without security: privileged is refused with the fix" needs_opt_out

tap_done
