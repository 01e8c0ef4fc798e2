// Small helpers for the quant tests: fixture paths, binary files, fresh random data.
#pragma once

#include <gtest/gtest.h>

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

// Normal activations with a 25x outlier every 97 values, as hidden states have.
inline std::vector<float> outlier_activations(size_t n, uint64_t seed) {
  auto x = normal_floats(n, seed);
  for (size_t i = 7; i < n; i += 97)
    x[i] *= 25.0f;
  return x;
}

// The int8-activation GEMV dots' contract, row by row: `got` (the sum of a row's block or part
// dots) equals the FP64 dot of the reference-dequantized row w[r] with the staged activations
// (`staged`, what the int8 terms represent) within FP32 rounding of the scale products and sums
// (2e-6 of the row's magnitude; the integer dots are exact), hence the true activations `x` within
// the staging bound; whole rows within rel. L2 `rel_limit` against the true activations (two terms:
// 4e-4, the GEMV tests' limit is 2e-3; even 25x outliers, which coarsen their groups' steps, keep
// rows ~1e-4; kNoRowSummary: none, see there).
// One activation term (act_terms() == 1, llama.cpp's q8_1): each activation is a step of amax/127
// of its 32. The per-row checks above hold as they are (exact against the staged values, the
// staging bound against the true ones); the whole-row summary does not apply: with the 25x
// outliers of outlier_activations coarsening their groups, 8 short rows gave rel. L2 up to 8.5%
// over 1000 seeds. GPU tests bound one term on normal activations (kOneTermTol).
constexpr double kNoRowSummary = -1.0;

inline void expect_rows_match_fp64(const std::vector<double> &got, const std::vector<float> &w,
                                   const std::vector<float> &x, const std::vector<double> &staged,
                                   double rel_limit = 4e-4) {
  const size_t cols = x.size(), rows = got.size();
  std::vector<float> got_f(rows), want_f(rows);
  for (size_t r = 0; r < rows; ++r) {
    double want_staged = 0.0, want = 0.0, mag = 0.0, stage_bound = 0.0;
    for (size_t c = 0; c < cols; ++c) {
      const double wv = w[r * cols + c];
      want_staged += wv * staged[c];
      want += wv * x[c];
      mag += std::fabs(wv * staged[c]);
      stage_bound += std::fabs(wv) * std::fabs(staged[c] - x[c]);
    }
    EXPECT_LE(std::fabs(got[r] - want_staged), 2e-6 * mag) << "row " << r;
    EXPECT_LE(std::fabs(got[r] - want), stage_bound + 2e-6 * mag) << "row " << r;
    got_f[r] = static_cast<float>(got[r]);
    want_f[r] = static_cast<float>(want);
  }
  if (rel_limit != kNoRowSummary) {
    EXPECT_LE(rel_l2(got_f.data(), want_f.data(), rows), rel_limit);
  }
}

} // namespace wo::quant::testing
