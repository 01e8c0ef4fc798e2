// The whole-block GEMV's grid choices (unit_grid) for the three target models' decode shapes on an
// H100's 132 SMs, checked without a GPU: which passes run tiled, which by warp and in groups of
// how many rows. The decode speed of issue 11 rests on these choices (docs/perf.md measures each);
// a change to unit_grid's arithmetic that moves one of them shows here before a device run does.
// Weight addresses are fake (256-byte aligned, as cudaMalloc's): unit_grid reads only their
// alignment.
#include "quant_common/unit_gemv.cuh"

#include <worker/ggml_types.hpp>

#include <gtest/gtest.h>

#include <cstdint>

namespace {

namespace qd = wo::quant::dev;
constexpr int kH100Sms = 132;
constexpr uintptr_t kBase = 1u << 20; // a 256-byte aligned address (only its alignment is read)

wo::quant::GemvParams params(uint32_t type, int64_t rows, int64_t cols) {
  wo::quant::GemvParams p{};
  p.w = reinterpret_cast<const uint8_t *>(kBase);
  p.row_bytes = wo::ggml::row_bytes(type, cols);
  p.rows = rows;
  p.cols = cols;
  p.n_tokens = p.n_slots = p.x_slots = p.n_expert = 1;
  return p;
}

// A plain weight's grid, or gate/up's (two weights of rows x cols, up right after gate), on `sms` SMs.
template <class D>
qd::UnitGrid grid(uint32_t type, int64_t rows, int64_t cols, bool swiglu = false, int sms = kH100Sms) {
  const wo::quant::GemvParams p = params(type, rows, cols);
  wo::quant::Segments seg;
  if (swiglu) {
    seg.n = 2;
    seg.swiglu = true;
    seg.w[0] = p.w;
    seg.w[1] = p.w + rows * p.row_bytes;
    seg.end[0] = rows;
    seg.end[1] = 2 * rows;
  }
  return qd::unit_grid<D>(p, seg, true, true, sms);
}

class UnitGrid : public ::testing::Test {
protected:
  void SetUp() override {
    // The switches that change these choices (read once per process): only their defaults here.
    if (!qd::unit_tiled_enabled() || !qd::unit_tiles_enabled() || qd::act_terms() != 2 ||
        qd::unit_tiled_ties() != 2)
      GTEST_SKIP() << "a WORKER_UNIT_* or WORKER_ACT_TERMS switch is set: the defaults' grids only";
  }
};

// Qwen2.5-0.5B (Q4_K_M): gate/up Q5_0 4864 x 896 ties at two chunks, and its warp groups (2432 on
// 2112 warps) would take uneven rounds: tiled, 128 CTAs of 38 rows. The Q4_K down projection ties
// too, with one even round (896 one-row groups): by warp. The Q6_K one (3990-byte rows) runs only
// tiled. The Q8_0 LM head's tiled partial dots would not fit a CTA: by warp, 4-row groups.
TEST_F(UnitGrid, Qwen25HalfBillionShapes) {
  const auto gu = grid<qd::DecQ5_0>(wo::ggml::Q5_0, 4864, 896, true);
  EXPECT_TRUE(gu.tiled);
  EXPECT_EQ(gu.n_groups, 128);
  EXPECT_EQ(gu.rows_per_group, 38);
  const auto down4 = grid<qd::DecQ4_K>(wo::ggml::Q4_K, 896, 4864);
  EXPECT_FALSE(down4.tiled);
  EXPECT_EQ(down4.rows_per_group, 1);
  EXPECT_EQ(down4.n_groups, 896);
  const auto down6 = grid<qd::DecQ6_K>(wo::ggml::Q6_K, 896, 4864);
  EXPECT_TRUE(down6.tiled);
  EXPECT_EQ(down6.n_groups, 112);
  const auto lm = grid<qd::DecQ8_0>(wo::ggml::Q8_0, 151936, 896);
  EXPECT_FALSE(lm.tiled);
  EXPECT_EQ(lm.rows_per_group, 4);
}

// Phi-3-mini (Q4_K_M): q/k/v Q5_K 9216 x 3072 is shorter tiled (2 chunks against 3); the Q4_K down
// projection ties with uneven rounds (3072 one-row groups): tiled; gate/up and o tie with one even
// round: by warp (gate/up in tile chunks). The Q6_K LM head ties too (12 chunks a warp either way;
// 8016 4-row groups on 2112 warps: uneven rounds), so it runs tiled: 132 CTAs of 244 rows.
TEST_F(UnitGrid, Phi3MiniShapes) {
  EXPECT_TRUE(grid<qd::DecQ5_K>(wo::ggml::Q5_K, 9216, 3072).tiled);
  const auto down4 = grid<qd::DecQ4_K>(wo::ggml::Q4_K, 3072, 8192);
  EXPECT_TRUE(down4.tiled);
  EXPECT_EQ(down4.n_groups, 128);
  EXPECT_TRUE(grid<qd::DecQ6_K>(wo::ggml::Q6_K, 3072, 8192).tiled);
  const auto gu = grid<qd::DecQ4_K>(wo::ggml::Q4_K, 8192, 3072, true);
  EXPECT_FALSE(gu.tiled);
  EXPECT_EQ(gu.rows_per_group, 4);
  EXPECT_GT(gu.tile_w, 0);
  const auto o = grid<qd::DecQ4_K>(wo::ggml::Q4_K, 3072, 3072);
  EXPECT_FALSE(o.tiled);
  EXPECT_EQ(o.rows_per_group, 2);
  const auto lm = grid<qd::DecQ6_K>(wo::ggml::Q6_K, 32064, 3072);
  EXPECT_TRUE(lm.tiled);
  EXPECT_EQ(lm.n_groups, 132);
  EXPECT_EQ(lm.rows_per_group, 244);
}

// GPT-OSS-20B: the Q8_0 o projection (2880 x 4096) ties with uneven rounds (2880 one-row groups):
// tiled on 131 CTAs. The Q8_0 LM head (201088 x 2880) runs by warp in 4-row groups, 24 rounds of
// 3 chunks: groups of 16 rows or more would not fit their partial dots beside the chunk stages
// (8 rows tie at 12 rounds of 6; the smaller wins ties), nor would the tiled grid's.
TEST_F(UnitGrid, GptOss20bShapes) {
  const auto o = grid<qd::DecQ8_0>(wo::ggml::Q8_0, 2880, 4096);
  EXPECT_TRUE(o.tiled);
  EXPECT_EQ(o.n_groups, 131);
  const auto lm = grid<qd::DecQ8_0>(wo::ggml::Q8_0, 201088, 2880);
  EXPECT_FALSE(lm.tiled);
  EXPECT_EQ(lm.rows_per_group, 4);
}

// The SM count is the grid's input: on a GPU of 114 SMs (H100 PCIe) Qwen2.5's gate/up warp groups
// (2432 on 1824 warps) still take uneven rounds, and its tiled runs follow the SMs: 44 rows (a
// multiple of 2, whose 616-byte Q5_0 rows make whole 16-byte copies), 111 CTAs.
TEST_F(UnitGrid, FollowsTheSmCount) {
  const auto g = grid<qd::DecQ5_0>(wo::ggml::Q5_0, 4864, 896, true, 114);
  ASSERT_TRUE(g.tiled);
  EXPECT_EQ(g.rows_per_group, 44);
  EXPECT_EQ(g.n_groups, 111);
}

// Units of 4 or 8 blocks (Q8_0, Q5_0, MXFP4) store their block dots as float4s (gemv_units_kernel),
// so every unit's first partial dot must sit on 16 bytes in shared memory, whatever the weight's
// shape: the partial dots start after the staged activations, a by-warp grid's warps hold
// kHalves x rows_per_group x blocks_per_row floats each, and unit u's dots start at float u U. A
// grid rule that broke this would fault with a misaligned address on some user's file, not on the
// three models. Checked for every shape the sweep gives a grid (plain and gate/up, 132 and 114 SMs).
template <class D> void expect_float4_units(uint32_t type) {
  constexpr int kU = qd::UnitDot<D>::U;
  static_assert(kU % 4 == 0, "the float4 stores are for units of a multiple of 4 blocks");
  int grids = 0;
  for (const int64_t cols : {32, 96, 128, 160, 288, 896, 1024, 1056, 2880, 3072, 4864, 8192})
    for (const int64_t rows : {1, 3, 4, 7, 8, 9, 36, 100, 896, 1000, 2880, 4096, 151936})
      for (const bool swiglu : {false, true})
        for (const int sms : {kH100Sms, 114}) {
          const auto g = grid<D>(type, rows, cols, swiglu, sms);
          if (g.n_groups == 0) continue;
          ++grids;
          const int halves = swiglu ? 2 : 1;
          ASSERT_EQ(qd::unit_stage_bytes(cols) % 16, 0u) << cols << " columns";
          // warp w's partial dots start w x per_warp floats in (tiled: one region at 0); a unit's at
          // u U floats more, on 16 bytes by the static_assert above
          const int64_t per_warp = g.tiled ? 0 : int64_t{halves} * g.rows_per_group * g.blocks_per_row;
          ASSERT_EQ(per_warp * 4 % 16, 0)
              << rows << " x " << cols << (swiglu ? " gate/up" : "") << ", " << sms
              << " SMs: warp 1's partial dots start off 16 bytes (" << g.rows_per_group << " rows of "
              << g.blocks_per_row << " blocks a group)";
        }
  EXPECT_GT(grids, 50) << "the sweep should reach the unit kernel for most shapes";
}
TEST(UnitGridAlignment, FourBlockUnitsKeepTheirDotsOnSixteenBytes) {
  expect_float4_units<qd::DecQ8_0>(wo::ggml::Q8_0);
  expect_float4_units<qd::DecQ5_0>(wo::ggml::Q5_0);
  expect_float4_units<qd::DecMXFP4>(wo::ggml::MXFP4);
}

// The kernel takes a unit's block column as x - umulhi(x, nb_magic) * blocks_per_row (no division
// after its PDL wait), which is x % blocks_per_row only while x * blocks_per_row < 2^32. Its x stay
// below 2^12 (warp 15's first chunk of 8-block units: 15 x 256 + 31 x 8), and a row the unit
// kernel's shared memory holds has fewer than 4096 blocks: every such pair, with the reciprocal
// unit_grid computes for a real grid's row.
TEST(UnitGridColumns, ReciprocalGivesTheBlockColumnExactly) {
  const auto g = grid<qd::DecQ8_0>(wo::ggml::Q8_0, 896, 4864);
  ASSERT_GT(g.n_groups, 0);
  ASSERT_EQ(g.nb_magic, static_cast<uint32_t>((uint64_t{1} << 32) / 152 + 1)) << "4864 columns: 152 blocks";
  for (uint32_t nb = 2; nb < 4096; ++nb) {
    const auto magic = static_cast<uint32_t>((uint64_t{1} << 32) / nb + 1);
    for (uint32_t x = 0; x < (1u << 12); ++x) {
      const auto q = static_cast<uint32_t>((static_cast<uint64_t>(x) * magic) >> 32);
      ASSERT_EQ(x - q * nb, x % nb) << "x " << x << ", " << nb << " blocks per row";
    }
  }
}

} // namespace
