#!/usr/bin/env bash
# trainc plan, graph, explain and completion (TAP). Every example's plan (text and JSON) and graph
# (DOT) match tests/inspect/<name>/ (regenerate with ./dev.sh golden), and a Jsonnet twin gives the
# same; the SVG Graphviz renders is well-formed XML and Graphviz's own `dot` accepts the DOT;
# explain and the completion scripts work as a user calls them. Usage: tests/inspect_test.sh TRAINC
set -uo pipefail
# shellcheck source=tests/tap.sh
. "$(dirname "${BASH_SOURCE[0]}")/tap.sh"
tap_init "$@"
rc=0  # exit code of the last run() (tests/tap.sh)

HINT="run ./dev.sh golden to regenerate (then review and commit tests/inspect/)"

# SPEC NAME FILE ARGS...: `trainc ARGS SPEC` prints exactly tests/inspect/NAME/FILE.
matches() {
  local spec=$1 name=$2 file=$3 d
  shift 3
  run "$TRAINC" "$@" "$spec"
  if [ "$rc" -ne 0 ]; then echo "trainc $* $spec exited $rc:"; cat "$TMP/stderr"; return 1; fi
  if [ ! -f "tests/inspect/$name/$file" ]; then echo "tests/inspect/$name/$file is missing; $HINT"; return 1; fi
  if ! d=$(diff -u "tests/inspect/$name/$file" "$TMP/stdout"); then
    printf '%s\n' "$d" | head -n 30
    echo "trainc $* $spec differs from tests/inspect/$name/$file; $HINT"
    return 1
  fi
}

while read -r spec; do
  name=$(basename "$(dirname "$spec")")
  t "plan (text) of $spec" matches "$spec" "$name" plan.txt plan
  t "plan (json) of $spec" matches "$spec" "$name" plan.json plan --format json
  t "graph (DOT) of $spec" matches "$spec" "$name" graph.dot graph
done < <(example_specs)

well_formed_svg() {
  local out=$TMP/system.svg
  rm -f "$out"
  run "$TRAINC" graph examples/triton-tpu/spec.jsonnet -o "$out"
  if [ "$rc" -ne 0 ]; then echo "graph -o exited $rc"; cat "$TMP/stderr"; return 1; fi
  python3 - "$out" <<'PY' || return 1
import sys
import xml.etree.ElementTree as ET
root = ET.parse(sys.argv[1]).getroot()
ns = "{http://www.w3.org/2000/svg}"
assert root.tag == ns + "svg", root.tag
titles = [t.text for t in root.iter(ns + "title")]
for want in ("pool/tpu-v5e", "service/triton", "store/models", "step/pretrain"):
    assert want in titles, (want, titles[:20])
edges = [g for g in root.iter(ns + "g") if g.get("class") == "edge"]
assert len(edges) >= 5, len(edges)
PY
  if command -v dot >/dev/null 2>&1; then
    "$TRAINC" graph examples/xgb-a4/spec.yaml | dot -Tsvg >/dev/null || { echo "Graphviz's dot rejects the DOT"; return 1; }
  fi
  # The same again replaces trainc's own file.
  run "$TRAINC" graph examples/mnist/spec.yaml -o "$out"
  [ "$rc" -eq 0 ] || { echo "graph -o over its own file exited $rc"; return 1; }
}
t "graph -o FILE.svg is well-formed SVG with every part; dot accepts the DOT" well_formed_svg

