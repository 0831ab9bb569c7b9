#!/usr/bin/env bash
# Developer entry point. Every subcommand installs missing dependencies and builds first.
#   ./dev.sh examples   compile every examples/*/spec.* into out/ and print a table of what was made
#   ./dev.sh test       run every test suite (meson test); extra arguments go to meson test
#   ./dev.sh golden     regenerate golden/, tests/inspect/, tests/errors/*/expected.stderr, docs/reference.md and docs/tutorial.md's outputs, then show what changed
#   ./dev.sh bench      time trainc compile per example (bench/compile.sh)
#   ./dev.sh build      install dependencies and build only
#   ./dev.sh fuzz [SECONDS] [HARNESS...]   run each libFuzzer harness (fuzz/) for SECONDS (default 60) in build-fuzz/
#   ./dev.sh tsan       build trainc with ThreadSanitizer in build-tsan/ and check many specs per process for data races
#   ./dev.sh cluster up [SPEC...]   the upstream control plane on loopback (tests/cluster/cluster.sh) with nodes for SPECs' pools (default: every example's); prints its kubeconfig last
#   ./dev.sh cluster down           stop it and remove its state (out/cluster)
#   ./dev.sh fresh-machine [--keep]   as root: a fresh Debian 12 root (debootstrap) in build-fresh/, a clone of HEAD in it, both commands above, timed
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")"
# shellcheck source=tools/common.sh
. tools/common.sh
TRAINC=build/compiler/trainc

usage() { sed -n '2,10s/^# \{0,1\}//p' "$0"; }

# The CUDA toolkit trainrt is built with: $CUDA_HOME, else /usr/local/cuda, else the one
# tools/install-python.sh puts in the project's Python environment (NVIDIA's wheels). Its bin goes
# first on PATH (meson finds nvcc only there) and CUDA_PATH names it (meson's CUDA dependency).
cuda_env() {
  local cuda
  if [ -n "${CUDA_HOME:-}" ] && [ -x "$CUDA_HOME/bin/nvcc" ]; then cuda=$CUDA_HOME
  elif [ -x /usr/local/cuda/bin/nvcc ]; then cuda=/usr/local/cuda
  else cuda=$(bash tools/install-python.sh --cuda-home)
  fi
  export CUDA_PATH=$cuda PATH="$cuda/bin:$PATH"
}

