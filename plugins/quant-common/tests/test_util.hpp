// Small helpers for the quant tests: fixture paths, binary files, fresh random data.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

namespace wo::quant::testing {

inline std::string fixtures_dir() {
  const char *e = std::getenv("WORKER_FIXTURES_DIR");
  return e && *e ? e : WORKER_FIXTURES_DIR_DEFAULT;
}

inline std::vector<uint8_t> read_file(const std::string &path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw std::runtime_error("cannot open " + path);
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(f), {});
}

template <class T> std::vector<T> read_array(const std::string &path) {
  const auto bytes = read_file(path);
  if (bytes.size() % sizeof(T)) throw std::runtime_error(path + ": size not a multiple of the element size");
  std::vector<T> v(bytes.size() / sizeof(T));
  std::memcpy(v.data(), bytes.data(), bytes.size());
  return v;
}

// A fresh seed per run (printed by the tests so a failure can be replayed).
inline uint64_t fresh_seed() {
  const char *e = std::getenv("WORKER_TEST_SEED");
  if (e && *e) return std::strtoull(e, nullptr, 10);
  return (static_cast<uint64_t>(std::random_device{}()) << 32) ^ std::random_device{}();
}

inline std::vector<float> normal_floats(size_t n, uint64_t seed, float sigma = 1.0f) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> d(0.0f, sigma);
  std::vector<float> v(n);
  for (auto &x : v)
    x = d(rng);
  return v;
}

inline double rel_l2(const float *a, const float *ref, size_t n) {
  double num = 0, den = 0;
  for (size_t i = 0; i < n; ++i) {
    num += (static_cast<double>(a[i]) - ref[i]) * (static_cast<double>(a[i]) - ref[i]);
    den += static_cast<double>(ref[i]) * ref[i];
  }
  return den > 0 ? std::sqrt(num / den) : std::sqrt(num);
}

} // namespace wo::quant::testing
