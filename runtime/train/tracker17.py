#!/usr/bin/python3
"""XGBoost 1.7's tracker, for `trainrt train` ranks built against XGBoost 1.7.

XGBoost 1.7 has no tracker in its C library: the collective is formed by the Python RabitTracker
from Debian's python3-xgboost (run with /usr/bin/python3). Workers are ordered by task id, which
trainrt sets to its rank, so the tracker's rank assignment matches --rank. XGBoost 2.1+ builds do
not need this script: rank 0 serves the tracker itself (`trainrt train --tracker-serve PORT`).

    /usr/bin/python3 runtime/train/tracker17.py --world-size 2 --port 9091 &
    trainrt train --rank 0 --world-size 2 --tracker 127.0.0.1:9091 ... &
    trainrt train --rank 1 --world-size 2 --tracker 127.0.0.1:9091 ...

With --port 0 the system picks a free port; --port-file PATH receives it once the tracker listens.
Exits 0 when every rank has finished, 4 when --timeout seconds pass first.
"""
import argparse
import os
import sys
import time

from xgboost.tracker import RabitTracker


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--world-size", type=int, required=True, help="number of ranks")
    parser.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    parser.add_argument("--port", type=int, default=9091, help="port to listen on (0: any free port)")
    parser.add_argument("--port-file", help="write the port here (atomically) once listening")
    parser.add_argument("--timeout", type=float, default=0, help="give up after this many seconds (0: never)")
    args = parser.parse_args()

    tracker = RabitTracker(host_ip=args.host, n_workers=args.world_size, port=args.port, sortby="task")
    print(f"tracker17: listening on {args.host}:{tracker.port} for {args.world_size} ranks",
          file=sys.stderr, flush=True)
    if args.port_file:
        tmp = args.port_file + ".tmp"
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(f"{tracker.port}\n")
        os.replace(tmp, args.port_file)
    tracker.start(args.world_size)
    start = time.monotonic()
    while tracker.alive():
        tracker.thread.join(0.5)
        if args.timeout and time.monotonic() - start > args.timeout:
            print(f"tracker17: timed out after {args.timeout:g} s", file=sys.stderr, flush=True)
            return 4
    return 0


if __name__ == "__main__":
    sys.exit(main())
