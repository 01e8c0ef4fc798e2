// What the decode GEMV kernels share (linear_kernels.cuh, unit_gemv.cuh): activation loads and
// output stores, linear_id problem resolution, linear_multi's segment rows, the int8 staging of one
// token's activations, and the launch switches read from the environment.
#pragma once

#include "quant_common/cp_async.cuh"
#include "quant_common/cuda_ops.hpp"
#include "quant_common/int8x_dots.cuh"

#include <worker/cta_trace.cuh>
#include <worker/occupancy.hpp>
#include <worker/pdl.cuh>
#include <worker/rms_norm.cuh>
#include <worker/swiglu.cuh>

#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdlib>
#include <type_traits>

namespace wo::quant::dev {
constexpr int kGemvWarps = 4;
constexpr int kDequantThreads = 128;
constexpr int kMaxGridY = 65535;

__device__ __forceinline__ float4 load_x4(const void *x, int64_t i, bool f16) {
  if (!f16) return *reinterpret_cast<const float4 *>(static_cast<const float *>(x) + i);
  const uint2 u = *reinterpret_cast<const uint2 *>(static_cast<const __half *>(x) + i);
  const float2 a = __half22float2(*reinterpret_cast<const __half2 *>(&u.x));
  const float2 b = __half22float2(*reinterpret_cast<const __half2 *>(&u.y));
  return make_float4(a.x, a.y, b.x, b.y);
}

__device__ __forceinline__ float load_x1(const void *x, int64_t i, bool f16) {
  return f16 ? __half2float(static_cast<const __half *>(x)[i]) : static_cast<const float *>(x)[i];
}

__device__ __forceinline__ void store_y(void *y, int64_t i, float v, bool f16) {
  if (f16)
    static_cast<__half *>(y)[i] = __float2half_rn(v);
  else
    static_cast<float *>(y)[i] = v;
}

// Four floats as FP16 at dst (8-byte aligned).
__device__ __forceinline__ void store_half4(__half *dst, float a, float b, float c, float d) {
  const __half2 lo = __floats2half2_rn(a, b), hi = __floats2half2_rn(c, d);
  uint2 u;
  u.x = *reinterpret_cast<const uint32_t *>(&lo);
  u.y = *reinterpret_cast<const uint32_t *>(&hi);
  *reinterpret_cast<uint2 *>(dst) = u;
}

// Where linear_id's problem `prob` (token prob / n_slots, slot prob % n_slots) reads x.
__device__ __forceinline__ int64_t problem_x_off(const GemvParams &p, int64_t prob) {
  const int64_t t = prob / p.n_slots, k = prob % p.n_slots;
  return (t * p.x_slots + (p.x_slots == 1 ? 0 : k)) * p.cols;
}

// A type as a value, for generic lambdas that take the block decoder they run (a mixed stack's rows).
template <class T> struct TypeTag { using type = T; };

__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1)
    v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

// linear_multi's row `row` of the stacked weights: its weight row, output array and index there.
// Unrolled selects with constant indices: a loop with a variable index into the kernel parameter
// made ptxas copy all of Segments to a per-thread stack (104 bytes) in every GEMV launch.
// kMixed (a stack that ends in its type's partner, Segments::alt): `alt` says whether the row is
// the partner's, whose rows are seg.alt_row_bytes long; without it the selects are the old ones.
template <bool kMixed = false>
__device__ __forceinline__ const uint8_t *segment_row(const Segments &seg, uint64_t row_bytes, int64_t row,
                                                      void *&y, int64_t &yi, bool *alt = nullptr) {
  const uint8_t *w = seg.w[0];
  void *out = seg.y[0];
  int64_t first = 0;
  bool in_alt = false;
#pragma unroll
  for (int s = 1; s < kMaxSegments; ++s)
    if (s < seg.n && row >= seg.end[s - 1]) {
      w = seg.w[s], out = seg.y[s], first = seg.end[s - 1];
      if (kMixed) in_alt = s >= seg.alt;
    }
  y = out;
  yi = row - first;
  if (!kMixed) return w + yi * row_bytes;
  *alt = in_alt;
  return w + yi * (in_alt ? seg.alt_row_bytes : row_bytes);
}

