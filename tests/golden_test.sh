#!/usr/bin/env bash
# Golden tests (TAP): every examples/<name>/spec.* compiles to exactly golden/<name>/ (a Jsonnet
# twin of a spec.yaml: but for the spec its .trainc-manifest records), twice over with the same
# bytes, into a folder named for the system; `trainc diff` agrees with golden/ and catches a
# one-byte change. Usage: tests/golden_test.sh TRAINC
set -uo pipefail
# shellcheck source=tests/tap.sh
. "$(dirname "${BASH_SOURCE[0]}")/tap.sh"
tap_init "$@"
rc=0  # exit code of the last run() (tests/tap.sh)

HINT="run ./dev.sh golden to regenerate (then review and commit golden/)"

# check_* functions take: SPEC NAME OUT RC LOG, where OUT/RC/LOG are the result of one fresh compile.
failed_compile() {
  echo "trainc compile $1 exited $2:"
  cat "$3"
}

# A Jsonnet twin of an example's spec.yaml compiles to the same bytes, but for the spec its
# .trainc-manifest records and the spec and SHA-256 its scripts check.
is_twin() {
  [ "$1" != "$(primary_spec "$(dirname "$1")")" ]
}

# A repository root whose golden/NAME is what SPEC should compile to: this one, or for a twin a copy
# (examples/ and golden/NAME, with a .git marker) whose recorded source is the twin's.
golden_repo() {
  local spec=$1 name=$2 copy
  if ! is_twin "$spec"; then echo .; return; fi
  copy=$(mktemp -d "$TMP/golden-twin.XXXX")
  mkdir -p "$copy/.git" "$copy/golden"
  cp -a examples "$copy/"
  cp -a "golden/$name" "$copy/golden/"
  sed -i "s|^# source: .*|# source: $spec|" "$copy/golden/$name/.trainc-manifest"
  local sum f
  sum=$(sha256sum <"$spec" | cut -d ' ' -f 1)
  for f in "$copy/golden/$name"/scripts/*.sh; do
    [ -f "$f" ] && sed -i -e "s|^SPEC=.*|SPEC=$spec|" -e "s|^SPEC_SHA256=.*|SPEC_SHA256=$sum|" "$f"
  done
  echo "$copy"
}

check_golden() {
  local spec=$1 name=$2 out=$3 rc=$4 log=$5 d
  if [ "$rc" -ne 0 ]; then failed_compile "$spec" "$rc" "$log"; return 1; fi
  if [ ! -d "golden/$name" ]; then echo "golden/$name is missing; $HINT"; return 1; fi
  if ! d=$(diff -ru "$(golden_repo "$spec" "$name")/golden/$name" "$out/$name" 2>&1); then
    printf '%s\n' "$d" | head -n 40
    echo "golden/$name differs from what $spec compiles to; $HINT"
    return 1
  fi
}

check_deterministic() {
  local spec=$1 name=$2 out=$3 rc=$4 log=$5 again d
  if [ "$rc" -ne 0 ]; then failed_compile "$spec" "$rc" "$log"; return 1; fi
  if ! again=$(compile_as_golden "$spec"); then
    echo "second compile failed:"; cat "${again%/golden}.log"; return 1
  fi
  if ! d=$(diff -r "$out/$name" "$again/$name" 2>&1); then
    echo "two compiles of $spec differ:"
    printf '%s\n' "$d" | head -n 40
    return 1
  fi
}

check_folder_name() {
  local spec=$1 name=$2 out=$3 rc=$4 log=$5 made
  if [ "$rc" -ne 0 ]; then failed_compile "$spec" "$rc" "$log"; return 1; fi
  made=$(ls -A "$out")
  if [ "$made" != "$name" ]; then
    echo "expected exactly one folder '$name' (the example's folder name = the system name); got:"
    printf '%s\n' "$made"
    return 1
  fi
}

# run (tests/tap.sh) in folder $1.
run_in() {
  local dir=$1
  shift
  rc=0
  (cd "$dir" && "$@") >"$TMP/stdout" 2>"$TMP/stderr" || rc=$?
}

check_diff_clean() {
  local spec=$1 name=$2
  if [ ! -d "golden/$name" ]; then echo "golden/$name is missing; $HINT"; return 1; fi
  run_in "$(golden_repo "$spec" "$name")" "$TRAINC" diff "$spec" --against golden
  if [ "$rc" -ne 0 ]; then
    echo "trainc diff $spec --against golden exited $rc (expected 0):"
    cat "$TMP/stdout" "$TMP/stderr" | head -n 40
    return 1
  fi
}

# Changes one letter or digit near the middle of FILE, so the edit stays inside one line.
change_one_byte() {
  python3 - "$1" <<'PY'
import sys
path = sys.argv[1]
data = bytearray(open(path, "rb").read())
i = len(data) // 2
while i < len(data) and not chr(data[i]).isalnum():
    i += 1
if i == len(data):
    data += b"x"
else:
    data[i] = ord("x") if data[i] != ord("x") else ord("y")
open(path, "wb").write(data)
PY
}

check_diff_detects_drift() {
  local spec=$1 name=$2 copy rel
  if [ ! -d "golden/$name" ]; then echo "golden/$name is missing; $HINT"; return 1; fi
  copy=$(golden_repo "$spec" "$name")
  if [ "$copy" = . ]; then
    copy=$(mktemp -d "$TMP/drift.XXXX")
    mkdir -p "$copy/.git" "$copy/golden"
    cp -a examples "$copy/"
    cp -a "golden/$name" "$copy/golden/"
  fi
  rel=$(cd "$copy/golden/$name" && { find k8s -name '*.yaml' ! -name kustomization.yaml 2>/dev/null | sort
                              find . -type f ! -name .trainc-manifest | sed 's|^\./||' | sort; } | head -n 1)
  if [ -z "$rel" ]; then echo "golden/$name holds no file to change"; return 1; fi
  change_one_byte "$copy/golden/$name/$rel"
  run_in "$copy" "$TRAINC" diff "$spec" --against golden
  local ok=1
  if [ "$rc" -ne 1 ]; then echo "after changing one byte of $rel: exit $rc (expected 1)"; ok=0; fi
  if ! grep -qF "$rel" "$TMP/stdout"; then echo "stdout does not name the changed file $rel"; ok=0; fi
  if ! grep -q '^@@ -[0-9]' "$TMP/stdout" || ! grep -q '^--- ' "$TMP/stdout" || ! grep -q '^+++ ' "$TMP/stdout"; then
    echo "stdout holds no unified diff (---, +++, @@ lines)"; ok=0
  fi
  if [ "$ok" -eq 0 ]; then
    echo "stdout:"; head -n 20 "$TMP/stdout"
    echo "stderr:"; head -n 20 "$TMP/stderr"
    return 1
  fi
}

mapfile -t specs < <(example_specs)
if [ "${#specs[@]}" -eq 0 ]; then
  t_fail "examples/*/spec.yaml or spec.jsonnet exist" "no example specs found under examples/"
fi

# Compiles SPEC as ./dev.sh golden does, from a repository root into its folder `golden`, but in a
# copy of examples/ with a .git marker (trainc names paths from the work tree's root): generated CI
# pipelines name the spec and the output folder by those paths. Prints the output root.
compile_as_golden() {
  local spec=$1 repo
  repo=$(mktemp -d "$TMP/repo.XXXX")
  mkdir "$repo/.git"
  cp -a examples "$repo/"
  (cd "$repo" && "$TRAINC" compile "$spec" -o golden) >"$repo.log" 2>&1
  local status=$?
  echo "$repo/golden"
  return "$status"
}

for spec in "${specs[@]}"; do
  name=$(basename "$(dirname "$spec")")
  label="$name ($(basename "$spec"))"
  rc=0
  out=$(compile_as_golden "$spec") || rc=$?
  compiled=("$spec" "$name" "$out" "$rc" "${out%/golden}.log")
  t "golden/$name matches $spec" check_golden "${compiled[@]}"
  t "compiling twice gives the same bytes: $label" check_deterministic "${compiled[@]}"
  t "output folder is named for the system: $label" check_folder_name "${compiled[@]}"
  t "trainc diff --against golden is clean: $label" check_diff_clean "$spec" "$name"
  t "trainc diff catches a changed byte: $label" check_diff_detects_drift "$spec" "$name"
done

# The seed recipes granted roles/storage.objectAdmin on the whole project (000) and roles/owner
# (004); trainc grants bucket roles. The project-level roles it grants are read-only monitoring,
# for the metrics adapter behind the services' autoscalers, and GKE's least-privilege node role,
# for the nodes' own service account.
no_project_storage_role() {
  local hits roles
  # The runbooks' CI sections list roles for the CI service account (never owner or editor); what
  # the system itself grants is in Terraform, the scripts and the manifests.
  hits=$(grep -rnE 'roles/(owner|editor|storage\.admin)|clusterrolebinding' --exclude=README.md golden/ || true)
  hits+=$(grep -rnE 'roles/(owner|editor)\b' --include=README.md golden/ | grep -vE 'never `?roles/owner' || true)
  if [ -n "$hits" ]; then echo "owner, editor, admin or cluster-admin grants in golden/:"; echo "$hits"; return 1; fi
  roles=$(grep -rhE -A6 --exclude=README.md 'google_project_iam_member|projects (add|remove)-iam-policy-binding' golden/ |
    grep -oE 'roles/[A-Za-z.]+' | sort -u | grep -vx 'roles/container.defaultNodeServiceAccount')
  if [ -n "$roles" ] && [ "$roles" != roles/monitoring.viewer ]; then
    echo "project-level roles in golden/ other than roles/monitoring.viewer:"; echo "$roles"; return 1
  fi
  if ! grep -rqE 'google_storage_bucket_iam_member|buckets add-iam-policy-binding' golden/; then
    echo "no bucket-level grant found in golden/ (expected in the GCS examples)"; return 1
  fi
}
t "no output grants a role on the project but read-only monitoring and the nodes' role; buckets get their own" no_project_storage_role

for dir in golden/*/; do
  [ -d "$dir" ] || continue
  name=$(basename "$dir")
  if [ ! -d "examples/$name" ]; then
    t_fail "golden/$name has an example" "golden/$name has no examples/$name: delete golden/$name"
  fi
done

tap_done
