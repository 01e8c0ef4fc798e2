// The CPU reference filter defines what the GPU sampler must draw from; these tests pin its rules.
#include "sampling/filter_ref.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>

using wo::sampling::filtered_distribution;
using wo::sampling::SamplingParams;

namespace {

std::vector<float> random_logits(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> d(0.0f, 2.0f);
  std::vector<float> l(n);
  for (auto &x : l) x = d(rng);
  return l;
}

size_t kept(const std::vector<double> &p) {
  return static_cast<size_t>(std::count_if(p.begin(), p.end(), [](double x) { return x > 0.0; }));
}

} // namespace

TEST(SamplingFilter, PlainTemperatureIsSoftmax) {
  auto l = random_logits(50, 1);
  SamplingParams sp;
  sp.temperature = 0.7f;
  auto p = filtered_distribution(l, {}, sp);
  double z = 0;
  float m = *std::max_element(l.begin(), l.end());
  for (float x : l) z += std::exp((x - m) / 0.7);
  for (size_t i = 0; i < l.size(); ++i) EXPECT_NEAR(p[i], std::exp((l[i] - m) / 0.7) / z, 1e-6);
}

TEST(SamplingFilter, GreedyIsOneHotAtArgmaxLowestIdOnTies) {
  std::vector<float> l = {0.5f, 3.0f, -1.0f, 3.0f};
  SamplingParams sp;
  sp.temperature = 0.0f;
  auto p = filtered_distribution(l, {}, sp);
  EXPECT_EQ(p[1], 1.0);
  EXPECT_EQ(kept(p), 1u);
}

TEST(SamplingFilter, TopKKeepsKBest) {
  auto l = random_logits(100, 2);
  SamplingParams sp;
  sp.top_k = 7;
  auto p = filtered_distribution(l, {}, sp);
  EXPECT_EQ(kept(p), 7u);
  EXPECT_NEAR(std::accumulate(p.begin(), p.end(), 0.0), 1.0, 1e-9);
  std::vector<float> sorted = l;
  std::sort(sorted.rbegin(), sorted.rend());
  for (size_t i = 0; i < l.size(); ++i) EXPECT_EQ(p[i] > 0, l[i] >= sorted[6]) << i;
}

TEST(SamplingFilter, TopPKeepsShortestPrefixReachingMass) {
  auto l = random_logits(200, 3);
  SamplingParams sp;
  sp.top_p = 0.5f;
  auto full = filtered_distribution(l, {}, SamplingParams{});
  auto p = filtered_distribution(l, {}, sp);
  std::vector<double> sorted = full;
  std::sort(sorted.rbegin(), sorted.rend());
  size_t need = 0;
  double c = 0;
  while (c < 0.5) c += sorted[need++];
  EXPECT_EQ(kept(p), need);
}

TEST(SamplingFilter, MinPDropsTokensBelowFractionOfMax) {
  auto l = random_logits(300, 4);
  SamplingParams sp;
  sp.min_p = 0.2f;
  auto full = filtered_distribution(l, {}, SamplingParams{});
  auto p = filtered_distribution(l, {}, sp);
  double pmax = *std::max_element(full.begin(), full.end());
  for (size_t i = 0; i < l.size(); ++i) EXPECT_EQ(p[i] > 0, full[i] >= 0.2 * pmax - 1e-12) << i;
}

TEST(SamplingFilter, RepetitionPenaltyLowersSeenTokensOnce) {
  std::vector<float> l = {2.0f, -2.0f, 1.0f};
  std::vector<float> l2 = l;
  wo::sampling::apply_repetition_penalty(l2, {0, 1, 0, 0}, 2.0f);
  EXPECT_FLOAT_EQ(l2[0], 1.0f);  // positive: divided, once despite three occurrences
  EXPECT_FLOAT_EQ(l2[1], -4.0f); // negative: multiplied
  EXPECT_FLOAT_EQ(l2[2], 1.0f);
}

TEST(SamplingFilter, CombinedCutsAreIntersectionOfPrefixes) {
  auto l = random_logits(1000, 5);
  SamplingParams sp;
  sp.top_k = 50;
  sp.top_p = 0.9f;
  sp.min_p = 0.05f;
  sp.temperature = 1.3f;
  auto p = filtered_distribution(l, {}, sp);
  EXPECT_LE(kept(p), 50u);
  EXPECT_GE(kept(p), 1u);
  EXPECT_NEAR(std::accumulate(p.begin(), p.end(), 0.0), 1.0, 1e-9);
}
