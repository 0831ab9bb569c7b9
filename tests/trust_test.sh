#!/usr/bin/env bash
# What the generated scripts trust (TAP), in a git repository of its own with examples/ and their
# output in golden/, run against the stand-ins of tests/stubs.sh:
# - apply.sh and build.sh read files beside the spec at the place the compile recorded, never one
#   found by searching: a spec and folders planted under the output root redirect neither, and a
#   spec missing there, changed since, or replaced by a symbolic link stops them, saying why;
# - `trainc diff` reports every file under the output root it did not generate, and `compile`
#   refuses an output root that holds the spec's own folder;
# - up.sh binds Workload Identity only to accounts it created (their description says so) and
#   down.sh deletes only those;
# - a Triton model folder holding a symbolic link is refused, and every upload skips links;
# - build.sh's Cloud Build upload holds only the files git tracks.
# Usage: tests/trust_test.sh TRAINC
set -uo pipefail
# shellcheck source=tests/tap.sh
. "$(dirname "${BASH_SOURCE[0]}")/tap.sh"
tap_init "$@"
# shellcheck source=tests/stubs.sh
. tests/stubs.sh

REPO="$TMP/repo"
OUTSIDE="$TMP/outside"
SANDBOX="$TMP/sandbox"
rc=0

git_q() { git -C "$REPO" -c user.name=t -c user.email=t@example.com "$@" >/dev/null 2>&1; }

setup() {
  rm -rf "$REPO" "$OUTSIDE"
  mkdir -p "$REPO/examples" "$OUTSIDE"
  cp -a examples/mnist examples/triton-tpu examples/jax-l4 "$REPO/examples/"
  git_q init -q && git_q add -A && git_q commit -q -m examples || { echo "git init failed"; return 1; }
  (cd "$REPO" && "$TRAINC" compile examples/mnist/spec.yaml examples/triton-tpu/spec.jsonnet \
    examples/jax-l4/spec.yaml -o golden) >"$TMP/compile.log" 2>&1 || { cat "$TMP/compile.log"; return 1; }
  # What an attacker would rather have uploaded: a folder outside the checkout.
  mkdir -p "$OUTSIDE/image" "$OUTSIDE/models"
  printf 'FROM scratch\nCOPY stolen.txt /\n' >"$OUTSIDE/image/Dockerfile"
  echo secret >"$OUTSIDE/image/stolen.txt"
  echo secret >"$OUTSIDE/models/stolen.txt"
}

# Runs golden/$1/scripts/$2 with the stand-ins first on PATH (PATH=$PATH_OVERRIDE when set).
run_script() {
  local ex=$1 script=$2
  shift 2
  mkdir -p "$SANDBOX/home" "$SANDBOX/tmp"
  rc=0
  (cd "$SANDBOX" && env PATH="${PATH_OVERRIDE:-$STUB_BIN:$PATH}" HOME="$SANDBOX/home" TMPDIR="$SANDBOX/tmp" \
    HEALTH_ATTEMPTS=1 HEALTH_DELAY=0 bash "$REPO/golden/$ex/scripts/$script" "$@") \
    >"$TMP/stdout" 2>"$TMP/stderr" || rc=$?
}

show() {
  echo "exit $rc; stderr:"
  tail -n 12 "$TMP/stderr"
}

fresh_cloud() {
  rm -rf "$TMP/stubs" "$SANDBOX"
  stubs_install "$TMP/stubs"
}

# A spec planted beside the output folders, where the old upward search looked before the
# repository's root, with its build context and model folder linked out of the checkout.
plant() {
  mkdir -p "$REPO/golden/examples/mnist" "$REPO/golden/examples/triton-tpu"
  cp "$REPO/examples/mnist/spec.yaml" "$REPO/golden/examples/mnist/"
  cp "$REPO/examples/triton-tpu/spec.jsonnet" "$REPO/golden/examples/triton-tpu/"
  ln -s "$OUTSIDE/image" "$REPO/golden/examples/mnist/image"
  ln -s "$OUTSIDE/models" "$REPO/golden/examples/triton-tpu/models"
}
unplant() { rm -rf "$REPO/golden/examples"; }

