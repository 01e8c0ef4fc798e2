#!/usr/bin/env bash
# Prepare the folders that carry a GPU run to the device machine (see ../shared/DEVICE.md).
# The tracked tree already travels (~32 MB of the 64 MiB a call may carry), so the fixture models
# that are not in the repo travel in staging folders, one call each, and are appended under
# /tmp/wo on the device while it stays warm:
#   .device-s1  qwen2-tiny-Q8_0, qwen2-tiny-Q4_K_M
#   .device-s2  gpt-oss-tiny-MXFP4_MOE, qwen2-tiny-Q4_0
#   .device-s3  phi3-tiny-Q8_0, gpt2-tiny-Q4_K_M, every model's reference/ folder
#   .device-run stripped binaries, plugins, GPU test executables and their libraries
#   .device-ref the reference/ folders of the models tests/fixtures holds (2 MB): with .device-run
#               one call runs every GPU test and the in-repo models' references, no staging
#               (QUICK=1 tools/device/gpu_suite.sh)
# usage: tools/device/prepare.sh BUILD_DIR
set -euo pipefail
build=${1:?usage: prepare.sh BUILD_DIR}
root=$(cd "$(dirname "$0")/../.." && pwd)
shared=$root/../shared/fixtures
cd "$root"
rm -rf .device-s1 .device-s2 .device-s3 .device-run .device-ref
mkdir -p .device-s1/models .device-s2/models .device-s3/models .device-run
cp "$shared"/models/qwen2-tiny-Q8_0.gguf "$shared"/models/qwen2-tiny-Q4_K_M.gguf .device-s1/models/
cp "$shared"/models/gpt-oss-tiny-MXFP4_MOE.gguf "$shared"/models/qwen2-tiny-Q4_0.gguf .device-s2/models/
cp "$shared"/models/phi3-tiny-Q8_0.gguf "$shared"/models/gpt2-tiny-Q4_K_M.gguf .device-s3/models/
cp -r "$shared"/reference .device-s3/reference
mkdir -p .device-ref
for m in tests/fixtures/models/*.gguf; do
  r="$shared"/reference/$(basename "$m" .gguf)
  [ -d "$r" ] && cp -r "$r" .device-ref/
done
mkdir -p .device-run/tests-bin
cp "$build"/tests-bin/*gpu_test "$build"/tests-bin/model_reference_test .device-run/tests-bin/
"$root"/../shared/tools/device-bundle .device-run "$build"/bin "$build"/plugins >/dev/null
mv .device-run/tests-bin/* .device-run/bin/ 2>/dev/null || true
rm -rf .device-run/tests-bin .device-run/plugins/*/ 2>/dev/null || true
# Strip executables and bundled libraries, never the plugins: the registry lists a plugin's entry
# from its ELF symbol table (section 'worker') before loading it, and strip would remove it.
find .device-run/bin .device-run/lib -type f -exec strip --strip-unneeded {} + 2>/dev/null || true
cp tools/device/*.sh tools/device/*.py .device-run/
du -sh .device-s1 .device-s2 .device-s3 .device-run .device-ref
