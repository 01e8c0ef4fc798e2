// The half / bfloat16 / E8M0 conversions the codecs are built on.
#include "quant_common/scalar_convert.hpp"

#include <gtest/gtest.h>

#include <cmath>

namespace wo::quant {
namespace {

TEST(Half, EveryNonNanHalfRoundTripsThroughFloat) {
  for (uint32_t h = 0; h < 65536; ++h) {
    const float f = half_to_float(static_cast<uint16_t>(h));
    if (std::isnan(f)) {
      EXPECT_TRUE((h & 0x7c00u) == 0x7c00u && (h & 0x3ffu)) << h;
      continue;
    }
    ASSERT_EQ(float_to_half(f), h) << "half 0x" << std::hex << h << " -> " << f;
  }
}

TEST(Half, KnownValues) {
  EXPECT_EQ(half_to_float(0x3c00), 1.0f);
  EXPECT_EQ(half_to_float(0xc000), -2.0f);
  EXPECT_EQ(half_to_float(0x7bff), 65504.0f);
  EXPECT_EQ(half_to_float(0x0001), std::ldexp(1.0f, -24));
  EXPECT_EQ(half_to_float(0x03ff), std::ldexp(1023.0f, -24));
  EXPECT_TRUE(std::isinf(half_to_float(0x7c00)));
}

TEST(Half, RoundsToNearestEven) {
  // 1 + 2^-11 is halfway between 1 and 1 + 2^-10: ties to the even mantissa (1.0).
  EXPECT_EQ(float_to_half(1.0f + std::ldexp(1.0f, -11)), 0x3c00);
  // 1 + 3*2^-11 is halfway between 1+2^-10 (odd) and 1+2^-9 (even): goes up.
  EXPECT_EQ(float_to_half(1.0f + 3 * std::ldexp(1.0f, -11)), 0x3c02);
  EXPECT_EQ(float_to_half(1.0f + std::ldexp(1.0f, -11) + std::ldexp(1.0f, -20)), 0x3c01);
  EXPECT_EQ(float_to_half(65519.0f), 0x7bff);
  EXPECT_EQ(float_to_half(65520.0f), 0x7c00);
  EXPECT_EQ(float_to_half(std::ldexp(1.0f, -25)), 0x0000);                         // tie to even (0)
  EXPECT_EQ(float_to_half(std::ldexp(1.5f, -25)), 0x0001);                         // above the tie
  EXPECT_EQ(float_to_half(std::ldexp(3.0f, -25)), 0x0002);                         // 1.5 ulp: tie to even 2
  EXPECT_EQ(float_to_half(-std::ldexp(1.0f, -14)), 0x8400);                        // smallest normal
  EXPECT_EQ(float_to_half(std::ldexp(1.0f, -14) - std::ldexp(1.0f, -26)), 0x0400); // rounds up into normals
}

TEST(BFloat16, RoundTripAndRounding) {
  for (uint32_t b = 0; b < 65536; ++b) {
    const float f = bf16_to_float(static_cast<uint16_t>(b));
    if (!std::isnan(f)) {
      ASSERT_EQ(float_to_bf16(f), b);
    }
  }
  EXPECT_EQ(float_to_bf16(1.0f + std::ldexp(1.0f, -8)), 0x3f80); // tie to even
  EXPECT_EQ(float_to_bf16(1.0f + 3 * std::ldexp(1.0f, -8)), 0x3f82);
}

TEST(E8M0, HalfScale) {
  EXPECT_EQ(e8m0_to_float_half(128), 1.0f);
  EXPECT_EQ(e8m0_to_float_half(127), 0.5f);
  EXPECT_EQ(e8m0_to_float_half(2), std::ldexp(1.0f, -126));
  EXPECT_EQ(e8m0_to_float_half(1), std::ldexp(1.0f, -127));
  EXPECT_EQ(e8m0_to_float_half(0), std::ldexp(1.0f, -128));
  EXPECT_EQ(e8m0_to_float_half(254), std::ldexp(1.0f, 126));
}

} // namespace
} // namespace wo::quant
