#!/usr/bin/env bash
# CLI tests (TAP): exit codes, `schema`, missing files, the overwrite guard, JSON and GitHub
# diagnostics, `check` writing nothing, `diff --stat`, --skip-non-specs, and orphaned output
# folders. The example and the error case used are picked by globbing.
# Usage: tests/cli_test.sh TRAINC
set -uo pipefail
# shellcheck source=tests/tap.sh
. "$(dirname "${BASH_SOURCE[0]}")/tap.sh"
tap_init "$@"
rc=0  # exit code of the last run() (tests/tap.sh)

expect_exit() {
  local want=$1
  shift
  run "$TRAINC" "$@"
  if [ "$rc" -ne "$want" ]; then
    echo "trainc $* exited $rc (expected $want)"
    echo "stdout:"; head -n 10 "$TMP/stdout"
    echo "stderr:"; head -n 10 "$TMP/stderr"
    return 1
  fi
}

check_prints() {
  expect_exit 0 "$@" || return 1
  if [ ! -s "$TMP/stdout" ]; then echo "trainc $* printed nothing on stdout"; return 1; fi
}

check_schema() {
  expect_exit 0 schema || return 1
  if ! python3 -m json.tool "$TMP/stdout" >/dev/null; then echo "trainc schema does not print valid JSON"; return 1; fi
  if [ ! -f schemas/trainc.v1.schema.json ]; then echo "schemas/trainc.v1.schema.json is missing"; return 1; fi
  python3 - "$TMP/stdout" schemas/trainc.v1.schema.json <<'PY'
import json, sys
printed, committed = (json.load(open(p)) for p in sys.argv[1:3])
if printed != committed:
    sys.exit("trainc schema differs from schemas/trainc.v1.schema.json (parsed JSON compared)")
PY
}

# A misspelled subcommand or flag is a usage error (exit 2) that names what was meant.
check_usage_suggestion() {
  local want=$1
  shift
  expect_exit 2 "$@" || return 1
  if ! grep -qF "$want" "$TMP/stderr"; then
    echo "trainc $* does not suggest: $want"; head -n 10 "$TMP/stderr"; return 1
  fi
}

check_missing_spec() {
  local missing="$TMP/no-such-dir/no-such-spec.yaml"
  expect_exit 2 check "$missing" || return 1
  if ! grep -qF "no-such-spec.yaml" "$TMP/stderr"; then
    echo "stderr does not name the missing file:"; head -n 10 "$TMP/stderr"; return 1
  fi
}

check_refuses_foreign_folder() {
  local spec=$1 name=$2 out
  out=$(mktemp -d "$TMP/foreign.XXXX")
  mkdir "$out/$name"
  echo "written by a user" >"$out/$name/user-file"
  expect_exit 2 compile "$spec" -o "$out" || return 1
  if [ "$(ls -A "$out/$name")" != "user-file" ] || [ "$(cat "$out/$name/user-file")" != "written by a user" ]; then
    echo "trainc changed a folder it did not create:"; (cd "$out" && find . | sort); return 1
  fi
  if [ ! -s "$TMP/stderr" ]; then echo "trainc refused silently (nothing on stderr)"; return 1; fi
}

check_recompile() {
  local spec=$1 name=$2 out
  out=$(mktemp -d "$TMP/again.XXXX")
  expect_exit 0 compile "$spec" -o "$out" || return 1
  expect_exit 0 compile "$spec" -o "$out" || { echo "(second compile over its own output)"; return 1; }
  if [ ! -f "$out/$name/.trainc-manifest" ]; then echo "$out/$name/.trainc-manifest is missing"; return 1; fi
}

check_json_diagnostics() {
  local spec=$1
  expect_exit 1 --diagnostics=json check "$spec" || return 1
  python3 - "$TMP/stderr" <<'PY'
import json, sys
text = open(sys.argv[1]).read()
try:
    doc = json.loads(text)
except ValueError:
    try:  # one JSON object a line
        doc = [json.loads(line) for line in text.splitlines() if line.strip()]
    except ValueError as e:
        sys.exit(f"stderr is neither JSON nor JSON Lines ({e}):\n{text[:800]}")
if isinstance(doc, dict):
    doc = doc.get("diagnostics", [doc])
if not isinstance(doc, list) or not doc:
    sys.exit(f"no diagnostics found in:\n{text[:800]}")
for d in doc:
    missing = [k for k in ("file", "line", "column", "path", "message") if not isinstance(d, dict) or k not in d]
    if missing:
        sys.exit(f"diagnostic lacks {', '.join(missing)}: {json.dumps(d)[:400]}")
    if not isinstance(d["line"], int) or not isinstance(d["column"], int):
        sys.exit(f"line and column must be integers: {json.dumps(d)[:400]}")
PY
}

