"""Seed 000's data generation: a synthetic binary classification table, generated in parallel by
the Dask cluster at DASK_SCHEDULER_ADDRESS and written as Parquet to --out (the GCS bucket, mounted
on every pod). Each partition is generated on a worker from its own seed, so the table is the
same whatever the number of workers.
"""
import argparse
import os

import dask
import dask.dataframe as dd
import numpy as np
import pandas as pd
from dask.distributed import Client


def partition(seed: int, rows: int, features: int, informative: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((rows, features), dtype=np.float32)
    # The label depends on the first `informative` columns through a fixed random hyperplane.
    w = np.random.default_rng(0).standard_normal(informative).astype(np.float32)
    logits = x[:, :informative] @ w + 0.1 * rng.standard_normal(rows, dtype=np.float32)
    df = pd.DataFrame(x, columns=[f"f{i}" for i in range(features)])
    df["label"] = (logits > 0).astype(np.int8)
    return df


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--out", required=True, help="folder for the Parquet files")
    p.add_argument("--rows", type=int, default=100_000_000)
    p.add_argument("--features", type=int, default=100)
    p.add_argument("--informative", type=int, default=10)
    p.add_argument("--partitions", type=int, default=256)
    args = p.parse_args()
    with Client(os.environ["DASK_SCHEDULER_ADDRESS"], timeout=120):
        per = args.rows // args.partitions
        meta = partition(0, 0, args.features, args.informative)
        parts = [dask.delayed(partition)(i + 1, per, args.features, args.informative) for i in range(args.partitions)]
        table = dd.from_delayed(parts, meta=meta)
        table.to_parquet(args.out, write_index=False, overwrite=True)
        print(f"wrote {per * args.partitions} rows x {args.features} features to {args.out}", flush=True)


if __name__ == "__main__":
    main()
