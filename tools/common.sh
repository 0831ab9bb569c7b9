# shellcheck shell=bash
# Helpers shared by dev.sh, bench/compile.sh and the TAP tests (sourced from the repo root).
# Knows the layout contract: examples/<name>/spec.{yaml,jsonnet} and tests/errors/<case>/spec.*.

# Every example spec file, one a line, sorted; the jsonnet twin before its yaml.
example_specs() {
  local dir ext
  for dir in examples/*/; do
    for ext in jsonnet yaml; do
      if [ -f "${dir}spec.$ext" ]; then printf '%s\n' "${dir}spec.$ext"; fi
    done
  done
}

# The one spec of an example: spec.yaml if present, else spec.jsonnet (golden/ is made from it).
primary_spec() {
  if [ -f "$1/spec.yaml" ]; then printf '%s\n' "$1/spec.yaml"
  elif [ -f "$1/spec.jsonnet" ]; then printf '%s\n' "$1/spec.jsonnet"
  else return 1; fi
}

# Every error case folder (tests/errors/<case>), sorted, without the trailing slash.
error_cases() {
  local dir
  for dir in tests/errors/*/; do
    if [ -d "$dir" ]; then printf '%s\n' "${dir%/}"; fi
  done
}

# The single spec of an error case; fails (with a message) when there is none or more than one.
case_spec() {
  local found=()
  [ -f "$1/spec.yaml" ] && found+=("$1/spec.yaml")
  [ -f "$1/spec.jsonnet" ] && found+=("$1/spec.jsonnet")
  if [ "${#found[@]}" -ne 1 ]; then
    echo "$1: needs exactly one of spec.yaml, spec.jsonnet (found ${#found[@]})" >&2
    return 1
  fi
  printf '%s\n' "${found[0]}"
}

# The exit code an error case expects: the contents of expected.exit, else 1.
case_expected_exit() {
  if [ -f "$1/expected.exit" ]; then tr -d '[:space:]' <"$1/expected.exit"; else echo 1; fi
}

# Makes a command path absolute (a bare name is looked up on PATH).
absolute_command() {
  case $1 in
    /*) printf '%s\n' "$1" ;;
    */*) printf '%s\n' "$PWD/$1" ;;
    *) command -v "$1" || printf '%s\n' "$1" ;;
  esac
}
