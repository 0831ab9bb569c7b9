#!/usr/bin/env bash
# The placement property test can fail (TAP). tests/placement_property.py passes the plans its own
# model makes and catches each of their mutations (--self-check); and with a planted error, one core
# more in its DaemonSet reserve (PLACEMENT_PLANT_RESERVE_CPU), it fails against trainc, naming the
# room and the whole-node requests it expected, and on the examples.
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

tap_done
