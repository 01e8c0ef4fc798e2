#!/usr/bin/env bash
# Runs on the device machine from the repo root, after bench_suite.sh wrote the spec-shaped models
# into /dev/shm/wo: A/B runs on one machine, two rounds alternating so that machine-to-machine
# differences cancel. Each argument is one run: a plugin directory under .device-run/, then any
# environment settings. One line of prefill and decode figures (tok/s) per run.
#   bash tools/device/ab.sh plugins-base plugins                       # two builds
#   bash tools/device/ab.sh plugins "plugins WORKER_ATTN_HEAD_PARTS=2"  # one build, two settings
#   PRESETS="..." ARGS="--prompts 512 --depths 0,2048 --n-decode 128 --reps 1" bash tools/device/ab.sh ...
set -uo pipefail
D=$PWD/.device-run
export LD_LIBRARY_PATH=$D/lib:/usr/local/cuda/lib64
M=/dev/shm/wo
for p in ${PRESETS:-qwen2.5-0.5b-q4_k_m phi-3-mini-4k-q4_k_m gpt-oss-20b-mxfp4}; do
  for round in 1 2; do
    for spec in "$@"; do
      read -r pd settings <<<"$spec"
      # shellcheck disable=SC2086 # settings are separate words
      out=$(env ${settings:-} "$D"/bin/bench --model $M/$p.gguf --plugin-dir "$D/$pd" \
        ${ARGS:---prompts 512 --depths 0,2048 --n-decode 128 --reps 1} 2>&1)
      pp=$(echo "$out" | grep -E "^[0-9]+ +[0-9.]+ +[0-9]+$" | awk '{printf "pp%s %s  ", $1, $3}')
      tg=$(echo "$out" | grep -E "^[0-9]+ +[0-9.]+ +[0-9.]+ +[0-9.]+ +[0-9]+%" | awk '{printf "d%s %s  ", $1, $2}')
      echo "$p r$round [$spec]: $pp$tg"
    done
  done
done