check_check_writes_nothing() {
  local spec=$1 root=$PWD cwd marker changed
  cwd=$(mktemp -d "$TMP/cwd.XXXX")
  marker="$TMP/marker"
  touch "$marker"
  sleep 0.01
  rc=0
  (cd "$cwd" && "$TRAINC" check "$root/$spec" >"$TMP/stdout" 2>"$TMP/stderr") || rc=$?
  if [ "$rc" -ne 0 ]; then echo "trainc check $spec exited $rc:"; head -n 20 "$TMP/stderr"; return 1; fi
  if [ -n "$(ls -A "$cwd")" ]; then echo "trainc check wrote into its working folder:"; ls -A "$cwd"; return 1; fi
  # Build folders (build/, build-*/: another build's tests or ./dev.sh fresh-machine may be writing there), out/, .git.
  changed=$(find . \( -path ./build -o -path './build-*' -o -path ./out -o -path ./.git \) -prune -o -newer "$marker" -print |
    head -n 20)
  if [ -n "$changed" ]; then echo "files in the repo changed during trainc check:"; printf '%s\n' "$changed"; return 1; fi
}

check_same_system_twice() {
  local spec=$1 copy="$TMP/twin/${1##*/}"
  cp -r "$(dirname "$spec")" "$TMP/twin"  # the whole folder, for any local imports
  # `check` writes nothing, so twins may share a name (pre-commit passes both); compile refuses.
  expect_exit 0 check "$spec" "$copy" || return 1
  expect_exit 1 compile "$spec" "$copy" -o "$TMP/twin-out" || return 1
  if [ -e "$TMP/twin-out" ] && [ -n "$(ls -A "$TMP/twin-out")" ]; then echo "compile wrote output"; return 1; fi
  if ! grep -qF "is also defined by '$spec'" "$TMP/stderr"; then
    echo "stderr does not name the first spec:"; head -n 10 "$TMP/stderr"; return 1
  fi
}

# A compiled copy of the example's folder at $TMP/NAME-copy: the spec at $TMP/NAME-copy/spec/SPEC,
# its output under $TMP/NAME-copy/out. Prints the copy's folder.
compiled_copy() {
  local spec=$1 name=$2 copy="$TMP/$2-copy"
  rm -rf "$copy"
  mkdir -p "$copy"
  cp -r "$(dirname "$spec")" "$copy/spec"
  "$TRAINC" compile "$copy/spec/${spec##*/}" -o "$copy/out" >/dev/null || return 1
  echo "$copy"
}

# Appends an object the spec does not generate to the first Kubernetes file of an output folder.
add_stray_object() {
  local file
  file=$(find "$1/k8s" -name '*.yaml' ! -name kustomization.yaml | sort | head -n 1)
  printf -- '---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: stray\n' >>"$file"
  echo "${file#"$1"/}"
}

check_diff_stat() {
  local spec=$1 name=$2 copy rel
  copy=$(compiled_copy "$spec" "$name") || return 1
  rel=$(add_stray_object "$copy/out/$name")
  expect_exit 1 diff --stat "$copy/spec/${spec##*/}" --against "$copy/out" || return 1
  if ! grep -qxF "$copy/out/$name:" "$TMP/stdout" || ! grep -qxF "  - ConfigMap stray" "$TMP/stdout"; then
    echo "stdout lacks the folder and '  - ConfigMap stray':"; head -n 20 "$TMP/stdout"; return 1
  fi
  if grep -q '^@@ ' "$TMP/stdout"; then echo "--stat printed a unified diff:"; head -n 20 "$TMP/stdout"; return 1; fi
  expect_exit 1 diff "$copy/spec/${spec##*/}" --against "$copy/out" || return 1
  if ! grep -qxF "  - ConfigMap stray" "$TMP/stdout" || ! grep -q '^@@ ' "$TMP/stdout" ||
     ! grep -qF -- "--- $copy/out/$name/$rel" "$TMP/stdout"; then
    echo "diff without --stat lacks the summary or the unified diff of $rel:"; head -n 30 "$TMP/stdout"; return 1
  fi
  if [ "$(grep -n '^  - ConfigMap stray' "$TMP/stdout" | cut -d: -f1)" -gt "$(grep -n '^@@ ' "$TMP/stdout" | head -n 1 | cut -d: -f1)" ]; then
    echo "the summary does not come before the unified diff"; return 1
  fi
}

