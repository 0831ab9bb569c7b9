#!/usr/bin/env python3
"""Prints the `regions:` rows of stdlib/prices.yaml for every region other than those the file
already holds, from Cyclenerd/google-cloud-pricing-cost-calculator at one commit.

Usage: tools/prices_regions.py PRICING_YML MACHINETYPEREGION_CSV COMMIT GENERATED >>stdlib/prices.yaml
  PRICING_YML            pricing.yml at COMMIT (git show COMMIT:pricing.yml)
  MACHINETYPEREGION_CSV  tools/machinetyperegion.csv at COMMIT
  GENERATED              its about.generated line

The machine types are those the file's us-central1 rows name (the catalog's machines; TPU types
included); a type is written for a region when machinetyperegion.csv offers it there and pricing.yml
gives it a non-zero `hour` there (`hour_spot` as spot, null when missing). Nothing is estimated.
"""
import csv
import sys

import yaml

pricing_path, csv_path, commit, generated = sys.argv[1:5]
prices = yaml.safe_load(open("stdlib/prices.yaml"))
have = set(prices["regions"])
types = [m["type"] for m in prices["regions"]["us-central1"]["machines"]]
offered = {}
with open(csv_path) as f:
    for row in csv.DictReader(f, delimiter=";"):
        offered.setdefault(row["ZONE"], set()).add(row["NAME"])
cost = yaml.safe_load(open(pricing_path))["compute"]["instance"]
source = (f"Cyclenerd/google-cloud-pricing-cost-calculator pricing.yml @ {commit} (about.generated {generated}; "
          "compute.instance.<type>.cost.<region>.hour / hour_spot); offered-in-region from "
          "tools/machinetyperegion.csv at the same commit; rows written by tools/prices_regions.py")


def num(v):
    return str(round(v, 6))  # 6 decimals, as the hand-written rows


for region in sorted(offered):
    if region in have:
        continue
    rows, missing = [], []
    for t in types:
        if t not in offered[region]:
            continue
        c = cost.get(t, {}).get("cost", {}).get(region)
        if not c or not c.get("hour"):
            missing.append(t)
            continue
        spot = f"{num(c['hour_spot'])}" if c.get("hour_spot") else "null"
        rows.append(f"      - {{type: {t}, onDemand: {num(c['hour'])}, spot: {spot}}}")
    if not rows:
        continue
    print(f"  {region}:")
    print(f'    source: "{source}"')
    print('    date: "2026-07-30"')
    print("    # Generated: the catalog's machine types offered here and priced by Cyclenerd. Not here: TPU")
    print("    # machine types and attachable GPUs (no per-region source read), types not offered here.")
    if missing:
        print(f"    # Offered but without a Cyclenerd price: {', '.join(missing)}.")
    print("    machines:")
    print("\n".join(rows))
