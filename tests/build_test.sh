#!/usr/bin/env bash
# Images without CI (TAP): for every example whose output has scripts/build.sh, run from a fresh
# checkout's copy of examples/ and golden/ against the stand-ins (tests/stubs.sh): build.sh on an
# empty fake registry pushes exactly the images of the system's registry that k8s/*.yaml name
# (read from their image: fields), a second run pushes none, with docker it uses buildx and
# without docker Cloud Build (an upload holding the context and its Dockerfile as ./Dockerfile);
# before up.sh it stops; apply.sh stops before any `kubectl apply` when one image is missing,
# naming it and build.sh. The comparison fails on a build.sh that leaves out an image.
# Usage: tests/build_test.sh TRAINC
set -uo pipefail
# shellcheck source=tests/tap.sh
. "$(dirname "${BASH_SOURCE[0]}")/tap.sh"
tap_init "$@"
# shellcheck source=tests/stubs.sh
. tests/stubs.sh

# A fresh checkout holds the specs and the committed output; nothing else is needed.
CHECKOUT="$TMP/checkout"
SANDBOX="$TMP/sandbox"
mkdir -p "$CHECKOUT"
cp -r examples golden "$CHECKOUT/"

# Runs scripts/$2 of the checkout's golden/$1 with the stand-ins (PATH=$3 when given, else the
# stand-ins first on the usual PATH); sets rc, leaves stdout and stderr in $TMP.
run_script() {
  local ex=$1 script=$2 path=${3:-$STUB_BIN:$PATH}
  shift 3
  mkdir -p "$SANDBOX/home" "$SANDBOX/tmp"
  rc=0
  (cd "$SANDBOX" && env PATH="$path" HOME="$SANDBOX/home" TMPDIR="$SANDBOX/tmp" HEALTH_ATTEMPTS=1 HEALTH_DELAY=0 \
    bash "$CHECKOUT/golden/$ex/scripts/$script" "$@") >"$TMP/stdout" 2>"$TMP/stderr" || rc=$?
}

show() {
  echo "exit $rc; stderr:"
  tail -n 15 "$TMP/stderr"
}

fresh_cloud() {
  rm -rf "$TMP/stubs" "$SANDBOX"
  stubs_install "$TMP/stubs"
}

# The images of the repository up.sh made that the manifests name, one a line, sorted: the
# repository's prefix (LOCATION-docker.pkg.dev/PROJECT/REPOSITORY/) from up.sh's create call.
wanted_images() {
  local ex=$1 repo location project
  repo=$(stub_last_args_of_create) || return 1
  read -r repo location project <<<"$repo"
  grep -h '^ *image: ' "$CHECKOUT/golden/$ex"/k8s/*.yaml | sed 's/^ *image: *//; s/^"//; s/"$//' |
    grep -F "$location-docker.pkg.dev/$project/$repo/" | sort -u
}

# REPOSITORY LOCATION PROJECT of the `gcloud artifacts repositories create` up.sh ran.
stub_last_args_of_create() {
  local f a args=() repo='' location='' project=''
  for f in "$STUB_STATE/calls/"*-gcloud; do
    args=()
    while IFS= read -r -d '' a; do args+=("$a"); done <"$f"
    [ "${args[*]:0:3}" = "artifacts repositories create" ] || continue
    repo=${args[3]}
    for a in "${args[@]}"; do
      case "$a" in
        --location=*) location=${a#--location=} ;;
        --project=*) project=${a#--project=} ;;
      esac
    done
  done
  [ -n "$repo" ] || { echo "up.sh created no repository"; return 1; }
  echo "$repo $location $project"
}

# The context build.sh builds image $2 of example $1 from, relative to the spec's folder.
context_of() {
  awk -v img="$2" '$1 == "build" && $2 == img { print $3 }' "$CHECKOUT/golden/$1/scripts/build.sh" |
    sed 's|^"${SPEC_DIR}/||; s|"$||'
}