check_github_diagnostics() {
  local spec=$1 line
  expect_exit 1 --diagnostics=github check "$spec" || return 1
  line=$(head -n 1 "$TMP/stderr")
  if ! grep -qE "^::error file=$spec,line=[0-9]+,col=[0-9]+,title=trainc::.+ \(at .+\)" <<<"$line"; then
    echo "not a GitHub workflow command with file, line, col, title and the data path:"; head -n 5 "$TMP/stderr"
    return 1
  fi
  if grep -v '^::' "$TMP/stderr" | grep -q .; then
    echo "stderr holds lines that are not workflow commands:"; head -n 10 "$TMP/stderr"; return 1
  fi
}

check_github_drift() {
  local spec=$1 name=$2 copy rel
  copy=$(compiled_copy "$spec" "$name") || return 1
  rel=$(add_stray_object "$copy/out/$name")
  expect_exit 1 --diagnostics=github diff "$copy/spec/${spec##*/}" --against "$copy/out" || return 1
  if ! grep -qF "::error file=$copy/out/$name/$rel,title=trainc::$copy/out/$name/$rel differs from what" "$TMP/stderr"; then
    echo "stderr lacks an ::error command for $rel:"; head -n 10 "$TMP/stderr"; return 1
  fi
}

check_skip_non_specs() {
  local spec=$1 other="$TMP/workflow.yaml" misspelled="$TMP/misspelled.yaml"
  printf 'name: ci\non: push\njobs: {}\n' >"$other"
  expect_exit 1 check "$other" || { echo "(without --skip-non-specs a file that is no spec is an error)"; return 1; }
  expect_exit 0 check --skip-non-specs "$other" "$spec" || return 1
  if ! grep -qxF "trainc: note: skipping '$other': not a trainc spec (no apiVersion: trainc/v1)" "$TMP/stderr"; then
    echo "stderr lacks the note:"; head -n 5 "$TMP/stderr"; return 1
  fi
  if ! grep -q "^$spec: ok" "$TMP/stdout"; then echo "stdout does not report $spec as ok:"; cat "$TMP/stdout"; return 1; fi
  printf 'apiVersion: trainc/v1\nkind: TrainingSytem\nname: typo\npipeline: []\n' >"$misspelled"
  expect_exit 1 check --skip-non-specs "$misspelled" || { echo "(a misspelled spec is still checked)"; return 1; }
}

check_orphan() {
  local spec=$1 name=$2 w="$TMP/orphan" manifest
  rm -rf "$w"
  mkdir -p "$w/.git" "$w/specs"  # a git work tree's root
  cp -r "$(dirname "$spec")" "$w/specs/$name"
  rc=0
  (cd "$w/specs" && "$TRAINC" compile "$name/${spec##*/}" -o ../out >"$TMP/stdout" 2>"$TMP/stderr") || rc=$?
  if [ "$rc" -ne 0 ]; then echo "compile exited $rc:"; head -n 10 "$TMP/stderr"; return 1; fi
  manifest="$w/out/$name/.trainc-manifest"
  if ! grep -qxF "# source: specs/$name/${spec##*/}" "$manifest"; then
    echo "$manifest does not record the spec relative to the work tree's root:"; head -n 5 "$manifest"; return 1
  fi
  expect_exit 0 diff --against "$w/out" || { echo "(no spec arguments, nothing orphaned)"; return 1; }
  rm "$w/specs/$name/${spec##*/}"
  rc=0
  (cd "$w" && "$TRAINC" diff --against out >"$TMP/stdout" 2>"$TMP/stderr") || rc=$?
  if [ "$rc" -ne 1 ]; then echo "diff --against out exited $rc after the spec was deleted (expected 1)"; return 1; fi
  if ! grep -qxF "trainc: 'out/$name' is orphaned: its spec 'specs/$name/${spec##*/}' no longer exists; delete the folder or restore the spec" "$TMP/stderr"; then
    echo "stderr lacks the orphan message:"; head -n 10 "$TMP/stderr"; return 1
  fi
}

