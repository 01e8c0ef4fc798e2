#!/usr/bin/env bash
# Runs on the device machine from the repo root: every GPU test, the model reference harness over
# all fixture models (repo + staged under /tmp/wo), then the HTTP end-to-end checks.
# QUICK=1 (carry .device-run and .device-ref, nothing staged): every GPU test and the references
# of the models in tests/fixtures only; no e2e (its model is staged).
set -uo pipefail
D=$PWD/.device-run
export LD_LIBRARY_PATH=$D/lib:/usr/local/cuda/lib64
export WORKER_FIXTURES_DIR=$PWD/tests/fixtures
export WORKER_PLUGIN_DIR=$D/plugins
mkdir -p /tmp/wo/models
cp -n tests/fixtures/models/*.gguf /tmp/wo/models/ 2>/dev/null
export WORKER_MODELS_DIR=/tmp/wo/models
export WORKER_REFERENCE_DIR=/tmp/wo/reference
if [ -n "${QUICK:-}" ]; then
  export WORKER_MODELS_DIR=$PWD/tests/fixtures/models WORKER_REFERENCE_DIR=$PWD/.device-ref
fi
export WORKER_ORCD_BIN=$D/bin/worker-orcd
OUT=${OUT:-/tmp/out}
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv
fail=0
mkdir -p "$OUT"/logs
for t in "$D"/bin/*gpu_test "$D"/bin/model_reference_test; do
  n=$(basename "$t")
  echo "=== $n"
  # The whole output to $OUT/logs (a failure's message and its seed can sit far above the tail).
  "$t" --gtest_brief=1 2>&1 | grep -vE '^\{"ts"' >"$OUT"/logs/"$n".txt
  rc=${PIPESTATUS[0]} # the binary's own status (grep finding no line is no failure)
  tail -40 "$OUT"/logs/"$n".txt
  if [ "$rc" -ne 0 ]; then
    echo "!!! $n exited $rc; its failures:"
    grep -E -B2 -A8 'Failure|\[  FAILED  \]' "$OUT"/logs/"$n".txt | head -80
    fail=1
  fi
done
[ -n "${QUICK:-}" ] && { echo "suite exit $fail (QUICK: no e2e)"; exit $fail; }
echo "=== e2e HTTP (qwen2-tiny-Q8_0)"
python3 "$D"/e2e_http.py "$D"/bin/worker-orcd /tmp/wo/models/qwen2-tiny-Q8_0.gguf "$D"/plugins || fail=1
echo "=== /health of the gpt-oss fixture (quant_kind MXFP4)"
"$D"/bin/worker-orcd --worker-id 3f2504e0-4f89-41d3-9a0c-0305e82c3302 --model /tmp/wo/models/gpt-oss-tiny-MXFP4_MOE.gguf \
  --gpu-device 0 --port 18091 --plugin-dir "$D"/plugins 2>/tmp/oss-tiny.log &
pid=$!
for i in $(seq 100); do curl -sf localhost:18091/health >/dev/null && break; sleep 0.2; done
curl -s localhost:18091/health; echo
curl -sN localhost:18091/execute -d '{"job_id":"t1","prompt":"Hello","temperature":0,"max_tokens":8}' | head -c 1500; echo
curl -s -X POST localhost:18091/shutdown >/dev/null; wait $pid; echo "worker exit $?"
"$D"/bin/worker-orcd inspect --json /tmp/wo/models/gpt-oss-tiny-MXFP4_MOE.gguf 2>/dev/null | grep -m2 -E '"quant_(kind|label)"'
echo "suite exit $fail"
