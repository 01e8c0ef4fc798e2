#include "gguf/native_dequant.hpp"

#include <worker/ggml_types.hpp>

#include <cstring>

namespace wo::gguf {

float half_to_float(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  uint32_t exp = (h >> 10) & 0x1fu;
  uint32_t man = h & 0x3ffu;
  uint32_t bits;
  if (exp == 0x1f) {
    bits = sign | 0x7f800000u | (man << 13); // inf / NaN (payload kept)
  } else if (exp != 0) {
    bits = sign | ((exp + 112) << 23) | (man << 13); // rebias 15 -> 127
  } else if (man == 0) {
    bits = sign; // +-0
  } else {
    // Subnormal half: normalise the mantissa.
    int e = -1;
    do {
      ++e;
      man <<= 1;
    } while ((man & 0x400u) == 0);
    bits = sign | (static_cast<uint32_t>(112 - e) << 23) | ((man & 0x3ffu) << 13);
  }
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

float bf16_to_float(uint16_t b) {
  const uint32_t bits = static_cast<uint32_t>(b) << 16;
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

bool is_native_type(uint32_t type) { return type == ggml::F32 || type == ggml::F16 || type == ggml::BF16; }

bool dequantize_native(uint32_t type, const void *src, uint64_t n, float *dst) {
  const auto *p = static_cast<const uint8_t *>(src);
  switch (type) {
  case ggml::F32: std::memcpy(dst, p, n * 4); return true;
  case ggml::F16:
  case ggml::BF16:
    for (uint64_t i = 0; i < n; ++i) {
      uint16_t h;
      std::memcpy(&h, p + 2 * i, 2);
      dst[i] = type == ggml::F16 ? half_to_float(h) : bf16_to_float(h);
    }
    return true;
  default: return false;
  }
}

} // namespace wo::gguf
