// Bit-exact scalar conversions shared by the CPU codecs and the CUDA decoders: IEEE half, bfloat16
// and the E8M0 shared exponent of MXFP4. Written on integer bits (no hardware conversion) so the
// host and device produce the same floats bit for bit.
#pragma once

#include <cstdint>
#include <cstring>

#ifdef __CUDACC__
#define QC_HD __host__ __device__ __forceinline__
#else
#define QC_HD inline
#endif

namespace wo::quant {

QC_HD float bits_to_float(uint32_t u) {
#ifdef __CUDA_ARCH__
  return __uint_as_float(u);
#else
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
#endif
}

QC_HD uint32_t float_to_bits(float f) {
#ifdef __CUDA_ARCH__
  return __float_as_uint(f);
#else
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
#endif
}

// IEEE 754 binary16 -> binary32, exact for every input (subnormals, inf, NaN payloads).
QC_HD float half_to_float(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t exp = (h >> 10) & 0x1fu;
  uint32_t mant = h & 0x3ffu;
  if (exp == 0x1f) return bits_to_float(sign | 0x7f800000u | (mant << 13));
  if (exp != 0) return bits_to_float(sign | ((exp + 112u) << 23) | (mant << 13));
  if (mant == 0) return bits_to_float(sign);
  // Subnormal half: normalize the mantissa into a binary32 normal number.
  uint32_t e = 113;
  while ((mant & 0x400u) == 0) {
    mant <<= 1;
    --e;
  }
  return bits_to_float(sign | (e << 23) | ((mant & 0x3ffu) << 13));
}

// binary32 -> binary16 with round-to-nearest-even; overflow goes to inf, NaN stays NaN.
QC_HD uint16_t float_to_half(float f) {
  const uint32_t u = float_to_bits(f);
  const uint16_t sign = static_cast<uint16_t>((u >> 16) & 0x8000u);
  const uint32_t absu = u & 0x7fffffffu;
  if (absu >= 0x7f800000u) return static_cast<uint16_t>(sign | (absu > 0x7f800000u ? 0x7e00u : 0x7c00u));
  if (absu >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u); // rounds past 65504
  if (absu < 0x38800000u) {                                              // half subnormal or zero
    if (absu < 0x33000000u) return sign;                                 // below half of 2^-24
    const uint32_t exp = absu >> 23;
    const uint32_t mant = (absu & 0x7fffffu) | 0x800000u;
    const uint32_t shift = 126u - exp; // 14..24
    uint32_t q = mant >> shift;
    const uint32_t rem = mant & ((1u << shift) - 1u);
    const uint32_t halfway = 1u << (shift - 1u);
    if (rem > halfway || (rem == halfway && (q & 1u))) ++q;
    return static_cast<uint16_t>(sign | q);
  }
  uint32_t r = absu - 0x38000000u; // rebias exponent 127 -> 15
  const uint32_t rem = r & 0x1fffu;
  r >>= 13;
  if (rem > 0x1000u || (rem == 0x1000u && (r & 1u))) ++r;
  return static_cast<uint16_t>(sign | r);
}

QC_HD float bf16_to_float(uint16_t b) { return bits_to_float(static_cast<uint32_t>(b) << 16); }

// binary32 -> bfloat16, round-to-nearest-even; NaN stays a quiet NaN.
QC_HD uint16_t float_to_bf16(float f) {
  const uint32_t u = float_to_bits(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((u >> 16) | 0x40u);
  return static_cast<uint16_t>((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}

// MXFP4 codes hold twice the E2M1 value; the block scale is therefore 2^(e-128), which for e < 2
// is a binary32 subnormal (2^-128, 2^-127).
QC_HD float e8m0_to_float_half(uint8_t e) {
  return bits_to_float(e < 2 ? (0x00200000u << e) : (static_cast<uint32_t>(e) - 1u) << 23);
}

// Little-endian loads of unaligned bytes (block fields are only byte- or 2-byte aligned).
QC_HD uint16_t load_u16(const uint8_t *p) { return static_cast<uint16_t>(p[0] | (p[1] << 8)); }
QC_HD uint32_t load_u32(const uint8_t *p) {
  return static_cast<uint32_t>(p[0]) | (static_cast<uint32_t>(p[1]) << 8) |
         (static_cast<uint32_t>(p[2]) << 16) | (static_cast<uint32_t>(p[3]) << 24);
}

} // namespace wo::quant
