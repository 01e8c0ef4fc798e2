// Attention vs a double-precision CPU reference over the same FP16 cache: causal prefill, decode
// at a long context, chunked prefill, GQA, sliding window, sinks, odd head dims, strided q/out.
#include "device_buffer.hpp"

#include <worker/kernels.hpp>

#include <algorithm>

namespace wo::kernels::test {
namespace {

struct Case {
  const char *name;
  int64_t n_tokens, pos0;
  int32_t n_heads, n_kv_heads, head_dim;
  int64_t window;
  bool sinks, causal;
  int64_t q_pad, out_pad; // extra floats per token row (fused buffers)
};

// n standard normal values rounded to FP16, as a cache holds them.
std::vector<__half> randn_half(size_t n, std::mt19937 &rng) {
  const std::vector<float> f = randn(n, rng);
  std::vector<__half> h(f.size());
  for (size_t i = 0; i < f.size(); ++i)
    h[i] = __float2half(f[i]);
  return h;
}

std::vector<double> reference(const Case &c, const std::vector<float> &q, int64_t q_stride,
                              const std::vector<__half> &kc, const std::vector<__half> &vc,
                              const std::vector<float> &sinks, int64_t n_kv, float scale,
                              int64_t out_stride) {
  const int64_t kv_row = int64_t(c.n_kv_heads) * c.head_dim;
  const int32_t group = c.n_heads / c.n_kv_heads;
  std::vector<double> out(c.n_tokens * out_stride, 0.0);
  for (int64_t t = 0; t < c.n_tokens; ++t)
    for (int32_t h = 0; h < c.n_heads; ++h) {
      const int64_t p = c.pos0 + t;
      const int64_t hi = c.causal ? std::min(p + 1, n_kv) : n_kv;
      const int64_t lo = c.window ? std::max<int64_t>(0, p - c.window + 1) : 0;
      const int32_t kh = h / group;
      std::vector<double> s;
      double m = c.sinks ? sinks[h] : -1e300;
      for (int64_t j = lo; j < hi; ++j) {
        double d = 0;
        for (int32_t e = 0; e < c.head_dim; ++e)
          d += double(q[t * q_stride + h * c.head_dim + e]) *
               __half2float(kc[j * kv_row + kh * c.head_dim + e]);
        s.push_back(d * scale);
        m = std::max(m, s.back());
      }
      double den = c.sinks ? std::exp(sinks[h] - m) : 0.0;
      for (double &v : s)
        den += (v = std::exp(v - m));
      for (int32_t e = 0; e < c.head_dim; ++e) {
        double o = 0;
        for (int64_t j = lo; j < hi; ++j)
          o += s[j - lo] * __half2float(vc[j * kv_row + kh * c.head_dim + e]);
        out[t * out_stride + h * c.head_dim + e] = o / den;
      }
    }
  return out;
}

TEST(AttentionKernel, MatchesReference) {
  WO_REQUIRE_DEVICE();
  const uint32_t seed = fresh_seed();
  std::mt19937 rng(seed);
  const Case cases[] = {
      {"prefill gqa hd64", 17, 0, 4, 2, 64, 0, false, true, 0, 0},
      {"decode long ctx hd128", 1, 1500, 8, 2, 128, 0, false, true, 0, 0},
      {"chunked prefill hd96 phi3", 9, 40, 1, 1, 96, 0, false, true, 192, 0},
      {"sliding window + sinks", 33, 0, 4, 2, 64, 8, true, true, 0, 0},
      {"decode window + sinks", 1, 700, 4, 2, 64, 32, true, true, 0, 0},
      {"odd head dim 80", 5, 3, 2, 2, 80, 0, false, true, 0, 16},
      {"hd256 gqa 8:1", 3, 1000, 8, 1, 256, 0, false, true, 0, 0},
      {"non-causal", 6, 0, 2, 1, 32, 0, false, false, 0, 0},
      {"hd32 qwen2-like", 200, 0, 2, 1, 32, 0, false, true, 64, 0},
      {"decode wide window + sinks", 1, 2000, 4, 2, 64, 300, true, true, 0, 0},
      {"speculative 4 queries gqa", 4, 900, 14, 2, 64, 0, false, true, 0, 0},
      // Decode shapes of the spec models at depth ~2048, and past 64 splits' worth of keys.
      {"decode qwen2.5-0.5b 14:2 hd64", 1, 2047, 14, 2, 64, 0, false, true, 0, 0},
      {"decode phi-3 32:32 hd96", 1, 2000, 32, 32, 96, 0, false, true, 0, 0},
      {"decode gpt-oss 64:8 hd64 + sinks", 1, 2050, 64, 8, 64, 0, true, true, 0, 0},
      {"decode gpt-oss sliding 128 + sinks", 1, 2050, 64, 8, 64, 128, true, true, 0, 0},
      {"decode 5000 keys 4:2 (64 splits, 2 tiles each)", 1, 4999, 4, 2, 64, 0, false, true, 0, 0},
      {"decode group of 16 (general kernel)", 1, 700, 16, 1, 64, 0, false, true, 0, 0},
      {"decode head dim 36 (general kernel)", 2, 300, 2, 1, 36, 0, false, true, 0, 0},
      {"decode 3 queries hd80 window", 3, 1200, 6, 2, 80, 100, false, true, 0, 8},
  };
  for (const Case &c : cases) {
    const int64_t q_row = int64_t(c.n_heads) * c.head_dim, kv_row = int64_t(c.n_kv_heads) * c.head_dim;
    const int64_t q_stride = q_row + c.q_pad, out_stride = q_row + c.out_pad;
    const int64_t n_kv = c.pos0 + c.n_tokens;
    const float scale = 1.0f / std::sqrt(float(c.head_dim));
    auto q = randn(c.n_tokens * q_stride, rng);
    const auto kc = randn_half(n_kv * kv_row, rng), vc = randn_half(n_kv * kv_row, rng);
    auto sinks = randn(c.n_heads, rng);
    DeviceBuffer<float> dq(q), dsinks(sinks), dout(c.n_tokens * out_stride);
    DeviceBuffer<__half> dk(kc), dv(vc);
    std::vector<float> sentinel(c.n_tokens * out_stride, 123.0f); // padding must stay untouched
    dout.upload(sentinel);
    AttentionParams ap;
    ap.n_tokens = c.n_tokens;
    ap.pos0 = c.pos0;
    ap.n_kv = n_kv;
    ap.n_heads = c.n_heads;
    ap.n_kv_heads = c.n_kv_heads;
    ap.head_dim = c.head_dim;
    ap.scale = scale;
    ap.causal = c.causal;
    ap.window = c.window;
    ap.sinks = c.sinks ? dsinks.get() : nullptr;
    ap.q_stride = c.q_pad ? q_stride : 0;
    ap.out_stride = c.out_pad ? out_stride : 0;
    ASSERT_EQ(attention(dq.get(), dk.get(), dv.get(), dout.get(), ap, nullptr), cudaSuccess) << c.name;
    const auto single = dout.download();
    // The same call with a workspace: decode-shaped calls split their keys over several blocks.
    const int64_t ws_floats = attention_workspace_floats(c.n_tokens, c.n_heads, c.head_dim);
    DeviceBuffer<float> ws(ws_floats);
    ASSERT_EQ(cudaMemset(ws.get(), 0, ws_floats * sizeof(float)), cudaSuccess); // kernels.hpp: zeroed once
    ap.workspace = ws_floats ? ws.get() : nullptr;
    ap.workspace_floats = ws_floats;
    dout.upload(sentinel);
    ASSERT_EQ(attention(dq.get(), dk.get(), dv.get(), dout.get(), ap, nullptr), cudaSuccess) << c.name;
    const auto split = dout.download();
    // Graph mode: positions on the device, pos0 / n_kv only bounds (a capture for a longer context
    // replayed at this one): same result, every split past the real keys stays empty.
    std::vector<int32_t> pos(c.n_tokens);
    for (int64_t t = 0; t < c.n_tokens; ++t)
      pos[t] = static_cast<int32_t>(c.pos0 + t);
    DeviceBuffer<int32_t> dpos(pos);
    AttentionParams gp = ap;
    gp.positions = dpos.get();
    gp.pos0 = c.pos0 + 1500;
    gp.n_kv = n_kv + 1500;
    dout.upload(sentinel);
    ASSERT_EQ(attention(dq.get(), dk.get(), dv.get(), dout.get(), gp, nullptr), cudaSuccess) << c.name;
    const auto bounded = dout.download();
    auto ref = reference(c, q, q_stride, kc, vc, sinks, n_kv, scale, out_stride);
    for (int64_t t = 0; t < c.n_tokens; ++t)
      for (int64_t e = q_row; e < out_stride; ++e)
        ref[t * out_stride + e] = 123.0;
    // Tolerance: FP32 scores/softmax vs double over identical FP16 K/V: 5e-5 abs + 5e-4 rel.
    EXPECT_TRUE(close(single, ref, 5e-5, 5e-4)) << c.name << " seed " << seed;
    EXPECT_TRUE(close(split, ref, 5e-5, 5e-4)) << c.name << " (with workspace) seed " << seed;
    EXPECT_TRUE(close(bounded, ref, 5e-5, 5e-4))
        << c.name << " (device positions, bounds +1500) seed " << seed;
    // Bit for bit: the bound a decode graph was captured for must not change the result, or the
    // same greedy job parts at a near-tie between processes with different context sizes.
    EXPECT_EQ(bounded, split) << c.name << " (bounds +1500 vs exact) seed " << seed;
  }
}

// One workspace serves a model's every attention call for the worker's lifetime (cleared once):
// decode steps at rising and falling depths, and a few-query call between them, leave split states
// and counters (or epochs) behind that must never leak into a later call. Each call's bits must equal
// the same call's on a freshly zeroed workspace.
TEST(AttentionKernel, WorkspaceReusedAcrossCallsMatchesFreshWorkspace) {
  WO_REQUIRE_DEVICE();
  const uint32_t seed = fresh_seed();
  std::mt19937 rng(seed);
  struct Shape {
    const char *name;
    int32_t n_heads, n_kv_heads, head_dim;
    bool sinks;
  };
  const Shape shapes[] = {{"qwen2.5 14:2 hd64", 14, 2, 64, false},
                          {"gpt-oss 64:8 hd64 + sinks", 64, 8, 64, true},
                          {"phi-3 32:32 hd96", 32, 32, 96, false}};
  struct Step {
    int64_t n_tokens, pos0;
  };
  const Step steps[] = {{1, 2047}, {1, 90}, {1, 700}, {4, 1500}, {1, 2047}, {1, 3000}, {1, 2047}};
  constexpr int64_t kMaxKv = 3001, kMaxTokens = 4;
  for (const Shape &sh : shapes) {
    const int64_t q_row = int64_t(sh.n_heads) * sh.head_dim, kv_row = int64_t(sh.n_kv_heads) * sh.head_dim;
    const auto kc = randn_half(kMaxKv * kv_row, rng), vc = randn_half(kMaxKv * kv_row, rng);
    DeviceBuffer<__half> dk(kc), dv(vc);
    DeviceBuffer<float> dsinks(randn(sh.n_heads, rng)), dout(kMaxTokens * q_row);
    const int64_t ws_floats = attention_workspace_floats(kMaxTokens, sh.n_heads, sh.head_dim);
    DeviceBuffer<float> kept(ws_floats), fresh(ws_floats);
    ASSERT_EQ(attention_workspace_clear(kept.get(), ws_floats, nullptr), cudaSuccess);
    for (const Step &st : steps) {
      DeviceBuffer<float> dq(randn(st.n_tokens * q_row, rng));
      AttentionParams ap;
      ap.n_tokens = st.n_tokens;
      ap.pos0 = st.pos0;
      ap.n_kv = st.pos0 + st.n_tokens;
      ap.n_heads = sh.n_heads;
      ap.n_kv_heads = sh.n_kv_heads;
      ap.head_dim = sh.head_dim;
      ap.scale = 1.0f / std::sqrt(float(sh.head_dim));
      ap.causal = true;
      ap.sinks = sh.sinks ? dsinks.get() : nullptr;
      ap.workspace_floats = ws_floats;
      ap.workspace = kept.get();
      ASSERT_EQ(attention(dq.get(), dk.get(), dv.get(), dout.get(), ap, nullptr), cudaSuccess) << sh.name;
      auto reused = dout.download();
      ASSERT_EQ(attention_workspace_clear(fresh.get(), ws_floats, nullptr), cudaSuccess);
      ap.workspace = fresh.get();
      ASSERT_EQ(attention(dq.get(), dk.get(), dv.get(), dout.get(), ap, nullptr), cudaSuccess) << sh.name;
      auto clean = dout.download();
      reused.resize(st.n_tokens * q_row), clean.resize(st.n_tokens * q_row);
      EXPECT_EQ(reused, clean) << sh.name << " at " << st.n_tokens << " queries from position " << st.pos0
                               << " seed " << seed;
    }
  }
}

// The tagged split states' epochs wrap after 2^32 - 1 calls of a (query, head) row: the tag after
// 0xffffffff is 1, never 0, which every word of a zeroed workspace carries. Epochs started at
// 0xffffffff (the counter words all ones, the states zero) must give the fresh workspace's bits,
// on the wrapping call and the ones after it; a tag of 0 would merge the zeroed states at once.
TEST(AttentionKernel, SplitEpochsWrapPastZero) {
  WO_REQUIRE_DEVICE();
  const uint32_t seed = fresh_seed();
  std::mt19937 rng(seed);
  const int32_t n_heads = 14, n_kv_heads = 2, head_dim = 64; // Qwen2.5's decode shape
  const int64_t kv_row = int64_t(n_kv_heads) * head_dim, q_row = int64_t(n_heads) * head_dim;
  constexpr int64_t kMaxKv = 2049;
  const auto kc = randn_half(kMaxKv * kv_row, rng), vc = randn_half(kMaxKv * kv_row, rng);
  DeviceBuffer<__half> dk(kc), dv(vc);
  DeviceBuffer<float> dout(q_row);
  const int64_t ws_floats = attention_workspace_floats(1, n_heads, head_dim);
  const int64_t words = attention_workspace_counter_words(n_heads);
  ASSERT_GT(words, 0);
  ASSERT_LT(words, ws_floats);
  DeviceBuffer<float> wrapped(ws_floats), fresh(ws_floats);
  ASSERT_EQ(attention_workspace_clear(wrapped.get(), ws_floats, nullptr), cudaSuccess);
  ASSERT_EQ(cudaMemset(wrapped.get(), 0xff, words * sizeof(uint32_t)), cudaSuccess);
  for (const int64_t pos0 : {2047, 2047, 1000, 2047}) {
    DeviceBuffer<float> dq(randn(q_row, rng));
    AttentionParams ap;
    ap.n_tokens = 1;
    ap.pos0 = pos0;
    ap.n_kv = pos0 + 1;
    ap.n_heads = n_heads;
    ap.n_kv_heads = n_kv_heads;
    ap.head_dim = head_dim;
    ap.scale = 0.125f;
    ap.causal = true;
    ap.workspace_floats = ws_floats;
    ap.workspace = wrapped.get();
    ASSERT_EQ(attention(dq.get(), dk.get(), dv.get(), dout.get(), ap, nullptr), cudaSuccess);
    const auto got = dout.download();
    ASSERT_EQ(attention_workspace_clear(fresh.get(), ws_floats, nullptr), cudaSuccess);
    ap.workspace = fresh.get();
    ASSERT_EQ(attention(dq.get(), dk.get(), dv.get(), dout.get(), ap, nullptr), cudaSuccess);
    EXPECT_EQ(got, dout.download()) << "from position " << pos0 << ", seed " << seed;
  }
}

} // namespace
} // namespace wo::kernels::test