check_output_file_stands_for_spec() {
  local spec=$1 name=$2 w="$TMP/edited" rel
  rm -rf "$w"
  mkdir -p "$w/.git" "$w/specs"
  cp -r "$(dirname "$spec")" "$w/specs/$name"
  rc=0
  (cd "$w" && "$TRAINC" compile "specs/$name/${spec##*/}" -o out >/dev/null 2>&1) || rc=$?
  if [ "$rc" -ne 0 ]; then echo "compile exited $rc"; return 1; fi
  rel=$(add_stray_object "$w/out/$name")
  rc=0
  (cd "$w" && "$TRAINC" diff --skip-non-specs --against out "out/$name/$rel" >"$TMP/stdout" 2>"$TMP/stderr") || rc=$?
  if [ "$rc" -ne 1 ] || ! grep -qxF "  - ConfigMap stray" "$TMP/stdout"; then
    echo "diff --skip-non-specs given only out/$name/$rel (edited by hand) exited $rc, expected 1 and the stray object:"
    head -n 10 "$TMP/stdout" "$TMP/stderr"; return 1
  fi
}

t "--version exits 0 and prints a version" check_prints --version
t "--help exits 0 and prints usage" check_prints --help
t "no arguments exits 2" expect_exit 2
t "an unknown subcommand exits 2" expect_exit 2 no-such-subcommand
t "a misspelled subcommand gets a did-you-mean" check_usage_suggestion "did you mean 'check'?" chek spec.yaml
t "a misspelled flag gets a did-you-mean" check_usage_suggestion "did you mean '--format'?" plan --formt=json spec.yaml
t "a misspelled flag with a value gets a did-you-mean" check_usage_suggestion "did you mean '--against'?" \
  diff --agains out spec.yaml
t "schema prints schemas/trainc.v1.schema.json" check_schema
t "a missing spec file exits 2 and names the file" check_missing_spec

example=""
for dir in examples/*/; do
  if example=$(primary_spec "${dir%/}"); then break; fi
done
if [ -n "$example" ]; then
  name=$(basename "$(dirname "$example")")
  t "compile refuses to overwrite a folder it did not create ($name)" check_refuses_foreign_folder "$example" "$name"
  t "compile over its own previous output succeeds ($name)" check_recompile "$example" "$name"
  t "check on a valid example exits 0 and writes nothing ($example)" check_check_writes_nothing "$example"
  t "two specs of one system: check passes, compile exits 1 and names the first ($example)" check_same_system_twice "$example"
  t "diff --stat prints the summary only; diff prints it before the unified diff ($name)" check_diff_stat "$example" "$name"
  t "--diagnostics=github gives an ::error command per drifted file ($name)" check_github_drift "$example" "$name"
  t "--skip-non-specs skips other YAML with a note, not misspelled specs ($example)" check_skip_non_specs "$example"
  t "diff --against reports an output folder whose spec was deleted as orphaned ($name)" check_orphan "$example" "$name"
  t "diff --skip-non-specs given a hand-edited output file compares its folder's spec ($name)" check_output_file_stands_for_spec "$example" "$name"
else
  t_fail "an example to run the CLI tests on" "no examples/*/spec.yaml or spec.jsonnet found"
fi

error_spec=""
while read -r dir; do
  if [ "$(case_expected_exit "$dir")" = 1 ] && error_spec=$(case_spec "$dir" 2>/dev/null); then break; fi
  error_spec=""
done < <(error_cases)
if [ -n "$error_spec" ]; then
  t "--diagnostics=json gives file/line/column/path/message on stderr ($error_spec)" check_json_diagnostics "$error_spec"
  t "--diagnostics=github gives ::error commands with file, line, col and data path ($error_spec)" check_github_diagnostics "$error_spec"
else
  t_fail "an error case to test --diagnostics=json on" "no tests/errors/<case> with exit code 1 found"
fi

# Credential-looking values: --allow-secret-like lets named false positives through (by env name,
# value or data path); a secretRef becomes valueFrom.secretKeyRef and no value lands in the output.
check_allow_secret_like() {
  local spec=tests/errors/secret-like-values/spec.yaml out="$TMP/secrets"
  if "$TRAINC" compile "$spec" -o "$out" --allow-secret-like API_TOKEN --allow-secret-like KEYISH \
      --allow-secret-like 'pipeline[0].command[2]' >"$TMP/secrets.log" 2>&1; then
    echo "compiled with one secret-like value not allowed"; return 1
  fi
  grep -q "AWS access key id" "$TMP/secrets.log" || { cat "$TMP/secrets.log"; return 1; }
  "$TRAINC" compile "$spec" -o "$out" --allow-secret-like API_TOKEN --allow-secret-like KEYISH \
    --allow-secret-like 'pipeline[0].command[2]' --allow-secret-like AKIAABCDEFGHIJKLMNOP >"$TMP/secrets.log" 2>&1 ||
    { cat "$TMP/secrets.log"; return 1; }
  grep -A3 -- '- name: WANDB' "$out/secret-like/k8s/train-job.yaml" | grep -q 'secretKeyRef:' ||
    { echo "WANDB is not read from its Secret"; return 1; }
}
t "--allow-secret-like lets named values through; secretRef becomes secretKeyRef" check_allow_secret_like