graph_guards() {
  printf 'mine\n' >"$TMP/notes.svg"
  run "$TRAINC" graph examples/mnist/spec.yaml -o "$TMP/notes.svg"
  [ "$rc" -eq 2 ] || { echo "over a file trainc did not write: exit $rc (expected 2)"; return 1; }
  grep -q "refusing to overwrite" "$TMP/stderr" || { cat "$TMP/stderr"; return 1; }
  [ "$(cat "$TMP/notes.svg")" = mine ] || { echo "the user's file was changed"; return 1; }
  run "$TRAINC" graph examples/mnist/spec.yaml -o "$TMP/graph.png"
  [ "$rc" -eq 2 ] && grep -q "must end in .svg or .dot" "$TMP/stderr" || { echo "-o graph.png: exit $rc"; return 1; }
  [ ! -e "$TMP/graph.png" ] || { echo "graph.png was written"; return 1; }
  # A symbolic link and a folder are refused; a file trainc wrote keeps its mode when replaced.
  "$TRAINC" graph examples/mnist/spec.yaml -o "$TMP/mine.svg" >/dev/null || return 1
  ln -s mine.svg "$TMP/link.svg"
  run "$TRAINC" graph examples/mnist/spec.yaml -o "$TMP/link.svg"
  [ "$rc" -eq 2 ] && grep -q "symbolic link" "$TMP/stderr" && [ -L "$TMP/link.svg" ] || { echo "-o a symlink: exit $rc"; return 1; }
  mkdir "$TMP/dir.svg"
  run "$TRAINC" graph examples/mnist/spec.yaml -o "$TMP/dir.svg"
  [ "$rc" -eq 2 ] && grep -q "it is a folder" "$TMP/stderr" || { echo "-o a folder: exit $rc"; cat "$TMP/stderr"; return 1; }
  chmod 0640 "$TMP/mine.svg"
  "$TRAINC" graph examples/xgb-a4/spec.yaml -o "$TMP/mine.svg" >/dev/null || return 1
  [ "$(stat -c %a "$TMP/mine.svg")" = 640 ] || { echo "mode became $(stat -c %a "$TMP/mine.svg")"; return 1; }
  local left
  for left in "$TMP"/.mine.svg.*; do
    if [ -e "$left" ]; then echo "a temporary file was left behind: $left"; return 1; fi
  done
}
t "graph -o keeps files trainc did not write and names the formats it knows" graph_guards

# Every step and compute cluster runs as the system's identity, as services run as theirs: each gets
# a "runs as" edge to the identity no service's edge points at.
runs_as_edges() {
  local spec name missing=0
  while read -r spec; do
    name=$(basename "$(dirname "$spec")")
    "$TRAINC" graph "$spec" >"$TMP/$name.dot" || { echo "trainc graph $spec failed"; return 1; }
    python3 - "$TMP/$name.dot" "$spec" <<'PY' || missing=1
import re, sys
dot = open(sys.argv[1]).read()
nodes = re.findall(r'^  "([^"]+)" \[label=', dot, re.M)
runs_as = re.findall(r'^  "([^"]+)" -> "([^"]+)" \[[^]]*label="runs as"', dot, re.M)
of_services = {to for frm, to in runs_as if frm.startswith("service/")}
system = [n for n in nodes if n.startswith("identity/") and n not in of_services]
for identity in system:
    for n in nodes:
        if n.startswith(("step/", "cluster/")) and (n, identity) not in runs_as:
            print(f"{sys.argv[2]}: no 'runs as' edge from {n} to {identity}")
            sys.exit(1)
PY
  done < <(for d in examples/*/; do primary_spec "${d%/}"; done)
  return "$missing"
}
t "steps and compute clusters have a 'runs as' edge to the system's identity" runs_as_edges

# The boxes fit their labels in the font a reader has: each example's graph.svg rendered by librsvg
# (rsvg-convert) with only DejaVu Sans, Debian's default sans-serif, which is wider than the Helvetica
# metrics Graphviz sizes boxes with, keeps every label inside its box (tests/graph_fit.py).
GRAPH_FIT_PY=
for py in python3 /usr/bin/python3; do
  if "$py" -c 'import PIL' 2>/dev/null; then GRAPH_FIT_PY=$py; break; fi
done
reader_fonts() {
  local dejavu
  if ! command -v rsvg-convert >/dev/null || ! command -v fc-match >/dev/null || [ -z "$GRAPH_FIT_PY" ]; then
    echo "needs rsvg-convert, fc-match and Python's PIL (librsvg2-bin, fontconfig, python3-pil): run tools/install-deps.sh"
    return 1
  fi
  dejavu=$(fc-match -f '%{file}' 'DejaVu Sans')
  [ "$(basename "$dejavu")" = DejaVuSans.ttf ] || { echo "DejaVu Sans is not installed (fonts-dejavu-core): $dejavu"; return 1; }
  mkdir -p "$TMP/fontconfig"
  cat >"$TMP/fontconfig/fonts.conf" <<XML
<?xml version="1.0"?>
<!DOCTYPE fontconfig SYSTEM "fonts.dtd">
<fontconfig>
  <dir>$(dirname "$dejavu")</dir>
  <cachedir>$TMP/fontconfig/cache</cachedir>
  <alias><family>Helvetica</family><prefer><family>DejaVu Sans</family></prefer></alias>
  <alias><family>sans-serif</family><prefer><family>DejaVu Sans</family></prefer></alias>
</fontconfig>
XML
  export FONTCONFIG_FILE=$TMP/fontconfig/fonts.conf
  local got
  got=$(fc-match -f '%{family[0]}' 'Helvetica')
  [ "$got" = "DejaVu Sans" ] || { echo "Helvetica is drawn in '$got', not DejaVu Sans"; return 1; }
}
labels_fit() {
  local spec name svgs=()
  reader_fonts || return 1
  mkdir -p "$TMP/svg"
  while read -r spec; do
    name=$(basename "$(dirname "$spec")")
    "$TRAINC" graph "$spec" -o "$TMP/svg/$name.svg" >/dev/null || { echo "trainc graph $spec failed"; return 1; }
    svgs+=("$TMP/svg/$name.svg")
  done < <(for d in examples/*/; do primary_spec "${d%/}"; done)
  "$GRAPH_FIT_PY" tests/graph_fit.py "${svgs[@]}"
}
t "every example's picture, drawn in DejaVu Sans by librsvg, keeps each label inside its box" labels_fit

