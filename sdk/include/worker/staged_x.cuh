// One token's activation row as the int8 GEMVs' staged terms (SDK 1.9), written by a producer that
// holds whole groups of 32 values anyway, so that the projection after it copies its activations
// instead of quantizing them. Decode attention's last step holds a head's outputs in whole groups
// of 32 (head_dim 64, 96, 128), and every CTA of the o projection after it quantized the whole row
// again between its PDL wait and its first dot (H100, a timing-only build that skipped that
// quantizing in the o projection: Qwen2.5 decode +1.8% / +2.6% at depth 0 / 2048, docs/perf.md).
//
// The arithmetic is the quant codecs' (quant-common's int8x_dots.cuh takes it from here), so a
// consumer that copies the staged row computes the bits it would have computed from the floats:
// per group of 32 values with largest magnitude a, scale s = a / 127 and per value
// hi = rint(x / s), lo = rint((x / s - hi) * 254) (|hi|, |lo| <= 127).
//
// The layout: worker/staged_x.hpp.
// A consumer with one activation term (WORKER_ACT_TERMS=1) reads hi and the hi sums only: a lone
// term's hi is the two-term hi.
#pragma once

#include <worker/staged_x.hpp>

#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>
#include <cstring>

namespace wo::staged {

// A group of zeros (and the lanes past a row's end, which stage zeros) divides a stand-in instead:
// the same results, but every lane's division stays on its fast path. The device's correctly
// rounded division checks its operands (FCHK) and sends a zero dividend or divisor through a
// ~100-instruction subroutine; in the GEMVs' staging the warps past the row's end, and the half-active
// warp whose chain the staging barrier waits for, ran it on every call (ncu source counters, H100:
// 6 of the 9 warps of Qwen2.5's q/k/v pass, 13 of the 16 of its gate/up pass).
__host__ __device__ inline float scale_of(float amax) {
  const bool on = amax > 0.0f;
  const float a = on ? amax : 127.0f;
  return on ? a / 127.0f : 0.0f;
}
__host__ __device__ inline float inv_of(float amax) {
  const bool on = amax > 0.0f;
  const float a = on ? amax : 127.0f;
  return on ? 127.0f / a : 0.0f;
}

// s (hi + lo / 254) of summed terms, the roundings explicit so that no compiler contracts them
// differently in different kernels.
__host__ __device__ inline float sum(float scale, int hi_sum, int lo_sum) {
#ifdef __CUDA_ARCH__
  return __fmul_rn(scale, __fmaf_rn(static_cast<float>(lo_sum), kInvLoSteps, static_cast<float>(hi_sum)));
#else
  return scale * std::fma(static_cast<float>(lo_sum), kInvLoSteps, static_cast<float>(hi_sum));
#endif
}

#ifdef __CUDACC__
// x (scaled by inv = 127 / amax) split into hi + lo / 254 steps, as the rounding sums' bits:
// kRoundMagicBits + hi and + lo (lo 0 with one term); the low byte is the term's int8.
template <int kTerms>
__device__ __forceinline__ void split_bits(float x, float inv, uint32_t &hb, uint32_t &lb) {
  const float t = x * inv;
  const float m = __fadd_rn(t, kRoundMagic); // kRoundMagic + rint(t), exactly
  const float r = __fsub_rn(m, kRoundMagic); // rint(t)
  hb = __float_as_uint(m);
  lb = kTerms == 2 ? __float_as_uint(__fadd_rn(__fmul_rn(__fsub_rn(t, r), kLoSteps), kRoundMagic))
                   : static_cast<uint32_t>(kRoundMagicBits);
}

// Stages the N values of a lane (N consecutive columns from c) where 32 / N consecutive lanes hold
// one group (lanes 0.. of the group in column order; N = 1, 2, 4 or 8). Every lane of the warp calls
// it; lanes of groups past the row's end pass on = false (whole groups are on or off) and write
// nothing. row: the staged row (global memory).
// It runs at the end of its producer's chain. A group of the whole warp (N = 1) reduces with
// redux.sync, one instruction per sum instead of a shuffle tree: the largest magnitude as the
// largest bit pattern (non-negative floats order as their bits, and fmaxf's lane maxima are never
// NaN: fmaxf drops a NaN operand, as the GEMVs' staging does), each half's hi and lo sums packed into
// one int (|sum| <= 16 x 127) with the other half's lanes adding 0. Smaller groups shuffle: redux.sync
// with a different mask per group of the warp cost Qwen2.5 2% at depth 2048 (the merge's N = 4).
template <int N>
__device__ __forceinline__ void write_group(const float (&v)[N], int64_t c, bool on, uint8_t *row,
                                            int64_t cols) {
  static_assert(N == 1 || N == 2 || N == 4 || N == 8, "a group spans 32 / N lanes");
  constexpr int kLanes = kGroup / N;
  const int lane = static_cast<int>(threadIdx.x % 32);
  float amax = 0.0f;
#pragma unroll
  for (int i = 0; i < N; ++i)
    amax = fmaxf(amax, fabsf(v[i]));
  if constexpr (kLanes == 32) {
    amax = __uint_as_float(__reduce_max_sync(0xffffffffu, __float_as_uint(amax)));
  } else {
#pragma unroll
    for (int o = 1; o < kLanes; o <<= 1)
      amax = fmaxf(amax, __shfl_xor_sync(0xffffffffu, amax, o));
  }
  const float inv = inv_of(amax);
  uint8_t hi[N], lo[N];
  int hs = 0, ls = 0;
#pragma unroll
  for (int i = 0; i < N; ++i) {
    uint32_t hb, lb;
    split_bits<2>(v[i], inv, hb, lb);
    hi[i] = static_cast<uint8_t>(hb), lo[i] = static_cast<uint8_t>(lb);
    hs += static_cast<int>(hb) - kRoundMagicBits, ls += static_cast<int>(lb) - kRoundMagicBits;
  }
  uint32_t half[2]; // pack_half of values 0..15 and 16..31 (in the group's first lane at least)
  if constexpr (kLanes == 32) {
    const int both = hs + ls * 65536; // HS + 65536 LS per half, |HS| < 2^15
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int sum = __reduce_add_sync(0xffffffffu, lane / 16 == h ? both : 0);
      const int h_hs = static_cast<int16_t>(sum & 0xffff);
      half[h] = pack_half(h_hs, (sum - h_hs) / 65536);
    }
  } else {
#pragma unroll
    for (int o = 1; o < kLanes / 2; o <<= 1) // within each 16-value half
      hs += __shfl_xor_sync(0xffffffffu, hs, o), ls += __shfl_xor_sync(0xffffffffu, ls, o);
    half[0] = pack_half(hs, ls);
    half[1] = __shfl_xor_sync(0xffffffffu, half[0], kLanes / 2);
  }
  if (!on) return;
  if constexpr (N % 4 == 0) { // whole words (c is a multiple of N)
    const auto word = [](const uint8_t *b) {
      return static_cast<uint32_t>(b[0]) | static_cast<uint32_t>(b[1]) << 8 |
             static_cast<uint32_t>(b[2]) << 16 | static_cast<uint32_t>(b[3]) << 24;
    };
#pragma unroll
    for (int i = 0; i < N; i += 4) {
      *reinterpret_cast<uint32_t *>(row + c + i) = word(hi + i);
      *reinterpret_cast<uint32_t *>(row + lo_offset(cols) + c + i) = word(lo + i);
    }
  } else {
#pragma unroll
    for (int i = 0; i < N; ++i)
      row[c + i] = hi[i], row[lo_offset(cols) + c + i] = lo[i];
  }
  if (lane % kLanes == 0)
    *reinterpret_cast<uint4 *>(row + record_offset(cols, c / kGroup)) =
        make_uint4(__float_as_uint(scale_of(amax)), half[0], half[1], 0u);
}
#endif

