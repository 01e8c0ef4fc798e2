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
#include <type_traits>

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
  uint32_t held[2] = {0, 0};
  XU<QU> view() const { return XU<QU>{hi.data(), lo.data(), meta.data(), {held[0], held[1]}}; }
};

// kTerms == 1: lo is zero in the value and the sums, poison in the array (not read).
template <int QU, XOrder O, bool kHalfSums, int kTerms = 2>
StagedUnits<QU> stage(const std::vector<float> &x) {
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
    int hs_all = 0, ls_all = 0, hs_first = 0, ls_first = 0;
    for (size_t half = 0; half < 2; ++half) {
      int hs = 0, ls = 0;
      for (size_t i = 16 * half; i < 16 * half + 16; ++i) {
        int h, l;
        xq_split<kTerms>(x[32 * g + i], inv, h, l);
        const int si = staged_index(O, static_cast<int>(i));
        const size_t at = 16 * granule_slot<QU>(static_cast<int>(2 * g + si / 16)) + si % 16;
        s.hi[at] = static_cast<uint8_t>(static_cast<int8_t>(h));
        s.lo[at] = kTerms == 2 ? static_cast<uint8_t>(static_cast<int8_t>(l)) : uint8_t{0x55};
        s.value[32 * g + i] = static_cast<double>(scale) * (h + l / 254.0);
        hs += h, ls += l;
      }
      sums[half] = xq_sum(scale, hs, ls);
      hs_all += hs, ls_all += ls;
      if (half == 0) hs_first = hs, ls_first = ls;
    }
    float slot = sums[0] + sums[1];
    if (kHalfSums) {
      const uint32_t packed = pack_half_sums(hs_first, ls_first);
      std::memcpy(&slot, &packed, sizeof(slot));
    }
    s.meta[meta_slot(static_cast<int>(g))] = XMeta{scale, slot, hs_all, ls_all};
  }
  return s;
}

TEST(UnitStaging, SwizzlesPermuteEachLine) {
  for (int line = 0; line < 64; ++line) {
    std::set<int64_t> g4, g8, m;
    for (int i = 0; i < 8; ++i) {
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

TEST(UnitStaging, OrdersPermuteAGroup) {
  for (const XOrder o : {XOrder::Plain, XOrder::Nibbles}) {
    std::set<int> at;
    for (int i = 0; i < 32; ++i)
      at.insert(staged_index(o, i));
    ASSERT_EQ(at.size(), 32u);
    ASSERT_EQ(*at.begin(), 0);
    ASSERT_EQ(*at.rbegin(), 31);
  }
  // Nibble order: code word 1's nibbles 0..3 are values 4, 20, 5, 21 (staged word 2).
  EXPECT_EQ(staged_index(XOrder::Nibbles, 4), 8);
  EXPECT_EQ(staged_index(XOrder::Nibbles, 20), 9);
  EXPECT_EQ(staged_index(XOrder::Nibbles, 5), 10);
  EXPECT_EQ(staged_index(XOrder::Nibbles, 21), 11);
}

// prmt's sign mode as the host emulates it (the GPU tests check the device instruction through
// the GEMVs): bit 3 of a selector nibble replicates the picked byte's sign bit.
TEST(UnitStaging, PrmtSignModeReplicatesTheSignBit) {
  EXPECT_EQ(prmt_signed(0x83020100u, 0x07060504u, 0x3210u), 0x83020100u);
  EXPECT_EQ(prmt_signed(0x83020100u, 0x07060504u, 0x4567u), 0x04050607u);
  EXPECT_EQ(prmt_signed(0x83020100u, 0x07060504u, 0xb3b8u), 0xff83ff00u); // 0 signed, 3 signed, 3, 3 signed
  EXPECT_EQ(prmt_signed(0x83020100u, 0x07060504u, 0x000fu), 0x00000000u); // 7 signed (0x07: +)
  EXPECT_EQ(prmt_signed(0x83020100u, 0x07060504u, 0xffff3210u), 0x83020100u); // high bits unused
}

// Every code word: the biased bytes minus the bias are the code table's values, in nibble order.
TEST(UnitStaging, MxfpBiasedWordsMatchTheCodeTable) {
  const uint64_t seed = fresh_seed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  uint64_t r = seed | 1;
  for (int t = 0; t < 4096; ++t) {
    r ^= r << 13, r ^= r >> 7, r ^= r << 17;
    const auto q = static_cast<uint32_t>(t < 256 ? t * 0x01010101u : r); // all-equal bytes first
    uint32_t v[2];
    mxfp4_biased(q, v[0], v[1]);
    for (int k = 0; k < 8; ++k) { // nibble k of q is output byte k % 4 of v[k / 4]
      const int got = static_cast<int8_t>(v[k / 4] >> (8 * (k % 4))) - kMxfp4Bias;
      ASSERT_EQ(got, mxfp4_value((q >> (4 * k)) & 15u)) << std::hex << q << " nibble " << k;
    }
  }
}

template <class D> class UnitDotTest : public ::testing::Test {};
using UTypes = ::testing::Types<DecQ4_K, DecQ5_K, DecQ6_K, DecQ8_0, DecQ5_0, DecMXFP4>;
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
  const auto x = outlier_activations(cols, seed ^ 0x9e3779b97f4a7c15ull);
  ASSERT_EQ(rows * n_blocks % T::U, 0);
  // The weights with 16 spare bytes after them (LazyWords reads up to 4 past a unit's end).
  std::vector<uint8_t> buf(raw);
  buf.resize(raw.size() + 16, 0);
  constexpr int kSplit = UnitSplit<T>::value;
  const auto check = [&](auto terms) {
    constexpr int kTerms = decltype(terms)::value;
    SCOPED_TRACE(std::to_string(kTerms) + " activation term(s)");
    auto s = stage<T::QU, UnitOrder<T>::value, UnitHalfSums<T>::value, kTerms>(x);
    s.held[0] = UnitHeld<T>::word(0), s.held[1] = UnitHeld<T>::word(1);
    std::vector<double> got(rows, 0.0);
    for (int64_t u = 0; u < rows * n_blocks * kSplit / T::U; ++u) { // the kernel's walk over one group
      typename UnitLoad<D>::Words words;
      UnitLoad<D>::load(buf.data() + u / kSplit * T::BYTES, words);
      if constexpr (kSplit > 1) { // lane part u % kSplit of block u / kSplit
        const int64_t blk = u / kSplit;
        got[blk / n_blocks] += T::template block<kTerms>(words, static_cast<int>(u % kSplit), s.view(),
                                                         static_cast<int>((blk % n_blocks) * (D::QK / 32)));
      } else {
        for (int k = 0; k < T::U; ++k) {
          const int64_t blk = u * T::U + k;
          got[blk / n_blocks] += T::template block<kTerms>(words, k, s.view(),
                                                           static_cast<int>((blk % n_blocks) * (D::QK / 32)));
        }
      }
    }
    expect_rows_match_fp64(got, w, x, s.value, kTerms == 2 ? 4e-4 : kNoRowSummary);
  };
  check(std::integral_constant<int, 2>{});
  check(std::integral_constant<int, 1>{});
}

} // namespace
} // namespace wo::quant