// Resolves problem `prob` into (weight matrix, x offset, y offset, tokens). False when past the end.
struct Problem {
  const uint8_t *w;
  int64_t x_off, y_off;
  int ntok;
  bool bad_expert;
};

template <int NT> __device__ __forceinline__ bool resolve(const GemvParams &p, int64_t prob, Problem &q) {
  q.w = p.w;
  q.bad_expert = false;
  if (p.ids) {
    if (prob >= p.n_tokens * p.n_slots) return false;
    const int32_t e = __ldcg(p.ids + prob);
    if (e < 0 || e >= p.n_expert)
      q.bad_expert = true;
    else
      q.w += static_cast<uint64_t>(e) * p.expert_bytes;
    q.x_off = problem_x_off(p, prob);
    q.y_off = prob * p.rows;
    q.ntok = 1;
    return true;
  }
  const int64_t t0 = prob * NT;
  if (t0 >= p.n_tokens) return false;
  q.x_off = t0 * p.cols;
  q.y_off = t0 * p.rows;
  q.ntok = static_cast<int>(min(static_cast<int64_t>(NT), p.n_tokens - t0));
  return true;
}

// The int8-activation GEMVs (gemv_int8x_kernel, gemv_units_kernel): warps per CTA, grid sizing.
constexpr int kInt8xWarps = 8;
constexpr int kInt8xWarpsWide = 32; // one CTA per SM at 64 registers (gemv_int8x_kernel, launch_int8x)
// CTAs per SM the grid is sized for (one wave; launch bounds cap registers at 64 so they all fit).
constexpr int kInt8xCtasPerSm = 4;
constexpr int kInt8xUnroll = 4;          // block parts in flight per lane
constexpr int64_t kInt8xMaxCols = 20480; // 2.375 bytes of shared memory per column: < 48 KiB

__host__ __device__ inline size_t int8x_smem_bytes(int64_t cols) {
  return static_cast<size_t>(cols) * 2 + cols / 8 + cols / 4;
}

// Whether linear_fused's model constants are read early (Fusion::early; WORKER_GEMV_EARLY=0: no).
inline bool gemv_early() {
  static const bool v = !env_switched_off("WORKER_GEMV_EARLY");
  return v;
}

// Early reads (Fusion::early). Why: no kernel writes a norm weight or a bias, yet the fused GEMVs
// read them where they use them, after the PDL wait: the norm weights in the staging after the
// row's 1/rms, the bias after the dot, each one more DRAM round trip on the decode step's chain
// (the weights streamed since the last token have evicted them from L2). Now they are copied into
// shared memory with cp.async before the wait (gemv_units_kernel: the bias; the norm weights only
// into L2, see there), and the residual (written before the wait returned) right after it, so that
// it lands during the staging instead of after the dot. cp.async holds no register: kept in
// registers through the dots, they cost the 64-register int8x instances up to ~100 bytes of
// spills (ptxas -v). Each thread copies what it reads itself (the norm weights of the columns
// stage_x_* gives it, the bias and residual of the row it stores first), so its own cp.async wait
// is the only synchronization needed. H100 A/B (WORKER_GEMV_EARLY=0 against the default, one call,
// two rounds, decode tok/s at depth 0 / 2048): Qwen2.5 1411.5/1294.2, 1411.7/1294.2 ->
// 1410.6/1300.7, 1410.8/1300.3; GPT-OSS 522.8/488.0, 525.2/498.3 -> 526.5/497.9, 527.3/502.3;
// Phi-3 587.9/488.6, 587.9/487.7 -> 591.6/489.1, 587.8/485.5.

// Shared memory of the norm weights' copy: cols floats (fused norm, early), else none.
__host__ __device__ inline size_t norm_copy_bytes(const Fusion &fu, int64_t cols) {
  return fu.early && fu.norm_w ? static_cast<size_t>(cols) * sizeof(float) : 0;
}
__host__ __device__ constexpr size_t align16(size_t n) { return (n + 15) / 16 * 16; }

