// Mean, standard deviation and finiteness of dequantized weights, for the gguf-synth tests.
#pragma once

#include <cmath>
#include <cstddef>

namespace wo::synth::testing {

struct ValueStats {
  double mean = 0, std = 0;
  size_t non_finite = 0;
};

inline ValueStats value_stats(const float *x, size_t n) {
  ValueStats s;
  double sum = 0, sum_sq = 0;
  for (size_t i = 0; i < n; ++i) {
    if (!std::isfinite(x[i])) {
      ++s.non_finite;
      continue;
    }
    sum += x[i];
    sum_sq += static_cast<double>(x[i]) * x[i];
  }
  const double m = n > s.non_finite ? static_cast<double>(n - s.non_finite) : 1.0;
  s.mean = sum / m;
  s.std = std::sqrt(std::max(0.0, sum_sq / m - s.mean * s.mean));
  return s;
}

} // namespace wo::synth::testing
