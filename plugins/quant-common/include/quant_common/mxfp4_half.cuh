// MXFP4 blocks -> FP16 for the grouped (MoE prefill) GEMM, with prmt and one f16x2 multiply per
// two values instead of the float decoder's lookup, int-to-float, multiply and convert per value.
//
// Why: ncu on gpt-oss pp512 put 79% of the prefill in grouped_gemm_kernel, issue-bound (0.67
// instructions per cycle per scheduler at 4 warps) with the tensor cores mostly idle; decoding the
// weight tile to FP16 was most of its instructions.
//
// Every E2M1 magnitude (0, 0.5, 1, 1.5, 2, 3, 4, 6) is an FP16 number whose low byte is 0, so a
// code's FP16 bits are one table byte (prmt picks it by the code's low 3 bits) with the sign put in
// its bit 7; the block scale 2^(e-127) multiplies as an FP16 factor. Both factors are exact and the
// f16x2 multiply rounds once, so the result has the same bits as the float decoder's
// __float2half_rn(value * scale) whenever 2^(e-127) is an FP16 number (e in 103..142, normal or
// subnormal); other scales take the float decoder (no real weight has them). Code 8 (-0) decodes
// as +0, as the float decoder's integer table gives.
#pragma once

#include "quant_common/device_decoders.cuh"
#include "quant_common/scalar_convert.hpp"
#include "quant_common/unit_dots.cuh"

#include <cstdint>

namespace wo::quant::dev {

// FP16 high bytes of the magnitudes 0 0.5 1 1.5 | 2 3 4 6.
constexpr uint32_t kE2m1HalfHi0 = 0x3e3c3800u, kE2m1HalfHi1 = 0x46444240u;
// For the sign: in prmt's sign mode (code bit 3 set) byte m's bit 7 is replicated; it is set for
// every magnitude but 0, so -0 gets no sign. Without the sign mode the byte is 0x00 or 0x80, which
// the shift below moves out of the byte.
constexpr uint32_t kE2m1SignT0 = 0x80808000u, kE2m1SignT1 = 0x80808080u;

// a * b on two FP16 lanes, rounded to nearest even. The host form multiplies in float (exact for
// two FP16 numbers) and rounds once, as the device instruction does.
QC_HD uint32_t hmul2_bits(uint32_t a, uint32_t b) {
#ifdef __CUDA_ARCH__
  uint32_t r;
  asm("mul.rn.f16x2 %0, %1, %2;" : "=r"(r) : "r"(a), "r"(b));
  return r;
#else
  const auto mul = [](uint32_t x, uint32_t y) -> uint32_t {
    return float_to_half(half_to_float(static_cast<uint16_t>(x)) * half_to_float(static_cast<uint16_t>(y)));
  };
  return mul(a & 0xffffu, b & 0xffffu) | (mul(a >> 16, b >> 16) << 16);
#endif
}

// The block scale 2^(e-127) as an FP16 factor in both lanes; false when it is not an FP16 number.
QC_HD bool mxfp4_half_factor(uint32_t e, uint32_t &f2) {
  const int k = static_cast<int>(e) - 127;
  uint32_t h;
  if (k >= -14 && k <= 15)
    h = static_cast<uint32_t>(k + 15) << 10; // normal
  else if (k >= -24 && k < -14)
    h = 1u << (k + 24); // subnormal
  else
    return false;
  f2 = h | (h << 16);
  return true;
}

// One code word (block bytes 1+4w .. 4+4w) -> FP16 pairs: lo[0] = values 4w, 4w+1; lo[1] = 4w+2,
// 4w+3; hi[0], hi[1] the same 16 values further on (the high nibbles).
QC_HD void mxfp4_word_to_half(uint32_t q, uint32_t f2, uint32_t (&lo)[2], uint32_t (&hi)[2]) {
  const uint32_t qh = q >> 16;
  // Nibbles 0..3 of q are values 4w, 4w+16, 4w+1, 4w+17; of qh 4w+2, 4w+18, 4w+3, 4w+19.
  const uint32_t s0 = prmt_signed(kE2m1SignT0, kE2m1SignT1, q),
                 s1 = prmt_signed(kE2m1SignT0, kE2m1SignT1, qh);
  const uint32_t b0 = prmt_signed(kE2m1HalfHi0, kE2m1HalfHi1, q & 0x7777u) | ((s0 << 1) & 0x80808080u);
  const uint32_t b1 = prmt_signed(kE2m1HalfHi0, kE2m1HalfHi1, qh & 0x7777u) | ((s1 << 1) & 0x80808080u);
  // Each byte becomes the high byte of an FP16 lane, its low byte 0.
  lo[0] = hmul2_bits(prmt_signed(b0, 0, 0x2404u), f2);
  hi[0] = hmul2_bits(prmt_signed(b0, 0, 0x3414u), f2);
  lo[1] = hmul2_bits(prmt_signed(b1, 0, 0x2404u), f2);
  hi[1] = hmul2_bits(prmt_signed(b1, 0, 0x3414u), f2);
}

// (hi:lo) >> sh for sh in 0..32: clamped, where UnitWords::funnel wraps at 32 (its shifts are
// below 32); a block's code words start one byte past its scale, so here the shift reaches 32.
QC_HD uint32_t funnel_right(uint32_t lo, uint32_t hi, int sh) {
#ifdef __CUDA_ARCH__
  return __funnelshift_rc(lo, hi, static_cast<uint32_t>(sh));
#else
  return static_cast<uint32_t>(((static_cast<uint64_t>(hi) << 32) | lo) >> sh);
#endif
}

// The 17-byte block at byte offset `off` of a 4-byte aligned buffer -> its 32 values as FP16 pairs
// in value order (out[i] = values 2i, 2i+1). Reads the five words that hold the block.
QC_HD void mxfp4_block_to_half(const uint32_t *words, int off, uint32_t (&out)[16]) {
  UnitWords<5> u;
  uint32_t(&w)[5] = u.w;
  QC_UNROLL
  for (int i = 0; i < 5; ++i)
    w[i] = words[(off >> 2) + i];
  const int sh = 8 * (off & 3);
  uint32_t f2;
  if (mxfp4_half_factor((w[0] >> sh) & 0xffu, f2)) {
    QC_UNROLL
    for (int k = 0; k < 4; ++k) {
      uint32_t lo[2], hi[2];
      mxfp4_word_to_half(funnel_right(w[k], w[k + 1], sh + 8), f2, lo, hi);
      out[2 * k] = lo[0];
      out[2 * k + 1] = lo[1];
      out[8 + 2 * k] = hi[0];
      out[8 + 2 * k + 1] = hi[1];
    }
    return;
  }
  // A scale FP16 cannot hold: the float decoder, rounded per value.
  uint8_t bytes[17];
  for (int i = 0; i < 17; ++i)
    bytes[i] = static_cast<uint8_t>(u.byte(i + (off & 3)));
  for (int part = 0; part < DecMXFP4::PARTS; ++part) {
    float v[DecMXFP4::V];
    DecMXFP4::decode(bytes, part, v);
    for (int g = 0; g < DecMXFP4::V / 4; ++g) {
      const int at = DecMXFP4::start(part, g) / 2; // 4 consecutive values: two pairs
      out[at] = float_to_half(v[4 * g]) | (static_cast<uint32_t>(float_to_half(v[4 * g + 1])) << 16);
      out[at + 1] = float_to_half(v[4 * g + 2]) | (static_cast<uint32_t>(float_to_half(v[4 * g + 3])) << 16);
    }
  }
}

} // namespace wo::quant::dev