// This thread's columns of norm_w (8 at 8 threadIdx.x, then every 8 blockDim.x: the staging's
// partition) into dst (16-byte aligned; norm_w is too, fused_pass checks it). No commit.
__device__ __forceinline__ void copy_norm_w(const float *norm_w, int64_t cols, float *dst) {
  for (int64_t c = static_cast<int64_t>(threadIdx.x) * 8; c < cols;
       c += static_cast<int64_t>(blockDim.x) * 8) {
    cp_async16(dst + c, norm_w + c);
    cp_async16(dst + c + 4, norm_w + c + 4);
  }
}

// The same columns' lines asked of L2 (one prefetch per 128 bytes), for kernels without room for
// the copy (gemv_units_kernel).
__device__ __forceinline__ void prefetch_norm_w(const float *norm_w, int64_t cols) {
  if (threadIdx.x % 4 == 0)
    for (int64_t c = static_cast<int64_t>(threadIdx.x) * 8; c < cols;
         c += static_cast<int64_t>(blockDim.x) * 8)
      wo::pdl::prefetch_l2(norm_w + c);
}

// Eight activations x[c..c+8) (zeros when !on), or silu(x) * glu_up (worker/swiglu.cuh, the swiglu
// kernel's arithmetic) when glu_up is set (linear_fused's SwiGLU prologue; F32 x); the norm, if any,
// comes after (norm_x8).
__device__ __forceinline__ void load_x8(const GemvParams &p, int64_t x_off, int64_t c, bool on, float (&v)[8],
                                        const float *glu_up) {
#pragma unroll
  for (int i = 0; i < 8; ++i)
    v[i] = 0.0f;
  if (!on) return;
  const float4 a = load_x4(p.x, x_off + c, p.x_f16), b = load_x4(p.x, x_off + c + 4, p.x_f16);
  v[0] = a.x, v[1] = a.y, v[2] = a.z, v[3] = a.w, v[4] = b.x, v[5] = b.y, v[6] = b.z, v[7] = b.w;
  if (glu_up) {
    const float4 u0 = *reinterpret_cast<const float4 *>(glu_up + x_off + c);
    const float4 u1 = *reinterpret_cast<const float4 *>(glu_up + x_off + c + 4);
    const float u[8] = {u0.x, u0.y, u0.z, u0.w, u1.x, u1.y, u1.z, u1.w};
#pragma unroll
    for (int i = 0; i < 8; ++i)
      v[i] = wo::swiglu::apply(v[i], u[i]);
  }
}

// The norm weights of columns c..c+8 (zeros when !on).
__device__ __forceinline__ void load_g8(const float *norm_w, int64_t c, bool on, float (&g)[8]) {
  const float4 g0 = on ? *reinterpret_cast<const float4 *>(norm_w + c) : float4{};
  const float4 g1 = on ? *reinterpret_cast<const float4 *>(norm_w + c + 4) : float4{};
  g[0] = g0.x, g[1] = g0.y, g[2] = g0.z, g[3] = g0.w, g[4] = g1.x, g[5] = g1.y, g[6] = g1.z, g[7] = g1.w;
}

// rmsnorm(x) * norm_w of eight values, given the row's inv_rms (the norm kernel's arithmetic).
__device__ __forceinline__ void norm_x8(float (&v)[8], const float (&g)[8], float inv_rms) {
#pragma unroll
  for (int i = 0; i < 8; ++i)
    v[i] = wo::rmsnorm::apply(v[i], inv_rms, g[i]);
}

