// positions[t] = pos0 + t, on the device: RoPE and the position-embedding gather read positions
// from device memory, and writing them with a kernel keeps decode free of host copies.
#include "positions.hpp"

namespace wo::gpt {

namespace {
__global__ void fill_positions_kernel(int32_t *out, int64_t pos0, int64_t n) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x)
    out[i] = static_cast<int32_t>(pos0 + i);
}
} // namespace

cudaError_t fill_positions(int32_t *positions, int64_t pos0, int64_t n, cudaStream_t stream) {
  if (!positions || n <= 0 || pos0 < 0 || pos0 + n > INT32_MAX) return cudaErrorInvalidValue;
  const int block = 256;
  const int64_t grid = (n + block - 1) / block;
  fill_positions_kernel<<<static_cast<unsigned>(grid < 1024 ? grid : 1024), block, 0, stream>>>(positions, pos0, n);
  return cudaGetLastError();
}

} // namespace wo::gpt
