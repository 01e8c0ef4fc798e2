#!/usr/bin/env python3
"""Which kernels of one CUDA source compile to the same PTX as at another revision.

When the GPU is out of reach, this shows which kernels a refactor left unchanged: an entry whose PTX
(instructions as a multiset, labels and symbol names normalized) equals the old revision's runs
what was tested there. Entries are matched by name; --rename REGEX=REPLACEMENT rewrites the old
revision's names first (re.sub), for kernels whose template arguments changed.

usage: tools/dev/ptx_diff.py BUILD_DIR TARGET SOURCE REV [--rename OLD=NEW ...]
  e.g. tools/dev/ptx_diff.py build plugins/quant-ggml.so ggml_type_ops.cu 617bf15
It compiles SOURCE with TARGET's nvcc command twice: from the working tree and from a temporary
`git worktree` at REV. Standard library only.
"""
import os
import re
import shlex
import subprocess
import sys
import tempfile


def nvcc_ptx(build, target, source, root, out):
    cmds = subprocess.run(["ninja", "-C", build, "-t", "commands", target], capture_output=True, text=True,
                          check=True).stdout.splitlines()
    pattern = re.compile(r"/" + re.escape(source) + r"( |$)")
    cmd = next(c for c in cmds if "nvcc" in c and pattern.search(c))
    args = shlex.split(cmd)
    here = os.path.abspath(".")
    fixed, skip = [], 0
    for i, a in enumerate(args):
        if skip:
            skip -= 1
            continue
        if a in ("-MT", "-MF", "-o"):
            skip = 1
            continue
        if a in ("-c", "-MD"):
            continue
        if a.startswith("--generate-code="):
            a = "-arch=sm_90"
        fixed.append(a.replace(here, root))
    subprocess.run(fixed + ["-ptx", "-o", out], check=True, cwd=os.path.join(root, build))


def entries(path):
    out = {}
    for e in re.split(r"\.entry ", open(path).read())[1:]:
        body = e[e.index("{"):]
        body = re.sub(r"_Z\w+", "SYM", body)
        body = re.sub(r"\$L__BB\d+_", "$L__BB_", body)
        lines = [l.strip() for l in body.splitlines() if l.strip() and not l.strip().startswith("//")]
        lines = [l for l in lines if l not in (".visible", ".weak")]
        # Anonymous namespaces carry a hash of the file's path: the worktree's differs.
        out[re.sub(r"_GLOBAL__N__[0-9a-f]+_", "_GLOBAL__N_", e.split("(")[0])] = sorted(lines)
    return out


def main():
    if len(sys.argv) < 5:
        sys.exit(__doc__)
    build, target, source, rev = sys.argv[1:5]
    rest = sys.argv[5:]
    renames = [rest[i + 1].split("=", 1) for i in range(len(rest) - 1) if rest[i] == "--rename"]
    if any(len(r) != 2 for r in renames):
        sys.exit("--rename: expected OLD=NEW")
    tmp = tempfile.mkdtemp()
    wt = os.path.join(tmp, "wt")
    subprocess.run(["git", "worktree", "add", "-q", "--detach", wt, rev], check=True)
    try:
        nvcc_ptx(build, target, source, os.path.abspath("."), os.path.join(tmp, "new.ptx"))
        os.makedirs(os.path.join(wt, build), exist_ok=True)
        nvcc_ptx(build, target, source, wt, os.path.join(tmp, "old.ptx"))
    finally:
        subprocess.run(["git", "worktree", "remove", "--force", wt])
    old, new = entries(os.path.join(tmp, "old.ptx")), entries(os.path.join(tmp, "new.ptx"))

    def key(name):
        for a, b in renames:
            name = re.sub(a, b, name)
        return name

    oldk = {key(k): v for k, v in old.items()}
    same = 0
    for k, v in oldk.items():
        if k not in new:
            print("only at %s: %s" % (rev, k))
        elif new[k] == v:
            same += 1
        else:
            print("differs: %s" % k)
    for k in sorted(set(new) - set(oldk)):
        print("new: %s" % k)
    print("%d of %d entries at %s compile to the same PTX now" % (same, len(old), rev))


if __name__ == "__main__":
    main()