# up.sh, then build.sh with PATH $2 (docker or none): every wanted image is pushed, and by the
# builder expected ($3: buildx or submit).
builds_all() {
  local ex=$1 path=$2 builder=$3 want got
  fresh_cloud
  [ "$path" = none ] && { path=$(stub_path_without_docker) || return 1; }
  [ "$path" = docker ] && path="$STUB_BIN:$PATH"
  run_script "$ex" up.sh "$path"
  [ "$rc" -eq 0 ] || { echo "up.sh failed"; show; return 1; }
  want=$(wanted_images "$ex") || return 1
  [ -n "$want" ] || { echo "the manifests name no image of the system's registry"; return 1; }
  stub_reset_calls
  run_script "$ex" build.sh "$path"
  [ "$rc" -eq 0 ] || { echo "build.sh failed"; show; return 1; }
  got=$(stub_images)
  [ "$got" = "$want" ] || { printf 'pushed:\n%s\nthe manifests name:\n%s\n' "$got" "$want"; return 1; }
  local n
  n=$(wc -l <<<"$want")
  case "$builder" in
    buildx)
      [ "$(grep -c '^docker buildx build --push ' "$STUB_STATE/log")" -eq "$n" ] || { echo "not $n buildx builds:"; stub_log; return 1; }
      ! grep -q '^gcloud builds submit' "$STUB_STATE/log" || { echo "Cloud Build was used beside docker"; return 1; } ;;
    submit)
      [ "$(stub_calls docker)" -eq 0 ] || { echo "docker was called"; return 1; }
      [ "$(grep -c '^gcloud builds submit ' "$STUB_STATE/log")" -eq "$n" ] || { echo "not $n Cloud Builds:"; stub_log; return 1; }
      # Each upload held the context's files and the build's Dockerfile as ./Dockerfile, and is gone.
      local image name context
      while read -r image; do
        name=${image##*/}
        grep -qx './Dockerfile' "$STUB_STATE/uploads/$name.files" || { echo "no ./Dockerfile uploaded for $image"; return 1; }
        context=$(context_of "$ex" "$image")
        [ -n "$context" ] || { echo "build.sh builds $image from no context it names"; return 1; }
        local f
        for f in $(cd "$CHECKOUT/examples/$ex/$context" && find . -type f | sort); do
          grep -qxF "$f" "$STUB_STATE/uploads/$name.files" || { echo "$f of the context was not uploaded for $image"; return 1; }
        done
      done <<<"$want"
      if [ -n "$(ls -A "$SANDBOX/tmp")" ]; then echo "a staged upload was left behind:"; ls "$SANDBOX/tmp"; return 1; fi ;;
  esac
  # A second run finds every tag and builds nothing.
  stub_reset_calls
  run_script "$ex" build.sh "$path"
  [ "$rc" -eq 0 ] || { echo "second build.sh failed"; show; return 1; }
  if grep -qE '^(docker buildx build|gcloud builds submit)' "$STUB_STATE/log"; then
    echo "the second build.sh built again:"; stub_log; return 1
  fi
  # --force builds them all again.
  stub_reset_calls
  run_script "$ex" build.sh "$path" --force
  [ "$rc" -eq 0 ] && grep -qE '^(docker buildx build|gcloud builds submit)' "$STUB_STATE/log" ||
    { echo "--force built nothing"; show; return 1; }
}

# Before up.sh there is no repository: build.sh stops saying so, and pushes nothing.
needs_repository() {
  fresh_cloud
  run_script "$1" build.sh ""
  [ "$rc" -eq 1 ] || { echo "build.sh exited $rc without a repository"; show; return 1; }
  grep -q 'does not exist; run up.sh' "$TMP/stderr" || { echo "no reason given"; show; return 1; }
  [ -z "$(stub_images)" ] || { echo "pushed without a repository"; return 1; }
}

# Docker without its buildx plugin: Cloud Build.
no_buildx() {
  fresh_cloud
  run_script "$1" up.sh ""
  stub_reset_calls
  STUB_DOCKER=no-buildx run_script "$1" build.sh ""
  [ "$rc" -eq 0 ] || { echo "build.sh failed"; show; return 1; }
  grep -q '^gcloud builds submit ' "$STUB_STATE/log" || { echo "no Cloud Build:"; stub_log; return 1; }
  ! grep -q '^docker buildx build' "$STUB_STATE/log" || { echo "built with a docker lacking buildx"; return 1; }
}

