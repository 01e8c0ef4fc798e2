// Helpers shared by the kernel sources: launch geometry and the "check arguments, launch, return
// the launch status" pattern every public function follows.
#pragma once

#include <worker/pdl.cuh>

#include <cuda_runtime.h>

#include <cstdint>
#include <utility>

namespace wo::kernels::detail {

constexpr int kBlock = 256;

inline unsigned grid_for(int64_t n, int block = kBlock) {
  int64_t g = (n + block - 1) / block;
  if (g > 65535LL * 512) g = 65535LL * 512; // kernels use grid-stride loops beyond this
  return static_cast<unsigned>(g < 1 ? 1 : g);
}

// Launch status without synchronizing (decode steps must stay capturable).
inline cudaError_t launched() { return cudaGetLastError(); }

// Every kernel here starts with pdl::enter() and is launched through this: a programmatic
// dependent launch (worker/pdl.cuh), then its failure, or else whatever launched() reports.
template <class... Params, class... Args>
cudaError_t launch(void (*kernel)(Params...), dim3 grid, dim3 block, size_t smem, cudaStream_t stream,
                   Args &&...args) {
  const cudaError_t e = wo::pdl::launch(kernel, grid, block, smem, stream, std::forward<Args>(args)...);
  return e != cudaSuccess ? e : launched();
}

__device__ inline float warp_sum(float v) {
  for (int o = 16; o > 0; o >>= 1)
    v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}
__device__ inline float warp_max(float v) {
  for (int o = 16; o > 0; o >>= 1)
    v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}

// Sum over the block (blockDim.x a multiple of 32, at most 1024); every thread gets the total.
__device__ inline float block_sum(float v) {
  __shared__ float part[32];
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, n_warps = blockDim.x >> 5;
  v = warp_sum(v);
  __syncthreads(); // part[] may still be read by a previous call
  if (lane == 0) part[warp] = v;
  __syncthreads();
  v = lane < n_warps ? part[lane] : 0.0f;
  return warp_sum(v);
}
__device__ inline float block_max(float v) {
  __shared__ float part[32];
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, n_warps = blockDim.x >> 5;
  v = warp_max(v);
  __syncthreads();
  if (lane == 0) part[warp] = v;
  __syncthreads();
  v = lane < n_warps ? part[lane] : -INFINITY;
  return warp_max(v);
}

} // namespace wo::kernels::detail
