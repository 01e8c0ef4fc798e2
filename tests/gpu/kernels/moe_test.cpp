// MoE helpers vs CPU references: router top-k + softmax, indexed bias, weighted slot sum.
#include "device_buffer.hpp"

#include <worker/kernels.hpp>

#include <algorithm>
#include <functional>
#include <numeric>

namespace wo::kernels::test {
namespace {

TEST(MoeKernels, TopkSoftmaxMatchesReference) {
  WO_REQUIRE_DEVICE();
  const uint32_t seed = fresh_seed();
  std::mt19937 rng(seed);
  for (auto [cols, k] : {std::pair<int64_t, int32_t>{8, 4}, {32, 4}, {64, 32}, {128, 8}, {1000, 3}}) {
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

// gpt-oss's fused path folds the bias adds into their consumers; the results must be the very
// floats of the separate kernels (the reference routing relies on it), so equality is exact.
TEST(MoeKernels, BiasesInConsumersEqualSeparateAdds) {
  WO_REQUIRE_DEVICE();
  const uint32_t seed = fresh_seed();
  std::mt19937 rng(seed);
  const int64_t tokens = 9, n_exp = 32, cols = 96;
  const int32_t k = 4;
  // router: add_bias then top-k == top-k with the bias
  auto logits = randn(tokens * n_exp, rng, 2.0f), rb = randn(n_exp, rng, 0.5f);
  DeviceBuffer<float> dl(logits), dl2(logits), drb(rb), dw1(tokens * k), dw2(tokens * k);
  DeviceBuffer<int32_t> di1(tokens * k), di2(tokens * k);
  ASSERT_EQ(add_bias(dl.get(), drb.get(), tokens, n_exp, nullptr), cudaSuccess);
  ASSERT_EQ(topk_softmax(dl.get(), di1.get(), dw1.get(), tokens, n_exp, k, nullptr), cudaSuccess);
  ASSERT_EQ(topk_softmax(dl2.get(), di2.get(), dw2.get(), tokens, n_exp, k, nullptr, drb.get()), cudaSuccess);
  EXPECT_EQ(di1.download(), di2.download()) << "seed " << seed;
  EXPECT_EQ(dw1.download(), dw2.download()) << "seed " << seed;
  EXPECT_EQ(dl2.download(), logits) << "the fused top-k must leave the logits alone";
  // experts: add_bias_indexed on gate and up, then the SwiGLU == the SwiGLU with IndexedBias
  const auto ids = di1.download();
  auto gate = randn(tokens * k * cols, rng, 3.0f), up = randn(tokens * k * cols, rng, 3.0f);
  auto gb = randn(n_exp * cols, rng), ub = randn(n_exp * cols, rng);
  DeviceBuffer<float> dg(gate), du(up), dg2(gate), du2(up), dgb(gb), dub(ub);
  DeviceBuffer<int32_t> did(ids);
  ASSERT_EQ(add_bias_indexed(dg.get(), dgb.get(), did.get(), tokens * k, cols, nullptr), cudaSuccess);
  ASSERT_EQ(add_bias_indexed(du.get(), dub.get(), did.get(), tokens * k, cols, nullptr), cudaSuccess);
  ASSERT_EQ(swiglu_oai(dg.get(), du.get(), dg.get(), tokens * k, cols, 1.702f, 7.0f, nullptr), cudaSuccess);
  IndexedBias ib;
  ib.gate = dgb.get();
  ib.up = dub.get();
  ib.ids = did.get();
  ASSERT_EQ(swiglu_oai(dg2.get(), du2.get(), dg2.get(), tokens * k, cols, 1.702f, 7.0f, nullptr, 0, ib),
            cudaSuccess);
  EXPECT_EQ(dg.download(), dg2.download()) << "seed " << seed;
  // settled ids: the first bias pair read before the PDL wait, the same floats
  DeviceBuffer<float> dg3(gate), du3(up);
  ib.settled = true;
  ASSERT_EQ(swiglu_oai(dg3.get(), du3.get(), dg3.get(), tokens * k, cols, 1.702f, 7.0f, nullptr, 0, ib),
            cudaSuccess);
  EXPECT_EQ(dg.download(), dg3.download()) << "settled, seed " << seed;
  // down: add_bias_indexed then the weighted sum == the weighted sum with the bias
  auto down = randn(tokens * k * cols, rng), db = randn(n_exp * cols, rng), acc = randn(tokens * cols, rng);
  DeviceBuffer<float> dd(down), dd2(down), ddb(db), da1(acc), da2(acc);
  ASSERT_EQ(add_bias_indexed(dd.get(), ddb.get(), did.get(), tokens * k, cols, nullptr), cudaSuccess);
  ASSERT_EQ(weighted_sum_slots(dd.get(), dw1.get(), da1.get(), tokens, k, cols, true, nullptr), cudaSuccess);
  ASSERT_EQ(weighted_sum_slots(dd2.get(), dw1.get(), da2.get(), tokens, k, cols, true, nullptr, ddb.get(),
                               did.get()),
            cudaSuccess);
  EXPECT_EQ(da1.download(), da2.download()) << "seed " << seed;
  // settled w and ids (read before the PDL wait), with and without the bias: the same floats
  DeviceBuffer<float> da3(acc), da4(acc), da5(acc);
  ASSERT_EQ(weighted_sum_slots(dd2.get(), dw1.get(), da3.get(), tokens, k, cols, true, nullptr, ddb.get(),
                               did.get(), /*settled=*/true),
            cudaSuccess);
  EXPECT_EQ(da1.download(), da3.download()) << "settled, seed " << seed;
  ASSERT_EQ(weighted_sum_slots(dd.get(), dw1.get(), da4.get(), tokens, k, cols, false, nullptr), cudaSuccess);
  ASSERT_EQ(weighted_sum_slots(dd.get(), dw1.get(), da5.get(), tokens, k, cols, false, nullptr, nullptr,
                               nullptr,
                               /*settled=*/true),
            cudaSuccess);
  EXPECT_EQ(da4.download(), da5.download()) << "settled without bias, seed " << seed;
  EXPECT_EQ(
      weighted_sum_slots(dd2.get(), dw1.get(), da2.get(), tokens, k, cols, true, nullptr, ddb.get(), nullptr),
      cudaErrorInvalidValue)
      << "a bias without ids must be refused";
}

// gpt-oss decode routes a token in one launch (moe_route) instead of rms_norm, the router GEMV
// and topk_softmax. h must be the norm kernel's very floats (the experts read it), the logits the
// F32 dot to float rounding, and the choice exactly topk_softmax's on those logits. Three calls
// in a row on fresh inputs: the last-block counter must come back to zero every time.
TEST(MoeKernels, RouteEqualsNormRouterTopk) {
  WO_REQUIRE_DEVICE();
  const uint32_t seed = fresh_seed();
  std::mt19937 rng(seed);
  struct Shape {
    int32_t embd, experts, k;
  };
  for (const Shape sh : {Shape{2880, 32, 4}, Shape{4096, 128, 8}, Shape{64, 7, 7}, Shape{1000, 33, 1}}) {
    const int64_t E = sh.embd, X = sh.experts;
    auto nw = randn(E, rng, 0.3f, 1.0f), w = randn(X * E, rng, 0.05f), bias = randn(X, rng, 0.5f);
    DeviceBuffer<float> dnw(nw), dw(w), dbias(bias), dx(E), dh(E), dh_ref(E), dlog(X), dwt(sh.k),
        dwt_ref(sh.k);
    DeviceBuffer<int32_t> dids(sh.k), dids_ref(sh.k);
    DeviceBuffer<unsigned> dctr(std::vector<unsigned>{0u});
    MoeRoute r;
    r.x = dx.get(), r.norm_w = dnw.get(), r.eps = 1e-5f, r.w = dw.get(), r.bias = dbias.get();
    r.h = dh.get(), r.logits = dlog.get(), r.ids = dids.get(), r.weights = dwt.get(), r.counter = dctr.get();
    r.n_embd = sh.embd, r.n_expert = sh.experts, r.k = sh.k;
    ASSERT_TRUE(moe_route_fits(r)) << E << " x " << X;
    for (int call = 0; call < 3; ++call) {
      const auto x = randn(E, rng, 2.0f);
      dx.upload(x);
      ASSERT_EQ(moe_route(r, nullptr), cudaSuccess);
      ASSERT_EQ(rms_norm(dx.get(), dnw.get(), dh_ref.get(), 1, E, 1e-5f, nullptr), cudaSuccess);
      const auto h = dh.download();
      ASSERT_EQ(h, dh_ref.download())
          << "h, shape " << E << " x " << X << " call " << call << " seed " << seed;
      std::vector<double> ref(X);
      for (int64_t e = 0; e < X; ++e) {
        double s = 0;
        for (int64_t c = 0; c < E; ++c)
          s += double(w[e * E + c]) * h[c];
        ref[e] = s;
      }
      const auto logits = dlog.download();
      EXPECT_TRUE(close(logits, ref, 1e-5, 1e-5)) << "logits, shape " << E << " x " << X << " seed " << seed;
      DeviceBuffer<float> dlog2(logits);
      ASSERT_EQ(topk_softmax(dlog2.get(), dids_ref.get(), dwt_ref.get(), 1, X, sh.k, nullptr, dbias.get()),
                cudaSuccess);
      EXPECT_EQ(dids.download(), dids_ref.download()) << "shape " << E << " x " << X << " seed " << seed;
      EXPECT_EQ(dwt.download(), dwt_ref.download()) << "shape " << E << " x " << X << " seed " << seed;
      EXPECT_EQ(dctr.download()[0], 0u) << "the counter must be left at zero";
    }
  }
  MoeRoute bad;
  EXPECT_FALSE(moe_route_fits(bad)) << "null pointers";
  EXPECT_EQ(moe_route(bad, nullptr), cudaErrorInvalidValue);
  DeviceBuffer<float> a(8192), b(8192);
  DeviceBuffer<int32_t> ids(4);
  DeviceBuffer<unsigned> ctr(1);
  bad.x = a.get(), bad.norm_w = a.get(), bad.w = b.get(), bad.h = a.get(), bad.logits = a.get();
  bad.ids = ids.get(), bad.weights = a.get(), bad.counter = ctr.get(), bad.n_embd = 2880, bad.n_expert = 32;
  bad.k = 4;
  EXPECT_TRUE(moe_route_fits(bad));
  for (auto mutate : std::vector<std::function<void(MoeRoute &)>>{
           [](MoeRoute &r) { r.n_embd = 2884; },  // not a multiple of 8
           [](MoeRoute &r) { r.n_embd = 4104; },  // over the norm's register partition
           [](MoeRoute &r) { r.n_expert = 129; }, // over the top-k's registers
           [](MoeRoute &r) { r.k = 33; },         // over 32
           [](MoeRoute &r) { r.w = r.w + 1; }}) { // not 16-byte aligned
    MoeRoute m = bad;
    mutate(m);
    EXPECT_FALSE(moe_route_fits(m));
    EXPECT_EQ(moe_route(m, nullptr), cudaErrorInvalidValue);
  }
}

} // namespace
} // namespace wo::kernels::test