build() {
  bash tools/install-deps.sh
  cuda_env
  # -Dcuda=enabled: a build without nvcc, cudart or NCCL fails here instead of leaving the kernels
  # out. A build tree made with another toolkit (a new lock's environment) is configured again:
  # its trainrt's run path names the toolkit it was linked with.
  # -Dtoolkit_root: the run path stays the toolkit's when ninja or `meson test` reconfigures without
  # this environment.
  if [ ! -f build/build.ninja ]; then
    meson setup build --buildtype=release -Dcuda=enabled -Dtoolkit_root="$CUDA_PATH"
  elif [ "$(cat build/.cuda-home 2>/dev/null)" != "$CUDA_PATH" ] ||
       [ "$(meson introspect build --buildoptions | python3 -c 'import json, sys; o = {o["name"]: o["value"] for o in json.load(sys.stdin)}; print(o["cuda"], o.get("toolkit_root", ""))')" != "enabled $CUDA_PATH" ]; then
    # Meson keeps the dependencies it found: forget them, or the old toolkit's paths stay.
    meson configure build --clearcache
    meson setup --reconfigure build -Dcuda=enabled -Dtoolkit_root="$CUDA_PATH"
  fi
  printf '%s\n' "$CUDA_PATH" >build/.cuda-home
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
  # The build has CUDA (build() asks meson for it): a test fails if it does not.
  TRAINC_REQUIRE_CUDA=1 meson test -C build --print-errorlogs "$@"
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
  # (The runbook names the output folder as `-o` gave it when it is in the repository, and OUT
  # otherwise: the Jsonnet twin, compiled to a temporary folder, differs there only.)
  for dir in examples/*/; do
    name=$(basename "$dir")
    spec=$(primary_spec "${dir%/}") || { echo "dev.sh: $dir has no spec.yaml or spec.jsonnet" >&2; failed=1; continue; }
    if ! "$TRAINC" compile "$spec" -o golden >/dev/null; then
      echo "dev.sh: compiling $spec failed" >&2; failed=1; continue
    fi
    if [ "$spec" = "${dir}spec.yaml" ] && [ -f "${dir}spec.jsonnet" ]; then
      if ! "$TRAINC" compile "${dir}spec.jsonnet" -o "$tmp" >/dev/null ||
         ! diff -r -I '^# source: ' -I '^ROOT=' -I '^SPEC=' -I '^SPEC_SHA256=' \
           -I '^Edit the spec, compile it again and apply' -I '^trainc plan SPEC --against ' \
           "golden/$name" "$tmp/$name" >/dev/null; then
        echo "dev.sh: warning: ${dir}spec.jsonnet does not compile to the same tree as ${dir}spec.yaml" >&2
        failed=1
      fi
    fi
  done
  # The field reference, from the schema (tests/docs_test.sh fails when it drifts).
  "$TRAINC" explain --markdown >docs/reference.md || failed=1
  # The tutorial's quoted command outputs, from running its commands.
  python3 tests/tutorial.py "$TRAINC" docs/tutorial.md --update >/dev/null || failed=1
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
  if git rev-parse --git-dir >/dev/null 2>&1; then git status --short golden tests/errors tests/inspect docs; fi
  return "$failed"
}

cmd_bench() {
  build
  bash bench/compile.sh "$TRAINC" "$@"
}

# ---- fuzzing -----------------------------------------------------------------------------------
# The harnesses are fuzz/*.cpp but replay_main.cpp; each is built with clang, ASan, UBSan and libFuzzer in
# build-fuzz/. `./dev.sh fuzz --build` only builds; `./dev.sh fuzz --list` names the harnesses.
FUZZ_BUILD=build-fuzz

fuzz_harnesses() {
  local f
  for f in fuzz/*.cpp; do
    f=$(basename "$f" .cpp)
    if [ "$f" != replay_main ]; then echo "$f"; fi
  done
}

# Builds the harnesses named.
fuzz_build() {
  # clang brings libFuzzer's runtime (libclang-rt-14-dev).
  bash tools/install-deps.sh clang libclang-rt-14-dev
  if [ ! -f "$FUZZ_BUILD/build.ninja" ]; then
    # -O1 and line tables only: the sanitizer build of the whole compiler takes a fraction of -O2 -g's time.
    CC=clang CXX=clang++ meson setup "$FUZZ_BUILD" -Dfuzz=true -Db_sanitize=address,undefined -Db_lundef=false \
      -Dbuildtype=custom -Doptimization=1 -Ddebug=false -Dcpp_args=-gline-tables-only -Dcuda=disabled >/dev/null
  fi
  local targets=() h
  for h in "$@"; do targets+=("fuzz/$h"); done
  nice ninja -C "$FUZZ_BUILD" "${targets[@]}" fuzz/spec.dict
}

# Runs one harness for $1 seconds: new corpus entries go to out/fuzz/<h>/corpus (not into the tree),
# findings (crash-*, timeout-*, oom-*, leak-*) to out/fuzz/<h>/; slow-unit-* files there are only slow. Prints one table row; fails on a finding.
fuzz_one() {
  local seconds=$1 h=$2 dir="out/fuzz/$2" log timeout=10 pattern spec found=() dict=() rc=0 runs rate cov ft added
  mkdir -p "$dir/corpus" "$dir/seeds"
  log="$dir/fuzz.log"
  # Seeds from the tree (fuzz/seeds.txt): copied, because libFuzzer reads corpus folders only.
  while read -r name pattern; do
    if [ "$name" != "$h" ]; then continue; fi
    for spec in $pattern; do
      if [ -f "$spec" ]; then cp "$spec" "$dir/seeds/$(echo "$spec" | tr / _)"; fi
    done
  done < <(grep -v '^#' fuzz/seeds.txt)
  # Jsonnet evaluates with a 10 s deadline of its own (frontend/limits.h).
  if [ "$h" = jsonnet_frontend ]; then timeout=30; fi
  # The spec keys help the harnesses that read specs; the trainrt ones read other formats.
  case $h in
    yaml_frontend|jsonnet_frontend|compile) dict=(-dict="$FUZZ_BUILD/fuzz/spec.dict") ;;
  esac
  touch "$dir/.started"
  # TRAINC_FUZZ_SEED fixes libFuzzer's random seed (CI), so a run explores the same inputs each time.
  local seed=()
  if [ -n "${TRAINC_FUZZ_SEED:-}" ]; then seed=(-seed="$TRAINC_FUZZ_SEED"); fi
  nice "$FUZZ_BUILD/fuzz/$h" -max_total_time="$seconds" -timeout="$timeout" -rss_limit_mb=2048 \
    "${seed[@]}" "${dict[@]}" -artifact_prefix="$dir/" -print_final_stats=1 \
    "$dir/corpus" "$dir/seeds" "tests/fuzz/$h" </dev/null >"$log" 2>&1 || rc=$?
  mapfile -t found < <(find "$dir" -maxdepth 1 -type f -newer "$dir/.started" \
    \( -name 'crash-*' -o -name 'timeout-*' -o -name 'oom-*' -o -name 'leak-*' \) | sort)
  runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)
  rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -n 1)
  added=$(sed -n 's/^stat::new_units_added: *//p' "$log" | tail -n 1)
  cov=$(grep -o 'cov: [0-9]*' "$log" | tail -n 1 | cut -d' ' -f2)
  ft=$(grep -o 'ft: [0-9]*' "$log" | tail -n 1 | cut -d' ' -f2)
  printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$h" "${runs:-?}" "${rate:-?}" "${cov:-?}" "${ft:-?}" "${added:-?}" \
    "${#found[@]}" >>"$FUZZ_TABLE"
  if [ "${#found[@]}" -gt 0 ] || [ "$rc" -ne 0 ]; then
    {
      echo "dev.sh fuzz: $h found a problem (exit $rc; log: $log):"
      grep -m 3 -E '^(==[0-9]+==ERROR|SUMMARY|.*runtime error:|.*deadly signal|.*ERROR: libFuzzer)' "$log" | sed 's/^/    /'
      if [ "${#found[@]}" -gt 0 ]; then printf '    saved: %s\n' "${found[@]}"; fi
      echo "  reproduce: $FUZZ_BUILD/fuzz/$h FILE"
      echo "  minimize:  $FUZZ_BUILD/fuzz/$h -minimize_crash=1 -runs=10000 -exact_artifact_path=$dir/minimized FILE"
      echo "  then fix the bug and copy the minimized input to tests/fuzz/$h/regressions/ (the fuzz_replay suite replays it)"
    } >&2
    return 1
  fi
}

cmd_fuzz() {
  local seconds=60 harnesses=() h failed=0
  case ${1:-} in
    --list) fuzz_harnesses; return ;;
    --build)
      shift
      if [ $# -gt 0 ]; then harnesses=("$@"); else mapfile -t harnesses < <(fuzz_harnesses); fi
      fuzz_build "${harnesses[@]}"
      return ;;
  esac
  if [ $# -gt 0 ]; then seconds=$1; shift; fi
  case $seconds in
    ''|*[!0-9]*|0) echo "dev.sh fuzz: SECONDS must be a whole number above 0, not '$seconds'" >&2; return 2 ;;
  esac
  if [ $# -gt 0 ]; then harnesses=("$@"); else mapfile -t harnesses < <(fuzz_harnesses); fi
  for h in "${harnesses[@]}"; do
    if [ ! -f "fuzz/$h.cpp" ]; then echo "dev.sh fuzz: no harness fuzz/$h.cpp" >&2; return 2; fi
  done
  fuzz_build "${harnesses[@]}" || { echo "dev.sh fuzz: building the harnesses in $FUZZ_BUILD failed" >&2; return 2; }
  mkdir -p out/fuzz
  FUZZ_TABLE=$(mktemp out/fuzz/table.XXXXXX)
  printf 'harness\truns\texec/s\tcov\tfeatures\tnew inputs\tfindings\n' >"$FUZZ_TABLE"
  for h in "${harnesses[@]}"; do
    echo "dev.sh fuzz: $h for $seconds s" >&2
    fuzz_one "$seconds" "$h" || failed=$((failed + 1))
  done
  echo
  print_table <"$FUZZ_TABLE"
  rm -f "$FUZZ_TABLE"
  if [ "$failed" -gt 0 ]; then
    echo "dev.sh fuzz: $failed harness(es) found problems; see above" >&2
    return 1
  fi
}

# ---- data races ----------------------------------------------------------------------------------
# trainc built with ThreadSanitizer (gcc's libtsan2, -O1) in build-tsan/, then the calls that compile
# many specs in one process on several threads (driver.h's compile_many): check and compile of the
# YAML examples, check of every YAML error case, --skip-non-specs over the golden manifests, and diff
# against golden/. Fails on any ThreadSanitizer report. The Jsonnet servers do not run under
# ThreadSanitizer, so the Jsonnet specs are left out.
TSAN_BUILD=build-tsan
cmd_tsan() {
  bash tools/install-deps.sh libtsan2
  if [ ! -f "$TSAN_BUILD/build.ninja" ]; then
    meson setup "$TSAN_BUILD" -Db_sanitize=thread -Db_lundef=false -Dbuildtype=custom -Doptimization=1 \
      -Ddebug=false -Dcpp_args=-g1 -Dcuda=disabled >/dev/null
  fi
  nice ninja -C "$TSAN_BUILD" compiler/trainc
  local tsan="$TSAN_BUILD/compiler/trainc" work reports=0 name
  work=$(mktemp -d)
  local examples=(examples/*/spec.yaml) cases=(tests/errors/*/spec.yaml) manifests=(golden/*/k8s/*.yaml)
  # Each call: a name, then trainc's arguments; its exit code is the spec's business, not this one's.
  race_check() {
    name=$1
    shift
    TSAN_OPTIONS="halt_on_error=0" "$tsan" "$@" >/dev/null 2>"$work/$name.log" || true
    if grep -q 'WARNING: ThreadSanitizer' "$work/$name.log"; then
      echo "dev.sh tsan: $name: $(grep -c 'WARNING: ThreadSanitizer' "$work/$name.log") report(s):" >&2
      grep -A12 'WARNING: ThreadSanitizer' "$work/$name.log" | head -n 40 >&2
      reports=$((reports + 1))
    else
      echo "dev.sh tsan: $name: no data race reported"
    fi
  }
  race_check check-examples check "${examples[@]}"
  race_check compile-examples compile "${examples[@]}" -o "$work/out"
  race_check check-error-cases check "${cases[@]}"
  race_check skip-non-specs check --skip-non-specs "${manifests[@]}" "${examples[@]}"
  race_check diff-golden diff --against golden "${examples[@]}"
  rm -rf "$work"
  [ "$reports" -eq 0 ]
}

# ---- a fresh machine ------------------------------------------------------------------------------
# The README's two commands as a new user runs them: in a fresh Debian 12 root made by
# `debootstrap --variant=minbase bookworm` from the Debian mirror this machine's apt uses, with a
# clone of HEAD at /src/trainc and nothing beside it (no ../shared), entered with chroot, as root.
# Prints each command's time and result, and the tests the fresh root skipped. The root lives in
# build-fresh/root.XXXXXX; /proc, /sys, /dev, /dev/pts and a /dev/shm of its own are mounted into it
# and unmounted before it is removed with `rm -rf --one-file-system`; if anything is still mounted
# there, the root is left in place and the command says so. --keep leaves it (unmounted) to look at.
# Logs stay in build-fresh/. Uncommitted changes are not in the clone.
FRESH_DIR=build-fresh
fresh_root=""
fresh_mounts=()

# The Debian archive entries (`URI SUITE COMPONENT...`, one a line) apt uses here: bookworm and
# bookworm-*, from /etc/apt/sources.list and sources.list.d (one-line *.list and deb822 *.sources).
debian_sources() {
  local f
  for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
    [ -f "$f" ] || continue
    awk '$1 == "deb" { i = 2
           if ($2 ~ /^\[/) { while (i < NF && $i !~ /\]$/) i++; i++ }
           line = $i " " $(i + 1); for (j = i + 2; j <= NF; j++) line = line " " $j; print line }' "$f"
  done
  for f in /etc/apt/sources.list.d/*.sources; do
    [ -f "$f" ] || continue
    awk 'function flush() {
           if (types ~ /(^|[ \t])deb([ \t]|$)/ && enabled != "no") {
             n = split(uris, u, /[ \t]+/); m = split(suites, s, /[ \t]+/)
             for (i = 1; i <= n; i++) for (j = 1; j <= m; j++) if (u[i] != "" && s[j] != "") print u[i], s[j], comps }
           types = uris = suites = comps = ""; enabled = "yes" }
         BEGIN { enabled = "yes" }
         /^#/ || /^[ \t]+[^ \t]/ { next }
         /^[ \t]*$/ { flush(); next }
         { key = tolower($1); sub(/:$/, "", key); val = $0; sub(/^[^:]*:[ \t]*/, "", val)
           if (key == "types") types = val; else if (key == "uris") uris = val
           else if (key == "suites") suites = val; else if (key == "components") comps = val
           else if (key == "enabled") enabled = tolower(val) }
         END { flush() }' "$f"
  done | awk '$2 ~ /^bookworm(-[a-z]+)?$/ && !seen[$0]++'
}

