// Norms, elementwise ops, softmax and argmax vs double-precision CPU references.
#include "device_buffer.hpp"

#include <worker/kernels.hpp>

#include <algorithm>

namespace wo::kernels::test {
namespace {

class KernelTest : public ::testing::Test {
protected:
  void SetUp() override {
    WO_REQUIRE_DEVICE();
    seed_ = fresh_seed();
    rng_.seed(seed_);
    RecordProperty("seed", std::to_string(seed_));
  }
  uint32_t seed_ = 0;
  std::mt19937 rng_;
};

TEST_F(KernelTest, RmsNormMatchesReference) {
  // Tolerance: FP32 accumulation over <= 6144 values vs double: 1e-5 abs + 1e-4 rel. Up to 4096
  // columns in multiples of 4 run the register-cached kernel; 1001 and 6144 the looping one.
  for (int64_t cols : {64, 96, 896, 4096, 1001, 6144}) {
    const int64_t rows = 7;
    auto x = randn(rows * cols, rng_, 2.0f, 0.5f), w = randn(cols, rng_, 0.3f, 1.0f);
    DeviceBuffer<float> dx(x), dw(w), dy(rows * cols);
    ASSERT_EQ(rms_norm(dx.get(), dw.get(), dy.get(), rows, cols, 1e-5f, nullptr), cudaSuccess);
    std::vector<double> ref(rows * cols);
    for (int64_t r = 0; r < rows; ++r) {
      double ss = 0;
      for (int64_t c = 0; c < cols; ++c)
        ss += double(x[r * cols + c]) * x[r * cols + c];
      const double inv = 1.0 / std::sqrt(ss / cols + 1e-5);
      for (int64_t c = 0; c < cols; ++c)
        ref[r * cols + c] = x[r * cols + c] * inv * w[c];
    }
    EXPECT_TRUE(close(dy.download(), ref, 1e-5, 1e-4)) << "cols " << cols << " seed " << seed_;
    // In place (y aliases x) gives the same result.
    ASSERT_EQ(rms_norm(dx.get(), dw.get(), dx.get(), rows, cols, 1e-5f, nullptr), cudaSuccess);
    EXPECT_TRUE(close(dx.download(), ref, 1e-5, 1e-4)) << "in place, cols " << cols << " seed " << seed_;
  }
}

TEST_F(KernelTest, LayerNormMatchesReference) {
  for (int64_t cols : {64, 768, 1000}) {
    const int64_t rows = 5;
    auto x = randn(rows * cols, rng_, 3.0f, 4.0f), w = randn(cols, rng_, 0.3f, 1.0f),
         b = randn(cols, rng_, 0.2f);
    DeviceBuffer<float> dx(x), dw(w), db(b), dy(rows * cols);
    ASSERT_EQ(layer_norm(dx.get(), dw.get(), db.get(), dy.get(), rows, cols, 1e-5f, nullptr), cudaSuccess);
    std::vector<double> ref(rows * cols);
    for (int64_t r = 0; r < rows; ++r) {
      double m = 0, v = 0;
      for (int64_t c = 0; c < cols; ++c)
        m += x[r * cols + c];
      m /= cols;
      for (int64_t c = 0; c < cols; ++c)
        v += (x[r * cols + c] - m) * (x[r * cols + c] - m);
      const double inv = 1.0 / std::sqrt(v / cols + 1e-5);
      for (int64_t c = 0; c < cols; ++c)
        ref[r * cols + c] = (x[r * cols + c] - m) * inv * w[c] + b[c];
    }
    EXPECT_TRUE(close(dy.download(), ref, 1e-5, 1e-4)) << "cols " << cols << " seed " << seed_;
  }
}

TEST_F(KernelTest, AddBiasAddScaleWithStrides) {
  const int64_t rows = 9, cols = 40, stride = 100; // bias into a slice of a wider row
  auto y = randn(rows * stride, rng_), b = randn(cols, rng_);
  DeviceBuffer<float> dy(y), db(b);
  ASSERT_EQ(add_bias(dy.get() + 10, db.get(), rows, cols, nullptr, stride), cudaSuccess);
  std::vector<double> ref(y.begin(), y.end());
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c)
      ref[r * stride + 10 + c] += b[c];
  EXPECT_TRUE(close(dy.download(), ref, 1e-6, 1e-6)) << "seed " << seed_;

