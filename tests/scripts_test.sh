#!/usr/bin/env bash
# Runs every example's generated scripts/ for real against stand-ins (tests/stubs.sh): gcloud
# as a small fake cloud that remembers what was made, kubectl, helm and curl. up.sh, apply.sh
# and down.sh each run twice in a row and must exit 0 both times (idempotent): the first up.sh
# makes everything, the second finds it all and makes nothing; build.sh (where there is one)
# pushes the images apply.sh checks for; down.sh deletes it all, and
# again finds nothing. status.sh runs in between; down.sh refuses buckets that hold data without
# --delete-data; and --dry-run calls no tool but apply.sh's reads of the cluster. Usage: tests/scripts_test.sh TRAINC
set -uo pipefail
# shellcheck source=tests/tap.sh
. "$(dirname "${BASH_SOURCE[0]}")/tap.sh"
tap_init "$@"
# shellcheck source=tests/stubs.sh
. tests/stubs.sh

SANDBOX="$TMP/sandbox"

# Runs scripts/$2 of output folder $1 with the stand-ins first on PATH, in the sandbox.
run_script() {
  local dir=$1 script=$2
  shift 2
  mkdir -p "$SANDBOX/home" "$SANDBOX/tmp"
  rc=0
  (cd "$SANDBOX" && env PATH="$STUB_BIN:$PATH" HOME="$SANDBOX/home" TMPDIR="$SANDBOX/tmp" \
    HEALTH_ATTEMPTS=2 HEALTH_DELAY=0 bash "$dir/scripts/$script" "$@") >"$TMP/stdout" 2>"$TMP/stderr" || rc=$?
}

show() {
  echo "exit $rc; stderr:"
  tail -n 20 "$TMP/stderr"
  echo "calls:"
  stub_log | tail -n 15
}

# The cloud resources the fake gcloud holds, one a line.
cloud_state() { ls "$STUB_STATE/cloud"; }

