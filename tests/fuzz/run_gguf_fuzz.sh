#!/usr/bin/env bash
# Run the GGUF reader's libFuzzer target for SECONDS (default 60) and print how many executions
# it made. Configures BUILD_DIR with clang + WORKER_FUZZ=ON when it is not configured yet, and
# (re)builds the two fuzz targets.
#   tests/fuzz/run_gguf_fuzz.sh BUILD_DIR [SECONDS]
# Exit status: 0 when the fuzzer found nothing, non-zero otherwise (the crashing input is kept in
# BUILD_DIR/fuzz/gguf/artifacts/).
set -euo pipefail

build=${1:?usage: run_gguf_fuzz.sh BUILD_DIR [SECONDS]}
seconds=${2:-60}
root=$(cd "$(dirname "$0")/../.." && pwd)
fixtures=${WORKER_FIXTURES_DIR:-$root/tests/fixtures}

if [[ ! -f $build/CMakeCache.txt ]]; then
  cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ \
    -DWORKER_FUZZ=ON -DWORKER_WITH_CUDA=OFF -DWORKER_BUILD_BENCH=OFF
fi
cmake --build "$build" --target gguf_fuzz gguf_fuzz_seeds -j"${JOBS:-2}"

work=$build/fuzz/gguf
mkdir -p "$work/corpus" "$work/seeds" "$work/artifacts"
# Seeds: the fixture models and vocab-only files re-encoded small, plus the real files cut to
# max_len by libFuzzer (their headers, as they are).
"$build/bin/gguf_fuzz_seeds" "$work/seeds" "$fixtures"/models/*.gguf "$fixtures"/vocab/*.gguf
cp -f "$fixtures"/models/*.gguf "$work/seeds/"

log=$work/fuzz.log
set +e
ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1} \
  UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1:suppressions=$root/tests/fuzz/ubsan.supp} \
  "$build/bin/gguf_fuzz" "$work/corpus" "$work/seeds" \
  -max_total_time="$seconds" -max_len=65536 -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
  -artifact_prefix="$work/artifacts/" >"$log" 2>&1
status=$?
set -e
tail -n 25 "$log"
execs=$(grep -Eo 'stat::number_of_executed_units: *[0-9]+' "$log" | grep -Eo '[0-9]+$' || echo "?")
echo "gguf_fuzz: ${seconds}s, ${execs} executions, exit status ${status}"
exit $status
