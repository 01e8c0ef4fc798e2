// A double-precision CPU model of ggml's rope for one head, shared by the rope and fused tests.
#pragma once

#include <worker/kernels.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>

namespace wo::kernels::test {

// Rotates one head's vector in place, in double.
inline void rope_ref(double *v, int64_t pos, const RopeParams &p, int32_t head_dim) {
  const int32_t n_dims = p.n_dims ? p.n_dims : head_dim;
  const double base = p.freq_base;
  auto corr = [&](double n_rot) {
    return n_dims * std::log(p.n_ctx_orig / (n_rot * 2 * M_PI)) / (2 * std::log(base));
  };
  const double lo = std::max(0.0, std::floor(corr(p.beta_fast)));
  const double hi = std::min(double(n_dims - 1), std::ceil(corr(p.beta_slow)));
  for (int32_t i = 0; i < n_dims / 2; ++i) {
    const double extrap = pos * std::pow(base, -2.0 * i / n_dims);
    const double interp = p.freq_scale * extrap;
    double theta = interp, mag = p.attn_factor;
    if (p.ext_factor != 0.0f) {
      const double ramp = 1 - std::min(1.0, std::max(0.0, (i - lo) / std::max(0.001, hi - lo)));
      const double mix = ramp * p.ext_factor;
      theta = interp * (1 - mix) + extrap * mix;
      mag *= 1 + 0.1 * std::log(1.0 / p.freq_scale);
    }
    const int32_t a = p.mode == RopeMode::Neox ? i : 2 * i;
    const int32_t b = p.mode == RopeMode::Neox ? i + n_dims / 2 : 2 * i + 1;
    const double x0 = v[a], x1 = v[b];
    v[a] = (x0 * std::cos(theta) - x1 * std::sin(theta)) * mag;
    v[b] = (x0 * std::sin(theta) + x1 * std::cos(theta)) * mag;
  }
}

} // namespace wo::kernels::test
