// Block decoders for the CUDA kernels (compiled for the host too, so CPU tests can check them), one struct
// per layout, consumed by the templated kernels in linear_kernels.cuh. A block of QK values is split into
// PARTS parts of V values; one thread decodes one part. A part's values come in V/4 groups of 4 consecutive
// elements starting at start(part, g) inside the block, so activations can be read with vector loads.
//
// Every value is computed with the same float operations, in the same order, as the CPU reference
// (dequantize_cpu.cpp), using mul_rn/sub_rn so nvcc cannot contract them into FMAs: gathered
// rows are then bit-identical to the CPU dequantization.
#pragma once

#include "quant_common/block_layouts.hpp"
#include "quant_common/scalar_convert.hpp"

#include <worker/ggml_types.hpp>

#include <cmath>
#include <cstring>

namespace wo::quant::dev {

#ifdef __CUDA_ARCH__ // the device pass only: the host compiler rejects the pragma under -Werror
#define QC_UNROLL _Pragma("unroll")
#else
#define QC_UNROLL
#endif

// Correctly rounded float ops that nvcc must not contract into FMAs (the host compiles without
// contraction, see CMakeLists.txt).
QC_HD float mul_rn(float a, float b) {
#ifdef __CUDA_ARCH__
  return __fmul_rn(a, b); // the intrinsic: a call to mul_rn here would be this function itself
#else
  return a * b;
#endif
}
QC_HD float add_rn(float a, float b) {
#ifdef __CUDA_ARCH__
  return __fadd_rn(a, b);
#else
  return a + b;
#endif
}
QC_HD float sub_rn(float a, float b) {
#ifdef __CUDA_ARCH__
  return __fsub_rn(a, b);
#else
  return a - b;
#endif
}
// a * b + c with one rounding. For arithmetic whose bits must not depend on the kernel instance it
// is inlined into: a plain a * b + c is contracted into an FMA, or not, per instance (after the
// unit GEMV's tiled grid moved code around them, its SwiGLU and plain instances parted in the last
// bits of the staged activation sums, xq_sum, hence of every Q4_K, Q5_K and Q5_0 dot), so the
// staging's sums and the unit dots with a min or offset spell every rounding out.
QC_HD float fma_rn(float a, float b, float c) {
#ifdef __CUDA_ARCH__
  return __fmaf_rn(a, b, c);
#else
  return std::fma(a, b, c);
#endif
}

// Aligned little-endian loads (the device does them as single accesses; the host through memcpy).
QC_HD uint16_t ld2(const uint8_t *p) {
#ifdef __CUDA_ARCH__
  return *reinterpret_cast<const uint16_t *>(p);
#else
  uint16_t v;
  std::memcpy(&v, p, 2);
  return v;
#endif
}
// 4 bytes at a 2-byte aligned address (legacy blocks are 18/22/34/210 bytes long).
QC_HD uint32_t ld4_a2(const uint8_t *p) {
  return static_cast<uint32_t>(ld2(p)) | (static_cast<uint32_t>(ld2(p + 2)) << 16);
}
QC_HD uint32_t ld4_a4(const uint8_t *p) {
#ifdef __CUDA_ARCH__
  return *reinterpret_cast<const uint32_t *>(p);
#else
  uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
#endif
}
QC_HD uint32_t ld4_a1(const uint8_t *p) { return load_u32(p); }
QC_HD uint32_t nib(uint32_t q, int i) { return (q >> (8 * i)) & 0x0fu; }
QC_HD uint32_t hnib(uint32_t q, int i) { return (q >> (8 * i + 4)) & 0x0fu; }
QC_HD float i2f(int v) { return static_cast<float>(v); }
// v - bias as a float for 0 <= v < 2^23, without the quarter-rate integer conversion: the float
// whose bits are 0x4B000000 | v is exactly 2^23 + v. Used by the dot paths.
QC_HD float biased(uint32_t v, float bias) { return bits_to_float(0x4B000000u | v) - (8388608.0f + bias); }

// dot(b, part, x): sum over the part's V values of w * x, x given in decode() order. Not bit-exact
// with decode() (scales are factored out of the sums, integers converted with biased()); the GEMV
// needs FP32 accuracy only.

// Q4_0: f16 d, 16 nibble bytes; value j low nibble of byte j, value j+16 high nibble.
struct DecQ4_0 {
  static constexpr uint32_t kType = wo::ggml::Q4_0;
  static constexpr int QK = 32, BYTES = 18, PARTS = 4, V = 8;
  QC_HD static int start(int part, int g) { return 4 * part + 16 * g; }
  QC_HD static void decode(const uint8_t *b, int part, float *v) {
    const float d = half_to_float(ld2(b));
    const uint32_t q = ld4_a2(b + 2 + 4 * part);
    QC_UNROLL
    for (int i = 0; i < 4; ++i) {
      v[i] = mul_rn(i2f(static_cast<int>(nib(q, i)) - 8), d);
      v[4 + i] = mul_rn(i2f(static_cast<int>(hnib(q, i)) - 8), d);
    }
  }
  QC_HD static float dot(const uint8_t *b, int part, const float *x) {
    const uint32_t q = ld4_a2(b + 2 + 4 * part);
    float s = 0.0f;
    QC_UNROLL
    for (int i = 0; i < 4; ++i) {
      s += biased(nib(q, i), 8.0f) * x[i];
      s += biased(hnib(q, i), 8.0f) * x[4 + i];
    }
    return half_to_float(ld2(b)) * s;
  }
};

struct DecQ4_1 {
  static constexpr uint32_t kType = wo::ggml::Q4_1;
  static constexpr int QK = 32, BYTES = 20, PARTS = 4, V = 8;
  QC_HD static int start(int part, int g) { return 4 * part + 16 * g; }
  QC_HD static void decode(const uint8_t *b, int part, float *v) {
    const uint32_t dm = ld4_a4(b);
    const float d = half_to_float(static_cast<uint16_t>(dm)),
                m = half_to_float(static_cast<uint16_t>(dm >> 16));
    const uint32_t q = ld4_a4(b + 4 + 4 * part);
    QC_UNROLL
    for (int i = 0; i < 4; ++i) {
      v[i] = add_rn(mul_rn(i2f(nib(q, i)), d), m);
      v[4 + i] = add_rn(mul_rn(i2f(hnib(q, i)), d), m);
    }
  }
  QC_HD static float dot(const uint8_t *b, int part, const float *x) {
    const uint32_t dm = ld4_a4(b);
    const uint32_t q = ld4_a4(b + 4 + 4 * part);
    float s = 0.0f, sx = 0.0f;
    QC_UNROLL
    for (int i = 0; i < 4; ++i) {
      s += biased(nib(q, i), 0.0f) * x[i] + biased(hnib(q, i), 0.0f) * x[4 + i];
      sx += x[i] + x[4 + i];
    }
    return half_to_float(static_cast<uint16_t>(dm)) * s + half_to_float(static_cast<uint16_t>(dm >> 16)) * sx;
  }
};

// Q5_0: f16 d, u32 of 5th bits (bit j for value j), 16 nibble bytes as Q4_0.
struct DecQ5_0 {
  static constexpr uint32_t kType = wo::ggml::Q5_0;
  static constexpr int QK = 32, BYTES = 22, PARTS = 4, V = 8;
  QC_HD static int start(int part, int g) { return 4 * part + 16 * g; }
  QC_HD static void decode(const uint8_t *b, int part, float *v) {
    const float d = half_to_float(ld2(b));
    const uint32_t qh = ld4_a2(b + 2);
    const uint32_t q = ld4_a2(b + 6 + 4 * part);
    QC_UNROLL
    for (int i = 0; i < 4; ++i) {
      const int j = 4 * part + i;
      const int lo = static_cast<int>(nib(q, i) | (((qh >> j) << 4) & 0x10u)) - 16;
      const int hi = static_cast<int>(hnib(q, i) | ((qh >> (j + 12)) & 0x10u)) - 16;
      v[i] = mul_rn(i2f(lo), d);
      v[4 + i] = mul_rn(i2f(hi), d);
    }
  }
  QC_HD static float dot(const uint8_t *b, int part, const float *x) {
    const uint32_t qh = ld4_a2(b + 2);
    const uint32_t q = ld4_a2(b + 6 + 4 * part);
    float s = 0.0f;
    QC_UNROLL
    for (int i = 0; i < 4; ++i) {
      const int j = 4 * part + i;
      s += biased(nib(q, i) | (((qh >> j) << 4) & 0x10u), 16.0f) * x[i];
      s += biased(hnib(q, i) | ((qh >> (j + 12)) & 0x10u), 16.0f) * x[4 + i];
    }
    return half_to_float(ld2(b)) * s;
  }
};

struct DecQ5_1 {
  static constexpr uint32_t kType = wo::ggml::Q5_1;
  static constexpr int QK = 32, BYTES = 24, PARTS = 4, V = 8;
  QC_HD static int start(int part, int g) { return 4 * part + 16 * g; }
  QC_HD static void decode(const uint8_t *b, int part, float *v) {
    const uint32_t dm = ld4_a4(b);
    const float d = half_to_float(static_cast<uint16_t>(dm)),
                m = half_to_float(static_cast<uint16_t>(dm >> 16));
    const uint32_t qh = ld4_a4(b + 4);
    const uint32_t q = ld4_a4(b + 8 + 4 * part);
    QC_UNROLL
    for (int i = 0; i < 4; ++i) {
      const int j = 4 * part + i;
      const uint32_t lo = nib(q, i) | (((qh >> j) << 4) & 0x10u);
      const uint32_t hi = hnib(q, i) | ((qh >> (j + 12)) & 0x10u);
      v[i] = add_rn(mul_rn(i2f(static_cast<int>(lo)), d), m);
      v[4 + i] = add_rn(mul_rn(i2f(static_cast<int>(hi)), d), m);
    }
  }
  QC_HD static float dot(const uint8_t *b, int part, const float *x) {
    const uint32_t dm = ld4_a4(b);
    const uint32_t qh = ld4_a4(b + 4);
    const uint32_t q = ld4_a4(b + 8 + 4 * part);
    float s = 0.0f, sx = 0.0f;
    QC_UNROLL
    for (int i = 0; i < 4; ++i) {
      const int j = 4 * part + i;
      s += biased(nib(q, i) | (((qh >> j) << 4) & 0x10u), 0.0f) * x[i];
      s += biased(hnib(q, i) | ((qh >> (j + 12)) & 0x10u), 0.0f) * x[4 + i];
      sx += x[i] + x[4 + i];
    }
    return half_to_float(static_cast<uint16_t>(dm)) * s + half_to_float(static_cast<uint16_t>(dm >> 16)) * sx;
  }
};

// Q8_0: f16 d, 32 int8.
struct DecQ8_0 {
  static constexpr uint32_t kType = wo::ggml::Q8_0;
  static constexpr int QK = 32, BYTES = 34, PARTS = 4, V = 8;
  QC_HD static int start(int part, int g) { return 8 * part + 4 * g; }
  QC_HD static void decode(const uint8_t *b, int part, float *v) {
    const float d = half_to_float(ld2(b));
    const uint32_t q0 = ld4_a2(b + 2 + 8 * part), q1 = ld4_a2(b + 6 + 8 * part);
    QC_UNROLL
    for (int i = 0; i < 4; ++i) {
      v[i] = mul_rn(i2f(static_cast<int8_t>(q0 >> (8 * i))), d);
      v[4 + i] = mul_rn(i2f(static_cast<int8_t>(q1 >> (8 * i))), d);
    }
  }
  QC_HD static float dot(const uint8_t *b, int part, const float *x) {
    const uint32_t q0 = ld4_a2(b + 2 + 8 * part) ^ 0x80808080u, q1 = ld4_a2(b + 6 + 8 * part) ^ 0x80808080u;
    float s = 0.0f; // int8 q: (q ^ 0x80) as unsigned is q + 128
    QC_UNROLL
    for (int i = 0; i < 4; ++i) {
      s += biased((q0 >> (8 * i)) & 0xffu, 128.0f) * x[i];
      s += biased((q1 >> (8 * i)) & 0xffu, 128.0f) * x[4 + i];
    }
    return half_to_float(ld2(b)) * s;
  }
};

// Q4_K: f16 d, f16 dmin, 12 scale bytes, 128 nibble bytes; 64-value groups share 32 bytes
// (low nibbles = first 32 values, high nibbles = next 32).
struct DecQ4_K {
  static constexpr uint32_t kType = wo::ggml::Q4_K;
  static constexpr int QK = 256, BYTES = 144, PARTS = 32, V = 8;
  QC_HD static int start(int part, int g) { return 64 * (part / 8) + 4 * (part % 8) + 32 * g; }
  QC_HD static void decode(const uint8_t *b, int part, float *v) {
    const uint32_t dm = ld4_a4(b);
    const float d = half_to_float(static_cast<uint16_t>(dm)),
                dmin = half_to_float(static_cast<uint16_t>(dm >> 16));
    const int grp = part / 8, l0 = 4 * (part % 8);
    uint8_t sc, m;
    k_scale_min(2 * grp, b + 4, sc, m);
    const float d1 = mul_rn(d, i2f(sc)), m1 = mul_rn(dmin, i2f(m));
    k_scale_min(2 * grp + 1, b + 4, sc, m);
    const float d2 = mul_rn(d, i2f(sc)), m2 = mul_rn(dmin, i2f(m));
    const uint32_t q = ld4_a4(b + 16 + 32 * grp + l0);
    QC_UNROLL
    for (int i = 0; i < 4; ++i) {
      v[i] = sub_rn(mul_rn(d1, i2f(nib(q, i))), m1);
      v[4 + i] = sub_rn(mul_rn(d2, i2f(hnib(q, i))), m2);
    }
  }
  QC_HD static float dot(const uint8_t *b, int part, const float *x) {
    const uint32_t dm = ld4_a4(b);
    const float d = half_to_float(static_cast<uint16_t>(dm)),
                dmin = half_to_float(static_cast<uint16_t>(dm >> 16));
    const int grp = part / 8, l0 = 4 * (part % 8);
    uint8_t sc1, m1, sc2, m2;
    k_scale_min(2 * grp, b + 4, sc1, m1);
    k_scale_min(2 * grp + 1, b + 4, sc2, m2);
    const uint32_t q = ld4_a4(b + 16 + 32 * grp + l0);
    float s1 = 0.0f, s2 = 0.0f, x1 = 0.0f, x2 = 0.0f;
    QC_UNROLL
    for (int i = 0; i < 4; ++i) {
      s1 += biased(nib(q, i), 0.0f) * x[i];
      s2 += biased(hnib(q, i), 0.0f) * x[4 + i];
      x1 += x[i];
      x2 += x[4 + i];
    }
    return d * (i2f(sc1) * s1 + i2f(sc2) * s2) - dmin * (i2f(m1) * x1 + i2f(m2) * x2);
  }
};

// Q5_K: as Q4_K plus 32 bytes of high bits (bit 2*grp for the low half, 2*grp+1 for the high).
struct DecQ5_K {
  static constexpr uint32_t kType = wo::ggml::Q5_K;
  static constexpr int QK = 256, BYTES = 176, PARTS = 32, V = 8;
  QC_HD static int start(int part, int g) { return 64 * (part / 8) + 4 * (part % 8) + 32 * g; }
  QC_HD static void decode(const uint8_t *b, int part, float *v) {
    const uint32_t dm = ld4_a4(b);
    const float d = half_to_float(static_cast<uint16_t>(dm)),
                dmin = half_to_float(static_cast<uint16_t>(dm >> 16));
    const int grp = part / 8, l0 = 4 * (part % 8);
    uint8_t sc, m;
    k_scale_min(2 * grp, b + 4, sc, m);
    const float d1 = mul_rn(d, i2f(sc)), m1 = mul_rn(dmin, i2f(m));
    k_scale_min(2 * grp + 1, b + 4, sc, m);
    const float d2 = mul_rn(d, i2f(sc)), m2 = mul_rn(dmin, i2f(m));
    const uint32_t qh = ld4_a4(b + 16 + l0);
    const uint32_t q = ld4_a4(b + 48 + 32 * grp + l0);
    QC_UNROLL
    for (int i = 0; i < 4; ++i) {
      const uint32_t h = qh >> (8 * i);
      const uint32_t lo = nib(q, i) + (((h >> (2 * grp)) & 1u) << 4);
      const uint32_t hi = hnib(q, i) + (((h >> (2 * grp + 1)) & 1u) << 4);
      v[i] = sub_rn(mul_rn(d1, i2f(static_cast<int>(lo))), m1);
      v[4 + i] = sub_rn(mul_rn(d2, i2f(static_cast<int>(hi))), m2);
    }
  }
  QC_HD static float dot(const uint8_t *b, int part, const float *x) {
    const uint32_t dm = ld4_a4(b);
    const float d = half_to_float(static_cast<uint16_t>(dm)),
                dmin = half_to_float(static_cast<uint16_t>(dm >> 16));
    const int grp = part / 8, l0 = 4 * (part % 8);
    uint8_t sc1, m1, sc2, m2;
    k_scale_min(2 * grp, b + 4, sc1, m1);
    k_scale_min(2 * grp + 1, b + 4, sc2, m2);
    const uint32_t qh = ld4_a4(b + 16 + l0);
    const uint32_t q = ld4_a4(b + 48 + 32 * grp + l0);
    float s1 = 0.0f, s2 = 0.0f, x1 = 0.0f, x2 = 0.0f;
    QC_UNROLL
    for (int i = 0; i < 4; ++i) {
      const uint32_t h = qh >> (8 * i);
      s1 += biased(nib(q, i) | (((h >> (2 * grp)) & 1u) << 4), 0.0f) * x[i];
      s2 += biased(hnib(q, i) | (((h >> (2 * grp + 1)) & 1u) << 4), 0.0f) * x[4 + i];
      x1 += x[i];
      x2 += x[4 + i];
    }
    return d * (i2f(sc1) * s1 + i2f(sc2) * s2) - dmin * (i2f(m1) * x1 + i2f(m2) * x2);
  }
};

// Q6_K: 128 bytes low nibbles, 64 bytes 2-bit highs, 16 int8 scales, f16 d (last). Each 128-value
// half n uses ql[64n..], qh[32n..], scales[8n..]; a part takes 4 positions l of one half and
// decodes the 4 quarters (l, l+32, l+64, l+96) that share those bytes.
struct DecQ6_K {
  static constexpr uint32_t kType = wo::ggml::Q6_K;
  static constexpr int QK = 256, BYTES = 210, PARTS = 16, V = 16;
  QC_HD static int start(int part, int g) { return 128 * (part / 8) + 4 * (part % 8) + 32 * g; }
  QC_HD static void decode(const uint8_t *b, int part, float *v) {
    const int n = part / 8, l0 = 4 * (part % 8);
    const float d = half_to_float(ld2(b + 208));
    const uint32_t ql0 = ld4_a2(b + 64 * n + l0), ql1 = ld4_a2(b + 64 * n + 32 + l0);
    const uint32_t qh = ld4_a2(b + 128 + 32 * n + l0);
    const auto *sc = reinterpret_cast<const int8_t *>(b + 192 + 8 * n + l0 / 16);
    float ds[4];
    QC_UNROLL
    for (int k = 0; k < 4; ++k)
      ds[k] = mul_rn(d, i2f(sc[2 * k]));
    QC_UNROLL
    for (int i = 0; i < 4; ++i) {
      const uint32_t h = qh >> (8 * i);
      v[i] = mul_rn(ds[0], i2f(static_cast<int>(nib(ql0, i) | ((h & 3u) << 4)) - 32));
      v[4 + i] = mul_rn(ds[1], i2f(static_cast<int>(nib(ql1, i) | (((h >> 2) & 3u) << 4)) - 32));
      v[8 + i] = mul_rn(ds[2], i2f(static_cast<int>(hnib(ql0, i) | (((h >> 4) & 3u) << 4)) - 32));
      v[12 + i] = mul_rn(ds[3], i2f(static_cast<int>(hnib(ql1, i) | (((h >> 6) & 3u) << 4)) - 32));
    }
  }
  QC_HD static float dot(const uint8_t *b, int part, const float *x) {
    const int n = part / 8, l0 = 4 * (part % 8);
    const uint32_t ql0 = ld4_a2(b + 64 * n + l0), ql1 = ld4_a2(b + 64 * n + 32 + l0);
    const uint32_t qh = ld4_a2(b + 128 + 32 * n + l0);
    const auto *sc = reinterpret_cast<const int8_t *>(b + 192 + 8 * n + l0 / 16);
    float s[4] = {0.0f, 0.0f, 0.0f, 0.0f};
    QC_UNROLL
    for (int i = 0; i < 4; ++i) {
      const uint32_t h = qh >> (8 * i);
      s[0] += biased(nib(ql0, i) | ((h & 3u) << 4), 32.0f) * x[i];
      s[1] += biased(nib(ql1, i) | (((h >> 2) & 3u) << 4), 32.0f) * x[4 + i];
      s[2] += biased(hnib(ql0, i) | (((h >> 4) & 3u) << 4), 32.0f) * x[8 + i];
      s[3] += biased(hnib(ql1, i) | (((h >> 6) & 3u) << 4), 32.0f) * x[12 + i];
    }
    return half_to_float(ld2(b + 208)) *
           (i2f(sc[0]) * s[0] + i2f(sc[2]) * s[1] + i2f(sc[4]) * s[2] + i2f(sc[6]) * s[3]);
  }
};

// MXFP4: E8M0 exponent byte, 16 nibble bytes laid out as Q4_0. 17-byte blocks: byte loads only.
struct DecMXFP4 {
  static constexpr uint32_t kType = wo::ggml::MXFP4;
  static constexpr int QK = 32, BYTES = 17, PARTS = 4, V = 8;
  QC_HD static int start(int part, int g) { return 4 * part + 16 * g; }
  QC_HD static void decode(const uint8_t *b, int part, float *v) {
    const float d = e8m0_to_float_half(b[0]);
    const uint32_t q = ld4_a1(b + 1 + 4 * part);
    QC_UNROLL
    for (int i = 0; i < 4; ++i) {
      v[i] = mul_rn(i2f(mxfp4_value(nib(q, i))), d);
      v[4 + i] = mul_rn(i2f(mxfp4_value(hnib(q, i))), d);
    }
  }
  // The code's magnitude comes from the packed-nibble constant; its sign flips x's sign bit.
  QC_HD static float signed_term(uint32_t code, float x) {
    const float mag = biased((0xC8643210u >> (4u * (code & 7u))) & 0x0fu, 0.0f);
    return mag * bits_to_float(float_to_bits(x) ^ ((code & 8u) << 28));
  }
  QC_HD static float dot(const uint8_t *b, int part, const float *x) {
    const uint32_t q = ld4_a1(b + 1 + 4 * part);
    float s = 0.0f;
    QC_UNROLL
    for (int i = 0; i < 4; ++i)
      s += signed_term(nib(q, i), x[i]) + signed_term(hnib(q, i), x[4 + i]);
    return e8m0_to_float_half(b[0]) * s;
  }
};

// Plain types, read as pseudo-blocks of 8 elements (rows whose length is a multiple of 8; other
// widths take the scalar kernels). Their dot is the plain sum over the decoded values; PlainDot
// gives each decoder that one body.
template <class Dec> struct PlainDot {
  QC_HD static float dot(const uint8_t *b, int part, const float *x) {
    float v[Dec::V];
    Dec::decode(b, part, v);
    float s = 0.0f;
    QC_UNROLL
    for (int i = 0; i < Dec::V; ++i)
      s += v[i] * x[i];
    return s;
  }
};

struct DecF32 : PlainDot<DecF32> {
  static constexpr uint32_t kType = wo::ggml::F32;
  static constexpr int QK = 8, BYTES = 32, PARTS = 1, V = 8;
  QC_HD static int start(int, int g) { return 4 * g; }
  QC_HD static void decode(const uint8_t *b, int, float *v) {
#ifdef __CUDA_ARCH__
    const float4 a = reinterpret_cast<const float4 *>(b)[0], c = reinterpret_cast<const float4 *>(b)[1];
    v[0] = a.x, v[1] = a.y, v[2] = a.z, v[3] = a.w, v[4] = c.x, v[5] = c.y, v[6] = c.z, v[7] = c.w;
#else
    std::memcpy(v, b, 32);
#endif
  }
  QC_HD static float scalar(const uint8_t *row, int64_t c) { return reinterpret_cast<const float *>(row)[c]; }
};

// F16 and BF16: 16-bit words, 8 per 16-byte pseudo-block; Bits converts one word to float.
struct F16Bits {
  QC_HD static float to_float(uint16_t h) { return half_to_float(h); }
};
struct BF16Bits {
  QC_HD static float to_float(uint16_t h) { return bf16_to_float(h); }
};

template <uint32_t Type, class Bits> struct DecWord16 : PlainDot<DecWord16<Type, Bits>> {
  static constexpr uint32_t kType = Type;
  static constexpr int QK = 8, BYTES = 16, PARTS = 1, V = 8;
  QC_HD static int start(int, int g) { return 4 * g; }
  QC_HD static void decode(const uint8_t *b, int, float *v) {
#ifdef __CUDA_ARCH__
    const uint4 u = *reinterpret_cast<const uint4 *>(b);
    const uint32_t w[4] = {u.x, u.y, u.z, u.w};
#else
    uint32_t w[4];
    std::memcpy(w, b, 16);
#endif
    QC_UNROLL
    for (int i = 0; i < 4; ++i) {
      v[2 * i] = Bits::to_float(static_cast<uint16_t>(w[i]));
      v[2 * i + 1] = Bits::to_float(static_cast<uint16_t>(w[i] >> 16));
    }
  }
  QC_HD static float scalar(const uint8_t *row, int64_t c) {
    return Bits::to_float(reinterpret_cast<const uint16_t *>(row)[c]);
  }
};
using DecF16 = DecWord16<wo::ggml::F16, F16Bits>;
using DecBF16 = DecWord16<wo::ggml::BF16, BF16Bits>;

} // namespace wo::quant::dev
