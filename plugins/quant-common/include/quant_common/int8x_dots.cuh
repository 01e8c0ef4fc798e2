// Integer dot products of quantized weight blocks with activations split into two int8 terms, for
// the decode GEMV (gemv_int8x_kernel in linear_kernels.cuh). Compiled for the host too, so CPU tests
// check every type against the reference dequantizer.
//
// Why two terms: one int8 per activation (Q8_1 style) costs ~0.5% relative error, too much for the
// 2e-3 GEMV tolerance and the 1e-2 logit references. Each block of 32 activations with largest
// magnitude a is stored as scale s = a/127 and, per element, hi = rint(x/s) and
// lo = rint((x/s - hi) * 254): x = s * (hi + lo/254) within s/508 = a/64516 (1.5e-5 of the block's
// largest value; FP16 activations round at 4.9e-4 of each value). Both terms multiply the integer
// weight codes with dp4a (4 multiply-adds in one instruction, exact in int32), so the inner loop
// has no integer-to-float conversions and no FP32 math per weight; scales are applied once per
// 4..32 weights.
//
// Per type, XDot<D> splits a block into PARTS lane-sized parts; dot(b, part, x, xb) returns that
// part's share of sum(w * x), where xb indexes the block's first 32-activation group. Offsets that
// multiply the sum of activations (Q4_0's -8, mins, Q6_K's -32) are added once per group by the
// part that owns its start, from the group sums the staging step stores (sum16).
#pragma once

#include "quant_common/device_decoders.cuh"

#include <worker/staged_x.cuh>

#ifdef __CUDACC__
#include <cuda_fp16.h>
#endif

#include <cmath>

