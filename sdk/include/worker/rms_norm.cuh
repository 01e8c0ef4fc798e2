// The arithmetic of one RMSNorm row, shared by the SDK's norm kernel (sdk/kernels) and the quant
// codecs' GEMV prologue (linear_fused): both must produce the same bits, so that folding the norm
// into the next projection is a speed choice and not a numerics one. Every step is written with
// explicit rounding intrinsics (no FMA contraction left to the compiler) and the partition of the
// row over the block is fixed: thread t holds the float4s t, t + kThreads, ... (at most kVec).
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

namespace wo::rmsnorm {

constexpr int kThreads = 256; // threads per row: the norm kernel's block, the int8 GEMV's CTA
constexpr int kVec = 4;       // float4s per thread: rows up to 4 * kVec * kThreads = 4096 columns
constexpr int64_t kMaxCols = 4 * kVec * kThreads;

// Whether a row of n_cols takes this partition (the norm kernel's register path).
__host__ __device__ constexpr bool fits(int64_t n_cols) { return n_cols % 4 == 0 && n_cols <= kMaxCols; }

__device__ __forceinline__ float sum_sq(float4 v) {
  return __fmaf_rn(v.w, v.w, __fmaf_rn(v.z, v.z, __fmaf_rn(v.y, v.y, __fmul_rn(v.x, v.x))));
}

// Sum over the block of kThreads threads; every thread gets the total. A block of a multiple of
// kThreads threads is that many copies of the partition (thread t acts as t % kThreads, which each
// copy computes alike): the copies write the same partial sums to the same slots.
__device__ __forceinline__ float block_sum(float v) {
  __shared__ float part[kThreads / 32];
#pragma unroll
  for (int o = 16; o > 0; o >>= 1)
    v = __fadd_rn(v, __shfl_xor_sync(0xffffffffu, v, o));
  __syncthreads(); // part[] may still be read by a previous call
  if (threadIdx.x % 32 == 0) part[threadIdx.x / 32 % (kThreads / 32)] = v;
  __syncthreads();
  v = threadIdx.x % 32 < kThreads / 32 ? part[threadIdx.x % 32] : 0.0f;
#pragma unroll
  for (int o = 16; o > 0; o >>= 1)
    v = __fadd_rn(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}

// 1 / rms of a row from its sum of squares.
__device__ __forceinline__ float inv_rms(float sum_of_squares, int64_t n_cols, float eps) {
  return rsqrtf(__fadd_rn(__fdiv_rn(sum_of_squares, static_cast<float>(n_cols)), eps));
}

// The normalized value of x with weight g.
__device__ __forceinline__ float apply(float x, float inv, float g) {
  return __fmul_rn(__fmul_rn(x, inv), g);
}

// The same for four values with their four weights.
__device__ __forceinline__ float4 apply(float4 x, float inv, float4 g) {
  return make_float4(apply(x.x, inv, g.x), apply(x.y, inv, g.y), apply(x.z, inv, g.z), apply(x.w, inv, g.w));
}

// 1 / rms of row x[0..n_cols) (fits(n_cols), 16-byte aligned), read with the fixed partition by
// all kThreads threads of the block (a block of a multiple of kThreads: every copy of them, see
// block_sum). load(k, i) returns float4 number i of the row, which is this thread's k-th (k < kVec,
// a constant after unrolling: registers can be indexed with it).
template <class Load> __device__ __forceinline__ float row_inv_rms(Load load, int64_t n_cols, float eps) {
  const int64_t n4 = n_cols / 4;
  float ss = 0.0f;
#pragma unroll
  for (int k = 0; k < kVec; ++k) {
    const int64_t i = threadIdx.x % kThreads + static_cast<int64_t>(k) * kThreads;
    if (i < n4) ss = __fadd_rn(ss, sum_sq(load(k, i)));
  }
  return inv_rms(block_sum(ss), n_cols, eps);
}

} // namespace wo::rmsnorm