// One stride of the staging (8 activations per thread at c), with linear_fused's norm when
// norm_w is set: on the first stride (base == 0, every thread of the CTA: the reduction has
// barriers) the row's 1/rms comes from rms_norm.cuh's partition, its loads issued after this
// thread's own values and, with kNormAhead, its norm weights. Why: the reduction's barriers keep
// loads after it from being issued before it, so a norm weight read after the reduction (from L2 in
// the unit GEMV, which has no room for a shared-memory copy) added an L2 round trip to every
// normed GEMV's staging. kNormAhead = false where norm_w is the CTA's shared-memory copy (the
// 64-register int8x instances: no eight more registers held through the reduction).
// With late_part (Fusion::norm_late) the row is staged as x * norm_w, without 1/rms: this thread's
// share of the sum of squares goes into late_part (rms_norm.cuh's partition and publish, no
// barrier), and the GEMV scales each row's dot by 1/rms (late_inv_rms) after the staging's barrier.
// Why: the quantizing needs each group's largest value, and with 1/rms in the values every thread
// waited for the whole row's block reduction (two barriers) before it could start; 1/rms > 0 is one
// factor per row, so the int8 terms of x * norm_w are those of the normalized row up to float
// rounding, and the dots are linear in them.
template <bool kNormAhead>
__device__ __forceinline__ void load_x8_normed(const GemvParams &p, int64_t x_off, int64_t base, int64_t c,
                                               bool on, const float *norm_w, float norm_eps, float &inv_rms,
                                               float (&v)[8], const float *glu_up,
                                               float *late_part = nullptr) {
  load_x8(p, x_off, c, on, v, glu_up);
  if (!norm_w) return;
  // float4 number i of the row, for rms_norm.cuh's partition (F32 x: linear_fused's norm takes no F16)
  const auto row_x4 = [&](int, int64_t i) { return load_x4(p.x, x_off + 4 * i, false); };
  float g[8];
  if (late_part) {
    load_g8(norm_w, c, on, g);
    if (base == 0)
      wo::rmsnorm::publish(late_part, wo::rmsnorm::warp_total(wo::rmsnorm::thread_sum_sq(row_x4, p.cols)));
    if (on)
#pragma unroll
      for (int i = 0; i < 8; ++i)
        v[i] = __fmul_rn(v[i], g[i]);
    return;
  }
  if constexpr (kNormAhead) load_g8(norm_w, c, on, g);
  if (base == 0) inv_rms = wo::rmsnorm::row_inv_rms(row_x4, p.cols, norm_eps);
  if constexpr (!kNormAhead) load_g8(norm_w, c, on, g);
  if (on) norm_x8(v, g, inv_rms);
}

// Eight activations of a group of 32 (4 consecutive lanes share the group; every lane of the warp
// must call) -> their hi and lo int8 terms, the group's scale and the sum16 of the 16-value half
// this lane pair covers (and its integer hi and lo sums).
struct Staged8 {
  uint32_t hw[2], lw[2];
  float scale, sum16;
  int hs16, ls16;
};
template <int kTerms> __device__ __forceinline__ Staged8 quantize_x8(const float (&v)[8]) {
  // The largest magnitude as a tree (three dependent steps, not eight): a maximum is exact in any
  // order, and fmaxf drops a NaN operand in any order alike.
  const float m01 = fmaxf(fabsf(v[0]), fabsf(v[1])), m23 = fmaxf(fabsf(v[2]), fabsf(v[3]));
  const float m45 = fmaxf(fabsf(v[4]), fabsf(v[5])), m67 = fmaxf(fabsf(v[6]), fabsf(v[7]));
  float amax = fmaxf(fmaxf(m01, m23), fmaxf(m45, m67));
  amax = fmaxf(amax, __shfl_xor_sync(0xffffffffu, amax, 1));
  amax = fmaxf(amax, __shfl_xor_sync(0xffffffffu, amax, 2));
  const float inv = xq_inv(amax);
  Staged8 r{{0, 0}, {0, 0}, xq_scale(amax), 0.0f, 0, 0};
  // xq_split's terms, taken from its rounding sums' bits: kRoundMagic + k has k's two's complement
  // in its low byte (kRoundMagicBits ends in 0x00) and is k more than kRoundMagicBits as an integer,
  // so four terms pack with three byte permutes and eight sum as the bits' sum less 8
  // kRoundMagicBits (mod 2^32: exact, |sum| <= 8 x 127), where each term was masked, shifted, or-ed
  // and had the magic subtracted on its own.
  uint32_t hb[8], lb[8];
  uint32_t hsum = 0, lsum = 0;
#pragma unroll
  for (int i = 0; i < 8; ++i) {
    xq_split_bits<kTerms>(v[i], inv, hb[i], lb[i]);
    hsum += hb[i], lsum += lb[i];
  }
  const auto pack4 = [](const uint32_t *b) {
    return __byte_perm(__byte_perm(b[0], b[1], 0x0040), __byte_perm(b[2], b[3], 0x0040), 0x5410);
  };
  r.hw[0] = pack4(hb), r.hw[1] = pack4(hb + 4);
  int hs = static_cast<int>(hsum - 8u * static_cast<uint32_t>(kRoundMagicBits)), ls = 0;
  if constexpr (kTerms == 2) {
    r.lw[0] = pack4(lb), r.lw[1] = pack4(lb + 4);
    ls = static_cast<int>(lsum - 8u * static_cast<uint32_t>(kRoundMagicBits));
  }
  hs += __shfl_xor_sync(0xffffffffu, hs, 1); // the 16-value half this lane pair covers
  ls += __shfl_xor_sync(0xffffffffu, ls, 1);
  r.sum16 = xq_sum(r.scale, hs, ls);
  r.hs16 = hs, r.ls16 = ls;
  return r;
}

