// The unit GEMV's whole-block dots (unit_dots.cuh) compiled for the host: activations staged in the
// swizzled layout gemv_units_kernel writes, rows cut into units exactly as the kernel cuts them
// (a unit may end in the next row), and every row's sum of block dots must equal the FP64 sum of
// the reference-dequantized weights times the staged activations (FP32 rounding only). Fresh
// random blocks every run.
#include "quant_common/cpu_codec.hpp"
#include "quant_common/random_blocks.hpp"
#include "quant_common/unit_dots.cuh"
#include "test_util.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <set>

namespace wo::quant {
namespace {

using namespace wo::quant::dev;
using namespace wo::quant::testing;

// What stage_x_units writes: per group of 32, the int8 terms in swizzled granules and one meta
// record; value[] is what the terms represent.
template <int QU> struct StagedUnits {
  std::vector<uint8_t> hi, lo;
  std::vector<XMeta> meta;
  std::vector<double> value;
  XU<QU> view() const { return XU<QU>{hi.data(), lo.data(), meta.data()}; }
};

template <int QU> StagedUnits<QU> stage(const std::vector<float> &x) {
  const size_t n = x.size();
  // whole 128-byte lines, as unit_stage_bytes sizes them
  StagedUnits<QU> s{std::vector<uint8_t>((n + 127) / 128 * 128), std::vector<uint8_t>((n + 127) / 128 * 128),
                    std::vector<XMeta>((n / 32 + 7) / 8 * 8), std::vector<double>(n)};
  for (size_t g = 0; g < n / 32; ++g) {
    float amax = 0.0f;
    for (size_t i = 0; i < 32; ++i)
      amax = std::max(amax, std::fabs(x[32 * g + i]));
    const float inv = xq_inv(amax), scale = xq_scale(amax);
    float sums[2];
    for (size_t half = 0; half < 2; ++half) {
      int hs = 0, ls = 0;
      for (size_t i = 16 * half; i < 16 * half + 16; ++i) {
        int h, l;
        xq_split(x[32 * g + i], inv, h, l);
        const size_t at = 16 * granule_slot<QU>(static_cast<int64_t>((32 * g + i) / 16)) + i % 16;
        s.hi[at] = static_cast<uint8_t>(static_cast<int8_t>(h));
        s.lo[at] = static_cast<uint8_t>(static_cast<int8_t>(l));
        s.value[32 * g + i] = static_cast<double>(scale) * (h + l / 254.0);
        hs += h, ls += l;
      }
      sums[half] = xq_sum(scale, hs, ls);
    }
    s.meta[meta_slot(static_cast<int64_t>(g))] = XMeta{scale, sums[0], sums[1], sums[0] + sums[1]};
  }
  return s;
}

std::vector<float> activations(size_t n, uint64_t seed) {
  auto x = normal_floats(n, seed);
  for (size_t i = 7; i < n; i += 97)
    x[i] *= 25.0f; // outliers, as hidden states have
  return x;
}

TEST(UnitStaging, SwizzlesPermuteEachLine) {
  for (int64_t line = 0; line < 64; ++line) {
    std::set<int64_t> g4, g8, m;
    for (int64_t i = 0; i < 8; ++i) {
      g4.insert(granule_slot<4>(8 * line + i));
      g8.insert(granule_slot<8>(8 * line + i));
      m.insert(meta_slot(8 * line + i));
    }
    for (const auto *s : {&g4, &g8, &m}) {
      ASSERT_EQ(s->size(), 8u) << "line " << line;
      ASSERT_EQ(*s->begin(), 8 * line);
      ASSERT_EQ(*s->rbegin(), 8 * line + 7);
    }
  }
}

TEST(UnitStaging, MxfpWordsMatchTheCodeTable) {
  const uint64_t seed = fresh_seed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  uint64_t r = seed | 1;
  for (int t = 0; t < 4096; ++t) {
    r ^= r << 13, r ^= r >> 7, r ^= r << 17;
    const auto q = static_cast<uint32_t>(r);
    uint32_t lo, hi;
    mxfp4_word(q, lo, hi);
    for (int k = 0; k < 4; ++k) {
      ASSERT_EQ(static_cast<int8_t>(lo >> (8 * k)), mxfp4_value((q >> (8 * k)) & 15u)) << std::hex << q;
      ASSERT_EQ(static_cast<int8_t>(hi >> (8 * k)), mxfp4_value((q >> (8 * k + 4)) & 15u)) << std::hex << q;
    }
  }
}

template <class D> class UnitDotTest : public ::testing::Test {};
using UTypes = ::testing::Types<DecQ4_K, DecQ5_K, DecQ8_0, DecQ5_0, DecMXFP4>;
TYPED_TEST_SUITE(UnitDotTest, UTypes);

// Rows of 9 or 18 blocks for the 32-value types, so units of 4 or 8 blocks straddle rows.
TYPED_TEST(UnitDotTest, RowSumsMatchFp64OnStagedActivations) {
  using D = TypeParam;
  using T = UnitDot<D>;
  static_assert(has_unit<D>(), "the type has a unit dot");
  const uint64_t seed = fresh_seed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  const int64_t n_blocks = D::QK == 32 ? 18 : 7, rows = 8 * T::U, cols = n_blocks * D::QK;
  const auto raw = random_blocks(D::kType, rows, cols, seed);
  std::vector<float> w(rows * cols);
  dequantize_rows(D::kType, raw.data(), rows, cols, w.data());
  const auto x = activations(cols, seed ^ 0x9e3779b97f4a7c15ull);
  const auto s = stage<T::QU>(x);
  ASSERT_EQ(rows * n_blocks % T::U, 0);
  std::vector<double> got(rows, 0.0);
  for (int64_t u = 0; u < rows * n_blocks / T::U; ++u) { // the kernel's walk over one group
    UnitWords<T::BYTES / 4> words;
    UnitLoad<D>::load(raw.data() + u * T::BYTES, words);
    for (int k = 0; k < T::U; ++k) {
      const int64_t blk = u * T::U + k;
      got[blk / n_blocks] += T::block(words, k, s.view(), (blk % n_blocks) * (D::QK / 32));
    }
  }
  std::vector<float> got_f(rows), want_f(rows);
  for (int64_t r = 0; r < rows; ++r) {
    double want_staged = 0.0, want = 0.0, mag = 0.0, stage_bound = 0.0;
    for (int64_t c = 0; c < cols; ++c) {
      const double wv = w[r * cols + c];
      want_staged += wv * s.value[c];
      want += wv * x[c];
      mag += std::fabs(wv * s.value[c]);
      stage_bound += std::fabs(wv) * std::fabs(s.value[c] - x[c]);
    }
    // Integer dots are exact; what remains is FP32 rounding of the scale products and sums.
    EXPECT_LE(std::fabs(got[r] - want_staged), 2e-6 * mag) << "row " << r;
    EXPECT_LE(std::fabs(got[r] - want), stage_bound + 2e-6 * mag) << "row " << r;
    got_f[r] = static_cast<float>(got[r]);
    want_f[r] = static_cast<float>(want);
  }
  EXPECT_LE(rel_l2(got_f.data(), want_f.data(), rows), 4e-4); // the GEMV tests' limit is 2e-3
}

} // namespace
} // namespace wo::quant
