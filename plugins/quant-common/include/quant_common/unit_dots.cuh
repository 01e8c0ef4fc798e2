// Whole-block int8 dots for the unit GEMV (gemv_units_kernel, unit_gemv.cuh). Compiled for the host
// too, so CPU tests check every type against the reference dequantizer.
//
// Why: the part-per-lane dots of int8x_dots.cuh spend 9-16 instructions per weight (ncu on the
// H100: 7.7M warp instructions for a 15 MB Q4_K GEMV) on per-part index math, byte loads of
// 17/22/34-byte blocks and scale decoding repeated for every 8-32 weights. Here one lane owns a
// unit of U whole blocks, loaded with U * BYTES / A vector loads (A = 8 or 16 bytes) into
// registers; every byte offset inside the unit is a compile-time constant, so splitting codes,
// realigning 2-byte-aligned fields (one funnel shift) and decoding scales happen once per block.
//
// The activations are staged as in int8x_dots.cuh (scale per 32, hi + lo/254 int8 terms), but laid
// out for lanes that read different column blocks at the same instruction: 16-byte granules are
// XOR-swizzled inside each 128-byte line (see granule_slot), and each group of 32 keeps
// {scale, sum, integer sums of its hi and lo terms} in one 16-byte meta record (meta_slot). MXFP4
// stages each group in the order of its code words' nibbles (XOrder::Nibbles).
#pragma once

#include "quant_common/device_decoders.cuh"
#include "quant_common/int8x_dots.cuh"

#include <cstdint>
#include <cstring>
#include <type_traits>

