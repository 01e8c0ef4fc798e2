// gguf-synth makes quantized tensors directly as random blocks (issue 10). The blocks must decode,
// through the same CPU dequantizer the quant plugins use, to finite weights centred on zero with
// the preset's standard deviation: the float fill's statistics, which keep a real forward pass's
// activations and logits finite.
#include "quant_common/cpu_codec.hpp"
#include "rows.hpp"
#include "value_stats.hpp"

#include <worker/ggml_types.hpp>

#include <gtest/gtest.h>

#include <vector>

namespace {

namespace G = wo::ggml;
using wo::synth::Fill;
using wo::synth::generate_rows;
using wo::synth::SynthTensor;
using wo::synth::testing::value_stats;

const uint32_t kBlockTypes[] = {G::Q4_0, G::Q4_1, G::Q5_0, G::Q5_1, G::Q8_0,
                                G::Q4_K, G::Q5_K, G::Q6_K, G::MXFP4};

std::vector<uint8_t> rows_of(const SynthTensor &t, uint64_t seed, int64_t row0, int64_t n_rows) {
  std::vector<uint8_t> out(G::row_bytes(t.ggml_type, t.ne[0]) * static_cast<uint64_t>(n_rows));
  std::vector<float> scratch;
  generate_rows(t, seed, 3, row0, n_rows, out.data(), scratch);
  return out;
}

} // namespace

// 256 rows of 1024: 262144 weights, 1024 K-quant super-blocks; every type lands within 0.4% of the
// target (measured). 2% still catches a wrong code variance, scale range or jitter normalisation
// (the smallest such slip, an unnormalised jitter, is +4%).
TEST(GgufSynthBlocks, DequantizeToFiniteWeightsWithThePresetSpread) {
  for (uint32_t type : kBlockTypes) {
    // token_embd (1), 1/sqrt(896) and 1/sqrt(14336): the presets' largest and smallest scales.
    for (float scale : {1.0f, 0.0334f, 0.00835f}) {
      SCOPED_TRACE(std::string(G::type_name(type)) + " scale " + std::to_string(scale));
      const SynthTensor t{"blk.0.ffn_up.weight", type, {1024, 256}, Fill::normal, scale};
      const auto bytes = rows_of(t, 11, 0, 256);
      std::vector<float> w(1024 * 256);
      wo::quant::dequantize_rows(type, bytes.data(), 256, 1024, w.data());
      const auto s = value_stats(w.data(), w.size());
      EXPECT_EQ(s.non_finite, 0u);
      EXPECT_NEAR(s.std / scale, 1.0, 0.02);
      EXPECT_LT(std::abs(s.mean) / scale, 0.01);
    }
  }
}

// Each chunk has its own stream from (seed, tensor, first row): chunks repeat for the same
// arguments (so --threads cannot change the file) and differ across seeds and rows (so a tensor is
// not one chunk repeated).
TEST(GgufSynthBlocks, ChunksDependOnSeedAndFirstRowOnly) {
  for (uint32_t type : kBlockTypes) {
    SCOPED_TRACE(G::type_name(type));
    const SynthTensor t{"w", type, {512, 64}, Fill::normal, 0.05f};
    const auto a = rows_of(t, 5, 16, 8);
    EXPECT_EQ(a, rows_of(t, 5, 16, 8));
    EXPECT_NE(a, rows_of(t, 6, 16, 8));
    EXPECT_NE(a, rows_of(t, 5, 24, 8));
  }
}

TEST(GgufSynthBlocks, RefusesWhatItCannotMake) {
  EXPECT_EQ(wo::synth::cannot_generate({"w", G::Q4_K, {256, 4}, Fill::normal, 1.0f}), "");
  EXPECT_EQ(wo::synth::cannot_generate({"n", G::F32, {256}, Fill::norm_gain, 0.1f}), "");
  EXPECT_NE(wo::synth::cannot_generate({"w", G::Q3_K, {256, 4}, Fill::normal, 1.0f}).find("Q3_K"),
            std::string::npos);
  EXPECT_NE(wo::synth::cannot_generate({"n", G::Q8_0, {256}, Fill::norm_gain, 0.1f}).find("norm gain"),
            std::string::npos);
}
