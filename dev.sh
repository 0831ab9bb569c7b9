#!/usr/bin/env bash
# Developer entry point. Every subcommand installs missing dependencies and builds first.
#   ./dev.sh examples   compile every examples/*/spec.* into out/ and print a table of what was made
#   ./dev.sh test       run every test suite (meson test); extra arguments go to meson test
#   ./dev.sh golden     regenerate golden/, tests/inspect/ and tests/errors/*/expected.stderr, then show what changed
#   ./dev.sh bench      time trainc compile per example (bench/compile.sh)
#   ./dev.sh build      install dependencies and build only
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")"
# shellcheck source=tools/common.sh
. tools/common.sh
TRAINC=build/compiler/trainc

usage() { sed -n '2,7s/^# \{0,1\}//p' "$0"; }

build() {
  bash tools/install-deps.sh
  if [ ! -f build/build.ninja ]; then meson setup build --buildtype=release; fi
  ninja -C build
}

# Prints tab-separated rows as an aligned table; numeric columns are right-aligned.
print_table() {
  awk -F'\t' '
    { for (i = 1; i <= NF; i++) { cell[NR, i] = $i; if (length($i) > w[i]) w[i] = length($i) }
      if (NF > nf) nf = NF }
    END { for (r = 1; r <= NR; r++) { line = ""
            for (i = 1; i <= nf; i++) {
              fmt = (r > 1 && cell[r, i] ~ /^[0-9]+$/) ? "%" w[i] "s" : "%-" w[i] "s"
              line = line (i > 1 ? "  " : "") sprintf(fmt, cell[r, i]) }
            sub(/ +$/, "", line); print line } }'
}

# One table row for the tree trainc just wrote at out/<name>.
tree_stats() {
  local name=$1 spec=$2 files objects bytes k8s=()
  files=$(find "out/$name" -type f | wc -l)
  mapfile -t k8s < <(find "out/$name/k8s" -maxdepth 1 -name '*.yaml' ! -name kustomization.yaml 2>/dev/null | sort)
  objects=0
  if [ "${#k8s[@]}" -gt 0 ]; then objects=$(cat "${k8s[@]}" | grep -c '^kind:' || true); fi
  bytes=$(find "out/$name" -type f -printf '%s\n' | awk '{ s += $1 } END { print s + 0 }')
  printf '%s\t%s\t%s\t%s\t%s\n' "$name" "$spec" "$files" "$objects" "$bytes"
}

cmd_examples() {
  build
  mkdir -p out
  local spec name failed=0 rows
  rows=$(printf 'example\tsource spec\tfiles\tk8s objects\tbytes')
  while read -r spec; do
    name=$(basename "$(dirname "$spec")")
    if "$TRAINC" compile "$spec" -o out >/dev/null; then
      rows+=$'\n'$(tree_stats "$name" "$spec")
    else
      echo "dev.sh: compiling $spec failed" >&2
      failed=$((failed + 1))
    fi
  done < <(example_specs)
  echo
  printf '%s\n' "$rows" | print_table
  if [ "$failed" -gt 0 ]; then
    echo "dev.sh: $failed spec(s) failed to compile" >&2
    return 1
  fi
}

cmd_test() {
  build
  meson test -C build --print-errorlogs "$@"
}

cmd_golden() {
  build
  local dir name spec failed=0 rc expected
  mkdir -p golden
  # trainc replaces only folders it made; removing them first also drops goldens of deleted examples.
  for dir in golden/*/; do
    if [ -f "$dir.trainc-manifest" ]; then rm -rf "$dir"; fi
  done
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' EXIT
  for dir in examples/*/; do
    name=$(basename "$dir")
    spec=$(primary_spec "${dir%/}") || { echo "dev.sh: $dir has no spec.yaml or spec.jsonnet" >&2; failed=1; continue; }
    if ! "$TRAINC" compile "$spec" -o golden >/dev/null; then
      echo "dev.sh: compiling $spec failed" >&2; failed=1; continue
    fi
    if [ "$spec" = "${dir}spec.yaml" ] && [ -f "${dir}spec.jsonnet" ]; then
      if ! "$TRAINC" compile "${dir}spec.jsonnet" -o "$tmp" >/dev/null ||
         ! diff -r -I '^# source: ' "golden/$name" "$tmp/$name" >/dev/null; then
        echo "dev.sh: warning: ${dir}spec.jsonnet does not compile to the same tree as ${dir}spec.yaml" >&2
        failed=1
      fi
    fi
  done
  # trainc plan (text and JSON) and trainc graph (DOT) of every example: tests/inspect/<name>/.
  for dir in examples/*/; do
    name=$(basename "$dir")
    spec=$(primary_spec "${dir%/}") || continue
    mkdir -p "tests/inspect/$name"
    "$TRAINC" plan "$spec" >"tests/inspect/$name/plan.txt" || failed=1
    "$TRAINC" plan "$spec" --format json >"tests/inspect/$name/plan.json" || failed=1
    "$TRAINC" graph "$spec" >"tests/inspect/$name/graph.dot" || failed=1
  done
  for dir in tests/inspect/*/; do
    if [ ! -d "examples/$(basename "$dir")" ]; then rm -rf "$dir"; fi
  done
  while read -r dir; do
    spec=$(case_spec "$dir") || { failed=1; continue; }
    rc=0
    "$TRAINC" check "$spec" >/dev/null 2>"$dir/expected.stderr" || rc=$?
    expected=$(case_expected_exit "$dir")
    if [ "$rc" != "$expected" ]; then
      echo "dev.sh: warning: $spec exits $rc, but the case expects $expected (1 unless expected.exit says otherwise)" >&2
      failed=1
    fi
  done < <(error_cases)
  if git rev-parse --git-dir >/dev/null 2>&1; then git status --short golden tests/errors tests/inspect; fi
  return "$failed"
}

cmd_bench() {
  build
  bash bench/compile.sh "$TRAINC" "$@"
}

case ${1:-} in
  examples|test|golden|bench)
    cmd=$1; shift
    "cmd_$cmd" "$@" ;;
  build) build ;;
  -h|--help|help) usage ;;
  *) usage >&2; exit 2 ;;
esac
