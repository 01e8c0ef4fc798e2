// The decode GEMV's int8-activation dots (int8x_dots.cuh) compiled for the host: activations staged
// as the kernel stages them (scale per 32, hi + lo/254 int8 terms, sums per 16) must reconstruct
// every activation within amax/64516 (+1% for FP32 rounding of x/s), and the per-part dots over whole rows
// must equal the FP64 sum of the reference-dequantized weights times the staged activations (FP32 rounding
// only), hence the true activations within the staging bound. Fresh random blocks every run.
#include "quant_common/cpu_codec.hpp"
#include "quant_common/int8x_dots.cuh"
#include "quant_common/random_blocks.hpp"
#include "test_util.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <type_traits>

namespace wo::quant {
namespace {

using namespace wo::quant::dev;
using namespace wo::quant::testing;

// What gemv_int8x_kernel's staging computes, per group of 32 activations.
struct StagedX {
  std::vector<int8_t> hi, lo;
  std::vector<float> scale, sum16;
  std::vector<double> value; // s * (hi + lo / 254)
  XQ view() const { return XQ{hi.data(), lo.data(), scale.data(), sum16.data()}; }
};

// kTerms == 1: lo is zero in the value and poison in the array (the one-term dots must not read it).
template <int kTerms = 2> StagedX stage(const std::vector<float> &x) {
  const size_t n = x.size();
  StagedX s{std::vector<int8_t>(n), std::vector<int8_t>(n), std::vector<float>(n / 32),
            std::vector<float>(n / 16), std::vector<double>(n)};
  for (size_t g = 0; g < n / 32; ++g) {
    float amax = 0.0f;
    for (size_t i = 0; i < 32; ++i)
      amax = std::max(amax, std::fabs(x[32 * g + i]));
    const float inv = xq_inv(amax);
    s.scale[g] = xq_scale(amax);
    for (size_t half = 0; half < 2; ++half) {
      int hs = 0, ls = 0;
      for (size_t i = 16 * half; i < 16 * half + 16; ++i) {
        int h, l;
        xq_split<kTerms>(x[32 * g + i], inv, h, l);
        EXPECT_LE(std::abs(h), 127);
        EXPECT_LE(std::abs(l), 127);
        if (kTerms == 1) {
          EXPECT_EQ(l, 0);
        }
        s.hi[32 * g + i] = static_cast<int8_t>(h);
        s.lo[32 * g + i] = static_cast<int8_t>(kTerms == 2 ? l : 0x55);
        s.value[32 * g + i] = static_cast<double>(s.scale[g]) * (h + l / 254.0);
        hs += h, ls += l;
      }
      s.sum16[2 * g + half] = xq_sum(s.scale[g], hs, ls);
    }
  }
  return s;
}

// Every staged activation within `half_step` x amax of its group (+1% for FP32 rounding of x/s).
void expect_reconstructs(const std::vector<float> &x, const StagedX &s, double half_step) {
  for (size_t g = 0; g < x.size() / 32; ++g) {
    double amax = 0.0;
    for (size_t i = 0; i < 32; ++i)
      amax = std::max(amax, std::fabs(static_cast<double>(x[32 * g + i])));
    for (size_t i = 32 * g; i < 32 * g + 32; ++i)
      ASSERT_LE(std::fabs(s.value[i] - x[i]), amax * half_step * 1.01 + 1e-12) << "activation " << i;
  }
}

// Activations with an outlier in some groups (as LLM hidden states have). Two terms: half a lo
// step, amax / (127 x 254 x 2); one term: half a step of amax/127.
TEST(Int8xStaging, ReconstructsWithinTheBound) {
  const uint64_t seed = fresh_seed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  const auto x = outlier_activations(4096, seed);
  expect_reconstructs(x, stage<2>(x), 1.0 / 64516.0);
  expect_reconstructs(x, stage<1>(x), 1.0 / 254.0);
}

// A row staged by its producer (worker/staged_x.cuh, SDK 1.9) holds what the GEMV's staging computes:
// the same hi and lo terms per value, scale per group, and each 16-value half's term sums, from which
// a consumer's sum16 comes out as the staging's (one term: the hi terms and hi sums alone).
TEST(Int8xStaging, ProducerStagedRowHoldsTheStagingTerms) {
  const uint64_t seed = fresh_seed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  auto x = outlier_activations(896, seed);
  std::fill(x.begin() + 64, x.begin() + 96, 0.0f); // a group of zeros
  const int64_t cols = static_cast<int64_t>(x.size());
  std::vector<uint8_t> row(static_cast<size_t>(wo::staged::row_bytes(cols)), 0xAA);
  wo::staged::stage_row_host(x.data(), cols, row.data());
  const StagedX two = stage<2>(x), one = stage<1>(x);
  for (int64_t c = 0; c < cols; ++c) {
    ASSERT_EQ(static_cast<int8_t>(row[c]), two.hi[c]) << "hi " << c;
    ASSERT_EQ(static_cast<int8_t>(row[wo::staged::lo_offset(cols) + c]), two.lo[c]) << "lo " << c;
    ASSERT_EQ(one.hi[c], two.hi[c]) << "one term's hi " << c;
  }
  for (int64_t g = 0; g < cols / 32; ++g) {
    wo::staged::Record r;
    std::memcpy(&r, row.data() + wo::staged::record_offset(cols, g), sizeof r);
    EXPECT_EQ(r.scale, two.scale[g]) << "group " << g;
    EXPECT_EQ(r.unused, 0u);
    for (int half = 0; half < 2; ++half) {
      int hs, ls;
      wo::staged::unpack_half(r.half[half], hs, ls);
      EXPECT_EQ(xq_sum(r.scale, hs, ls), two.sum16[2 * g + half]) << "group " << g << " half " << half;
      EXPECT_EQ(xq_sum(r.scale, hs, 0), one.sum16[2 * g + half])
          << "one term, group " << g << " half " << half;
    }
  }
  EXPECT_EQ(row.size(), static_cast<size_t>(2 * cols + cols / 32 * 16));
}

TEST(Int8xStaging, MxfpBytesMatchTheCodeTable) {
  for (uint32_t c0 = 0; c0 < 16; ++c0)
    for (uint32_t c1 = 0; c1 < 16; ++c1) {
      const uint32_t codes = c0 | (c1 << 8) | (((c0 + 5) & 15) << 16) | (((c1 + 11) & 15) << 24);
      const uint32_t b = mxfp4_bytes(codes);
      for (int k = 0; k < 4; ++k)
        ASSERT_EQ(static_cast<int8_t>(b >> (8 * k)), mxfp4_value((codes >> (8 * k)) & 15u))
            << "codes 0x" << std::hex << codes << " byte " << k;
    }
}

template <class D> class Int8xDotTest : public ::testing::Test {};
using XTypes =
    ::testing::Types<DecQ4_0, DecQ4_1, DecQ5_0, DecQ5_1, DecQ8_0, DecQ4_K, DecQ5_K, DecQ6_K, DecMXFP4>;
TYPED_TEST_SUITE(Int8xDotTest, XTypes);

TYPED_TEST(Int8xDotTest, RowDotsMatchFp64OnStagedActivations) {
  using D = TypeParam;
  using X = XDot<D>;
  static_assert(has_xdot<D>(), "every quantized block type has an int8 dot");
  const uint64_t seed = fresh_seed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  const int64_t rows = 8, n_blocks = 24, cols = n_blocks * D::QK;
  const auto raw = random_blocks(D::kType, rows, cols, seed);
  std::vector<float> w(rows * cols);
  dequantize_rows(D::kType, raw.data(), rows, cols, w.data());
  const auto x = outlier_activations(cols, seed ^ 0x9e3779b97f4a7c15ull);
  const uint64_t row_bytes = wo::ggml::row_bytes(D::kType, cols);
  const auto check = [&](auto terms) {
    constexpr int kTerms = decltype(terms)::value;
    SCOPED_TRACE(std::to_string(kTerms) + " activation term(s)");
    const StagedX s = stage<kTerms>(x);
    std::vector<double> got(rows, 0.0);
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t blk = 0; blk < n_blocks; ++blk)
        for (int part = 0; part < X::PARTS; ++part)
          got[r] += X::template dot<kTerms>(raw.data() + r * row_bytes + blk * D::BYTES, part, s.view(),
                                            blk * (D::QK / 32));
    expect_rows_match_fp64(got, w, x, s.value, kTerms == 2 ? 4e-4 : kNoRowSummary);
  };
  check(std::integral_constant<int, 2>{});
  check(std::integral_constant<int, 1>{});
}

} // namespace
} // namespace wo::quant
