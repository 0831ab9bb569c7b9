#!/usr/bin/env bash
# Applies an output folder as its README tells a person to (outputs without GCP have no scripts/):
# first the fixes "Before you apply" offers for what must exist already (each "else `kubectl
# create ...`"), then every command of the ```sh block under "## Apply", in order, from the output
# folder. A command that fetches an add-on's release manifest over the network is left out and
# said so: the test cluster's administrators installed the add-ons (tests/cluster/operators.sh).
# Each command is printed before it runs; the first that fails stops it.
#
# Usage: (cd OUT && readme_apply.sh README.md)   with kubectl on PATH and KUBECONFIG set
set -euo pipefail
readme=$1
run() { printf '+ %s\n' "$*" >&2; bash -c "$1"; }

mapfile -t fixes < <(sed -n '/^## Before you apply/,/^## /p' "$readme" | grep -o 'else `kubectl create [^`]*`' | sed 's/^else `//; s/`$//')
# Each is the README's "else": what exists already (a second apply) is left as it is.
for c in ${fixes[@]+"${fixes[@]}"}; do
  printf '+ %s\n' "$c" >&2
  if ! out=$(bash -c "$c" 2>&1); then
    case "$out" in *AlreadyExists* | *"already exists"*) printf '%s (there already)\n' "$out" >&2 ;; *) printf '%s\n' "$out" >&2; exit 1 ;; esac
  fi
done

mapfile -t cmds < <(awk '/^## Apply/ { on = 1; next } on && /^## / { exit } on && /^```sh/ { code = 1; next }
                         on && /^```/ { code = 0; next } code && NF { print }' "$readme")
if [ "${#cmds[@]}" -eq 0 ]; then
  echo "readme_apply.sh: $readme has no sh block under '## Apply'" >&2
  exit 1
fi
for c in "${cmds[@]}"; do
  case "$c" in
    *https://*) printf 'readme_apply.sh: left out (an add-on the administrators installed): %s\n' "$c" >&2 ;;
    *) run "$c" ;;
  esac
done