# Jsonnet specs are evaluated ahead, side by side: each still gets its own diagnostics, and one
# that is stopped (the memory cap) or never evaluated (nesting too deep) leaves the others be.
check_jsonnet_side_by_side() {
  local cases=(limit-jsonnet-memory jsonnet-syntax-error jsonnet-runtime-error limit-jsonnet-deep-source)
  local specs=() good=() c line
  for c in examples/*/spec.jsonnet; do good+=("$c"); done
  [ "${#good[@]}" -gt 0 ] || { echo "no examples/*/spec.jsonnet"; return 1; }
  # Bad and good specs interleaved, a runaway one first.
  for c in "${!cases[@]}"; do
    specs+=("tests/errors/${cases[$c]}/spec.jsonnet")
    specs+=("${good[$((c % ${#good[@]}))]}")
  done
  expect_exit 1 check "${specs[@]}" || return 1
  for c in "${cases[@]}"; do
    while IFS= read -r line; do
      case "$line" in *" error" | *" errors") continue ;; esac
      grep -qxF -- "$line" "$TMP/stderr" || { echo "missing from the diagnostics of $c: $line"; cat "$TMP/stderr"; return 1; }
    done <"tests/errors/$c/expected.stderr"
  done
  # The good specs may add warnings (a service on the public gateway); the errors are the bad ones'.
  grep -qxE "${#cases[@]} errors(, [0-9]+ warnings?)?" "$TMP/stderr" ||
    { echo "expected ${#cases[@]} errors:"; cat "$TMP/stderr"; return 1; }
  expect_exit 0 check "${good[@]}" "${good[@]}" || return 1
}
t "Jsonnet specs evaluated side by side keep their own diagnostics; a stopped one stops only itself" \
  check_jsonnet_side_by_side

# Spec text that is not UTF-8 still gives JSON diagnostics (invalid bytes replaced), not a crash.
printf 'apiVersion: trainc/v1\nkind: TrainingSystem\nname: x\377\376\npipeline: []\n' >"$TMP/latin1.yaml"
t "--diagnostics=json on a spec that is not UTF-8 exits 1 with JSON" check_json_diagnostics "$TMP/latin1.yaml"

# A service on the gateway's public load balancer: a warning (exit 0), and the runbook says who can
# call it and how to restrict it; with hosts of its own the warning does not say "any host name".
gateway_warning() {
  local out="$TMP/gw"
  run "$TRAINC" compile examples/vllm-l4/spec.yaml -o "$out"
  [ "$rc" -eq 0 ] || { echo "compile exited $rc"; cat "$TMP/stderr"; return 1; }
  grep -q "warning: service 'chat' is exposed on the Istio ingress gateway, a public load balancer" "$TMP/stderr" ||
    { echo "no warning:"; cat "$TMP/stderr"; return 1; }
  grep -q "any host name (hosts: \*)" "$TMP/stderr" || { echo "the warning does not name hosts: *"; return 1; }
  grep -q '^\*\*Who can call them.\*\*.*`chat` answers any host name' "$out/vllm-l4/README.md" ||
    { echo "the runbook does not say who can call the service"; return 1; }
  sed 's/expose: {gateway: {}}/expose: {gateway: {hosts: [chat.example.com]}}/' examples/vllm-l4/spec.yaml >"$TMP/gw.yaml"
  run "$TRAINC" check "$TMP/gw.yaml"
  [ "$rc" -eq 0 ] || { echo "check exited $rc"; cat "$TMP/stderr"; return 1; }
  grep -q "warning: service 'chat' is exposed" "$TMP/stderr" || { echo "no warning with hosts of its own"; return 1; }
  if grep -q "any host name" "$TMP/stderr"; then echo "says any host name for hosts [chat.example.com]"; return 1; fi
}
t "a service on the public gateway gets a warning and the runbook says who can call it" gateway_warning

tap_done
