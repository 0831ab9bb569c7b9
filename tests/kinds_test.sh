#!/usr/bin/env bash
# A step kind that a pass forgot does not compile (TAP). Adds an alternative `Extra` to StepKind
# in a copy of compiler/model/model.h, then compiles every pass that dispatches on the kind with
# the build's own command (from compile_commands.json) and that copy first on the include path:
# each must fail, naming the missing handler. The unchanged header compiling is the build itself.
# Usage: tests/kinds_test.sh TRAINC BUILD_DIR
set -uo pipefail
# shellcheck source=tests/tap.sh
. "$(dirname "${BASH_SOURCE[0]}")/tap.sh"
tap_init "$@"
BUILD=$(cd "$2" && pwd)

mkdir -p "$TMP/inc/model"
# Every closed sum gets an alternative no pass knows: StepKind (what a step runs), Engine (what a
# compute cluster is) and ServerKind (what a service serves with).
sed -e 's/^using StepKind = std::variant<Torchrun, Command, Datagen, XGBoost>;$/struct Extra {\n  static constexpr std::string_view kName = "extra";\n};\nusing StepKind = std::variant<Torchrun, Command, Datagen, XGBoost, Extra>;/' \
  -e 's/^using Engine = std::variant<Ray, Dask>;$/struct ExtraEngine {\n  static constexpr std::string_view kName = "extra";\n};\nusing Engine = std::variant<Ray, Dask, ExtraEngine>;/' \
  -e 's/^using ServerKind = std::variant<\(.*\)>;$/struct ExtraServer {\n  static constexpr std::string_view kName = "extra";\n};\nusing ServerKind = std::variant<\1, ExtraServer>;/' \
  compiler/model/model.h >"$TMP/inc/model/model.h"
t "the copy of model.h adds an alternative to StepKind" grep -q 'XGBoost, Extra>' "$TMP/inc/model/model.h"
t "the copy of model.h adds an alternative to Engine" grep -q 'Dask, ExtraEngine>' "$TMP/inc/model/model.h"
t "the copy of model.h adds an alternative to ServerKind" grep -q ', ExtraServer>;' "$TMP/inc/model/model.h"

# The compile command of SOURCE, as the build runs it, with -fsyntax-only and the copy first.
compile_command() {
  python3 - "$BUILD/compile_commands.json" "$1" "$TMP/inc" <<'PY'
import json, shlex, sys
db, source, inc = sys.argv[1:]
for entry in json.load(open(db)):
    if entry["file"].endswith("/" + source) and ".p/" in entry["output"] and "unit-tests" not in entry["output"]:
        args = shlex.split(entry["command"])
        # The compiler, after the launcher meson puts before it when it finds one (ccache).
        n = 2 if args[0].rsplit("/", 1)[-1] in ("ccache", "sccache") else 1
        out = args[:n] + ["-I" + inc]
        skip = False
        for a in args[n:]:
            if skip: skip = False; continue
            if a in ("-o", "-MF", "-MQ"): skip = True; continue
            if a in ("-MD", "-c") or a.startswith("-fdiagnostics-color"): continue
            out.append(a)
        print(entry["directory"])
        print(shlex.join(out + ["-fsyntax-only", "-fdiagnostics-color=never"]))
        break
PY
}

# Passes `SOURCE` when compiling it against the extended sums fails at a dispatch on ALTERNATIVE.
fails_without_handler() {
  local source=$1 alternative=$2 dir cmd out
  { read -r dir; read -r cmd; } < <(compile_command "$source")
  if [ -z "${cmd:-}" ]; then echo "no compile command for $source in $BUILD/compile_commands.json"; return 1; fi
  if out=$(cd "$dir" && eval "$cmd" 2>&1); then
    echo "$source compiled although a closed sum has an alternative it does not handle"
    return 1
  fi
  # The error must be a dispatch (overloaded handlers) given the new alternative, not something
  # unrelated to it.
  # (One grep: `grep | grep -q` under pipefail fails when -q closes the pipe early.)
  if ! grep -qE "error:.*overloaded<.*trainc::$alternative\\b" <<<"$out"; then
    echo "$source failed for another reason:"
    printf '%s\n' "$out" | head -n 20
    return 1
  fi
  grep -m1 -E "error:" <<<"$out"
}

for source in compiler/model/lower_steps.cpp compiler/checks/steps.cpp \
  compiler/emit/k8s_plan.cpp compiler/emit/emit_k8s.cpp compiler/emit/entry_script.cpp \
  compiler/emit/emit_model.cpp compiler/run/local_runner.cpp compiler/inspect/graph.cpp; do
  t "$source does not compile with a step kind it has no handler for" fails_without_handler "$source" Extra
done
for source in compiler/emit/k8s_plan.cpp compiler/emit/k8s_names.cpp compiler/emit/emit_k8s.cpp \
  compiler/checks/clusters.cpp compiler/emit/emit_runbook.cpp compiler/emit/emit_model.cpp compiler/run/local_runner.cpp; do
  t "$source does not compile with an engine it has no handler for" fails_without_handler "$source" ExtraEngine
done
for source in compiler/model/lower_services.cpp compiler/emit/emit_runbook.cpp \
  compiler/emit/emit_model.cpp; do
  t "$source does not compile with a server kind it has no handler for" fails_without_handler "$source" ExtraServer
done
tap_done
