#include "sampling/filter_ref.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <unordered_set>

namespace wo::sampling {

void apply_repetition_penalty(std::vector<float> &logits, const std::vector<int32_t> &history, float penalty) {
  if (penalty == 1.0f) return;
  std::unordered_set<int32_t> seen(history.begin(), history.end());
  for (int32_t id : seen) {
    if (id < 0 || static_cast<size_t>(id) >= logits.size()) continue;
    float &l = logits[static_cast<size_t>(id)];
    l = l > 0.0f ? l / penalty : l * penalty;
  }
}

std::vector<double> filtered_distribution(std::vector<float> logits, const std::vector<int32_t> &history,
                                          const SamplingParams &params) {
  const size_t n = logits.size();
  std::vector<double> probs(n, 0.0);
  if (n == 0) return probs;
  apply_repetition_penalty(logits, history, params.repetition_penalty);

  std::vector<int32_t> order(n);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int32_t a, int32_t b) { return logits[a] > logits[b]; });

  if (params.greedy()) {
    probs[static_cast<size_t>(order[0])] = 1.0;
    return probs;
  }
  // The GPU computes in float: scale the logits exactly as it does.
  const float inv_t = 1.0f / params.temperature;
  const float lmax = logits[order[0]] * inv_t;
  std::vector<double> w(n);
  for (size_t i = 0; i < n; ++i) w[i] = std::exp(static_cast<double>(logits[order[i]] * inv_t - lmax));

  size_t keep = n;
  if (params.top_k > 0) keep = std::min(keep, static_cast<size_t>(params.top_k));
  if (params.top_p < 1.0f) {
    double z = 0.0;
    for (size_t i = 0; i < keep; ++i) z += w[i];
    double c = 0.0;
    size_t cut = keep;
    for (size_t i = 0; i < keep; ++i) {
      c += w[i];
      if (c >= params.top_p * z) {
        cut = i + 1;
        break;
      }
    }
    keep = cut;
  }
  if (params.min_p > 0.0f) {
    size_t cut = 0;
    while (cut < keep && w[cut] >= params.min_p) ++cut; // w[0] == 1 == p_max / p_max
    keep = std::max<size_t>(cut, 1);
  }
  double z = 0.0;
  for (size_t i = 0; i < keep; ++i) z += w[i];
  for (size_t i = 0; i < keep; ++i) probs[static_cast<size_t>(order[i])] = w[i] / z;
  return probs;
}

} // namespace wo::sampling
