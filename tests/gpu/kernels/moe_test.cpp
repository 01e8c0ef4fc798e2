// MoE helpers vs CPU references: router top-k + softmax, indexed bias, weighted slot sum.
#include "device_buffer.hpp"

#include <worker/kernels.hpp>

#include <algorithm>
#include <numeric>

namespace wo::kernels::test {
namespace {

TEST(MoeKernels, TopkSoftmaxMatchesReference) {
  WO_REQUIRE_DEVICE();
  const uint32_t seed = fresh_seed();
  std::mt19937 rng(seed);
  for (auto [cols, k] : {std::pair<int64_t, int32_t>{8, 4}, {32, 4}, {128, 8}, {1000, 3}}) {
    const int64_t rows = 21;
    auto x = randn(rows * cols, rng, 2.0f);
    DeviceBuffer<float> dx(x), dw(rows * k);
    DeviceBuffer<int32_t> did(rows * k);
    ASSERT_EQ(topk_softmax(dx.get(), did.get(), dw.get(), rows, cols, k, nullptr), cudaSuccess);
    const auto ids = did.download();
    const auto w = dw.download();
    std::vector<double> ref_w(rows * k);
    for (int64_t r = 0; r < rows; ++r) {
      std::vector<int32_t> order(cols);
      std::iota(order.begin(), order.end(), 0);
      std::stable_sort(order.begin(), order.end(),
                       [&](int32_t a, int32_t b) { return x[r * cols + a] > x[r * cols + b]; });
      double s = 0;
      for (int32_t j = 0; j < k; ++j)
        s += std::exp(double(x[r * cols + order[j]]) - x[r * cols + order[0]]);
      for (int32_t j = 0; j < k; ++j) {
        ASSERT_EQ(ids[r * k + j], order[j])
            << "row " << r << " slot " << j << " cols " << cols << " seed " << seed;
        ref_w[r * k + j] = std::exp(double(x[r * cols + order[j]]) - x[r * cols + order[0]]) / s;
      }
    }
    EXPECT_TRUE(close(w, ref_w, 1e-6, 1e-5)) << "cols " << cols << " seed " << seed;
  }
}

TEST(MoeKernels, IndexedBiasAndWeightedSum) {
  WO_REQUIRE_DEVICE();
  const uint32_t seed = fresh_seed();
  std::mt19937 rng(seed);
  const int64_t tokens = 7, n_exp = 8, cols = 65;
  const int32_t k = 4;
  auto y = randn(tokens * k * cols, rng), b = randn(n_exp * cols, rng), w = randn(tokens * k, rng);
  std::vector<int32_t> ids(tokens * k);
  std::uniform_int_distribution<int32_t> e(0, n_exp - 1);
  for (auto &i : ids)
    i = e(rng);
  auto acc = randn(tokens * cols, rng);
  DeviceBuffer<float> dy(y), db(b), dw(w), dacc(acc), dset(tokens * cols);
  DeviceBuffer<int32_t> did(ids);
  ASSERT_EQ(add_bias_indexed(dy.get(), db.get(), did.get(), tokens * k, cols, nullptr), cudaSuccess);
  ASSERT_EQ(weighted_sum_slots(dy.get(), dw.get(), dacc.get(), tokens, k, cols, true, nullptr), cudaSuccess);
  ASSERT_EQ(weighted_sum_slots(dy.get(), dw.get(), dset.get(), tokens, k, cols, false, nullptr), cudaSuccess);
  std::vector<double> yb(y.size()), ref_acc(acc.size()), ref_set(acc.size());
  for (int64_t r = 0; r < tokens * k; ++r)
    for (int64_t c = 0; c < cols; ++c)
      yb[r * cols + c] = double(y[r * cols + c]) + b[ids[r] * cols + c];
  for (int64_t t = 0; t < tokens; ++t)
    for (int64_t c = 0; c < cols; ++c) {
      double s = 0;
      for (int32_t j = 0; j < k; ++j)
        s += double(w[t * k + j]) * yb[(t * k + j) * cols + c];
      ref_set[t * cols + c] = s;
      ref_acc[t * cols + c] = s + acc[t * cols + c];
    }
  EXPECT_TRUE(close(dy.download(), yb, 1e-6, 1e-6)) << "seed " << seed;
  EXPECT_TRUE(close(dacc.download(), ref_acc, 1e-5, 1e-5)) << "seed " << seed;
  EXPECT_TRUE(close(dset.download(), ref_set, 1e-5, 1e-5)) << "seed " << seed;
}

} // namespace
} // namespace wo::kernels::test
