#!/usr/bin/env bash
# Runs on the device machine from the repo root: measures the decode GEMV configurations that the
# tuning switches select (WORKER_QUANT_GEMV variant, WORKER_INT8X_CTAS_PER_SM), first alone
# (quant_bench, every spec-shape projection) and then in whole decode steps (bench at depth 0 and
# 2048), after checking each variant against the quant GPU tests. CONFIGS="variant:ctas ..." to
# choose; MODELS="preset ..." for the decode part; full outputs land in $OUT/gemv_sweep.log (the
# device tool returns at most 8 files).
set -uo pipefail
D=$PWD/.device-run
export LD_LIBRARY_PATH=$D/lib:/usr/local/cuda/lib64
export WORKER_FIXTURES_DIR=$PWD/tests/fixtures WORKER_PLUGIN_DIR=$D/plugins
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
LOG=$OUT/gemv_sweep.log
T=$(mktemp -d)
CONFIGS=${CONFIGS:-3:4 3:2 4:4 4:2}
for v in $(for c in $CONFIGS; do echo "${c%%:*}"; done | sort -u); do
  for t in quant_ggml_gpu_test quant_mxfp4_gpu_test; do
    WORKER_QUANT_GEMV=$v "$D"/bin/$t --gtest_brief=1 >"$T/t.txt" 2>&1
    { echo "=== variant $v $t"; grep -v '^{"ts"' "$T/t.txt"; } >>"$LOG"
    echo "=== variant $v $t: $(grep -E '^\[  (PASSED|FAILED) ' "$T/t.txt" | tr '\n' ' ')"
  done
done
# REF=1: the model reference harness under each variant too (needs the fixtures gpu_suite.sh staged).
if [ -n "${REF:-}" ]; then
  for v in $(for c in $CONFIGS; do echo "${c%%:*}"; done | sort -u); do
    WORKER_MODELS_DIR=/tmp/wo/models WORKER_REFERENCE_DIR=/tmp/wo/reference WORKER_QUANT_GEMV=$v \
      "$D"/bin/model_reference_test --gtest_brief=1 >"$T/t.txt" 2>&1
    { echo "=== variant $v model_reference_test"; grep -v '^{"ts"' "$T/t.txt"; } >>"$LOG"
    echo "=== variant $v model_reference_test: $(grep -E '^\[  (PASSED|FAILED) ' "$T/t.txt" | tr '\n' ' ')"
  done
fi
for c in $CONFIGS; do
  v=${c%%:*} n=${c##*:}
  echo "=== quant_bench variant $v, $n CTAs per SM" >>"$LOG"
  WORKER_QUANT_GEMV=$v WORKER_INT8X_CTAS_PER_SM=$n "$D"/bin/quant_bench 2>&1 | grep -v '^{"ts"' >>"$LOG"
done
if [ -n "${MODELS:-}" ]; then
  PRESETS="$MODELS" OUT=$OUT BENCH_ARGS="--prompts 512 --depths 0" bash "$D"/bench_suite.sh >/dev/null 2>&1
  for p in $MODELS; do
    for c in $CONFIGS; do
      v=${c%%:*} n=${c##*:} f=$T/decode.txt
      WORKER_QUANT_GEMV=$v WORKER_INT8X_CTAS_PER_SM=$n "$D"/bin/bench --model /dev/shm/wo/$p.gguf \
        --plugin-dir "$D"/plugins --prompts 16 --depths 0,2048 >"$f" 2>&1
      { echo "=== decode $p variant $v, $n CTAs/SM"; grep -v '^{"ts"' "$f"; } >>"$LOG"
      echo "=== decode $p variant $v, $n CTAs/SM: $(grep -A2 '^depth' "$f" | tail -2 | tr -s ' ' | tr '\n' ';')"
    done
  done
fi
# TTFT=1: prefill of short prompts with the GEMV/GEMM crossover at 0 (always cuBLAS), 4, 8 and 16
# tokens (WORKER_GEMV_MAX_TOKENS), the grouped MoE GEMM from 1 or 17 tokens (WORKER_GROUPED_MIN_TOKENS).
[ -n "${TTFT:-}" ] || exit 0
for p in $MODELS; do
  for g in 0 4 8 16; do
    for m in $(case $p in gpt-oss*) echo 1 17;; *) echo 17;; esac); do
      echo "=== prefill $p GEMV up to $g tokens, grouped from $m" | tee -a "$LOG"
      WORKER_GEMV_MAX_TOKENS=$g WORKER_GROUPED_MIN_TOKENS=$m "$D"/bin/bench --model /dev/shm/wo/$p.gguf \
        --plugin-dir "$D"/plugins --prompts 2,4,8,16,32 --depths 0 --n-decode 8 --reps 3 2>&1 |
        sed -n '/^prompt/,/^$/p' | tee -a "$LOG"
    done
  done
done
