// Fresh random weight bytes of any served type, generated directly as blocks (random quant bits,
// sane random scales) so that even 151936-row matrices are made in a fraction of a second. Used by
// the GPU tests and the benchmark; the CPU dequantizer turns them into the reference weights.
#pragma once

#include "quant_common/scalar_convert.hpp"

#include <worker/ggml_types.hpp>

#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

namespace wo::quant {

inline std::vector<uint8_t> random_blocks(uint32_t type, int64_t rows, int64_t cols, uint64_t seed) {
  const uint64_t row_bytes = wo::ggml::row_bytes(type, cols);
  std::vector<uint8_t> out(row_bytes * rows);
  std::mt19937_64 rng(seed);
  for (size_t i = 0; i + 8 <= out.size(); i += 8) {
    const uint64_t r = rng();
    std::memcpy(&out[i], &r, 8);
  }
  for (size_t i = out.size() / 8 * 8; i < out.size(); ++i)
    out[i] = static_cast<uint8_t>(rng());

  std::uniform_real_distribution<float> mag(0.5f, 1.5f);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  auto put_half = [](uint8_t *p, float v) {
    const uint16_t h = float_to_half(v);
    p[0] = static_cast<uint8_t>(h & 0xff);
    p[1] = static_cast<uint8_t>(h >> 8);
  };
  auto sign = [&] { return (rng() & 1) ? 1.0f : -1.0f; };
  const auto *ti = wo::ggml::type_info(type);
  const uint64_t n = static_cast<uint64_t>(rows) * cols;
  switch (type) {
  case wo::ggml::F32:
    for (uint64_t i = 0; i < n; ++i) {
      const float v = normal(rng);
      std::memcpy(&out[4 * i], &v, 4);
    }
    return out;
  case wo::ggml::F16:
    for (uint64_t i = 0; i < n; ++i)
      put_half(&out[2 * i], normal(rng));
    return out;
  case wo::ggml::BF16:
    for (uint64_t i = 0; i < n; ++i) {
      const uint16_t b = float_to_bf16(normal(rng));
      out[2 * i] = static_cast<uint8_t>(b & 0xff);
      out[2 * i + 1] = static_cast<uint8_t>(b >> 8);
    }
    return out;
  default: break;
  }
  const uint64_t n_blocks = n / ti->block_elems;
  for (uint64_t b = 0; b < n_blocks; ++b) {
    uint8_t *p = &out[b * ti->block_bytes];
    switch (type) {
    case wo::ggml::Q4_0:
    case wo::ggml::Q5_0:
    case wo::ggml::Q8_0: put_half(p, sign() * mag(rng) * 0.01f); break;
    case wo::ggml::Q4_1:
    case wo::ggml::Q5_1:
      put_half(p, mag(rng) * 0.01f);
      put_half(p + 2, sign() * mag(rng) * 0.05f);
      break;
    case wo::ggml::Q4_K:
    case wo::ggml::Q5_K:
      put_half(p, mag(rng) * 1e-3f);
      put_half(p + 2, mag(rng) * 1e-3f);
      break;
    case wo::ggml::Q6_K: put_half(p + 208, mag(rng) * 1e-3f); break;
    case wo::ggml::MXFP4: p[0] = static_cast<uint8_t>(118 + rng() % 9); break;
    default: break;
    }
  }
  return out;
}

} // namespace wo::quant
