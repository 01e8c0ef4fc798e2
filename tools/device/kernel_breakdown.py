#!/usr/bin/env python3
"""Per-kernel time of decode steps, from an Nsight Compute CSV.

Usage (device machine):
  ncu --clock-control none --profile-from-start off --metrics gpu__time_duration.sum --csv \
      bench --model M --depths 128 --profile-steps 4 > ncu.csv
  python3 tools/device/kernel_breakdown.py ncu.csv 4 [--by-grid]

Prints, per kernel (template arguments dropped), launches and microseconds per decode step and the
share of the step's summed kernel time. The sum is GPU busy time only: the wall time of a step
(bench's decode figure) minus this sum is launch gaps and host work.
"""
import csv
import re
import sys
from collections import defaultdict

UNIT = {"nsecond": 1e-3, "usecond": 1.0, "msecond": 1e3, "second": 1e6}


def short(name: str) -> str:
    name = re.sub(r"\(.*$", "", name)  # drop the argument list
    depth, out = 0, []
    for c in name:  # drop template arguments
        if c == "<":
            depth += 1
        elif c == ">":
            depth -= 1
        elif depth == 0:
            out.append(c)
    name = "".join(out)
    return name.split("::")[-1].strip() or name


def main() -> int:
    path, steps = sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 1
    by_grid = "--by-grid" in sys.argv  # one line per (kernel, grid, block): tells the GEMV shapes apart
    with open(path, newline="") as f:
        lines = [l for l in f if l.startswith('"')]  # skip ncu's ==PROF== lines
    per = defaultdict(lambda: [0, 0.0])
    for row in csv.DictReader(lines):
        if row.get("Metric Name") != "gpu__time_duration.sum":
            continue
        us = float(row["Metric Value"].replace(",", "")) * UNIT.get(row.get("Metric Unit", "nsecond"), 1e-3)
        key = short(row["Kernel Name"])
        if by_grid:
            key += " " + row.get("Grid Size", "") + "x" + row.get("Block Size", "")
        k = per[key]
        k[0] += 1
        k[1] += us
    total = sum(v[1] for v in per.values())
    if total == 0:
        print("no kernels with gpu__time_duration.sum in", path)
        return 1
    print(f"{'kernel':56s} {'launches/step':>13s} {'us/step':>9s} {'share':>6s}")
    for name, (n, us) in sorted(per.items(), key=lambda kv: -kv[1][1]):
        print(f"{name[:56]:56s} {n / steps:13.1f} {us / steps:9.1f} {100 * us / total:5.1f}%")
    launches = sum(v[0] for v in per.values())
    print(f"{'total':56s} {launches / steps:13.1f} {total / steps:9.1f} 100.0%")
    return 0


if __name__ == "__main__":
    sys.exit(main())
