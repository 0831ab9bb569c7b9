#!/usr/bin/env bash
# Output that does not depend on where trainc runs (TAP). Outside a git work tree, paths are
# recorded relative to the nearest folder holding the spec and the output, so compiling from two
# folders gives the same bytes and `trainc diff` from a third agrees; CI pipelines, which can only
# name paths inside their repository, are not written when the output folder is outside the spec's
# git work tree (a warning says why, and the runbook).
# Usage: tests/paths_test.sh TRAINC
set -uo pipefail
# shellcheck source=tests/tap.sh
. "$(dirname "${BASH_SOURCE[0]}")/tap.sh"
tap_init "$@"
rc=0  # exit code of the last run() (tests/tap.sh)

# A project outside any git work tree: $TMP/plain/a/{examples/ray-t4,out}. $TMP itself must not be
# inside a work tree either (it is under TMPDIR).
PLAIN=$TMP/plain/a
mkdir -p "$PLAIN/b" "$TMP/plain/third"
cp -a examples/ray-t4 examples/mnist "$PLAIN/" 2>/dev/null
mkdir -p "$PLAIN/examples"
mv "$PLAIN/ray-t4" "$PLAIN/mnist" "$PLAIN/examples/"

check_outside_git() {
  if git -C "$TMP" rev-parse --git-dir >/dev/null 2>&1; then
    echo "the test folder $TMP is inside a git work tree; set TMPDIR elsewhere"
    return 1
  fi
}

# Compiles both specs into a/out, from a/ and then from a/b/ (paths given relative to each).
check_same_bytes() {
  (cd "$PLAIN" && "$TRAINC" compile examples/ray-t4/spec.yaml examples/mnist/spec.yaml -o out) >"$TMP/c1.log" 2>&1 ||
    { echo "compile from a/ failed:"; cat "$TMP/c1.log"; return 1; }
  cp -a "$PLAIN/out" "$PLAIN/out-1"
  (cd "$PLAIN/b" && "$TRAINC" compile ../examples/ray-t4/spec.yaml ../examples/mnist/spec.yaml -o ../out) \
    >"$TMP/c2.log" 2>&1 || { echo "compile from a/b/ failed:"; cat "$TMP/c2.log"; return 1; }
  diff -r "$PLAIN/out-1" "$PLAIN/out" || return 1
  grep -qx '# source: examples/ray-t4/spec.yaml' "$PLAIN/out/ray-t4/.trainc-manifest" ||
    { echo "the manifest does not record the spec relative to a/:"; cat "$PLAIN/out/ray-t4/.trainc-manifest"; return 1; }
}

# trainc diff from a third folder, outside a/: no drift, nothing orphaned; --all finds the specs.
check_diff_elsewhere() {
  (cd "$TMP/plain/third" && "$TRAINC" diff ../a/examples/ray-t4/spec.yaml ../a/examples/mnist/spec.yaml \
    --against ../a/out) >"$TMP/d.log" 2>&1 || { echo "diff reported drift:"; cat "$TMP/d.log"; return 1; }
  (cd "$TMP/plain/third" && "$TRAINC" diff --all --against "$PLAIN/out") >"$TMP/d.log" 2>&1 ||
    { echo "diff --all reported drift or orphans:"; cat "$TMP/d.log"; return 1; }
  if grep -q orphaned "$TMP/d.log"; then cat "$TMP/d.log"; return 1; fi
}

# A changed byte is still found from the third folder, and a removed spec makes its folder orphaned.
check_diff_finds_drift() {
  cp -a "$PLAIN/out" "$PLAIN/out-3"
  echo '# edited' >>"$PLAIN/out-3/mnist/README.md"
  run bash -c "cd '$TMP/plain/third' && '$TRAINC' diff --all --against ../a/out-3"
  [ "$rc" -eq 1 ] || { echo "diff --all of an edited folder exited $rc"; cat "$TMP/stderr"; return 1; }
  grep -q 'mnist' "$TMP/stdout" || { echo "the drift summary does not name mnist:"; cat "$TMP/stdout"; return 1; }
  mv "$PLAIN/examples/mnist/spec.yaml" "$PLAIN/examples/mnist/spec.yaml.gone"
  run bash -c "cd '$TMP/plain/third' && '$TRAINC' diff --against ../a/out"
  mv "$PLAIN/examples/mnist/spec.yaml.gone" "$PLAIN/examples/mnist/spec.yaml"
  [ "$rc" -eq 1 ] || { echo "diff with a removed spec exited $rc"; return 1; }
  grep -q "'../a/out/mnist' is orphaned: its spec 'examples/mnist/spec.yaml' no longer exists" "$TMP/stderr" ||
    { echo "no orphan reported:"; cat "$TMP/stderr"; return 1; }
  if grep -q ray-t4 "$TMP/stderr"; then echo "ray-t4, whose spec exists, is reported:"; cat "$TMP/stderr"; return 1; fi
}

# Outside a git work tree, the spec's ci: pipelines are not written; a warning and the runbook say why.
check_no_ci_outside_repository() {
  grep -q 'warning: the CI pipelines are not written' "$TMP/c1.log" ||
    { echo "no warning on compile:"; cat "$TMP/c1.log"; return 1; }
  grep -q 'neither the spec nor the output folder is inside a git work tree' "$TMP/c1.log" ||
    { echo "the warning does not say why:"; cat "$TMP/c1.log"; return 1; }
  [ ! -e "$PLAIN/out/ray-t4/ci" ] || { echo "ci/ was written:"; find "$PLAIN/out/ray-t4/ci"; return 1; }
  grep -q 'they were not written' "$PLAIN/out/ray-t4/README.md" || { echo "the runbook does not say so"; return 1; }
}

