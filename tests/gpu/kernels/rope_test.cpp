// RoPE vs a double-precision CPU model of ggml's rope (NORM and NEOX pairing, partial rotation,
// frequency scaling, YaRN ramp and magnitude), applied inside strided rows.
#include "device_buffer.hpp"
#include "rope_ref.hpp"

#include <worker/kernels.hpp>

#include <algorithm>

namespace wo::kernels::test {
namespace {

struct RopeCase {
  const char *name;
  RopeParams p;
  int32_t n_heads, head_dim;
  int64_t extra_stride; // floats appended to each token row (0: contiguous)
};

RopeParams params(RopeMode mode, int32_t n_dims, float base, float freq_scale = 1.0f, float ext = 0.0f,
                  float attn = 1.0f, int32_t n_ctx_orig = 0) {
  RopeParams p;
  p.mode = mode;
  p.n_dims = n_dims;
  p.freq_base = base;
  p.freq_scale = freq_scale;
  p.ext_factor = ext;
  p.attn_factor = attn;
  p.n_ctx_orig = n_ctx_orig;
  return p;
}

TEST(RopeKernel, MatchesGgmlSemantics) {
  WO_REQUIRE_DEVICE();
  const uint32_t seed = fresh_seed();
  std::mt19937 rng(seed);
  const RopeCase cases[] = {
      {"norm llama", params(RopeMode::Norm, 0, 10000.0f), 4, 64, 0},
      {"neox qwen2", params(RopeMode::Neox, 0, 1000000.0f), 2, 32, 0},
      {"neox partial phi3-like", params(RopeMode::Neox, 32, 10000.0f), 3, 96, 5},
      {"norm partial + linear scale", params(RopeMode::Norm, 48, 500000.0f, 0.25f), 2, 128, 0},
      {"neox yarn gpt-oss", params(RopeMode::Neox, 64, 150000.0f, 1.0f / 32, 1.0f, 1.0f, 4096), 4, 64, 128},
  };
  for (const RopeCase &c : cases) {
    const int64_t n_tokens = 13, row = int64_t(c.n_heads) * c.head_dim, stride = row + c.extra_stride;
    auto x = randn(n_tokens * stride, rng);
    std::vector<int32_t> pos(n_tokens);
    std::uniform_int_distribution<int32_t> pd(0, 2047);
    for (auto &p : pos)
      p = pd(rng);
    pos[0] = 0;
    DeviceBuffer<float> dx(x);
    DeviceBuffer<int32_t> dpos(pos);
    ASSERT_EQ(rope(dx.get(), n_tokens, c.n_heads, c.head_dim, dpos.get(), c.p, nullptr,
                   c.extra_stride ? stride : 0),
              cudaSuccess)
        << c.name;
    std::vector<double> ref(x.begin(), x.end()); // the gap past each row must stay untouched
    for (int64_t t = 0; t < n_tokens; ++t)
      for (int32_t h = 0; h < c.n_heads; ++h)
        rope_ref(&ref[t * stride + h * c.head_dim], pos[t], c.p, c.head_dim);
    // Tolerance: theta is computed in FP32 for positions < 2048: |err| <= 2e-3 absolute on N(0,1) inputs.
    EXPECT_TRUE(close(dx.download(), ref, 2e-3, 1e-4)) << c.name << " seed " << seed;
  }
}

} // namespace
} // namespace wo::kernels::test