# The check is not a rubber stamp: a label made longer than its box is reported.
overflow_caught() {
  reader_fonts || return 1
  "$TRAINC" graph examples/mnist/spec.yaml -o "$TMP/mnist.svg" >/dev/null || return 1
  sed 's|>4 pods x 1 GPU<|>4 pods x 1 GPU, and a good deal more text<|' "$TMP/mnist.svg" >"$TMP/long.svg"
  if "$GRAPH_FIT_PY" tests/graph_fit.py "$TMP/long.svg" >"$TMP/fit.log"; then echo "a label past its box passed"; return 1; fi
  grep -q "node step/train: " "$TMP/fit.log" || { cat "$TMP/fit.log"; return 1; }
  if grep -q "node pool/" "$TMP/fit.log"; then cat "$TMP/fit.log"; return 1; fi
}
t "a label longer than its box is reported, naming the node" overflow_caught

# A system too big to lay out quickly (45 chained steps, 134 connections) compiles without its
# picture, and its runbook says why and how to draw it.
large_system_without_picture() {
  local spec=$TMP/chain.yaml i
  {
    printf 'apiVersion: trainc/v1\nkind: TrainingSystem\nname: chain\nstorage:\n'
    printf '  data: {s3: {bucket: my-data-bkt}}\n  out: {s3: {bucket: my-out-bkt}}\npipeline:\n'
    for i in $(seq 0 44); do
      printf '  - {name: s%d, image: x, command: [t], inputs: [{from: "data:/in/", to: data}], outputs: {path: out, to: "out:/s%d/"}' "$i" "$i"
      if [ "$i" -gt 0 ]; then printf ', needs: [s%d]' $((i - 1)); fi
      printf '}\n'
    done
  } >"$spec"
  run "$TRAINC" compile "$spec" -o "$TMP/large"
  [ "$rc" -eq 0 ] || { echo "compile exited $rc"; cat "$TMP/stderr"; return 1; }
  [ ! -e "$TMP/large/chain/graph.svg" ] || { echo "graph.svg was drawn for a graph this size"; return 1; }
  grep -q "Its picture (47 parts, 134 connections) is left out" "$TMP/large/chain/README.md" ||
    { grep -A3 "## The system" "$TMP/large/chain/README.md"; return 1; }
}
t "a system too big to lay out quickly compiles without graph.svg; its runbook says why" large_system_without_picture

plan_of_bad_spec() {
  printf 'apiVersion: trainc/v1\nkind: TrainingSystem\nname: x\ncluster: {pools: {p: {machine: n1-standrd-4}}}\n' >"$TMP/bad.yaml"
  run "$TRAINC" plan "$TMP/bad.yaml"
  [ "$rc" -eq 1 ] || { echo "exit $rc (expected 1)"; return 1; }
  grep -q "bad.yaml:4:" "$TMP/stderr" && grep -q "n1-standard-4" "$TMP/stderr" || { cat "$TMP/stderr"; return 1; }
  [ ! -s "$TMP/stdout" ] || { echo "a plan was printed for a spec with errors"; return 1; }
}
t "plan of a spec with errors prints its diagnostics and no plan" plan_of_bad_spec