# An example's whole life: up twice, apply twice, status, down twice.
life() {
  local dir=$1 before
  rm -rf "$TMP/stubs" "$SANDBOX"
  stubs_install "$TMP/stubs"
  stub_repin "$dir"  # the files apply.sh fetches are the curl stand-in's

  run_script "$dir" up.sh
  [ "$rc" -eq 0 ] || { echo "first up.sh failed"; show; return 1; }
  grep -q "clusters create" "$STUB_STATE/log" || { echo "the first up.sh made no cluster"; show; return 1; }
  stub_exists "container node-pools $(cluster_name "$dir") default-pool" &&
    { echo "GKE's default pool was left in place"; return 1; }
  before=$(cloud_state)
  stub_reset_calls
  run_script "$dir" up.sh
  [ "$rc" -eq 0 ] || { echo "second up.sh failed"; show; return 1; }
  if grep -qE '^gcloud .* (create|delete) ' "$STUB_STATE/log"; then
    echo "the second up.sh made or deleted something:"; grep -E '^gcloud .* (create|delete) ' "$STUB_STATE/log"; return 1
  fi
  [ "$(cloud_state)" = "$before" ] || { echo "the second up.sh changed the cloud"; return 1; }

  # The images apply.sh checks for: the user's own, then trainc's (tests/build_test.sh tests
  # build.sh itself).
  stub_user_images "$dir" >/dev/null
  if [ -f "$dir/scripts/build.sh" ]; then
    run_script "$dir" build.sh
    [ "$rc" -eq 0 ] || { echo "build.sh failed"; show; return 1; }
  fi

  local run_no f name
  for run_no in first second; do
    stub_reset_calls
    run_script "$dir" apply.sh
    [ "$rc" -eq 0 ] || { echo "$run_no apply.sh failed"; show; return 1; }
    grep -q "^kubectl .* apply " "$STUB_STATE/log" || { echo "$run_no apply.sh applied nothing"; show; return 1; }
    for f in "$dir"/k8s/*.yaml; do
      name=$(basename "$f")
      [ "$name" = kustomization.yaml ] && continue
      if [ "$run_no" = first ]; then
        # Every file apply.sh names exists (a missing one fails kubectl apply) and every manifest
        # in k8s/ but the kustomization was applied.
        stub_saw kubectl "$dir/scripts/../k8s/$name" || { echo "apply.sh never applied k8s/$name"; return 1; }
      elif [[ $name =~ -(job|jobset|rayjob)\.yaml$ ]] && stub_saw kubectl "$dir/scripts/../k8s/$name"; then
        # A step's run that is there already is left as it is (start_run).
        echo "the second apply.sh applied k8s/$name again, though its run was there"; return 1
      fi
    done
  done

  run_script "$dir" status.sh
  [ "$rc" -eq 0 ] || { echo "status.sh failed"; show; return 1; }

  # With data in its buckets, down.sh without --delete-data refuses before deleting anything
  # (it reads `gcloud storage ls`).
  if grep -q -- '--delete-data)' "$dir/scripts/down.sh"; then
    before=$(cloud_state)
    STUB_BUCKET_OBJECTS=1 run_script "$dir" down.sh --yes
    [ "$rc" -eq 1 ] || { echo "down.sh deleted a bucket holding data (exit $rc)"; show; return 1; }
    grep -q 'holds data; pass --delete-data' "$TMP/stderr" || { echo "no reason given:"; show; return 1; }
    [ "$(cloud_state)" = "$before" ] || { echo "down.sh deleted something before refusing"; return 1; }
  fi

  for run_no in first second; do
    stub_reset_calls
    # Only systems with buckets have --delete-data (down.sh refuses a bucket with data without it).
    if grep -q -- '--delete-data)' "$dir/scripts/down.sh"; then
      STUB_BUCKET_OBJECTS=1 run_script "$dir" down.sh --yes --delete-data
    else
      run_script "$dir" down.sh --yes
    fi
    [ "$rc" -eq 0 ] || { echo "$run_no down.sh failed"; show; return 1; }
  done
  if [ -n "$(cloud_state)" ]; then echo "down.sh left:"; cloud_state; return 1; fi
  [ -z "$(ls "$STUB_STATE/helm")" ] || { echo "helm releases left:"; ls "$STUB_STATE/helm"; return 1; }
}

# --dry-run asks nothing and changes nothing: no stand-in is called, and every script exits 0.
dry_runs() {
  local dir=$1 s
  rm -rf "$TMP/stubs" "$SANDBOX"
  stubs_install "$TMP/stubs"
  for s in up.sh build.sh apply.sh status.sh down.sh; do
    [ -f "$dir/scripts/$s" ] || continue
    run_script "$dir" "$s" --dry-run
    [ "$rc" -eq 0 ] || { echo "$s --dry-run failed"; show; return 1; }
  done
  # apply.sh reads the cluster (what pruning would delete, whose objects these names are); nothing
  # else calls a tool.
  if stub_log | grep -v '^kubectl --context [^ ]* get '; then echo "a dry run called tools to change something (above)"; return 1; fi
}

cluster_name() { sed -n 's/^CLUSTER=//p' "$1/scripts/up.sh"; }

# The line number in the stand-ins' log of the first call matching the extended regex $1 (0: none).
first_call() { grep -nE "$1" "$STUB_STATE/log" | head -n 1 | cut -d: -f1 || true; }

# The nodes' own service account: up.sh makes it (from an empty fake project) and grants its
# roles before the cluster, every `clusters create` and `node-pools create` names it, a second
# up.sh makes nothing (life above), and down.sh deletes it after the cluster.
node_account() {
  local dir=$1 account made role cluster f project
  rm -rf "$TMP/stubs" "$SANDBOX"
  stubs_install "$TMP/stubs"
  account="$(cluster_name "$dir")-nodes"
  run_script "$dir" up.sh
  [ "$rc" -eq 0 ] || { echo "up.sh failed"; show; return 1; }
  stub_exists "iam service-accounts $account" || { echo "no service account $account"; cloud_state; return 1; }
  made=$(first_call "^gcloud iam service-accounts create $account ")
  role=$(first_call "^gcloud projects add-iam-policy-binding .*roles/container.defaultNodeServiceAccount")
  cluster=$(first_call '^gcloud container clusters create ')
  [ -n "$made" ] && [ -n "$role" ] && [ -n "$cluster" ] || { echo "account $made, role $role, cluster $cluster"; stub_log; return 1; }
  [ "$made" -lt "$role" ] && [ "$role" -lt "$cluster" ] ||
    { echo "the account (line $made) and its role (line $role) do not come before the cluster (line $cluster)"; return 1; }
  project=$(sed -n 's/^PROJECT_ID="${PROJECT_ID:-\(.*\)}"$/\1/p' "$dir/scripts/up.sh")
  for f in "$STUB_STATE/calls/"*-gcloud; do
    tr '\0' '\n' <"$f" >"$TMP/args"
    if grep -qx create "$TMP/args" && grep -qxE 'clusters|node-pools' "$TMP/args"; then
      grep -qx -- "--service-account=$account@$project.iam.gserviceaccount.com" "$TMP/args" ||
        { echo "a create without the nodes' account:"; tr '\n' ' ' <"$TMP/args"; echo; return 1; }
    fi
  done
  # Read on each repository the manifests pull from, for the nodes' account.
  local repo
  for repo in $(grep -rhoE '[a-z0-9-]+-docker\.pkg\.dev/[a-z0-9-]+/[a-z0-9_-]+/' "$dir/k8s" | grep -v gce-ai-infra | sort -u); do
    repo=${repo%/}; repo=${repo##*/}
    grep -qE "^gcloud artifacts repositories add-iam-policy-binding $repo .*serviceAccount:$account@" "$STUB_STATE/log" ||
      { echo "no read on repository $repo for $account"; return 1; }
  done
  stub_reset_calls
  if grep -q -- '--delete-data)' "$dir/scripts/down.sh"; then run_script "$dir" down.sh --yes --delete-data
  else run_script "$dir" down.sh --yes; fi
  [ "$rc" -eq 0 ] || { echo "down.sh failed"; show; return 1; }
  stub_exists "iam service-accounts $account" && { echo "down.sh left $account"; return 1; }
  [ "$(first_call "^gcloud container clusters delete ")" -lt "$(first_call "^gcloud iam service-accounts delete .*$account@")" ] ||
    { echo "the nodes' account went before the cluster"; stub_log; return 1; }
}

