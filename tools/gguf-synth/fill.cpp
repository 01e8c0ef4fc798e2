#include "fill.hpp"

namespace wo::synth {
namespace {

uint64_t splitmix64(uint64_t &x) {
  uint64_t z = (x += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

// xoshiro256+ : fast, good enough for weights.
struct Rng {
  uint64_t s[4];
  explicit Rng(uint64_t seed) {
    for (auto &v : s) v = splitmix64(seed);
  }
  static uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
  uint64_t next() {
    const uint64_t r = s[0] + s[3], t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 45);
    return r;
  }
  // Approximately N(0,1): Irwin-Hall sum of four 16-bit uniforms, variance-normalised.
  float normal() {
    uint64_t r = next();
    float sum = static_cast<float>(r & 0xFFFF) + static_cast<float>((r >> 16) & 0xFFFF) +
                static_cast<float>((r >> 32) & 0xFFFF) + static_cast<float>(r >> 48);
    return (sum * (1.0f / 65536.0f) - 2.0f) * 1.7320508f;
  }
  float uniform_pm1() { return static_cast<float>(next() >> 40) * (2.0f / 16777216.0f) - 1.0f; }
};

} // namespace

void fill_rows(const SynthTensor &t, uint64_t seed, size_t index, int64_t row0, int64_t n_rows, float *out) {
  uint64_t mix = seed;
  mix ^= splitmix64(mix) + index * 0x100000001B3ull;
  Rng rng(mix ^ (static_cast<uint64_t>(row0) * 0xD6E8FEB86659FD93ull));
  const int64_t n = n_rows * t.ne[0];
  if (t.fill == Fill::norm_gain) {
    for (int64_t i = 0; i < n; ++i) out[i] = 1.0f + t.scale * rng.uniform_pm1();
  } else {
    for (int64_t i = 0; i < n; ++i) out[i] = t.scale * rng.normal();
  }
}

} // namespace wo::synth