# The mount points under the fresh root, deepest first.
fresh_mounted() {
  awk -v r="$fresh_root" '$5 == r || index($5, r "/") == 1 { print $5 }' /proc/self/mountinfo | sort -r
}

# Mounts for the chroot; each is recorded for fresh_cleanup, and made private so that nothing
# mounted under it reaches the host's tree.
fresh_mount() {
  local target=$fresh_root$1
  shift
  mount "$@" "$target"
  fresh_mounts+=("$target")
  mount --make-private "$target"
}

# On exit: stop what still runs inside the root, unmount what was mounted into it, and remove it
# unless something is still mounted there.
fresh_cleanup() {
  local rc=$? pid pids=() i left=()
  trap - EXIT INT TERM
  [ -n "$fresh_root" ] && [ -d "$fresh_root" ] || exit "$rc"
  # Processes whose root is the fresh root (a test's leftover server) would keep its mounts busy.
  for pid in /proc/[0-9]*; do
    if [ "$(readlink "$pid/root" 2>/dev/null)" = "$fresh_root" ]; then pids+=("${pid#/proc/}"); fi
  done
  if [ "${#pids[@]}" -gt 0 ]; then
    echo "dev.sh fresh-machine: stopping processes left in the root:" >&2
    ps -o pid=,args= -p "$(IFS=,; echo "${pids[*]}")" | sed 's/^ */  /' >&2 || true
    kill "${pids[@]}" 2>/dev/null || true
    sleep 2
    kill -9 "${pids[@]}" 2>/dev/null || true
  fi
  for ((i = ${#fresh_mounts[@]} - 1; i >= 0; i--)); do
    umount "${fresh_mounts[i]}" || echo "dev.sh fresh-machine: could not unmount ${fresh_mounts[i]}" >&2
  done
  mapfile -t left < <(fresh_mounted)
  if [ "${#left[@]}" -gt 0 ]; then
    echo "dev.sh fresh-machine: still mounted, so $fresh_root is NOT removed:" >&2
    printf '  %s\n' "${left[@]}" >&2
    echo "  unmount them (umount PATH), then: rm -rf --one-file-system $fresh_root" >&2
    exit 1
  fi
  if [ "${FRESH_KEEP:-0}" = 1 ]; then
    echo "dev.sh fresh-machine: kept the root (nothing mounted): $fresh_root" >&2
  else
    rm -rf --one-file-system "$fresh_root"
  fi
  exit "$rc"
}

# Runs a shell command in the fresh root's clone as root, with a login-like environment and nothing from ours.
in_fresh_root() {
  chroot "$fresh_root" /usr/bin/env -i HOME=/root LANG=C.UTF-8 TERM=dumb \
    PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    bash -c "cd /src/trainc && $1"
}

cmd_fresh_machine() {
  FRESH_KEEP=0
  case ${1:-} in
    --keep) FRESH_KEEP=1 ;;
    '') ;;
    *) echo "dev.sh fresh-machine: unknown argument '$1' (only --keep)" >&2; return 2 ;;
  esac
  if [ "$(id -u)" -ne 0 ]; then echo "dev.sh fresh-machine: needs root (debootstrap, mount, chroot)" >&2; return 2; fi
  local sources mirror rev dir start t_root t_examples t_test rc_examples=0 rc_test=0 result
  mapfile -t sources < <(debian_sources)
  mirror=$(printf '%s\n' "${sources[@]}" | awk '$2 == "bookworm" { print $1; exit }')
  if [ -z "$mirror" ]; then
    echo "dev.sh fresh-machine: no 'bookworm' suite in /etc/apt/sources.list or /etc/apt/sources.list.d/: which Debian mirror?" >&2
    return 2
  fi
  rev=$(git rev-parse HEAD)
  if [ -n "$(git status --porcelain --untracked-files=no)" ]; then
    echo "dev.sh fresh-machine: note: uncommitted changes are not in the clone (HEAD $(git rev-parse --short HEAD))" >&2
  fi
  bash tools/install-deps.sh debootstrap
  mkdir -p "$FRESH_DIR"
  dir=$(cd "$FRESH_DIR" && pwd -P)
  fresh_root=$(mktemp -d "$dir/root.XXXXXX")
  chmod 755 "$fresh_root"
  trap fresh_cleanup EXIT
  trap 'exit 130' INT TERM

  echo "dev.sh fresh-machine: debootstrap --variant=minbase bookworm $fresh_root $mirror" >&2
  start=$SECONDS
  mkdir -p "$dir/debs"  # debootstrap's downloads, kept for the next run
  if ! debootstrap --variant=minbase --cache-dir="$dir/debs" bookworm "$fresh_root" "$mirror" >"$dir/debootstrap.log" 2>&1; then
    echo "dev.sh fresh-machine: debootstrap failed; the end of $FRESH_DIR/debootstrap.log:" >&2
    tail -n 20 "$dir/debootstrap.log" >&2
    return 1
  fi
  printf 'deb %s\n' "${sources[@]}" >"$fresh_root/etc/apt/sources.list"
  # The network as this machine reaches it: its DNS servers, and the local CAs it trusts (a proxy's,
  # say), which the root's ca-certificates adds to its bundle when apt installs it (npm needs them).
  if [ -e /etc/resolv.conf ]; then cp -L /etc/resolv.conf "$fresh_root/etc/resolv.conf"; fi
  # debootstrap writes no /etc/hosts, which every installed Debian has (the installer's names
  # localhost and the machine's own name, 127.0.1.1): without it `localhost` does not resolve and
  # torchrun's --standalone rendezvous store cannot be reached, and without the machine's name its
  # workers, which look the store up by the agent's hostname, retry for ever.
  if [ ! -e "$fresh_root/etc/hosts" ]; then
    printf '127.0.0.1\tlocalhost\n127.0.1.1\t%s\n::1\tlocalhost ip6-localhost ip6-loopback\n' "$(hostname)" >"$fresh_root/etc/hosts"
  fi
  if [ -d /usr/local/share/ca-certificates ]; then
    mkdir -p "$fresh_root/usr/local/share/ca-certificates"
    cp -rL /usr/local/share/ca-certificates/. "$fresh_root/usr/local/share/ca-certificates/"
  fi
  git clone -q --no-hardlinks "$PWD" "$fresh_root/src/trainc"
  git -C "$fresh_root/src/trainc" checkout -q "$rev"
  git -C "$fresh_root/src/trainc" remote remove origin
  fresh_mount /proc -t proc proc
  fresh_mount /sys --bind /sys
  fresh_mount /dev --bind /dev
  fresh_mount /dev/pts --bind /dev/pts
  fresh_mount /dev/shm -t tmpfs -o mode=1777,nosuid,nodev tmpfs
  t_root=$((SECONDS - start))

  echo "dev.sh fresh-machine: ./dev.sh examples (log: $FRESH_DIR/examples.log)" >&2
  start=$SECONDS
  in_fresh_root './dev.sh examples' 2>&1 | tee "$dir/examples.log" || rc_examples=${PIPESTATUS[0]}
  t_examples=$((SECONDS - start))
  echo "dev.sh fresh-machine: ./dev.sh test (log: $FRESH_DIR/test.log)" >&2
  start=$SECONDS
  in_fresh_root './dev.sh test' 2>&1 | tee "$dir/test.log" || rc_test=${PIPESTATUS[0]}
  t_test=$((SECONDS - start))
  if [ -f "$fresh_root/src/trainc/build/meson-logs/testlog.txt" ]; then
    cp "$fresh_root/src/trainc/build/meson-logs/testlog.txt" "$dir/testlog.txt"
  fi

  echo
  echo "dev.sh fresh-machine: Debian 12 minbase root, clone of $(git rev-parse --short "$rev") with nothing beside it"
  {
    printf 'step\tseconds\tresult\n'
    printf 'debootstrap + clone\t%s\tok\n' "$t_root"
    result=passed; [ "$rc_examples" -eq 0 ] || result="FAILED (exit $rc_examples)"
    printf './dev.sh examples\t%s\t%s\n' "$t_examples" "$result"
    result=passed; [ "$rc_test" -eq 0 ] || result="FAILED (exit $rc_test)"
    printf './dev.sh test\t%s\t%s\n' "$t_test" "$result"
  } | print_table
  # meson test's totals, on one line.
  awk '/^(Ok|Expected Fail|Fail|Unexpected Pass|Skipped|Timeout): / { $1 = $1; printf "%s%s", sep, $0; sep = "  " }
       END { if (sep != "") print "" }' "$dir/test.log"
  if [ -f "$dir/testlog.txt" ]; then
    echo "skipped in the fresh root:"
    awk '/^test: / { name = $2 } /^ok [0-9]+ .*# *[Ss][Kk][Ii][Pp]/ { print "  " name ": " $0 }' "$dir/testlog.txt"
  fi
  [ "$rc_examples" -eq 0 ] && [ "$rc_test" -eq 0 ]
}