# Without a default network (org policy compute.skipDefaultNetworkCreation), up.sh of a system
# that names no gcp.network stops with the fix before it makes anything.
no_default_network() {
  local dir=$1
  rm -rf "$TMP/stubs" "$SANDBOX"
  stubs_install "$TMP/stubs"
  STUB_NO_DEFAULT_NETWORK=1 run_script "$dir" up.sh
  [ "$rc" -eq 1 ] || { echo "up.sh exit $rc without a default network"; show; return 1; }
  grep -q "has no VPC network 'default': add gcp.network to the spec" "$TMP/stderr" || { echo "no reason given"; show; return 1; }
  if grep -qE '^gcloud .* (create|add-iam-policy-binding) ' "$STUB_STATE/log"; then
    echo "up.sh made something first:"; grep -E '^gcloud .* (create|add-iam-policy-binding) ' "$STUB_STATE/log"; return 1
  fi
  [ -z "$(cloud_state)" ] || { echo "the fake cloud holds:"; cloud_state; return 1; }
}

# The line number in the stand-ins' log of the first call holding the fixed string $1 (0: none).
first_call_with() { grep -nF -- "$1" "$STUB_STATE/log" | head -n 1 | cut -d: -f1 || true; }

# Day 0 without CI: from an empty fake project, up.sh, build.sh, apply.sh and health.sh in the
# runbook's order, the user having pushed only the images trainc does not build. Then every
# Artifact Registry image the manifests name is in the registry, and those trainc builds were
# pushed (by build.sh) before the first object was applied; every model health.sh looks for is in
# its repository, uploaded before the server's Deployment was applied; and the nodes run as their
# own account, which holds roles/container.defaultNodeServiceAccount.
day0() {
  local dir=$1 user image pushed first_apply account object upload deploy
  rm -rf "$TMP/stubs" "$SANDBOX"
  stubs_install "$TMP/stubs"
  stub_repin "$dir"  # the files apply.sh fetches are the curl stand-in's
  run_script "$dir" up.sh
  [ "$rc" -eq 0 ] || { echo "up.sh failed"; show; return 1; }
  user=$(stub_user_images "$dir")
  if [ -f "$dir/scripts/build.sh" ]; then
    run_script "$dir" build.sh
    [ "$rc" -eq 0 ] || { echo "build.sh failed"; show; return 1; }
  fi
  run_script "$dir" apply.sh
  [ "$rc" -eq 0 ] || { echo "apply.sh failed"; show; return 1; }
  if [ -f "$dir/scripts/health.sh" ]; then
    run_script "$dir" health.sh
    [ "$rc" -eq 0 ] || { echo "health.sh failed"; show; return 1; }
  fi
  first_apply=$(first_call '^kubectl .* apply ')
  [ -n "$first_apply" ] || { echo "nothing was applied"; show; return 1; }
  # Google's public images (the gIB installer's) are nobody's to push.
  for image in $(grep -rhoE 'image: [a-z0-9-]+-docker\.pkg\.dev/[^ ]+' "$dir/k8s" | cut -d' ' -f2 | grep -v /gce-ai-infra/ | sort -u); do
    stub_images | grep -qxF "$image" || { echo "the manifests name $image, which is not in the registry"; return 1; }
    printf '%s\n' "$user" | grep -qxF "$image" && continue
    pushed=$(first_call_with "--tag=$image")
    [ -n "$pushed" ] || pushed=$(first_call_with " -t $image ")
    [ -n "$pushed" ] || { echo "$image is in the registry, but no build pushed it"; stub_log; return 1; }
    [ "$pushed" -lt "$first_apply" ] || { echo "$image was pushed (log line $pushed) after the first apply ($first_apply)"; return 1; }
  done
  # The models: health.sh looks for each model's config.pbtxt in its repository.
  for object in $(sed -n 's|^run gcloud storage ls \(gs://[^ ]*/config\.pbtxt\) .*|\1|p' "$dir/scripts/health.sh" 2>/dev/null); do
    [ -f "$STUB_STATE/cloud/objects/${object#gs://}" ] || { echo "$object was never uploaded"; ls -R "$STUB_STATE/cloud"; return 1; }
    upload=$(first_call '^gcloud storage rsync ')
    deploy=$(first_call '^kubectl .* apply .*-deployment\.yaml')
    [ -n "$upload" ] && [ -n "$deploy" ] && [ "$upload" -lt "$deploy" ] ||
      { echo "the repository was filled at log line ${upload:-never}, the server deployed at ${deploy:-never}"; return 1; }
  done
  account="$(cluster_name "$dir")-nodes"
  stub_exists "iam service-accounts $account" || { echo "the nodes have no account of their own"; return 1; }
  grep -qE "^gcloud projects add-iam-policy-binding .*serviceAccount:$account@.* --role=roles/container.defaultNodeServiceAccount" \
    "$STUB_STATE/log" || { echo "$account was never granted roles/container.defaultNodeServiceAccount"; stub_log; return 1; }
}

