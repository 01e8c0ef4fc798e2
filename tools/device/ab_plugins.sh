#!/usr/bin/env bash
# Runs on the device machine from the repo root, after bench_suite.sh wrote the spec-shaped models
# into /dev/shm/wo: A/B of plugin directories (arguments, under .device-run/) on one machine, two
# rounds alternating, so that machine-to-machine differences cancel. Prints the prefill (tok/s)
# and decode (tok/s per depth) figures of each run on one line.
#   PRESETS="..." ARGS="--prompts 512 --depths 0,2048 --n-decode 128 --reps 1" ENVS="X=1" \
#     bash tools/device/ab_plugins.sh plugins-base plugins
set -uo pipefail
D=$PWD/.device-run
export LD_LIBRARY_PATH=$D/lib:/usr/local/cuda/lib64
M=/dev/shm/wo
for p in ${PRESETS:-qwen2.5-0.5b-q4_k_m phi-3-mini-4k-q4_k_m gpt-oss-20b-mxfp4}; do
  for round in 1 2; do
    for pd in "$@"; do
      out=$(env ${ENVS:-} "$D"/bin/bench --model $M/$p.gguf --plugin-dir "$D/$pd" \
        ${ARGS:---prompts 512 --depths 0,2048 --n-decode 128 --reps 1} 2>&1)
      pp=$(echo "$out" | grep -E "^[0-9]+ +[0-9.]+ +[0-9]+$" | awk '{printf "pp%s %s  ", $1, $3}')
      tg=$(echo "$out" | grep -E "^[0-9]+ +[0-9.]+ +[0-9.]+ +[0-9.]+ +[0-9]+%" | awk '{printf "d%s %s  ", $1, $2}')
      echo "$p r$round $pd: $pp$tg"
    done
  done
done
