// stage_row: a float row as the int8 GEMVs' staged terms (worker/staged_x.cuh), for producers that do
// not stage their output themselves and as the tests' device reference.
#include "launch.cuh"

#include <worker/kernels.hpp>
#include <worker/staged_x.cuh>

namespace wo::kernels {
namespace {

// One warp per group of 32 values, one value per lane.
__global__ void stage_row_kernel(const float *x, uint8_t *staged, int64_t cols) {
  wo::pdl::enter();
  const int64_t n_groups = cols / wo::staged::kGroup;
  const int64_t warps = static_cast<int64_t>(gridDim.x) * (blockDim.x / 32);
  for (int64_t g = blockIdx.x * static_cast<int64_t>(blockDim.x / 32) + threadIdx.x / 32; g < n_groups;
       g += warps) { // warp-uniform
    const int64_t c = g * wo::staged::kGroup + threadIdx.x % 32;
    const float v[1] = {x[c]};
    wo::staged::write_group<1>(v, c, true, staged, cols);
  }
}

} // namespace

cudaError_t stage_row(const float *x, void *staged, int64_t cols, cudaStream_t stream) {
  if (!x || !staged || !wo::staged::fits(cols) || reinterpret_cast<uintptr_t>(staged) % 16 != 0)
    return cudaErrorInvalidValue;
  const int64_t groups = cols / wo::staged::kGroup;
  return detail::launch(stage_row_kernel, detail::grid_for(groups * 32), detail::kBlock, 0, stream, x,
                        static_cast<uint8_t *>(staged), cols);
}

} // namespace wo::kernels
