#!/usr/bin/env bash
# Runs on the device machine from the repo root (after gpu_suite.sh staged /tmp/wo): writes the
# three spec-shaped models with gguf-synth (vocabularies from the fixture models, so text prompts
# work) into /dev/shm, benchmarks each, optionally (PROFILE=1) breaks a decode step down per kernel,
# (TIMELINE=1) prints the kernel timeline of decode steps, then (SERVE_OSS=1) serves the gpt-oss shape over HTTP.
set -uo pipefail
D=$PWD/.device-run
export LD_LIBRARY_PATH=$D/lib:/usr/local/cuda/lib64
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT" # the device tool returns at most 8 files: everything goes to bench.txt and kernels.txt
M=/dev/shm/wo
mkdir -p $M
# Vocabularies for the synthetic models: the repo's compressed tokenizer assets.
T=/tmp/wo/tok
[ -d $T/tokenizers ] || { mkdir -p $T && tar -xJf tests/fixtures/tokenizers.tar.xz -C $T; }
synth() { # preset tokenizer-source
  [ -f $M/$1.gguf ] || "$D"/bin/gguf-synth --preset "$1" --out $M/$1.gguf --threads 16 --seed 1 \
    --tokenizer-from "$2" --plugin-dir "$D"/plugins 2>&1 | grep -v '^{"ts"'
}
PRESETS=${PRESETS:-qwen2.5-0.5b-q4_k_m phi-3-mini-4k-q4_k_m gpt-oss-20b-mxfp4}
case " $PRESETS " in *" qwen2.5-0.5b-q4_k_m "*) synth qwen2.5-0.5b-q4_k_m $T/tokenizers/qwen2-tiny-vocab.gguf;; esac
case " $PRESETS " in *" phi-3-mini-4k-q4_k_m "*) synth phi-3-mini-4k-q4_k_m tests/fixtures/models/phi3-tiny-Q4_K_M.gguf;; esac
case " $PRESETS " in *" gpt-oss-20b-mxfp4 "*) synth gpt-oss-20b-mxfp4 $T/tokenizers/gpt-oss-tiny-vocab.gguf;; esac
for p in $PRESETS; do
  echo "=== bench $p"
  "$D"/bin/bench --model $M/$p.gguf --plugin-dir "$D"/plugins ${BENCH_ARGS:-} 2>&1 | grep -v '^{"ts"' | tee -a $OUT/bench.txt
done
# PROFILE=1: per-kernel time of two decode steps at depth 0 for each shape (Nsight Compute; ~40 s each).
if [ -n "${PROFILE:-}" ]; then
  for p in $PRESETS; do
    echo "=== per-kernel decode step $p"
    ncu --clock-control none --cache-control none --profile-from-start off --metrics gpu__time_duration.sum --csv \
      "$D"/bin/bench --model $M/$p.gguf --plugin-dir "$D"/plugins --depths 0 --profile-steps 2 >/tmp/ncu-$p.csv 2>/dev/null
    echo "=== $p" >>$OUT/kernels.txt
    python3 "$D"/kernel_breakdown.py /tmp/ncu-$p.csv 2 --by-grid | head -25 | tee -a $OUT/kernels.txt
  done
fi
# TIMELINE=1: the kernels of 32 decode steps as they ran (CUPTI, graph replay with PDL overlap), at
# each of TIMELINE_DEPTHS (default 0 and 2048): per kernel the busy time and the time it added to
# the step's chain (exposed).
if [ -n "${TIMELINE:-}" ]; then
  for p in $PRESETS; do
    for dep in ${TIMELINE_DEPTHS:-0 2048}; do
      echo "=== timeline $p depth $dep" | tee -a $OUT/timeline.txt
      "$D"/bin/bench --model $M/$p.gguf --plugin-dir "$D"/plugins --depths $dep --timeline 32 \
        --timeline-rows ${TOP:-24} 2>&1 | grep -v '^{"ts"' | tee -a $OUT/timeline.txt
    done
  done
fi
[ -n "${SERVE_OSS:-}" ] || exit 0
echo "=== serve gpt-oss-20b shape"
"$D"/bin/worker-orcd --worker-id 3f2504e0-4f89-41d3-9a0c-0305e82c3301 --model $M/gpt-oss-20b-mxfp4.gguf \
  --gpu-device 0 --port 18090 --plugin-dir "$D"/plugins --kv-cache-size-mb 2048 2>/tmp/oss.log &
pid=$!
for i in $(seq 300); do curl -sf localhost:18090/health >/dev/null && break; sleep 0.2; done
curl -s localhost:18090/health; echo
curl -sN localhost:18090/execute -d '{"job_id":"oss1","prompt":"Write a haiku about GPU computing","temperature":0,"max_tokens":24}' | head -c 3000; echo
"$D"/bin/bench --http http://127.0.0.1:18090 --n-decode 128 --reps 3 2>&1 | grep -v '^{"ts"'
curl -s -X POST localhost:18090/shutdown; wait $pid; echo "worker exit $?"
