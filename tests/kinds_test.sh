#!/usr/bin/env bash
# A kind that lacks a fact, or that a pass forgot, does not compile; and no pass decides a kind's
# fact by asking which kind it holds (TAP). Adds an alternative with only a kName to each closed
# sum in a copy of compiler/model/model.h, then compiles with the build's own commands (from
# compile_commands.json) and that copy first on the include path: the model's checks must name
# every fact the new kind lacks (model/kinds/facts.h), and every pass that dispatches on the sum
# must fail at its missing handler. The unchanged header compiling is the build itself. Last, a
# scan of the compiler's sources finds no as<T>() / get_if<T> on an alternative outside a short
# allow-list, and the scan is shown to catch one added to a copy.
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
  compiler/k8s/plan.cpp compiler/emit/emit_k8s.cpp compiler/k8s/entry_script.cpp \
  compiler/emit/emit_model.cpp compiler/run/local_runner.cpp; do
  t "$source does not compile with a step kind it has no handler for" fails_without_handler "$source" Extra
done
for source in compiler/k8s/plan.cpp compiler/k8s/names.cpp compiler/emit/emit_k8s.cpp \
  compiler/checks/clusters.cpp compiler/emit/emit_runbook.cpp compiler/emit/emit_model.cpp compiler/run/local_runner.cpp; do
  t "$source does not compile with an engine it has no handler for" fails_without_handler "$source" ExtraEngine
done
for source in compiler/model/lower_services.cpp compiler/emit/emit_runbook.cpp \
  compiler/emit/emit_model.cpp; do
  t "$source does not compile with a server kind it has no handler for" fails_without_handler "$source" ExtraServer
done

# ---- facts ---------------------------------------------------------------------------------
# Each fact of each interface, as the function the kind provides. Compiling anything that includes
# the extended model.h must fail with a static assertion naming each of them for the new kind.
SERVER_FACTS="ports argv probes routes scaling_metric metrics reserved_flags store_refs user_words health_checks store_contents calling_examples model_memory"
ENGINE_FACTS="lead added_containers lead_uses_api per_job_cluster workers_autoscale steps_have_own_pods steps_read_secrets addon"
STEP_FACTS="uses_trainrt rendezvous_port store_locs store_reads user_words command_line shard_count runs_tracker gpu_preflight"

{ read -r facts_dir; read -r facts_cmd; } < <(compile_command compiler/model/kinds/ray.cpp)
facts_out=$(cd "$facts_dir" && eval "$facts_cmd" 2>&1)
facts_rc=$?

# Passes when the compile failed with "<what> lacks ...: ... FACT(" for every FACT, and the checks
# were instantiated for ALTERNATIVE.
names_missing_facts() {
  local what=$1 alternative=$2 facts=$3 fact missing=0
  if [ "$facts_rc" = 0 ]; then echo "the model compiled although $alternative provides no facts"; return 1; fi
  if ! grep -qE "Check[A-Za-z]*Facts<trainc::$alternative>" <<<"$facts_out"; then
    echo "no fact check ran for $alternative:"
    printf '%s\n' "$facts_out" | head -n 20
    return 1
  fi
  for fact in $facts; do
    if ! grep -qE "error: static assertion failed: $what lacks [^:]*: .*\b$fact\(" <<<"$facts_out"; then
      echo "no error names the $what fact '$fact'"
      missing=1
    fi
  done
  [ "$missing" = 0 ] && grep -m1 -E "static assertion failed: $what lacks" <<<"$facts_out"
}
t "a server kind with only a kName fails, naming each fact it lacks" names_missing_facts "server kind" ExtraServer "$SERVER_FACTS"
t "an engine with only a kName fails, naming each fact it lacks" names_missing_facts "engine" ExtraEngine "$ENGINE_FACTS"
t "a step kind with only a kName fails, naming each fact it lacks" names_missing_facts "step kind" Extra "$STEP_FACTS"

