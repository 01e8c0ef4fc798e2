// The error measure GPU tests bound: ||got - ref|| / ||ref|| over all elements, in double.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <vector>

namespace wo::testing {

template <class Got, class Ref> double rel_l2(const std::vector<Got> &got, const std::vector<Ref> &ref) {
  double num = 0, den = 0;
  for (size_t i = 0; i < ref.size(); ++i) {
    const double d = static_cast<double>(got[i]) - static_cast<double>(ref[i]);
    num += d * d;
    den += static_cast<double>(ref[i]) * static_cast<double>(ref[i]);
  }
  return std::sqrt(num / std::max(den, 1e-30));
}

} // namespace wo::testing