// What quantize_x8 gives for this thread's eight values at c, from a row its producer staged
// (worker/staged_x.cuh: the same arithmetic, so the same bits). Loads only: no shuffles, no math
// past the group sum of this lane pair's half.
template <int kTerms>
__device__ __forceinline__ Staged8 load_staged8(const uint8_t *row, int64_t cols, int64_t c, bool on) {
  Staged8 r{{0, 0}, {0, 0}, 0.0f, 0.0f, 0, 0};
  if (!on) return r;
  const uint2 h = *reinterpret_cast<const uint2 *>(row + c);
  const uint4 rec = *reinterpret_cast<const uint4 *>(row + wo::staged::record_offset(cols, c / 32));
  r.hw[0] = h.x, r.hw[1] = h.y, r.scale = __uint_as_float(rec.x);
  int hs, ls;
  wo::staged::unpack_half(c % 32 < 16 ? rec.y : rec.z, hs, ls);
  if constexpr (kTerms == 2) {
    const uint2 l = *reinterpret_cast<const uint2 *>(row + wo::staged::lo_offset(cols) + c);
    r.lw[0] = l.x, r.lw[1] = l.y;
  } else {
    ls = 0; // one term: hi alone (a lone term's hi is the two-term hi)
  }
  r.hs16 = hs, r.ls16 = ls;
  r.sum16 = xq_sum(r.scale, hs, ls);
  return r;
}

// This thread's eight staged activations at c, as both stagings (stage_x_int8, stage_x_units) take
// them: copied from the row x's producer staged, else x's values (with linear_fused's norm or SwiGLU
// prologue, load_x8_normed) quantized. Into q: returned by value, ptxas allocated several entries
// differently (64-register int8x instances 8 bytes more of spills); this way every entry's registers
// and spills are the two inline copies' (ptxas -v of quant-ggml and quant-mxfp4, all entries).
template <int kTerms, bool kNormAhead>
__device__ __forceinline__ void staged8(const GemvParams &p, int64_t x_off, int64_t base, int64_t c, bool on,
                                        const float *norm_w, float norm_eps, float &inv_rms,
                                        const float *glu_up, float *late_part, const uint8_t *staged,
                                        Staged8 &q) {
  if (staged) {
    q = load_staged8<kTerms>(staged, p.cols, c, on);
  } else {
    float v[8];
    load_x8_normed<kNormAhead>(p, x_off, base, c, on, norm_w, norm_eps, inv_rms, v, glu_up, late_part);
    q = quantize_x8<kTerms>(v);
  }
}