namespace wo::quant::dev {

// The 16-byte granule g (= 2 * group + half) of the hi or lo terms of a staged row lives at
// granule_slot(g, QU): the three low bits are XORed with (group / QU) & 7, a function of the
// 128-byte line only when QU is a multiple of 4, so the map permutes each line. Lanes whose reads
// start QU groups apart then read 8 different bank quads: QU is the groups between neighbouring
// lanes' reads (a unit's, or for Q6_K, whose blocks two lanes share, a half block's).
// Unsigned 32-bit index math: a row's groups fit, and signed 64-bit division costs four
// instructions per block in the dots.
template <int QU> QC_HD int granule_slot(int g) {
  static_assert(QU % 4 == 0, "the swizzle key must be constant over a 128-byte line");
  const auto u = static_cast<uint32_t>(g);
  return static_cast<int>((u & ~7u) | ((u ^ ((u >> 1) / QU)) & 7u));
}
// The meta record of group q: the same idea with the line index as the key.
QC_HD int meta_slot(int q) {
  const auto u = static_cast<uint32_t>(q);
  return static_cast<int>((u & ~7u) | ((u ^ (u >> 3)) & 7u));
}

// 16 staged int8 values as four words.
struct X16 {
  uint32_t w[4];
};
struct XMeta {
  float scale, sum32;     // sum32: the sum of the group's 32 staged values (xq_sum), or for dots
                          // that declare kHalfSums the hi and lo term sums of values 0..15 as an
                          // int16 pair (see half_sums)
  int32_t sum_hi, sum_lo; // the sums of its hi and lo int8 terms
};
// The hi and lo term sums of values 0..15 of a group staged with half sums (|sum| <= 16 x 127), as
// the SDK's staged rows pack each half's (worker/staged_x.hpp).
QC_HD uint32_t pack_half_sums(int hs, int ls) { return wo::staged::pack_half(hs, ls); }
QC_HD void half_sums(const XMeta &m, int &hs, int &ls) {
  uint32_t w;
  std::memcpy(&w, &m.sum32, sizeof(w));
  wo::staged::unpack_half(w, hs, ls);
}

// Where the staged bytes of a group of 32 keep value i. Plain: at i. Nibbles (MXFP4): in the order
// a code word's nibbles come out of prmt: code word w (bytes 4w..4w+3 of the block) holds values
// 4w..4w+3 in its low nibbles and 16+4w..19+4w in its high ones, so its nibbles 0..3 are values
// (4w, 16+4w, 4w+1, 17+4w) and nibbles 4..7 are (4w+2, 18+4w, 4w+3, 19+4w); staged word 2w and
// 2w+1 hold those activations, and the decoded bytes meet them without an interleave.
enum class XOrder { Plain, Nibbles };
QC_HD int staged_index(XOrder order, int i) {
  if (order == XOrder::Plain) return i;
  const int h = i / 16, w = (i % 16) / 4, j = i % 4; // i = 16h + 4w + j
  return 4 * (2 * w + j / 2) + 2 * (j % 2) + h;
}

// The staged activations of one token, as gemv_units_kernel lays them out.
template <int QU> struct XU {
  const uint8_t *hi, *lo; // cols bytes each, swizzled granules
  const XMeta *meta;      // cols / 32 records, swizzled
  uint32_t held[2];       // the dot's register constants (UnitDot<D>::kHeld), if any
  QC_HD X16 hi16(int q, int h) const { return load(hi, 2 * q + h); }
  QC_HD X16 lo16(int q, int h) const { return load(lo, 2 * q + h); }
  QC_HD XMeta m(int q) const { return meta[meta_slot(q)]; }
  QC_HD static X16 load(const uint8_t *base, int g) {
    X16 r;
    ld16(base + 16 * granule_slot<QU>(g), r.w);
    return r;
  }
};

// A unit's bytes as little-endian words; byte offsets are compile-time constants once the callers'
// loops are unrolled (a runtime index would put the array in local memory).
template <int NW> struct UnitWords {
  uint32_t w[NW];
  QC_HD uint32_t word(int o) const { // 4 bytes at byte offset o (any alignment)
    const int i = o >> 2, s = o & 3;
    if (s == 0) return w[i];
    return funnel(w[i], w[i + 1 < NW ? i + 1 : NW - 1], 8 * s);
  }
  QC_HD uint32_t byte(int o) const { return (w[o >> 2] >> (8 * (o & 3))) & 0xffu; }
  QC_HD uint16_t half(int o) const { return static_cast<uint16_t>(word(o)); }
  QC_HD static uint32_t funnel(uint32_t lo, uint32_t hi, int sh) {
#ifdef __CUDA_ARCH__
    return __funnelshift_r(lo, hi, sh);
#else
    return static_cast<uint32_t>(((static_cast<uint64_t>(hi) << 32) | lo) >> sh);
#endif
  }
};

// sum over four words of dp4a(codes, x).
QC_HD int dp4a4(const uint32_t (&c)[4], const X16 &x, int acc = 0) {
  QC_UNROLL
  for (int i = 0; i < 4; ++i)
    acc = dp4a(c[i], x.w[i], acc);
  return acc;
}

// Only the block types specialized below take the unit path (U > 0).
template <class D> struct UnitDot { static constexpr int U = 0; };
// The staging order of a type's activations (XOrder::Plain unless the dot declares kOrder).
template <class T, class = void> struct UnitOrder { static constexpr XOrder value = XOrder::Plain; };
template <class T> struct UnitOrder<T, std::void_t<decltype(T::kOrder)>> {
  static constexpr XOrder value = T::kOrder;
};
// Lanes per block (kSplit; 1 unless declared): Q6_K's 210-byte blocks are read by two lanes, one
// 128-value half each, so a 32-lane chunk is 16 blocks (see gemv_units_kernel).
template <class T, class = void> struct UnitSplit { static constexpr int value = 1; };
template <class T> struct UnitSplit<T, std::void_t<decltype(T::kSplit)>> {
  static constexpr int value = T::kSplit;
};
// Whether the staging writes half sums into XMeta::sum32 (kHalfSums).
template <class T, class = void> struct UnitHalfSums { static constexpr bool value = false; };
template <class T> struct UnitHalfSums<T, std::void_t<decltype(T::kHalfSums)>> {
  static constexpr bool value = T::kHalfSums;
};
// The constants a type's dot wants in registers (XU::held), zeros if it declares none.
template <class T, class = void> struct UnitHeld {
  QC_HD static constexpr uint32_t word(int) { return 0; }
};
template <class T> struct UnitHeld<T, std::void_t<decltype(T::kHeld0)>> {
  QC_HD static constexpr uint32_t word(int i) { return i == 0 ? T::kHeld0 : T::kHeld1; }
};

// The 32-value group dot with kTerms activation terms (act_terms()), as counts of 1/254 steps:
// codes c[0..7] are values 0..31 of the group. With one term the lo terms are 0 (xq_split) and
// are neither read nor multiplied: the same value as the two-term dot over that staging.
template <int kTerms, int QU>
QC_HD float group_steps(const uint32_t (&lo16)[4], const uint32_t (&hi16)[4], const XU<QU> &x, int q) {
  const int ih = dp4a4(hi16, x.hi16(q, 1), dp4a4(lo16, x.hi16(q, 0)));
  const int il = kTerms == 2 ? dp4a4(hi16, x.lo16(q, 1), dp4a4(lo16, x.lo16(q, 0))) : 0;
  return steps(ih, il);
}

// Q8_0 (34-byte blocks): four blocks per unit (136 bytes, 8-byte aligned).
template <> struct UnitDot<DecQ8_0> {
  static constexpr int U = 4, A = 8, BYTES = U * 34, QU = 4;
  template <int kTerms = 2, int NW>
  QC_HD static float block(const UnitWords<NW> &u, int k, const XU<QU> &x, int q) {
    const int o = 34 * k;
    uint32_t c0[4], c1[4];
    QC_UNROLL
    for (int i = 0; i < 4; ++i) {
      c0[i] = u.word(o + 2 + 4 * i);
      c1[i] = u.word(o + 18 + 4 * i);
    }
    return h2f(u.half(o)) * x.m(q).scale * kInvLoSteps * group_steps<kTerms>(c0, c1, x, q);
  }
};

// Q5_0 (22-byte blocks): four per unit (88 bytes). Value j is nibble j of qs (low nibbles j < 16,
// high nibbles 16 + j) with its fifth bit in qh bit j; codes are stored +16.
template <> struct UnitDot<DecQ5_0> {
  static constexpr int U = 4, A = 8, BYTES = U * 22, QU = 4;
  template <int kTerms = 2, int NW>
  QC_HD static float block(const UnitWords<NW> &u, int k, const XU<QU> &x, int q) {
    const int o = 22 * k;
    const uint32_t qh = u.word(o + 2);
    uint32_t lo[4], hi[4];
    QC_UNROLL
    for (int i = 0; i < 4; ++i)
      q5_codes(u.word(o + 6 + 4 * i), qh, i, lo[i], hi[i]);
    const XMeta m = x.m(q);
    const float d = h2f(u.half(o));
    // d s steps / 254 - 16 d sum32, the roundings explicit (fma_rn)
    return fma_rn(mul_rn(mul_rn(d, m.scale), kInvLoSteps), group_steps<kTerms>(lo, hi, x, q),
                  -mul_rn(mul_rn(16.0f, d), m.sum32));
  }
};

// prmt with its sign mode: selector nibble k picks byte (k & 7) of {y, x}; with bit 3 set the
// result byte is that byte's sign bit replicated (0x00 or 0xff). Only the low 16 bits of s count.
QC_HD uint32_t prmt_signed(uint32_t x, uint32_t y, uint32_t s) {
#ifdef __CUDA_ARCH__
  uint32_t r;
  asm("prmt.b32 %0, %1, %2, %3;" : "=r"(r) : "r"(x), "r"(y), "r"(s));
  return r;
#else
  const uint64_t xy = (static_cast<uint64_t>(y) << 32) | x;
  uint32_t r = 0;
  for (int i = 0; i < 4; ++i) {
    const uint32_t sel = (s >> (4 * i)) & 0xfu;
    uint32_t b = static_cast<uint32_t>(xy >> (8 * (sel & 7u))) & 0xffu;
    if (sel & 8u) b = (b & 0x80u) ? 0xffu : 0u;
    r |= b << (8 * i);
  }
  return r;
#endif
}

// MXFP4 codes -> int8 (kMxfp4Bias + twice the E2M1 value), four per word in nibble order, with two
// sign-mode prmt and one subtraction per four codes (the byte_perm tables of variant 3 need a
// masked selector, two lookups and a select per four, then an interleave):
//   P = prmt(T, q):        code m (positive) -> T[m] = 0x8c + mag(m); code 8+m -> 0xff (T[m] >= 0x80)
//   N = prmt(N, q ^ 0x8):  code m -> 0x00 (N[m] < 0x80);              code 8+m -> N[m] = 0x73 + mag(m)
//   P - N = 0x8c + value, byte by byte without borrows (P >= N in every byte),
// with mag = 0 1 2 3 4 6 8 12. As int8 that is value - 116: the dot adds 116 x the group's sum of
// activation terms back (XMeta::sum_hi / sum_lo), in integers.
constexpr int kMxfp4Bias = 0x8c - 256;
constexpr uint32_t kMxfp4T0 = 0x8f8e8d8cu, kMxfp4T1 = 0x98949290u; // 0x8c + 0 1 2 3 | 4 6 8 12
constexpr uint32_t kMxfp4N0 = 0x76757473u, kMxfp4N1 = 0x7f7b7977u; // 0x73 + 0 1 2 3 | 4 6 8 12
// kT0 / kN0: prmt takes one table word as an immediate and the other from a register; the unit
// kernel passes these two in registers it loaded from shared memory (XU::held), because a
// constant one is re-materialized by ptxas before every prmt (82 IMAD.U32 moves in the loop).
QC_HD void mxfp4_biased(uint32_t q, uint32_t &v0, uint32_t &v1, uint32_t kT0 = kMxfp4T0,
                        uint32_t kN0 = kMxfp4N0) {
  constexpr uint32_t kT1 = kMxfp4T1, kN1 = kMxfp4N1;
  const uint32_t qn = q ^ 0x88888888u;
  v0 = prmt_signed(kT0, kT1, q) - prmt_signed(kN0, kN1, qn);             // nibbles 0..3
  v1 = prmt_signed(kT0, kT1, q >> 16) - prmt_signed(kN0, kN1, qn >> 16); // nibbles 4..7
}

// MXFP4 (17-byte blocks): eight per unit (136 bytes), activations staged in nibble order.
template <> struct UnitDot<DecMXFP4> {
  static constexpr int U = 8, A = 8, BYTES = U * 17, QU = 8;
  static constexpr XOrder kOrder = XOrder::Nibbles;
  static constexpr uint32_t kHeld0 = kMxfp4T0, kHeld1 = kMxfp4N0;
  template <int kTerms = 2, int NW>
  QC_HD static float block(const UnitWords<NW> &u, int k, const XU<QU> &x, int q) {
    const int o = 17 * k;
    const X16 h[2] = {x.hi16(q, 0), x.hi16(q, 1)};
    X16 l[2] = {};
    if (kTerms == 2) l[0] = x.lo16(q, 0), l[1] = x.lo16(q, 1);
    int ih = 0, il = 0;
    QC_UNROLL
    for (int i = 0; i < 4; ++i) { // code word i: staged words 2i, 2i+1
      uint32_t v0, v1;
      mxfp4_biased(u.word(o + 1 + 4 * i), v0, v1, x.held[0], x.held[1]);
      ih = dp4a(v1, h[i / 2].w[2 * (i % 2) + 1], dp4a(v0, h[i / 2].w[2 * (i % 2)], ih));
      if (kTerms == 2) il = dp4a(v1, l[i / 2].w[2 * (i % 2) + 1], dp4a(v0, l[i / 2].w[2 * (i % 2)], il));
    }
    const XMeta m = x.m(q);
    ih -= kMxfp4Bias * m.sum_hi;
    if (kTerms == 2) il -= kMxfp4Bias * m.sum_lo; // one term: il stays a constant 0
    return e8m0_to_float_half(static_cast<uint8_t>(u.byte(o))) * m.scale * kInvLoSteps * steps(ih, il);
  }
};

// Q4_K / Q5_K (144 / 176-byte blocks, 16-byte aligned): one block per unit. The twelve scale bytes
// give the eight 6-bit scales and mins with four mask-and-shift words.
QC_HD void k_scales(uint32_t s0, uint32_t s1, uint32_t s2, uint32_t (&sc)[2], uint32_t (&mn)[2]) {
  sc[0] = s0 & 0x3f3f3f3fu; // sub-blocks 0..3, one per byte
  mn[0] = s1 & 0x3f3f3f3fu;
  sc[1] = (s2 & 0x0f0f0f0fu) | ((s0 >> 2) & 0x30303030u); // 4..7
  mn[1] = ((s2 >> 4) & 0x0f0f0f0fu) | ((s1 >> 2) & 0x30303030u);
}

template <class K> struct UnitDotK {
  static constexpr int U = 1, A = 16, BYTES = K::kBytes, QU = 8;
  template <int kTerms = 2, int NW>
  QC_HD static float block(const UnitWords<NW> &u, int, const XU<QU> &x, int q) {
    uint32_t sc[2], mn[2];
    k_scales(u.w[1], u.w[2], u.w[3], sc, mn);
    float acc = 0.0f, acc_min = 0.0f;
    QC_UNROLL
    for (int g = 0; g < 4; ++g) { // sub-blocks 2g (low nibbles) and 2g+1 (high nibbles)
      uint32_t lo[8], hi[8];
      QC_UNROLL
      for (int i = 0; i < 8; ++i) {
        const uint32_t c = u.w[K::kQs / 4 + 8 * g + i];
        lo[i] = c & 0x0f0f0f0fu;
        hi[i] = (c >> 4) & 0x0f0f0f0fu;
        if (K::kHighBits) {
          const uint32_t h = u.w[4 + i];
          lo[i] |= ((h >> (2 * g)) & 0x01010101u) << 4;
          hi[i] |= ((h >> (2 * g + 1)) & 0x01010101u) << 4;
        }
      }
      QC_UNROLL
      for (int s = 0; s < 2; ++s) {
        const int j = 2 * g + s;
        const int qj = q + j;
        const uint32_t(&c)[8] = s == 0 ? lo : hi;
        const uint32_t a[4] = {c[0], c[1], c[2], c[3]}, b[4] = {c[4], c[5], c[6], c[7]};
        const XMeta m = x.m(qj);
        const int scale = static_cast<int>((sc[j / 4] >> (8 * (j % 4))) & 0xffu);
        const int mins = static_cast<int>((mn[j / 4] >> (8 * (j % 4))) & 0xffu);
        // acc += scale s steps, acc_min += mins sum32: the roundings explicit (fma_rn)
        acc = fma_rn(mul_rn(static_cast<float>(scale), m.scale), group_steps<kTerms>(a, b, x, qj), acc);
        acc_min = fma_rn(static_cast<float>(mins), m.sum32, acc_min);
      }
    }
    return fma_rn(mul_rn(h2f(static_cast<uint16_t>(u.w[0])), kInvLoSteps), acc,
                  -mul_rn(h2f(static_cast<uint16_t>(u.w[0] >> 16)), acc_min));
  }
};
struct Q4KUnit {
  static constexpr int kBytes = 144, kQs = 16;
  static constexpr bool kHighBits = false;
};
struct Q5KUnit {
  static constexpr int kBytes = 176, kQs = 48;
  static constexpr bool kHighBits = true;
};
template <> struct UnitDot<DecQ4_K> : UnitDotK<Q4KUnit> {};
template <> struct UnitDot<DecQ5_K> : UnitDotK<Q5KUnit> {};

// A unit's 4-byte words read from its buffer (shared memory on the device) when the dot asks for
// them, realigned with one funnel shift from a 2-byte-aligned start: for blocks too large to hold
// in registers and not 4-byte aligned (Q6_K: 210 bytes). The buffer must have 4 readable bytes past
// the unit's end.
// The aligned words are addressed by pointer arithmetic on p, not through an integer: a pointer
// rebuilt from an integer loses its address space, and the compiler then issued every read as a
// generic load (LD.E) with 64-bit address arithmetic, 54 per Q6_K half block (cuobjdump -sass);
// from p itself they stay shared-memory loads (LDS) at immediate offsets from one base.
struct LazyWords {
  const uint8_t *p;
  QC_HD uint32_t word(int o) const { // 4 bytes at byte offset o (o % 4 == 0 relative to the unit)
#ifdef __CUDA_ARCH__
    const int mis = static_cast<int>(reinterpret_cast<uintptr_t>(p) & 3); // bytes past a 4-byte boundary
    const auto *w = reinterpret_cast<const uint32_t *>(p - mis + o);
    return __funnelshift_r(w[0], w[1], static_cast<uint32_t>(8 * mis));
#else
    uint32_t v;
    std::memcpy(&v, p + o, sizeof(v));
    return v;
#endif
  }
};

// Q6_K (210-byte blocks, 2-byte aligned): two lanes per block, lane part h takes values
// 128h..128h+127. Half h holds low nibbles ql[64h..64h+63], two high bits per value in
// qh[32h..32h+31] and eight int8 sub-block scales sc[8h..8h+7]; value 128h + 32k + l (l < 32) is
// (ql[64h + 32 (k % 2) + l] >> 4 (k / 2)) & 15 | ((qh[32h + l] >> 2k) & 3) << 4, minus 32, times
// sc[8h + 2k + l / 16] and d (bytes 208-209). The codes go to dp4a as 0..63; the -32 comes back
// per 16-value sub-block from the staged half sums.
// QU = 4, not the block's 8 groups: the swizzle key then differs between a block's two halves
// (lanes 2b and 2b + 1 read groups 4 apart), where with 8 the two lanes of a block read the same
// bank quads at different addresses, a two-way conflict on every activation load (H100,
// quant_bench Q6_K 3072x8192 12.98 -> 11.52 us, 32064x3072 37.21 -> 33.85).
template <> struct UnitDot<DecQ6_K> {
  static constexpr int U = 1, BYTES = 210, QU = 4, kSplit = 2;
  static constexpr bool kHalfSums = true;
  template <int kTerms = 2, class W> QC_HD static float block(const W &u, int h, const XU<QU> &x, int q) {
    uint32_t qa[8], qb[8], qh[8];
    QC_UNROLL
    for (int i = 0; i < 8; ++i) {
      qa[i] = u.word(64 * h + 4 * i);
      qb[i] = u.word(64 * h + 32 + 4 * i);
      qh[i] = u.word(128 + 32 * h + 4 * i);
    }
    const uint32_t sc[2] = {u.word(192 + 8 * h), u.word(196 + 8 * h)};
    float acc = 0.0f;
    QC_UNROLL
    for (int k = 0; k < 4; ++k) { // group q + 4h + k: values 32k.. of this half
      const int g = q + 4 * h + k;
      const X16 xh[2] = {x.hi16(g, 0), x.hi16(g, 1)};
      X16 xl[2] = {};
      if (kTerms == 2) xl[0] = x.lo16(g, 0), xl[1] = x.lo16(g, 1);
      int ih[2] = {0, 0}, il[2] = {0, 0}; // sub-blocks of values 0..15 and 16..31
      QC_UNROLL
      for (int i = 0; i < 8; ++i) {
        const uint32_t ql = k % 2 == 0 ? qa[i] : qb[i];
        const uint32_t lo4 = (k < 2 ? ql : ql >> 4) & 0x0f0f0f0fu;
        const uint32_t hi2 = k == 0 ? qh[i] << 4 : k == 1 ? qh[i] << 2 : k == 2 ? qh[i] : qh[i] >> 2;
        const uint32_t v = lo4 | (hi2 & 0x30303030u);
        ih[i / 4] = dp4a(v, xh[i / 4].w[i % 4], ih[i / 4]);
        if (kTerms == 2) il[i / 4] = dp4a(v, xl[i / 4].w[i % 4], il[i / 4]);
      }
      const XMeta m = x.m(g);
      int hs_a, ls_a;
      half_sums(m, hs_a, ls_a);
      if (kTerms == 1) ls_a = 0; // the staging's lo sums are 0: il - 32 ls stays a constant 0
      const int hs_b = m.sum_hi - hs_a, ls_b = kTerms == 2 ? m.sum_lo - ls_a : 0;
      const int sa = static_cast<int8_t>(sc[k / 2] >> (16 * (k % 2))); // sc[8h + 2k]
      const int sb = static_cast<int8_t>(sc[k / 2] >> (16 * (k % 2) + 8));
      // acc += s (sa steps_a + sb steps_b), the roundings explicit (fma_rn)
      const float pair = fma_rn(static_cast<float>(sa), steps(ih[0] - 32 * hs_a, il[0] - 32 * ls_a),
                                mul_rn(static_cast<float>(sb), steps(ih[1] - 32 * hs_b, il[1] - 32 * ls_b)));
      acc = fma_rn(m.scale, pair, acc);
    }
    return h2f(static_cast<uint16_t>(u.word(208))) * kInvLoSteps * acc;
  }
};

template <class D> constexpr bool has_unit() { return UnitDot<D>::U > 0; }

// A unit's words from a buffer (shared memory on the device): BYTES / A vector loads, or for the
// split types (Q6_K) a LazyWords view.
template <class D, bool kLazy = (UnitSplit<UnitDot<D>>::value > 1)> struct UnitLoad {
  using Words = LazyWords;
  QC_HD static void load(const uint8_t *p, Words &u) { u.p = p; }
};
template <class D> struct UnitLoad<D, false> {
  static constexpr int A = UnitDot<D>::A, NW = UnitDot<D>::BYTES / 4;
  using Words = UnitWords<NW>;
  static_assert(UnitDot<D>::BYTES % A == 0, "a unit is whole vectors");
  QC_HD static void load(const uint8_t *p, UnitWords<NW> &u) {
#ifdef __CUDA_ARCH__
    if constexpr (A == 16) {
      QC_UNROLL
      for (int i = 0; i < NW / 4; ++i) {
        const uint4 v = reinterpret_cast<const uint4 *>(p)[i];
        u.w[4 * i] = v.x, u.w[4 * i + 1] = v.y, u.w[4 * i + 2] = v.z, u.w[4 * i + 3] = v.w;
      }
    } else {
      QC_UNROLL
      for (int i = 0; i < NW / 2; ++i) {
        const uint2 v = reinterpret_cast<const uint2 *>(p)[i];
        u.w[2 * i] = v.x, u.w[2 * i + 1] = v.y;
      }
    }
#else
    std::memcpy(u.w, p, sizeof(u.w));
#endif
  }
};

} // namespace wo::quant::dev