# apply.sh checks the images the manifests name; against a registry missing one it stops naming
# the image and build.sh before anything is applied; with every image there it applies.
apply_checks() {
  local ex=$1 missing
  fresh_cloud
  run_script "$ex" up.sh ""
  run_script "$ex" build.sh ""
  [ "$rc" -eq 0 ] || { echo "build.sh failed"; show; return 1; }
  # It checks exactly the images of the system's registry that the manifests name.
  local want checked
  want=$(wanted_images "$ex") || return 1
  run_script "$ex" apply.sh "" --dry-run
  checked=$(sed -n 's/^+ gcloud artifacts docker images describe //p' "$TMP/stderr" | sort -u)
  [ "$checked" = "$want" ] || { printf 'apply.sh checks:\n%s\nthe manifests name:\n%s\n' "$checked" "$want"; return 1; }
  missing=$(stub_images | tail -n 1)
  rm -f "$STUB_STATE/images/$(printf '%s' "$missing" | tr '/:@' '___')"
  stub_reset_calls
  run_script "$ex" apply.sh ""
  [ "$rc" -eq 1 ] || { echo "apply.sh exited $rc with $missing missing"; show; return 1; }
  grep -qF "image $missing is not in the registry" "$TMP/stderr" && grep -q 'scripts/build.sh' "$TMP/stderr" ||
    { echo "the missing image or build.sh is not named"; show; return 1; }
  if grep -qE '^(kubectl .* apply|helm )' "$STUB_STATE/log"; then echo "applied before stopping:"; stub_log; return 1; fi
  run_script "$ex" build.sh ""
  stub_reset_calls
  run_script "$ex" apply.sh ""
  [ "$rc" -eq 0 ] || { echo "apply.sh failed with every image there"; show; return 1; }
  grep -q '^kubectl .* apply ' "$STUB_STATE/log" || { echo "apply.sh applied nothing"; return 1; }
}

# Dry runs call nothing, and apply.sh's prints its image check.
dry_runs() {
  local ex=$1 image
  fresh_cloud
  run_script "$ex" build.sh "" --dry-run
  [ "$rc" -eq 0 ] || { echo "build.sh --dry-run failed"; show; return 1; }
  grep -qE '^\+ (docker buildx build|gcloud builds submit) ' "$TMP/stderr" || { echo "no build printed"; show; return 1; }
  run_script "$ex" apply.sh "" --dry-run
  [ "$rc" -eq 0 ] || { echo "apply.sh --dry-run failed"; show; return 1; }
  # apply.sh reads the cluster (what pruning would delete, whose objects these names are); nothing else.
  if stub_log | grep -v '^kubectl --context [^ ]* get '; then echo "a dry run called tools to change something (above)"; return 1; fi
  image=$(sed -n 's/^build \([^ ]*\) .*/\1/p' "$CHECKOUT/golden/$ex/scripts/build.sh" | head -n 1)
  grep -qF "+ gcloud artifacts docker images describe $image" "$TMP/stderr" || { echo "no check of $image printed"; show; return 1; }
}

# A context's .dockerignore goes up with it to Cloud Build, whose docker build reads it as a local
# one does.
dockerignore_uploaded() {
  local ex=$1 image context path
  fresh_cloud
  path=$(stub_path_without_docker) || return 1
  run_script "$ex" up.sh "$path"
  image=$(wanted_images "$ex" | head -n 1)
  context=$(context_of "$ex" "$image")
  printf '%s\n' '*.md' >"$CHECKOUT/examples/$ex/$context/.dockerignore"
  run_script "$ex" build.sh "$path"
  rm -f "$CHECKOUT/examples/$ex/$context/.dockerignore"
  [ "$rc" -eq 0 ] || { echo "build.sh failed"; show; return 1; }
  grep -qx './.dockerignore' "$STUB_STATE/uploads/${image##*/}.files" ||
    { echo "the .dockerignore of $context was not uploaded:"; cat "$STUB_STATE/uploads/${image##*/}.files"; return 1; }
}

