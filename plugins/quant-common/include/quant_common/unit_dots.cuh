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
// {scale, sum16 of its halves, their sum} in one 16-byte meta record (meta_slot).
#pragma once

#include "quant_common/device_decoders.cuh"
#include "quant_common/int8x_dots.cuh"

#include <cstdint>

namespace wo::quant::dev {

// The 16-byte granule g (= 2 * group + half) of the hi or lo terms of a staged row lives at
// granule_slot(g, QU): the three low bits are XORed with (group / QU) & 7, a function of the
// 128-byte line only when QU is a multiple of 4, so the map permutes each line. Lanes whose units
// start QU groups apart then read 8 different bank quads.
template <int QU> QC_HD int64_t granule_slot(int64_t g) {
  static_assert(QU % 4 == 0, "the swizzle key must be constant over a 128-byte line");
  return (g & ~int64_t{7}) | ((g ^ ((g >> 1) / QU)) & 7);
}
// The meta record of group q: the same idea with the line index as the key.
QC_HD int64_t meta_slot(int64_t q) { return (q & ~int64_t{7}) | ((q ^ (q >> 3)) & 7); }

// 16 staged int8 values as four words.
struct X16 {
  uint32_t w[4];
};
struct XMeta {
  float scale, sum_a, sum_b, sum32; // sum_a/sum_b: sum16 of values 0..15 / 16..31; sum32 = sum_a + sum_b
};

// The staged activations of one token, as gemv_units_kernel lays them out.
template <int QU> struct XU {
  const uint8_t *hi, *lo; // cols bytes each, swizzled granules
  const XMeta *meta;      // cols / 32 records, swizzled
  QC_HD X16 hi16(int64_t q, int h) const { return load(hi, 2 * q + h); }
  QC_HD X16 lo16(int64_t q, int h) const { return load(lo, 2 * q + h); }
  QC_HD XMeta m(int64_t q) const { return meta[meta_slot(q)]; }
  QC_HD static X16 load(const uint8_t *base, int64_t g) {
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

// The 32-value group dot with both terms, as counts of 1/254 steps: codes c[0..7] are values
// 0..31 of the group.
template <int QU>
QC_HD float group_steps(const uint32_t (&lo16)[4], const uint32_t (&hi16)[4], const XU<QU> &x, int64_t q) {
  const int ih = dp4a4(hi16, x.hi16(q, 1), dp4a4(lo16, x.hi16(q, 0)));
  const int il = dp4a4(hi16, x.lo16(q, 1), dp4a4(lo16, x.lo16(q, 0)));
  return steps(ih, il);
}

// Q8_0 (34-byte blocks): four blocks per unit (136 bytes, 8-byte aligned).
template <> struct UnitDot<DecQ8_0> {
  static constexpr int U = 4, A = 8, BYTES = U * 34, QU = 4;
  template <int NW> QC_HD static float block(const UnitWords<NW> &u, int k, const XU<QU> &x, int64_t q) {
    const int o = 34 * k;
    uint32_t c0[4], c1[4];
    QC_UNROLL
    for (int i = 0; i < 4; ++i) {
      c0[i] = u.word(o + 2 + 4 * i);
      c1[i] = u.word(o + 18 + 4 * i);
    }
    return h2f(u.half(o)) * x.m(q).scale * kInvLoSteps * group_steps(c0, c1, x, q);
  }
};

// Q5_0 (22-byte blocks): four per unit (88 bytes). Value j is nibble j of qs (low nibbles j < 16,
// high nibbles 16 + j) with its fifth bit in qh bit j; codes are stored +16.
template <> struct UnitDot<DecQ5_0> {
  static constexpr int U = 4, A = 8, BYTES = U * 22, QU = 4;
  template <int NW> QC_HD static float block(const UnitWords<NW> &u, int k, const XU<QU> &x, int64_t q) {
    const int o = 22 * k;
    const uint32_t qh = u.word(o + 2);
    uint32_t lo[4], hi[4];
    QC_UNROLL
    for (int i = 0; i < 4; ++i)
      q5_codes(u.word(o + 6 + 4 * i), qh, i, lo[i], hi[i]);
    const XMeta m = x.m(q);
    const float d = h2f(u.half(o));
    return d * m.scale * kInvLoSteps * group_steps(lo, hi, x, q) - 16.0f * d * m.sum32;
  }
};

// MXFP4 (17-byte blocks): eight per unit (136 bytes). Value table lookup with byte_perm straight
// from the packed nibbles: a code word's nibbles are values (4i, 16+4i, 4i+1, 17+4i, ...).
QC_HD void mxfp4_word(uint32_t q, uint32_t &lo, uint32_t &hi) {
  // magnitudes (2x the E2M1 value) of codes 0..7 and their negatives for codes 8..15; byte_perm
  // reads only the low three bits of each selector nibble, so the raw code picks the entry.
  constexpr uint32_t kPos0 = 0x03020100u, kPos1 = 0x0c080604u;
  constexpr uint32_t kNeg0 = 0xfdfeff00u, kNeg1 = 0xf4f8fafcu;
  const uint32_t qb = q >> 16;
  // nibble k of the select: k, or k + 4 (the negative table) when code k has bit 3 set
  const uint32_t sa = 0x3210u | ((q >> 1) & 0x4444u), sb = 0x3210u | ((qb >> 1) & 0x4444u);
  const uint32_t a = byte_perm(byte_perm(kPos0, kPos1, q), byte_perm(kNeg0, kNeg1, q), sa);
  const uint32_t b = byte_perm(byte_perm(kPos0, kPos1, qb), byte_perm(kNeg0, kNeg1, qb), sb);
  lo = byte_perm(a, b, 0x6420u); // values 4i .. 4i+3
  hi = byte_perm(a, b, 0x7531u); // values 16+4i .. 19+4i
}

template <> struct UnitDot<DecMXFP4> {
  static constexpr int U = 8, A = 8, BYTES = U * 17, QU = 8;
  template <int NW> QC_HD static float block(const UnitWords<NW> &u, int k, const XU<QU> &x, int64_t q) {
    const int o = 17 * k;
    uint32_t lo[4], hi[4];
    QC_UNROLL
    for (int i = 0; i < 4; ++i)
      mxfp4_word(u.word(o + 1 + 4 * i), lo[i], hi[i]);
    return e8m0_to_float_half(static_cast<uint8_t>(u.byte(o))) * x.m(q).scale * kInvLoSteps *
           group_steps(lo, hi, x, q);
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
  template <int NW> QC_HD static float block(const UnitWords<NW> &u, int, const XU<QU> &x, int64_t q) {
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
        const int64_t qj = q + j;
        const uint32_t(&c)[8] = s == 0 ? lo : hi;
        const uint32_t a[4] = {c[0], c[1], c[2], c[3]}, b[4] = {c[4], c[5], c[6], c[7]};
        const XMeta m = x.m(qj);
        const int scale = static_cast<int>((sc[j / 4] >> (8 * (j % 4))) & 0xffu);
        const int mins = static_cast<int>((mn[j / 4] >> (8 * (j % 4))) & 0xffu);
        acc += static_cast<float>(scale) * m.scale * group_steps(a, b, x, qj);
        acc_min += static_cast<float>(mins) * m.sum32;
      }
    }
    return h2f(static_cast<uint16_t>(u.w[0])) * kInvLoSteps * acc -
           h2f(static_cast<uint16_t>(u.w[0] >> 16)) * acc_min;
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

template <class D> constexpr bool has_unit() { return UnitDot<D>::U > 0; }

// A unit's words from a buffer (shared memory on the device): BYTES / A vector loads.
template <class D> struct UnitLoad {
  static constexpr int A = UnitDot<D>::A, NW = UnitDot<D>::BYTES / 4;
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
