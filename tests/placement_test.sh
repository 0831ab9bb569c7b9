#!/usr/bin/env bash
# The placement property test can fail (TAP). tests/placement_property.py passes the plans its own
# model makes and catches each of their mutations (--self-check); and with a planted error, one core
# more in its DaemonSet reserve (PLACEMENT_PLANT_RESERVE_CPU), it fails against trainc, naming the
# room and the whole-node requests it expected, and on the examples; and a compiled step that
# requests only its GPUs (BestEffort) fails its requests property.
# Usage: tests/placement_test.sh TRAINC
set -uo pipefail
# shellcheck source=tests/tap.sh
. "$(dirname "${BASH_SOURCE[0]}")/tap.sh"
tap_init "$@"
rc=0  # exit code of the last run() (tests/tap.sh)

t "the judge passes plans made from its own model and catches their mutations" \
  python3 tests/placement_property.py --self-check "$TRAINC" 40

planted() {
  run env PLACEMENT_PLANT_RESERVE_CPU=1 python3 tests/placement_property.py "$TRAINC" 20
  [ "$rc" -eq 1 ] || { echo "exit $rc with a planted error"; tail -n 5 "$TMP/stdout" "$TMP/stderr"; return 1; }
  grep -q '^# pool [a-z0-9-]*: room [0-9.]* cores' "$TMP/stdout" || { echo "no pool's room was found wrong:"; head -n 40 "$TMP/stdout"; return 1; }
  grep -q "trainc's containers ask [0-9.]* cores, expected" "$TMP/stdout" || { echo "no whole-node pod was found wrong:"; head -n 40 "$TMP/stdout"; return 1; }
  grep -q '^not ok [0-9]* - example xgb-dask-a4:' "$TMP/stdout" || { echo "the example xgb-dask-a4 passed:"; grep example "$TMP/stdout"; return 1; }
}
t "a DaemonSet reserve one core off in the judge fails on the room, the whole-node pods and the examples" planted

# An output whose step asks only for its GPUs (as trainc's did before steps got default requests)
# must fail the requests property.
besteffort() {
  run "$TRAINC" compile examples/mnist/spec.yaml -o "$TMP/out"
  [ "$rc" -eq 0 ] || { cat "$TMP/stderr"; return 1; }
  # mnist's train step runs on 4 nodes: a JobSet whose replicatedJob "node" holds the pod template.
  python3 - "$TMP/out/mnist/k8s/train-jobset.yaml" <<'PY' || return 1
import sys, yaml
path = sys.argv[1]
docs = list(yaml.safe_load_all(open(path)))
for d in docs:
    for c in d["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]["containers"]:
        for part in ("requests", "limits"):
            for k in ("cpu", "memory"):
                (c.get("resources") or {}).get(part, {}).pop(k, None)
yaml.safe_dump_all(docs, open(path, "w"))
PY
  run python3 tests/placement_property.py - --requests-of "$TMP/out"
  [ "$rc" -eq 1 ] || { echo "exit $rc on a step that requests only GPUs"; cat "$TMP/stdout"; return 1; }
  grep -q '^# JobSet mnist-train-[0-9a-f]\{10\}/node container train: requests no cpu and no memory' "$TMP/stdout" ||
    { echo "the GPU-only step was not named:"; cat "$TMP/stdout"; return 1; }
}
t "a step whose container requests only GPUs fails the requests property" besteffort

tap_done