# A spec in a git work tree compiled into a folder outside it: the same, and no path climbs out.
check_output_outside_repository() {
  local repo=$TMP/repo
  mkdir -p "$repo/.git" "$repo/examples"
  cp -a examples/ray-t4 "$repo/examples/"
  run bash -c "cd '$repo' && '$TRAINC' compile examples/ray-t4/spec.yaml -o '$TMP/elsewhere'"
  [ "$rc" -eq 0 ] || { echo "compile exited $rc"; cat "$TMP/stderr"; return 1; }
  grep -q "the output folder '.*/elsewhere' is outside the git work tree '.*/repo' that holds the spec" "$TMP/stderr" ||
    { echo "no warning naming both:"; cat "$TMP/stderr"; return 1; }
  [ ! -e "$TMP/elsewhere/ray-t4/ci" ] || { echo "ci/ was written"; return 1; }
  if grep -rn '\.\./' "$TMP/elsewhere/ray-t4/docker" "$TMP/elsewhere/ray-t4/.trainc-manifest"; then
    echo "a recorded path climbs out of its root"; return 1
  fi
  # Inside the work tree, the pipelines are written and name repository paths.
  run bash -c "cd '$repo' && '$TRAINC' compile examples/ray-t4/spec.yaml -o out"
  [ "$rc" -eq 0 ] || { echo "compile into out/ exited $rc"; cat "$TMP/stderr"; return 1; }
  if grep -q warning "$TMP/stderr"; then cat "$TMP/stderr"; return 1; fi
  grep -q "out/ray-t4/\*\*" "$repo/out/ray-t4/ci/.github/workflows/ray-t4.yaml" ||
    { echo "the workflow does not name out/ray-t4/**"; return 1; }
}

# Paths that generated files name (Dockerfile comments, pipelines): a spec folder whose name holds a
# line break or '${{' is refused, naming it; a build context named like an option is passed as ./-q.
check_hostile_folder_names() {
  local repo=$TMP/names dir
  for dir in $'a\nRUN touch x' 'b${{ github.token }}'; do
    rm -rf "$repo"
    mkdir -p "$repo/.git" "$repo/$dir"
    cp examples/ray-t4/spec.yaml "$repo/$dir/"
    cp -a examples/ray-t4/image "$repo/$dir/"
    run bash -c "cd \"\$1\" && \"\$2\" compile \"\$3/spec.yaml\" -o out" _ "$repo" "$TRAINC" "$dir"
    [ "$rc" -eq 1 ] || { echo "compiling a spec in folder $(printf %q "$dir") exited $rc"; cat "$TMP/stderr"; return 1; }
    grep -q "holds a control character or '\${{': generated files name it" "$TMP/stderr" ||
      { echo "no diagnostic naming the folder:"; cat "$TMP/stderr"; return 1; }
    [ ! -e "$repo/out" ] || { echo "output was written"; return 1; }
  done
}

check_option_like_context() {
  local repo=$TMP/optctx
  mkdir -p "$repo/.git"
  cp -a examples/ray-t4/. "$repo/"  # the spec at the repository root: its context's path is just -q
  mv "$repo/image" "$repo/-q"
  sed -i 's/^      context: image$/      context: -q/' "$repo/spec.yaml"
  grep -q '^      context: -q$' "$repo/spec.yaml" || { echo "examples/ray-t4/spec.yaml changed: update this test"; return 1; }
  run bash -c "cd '$repo' && '$TRAINC' compile spec.yaml -o out"
  [ "$rc" -eq 0 ] || { echo "compile exited $rc"; cat "$TMP/stderr"; return 1; }
  local lines
  lines=$(grep -rh 'docker build ' "$repo/out/ray-t4/ci"; sed -n 's/^#  *\(-t .*\)/docker build \1/p' "$repo/out/ray-t4/docker/ray.Dockerfile")
  [ -n "$lines" ] || { echo "no docker build line in the pipelines"; return 1; }
  if printf '%s\n' "$lines" | grep -qE ' -q$'; then echo "docker would read the context as an option:"; printf '%s\n' "$lines"; return 1; fi
  printf '%s\n' "$lines" | grep -qE " \./-q'?$" || { echo "no docker build line names ./-q:"; printf '%s\n' "$lines"; return 1; }
}

t "the test folder is outside any git work tree" check_outside_git
t "a spec folder named with a line break or '\${{' is refused, naming it" check_hostile_folder_names
t "a build context named like an option (-q) reaches docker build as a path" check_option_like_context
t "outside git: the same specs compiled from a/ and a/b/ give identical trees" check_same_bytes
t "outside git: trainc diff from a third folder reports no drift and nothing orphaned" check_diff_elsewhere
t "outside git: from a third folder, an edited file is drift and a removed spec's folder is orphaned" check_diff_finds_drift
t "outside git: ci: pipelines are not written, with a warning and a line in the runbook" check_no_ci_outside_repository
t "a repository's spec compiled outside it: no pipelines, a warning naming both, no path climbing out" check_output_outside_repository
tap_done
