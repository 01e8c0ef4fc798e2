// The CUDA block decoders compiled for the host: decode() must reproduce the CPU reference
// dequantization bit for bit, part by part, and dot() (the factored GEMV inner product) must equal
// the plain sum of decoded values times x within FP32 rounding. Fresh random blocks every run.
#include "quant_common/cpu_codec.hpp"
#include "quant_common/device_decoders.cuh"
#include "quant_common/random_blocks.hpp"
#include "test_util.hpp"

#include <gtest/gtest.h>

#include <cmath>

namespace wo::quant {
namespace {

using namespace wo::quant::dev;
using namespace wo::quant::testing;

template <class D> class DecoderTest : public ::testing::Test {};
using Decoders = ::testing::Types<DecQ4_0, DecQ4_1, DecQ5_0, DecQ5_1, DecQ8_0, DecQ4_K, DecQ5_K, DecQ6_K,
                                  DecMXFP4, DecF32, DecF16, DecBF16>;
TYPED_TEST_SUITE(DecoderTest, Decoders);

TYPED_TEST(DecoderTest, DecodeIsBitExactAndDotMatches) {
  using D = TypeParam;
  const uint64_t seed = fresh_seed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  const int64_t n_blocks = 64, cols = n_blocks * D::QK;
  const auto raw = random_blocks(D::kType, 1, cols, seed);
  ASSERT_EQ(raw.size(), static_cast<size_t>(n_blocks * D::BYTES));
  std::vector<float> ref(cols);
  dequantize_rows(D::kType, raw.data(), 1, cols, ref.data());
  const auto x = normal_floats(cols, seed ^ 0x5bd1e995u);
  size_t bad_bits = 0;
  double worst = 0.0;
  for (int64_t blk = 0; blk < n_blocks; ++blk) {
    const uint8_t *b = raw.data() + blk * D::BYTES;
    for (int part = 0; part < D::PARTS; ++part) {
      float v[D::V], xs[D::V];
      D::decode(b, part, v);
      double want = 0.0, mag = 0.0;
      for (int g = 0; g < D::V / 4; ++g)
        for (int i = 0; i < 4; ++i) {
          const int64_t idx = blk * D::QK + D::start(part, g) + i;
          bad_bits += float_to_bits(v[4 * g + i]) != float_to_bits(ref[idx]);
          xs[4 * g + i] = x[idx];
          want += static_cast<double>(ref[idx]) * x[idx];
          mag += std::fabs(static_cast<double>(ref[idx]) * x[idx]);
        }
      const double got = D::dot(b, part, xs);
      worst = std::max(worst, std::fabs(got - want) / std::max(mag, 1e-30));
    }
  }
  EXPECT_EQ(bad_bits, 0u) << "decode() differs from the CPU dequantizer";
  // FP32 sums of <= 16 terms with factored scales: a few ulps of the sum of magnitudes.
  EXPECT_LE(worst, 2e-6) << "dot() differs from sum(decode * x)";
}

// Every element of a block is produced by exactly one (part, group, lane) of decode().
TYPED_TEST(DecoderTest, PartsCoverTheBlockOnce) {
  using D = TypeParam;
  std::vector<int> hits(D::QK, 0);
  for (int part = 0; part < D::PARTS; ++part)
    for (int g = 0; g < D::V / 4; ++g)
      for (int i = 0; i < 4; ++i) {
        const int idx = D::start(part, g) + i;
        ASSERT_GE(idx, 0);
        ASSERT_LT(idx, D::QK);
        ++hits[idx];
      }
  for (int i = 0; i < D::QK; ++i)
    EXPECT_EQ(hits[i], 1) << "element " << i;
}

} // namespace
} // namespace wo::quant