// The token's activations x[0..cols) -> hi, lo, scale, sum16 (every thread of the CTA takes part;
// 4 consecutive threads share one group of 32, 8 activations each), through load_x8_normed: with
// norm_w or glu_up, linear_fused's norm or SwiGLU prologue. norm_w: the CTA's shared-memory copy.
template <int kTerms>
__device__ __forceinline__ void stage_x_int8(const GemvParams &p, int64_t x_off, int8_t *hi, int8_t *lo,
                                             float *scale, float *sum16, const float *norm_w = nullptr,
                                             float norm_eps = 0.0f, const float *glu_up = nullptr,
                                             float *late_part = nullptr, const uint8_t *staged = nullptr) {
  const int lane = threadIdx.x % 32;
  float inv_rms = 0.0f; // linear_fused's norm: the row's 1/rms, as the norm kernel's
  for (int64_t base = 0; base < p.cols; base += static_cast<int64_t>(blockDim.x) * 8) {
    const int64_t c = base + static_cast<int64_t>(threadIdx.x) * 8;
    const bool on = c < p.cols; // whole groups of 4 lanes are on or off (cols % 32 == 0)
    Staged8 q;
    staged8<kTerms, false>(p, x_off, base, c, on, norm_w, norm_eps, inv_rms, glu_up, late_part, staged, q);
    if (on) {
      *reinterpret_cast<uint2 *>(hi + c) = make_uint2(q.hw[0], q.hw[1]);
      if (kTerms == 2) *reinterpret_cast<uint2 *>(lo + c) = make_uint2(q.lw[0], q.lw[1]);
      if (lane % 2 == 0) sum16[c / 16] = q.sum16;
      if (lane % 4 == 0) scale[c / 32] = q.scale;
    }
  }
}

// What a gemv_int8x_kernel instance reads: one weight (linear, linear_id), the stacked weights of
// linear_multi, or gate and up of linear_swiglu. A template argument, so that the plain GEMV
// carries none of the others' registers (Q4_K/Q5_K would spill at the 64-register cap).
enum class Int8xMode { Plain, Stacked, Swiglu };

static_assert(kInt8xWarps * 32 == wo::rmsnorm::kThreads && kInt8xWarpsWide * 32 % wo::rmsnorm::kThreads == 0,
              "the fused norm prologue uses rms_norm.cuh's partition");

inline unsigned grid_y(int64_t n) {
  return static_cast<unsigned>(std::max<int64_t>(1, std::min<int64_t>(n, kMaxGridY)));
}

// Which GEMV kernel runs (WORKER_QUANT_GEMV, read once; other values and unset = the default):
// 1 = one row per warp with FP32 activations (the first kernel; the debugging fallback);
// 2 = variant 1 (R rows per warp, gemv_multirow_kernel, was measured slower than 1 on every shape
//     and removed; the value is kept so old command lines still run);
// 3 = int8-activation dp4a kernel for one-token problems (gemv_int8x_kernel), variant 1 for
//     several tokens and for the plain float types. The default: on the H100 every one-token case
//     of the GPU tests passed with it (rel. error <= 4.3e-5, limit 2e-3), 1.2-2.7x the speed of
//     variant 1 except Q6_K rows of 1024 columns (0.92x; figures in NOTES.md, docs/perf.md).
// 4 = variant 3 with L2 prefetch before staging and lane groups for short rows
//     (gemv_int8x_groups_kernel; opt-in).
// 5 = whole blocks per lane (gemv_units_kernel, unit_gemv.cuh) for the types and shapes it takes
//     (Q4_K, Q5_K, Q6_K, Q8_0, Q5_0, MXFP4; see unit_weight), variant 3 for the rest.
constexpr int kDefaultGemvVariant = 5;
inline int gemv_variant() {
  static const int v = static_cast<int>(env_int("WORKER_QUANT_GEMV", 1, 5, kDefaultGemvVariant));
  return v;
}

// Activation terms of the int8 GEMVs (variants 3 and 5; WORKER_ACT_TERMS, read once):
// 2 (the default) = hi + lo/254 per value (~FP16 precision; GEMV relative error ~2e-5);
// 1 (opt-in) = x as int8 steps of amax/127 per 32 values, llama.cpp's q8_1 activations: 8 dp4a
//   and 32 staged bytes fewer per 32 weights, H100 decode +7-15% (docs/perf.md, thirteenth
//   session), GEMV relative error ~5e-3. Not the default: the fixture references' greedy
//   continuations (phi3-tiny Q4_K_M, llama-tiny Q4_K_M and Q8_0) and the GEMV goldens' 1e-2 fail
//   with it, and "correctness unchanged" comes first.
// Variant 1 (WORKER_QUANT_GEMV=1) keeps FP32 activations.
inline int act_terms() {
  static const int v = static_cast<int>(env_int("WORKER_ACT_TERMS", 1, 2, 2));
  return v;
}
// f(std::integral_constant<int, act_terms()>): how every int8 GEMV launcher picks the kernel
// instantiation of the switch's term count.
template <class F> auto with_act_terms(F &&f) {
  return act_terms() == 1 ? f(std::integral_constant<int, 1>{}) : f(std::integral_constant<int, 2>{});
}