lint() { lint_scripts "$CHECKOUT"/golden/*/scripts/build.sh; }

with_builds=()
for d in golden/*/; do
  if [ -f "$d/scripts/build.sh" ]; then with_builds+=("$(basename "$d")"); fi
done
t "three examples build images" test "${#with_builds[@]}" -ge 3
t "bash -n and shellcheck pass on every build.sh" lint
for ex in "${with_builds[@]}"; do
  t "$ex: build.sh with docker pushes every image the manifests name with buildx, once" builds_all "$ex" docker buildx
  t "$ex: build.sh without docker pushes them with Cloud Build" builds_all "$ex" none submit
  t "$ex: build.sh with a docker lacking buildx uses Cloud Build" no_buildx "$ex"
  t "$ex: build.sh before up.sh stops: no repository" needs_repository "$ex"
  t "$ex: apply.sh stops before applying when an image is missing" apply_checks "$ex"
  t "$ex: dry runs change nothing (apply.sh only reads) and print the builds and the image check" dry_runs "$ex"
done

t "${with_builds[0]}: Cloud Build gets the context's .dockerignore" dockerignore_uploaded "${with_builds[0]}"

# The comparison can fail: a build.sh that leaves out its last image is caught.
skipped_caught() {
  local ex=${with_builds[0]}
  sed -i '/^build /,/^  /d' "$CHECKOUT/golden/$ex/scripts/build.sh"
  if builds_all "$ex" docker buildx >/dev/null; then
    echo "a build.sh that builds nothing passed"
    cp "golden/$ex/scripts/build.sh" "$CHECKOUT/golden/$ex/scripts/build.sh"
    return 1
  fi
  cp "golden/$ex/scripts/build.sh" "$CHECKOUT/golden/$ex/scripts/build.sh"
}
t "a build.sh that skips an image fails the comparison" skipped_caught
# The user the generated Dockerfiles make: their RUN that adds uid 1000, run as sh would run it in
# the build against a copy of a base's /etc (paths moved under a scratch root). A base without
# uid 1000 gets trainc's entry and a home; one that has it (rayproject/ray's ray) keeps its own.
user_block() {
  awk '/^RUN if ! grep -q .\^\[\^:\]\*:\[\^:\]\*:1000:. \/etc\/group/ { on = 1 } on { print } on && !/\\$/ { exit }' "$1"
}
makes_user() {
  local base_passwd=$1 want=$2 root="$TMP/userroot" block
  rm -rf "$root" && mkdir -p "$root/etc" "$root/home"
  printf '%s\n' "root:x:0:0:root:/root:/bin/bash" "$base_passwd" | sed '/^$/d' >"$root/etc/passwd"
  printf '%s\n' "root:x:0:" >"$root/etc/group"
  block=$(user_block golden/ray-t4/docker/ray.Dockerfile | sed -e '1s/^RUN //' -e "s#/etc/#$root/etc/#g" \
    -e "s#/home/trainc#$root/home/trainc#g" -e 's#/workspace#'"$root"'/workspace#g' -e 's/chown 1000:1000/true/')
  [ -n "$block" ] || { echo "no user block in the Dockerfile" >&2; return 1; }
  sh -c "$block" || return 1
  [ -d "$root/home/trainc" ] || { echo "no home made" >&2; return 1; }
  [ "$(grep -c '^[^:]*:[^:]*:1000:' "$root/etc/passwd")" = 1 ] || { cat "$root/etc/passwd" >&2; return 1; }
  grep -q "^$want:[^:]*:1000:" "$root/etc/passwd" || { cat "$root/etc/passwd" >&2; return 1; }
  grep -q '^[^:]*:[^:]*:1000:' "$root/etc/group"
}
t "a generated Dockerfile gives uid 1000 a passwd entry on a base without one" makes_user "" trainc
t "a generated Dockerfile keeps a base's own uid 1000 (rayproject/ray's ray)" \
  makes_user "ray:x:1000:100::/home/ray:/bin/bash" ray
t "the generated Dockerfile sets HOME to the home it makes" grep -qx 'ENV HOME=/home/trainc' golden/ray-t4/docker/ray.Dockerfile

tap_done