# Prerequisites (tests/prerequisites/spec.yaml names a Secret every way a pod can): apply.sh with
# none of them there stops before it applies anything, naming each with the command that makes
# it; the runbook's commands (values typed at their prompts) make them all, and then apply.sh goes
# on; a Secret without a key the pods read stops it again.
prerequisites() {
  local dir=$1 name secrets make
  rm -rf "$TMP/stubs" "$SANDBOX"
  stubs_install "$TMP/stubs"
  stub_repin "$dir"
  run_script "$dir" up.sh
  [ "$rc" -eq 0 ] || { echo "up.sh failed"; show; return 1; }
  stub_user_images "$dir" >/dev/null
  secrets=$(sed -n 's/^need_secret \([^ ]*\) .*/\1/p' "$dir/scripts/apply.sh")
  [ "$(wc -w <<<"$secrets")" -eq 5 ] || { echo "apply.sh asks for: $secrets"; return 1; }
  stub_reset_calls
  run_script "$dir" apply.sh
  [ "$rc" -eq 1 ] || { echo "apply.sh exit $rc with no Secret there"; show; return 1; }
  for name in $secrets; do
    grep -qF "secret/$name is missing; make it: kubectl create secret generic $name -n prereqs " "$TMP/stderr" ||
      { echo "secret/$name not named with its command"; show; return 1; }
  done
  grep -q "5 object(s) the pods need are missing; nothing was applied" "$TMP/stderr" || { echo "no summary"; show; return 1; }
  if grep -qE '^(kubectl .* apply|helm) ' "$STUB_STATE/log"; then echo "applied before stopping:"; stub_log; return 1; fi
  # The runbook's commands, a value typed at each prompt (aws-creds asks two).
  make=$(sed -n 's/^  \(kubectl create secret generic .*\)$/\1/p' "$dir/README.md")
  [ "$(wc -l <<<"$make")" -eq 5 ] || { echo "the runbook makes: $make"; return 1; }
  (cd "$SANDBOX" && PATH="$STUB_BIN:$PATH" bash -c "$make" <<<$'k1\ns1\nt1\np1\nt2\nw1') >"$TMP/stdout" 2>&1 ||
    { echo "the runbook's commands failed:"; cat "$TMP/stdout"; return 1; }
  grep -q 's1' "$STUB_STATE/k8s/secrets/"* && { echo "a Secret's value was kept"; return 1; }
  [ "$(cat "$STUB_STATE/k8s/secrets/aws-creds")" = $'AWS_ACCESS_KEY_ID\nAWS_SECRET_ACCESS_KEY' ] ||
    { echo "aws-creds holds:"; cat "$STUB_STATE/k8s/secrets/aws-creds"; return 1; }
  stub_reset_calls
  run_script "$dir" apply.sh
  [ "$rc" -eq 0 ] || { echo "apply.sh failed with every Secret there"; show; return 1; }
  # A Secret without the key the pods read.
  echo other >"$STUB_STATE/k8s/secrets/db"
  run_script "$dir" apply.sh
  [ "$rc" -eq 1 ] && grep -qF "secret/db has no key password; delete it and make it again: kubectl create secret" "$TMP/stderr" ||
    { echo "a Secret without its key was let through"; show; return 1; }
}

