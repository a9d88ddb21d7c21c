#!/usr/bin/env python3
"""Top kernels by duration from `ncu --csv --metrics gpu__time_duration.sum` output (stdin).

Usage on the GPU machine:
  ncu --csv --metrics gpu__time_duration.sum --print-units base CMD | perf/ncu_top.py [N]
Prints, per kernel name, launches, total and max microseconds, sorted by total.
"""
import csv
import re
import sys

n = int(sys.argv[1]) if len(sys.argv) > 1 else 20
rows = [l for l in sys.stdin if l.startswith('"')]
agg = {}
for r in csv.DictReader(rows):
    if r.get("Metric Name") != "gpu__time_duration.sum":
        continue
    name = r["Kernel Name"]
    name = re.sub(r"\s+", " ", name)
    us = float(r["Metric Value"].replace(",", "")) / 1e3
    a = agg.setdefault(name, [0, 0.0, 0.0])
    a[0] += 1
    a[1] += us
    a[2] = max(a[2], us)
tot = sum(a[1] for a in agg.values())
print(f"total {tot:.1f} us over {sum(a[0] for a in agg.values())} launches")
for name, (k, t, m) in sorted(agg.items(), key=lambda x: -x[1][1])[:n]:
    print(f"{t:10.1f} us {k:5d}x max {m:9.1f}  {name[:260]}")
