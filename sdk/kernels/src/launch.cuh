// Helpers shared by the kernel sources: launch geometry and the "check arguments, launch, return
// the launch status" pattern every public function follows.
#pragma once

#include <worker/pdl.cuh>
#include <worker/rms_norm.cuh>

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

// Every kernel here starts with pdl::enter() and is launched through these: a programmatic
// dependent launch (worker/pdl.cuh), then its failure, or else whatever launched() reports.
// launch_carveout also asks for a shared-memory carveout (wo::pdl::kPreferL1); launch leaves it to
// the driver (kDriverCarveout).
template <class... Params, class... Args>
cudaError_t launch_carveout(int carveout, void (*kernel)(Params...), dim3 grid, dim3 block, size_t smem,
                            cudaStream_t stream, Args &&...args) {
  const cudaError_t e =
      wo::pdl::launch_carveout(carveout, kernel, grid, block, smem, stream, std::forward<Args>(args)...);
  return e != cudaSuccess ? e : launched();
}
template <class... Params, class... Args>
cudaError_t launch(void (*kernel)(Params...), dim3 grid, dim3 block, size_t smem, cudaStream_t stream,
                   Args &&...args) {
  return detail::launch_carveout(wo::pdl::kDriverCarveout, kernel, grid, block, smem, stream,
                                 std::forward<Args>(args)...);
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

// Whether this block is the last of `n` to arrive at a zero-started counter, for a block that must
// combine what the others wrote ("the last one merges", no extra kernel). Every thread of the
// block calls it after its writes; the last block sees the others' (read them through L2), and it
// resets the counter for the next call.
// Ordering: the barrier orders the block's writes before thread 0's count, whose release (cumulative
// over what the barrier made it observe) publishes them, and whose acquire in the last block, then
// that block's barrier, orders the other blocks' writes before its reads. One acq_rel atomic per
// block instead of a sequentially consistent fence (__threadfence, MEMBAR.SC.GPU) in every thread
// before the count and again in the last block.
__device__ inline bool last_block_to_arrive(unsigned *counter, unsigned n) {
  __shared__ int last;
  __syncthreads();
  if (threadIdx.x == 0) {
    unsigned before;
    asm volatile("atom.acq_rel.gpu.add.u32 %0, [%1], 1;" : "=r"(before) : "l"(counter) : "memory");
    last = before == n - 1;
    if (last) atomicExch(counter, 0u); // every block has counted: ready for the next call
  }
  __syncthreads();
  return last;
}

// RMSNorm of one row held in registers: every thread loads its (up to kNormVec) float4 of x (plus
// delta when kAdd, and of the weight) before the one reduction, so a row costs about two memory
// latencies instead of one per loop trip; decode rows (a few thousand floats) are latency-bound.
// kAdd also stores x + delta back to x. Needs n_cols % 4 == 0, 16-byte aligned rows and
// n_cols <= 4 * kNormVec * blockDim.x (norm_vec_ok); y may alias x when !kAdd. The arithmetic is
// worker/rms_norm.cuh's, which the quant codecs' fused GEMV prologue shares bit for bit.
constexpr int kNormVec = wo::rmsnorm::kVec;
static_assert(kBlock == wo::rmsnorm::kThreads, "the register norm's partition is rms_norm.cuh's");
inline bool norm_vec_ok(const void *a, const void *b, const void *c, const void *d, int64_t n_cols) {
  const auto al = [](const void *p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; };
  return wo::rmsnorm::fits(n_cols) && al(a) && al(b) && al(c) && al(d);
}

template <bool kAdd>
__global__ void rms_norm_vec_kernel(float *x, const float *delta, const float *w, float *y, int64_t n_cols,
                                    float eps) {
  namespace rn = wo::rmsnorm;
  wo::pdl::enter();
  const int64_t n4 = n_cols / 4, row = blockIdx.x;
  float4 *xr = reinterpret_cast<float4 *>(x + row * n_cols);
  const float4 *dr = reinterpret_cast<const float4 *>(kAdd ? delta + row * n_cols : nullptr);
  const float4 *wr = reinterpret_cast<const float4 *>(w);
  float4 *yr = reinterpret_cast<float4 *>(y + row * n_cols);
  float4 v[kNormVec], g[kNormVec];
#pragma unroll
  for (int k = 0; k < kNormVec; ++k) {
    const int64_t i = threadIdx.x + static_cast<int64_t>(k) * blockDim.x;
    v[k] = g[k] = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    if (i < n4) {
      v[k] = xr[i];
      if (kAdd) {
        const float4 d = dr[i];
        v[k].x += d.x, v[k].y += d.y, v[k].z += d.z, v[k].w += d.w;
      }
      g[k] = wr ? wr[i] : make_float4(1.0f, 1.0f, 1.0f, 1.0f);
    }
  }
  const float inv = rn::row_inv_rms([&](int k, int64_t) { return v[k]; }, n_cols, eps);
#pragma unroll
  for (int k = 0; k < kNormVec; ++k) {
    const int64_t i = threadIdx.x + static_cast<int64_t>(k) * blockDim.x;
    if (i < n4) {
      if (kAdd) xr[i] = v[k];
      yr[i] = rn::apply(v[k], inv, g[k]);
    }
  }
}

// RMSNorm of any row: one loop over the row into the sum of squares (kAdd: x += delta on the way,
// stored back), then one more writing y. For rows norm_vec_ok refuses; y may alias x when !kAdd
// (each thread re-reads only the x values it read or wrote itself).
template <bool kAdd>
__global__ void rms_norm_loop_kernel(float *x, const float *delta, const float *w, float *y, int64_t n_cols,
                                     float eps) {
  wo::pdl::enter();
  float *xr = x + blockIdx.x * n_cols;
  const float *dr = kAdd ? delta + blockIdx.x * n_cols : nullptr;
  float *yr = y + blockIdx.x * n_cols;
  float ss = 0.0f;
  for (int64_t c = threadIdx.x; c < n_cols; c += blockDim.x) {
    float v = xr[c];
    if (kAdd) {
      v += dr[c];
      xr[c] = v;
    }
    ss += v * v;
  }
  const float inv = rsqrtf(block_sum(ss) / static_cast<float>(n_cols) + eps);
  for (int64_t c = threadIdx.x; c < n_cols; c += blockDim.x)
    yr[c] = xr[c] * inv * (w ? w[c] : 1.0f);
}

// rms_norm (kAdd false, delta unused) and add_rms_norm: the register kernel where it fits, else the loop.
template <bool kAdd>
cudaError_t launch_rms_norm(float *x, const float *delta, const float *w, float *y, int64_t n_rows,
                            int64_t n_cols, float eps, cudaStream_t stream) {
  const auto kernel =
      norm_vec_ok(x, kAdd ? delta : x, w, y, n_cols) ? rms_norm_vec_kernel<kAdd> : rms_norm_loop_kernel<kAdd>;
  return launch(kernel, static_cast<unsigned>(n_rows), kBlock, 0, stream, x, delta, w, y, n_cols, eps);
}

} // namespace wo::kernels::detail
