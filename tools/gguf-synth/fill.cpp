#include "fill.hpp"

#include "rng.hpp"

namespace wo::synth {

void fill_rows(const SynthTensor &t, uint64_t seed, size_t index, int64_t row0, int64_t n_rows, float *out) {
  Rng rng(chunk_seed(seed, index, row0));
  const int64_t n = n_rows * t.ne[0];
  if (t.fill == Fill::norm_gain) {
    for (int64_t i = 0; i < n; ++i)
      out[i] = 1.0f + t.scale * rng.uniform_pm1();
  } else {
    for (int64_t i = 0; i < n; ++i)
      out[i] = t.scale * rng.normal();
  }
}

} // namespace wo::synth
