"""Seed 000's training: XGBoost on the Dask cluster at DASK_SCHEDULER_ADDRESS, reading the Parquet
table datagen.py wrote and saving the model to --model. On GPU workers (dask cuda worker) the data
is read with dask_cudf and trained with device=cuda; elsewhere on the CPU.
"""
import argparse
import os

import dask.dataframe as dd
import xgboost as xgb
from dask.distributed import Client


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--data", required=True)
    p.add_argument("--model", required=True)
    p.add_argument("--rounds", type=int, default=500)
    p.add_argument("--max-depth", type=int, default=8)
    args = p.parse_args()
    with Client(os.environ["DASK_SCHEDULER_ADDRESS"], timeout=120) as client:
        try:
            import dask_cudf  # RAPIDS images: the table lives in GPU memory
            table, device = dask_cudf.read_parquet(args.data), "cuda"
        except ImportError:
            table, device = dd.read_parquet(args.data), "cpu"
        x, y = table.drop(columns=["label"]), table["label"]
        dtrain = xgb.dask.DaskQuantileDMatrix(client, x, y)
        params = {"objective": "binary:logistic", "eval_metric": "logloss", "tree_method": "hist",
                  "device": device, "max_depth": args.max_depth}
        out = xgb.dask.train(client, params, dtrain, num_boost_round=args.rounds, evals=[(dtrain, "train")])
        print(f"train logloss after {args.rounds} rounds: {out['history']['train']['logloss'][-1]:.5f}", flush=True)
        os.makedirs(os.path.dirname(args.model) or ".", exist_ok=True)
        out["booster"].save_model(args.model + ".json")
        print(f"saved {args.model}.json", flush=True)


if __name__ == "__main__":
    main()
