// Row reductions: softmax and argmax, one block per row (rows up to a vocabulary, ~200k floats).
#include "launch.cuh"

#include <worker/kernels.hpp>

namespace wo::kernels {
namespace {

__global__ void softmax_kernel(const float *x, float *y, int64_t n_cols) {
  wo::pdl::enter();
  const float *xr = x + blockIdx.x * n_cols;
  float *yr = y + blockIdx.x * n_cols;
  float m = -INFINITY;
  for (int64_t c = threadIdx.x; c < n_cols; c += blockDim.x)
    m = fmaxf(m, xr[c]);
  m = detail::block_max(m);
  float s = 0.0f;
  for (int64_t c = threadIdx.x; c < n_cols; c += blockDim.x)
    s += expf(xr[c] - m);
  const float inv = 1.0f / detail::block_sum(s);
  for (int64_t c = threadIdx.x; c < n_cols; c += blockDim.x)
    yr[c] = expf(xr[c] - m) * inv;
}

// (value, index) pairs compared so that the larger value wins and, on ties, the lower index.
__device__ inline bool better(float v, int64_t i, float bv, int64_t bi) {
  return v > bv || (v == bv && i < bi);
}

__global__ void argmax_kernel(const float *x, int32_t *out, int64_t n_cols) {
  wo::pdl::enter();
  const float *xr = x + blockIdx.x * n_cols;
  float bv = -INFINITY;
  int64_t bi = n_cols; // "none yet": loses every tie
  for (int64_t c = threadIdx.x; c < n_cols; c += blockDim.x)
    if (better(xr[c], c, bv, bi)) bv = xr[c], bi = c;
  for (int o = 16; o > 0; o >>= 1) {
    const float ov = __shfl_xor_sync(0xffffffffu, bv, o);
    const int64_t oi = __shfl_xor_sync(0xffffffffu, bi, o);
    if (better(ov, oi, bv, bi)) bv = ov, bi = oi;
  }
  __shared__ float sv[32];
  __shared__ int64_t si[32];
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  if (lane == 0) sv[warp] = bv, si[warp] = bi;
  __syncthreads();
  if (warp == 0) {
    bv = lane < static_cast<int>(blockDim.x >> 5) ? sv[lane] : -INFINITY;
    bi = lane < static_cast<int>(blockDim.x >> 5) ? si[lane] : n_cols;
    for (int o = 16; o > 0; o >>= 1) {
      const float ov = __shfl_xor_sync(0xffffffffu, bv, o);
      const int64_t oi = __shfl_xor_sync(0xffffffffu, bi, o);
      if (better(ov, oi, bv, bi)) bv = ov, bi = oi;
    }
    // All -inf / NaN rows still report a valid index.
    if (lane == 0) out[blockIdx.x] = static_cast<int32_t>(bi < n_cols ? bi : 0);
  }
}

} // namespace

cudaError_t softmax_rows(const float *x, float *y, int64_t n_rows, int64_t n_cols, cudaStream_t stream) {
  if (!x || !y || n_rows < 0 || n_rows > 0x7fffffff || n_cols <= 0) return cudaErrorInvalidValue;
  if (n_rows == 0) return cudaSuccess;
  return detail::launch(softmax_kernel, static_cast<unsigned>(n_rows), detail::kBlock, 0, stream, x, y,
                        n_cols);
}

cudaError_t argmax_rows(const float *x, int32_t *out, int64_t n_rows, int64_t n_cols, cudaStream_t stream) {
  if (!x || !out || n_rows < 0 || n_rows > 0x7fffffff || n_cols <= 0 || n_cols > 0x7fffffff)
    return cudaErrorInvalidValue;
  if (n_rows == 0) return cudaSuccess;
  return detail::launch(argmax_kernel, static_cast<unsigned>(n_rows), 1024, 0, stream, x, out, n_cols);
}

} // namespace wo::kernels