# A spec right in its parts whose pods would not run where it puts them: the plan still shows
# each node and the pods that would stay Pending, after the errors, and the exit says it failed.
plan_of_unplaceable_spec() {
  run "$TRAINC" plan tests/errors/cluster-workers-exceed-pool/spec.yaml
  [ "$rc" -eq 1 ] || { echo "exit $rc (expected 1)"; return 1; }
  grep -q "error: cluster/ray 'ray/gpu' would stay Pending" "$TMP/stderr" || { cat "$TMP/stderr"; return 1; }
  grep -q "the plan above would not run as written" "$TMP/stderr" || { cat "$TMP/stderr"; return 1; }
  grep -q "would stay Pending: 2 of ray/gpu\[1-2\]" "$TMP/stdout" || { echo "no Pending pod in the plan:"; cat "$TMP/stdout"; return 1; }
  run "$TRAINC" plan --format json tests/errors/topology-required-host-too-small/spec.yaml
  [ "$rc" -eq 1 ] || { echo "exit $rc (expected 1)"; return 1; }
  python3 -c 'import json,sys; w=[x for x in json.load(sys.stdin)["workloads"] if x["name"]=="train"][0]; assert w["topology"]=="required host", w' <"$TMP/stdout" ||
    { echo "the JSON plan does not show the required host"; return 1; }
}
t "plan of a spec whose pods would not fit prints the errors, then the plan with what stays Pending" plan_of_unplaceable_spec

explain_cli() {
  run "$TRAINC" explain pipeline.checkpoints.pattern
  [ "$rc" -eq 0 ] && grep -q '^DEFAULT:  \*$' "$TMP/stdout" || { echo "exit $rc"; cat "$TMP/stdout" "$TMP/stderr"; return 1; }
  run "$TRAINC" explain cluster.pools.gpu.provisoning
  [ "$rc" -eq 1 ] || { echo "wrong path: exit $rc (expected 1)"; return 1; }
  grep -q "did you mean 'provisioning'?" "$TMP/stderr" || { cat "$TMP/stderr"; return 1; }
  run "$TRAINC" explain --list
  [ "$rc" -eq 0 ] && [ "$(wc -l <"$TMP/stdout")" -gt 150 ] || { echo "--list: exit $rc, $(wc -l <"$TMP/stdout") lines"; return 1; }
  grep -qx 'pipeline.checkpoints.resumeFlag' "$TMP/stdout" || { echo "--list lacks pipeline.checkpoints.resumeFlag"; return 1; }
}
t "explain prints a field, suggests for a typo, lists every path" explain_cli

explain_missing_key() {
  run "$TRAINC" explain clusters.workers.resources
  [ "$rc" -eq 1 ] || { echo "exit $rc (expected 1)"; cat "$TMP/stdout" "$TMP/stderr"; return 1; }
  [ ! -s "$TMP/stdout" ] || { echo "printed a field for a path that skips a key:"; head -n 5 "$TMP/stdout"; return 1; }
  local want="trainc: error: 'clusters.workers.resources' skips a map's key: a <name> segment is missing after"
  want+=" 'clusters' and after 'workers'; did you mean 'clusters.<name>.workers.<name>.resources'?"
  [ "$(cat "$TMP/stderr")" = "$want" ] || { echo "stderr:"; cat "$TMP/stderr"; echo "expected:"; echo "$want"; return 1; }
  run "$TRAINC" explain 'clusters.<name>.workers.<name>.resources'
  [ "$rc" -eq 0 ] || { echo "the suggested path: exit $rc"; cat "$TMP/stderr"; return 1; }
}
t "explain of a path that skips a map's key names the missing <name> and the path that works" explain_missing_key

# Runs the bash completion function for a command line (the last word is being completed) and
# prints the candidates, one a line. trainc is first on PATH, as an installed one would be.
complete_bash() {
  local script=$TMP/trainc.bash
  "$TRAINC" completion bash >"$script" || return 1
  mkdir -p "$TMP/bin"
  ln -sf "$TRAINC" "$TMP/bin/trainc"
  PATH="$TMP/bin:$PATH" bash -c '
    source "$1"; shift
    COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1))
    _trainc
    printf "%s\n" "${COMPREPLY[@]}"' _ "$script" "$@"
}

bash_completion() {
  local out
  out=$(complete_bash trainc pl) && [ "$out" = plan ] || { echo "trainc pl -> '$out'"; return 1; }
  out=$(complete_bash trainc graph -) && grep -qx -- --out <<<"$out" && grep -qx -- -o <<<"$out" ||
    { echo "trainc graph - -> $out"; return 1; }
  out=$(complete_bash trainc plan --format '') && [ "$(sort <<<"$out" | tr '\n' ' ')" = "json text " ] ||
    { echo "trainc plan --format -> $out"; return 1; }
  out=$(complete_bash trainc explain pipeline.checkpoints.resumeFl) && [ "$out" = pipeline.checkpoints.resumeFlag ] ||
    { echo "trainc explain pipeline.checkpoints.re -> '$out'"; return 1; }
  out=$(cd examples/mnist && complete_bash trainc compile sp) && grep -qx spec.yaml <<<"$out" &&
    grep -qx spec.jsonnet <<<"$out" || { echo "trainc compile sp (in examples/mnist) -> $out"; return 1; }
  out=$(complete_bash trainc completion '') && [ "$(sort <<<"$out" | tr '\n' ' ')" = "bash zsh " ] ||
    { echo "trainc completion -> $out"; return 1; }
}
t "bash completion: subcommands, flags, flag values, schema paths, spec files" bash_completion

