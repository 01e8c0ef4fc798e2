// The generators behind every byte gguf-synth makes up. Each chunk of rows gets its own stream,
// seeded from (seed, tensor index, first row) only, so the output never depends on --threads.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

namespace wo::synth {

inline uint64_t splitmix64(uint64_t &x) {
  uint64_t z = (x += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

// The stream seed of the chunk of tensor `index` that starts at `row0`.
inline uint64_t chunk_seed(uint64_t seed, size_t index, int64_t row0) {
  uint64_t mix = seed;
  mix ^= splitmix64(mix) + index * 0x100000001B3ull;
  return mix ^ (static_cast<uint64_t>(row0) * 0xD6E8FEB86659FD93ull);
}

// xoshiro256: `next` is the '+' output (fast, enough for float weights), `next_pp` the '++'
// output, whose low bits are as good as its high ones; quant codes use every bit of it.
struct Rng {
  uint64_t s[4];
  explicit Rng(uint64_t seed) {
    for (auto &v : s)
      v = splitmix64(seed);
  }
  static uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
  void advance() {
    const uint64_t t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 45);
  }
  uint64_t next() {
    const uint64_t r = s[0] + s[3];
    advance();
    return r;
  }
  uint64_t next_pp() {
    const uint64_t r = rotl(s[0] + s[3], 23) + s[0];
    advance();
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
  void fill_bytes(uint8_t *out, size_t n) {
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
      const uint64_t r = next_pp();
      std::memcpy(out + i, &r, 8);
    }
    if (i < n) {
      const uint64_t r = next_pp();
      std::memcpy(out + i, &r, n - i);
    }
  }
};

} // namespace wo::synth