  const int64_t n = 100003;
  auto a = randn(n, rng_), c = randn(n, rng_);
  DeviceBuffer<float> da(a), dc(c), dout(n);
  ASSERT_EQ(add(dout.get(), da.get(), dc.get(), n, nullptr), cudaSuccess);
  ASSERT_EQ(add(da.get(), da.get(), dc.get(), n, nullptr), cudaSuccess); // residual form, aliasing y = a
  std::vector<double> sum(n), scaled(n);
  for (int64_t i = 0; i < n; ++i)
    sum[i] = double(a[i]) + c[i], scaled[i] = double(c[i]) * -0.37;
  EXPECT_TRUE(close(dout.download(), sum, 1e-6, 1e-6));
  EXPECT_TRUE(close(da.download(), sum, 1e-6, 1e-6));
  ASSERT_EQ(scale(dc.get(), dout.get(), -0.37f, n, nullptr), cudaSuccess);
  EXPECT_TRUE(close(dout.download(), scaled, 1e-6, 1e-6));
}

TEST_F(KernelTest, SwigluSeparateAndFused) {
  const int64_t rows = 6, cols = 300;
  // Fused [gate; up] rows (phi3 ffn_up output): stride 2*cols.
  auto gu = randn(rows * 2 * cols, rng_, 3.0f);
  DeviceBuffer<float> dgu(gu), dout(rows * cols);
  ASSERT_EQ(swiglu(dgu.get(), dgu.get() + cols, dout.get(), rows, cols, nullptr, 2 * cols), cudaSuccess);
  std::vector<double> ref(rows * cols);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) {
      const double g = gu[r * 2 * cols + c], u = gu[r * 2 * cols + cols + c];
      ref[r * cols + c] = g / (1 + std::exp(-g)) * u;
    }
  EXPECT_TRUE(close(dout.download(), ref, 1e-5, 1e-5)) << "seed " << seed_;

  // Separate buffers, output aliasing gate.
  auto g = randn(rows * cols, rng_, 3.0f), u = randn(rows * cols, rng_);
  DeviceBuffer<float> dg(g), du(u);
  ASSERT_EQ(swiglu(dg.get(), du.get(), dg.get(), rows, cols, nullptr), cudaSuccess);
  for (int64_t i = 0; i < rows * cols; ++i)
    ref[i] = double(g[i]) / (1 + std::exp(-double(g[i]))) * u[i];
  EXPECT_TRUE(close(dg.download(), ref, 1e-5, 1e-5)) << "seed " << seed_;
}

TEST_F(KernelTest, SwigluOaiClampsAndMatches) {
  const int64_t rows = 4, cols = 257;
  auto g = randn(rows * cols, rng_, 8.0f), u = randn(rows * cols, rng_, 8.0f); // many values past the limit
  DeviceBuffer<float> dg(g), du(u), dout(rows * cols);
  ASSERT_EQ(swiglu_oai(dg.get(), du.get(), dout.get(), rows, cols, 1.702f, 7.0f, nullptr), cudaSuccess);
  std::vector<double> ref(rows * cols);
  for (int64_t i = 0; i < rows * cols; ++i) {
    const double gg = std::min<double>(g[i], 7.0), uu = std::clamp<double>(u[i], -7.0, 7.0);
    ref[i] = gg / (1 + std::exp(-1.702 * gg)) * (uu + 1);
  }
  EXPECT_TRUE(close(dout.download(), ref, 1e-5, 1e-5)) << "seed " << seed_;
}

TEST_F(KernelTest, GeluTanhMatchesReference) {
  const int64_t n = 5000;
  auto x = randn(n, rng_, 3.0f);
  DeviceBuffer<float> dx(x), dy(n);
  ASSERT_EQ(gelu_tanh(dx.get(), dy.get(), n, nullptr), cudaSuccess);
  std::vector<double> ref(n);
  for (int64_t i = 0; i < n; ++i) {
    const double v = x[i];
    ref[i] = 0.5 * v * (1 + std::tanh(std::sqrt(2 / M_PI) * (v + 0.044715 * v * v * v)));
  }
  EXPECT_TRUE(close(dy.download(), ref, 1e-5, 1e-5)) << "seed " << seed_;
}

TEST_F(KernelTest, SoftmaxRowsMatchesReference) {
  const int64_t rows = 3, cols = 151936; // a vocabulary-sized row
  auto x = randn(rows * cols, rng_, 4.0f);
  DeviceBuffer<float> dx(x), dy(rows * cols);
  ASSERT_EQ(softmax_rows(dx.get(), dy.get(), rows, cols, nullptr), cudaSuccess);
  std::vector<double> ref(rows * cols);
  for (int64_t r = 0; r < rows; ++r) {
    double m = -1e300, s = 0;
    for (int64_t c = 0; c < cols; ++c)
      m = std::max<double>(m, x[r * cols + c]);
    for (int64_t c = 0; c < cols; ++c)
      s += std::exp(x[r * cols + c] - m);
    for (int64_t c = 0; c < cols; ++c)
      ref[r * cols + c] = std::exp(x[r * cols + c] - m) / s;
  }
  EXPECT_TRUE(close(dy.download(), ref, 1e-9, 1e-4)) << "seed " << seed_;
}

TEST_F(KernelTest, ArgmaxRowsPicksLargestAndLowestOnTies) {
  const int64_t rows = 5, cols = 201088;
  auto x = randn(rows * cols, rng_);
  std::uniform_int_distribution<int64_t> pick(0, cols - 1);
  const int64_t a = pick(rng_), b = pick(rng_);
  x[2 * cols + std::max(a, b)] = 100.0f; // row 2: a tie at two places; the lower index wins
  x[2 * cols + std::min(a, b)] = 100.0f;
  DeviceBuffer<float> dx(x);
  DeviceBuffer<int32_t> dout(rows);
  ASSERT_EQ(argmax_rows(dx.get(), dout.get(), rows, cols, nullptr), cudaSuccess);
  const auto got = dout.download();
  for (int64_t r = 0; r < rows; ++r) {
    const auto first = x.begin() + r * cols;
    const int64_t want = std::max_element(first, first + cols) - first; // first maximum
    EXPECT_EQ(got[r], want) << "row " << r << " seed " << seed_;
  }
}

