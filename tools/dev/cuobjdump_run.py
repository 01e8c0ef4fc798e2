"""cuobjdump for the tools/dev scripts: found on PATH, run on one binary, its output or a clear exit.

Needs cuobjdump on PATH (the CUDA toolkit's, or the nvidia-cuda-cuobjdump wheel from PyPI).
Standard library only.
"""
import shutil
import subprocess
import sys


def cuobjdump(prog, flag, binary):
    """The stdout of `cuobjdump FLAG BINARY`; exits naming `prog` where it cannot run."""
    tool = shutil.which("cuobjdump")
    if not tool:
        sys.exit(f"{prog}: cuobjdump is not on PATH (CUDA toolkit, or pip download "
                 "nvidia-cuda-cuobjdump and unpack its bin/)")
    run = subprocess.run([tool, flag, binary], capture_output=True, text=True)
    if run.returncode != 0:
        sys.exit(f"{prog}: cuobjdump {flag} {binary} failed: {run.stderr.strip()}")
    return run.stdout