# ---- no fact decided by kind ---------------------------------------------------------------
# Where a pass may still hold one alternative by name: each entry is a file and text on the line,
# with why it is not a fact. Everything else reads facts or dispatches with match().
ALLOWED=(
  # Lowering fills an xgboost step's features from the datagen step that writes its input: one
  # kind's fields read into another's, not a fact of either.
  "compiler/model/lower_steps.cpp|std::get_if<XGBoost>(&st.run)"
  "compiler/model/lower_steps.cpp|other.as<Datagen>()"
  "compiler/model/lower_steps.cpp|*maker->as<Datagen>()"
  # Builders of one engine's own objects, reached through its plan role (the match in k8s/plan.cpp).
  "compiler/k8s/clusters.cpp|const Dask& d = std::get<Dask>(c.engine);"
  "compiler/k8s/clusters.cpp|const Ray& r = std::get<Ray>(c.engine);"
  # The local run starts a Dask cluster on loopback, and sizes what datagen would write here.
  "compiler/run/local_runner.cpp|std::get<Dask>(c.engine)"
  "compiler/run/local_runner.cpp|s->as<Datagen>()"
  # ... and a Ray cluster, reached through the match in run/local_runner.cpp's local_cluster.
  "compiler/run/local_ray.cpp|const Ray& ray = std::get<Ray>(c.engine);"
)

# Every line under ROOT/compiler that holds an alternative of a closed sum by name: as<T>(),
# get_if<T>, std::get<T>, holds_alternative<T>, is_same_v<..., T>. Test files are left out.
kind_tests() {
  local root=$1 alternatives
  alternatives=$(sed -nE 's/^using (StepKind|Engine|ServerKind) = std::variant<(.*)>;$/\2/p' "$root/compiler/model/model.h" |
    tr -d ' ' | tr ',\n' '||' | sed 's/|$//')
  [ -n "$alternatives" ] || { echo "no closed sums found in $root/compiler/model/model.h" >&2; return 2; }
  (cd "$root" && grep -rnE --include='*.cpp' --include='*.h' --exclude='*_test.cpp' \
    "(\bas|get_if|std::get|holds_alternative)<(trainc::)?($alternatives)>|is_same_v<[^>]*\b($alternatives)>" compiler)
}

# Passes when every such line of ROOT is allowed, and every allow-list entry still matches a line.
no_unlisted_kind_tests() {
  local root=$1 hits line file text entry bad=0 matched
  hits=$(kind_tests "$root") || [ $? = 1 ] || return 2
  while IFS= read -r line; do
    [ -n "$line" ] || continue
    file=${line%%:*}
    text=${line#*:*:}
    matched=0
    for entry in "${ALLOWED[@]}"; do
      [ "$file" = "${entry%%|*}" ] && [[ $text == *"${entry#*|}"* ]] && matched=1
    done
    [ "$matched" = 1 ] || { echo "a kind decided by name outside the allow-list: $line"; bad=1; }
  done <<<"$hits"
  for entry in "${ALLOWED[@]}"; do
    matched=0
    while IFS= read -r line; do
      [ "${line%%:*}" = "${entry%%|*}" ] && [[ ${line#*:*:} == *"${entry#*|}"* ]] && matched=1
    done <<<"$hits"
    [ "$matched" = 1 ] || { echo "allow-list entry matches nothing (remove it): $entry"; bad=1; }
  done
  return "$bad"
}
t "no pass decides a kind's fact with as<T>()/get_if outside the allow-list" no_unlisted_kind_tests .

# The scan catches one: a copy of the sources where a pass asks whether a service runs Triton.
mkdir -p "$TMP/src"
cp -r compiler "$TMP/src/"
printf '%s\n' 'bool on_triton(const trainc::Service& s) { return s.as<trainc::Triton>() != nullptr; }' \
  >>"$TMP/src/compiler/k8s/services.cpp"
catches_added() {
  local out
  if out=$(no_unlisted_kind_tests "$TMP/src"); then echo "the scan missed an as<Triton>() added to k8s/services.cpp"; return 1; fi
  grep -q 'compiler/k8s/services.cpp:.*as<trainc::Triton>' <<<"$out" || { echo "$out"; return 1; }
  echo "$out"
}
t "the scan fails on an as<Triton>() added to a pass" catches_added
tap_done