// The host's staging of one row (tests): the device's values (rint is round-to-nearest-even, as the
// magic sums round).
inline void stage_row_host(const float *x, int64_t cols, uint8_t *row) {
  for (int64_t g = 0; g < cols / kGroup; ++g) {
    float amax = 0.0f;
    for (int i = 0; i < kGroup; ++i)
      amax = std::fmax(amax, std::fabs(x[g * kGroup + i]));
    const float inv = inv_of(amax);
    Record r{scale_of(amax), {0, 0}, 0};
    for (int half = 0; half < 2; ++half) {
      int hs = 0, ls = 0;
      for (int i = 16 * half; i < 16 * half + 16; ++i) {
        const int64_t col = g * kGroup + i;
        const float t = x[col] * inv;
        const float rt = std::nearbyint(t);
        const int hi = static_cast<int>(rt), lo = static_cast<int>(std::nearbyint((t - rt) * kLoSteps));
        row[col] = static_cast<uint8_t>(static_cast<int8_t>(hi));
        row[lo_offset(cols) + col] = static_cast<uint8_t>(static_cast<int8_t>(lo));
        hs += hi, ls += lo;
      }
      r.half[half] = pack_half(hs, ls);
    }
    std::memcpy(row + record_offset(cols, g), &r, sizeof r);
  }
}

} // namespace wo::staged
