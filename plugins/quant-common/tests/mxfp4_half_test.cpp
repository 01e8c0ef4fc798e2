// The grouped GEMM's MXFP4 -> FP16 decode (mxfp4_half.cuh) compiled for the host: every value of a
// block must have the bits of the reference dequantizer's float rounded once to FP16 (what the
// float decoder path wrote), for every one of the 256 block scales (those FP16 cannot hold go
// through the float decoder), every code, and blocks at every byte alignment. Fresh random codes
// every run.
#include "quant_common/cpu_codec.hpp"
#include "quant_common/mxfp4_half.cuh"
#include "test_util.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

namespace wo::quant {
namespace {

using namespace wo::quant::dev;
using namespace wo::quant::testing;

TEST(Mxfp4Half, FactorIsTheScaleExactlyWhereFp16HoldsIt) {
  for (uint32_t e = 0; e < 256; ++e) {
    uint32_t f2 = 0;
    const bool fast = mxfp4_half_factor(e, f2);
    const int k = static_cast<int>(e) - 127;
    EXPECT_EQ(fast, k >= -24 && k <= 15) << "e=" << e;
    if (!fast) continue;
    EXPECT_EQ(half_to_float(static_cast<uint16_t>(f2)), std::ldexp(1.0f, k)) << "e=" << e;
    EXPECT_EQ(f2 >> 16, f2 & 0xffffu) << "e=" << e;
  }
}

TEST(Mxfp4Half, BlocksEqualTheReferenceRoundedToFp16BitForBit) {
  const uint64_t seed = fresh_seed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937_64 rng(seed);
  int fast_blocks = 0, float_blocks = 0;
  for (uint32_t e = 0; e < 256; ++e) {
    for (int rep = 0; rep < 8; ++rep) {
      // A 17-byte block at byte offset off (0..3 past a word, plus 0..2 words) of a word buffer.
      const int off = static_cast<int>(rng() % 12);
      std::vector<uint32_t> words(8);
      for (auto &w : words)
        w = static_cast<uint32_t>(rng()); // bytes around the block are noise the decode must ignore
      auto *bytes = reinterpret_cast<uint8_t *>(words.data());
      bytes[off] = static_cast<uint8_t>(e);
      for (int i = 0; i < 16; ++i) // the first block's codes run through all 16 values twice
        bytes[off + 1 + i] =
            rep == 0 ? static_cast<uint8_t>(i | ((15 - i) << 4)) : static_cast<uint8_t>(rng());
      float ref[32];
      dequantize_rows(wo::ggml::MXFP4, bytes + off, 1, 32, ref);
      uint32_t out[16];
      mxfp4_block_to_half(words.data(), off, out);
      uint32_t f2;
      (mxfp4_half_factor(e, f2) ? fast_blocks : float_blocks)++;
      for (int v = 0; v < 32; ++v) {
        const uint16_t got = static_cast<uint16_t>(out[v / 2] >> (16 * (v & 1)));
        ASSERT_EQ(got, float_to_half(ref[v]))
            << "e=" << e << " off=" << off << " value " << v << " code 0x" << std::hex
            << ((bytes[off + 1 + v % 16] >> (4 * (v / 16))) & 15) << " ref " << ref[v];
      }
    }
  }
  EXPECT_EQ(fast_blocks, 40 * 8);
  EXPECT_EQ(float_blocks, 216 * 8);
}

TEST(Mxfp4Half, MinusZeroCodeDecodesAsPlusZero) {
  std::vector<uint32_t> words(8, 0);
  auto *bytes = reinterpret_cast<uint8_t *>(words.data());
  bytes[0] = 127; // scale 1
  for (int i = 1; i <= 16; ++i)
    bytes[i] = 0x88; // every value is code 8
  uint32_t out[16];
  mxfp4_block_to_half(words.data(), 0, out);
  for (uint32_t w : out)
    EXPECT_EQ(w, 0u);
}

} // namespace
} // namespace wo::quant
