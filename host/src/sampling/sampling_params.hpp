// Sampling parameters of one job, in the order the spec applies them: repetition penalty over the
// generated history, temperature, top-k, top-p, min-p, then greedy (temperature 0) or a draw.
#pragma once

#include <cstdint>

namespace wo::sampling {

struct SamplingParams {
  float temperature = 1.0f;        // 0 = greedy (argmax)
  int32_t top_k = 0;               // 0 = off
  float top_p = 1.0f;              // 1 = off
  float min_p = 0.0f;              // 0 = off
  float repetition_penalty = 1.0f; // 1 = off

  bool greedy() const { return temperature <= 0.0f; }
};

// A uniform double in [0, 1) from 64 random bits: the draw's only host input, so a seeded
// std::mt19937_64 on the host makes (model, prompt, params, seed) reproducible.
inline double uniform_from_bits(uint64_t bits) { return static_cast<double>(bits >> 11) * 0x1.0p-53; }

} // namespace wo::sampling