cmd_cluster() {
  local what=${1:-}
  shift || true
  case "$what" in
    up)
      build
      bash tools/install-cluster.sh
      local specs=("$@") plans=() spec name kueue=() out
      if [ "${#specs[@]}" -eq 0 ]; then
        for dir in examples/*/; do specs+=("$(primary_spec "${dir%/}")"); done
      fi
      mkdir -p out/cluster-plans
      for spec in "${specs[@]}"; do
        name=$(basename "$(dirname "$spec")")
        "$TRAINC" plan "$spec" --format json >"out/cluster-plans/$name.json"
        plans+=("out/cluster-plans/$name.json")
      done
      if [ "${#specs[@]}" -eq 1 ]; then
        # One spec: its output too, and Kueue with the configuration it asks for.
        rm -rf out/cluster-output
        "$TRAINC" compile "${specs[0]}" -o out/cluster-output >/dev/null
        out=$(ls -d out/cluster-output/*/)
        if [ -f "${out}addons/kueue-manager-config.yaml" ]; then kueue=(--kueue-config "${out}addons/kueue-manager-config.yaml"); fi
        echo "dev.sh: apply it with: PATH=\"$(bash tools/install-cluster.sh --prefix)/bin:\$PATH\" ${out}scripts/apply.sh --kubeconfig out/cluster/kubeconfig --addons-installed" >&2
      fi
      bash tests/cluster/cluster.sh up ${kueue[@]+"${kueue[@]}"} "${plans[@]}"
      ;;
    down) bash tests/cluster/cluster.sh down ;;
    *) echo "usage: ./dev.sh cluster up [SPEC...] | ./dev.sh cluster down" >&2; return 2 ;;
  esac
}

case ${1:-} in
  cluster) shift; cmd_cluster "$@" ;;
  examples|test|golden|bench|fuzz|tsan)
    cmd=$1; shift
    "cmd_$cmd" "$@" ;;
  fresh-machine) shift; cmd_fresh_machine "$@" ;;
  build) build ;;
  -h|--help|help) usage ;;
  *) usage >&2; exit 2 ;;
esac
