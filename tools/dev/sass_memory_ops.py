#!/usr/bin/env python3
"""Per kernel of a CUDA binary: its generic and local memory instructions, from the SASS.

The hot kernels keep weights, activations and partial dots in shared memory (LDS/STS) and read
global memory through LDG/LDGSTS. A generic load or store (LD/ST) means the compiler lost a
pointer's address space (the thirty-second session found 54 per Q6_K unit instance: a shared-memory
pointer rebuilt from an integer); a local one (LDL/STL) means spills or an array indexed at run
time. Either costs issue slots and latency in an inner loop. Listing them per instance after a
change to a kernel's address arithmetic is cheap; `ptxas -v` reports spills but not generic loads.

usage: tools/dev/sass_memory_ops.py BINARY [--filter REGEX] [--all]
  e.g. tools/dev/sass_memory_ops.py build/plugins/quant-ggml.so --filter gemv_units
Prints one line per kernel with generic or local memory instructions (--all: every kernel):
  generic  local  instr  kernel   (instr: the kernel's instruction count)
Needs cuobjdump on PATH (the CUDA toolkit's, or the nvidia-cuda-cuobjdump wheel from PyPI).
Standard library only.
"""
import argparse
import re
import sys

from cuobjdump_run import cuobjdump

FUNCTION = re.compile(r"^\s*Function : (\S+)")
INSTRUCTION = re.compile(r"^\s*/\*[0-9a-f]{4,}\*/\s+(?:@!?U?P[0-9T]\s+)?([A-Z][A-Z0-9_]*)(\.[A-Z0-9_.]+)?")
GENERIC = {"LD", "ST", "ATOM", "RED"}  # without the G/S/L letter: generic addressing
LOCAL = {"LDL", "STL"}


def count(sass):
    kernels = []
    for line in sass.splitlines():
        m = FUNCTION.match(line)
        if m:
            kernels.append([m.group(1), 0, 0, 0])
            continue
        m = INSTRUCTION.match(line)
        if m and kernels:
            op = m.group(1)
            kernels[-1][3] += 1
            if op in GENERIC:
                kernels[-1][1] += 1
            elif op in LOCAL:
                kernels[-1][2] += 1
    return kernels


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("binary")
    ap.add_argument("--filter", default="", help="only kernels whose mangled name matches this regex")
    ap.add_argument("--all", action="store_true", help="also the kernels with neither kind")
    a = ap.parse_args()
    pattern = re.compile(a.filter)
    kernels = [k for k in count(cuobjdump("sass_memory_ops", "-sass", a.binary)) if pattern.search(k[0])]
    if not kernels:
        sys.exit(f"sass_memory_ops: no kernel of {a.binary} matches '{a.filter}'")
    print(f"{'generic':>7} {'local':>6} {'instr':>6}  kernel")
    for name, generic, local, n in kernels:
        if a.all or generic or local:
            print(f"{generic:7d} {local:6d} {n:6d}  {name}")


if __name__ == "__main__":
    main()