namespace wo::quant::dev {

// The staged activations of one token (shared memory on the device): cols int8 hi and lo terms,
// one scale per 32 and the quantized activations' sum per 16.
struct XQ {
  const int8_t *hi, *lo;
  const float *scale; // [cols / 32]
  const float *sum16; // [cols / 16], s * (sum(hi) + sum(lo) / 254) over 16 elements
};

// The staging's arithmetic is the SDK's (worker/staged_x.cuh), which producers that stage a row
// for the next projection share (decode attention's output for the o projection): one definition,
// so that a copied row has the bits the GEMV's own staging would give.
using wo::staged::kInvLoSteps;
using wo::staged::kLoSteps; // lo counts 1/254ths of a scale step: |lo| <= 127
using wo::staged::kRoundMagic;
using wo::staged::kRoundMagicBits;

QC_HD float xq_scale(float amax) { return wo::staged::scale_of(amax); }
QC_HD float xq_inv(float amax) { return wo::staged::inv_of(amax); }
// Splits x (scaled by inv = 127/amax) into hi + lo/254 steps; |hi|, |lo| <= 127. With one term
// (kTerms == 1, see act_terms()) lo is 0: x is hi steps of amax/127, llama.cpp's q8_1 activations.
//
// On the device the roundings add and subtract 1.5 x 2^23 instead of rintf / __float2int_rn: for
// |t| < 2^22 the sum's round-to-nearest-even is rint's, and its low mantissa bits are the integer,
// so the same values come out of two FADDs and an integer subtract on the full-rate pipes. The
// conversions ran on the SM's 16-per-clock conversion unit, three per activation, in every CTA's
// staging: ~1.3 us between the staged x landing and the barrier of a 3072- or 4096-column GEMV
// (H100 phase trace). |t| <= 127 whenever inv is finite.
#ifdef __CUDACC__
// The device's roundings as the sums' bits: kRoundMagicBits + hi and + lo (lo 0 with one term).
template <int kTerms>
__device__ __forceinline__ void xq_split_bits(float x, float inv, uint32_t &hb, uint32_t &lb) {
  wo::staged::split_bits<kTerms>(x, inv, hb, lb);
}
#endif
template <int kTerms = 2> QC_HD void xq_split(float x, float inv, int &hi, int &lo) {
  static_assert(kTerms == 1 || kTerms == 2, "one or two activation terms");
#ifdef __CUDA_ARCH__
  uint32_t hb, lb;
  xq_split_bits<kTerms>(x, inv, hb, lb);
  hi = static_cast<int>(hb) - kRoundMagicBits;
  lo = static_cast<int>(lb) - kRoundMagicBits;
#else
  const float t = x * inv;
  const float r = std::nearbyint(t);
  hi = static_cast<int>(r);
  lo = kTerms == 2 ? static_cast<int>(std::nearbyint((t - r) * kLoSteps)) : 0;
#endif
}
// scale (hi + lo / 254), the roundings explicit: contracted or not per kernel instance, the staged
// sums (hence every dot of a type with a min or offset) differed between the unit GEMV's SwiGLU
// and plain instances
QC_HD float xq_sum(float scale, int hi_sum, int lo_sum) { return wo::staged::sum(scale, hi_sum, lo_sum); }

// sum of 4 int8 products plus c (the host emulates the instruction).
QC_HD int dp4a(uint32_t a, uint32_t b, int c) {
#ifdef __CUDA_ARCH__
  return __dp4a(static_cast<int>(a), static_cast<int>(b), c);
#else
  for (int i = 0; i < 4; ++i)
    c += static_cast<int8_t>(a >> (8 * i)) * static_cast<int8_t>(b >> (8 * i));
  return c;
#endif
}

// Byte i of the result is byte (s >> 4i) & 7 of the 8 bytes {x, y}.
QC_HD uint32_t byte_perm(uint32_t x, uint32_t y, uint32_t s) {
#ifdef __CUDA_ARCH__
  return __byte_perm(x, y, s & 0x7777u);
#else
  const uint64_t xy = (static_cast<uint64_t>(y) << 32) | x;
  uint32_t r = 0;
  for (int i = 0; i < 4; ++i)
    r |= static_cast<uint32_t>((xy >> (8 * ((s >> (4 * i)) & 7u))) & 0xffu) << (8 * i);
  return r;
#endif
}

// An int8 word of staged activations at a 4-byte aligned offset.
QC_HD uint32_t xw(const int8_t *p, int64_t off) {
#ifdef __CUDA_ARCH__
  return *reinterpret_cast<const uint32_t *>(p + off);
#else
  uint32_t v;
  std::memcpy(&v, p + off, 4);
  return v;
#endif
}

// 16 bytes at a 16-byte aligned address as four words (one vector load on the device).
QC_HD void ld16(const void *p, uint32_t (&w)[4]) {
#ifdef __CUDA_ARCH__
  const uint4 v = *reinterpret_cast<const uint4 *>(p);
  w[0] = v.x, w[1] = v.y, w[2] = v.z, w[3] = v.w;
#else
  std::memcpy(w, p, 16);
#endif
}

// IEEE half -> float; the device uses the hardware conversion (same value, fewer instructions).
QC_HD float h2f(uint16_t h) {
#ifdef __CUDA_ARCH__
  return __half2float(__ushort_as_half(h));
#else
  return half_to_float(h);
#endif
}

// Exact weighted sum hi + lo/254 of one group, as a float count of 1/254 steps.
QC_HD float steps(int ih, int il) { return static_cast<float>(ih * 254 + il); }

QC_HD float sum32(const XQ &x, int64_t xb) { return x.sum16[2 * xb] + x.sum16[2 * xb + 1]; }

// 4 byte lanes <- bit k (k = 0..3) of v, at bit 0 of byte k: spreads the four bits 7 places apart
// with one multiply (no carries: the shifted copies do not overlap).
QC_HD uint32_t spread4(uint32_t v) { return ((v & 0xfu) * 0x00204081u) & 0x01010101u; }

// Only the block types specialized below take the int8 path (PARTS > 0).
template <class D> struct XDot { static constexpr int PARTS = 0; };

// Q4_0 / Q4_1 / Q5_0 / Q5_1 / MXFP4: part p holds bytes 4p..4p+3 of the nibbles: values 4p+i (low
// nibbles) and 16+4p+i (high nibbles), i.e. activation words p and 4+p of the block.
template <> struct XDot<DecQ4_0> {
  static constexpr int PARTS = 4;
  static constexpr bool kAligned16 = false;
  template <int kTerms = 2> QC_HD static float dot(const uint8_t *b, int part, const XQ &x, int64_t xb) {
    const uint32_t q = ld4_a2(b + 2 + 4 * part);
    const uint32_t lo = q & 0x0f0f0f0fu, hi = (q >> 4) & 0x0f0f0f0fu;
    const int8_t *xh = x.hi + 32 * xb, *xl = x.lo + 32 * xb;
    const int ih = dp4a(lo, xw(xh, 4 * part), dp4a(hi, xw(xh, 16 + 4 * part), 0));
    const int il = kTerms == 2 ? dp4a(lo, xw(xl, 4 * part), dp4a(hi, xw(xl, 16 + 4 * part), 0)) : 0;
    const float d = h2f(ld2(b));
    float r = d * x.scale[xb] * kInvLoSteps * steps(ih, il);
    if (part == 0) r -= 8.0f * d * sum32(x, xb); // codes are stored +8
    return r;
  }
};

template <> struct XDot<DecQ4_1> {
  static constexpr int PARTS = 4;
  static constexpr bool kAligned16 = false;
  template <int kTerms = 2> QC_HD static float dot(const uint8_t *b, int part, const XQ &x, int64_t xb) {
    const uint32_t q = ld4_a4(b + 4 + 4 * part);
    const uint32_t lo = q & 0x0f0f0f0fu, hi = (q >> 4) & 0x0f0f0f0fu;
    const int8_t *xh = x.hi + 32 * xb, *xl = x.lo + 32 * xb;
    const int ih = dp4a(lo, xw(xh, 4 * part), dp4a(hi, xw(xh, 16 + 4 * part), 0));
    const int il = kTerms == 2 ? dp4a(lo, xw(xl, 4 * part), dp4a(hi, xw(xl, 16 + 4 * part), 0)) : 0;
    const uint32_t dm = ld4_a4(b);
    float r = h2f(static_cast<uint16_t>(dm)) * x.scale[xb] * kInvLoSteps * steps(ih, il);
    if (part == 0) r += h2f(static_cast<uint16_t>(dm >> 16)) * sum32(x, xb);
    return r;
  }
};

// 5-bit codes: bit j of qh is the fifth bit of value j, bit 16+j that of value 16+j.
QC_HD void q5_codes(uint32_t q, uint32_t qh, int part, uint32_t &lo, uint32_t &hi) {
  lo = (q & 0x0f0f0f0fu) | (spread4(qh >> (4 * part)) << 4);
  hi = ((q >> 4) & 0x0f0f0f0fu) | (spread4(qh >> (4 * part + 16)) << 4);
}

template <> struct XDot<DecQ5_0> {
  static constexpr int PARTS = 4;
  static constexpr bool kAligned16 = false;
  template <int kTerms = 2> QC_HD static float dot(const uint8_t *b, int part, const XQ &x, int64_t xb) {
    uint32_t lo, hi;
    q5_codes(ld4_a2(b + 6 + 4 * part), ld4_a2(b + 2), part, lo, hi);
    const int8_t *xh = x.hi + 32 * xb, *xl = x.lo + 32 * xb;
    const int ih = dp4a(lo, xw(xh, 4 * part), dp4a(hi, xw(xh, 16 + 4 * part), 0));
    const int il = kTerms == 2 ? dp4a(lo, xw(xl, 4 * part), dp4a(hi, xw(xl, 16 + 4 * part), 0)) : 0;
    const float d = h2f(ld2(b));
    float r = d * x.scale[xb] * kInvLoSteps * steps(ih, il);
    if (part == 0) r -= 16.0f * d * sum32(x, xb);
    return r;
  }
};

template <> struct XDot<DecQ5_1> {
  static constexpr int PARTS = 4;
  static constexpr bool kAligned16 = false;
  template <int kTerms = 2> QC_HD static float dot(const uint8_t *b, int part, const XQ &x, int64_t xb) {
    uint32_t lo, hi;
    q5_codes(ld4_a4(b + 8 + 4 * part), ld4_a4(b + 4), part, lo, hi);
    const int8_t *xh = x.hi + 32 * xb, *xl = x.lo + 32 * xb;
    const int ih = dp4a(lo, xw(xh, 4 * part), dp4a(hi, xw(xh, 16 + 4 * part), 0));
    const int il = kTerms == 2 ? dp4a(lo, xw(xl, 4 * part), dp4a(hi, xw(xl, 16 + 4 * part), 0)) : 0;
    const uint32_t dm = ld4_a4(b);
    float r = h2f(static_cast<uint16_t>(dm)) * x.scale[xb] * kInvLoSteps * steps(ih, il);
    if (part == 0) r += h2f(static_cast<uint16_t>(dm >> 16)) * sum32(x, xb);
    return r;
  }
};

// Q8_0: part p holds values 8p..8p+7 (activation words 2p, 2p+1); int8 codes feed dp4a as they are.
template <> struct XDot<DecQ8_0> {
  static constexpr int PARTS = 4;
  static constexpr bool kAligned16 = false;
  template <int kTerms = 2> QC_HD static float dot(const uint8_t *b, int part, const XQ &x, int64_t xb) {
    const uint32_t q0 = ld4_a2(b + 2 + 8 * part), q1 = ld4_a2(b + 6 + 8 * part);
    const int8_t *xh = x.hi + 32 * xb, *xl = x.lo + 32 * xb;
    const int ih = dp4a(q0, xw(xh, 8 * part), dp4a(q1, xw(xh, 8 * part + 4), 0));
    const int il = kTerms == 2 ? dp4a(q0, xw(xl, 8 * part), dp4a(q1, xw(xl, 8 * part + 4), 0)) : 0;
    return h2f(ld2(b)) * x.scale[xb] * kInvLoSteps * steps(ih, il);
  }
};

// MXFP4 codes -> int8 twice the E2M1 value (mxfp4_value), four at a time: the code's low 3 bits
// pick a byte of the positive or the negative table (byte_perm), bit 3 picks the table.
QC_HD uint32_t mxfp4_bytes(uint32_t codes) { // codes: one 4-bit code per byte
  const uint32_t t = codes | (codes >> 4);
  const uint32_t sel = (t & 0xffu) | ((t >> 8) & 0xff00u);       // code k in nibble k
  const uint32_t pos = byte_perm(0x03020100u, 0x0c080604u, sel); // 0 1 2 3 | 4 6 8 12
  const uint32_t neg = byte_perm(0xfdfeff00u, 0xf4f8fafcu, sel); // negated
  const uint32_t m = ((codes >> 3) & 0x01010101u) * 0xffu;       // 0xff where the sign bit is set
  return (pos & ~m) | (neg & m);
}

template <> struct XDot<DecMXFP4> {
  static constexpr int PARTS = 4;
  static constexpr bool kAligned16 = false;
  template <int kTerms = 2> QC_HD static float dot(const uint8_t *b, int part, const XQ &x, int64_t xb) {
    const uint32_t q = ld4_a1(b + 1 + 4 * part);
    const uint32_t lo = mxfp4_bytes(q & 0x0f0f0f0fu), hi = mxfp4_bytes((q >> 4) & 0x0f0f0f0fu);
    const int8_t *xh = x.hi + 32 * xb, *xl = x.lo + 32 * xb;
    const int ih = dp4a(lo, xw(xh, 4 * part), dp4a(hi, xw(xh, 16 + 4 * part), 0));
    const int il = kTerms == 2 ? dp4a(lo, xw(xl, 4 * part), dp4a(hi, xw(xl, 16 + 4 * part), 0)) : 0;
    return e8m0_to_float_half(b[0]) * x.scale[xb] * kInvLoSteps * steps(ih, il);
  }
};

// Q4_K / Q5_K: part p = 2*grp + h takes 16 nibble bytes of 64-value group grp with one vector load:
// low nibbles are values 64grp + 16h + k (sub-block 2grp), high nibbles the same + 32 (2grp + 1).
// Blocks are 144 / 176 bytes, so 16-byte alignment holds when the row stride and base do.
template <class K> struct XDotK {
  static constexpr int PARTS = 8;
  static constexpr bool kAligned16 = true;
  template <int kTerms = 2> QC_HD static float dot(const uint8_t *b, int part, const XQ &x, int64_t xb) {
    const int grp = part >> 1, h = part & 1;
    uint32_t q[4], qh[4] = {0, 0, 0, 0};
    ld16(b + K::kQs + 32 * grp + 16 * h, q);
    if (K::kHighBits) ld16(b + 16 + 16 * h, qh);
    const int64_t xa = xb + 2 * grp, xc = xa + 1; // activation groups of the two sub-blocks
    uint32_t ha[4], la[4] = {0, 0, 0, 0}, hc[4], lc[4] = {0, 0, 0, 0};
    ld16(x.hi + 32 * xa + 16 * h, ha);
    ld16(x.hi + 32 * xc + 16 * h, hc);
    if (kTerms == 2) {
      ld16(x.lo + 32 * xa + 16 * h, la);
      ld16(x.lo + 32 * xc + 16 * h, lc);
    }
    int iha = 0, ila = 0, ihc = 0, ilc = 0;
    QC_UNROLL
    for (int k = 0; k < 4; ++k) {
      uint32_t lo = q[k] & 0x0f0f0f0fu, hi = (q[k] >> 4) & 0x0f0f0f0fu;
      if (K::kHighBits) {
        lo |= ((qh[k] >> (2 * grp)) & 0x01010101u) << 4;
        hi |= ((qh[k] >> (2 * grp + 1)) & 0x01010101u) << 4;
      }
      iha = dp4a(lo, ha[k], iha);
      ihc = dp4a(hi, hc[k], ihc);
      if (kTerms == 2) ila = dp4a(lo, la[k], ila), ilc = dp4a(hi, lc[k], ilc);
    }
    const uint32_t dm = ld4_a4(b);
    uint8_t sc1, m1, sc2, m2;
    k_scale_min(2 * grp, b + 4, sc1, m1);
    k_scale_min(2 * grp + 1, b + 4, sc2, m2);
    float r = h2f(static_cast<uint16_t>(dm)) * kInvLoSteps *
              (static_cast<float>(sc1) * x.scale[xa] * steps(iha, ila) +
               static_cast<float>(sc2) * x.scale[xc] * steps(ihc, ilc));
    if (h == 0)
      r -= h2f(static_cast<uint16_t>(dm >> 16)) *
           (static_cast<float>(m1) * sum32(x, xa) + static_cast<float>(m2) * sum32(x, xc));
    return r;
  }
};
struct Q4KLayout {
  static constexpr int kQs = 16;
  static constexpr bool kHighBits = false;
};
struct Q5KLayout {
  static constexpr int kQs = 48;
  static constexpr bool kHighBits = true;
};
template <> struct XDot<DecQ4_K> : XDotK<Q4KLayout> {};
template <> struct XDot<DecQ5_K> : XDotK<Q5KLayout> {};

// Q6_K: the decoder's parts (4 positions l0.. of one 128-value half n, in its four quarters k at
// 128n + 32k + l0); codes 0..63 stored +32, one int8 scale per 16 values.
template <> struct XDot<DecQ6_K> {
  static constexpr int PARTS = 16;
  static constexpr bool kAligned16 = false;
  template <int kTerms = 2> QC_HD static float dot(const uint8_t *b, int part, const XQ &x, int64_t xb) {
    const int n = part / 8, l0 = 4 * (part % 8);
    const uint32_t ql0 = ld4_a2(b + 64 * n + l0), ql1 = ld4_a2(b + 64 * n + 32 + l0);
    const uint32_t qh = ld4_a2(b + 128 + 32 * n + l0);
    const auto *sc = reinterpret_cast<const int8_t *>(b + 192 + 8 * n + l0 / 16);
    const uint32_t q[4] = {(ql0 & 0x0f0f0f0fu) | ((qh & 0x03030303u) << 4),
                           (ql1 & 0x0f0f0f0fu) | (((qh >> 2) & 0x03030303u) << 4),
                           ((ql0 >> 4) & 0x0f0f0f0fu) | (((qh >> 4) & 0x03030303u) << 4),
                           ((ql1 >> 4) & 0x0f0f0f0fu) | (((qh >> 6) & 0x03030303u) << 4)};
    float r = 0.0f, off = 0.0f;
    QC_UNROLL
    for (int k = 0; k < 4; ++k) {
      const int64_t g = xb + 4 * n + k;
      const int ih = dp4a(q[k], xw(x.hi + 32 * g, l0), 0);
      const int il = kTerms == 2 ? dp4a(q[k], xw(x.lo + 32 * g, l0), 0) : 0;
      const float s = static_cast<float>(sc[2 * k]);
      r += s * x.scale[g] * steps(ih, il);
      off += s * x.sum16[2 * g + l0 / 16];
    }
    const float d = h2f(ld2(b + 208));
    r *= d * kInvLoSteps;
    if ((part & 3) == 0) r -= 32.0f * d * off; // the part at the start of each 16-value scale group
    return r;
  }
};

// Whether D has an int8-activation dot (the plain float types do not).
template <class D> constexpr bool has_xdot() { return XDot<D>::PARTS > 0; }

} // namespace wo::quant::dev