# build.sh (Cloud Build, no docker) builds from the recorded context, not the planted one.
build_not_redirected() {
  local path
  setup || return 1
  plant
  fresh_cloud
  path=$(stub_path_without_docker) || return 1
  PATH_OVERRIDE=$path run_script mnist up.sh
  [ "$rc" -eq 0 ] || { echo "up.sh failed"; show; return 1; }
  PATH_OVERRIDE=$path run_script mnist build.sh
  [ "$rc" -eq 0 ] || { echo "build.sh failed"; show; return 1; }
  local files
  files=$(cat "$STUB_STATE"/uploads/*.files)
  if grep -qx './stolen.txt' <<<"$files"; then echo "build.sh uploaded the planted context:"; echo "$files"; return 1; fi
  grep -qx './mnist.py' <<<"$files" || { echo "the real context was not uploaded:"; echo "$files"; return 1; }
}

# apply.sh uploads the recorded model folder, not the planted one.
apply_not_redirected() {
  setup || return 1
  plant
  fresh_cloud
  stub_repin "$REPO/golden/triton-tpu"
  run_script triton-tpu up.sh
  [ "$rc" -eq 0 ] || { echo "up.sh failed"; show; return 1; }
  stub_user_images "$REPO/golden/triton-tpu" >/dev/null
  run_script triton-tpu apply.sh
  [ "$rc" -eq 0 ] || { echo "apply.sh failed"; show; return 1; }
  if find "$STUB_STATE/cloud/objects" -name stolen.txt | grep -q .; then
    echo "apply.sh uploaded the planted folder:"; find "$STUB_STATE/cloud/objects" -type f; return 1
  fi
  find "$STUB_STATE/cloud/objects" -name config.pbtxt | grep -q . ||
    { echo "the real models were not uploaded:"; find "$STUB_STATE/cloud/objects" -type f; return 1; }
}

# $1: what happens to the real spec of mnist; build.sh and apply.sh then stop before anything,
# naming the reason (grep -E $2), with the planted spec in place.
stops_when() {
  local how=$1 why=$2 path
  setup || return 1
  plant
  fresh_cloud
  path=$(stub_path_without_docker) || return 1
  PATH_OVERRIDE=$path run_script mnist up.sh
  case "$how" in
    gone) rm "$REPO/examples/mnist/spec.yaml" "$REPO/examples/triton-tpu/spec.jsonnet" ;;
    edited) echo '# edited' >>"$REPO/examples/mnist/spec.yaml"; echo '// edited' >>"$REPO/examples/triton-tpu/spec.jsonnet" ;;
    link)
      mv "$REPO/examples/mnist/spec.yaml" "$TMP/mnist.yaml"; ln -s "$TMP/mnist.yaml" "$REPO/examples/mnist/spec.yaml"
      mv "$REPO/examples/triton-tpu/spec.jsonnet" "$TMP/t.jsonnet"; ln -s "$TMP/t.jsonnet" "$REPO/examples/triton-tpu/spec.jsonnet" ;;
  esac
  stub_reset_calls
  PATH_OVERRIDE=$path run_script mnist build.sh
  [ "$rc" -eq 1 ] || { echo "build.sh exited $rc"; show; return 1; }
  grep -qE "$why" "$TMP/stderr" || { echo "build.sh does not say why:"; show; return 1; }
  if grep -q '^gcloud builds submit' "$STUB_STATE/log"; then echo "build.sh built:"; stub_log; return 1; fi
  stub_repin "$REPO/golden/triton-tpu"
  run_script triton-tpu apply.sh
  [ "$rc" -eq 1 ] || { echo "apply.sh exited $rc"; show; return 1; }
  grep -qE "$why" "$TMP/stderr" || { echo "apply.sh does not say why:"; show; return 1; }
  if grep -qE '^(gcloud storage rsync|kubectl .* apply)' "$STUB_STATE/log"; then echo "apply.sh went on:"; stub_log; return 1; fi
}

# trainc diff reports what it did not generate under the output root: the planted folder beside
# the output folders, and a file inside one, whether or not that folder's spec is compared.
diff_reports_planted() {
  setup || return 1
  plant
  echo x >"$REPO/golden/jax-l4/spec.yaml"
  local args
  for args in "--against golden" "--all --against golden" "examples/mnist/spec.yaml --against golden"; do
    # shellcheck disable=SC2086
    run bash -c "cd '$REPO' && '$TRAINC' diff $args"
    [ "$rc" -eq 1 ] || { echo "trainc diff $args exited $rc"; cat "$TMP/stderr"; return 1; }
    grep -q "'golden/examples' is not trainc's output: it holds 'golden/examples/mnist/" "$TMP/stderr" ||
      { echo "trainc diff $args does not report golden/examples:"; cat "$TMP/stderr" "$TMP/stdout"; return 1; }
    grep -q "golden/jax-l4/spec.yaml" "$TMP/stderr" "$TMP/stdout" ||
      { echo "trainc diff $args does not report golden/jax-l4/spec.yaml:"; cat "$TMP/stderr" "$TMP/stdout"; return 1; }
  done
  unplant
  rm "$REPO/golden/jax-l4/spec.yaml"
  run bash -c "cd '$REPO' && '$TRAINC' diff --all --against golden"
  [ "$rc" -eq 0 ] || { echo "trainc diff of a clean output root exited $rc"; cat "$TMP/stderr"; return 1; }
}

# compile refuses an output root that holds the spec's own folder (the output would hide it).
compile_refuses_spec_in_output() {
  setup || return 1
  local out
  for out in examples .; do
    run bash -c "cd '$REPO' && '$TRAINC' compile examples/mnist/spec.yaml -o '$out'"
    [ "$rc" -eq 1 ] || { echo "compile -o $out exited $rc"; cat "$TMP/stderr"; return 1; }
    grep -q "error: the spec's folder is inside the output folder" "$TMP/stderr" ||
      { echo "no diagnostic for -o $out:"; cat "$TMP/stderr"; return 1; }
  done
  [ ! -e "$REPO/examples/mnist/mnist" ] && [ ! -e "$REPO/mnist" ] || { echo "output was written"; return 1; }
}

# up.sh finds the workload's account made by someone else (no description of up.sh's): it stops
# before making anything, naming it, and binds nothing to it; down.sh leaves it in place.
foreign_account() {
  setup || return 1
  fresh_cloud
  local account
  account=$(sed -n 's/^GSA_EMAIL="\([^@]*\)@.*/\1/p' "$REPO/golden/jax-l4/scripts/up.sh")
  [ -n "$account" ] || { echo "no GSA_EMAIL in jax-l4's up.sh"; return 1; }
  echo 'the deployer' >"$STUB_STATE/cloud/iam_service-accounts_$account"
  run_script jax-l4 up.sh
  [ "$rc" -eq 1 ] || { echo "up.sh exited $rc with a foreign $account"; show; return 1; }
  grep -q "service account $account@.* exists, and up.sh did not create it" "$TMP/stderr" ||
    { echo "up.sh does not name the account:"; show; return 1; }
  if grep -q "iam service-accounts add-iam-policy-binding $account@" "$STUB_STATE/log"; then
    echo "up.sh bound Workload Identity to it:"; stub_log; return 1
  fi
  if grep -qE '^gcloud .* create ' "$STUB_STATE/log"; then echo "up.sh made something first:"; stub_log; return 1; fi
  run_script jax-l4 down.sh --yes
  [ "$rc" -eq 0 ] || { echo "down.sh exited $rc"; show; return 1; }
  stub_exists "iam service-accounts $account" || { echo "down.sh deleted the foreign $account"; return 1; }
  grep -q "service account $account not deleted" "$TMP/stderr" || { echo "down.sh does not say so:"; show; return 1; }
  # Its own: made with the description, bound, and deleted by down.sh.
  rm -f "$STUB_STATE/cloud/iam_service-accounts_$account"
  run_script jax-l4 up.sh
  [ "$rc" -eq 0 ] || { echo "up.sh failed on an empty project"; show; return 1; }
  run_script jax-l4 up.sh
  [ "$rc" -eq 0 ] || { echo "a second up.sh refused the account it made"; show; return 1; }
  run_script jax-l4 down.sh --yes
  [ "$rc" -eq 0 ] || { echo "down.sh failed"; show; return 1; }
  ! stub_exists "iam service-accounts $account" || { echo "down.sh left the account up.sh made"; return 1; }
}

# A symbolic link in a Triton model folder is refused, naming it; every upload skips links.
model_folder_links() {
  setup || return 1
  local link
  for link in "$OUTSIDE/models/stolen.txt" densenet_labels.txt; do
    rm -f "$REPO/examples/triton-tpu/models/densenet_onnx/extra"
    ln -s "$link" "$REPO/examples/triton-tpu/models/densenet_onnx/extra"
    run bash -c "cd '$REPO' && '$TRAINC' check examples/triton-tpu/spec.jsonnet"
    [ "$rc" -eq 1 ] || { echo "a link to $link: check exited $rc"; cat "$TMP/stderr"; return 1; }
    grep -q "'models/densenet_onnx/extra' is a symbolic link" "$TMP/stderr" ||
      { echo "no diagnostic naming the link:"; cat "$TMP/stderr"; return 1; }
  done
  local lines
  lines=$(grep -h 'gcloud storage rsync' "$REPO/golden/triton-tpu/scripts/apply.sh" "$REPO/golden/triton-tpu/README.md")
  [ -n "$lines" ] || { echo "no upload in apply.sh and README.md"; return 1; }
  if grep -v -- '--ignore-symlinks' <<<"$lines"; then echo "an upload follows links (above)"; return 1; fi
}

# Cloud Build gets what git tracks in the context: no untracked or ignored file.
cloud_build_tracked_only() {
  local path
  setup || return 1
  fresh_cloud
  echo 'TOKEN=x' >"$REPO/examples/mnist/image/.env"
  echo 'notes' >"$REPO/examples/mnist/image/untracked.txt"
  printf '.env\n' >"$REPO/.gitignore"
  path=$(stub_path_without_docker) || return 1
  PATH_OVERRIDE=$path run_script mnist up.sh
  PATH_OVERRIDE=$path run_script mnist build.sh --cloud-build
  [ "$rc" -eq 0 ] || { echo "build.sh failed"; show; return 1; }
  local files
  files=$(cat "$STUB_STATE"/uploads/*.files)
  if grep -qxE '\./(\.env|untracked\.txt)' <<<"$files"; then echo "files git does not track went up:"; echo "$files"; return 1; fi
  for f in $(git -C "$REPO/examples/mnist/image" ls-files); do
    grep -qxF "./$f" <<<"$files" || { echo "tracked $f did not go up:"; echo "$files"; return 1; }
  done
}

lint() { lint_scripts "$REPO"/golden/*/scripts/*.sh; }

t "setup: the examples compile into a repository of their own" setup
t "bash -n and shellcheck pass on the scripts" lint
t "build.sh builds from the recorded context, not from a spec planted beside the output" build_not_redirected
t "apply.sh uploads the recorded model folder, not one beside a planted spec" apply_not_redirected
t "build.sh and apply.sh stop when the recorded spec is gone (a planted one is not used)" stops_when gone 'no spec at .*examples/'
t "build.sh and apply.sh stop when the spec changed since it was compiled" stops_when edited 'is not the spec this folder was compiled from'
t "build.sh and apply.sh stop when the spec is a symbolic link" stops_when link 'no spec at .*not a symbolic link'
t "trainc diff reports files under the output root it did not generate" diff_reports_planted
t "trainc compile refuses an output root holding the spec's folder" compile_refuses_spec_in_output
t "up.sh stops at a workload account it did not create; down.sh leaves it, deletes its own" foreign_account
t "a symbolic link in a Triton model folder is refused; uploads skip links" model_folder_links
t "build.sh --cloud-build uploads only the files git tracks" cloud_build_tracked_only
tap_done
