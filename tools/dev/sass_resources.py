#!/usr/bin/env python3
"""Per kernel of one or two CUDA binaries: registers and stack bytes, from the cubins.

A kernel change is kept only where the hot instances keep their registers (the occupancy their
launch bounds were measured at) and gain no stack; `ptxas -v` in the build log says so for the
whole build, mixed with every other target. This reads the built plugins instead: one binary lists
its kernels, two list the kernels whose registers or stack differ (a kernel in one binary only is
listed with "-" on the other side), so a candidate's build can be checked against the head's
before any device time is spent on it (the forty-second session compared every quant-ggml unit
instance after a staging change this way).

usage: tools/dev/sass_resources.py BINARY [OTHER] [--filter REGEX]
  e.g. tools/dev/sass_resources.py head/quant-ggml.so build/plugins/quant-ggml.so --filter gemv_units
Prints "reg stack [-> reg stack]  kernel" per kernel, then a summary line.
Needs cuobjdump on PATH (the CUDA toolkit's, or the nvidia-cuda-cuobjdump wheel from PyPI).
Standard library only.
"""
import argparse
import re
import sys

from cuobjdump_run import cuobjdump

FUNCTION = re.compile(r"Function (\S+):")
RESOURCES = re.compile(r"REG:(\d+) STACK:(\d+)")


def resources(binary):
    found, name = {}, None
    for line in cuobjdump("sass_resources", "-res-usage", binary).splitlines():
        m = FUNCTION.search(line)
        if m:
            name = m.group(1)
            continue
        m = RESOURCES.search(line)
        if m and name:
            found[name] = (int(m.group(1)), int(m.group(2)))
            name = None
    if not found:
        sys.exit(f"sass_resources: no kernels found in {binary} (expected a binary with device code)")
    return found


def text(r):
    return "-" if r is None else f"{r[0]:3d} {r[1]:3d}"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("binary")
    ap.add_argument("other", nargs="?")
    ap.add_argument("--filter", default="", help="only kernels whose mangled name matches this regex")
    a = ap.parse_args()
    keep = re.compile(a.filter)
    first = {k: v for k, v in resources(a.binary).items() if keep.search(k)}
    if a.other is None:
        for k in sorted(first):
            print(f"{text(first[k])}  {k}")
        print(f"{len(first)} kernels; most registers {max((v[0] for v in first.values()), default=0)}, "
              f"most stack {max((v[1] for v in first.values()), default=0)} bytes")
        return
    second = {k: v for k, v in resources(a.other).items() if keep.search(k)}
    changed = 0
    for k in sorted(set(first) | set(second)):
        if first.get(k) != second.get(k):
            changed += 1
            print(f"{text(first.get(k))} -> {text(second.get(k))}  {k}")
    grew = [k for k in second if k in first and second[k][1] > first[k][1]]
    print(f"{changed} of {len(set(first) | set(second))} kernels differ; stack grew in {len(grew)}")


if __name__ == "__main__":
    main()