# Every example, compiled once; those on GKE (a gcp section) get scripts/.
compile_all() {
  local spec
  for spec in examples/*/spec.yaml examples/*/spec.jsonnet; do
    # An example given in both forms compiles to the same folder; the YAML one is enough.
    case "$spec" in *.jsonnet) [ -e "${spec%.jsonnet}.yaml" ] && continue ;; esac
    "$TRAINC" compile "$spec" -o "$TMP/out" >/dev/null 2>"$TMP/compile.err" || { echo "$spec:"; cat "$TMP/compile.err"; return 1; }
  done
}
# The installed gcloud (Google's CLI, when the machine has it) parses each command up.sh ran against
# the fake cloud that makes a cluster or node pool: its own argument parser refuses a flag it does
# not know or a value of the wrong form before it asks for credentials, which it has none of here.
gcloud_parses() {
  local dir=$1 line out n=0
  rm -rf "$TMP/stubs" "$SANDBOX" "$TMP/gcloud-config"
  stubs_install "$TMP/stubs"
  run_script "$dir" up.sh
  [ "$rc" -eq 0 ] || { echo "up.sh failed"; show; return 1; }
  while IFS= read -r line; do
    n=$((n + 1))
    # The stand-in logs each call as the shell would quote it again.
    out=$(eval "CLOUDSDK_CONFIG=$TMP/gcloud-config CLOUDSDK_CORE_DISABLE_PROMPTS=1 timeout 60 $GCLOUD ${line#gcloud }" 2>&1) || true
    if grep -qiE "unrecognized arguments|argument --[a-z-]+:|invalid choice|Invalid value|expected one argument" <<<"$out"; then
      echo "gcloud refuses: $line"; printf '%s\n' "$out" | tail -n 5; return 1
    fi
    grep -q "gcloud config set account\|gcloud auth login\|credential" <<<"$out" ||
      { echo "gcloud neither parsed nor refused: $line"; printf '%s\n' "$out" | tail -n 5; return 1; }
  done < <(grep -E '^gcloud container (clusters|node-pools) create ' "$STUB_STATE/log")
  [ "$n" -gt 0 ] || { echo "up.sh made no cluster or node pool"; return 1; }
}

# Google's own gcloud, if installed (the stand-ins of tests/stubs.sh are another program).
GCLOUD=$(command -v gcloud || true)
if [ -n "$GCLOUD" ] && ! "$GCLOUD" version >/dev/null 2>&1; then GCLOUD=''; fi
t "every example compiles" compile_all
with_scripts=()
for d in "$TMP"/out/*/; do
  if [ -x "$d/scripts/up.sh" ]; then with_scripts+=("$(basename "$d")"); fi
done
t "six examples have scripts" test "${#with_scripts[@]}" -ge 6
for ex in "${with_scripts[@]}"; do
  t "$ex: up, apply and down each run twice, exit 0, and leave the fake cloud empty" life "$TMP/out/$ex"
  t "$ex: --dry-run of every script exits 0 and calls no tool but apply.sh's reads" dry_runs "$TMP/out/$ex"
  t "$ex: day 0 without CI: up, build, apply and health leave every image and model the system names in place" \
    day0 "$TMP/out/$ex"
  t "$ex: the nodes run as their own account, made and granted before the cluster, deleted after it" \
    node_account "$TMP/out/$ex"
  if [ -n "$GCLOUD" ]; then
    t "$ex: the installed gcloud ($("$GCLOUD" version 2>/dev/null | head -n 1)) parses every cluster and node pool up.sh makes" \
      gcloud_parses "$TMP/out/$ex"
  else
    t_skip "$ex: the installed gcloud parses every cluster and node pool up.sh makes" "no gcloud on this machine"
  fi
  if ! grep -q '^  network = data.google_compute_network.default.name$' "$TMP/out/$ex/terraform/cluster.tf"; then continue; fi
  t "$ex: without a default network up.sh stops before it makes anything" no_default_network "$TMP/out/$ex"
done
"$TRAINC" compile tests/prerequisites/spec.yaml -o "$TMP/prereq-out" >/dev/null 2>"$TMP/compile.err" || cat "$TMP/compile.err"
t "apply.sh stops before applying anything while a Secret the pods read is missing, names each with its command" \
  prerequisites "$TMP/prereq-out/prereqs"
t "some example uses the project's default network" grep -qx '  network = data.google_compute_network.default.name' \
  "$TMP"/out/*/terraform/cluster.tf
tap_done
