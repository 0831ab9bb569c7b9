"""Summarises the generated dataset with the Dask cluster (the client step of dask-trainrt.yaml)."""
import dask.dataframe as dd

print(dd.read_parquet("/data/synthetic").describe().compute())