// The device's SM count for the grids sized by it; an H100's 132 where the runtime cannot say.
inline int device_sm_count() {
  const int n = wo::occupancy::sm_count();
  return n > 0 ? n : 132;
}

// Whether linear_fused's norm scales the dots by 1/rms instead of the staged row (Fusion::norm_late,
// load_x8_normed). The default; WORKER_NORM_LATE=0 stages the normalized row, whose bits are then
// the separate rms_norm kernel's and a projection's (the fused decode gives the unfused one's
// logits bit for bit). H100, one call, WORKER_NORM_LATE=0 -> default, decode tok/s at depth 0 /
// 2048: Qwen2.5 1463.9/1323.2, 1465.6/1324.1 -> 1498.1/1358.6, 1494.8/1357.1; Phi-3 602.0/505.4,
// 602.5/503.6 -> 607.6/504.1, 607.7/505.5; gpt-oss 551.4/517.6, 547.9/520.7 -> 551.9/521.2,
// 552.2/518.5.
inline bool norm_late() {
  static const bool v = env_int("WORKER_NORM_LATE", 0, 1, 1) != 0;
  return v;
}
// After the staging's barrier: the row's 1/rms from late_part (every lane of every warp), else 1.
__device__ __forceinline__ float late_inv_rms(bool late, const float *late_part, int64_t cols, float eps) {
  return late ? wo::rmsnorm::inv_rms(wo::rmsnorm::part_total(late_part), cols, eps) : 1.0f;
}

// A stacked variant-3 pass whose 8-warp CTAs would be a few more than the SMs (Qwen2.5's q/k/v:
// 1152 rows, 144 CTAs on 132 SMs, twelve SMs holding two) runs CTAs of kInt8xWarpsFit warps
// instead, one per SM (128): every row still one warp's walk, so the same bits.
// WORKER_INT8X_FIT=0: 8-warp CTAs.
constexpr int kInt8xWarpsFit = 9;
inline bool int8x_fit() {
  static const bool v = !env_switched_off("WORKER_INT8X_FIT");
  return v;
}

// Whether a variant-3 GEMV whose rows need more than one 8-warp CTA per SM runs one CTA of
// kInt8xWarpsWide warps per SM instead (launch_int8x); WORKER_INT8X_WIDE=0: 8-warp CTAs only.
inline bool int8x_wide() {
  static const bool v = !env_switched_off("WORKER_INT8X_WIDE");
  return v;
}

// CTAs per SM of the int8 GEMV grid: kInt8xCtasPerSm unless WORKER_INT8X_CTAS_PER_SM (1..8, read
// once) says otherwise; a tuning switch for measuring on a device.
inline int int8x_ctas_per_sm() {
  static const int v = static_cast<int>(env_int("WORKER_INT8X_CTAS_PER_SM", 1, 8, kInt8xCtasPerSm));
  return v;
}

// Warps per row of gemv_int8x_kernel: the fewest of 1, 2, 4 that give each lane one step of
// kInt8xUnroll parts (n_parts <= 32 kInt8xUnroll ksplit), else 4 (two rows per CTA at least). From
// the row alone, never the row count: a stacked pass and the separate GEMVs must split alike.
// Rows of up to 1024 Q8_0/Q5_0 columns (128 parts) stay on one warp. WORKER_INT8X_SPLIT (1, 2
// or 4, read once) fixes it; 1 is the one-warp walk of every row.
inline int int8x_split(int64_t n_parts) {
  static const int forced = static_cast<int>(env_int("WORKER_INT8X_SPLIT", 1, 4, 0));
  if (forced == 1 || forced == 2 || forced == 4) return forced;
  constexpr int64_t kStep = 32LL * kInt8xUnroll;
  return n_parts <= kStep ? 1 : n_parts <= 2 * kStep ? 2 : 4;
}

} // namespace wo::quant::dev
