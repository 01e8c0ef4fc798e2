// The arithmetic of one RMSNorm row, shared by the SDK's norm kernel (sdk/kernels) and the quant
// codecs' GEMV prologue (linear_fused): both compute the same 1/rms bits. (The int8 GEMVs apply it
// to their dots rather than to the staged row unless WORKER_NORM_LATE=0, which gives the separate
// kernels' bits: quant-common's gemv_common.cuh, norm_late.) Every step is written with
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
// In three steps, which callers that need no barrier in between may take apart (the GEMVs' late
// norm): warp_total (a warp's sum, in every lane), publish (lane 0's into part[warp % 8]) and,
// after a barrier, part_total (the sum of the eight, in every lane of any warp).
__device__ __forceinline__ float warp_total(float v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1)
    v = __fadd_rn(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}
__device__ __forceinline__ void publish(float *part, float warp_sum) {
  if (threadIdx.x % 32 == 0) part[threadIdx.x / 32 % (kThreads / 32)] = warp_sum;
}
// Each group of eight lanes adds the eight parts in warp_total's tree, three shuffle steps instead of
// five: where lanes 8..31 held zeros, the steps 16 and 8 added +0 to non-negative sums (no bit
// changes), and every lane of a butterfly gets the same bits (each step adds a + b or b + a).
__device__ __forceinline__ float part_total(const float *part) {
  constexpr int kParts = kThreads / 32;
  static_assert(kParts == 8, "three shuffle steps add eight parts");
  float v = part[threadIdx.x % kParts];
#pragma unroll
  for (int o = kParts / 2; o > 0; o >>= 1)
    v = __fadd_rn(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}
__device__ __forceinline__ float block_sum(float v) {
  __shared__ float part[kThreads / 32];
  v = warp_total(v);
  __syncthreads(); // part[] may still be read by a previous call
  publish(part, v);
  __syncthreads();
  return part_total(part);
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

// This thread's share of a row's sum of squares (fits(n_cols), 16-byte aligned), in the fixed
// partition: load(k, i) returns float4 number i of the row, which is this thread's k-th (k < kVec,
// a constant after unrolling: registers can be indexed with it).
template <class Load> __device__ __forceinline__ float thread_sum_sq(Load load, int64_t n_cols) {
  const int64_t n4 = n_cols / 4;
  float ss = 0.0f;
#pragma unroll
  for (int k = 0; k < kVec; ++k) {
    const int64_t i = threadIdx.x % kThreads + static_cast<int64_t>(k) * kThreads;
    if (i < n4) ss = __fadd_rn(ss, sum_sq(load(k, i)));
  }
  return ss;
}

// 1 / rms of row x[0..n_cols), read with the fixed partition by all kThreads threads of the block (a
// block of a multiple of kThreads: every copy of them, see block_sum).
template <class Load> __device__ __forceinline__ float row_inv_rms(Load load, int64_t n_cols, float eps) {
  return inv_rms(block_sum(thread_sum_sq(load, n_cols)), n_cols, eps);
}

} // namespace wo::rmsnorm