TEST_F(KernelTest, FillPositionsAndKvWrite) {
  const int64_t n = 37, pos0 = 1000;
  DeviceBuffer<int32_t> dp(n);
  ASSERT_EQ(fill_positions(dp.get(), n, static_cast<int32_t>(pos0), nullptr), cudaSuccess);
  const auto p = dp.download();
  for (int64_t i = 0; i < n; ++i)
    ASSERT_EQ(p[i], pos0 + i);

  // Write 5 tokens with stride (inside a fused [q;k;v] row) at position 3 of an 11-position cache.
  const int32_t heads = 2, hd = 96;
  const int64_t row = heads * hd, stride = 3 * row, n_ctx = 11, tokens = 5, at = 3;
  auto src = randn(tokens * stride, rng_, 5.0f);
  std::vector<__half> fill(n_ctx * row, __float2half(-7.0f));
  DeviceBuffer<float> dsrc(src);
  DeviceBuffer<__half> kc(fill), vc(fill);
  ASSERT_EQ(
      kv_write(dsrc.get(), dsrc.get() + row, kc.get(), vc.get(), at, tokens, heads, hd, nullptr, stride),
      cudaSuccess);
  const auto k = kc.download(), v = vc.download();
  for (int64_t pos = 0; pos < n_ctx; ++pos)
    for (int64_t e = 0; e < row; ++e) {
      const bool written = pos >= at && pos < at + tokens;
      const float ek = written ? __half2float(__float2half(src[(pos - at) * stride + e])) : -7.0f;
      const float ev = written ? __half2float(__float2half(src[(pos - at) * stride + row + e])) : -7.0f;
      ASSERT_EQ(__half2float(k[pos * row + e]), ek) << "K pos " << pos << " elem " << e;
      ASSERT_EQ(__half2float(v[pos * row + e]), ev) << "V pos " << pos << " elem " << e;
    }

  // Positions from the device (graph mode): the host's pos0 is ignored; rows land at positions[t].
  const std::vector<int32_t> pos = {9, 1};
  DeviceBuffer<int32_t> dpos(pos);
  DeviceBuffer<__half> kc2(fill), vc2(fill);
  ASSERT_EQ(kv_write(dsrc.get(), dsrc.get() + row, kc2.get(), vc2.get(), /*pos0=*/0, 2, heads, hd, nullptr,
                     stride, dpos.get()),
            cudaSuccess);
  const auto k2 = kc2.download();
  for (int64_t p = 0; p < n_ctx; ++p)
    for (int64_t e = 0; e < row; ++e) {
      const int64_t t = p == 9 ? 0 : p == 1 ? 1 : -1;
      const float ek = t >= 0 ? __half2float(__float2half(src[t * stride + e])) : -7.0f;
      ASSERT_EQ(__half2float(k2[p * row + e]), ek) << "K pos " << p << " elem " << e << " (device positions)";
    }
}

TEST_F(KernelTest, InvalidArgumentsAreRejected) {
  DeviceBuffer<float> d(16);
  EXPECT_EQ(rms_norm(nullptr, nullptr, d.get(), 1, 16, 1e-5f, nullptr), cudaErrorInvalidValue);
  EXPECT_EQ(add_bias(d.get(), d.get(), 2, 8, nullptr, 4), cudaErrorInvalidValue); // stride < cols
  AttentionParams ap;
  ap.n_tokens = 1, ap.n_kv = 1, ap.n_heads = 3, ap.n_kv_heads = 2, ap.head_dim = 4; // 3 % 2 != 0
  EXPECT_EQ(attention(d.get(), reinterpret_cast<__half *>(d.get()), reinterpret_cast<__half *>(d.get()),
                      d.get() + 8, ap, nullptr),
            cudaErrorInvalidValue);
  ap.n_heads = 2, ap.head_dim = 300; // > 256
  EXPECT_EQ(attention(d.get(), reinterpret_cast<__half *>(d.get()), reinterpret_cast<__half *>(d.get()),
                      d.get() + 8, ap, nullptr),
            cudaErrorInvalidValue);
  ap.head_dim = 4, ap.staged_out = d.get(); // a staged row of 2 x 4 values: no whole group of 32
  EXPECT_EQ(attention(d.get(), reinterpret_cast<__half *>(d.get()), reinterpret_cast<__half *>(d.get()),
                      d.get() + 8, ap, nullptr),
            cudaErrorInvalidValue);
  RopeParams rp;
  rp.n_dims = 5; // odd
  DeviceBuffer<int32_t> pos(1);
  EXPECT_EQ(rope(d.get(), 1, 1, 8, pos.get(), rp, nullptr), cudaErrorInvalidValue);
}

} // namespace
} // namespace wo::kernels::test
