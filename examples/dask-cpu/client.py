"""A Dask client step: sums the squares of 0..n-1 on the cluster at DASK_SCHEDULER_ADDRESS and
checks the result against the closed form, so a run that did not really compute fails."""
import argparse
import os

import dask.array as da
from dask.distributed import Client


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=1_000_000)
    parser.add_argument("--workers", type=int, default=1)
    args = parser.parse_args()
    with Client(os.environ["DASK_SCHEDULER_ADDRESS"], timeout=60) as client:
        client.wait_for_workers(args.workers, timeout=120)
        workers = client.scheduler_info()["workers"]
        x = da.arange(args.n, chunks=args.n // 8 or 1, dtype="int64")
        total = int((x * x).sum().compute())
        expected = (args.n - 1) * args.n * (2 * args.n - 1) // 6
        names = sorted(w.get("name", "") for w in workers.values())
        print(f"sum of squares below {args.n} = {total} on {len(workers)} workers {names}")
        if total != expected:
            print(f"wrong: expected {expected}")
            return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
