#!/usr/bin/env bash
# Runs on the device machine from the repo root, after bench_suite.sh wrote the spec-shaped models
# into /dev/shm/wo: per-kernel time of two decode steps at a chosen context depth (Nsight Compute,
# kernels serialized, so small kernels read longer than in a graph replay; compare like with like).
#   PRESETS="phi-3-mini-4k-q4_k_m ..." DEPTHS="0 2048" TOP=16 bash tools/device/profile_step.sh
# PREFILL=512: instead, per-kernel time of one prefill of that many tokens.
set -uo pipefail
D=$PWD/.device-run
export LD_LIBRARY_PATH=$D/lib:/usr/local/cuda/lib64
M=/dev/shm/wo
for p in ${PRESETS:-qwen2.5-0.5b-q4_k_m phi-3-mini-4k-q4_k_m gpt-oss-20b-mxfp4}; do
  if [ -n "${PREFILL:-}" ]; then
    echo "=== $p prefill $PREFILL"
    ncu --clock-control none --cache-control none --profile-from-start off --metrics gpu__time_duration.sum --csv \
      "$D"/bin/bench --model $M/$p.gguf --plugin-dir "$D"/plugins --prompts "$PREFILL" --depths 0 \
      --profile-prefill "$PREFILL" >/tmp/ncu-$p-pp.csv 2>/dev/null
    python3 "$D"/kernel_breakdown.py /tmp/ncu-$p-pp.csv 1 --by-grid >/tmp/kb.txt
    head -"${TOP:-16}" /tmp/kb.txt
    continue
  fi
  for dep in ${DEPTHS:-0 2048}; do
    echo "=== $p depth $dep"
    ncu --clock-control none --cache-control none --profile-from-start off --metrics gpu__time_duration.sum --csv \
      "$D"/bin/bench --model $M/$p.gguf --plugin-dir "$D"/plugins --depths "$dep" --profile-steps 2 \
      >/tmp/ncu-$p-$dep.csv 2>/dev/null
    python3 "$D"/kernel_breakdown.py /tmp/ncu-$p-$dep.csv 2 --by-grid >/tmp/kb.txt
    head -"${TOP:-16}" /tmp/kb.txt
  done
done
