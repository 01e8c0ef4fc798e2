// Small statistics helpers for benchmark figures.
#pragma once

#include <algorithm>
#include <vector>

namespace wo::bench {

inline double percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0.0;
  std::sort(v.begin(), v.end());
  double idx = p / 100.0 * static_cast<double>(v.size() - 1);
  size_t lo = static_cast<size_t>(idx);
  size_t hi = std::min(lo + 1, v.size() - 1);
  double f = idx - static_cast<double>(lo);
  return v[lo] * (1.0 - f) + v[hi] * f;
}
inline double median(const std::vector<double> &v) { return percentile(v, 50.0); }

} // namespace wo::bench