zsh_completion() {
  "$TRAINC" completion zsh >"$TMP/_trainc" || return 1
  head -n 1 "$TMP/_trainc" | grep -qx '#compdef trainc' || { echo "no #compdef line"; return 1; }
  if ! command -v zsh >/dev/null 2>&1; then echo "zsh is not installed: syntax not checked"; return 0; fi
  zsh -n "$TMP/_trainc" || { echo "zsh -n rejects the script"; return 1; }
  # Loaded by compinit from fpath, the function is defined and registered for trainc.
  ZDOTDIR=$TMP zsh -f -c 'fpath=("$1" $fpath); autoload -Uz compinit; compinit -u -d "$1/zcompdump"; [[ ${_comps[trainc]} == _trainc ]]' _ "$TMP" ||
    { echo "compinit does not register _trainc for trainc"; return 1; }
}
t "zsh completion: a #compdef script zsh accepts and compinit registers" zsh_completion

# up.sh compares the quota the plan needs with what `gcloud compute regions describe` reports,
# here a stand-in gcloud that finds every resource present, as the spec has it, so nothing is
# created or changed.
up_checks_quota() {
  local bin=$TMP/gcloud-bin
  mkdir -p "$bin"
  cat >"$bin/gcloud" <<'SH'
#!/usr/bin/env bash
printf 'gcloud %s\n' "$*" >>"$GCLOUD_LOG"
case "$*" in
  "compute regions describe us-central1 "*) printf '%s\n' CPUS,24.0,0.0 NVIDIA_T4_GPUS,4.0,2.0 SSD_TOTAL_GB,2048.0,100.0 ;;
  "projects describe"*) echo 123456 ;;
  "container clusters describe demo "*--format=*) echo 'default|default|REGULAR|' ;;
  "container node-pools describe gpu-pool "*--format=*)
    echo 'n1-standard-4|nvidia-tesla-t4|1|100|||||||||||||||||https://www.googleapis.com/compute/v1/projects/my-project/zones/us-central1-c/instanceGroupManagers/gke-demo-gpu-pool-grp' ;;
  "compute instance-groups managed describe gke-demo-gpu-pool-grp "*) echo 4 ;;
  "container node-pools list "*) echo gpu-pool ;;
esac
SH
  chmod +x "$bin/gcloud"
  GCLOUD_LOG=$TMP/gcloud.log PATH="$bin:$PATH" run bash golden/mnist/scripts/up.sh
  if [ "$rc" -ne 0 ]; then echo "up.sh exited $rc"; cat "$TMP/stderr"; return 1; fi
  grep -q "warning: quota NVIDIA_T4_GPUS in us-central1: the pools need 4 at their largest, 2 of 4 are free" "$TMP/stderr" ||
    { echo "no warning for the T4 GPUs:"; cat "$TMP/stderr"; return 1; }
  grep -q "us-central1 lists no quota IN_USE_ADDRESSES" "$TMP/stderr" || { echo "no note for an unlisted metric"; return 1; }
  if grep -qE "quota (CPUS|SSD_TOTAL_GB) in" "$TMP/stderr"; then echo "a warning for a quota that suffices:"; cat "$TMP/stderr"; return 1; fi
  grep -q "^gcloud compute regions describe us-central1 --project=my-project" "$TMP/gcloud.log" || { cat "$TMP/gcloud.log"; return 1; }
  # (GKE's default pool, which the stand-in finds too, goes.)
  if grep -E "^gcloud .* (create|delete|update|resize) " "$TMP/gcloud.log" | grep -v " delete default-pool "; then
    echo "up.sh changed the above"
    return 1
  fi
  run bash golden/mnist/scripts/up.sh --dry-run
  grep -q "dry run: quota in us-central1 not read" "$TMP/stderr" || { echo "dry run:"; cat "$TMP/stderr"; return 1; }
}
t "up.sh warns, before it makes anything, about quota the pools need and the region lacks" up_checks_quota

tap_done
