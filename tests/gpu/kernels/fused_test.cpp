// Fused kernels vs CPU references: add + RMSNorm, and bias + RoPE + FP16 KV-cache write; the
// decode step's bias + RoPE + cache write + attention in one launch vs the two kernels.
#include "device_buffer.hpp"
#include "rope_ref.hpp"

#include <worker/kernels.hpp>
#include <worker/staged_x.cuh>

#include <cstring>
#include <string>

namespace wo::kernels::test {
namespace {

TEST(FusedKernels, AddRmsNormUpdatesResidualAndNorms) {
  WO_REQUIRE_DEVICE();
  const uint32_t seed = fresh_seed();
  std::mt19937 rng(seed);
  for (int64_t cols : {64, 896, 3072, 1001, 6144}) { // the last two: the looping kernel
    const int64_t rows = 5;
    auto x = randn(rows * cols, rng), d = randn(rows * cols, rng), w = randn(cols, rng, 0.2f, 1.0f);
    DeviceBuffer<float> dx(x), dd(d), dw(w), dy(rows * cols);
    ASSERT_EQ(add_rms_norm(dx.get(), dd.get(), dw.get(), dy.get(), rows, cols, 1e-6f, nullptr), cudaSuccess);
    std::vector<double> rx(rows * cols), ry(rows * cols);
    for (int64_t r = 0; r < rows; ++r) {
      double ss = 0;
      for (int64_t c = 0; c < cols; ++c) {
        rx[r * cols + c] = double(x[r * cols + c]) + d[r * cols + c];
        ss += rx[r * cols + c] * rx[r * cols + c];
      }
      const double inv = 1 / std::sqrt(ss / cols + 1e-6);
      for (int64_t c = 0; c < cols; ++c)
        ry[r * cols + c] = rx[r * cols + c] * inv * w[c];
    }
    // Tolerance: FP32 sums vs double: 1e-5 abs + 1e-4 rel.
    EXPECT_TRUE(close(dx.download(), rx, 1e-6, 1e-6)) << "residual, cols " << cols << " seed " << seed;
    EXPECT_TRUE(close(dy.download(), ry, 1e-5, 1e-4)) << "norm, cols " << cols << " seed " << seed;
  }
}

struct Case {
  const char *name;
  int32_t n_heads, n_kv_heads, head_dim, rope_dims;
  RopeMode mode;
  bool fused_rows, biases, yarn;
};

TEST(FusedKernels, RopeKvWriteMatchesBiasRopeAndCacheWrite) {
  WO_REQUIRE_DEVICE();
  const uint32_t seed = fresh_seed();
  std::mt19937 rng(seed);
  const Case cases[] = {
      {"llama norm", 4, 2, 64, 0, RopeMode::Norm, false, false, false},
      {"qwen2 neox + biases", 14, 2, 64, 0, RopeMode::Neox, false, true, false},
      {"phi3 fused rows partial rot", 2, 2, 96, 32, RopeMode::Neox, true, false, false},
      {"gpt-oss yarn + biases", 8, 4, 64, 0, RopeMode::Neox, false, true, true},
  };
  for (const Case &c : cases) {
    // Positions need not be consecutive: the cache row of token t is positions[t] too.
    const int64_t T = 7, pos0 = 5, n_ctx = pos0 + 101 * (T - 1) + 1, HD = c.head_dim;
    const int64_t QD = c.n_heads * HD, KVD = c.n_kv_heads * HD;
    const int64_t q_stride = c.fused_rows ? QD + 2 * KVD : QD, kv_stride = c.fused_rows ? QD + 2 * KVD : KVD;
    // Buffers: fused rows hold [q;k;v] per token; otherwise three contiguous blocks.
    auto buf = randn(c.fused_rows ? T * q_stride : T * (QD + 2 * KVD), rng);
    auto qb = randn(QD, rng, 0.3f), kb = randn(KVD, rng, 0.3f), vb = randn(KVD, rng, 0.3f);
    std::vector<int32_t> pos(T);
    for (int64_t t = 0; t < T; ++t)
      pos[t] = static_cast<int32_t>(pos0 + t + 100 * t); // any positions
    RopeParams p;
    p.mode = c.mode;
    p.n_dims = c.rope_dims;
    p.freq_base = 10000.0f;
    if (c.yarn) p.freq_base = 150000.0f, p.freq_scale = 1.0f / 32, p.ext_factor = 1.0f, p.n_ctx_orig = 4096;
    DeviceBuffer<float> dbuf(buf), dqb(qb), dkb(kb), dvb(vb);
    DeviceBuffer<int32_t> dpos(pos);
    std::vector<__half> fill(n_ctx * KVD, __float2half(9.0f));
    DeviceBuffer<__half> kc(fill), vc(fill);
    QkvRopeCache a;
    a.q = dbuf.get();
    a.k = c.fused_rows ? dbuf.get() + QD : dbuf.get() + T * QD;
    a.v = c.fused_rows ? dbuf.get() + QD + KVD : dbuf.get() + T * (QD + KVD);
    a.q_stride = c.fused_rows ? q_stride : 0;
    a.kv_stride = c.fused_rows ? kv_stride : 0;
    if (c.biases) a.q_bias = dqb.get(), a.k_bias = dkb.get(), a.v_bias = dvb.get();
    a.k_cache = kc.get(), a.v_cache = vc.get();
    a.positions = dpos.get();
    a.n_heads = c.n_heads, a.n_kv_heads = c.n_kv_heads, a.head_dim = c.head_dim;
    ASSERT_EQ(rope_kv_write(a, T, p, nullptr), cudaSuccess) << c.name;

    // Reference: the same buffer with q rotated in place; the caches from k (rotated) and v.
    std::vector<double> ref_buf(buf.begin(), buf.end());
    std::vector<double> ref_k(n_ctx * KVD, 9.0), ref_v(n_ctx * KVD, 9.0);
    const int64_t q_off = 0, k_off = c.fused_rows ? QD : T * QD,
                  v_off = c.fused_rows ? QD + KVD : T * (QD + KVD);
    for (int64_t t = 0; t < T; ++t) {
      double *q = &ref_buf[q_off + t * q_stride];
      for (int64_t e = 0; e < QD; ++e)
        q[e] += c.biases ? qb[e] : 0.0;
      for (int32_t h = 0; h < c.n_heads; ++h)
        rope_ref(q + h * HD, pos[t], p, c.head_dim);
      std::vector<double> k(KVD), v(KVD);
      for (int64_t e = 0; e < KVD; ++e) {
        k[e] = buf[k_off + t * kv_stride + e] + (c.biases ? kb[e] : 0.0);
        v[e] = buf[v_off + t * kv_stride + e] + (c.biases ? vb[e] : 0.0);
      }
      for (int32_t h = 0; h < c.n_kv_heads; ++h)
        rope_ref(&k[h * HD], pos[t], p, c.head_dim);
      for (int64_t e = 0; e < KVD; ++e)
        ref_k[pos[t] * KVD + e] = k[e], ref_v[pos[t] * KVD + e] = v[e];
    }
    // Tolerances: q as the rope test (FP32 theta, positions < 1000): 2e-3 abs; the caches are FP16
    // (rel. rounding 2^-11) on top: 2e-3 abs + 1e-3 rel.
    EXPECT_TRUE(close(dbuf.download(), ref_buf, 2e-3, 1e-4)) << c.name << " q (k/v untouched) seed " << seed;
    auto to_float = [](const std::vector<__half> &h) {
      std::vector<float> f(h.size());
      for (size_t i = 0; i < h.size(); ++i)
        f[i] = __half2float(h[i]);
      return f;
    };
    EXPECT_TRUE(close(to_float(kc.download()), ref_k, 2e-3, 1e-3)) << c.name << " K cache seed " << seed;
    EXPECT_TRUE(close(to_float(vc.download()), ref_v, 2e-3, 1e-3)) << c.name << " V cache seed " << seed;
  }
}

// One decode step: rope_kv_attention (one launch where the decode kernel serves it), with positions
// read after and before the PDL wait (positions_settled), against rope_kv_write then attention,
// from the same cache and fresh q/k/v: the same output and cache bits. Each also stages its output
// (AttentionParams::staged_out, SDK 1.9): the bytes the host's staging gives the output row, from
// the kernel's one-split and merge paths (positions 0, 5 and 700, 2047), or from stage_row where a
// staged group would span two heads (head_dim 40).
TEST(FusedKernels, RopeKvAttentionEqualsRopeKvWriteThenAttention) {
  WO_REQUIRE_DEVICE();
  const uint32_t seed = fresh_seed();
  std::mt19937 rng(seed);
  struct Step {
    const char *name;
    int32_t n_heads, n_kv_heads, head_dim, rope_dims;
    RopeMode mode;
    bool fused_rows, biases, yarn, sinks;
    int64_t window;
  };
  const Step steps[] = {
      {"qwen2.5 14:2 neox + biases", 14, 2, 64, 0, RopeMode::Neox, true, true, false, false, 0},
      {"phi-3 32:32 hd96 partial rotation", 32, 32, 96, 32, RopeMode::Neox, true, false, false, false, 0},
      {"gpt-oss 64:8 yarn + biases + sinks", 64, 8, 64, 0, RopeMode::Neox, false, true, true, true, 0},
      {"gpt-oss sliding 128", 64, 8, 64, 0, RopeMode::Neox, false, true, true, true, 128},
      {"llama 32:8 hd128 norm", 32, 8, 128, 0, RopeMode::Norm, false, false, false, false, 0},
      {"8:2 hd40 (staged after)", 8, 2, 40, 0, RopeMode::Neox, false, false, false, false, 0},
  };
  for (const Step &c : steps)
    for (const int32_t pos : {0, 5, 700, 2047}) {
      const std::string what = std::string(c.name) + " at position " + std::to_string(pos);
      const int64_t HD = c.head_dim, QD = c.n_heads * HD, KVD = c.n_kv_heads * HD, n_ctx = 2048;
      const int64_t row = c.fused_rows ? QD + 2 * KVD : 0;
      auto buf = randn(QD + 2 * KVD, rng);
      auto qb = randn(QD, rng, 0.3f), kb = randn(KVD, rng, 0.3f), vb = randn(KVD, rng, 0.3f);
      auto sinks = randn(c.n_heads, rng);
      std::vector<__half> cache(n_ctx * KVD);
      for (auto &h : cache)
        h = __float2half(std::normal_distribution<float>(0.0f, 1.0f)(rng));
      RopeParams rp;
      rp.mode = c.mode;
      rp.n_dims = c.rope_dims;
      if (c.yarn)
        rp.freq_base = 150000.0f, rp.freq_scale = 1.0f / 32, rp.ext_factor = 1.0f, rp.n_ctx_orig = 4096;
      DeviceBuffer<int32_t> dpos(std::vector<int32_t>{pos});
      DeviceBuffer<float> dqb(qb), dkb(kb), dvb(vb), dsinks(sinks);
      const int64_t ws_floats = attention_workspace_floats(1, c.n_heads, c.head_dim);
      std::vector<float> outs[3];
      std::vector<__half> k_after[3], v_after[3];
      std::vector<uint8_t> staged[3];
      for (int fused = 0; fused < 3; ++fused) { // separate, fused, fused with settled positions
        DeviceBuffer<float> dbuf(buf), out(QD), ws(ws_floats);
        DeviceBuffer<uint8_t> st(static_cast<size_t>(wo::staged::row_bytes(QD)));
        DeviceBuffer<__half> kc(cache), vc(cache);
        ASSERT_EQ(cudaMemset(ws.get(), 0, ws_floats * sizeof(float)), cudaSuccess);
        QkvRopeCache a;
        a.q = dbuf.get(), a.k = dbuf.get() + QD, a.v = dbuf.get() + QD + KVD;
        a.q_stride = row, a.kv_stride = row;
        if (c.biases) a.q_bias = dqb.get(), a.k_bias = dkb.get(), a.v_bias = dvb.get();
        a.k_cache = kc.get(), a.v_cache = vc.get();
        a.positions = dpos.get();
        a.positions_settled = fused == 2;
        a.n_heads = c.n_heads, a.n_kv_heads = c.n_kv_heads, a.head_dim = c.head_dim;
        AttentionParams ap;
        ap.n_tokens = 1, ap.pos0 = n_ctx - 1, ap.n_kv = n_ctx; // bounds, as a captured decode step has them
        ap.n_heads = c.n_heads, ap.n_kv_heads = c.n_kv_heads, ap.head_dim = c.head_dim;
        ap.scale = 1.0f / std::sqrt(float(c.head_dim));
        ap.window = c.window;
        ap.sinks = c.sinks ? dsinks.get() : nullptr;
        ap.q_stride = row;
        ap.workspace = ws.get(), ap.workspace_floats = ws_floats;
        ap.positions = dpos.get();
        ap.staged_out = st.get();
        if (fused) {
          ASSERT_EQ(rope_kv_attention(a, rp, out.get(), ap, nullptr), cudaSuccess) << what;
        } else {
          ASSERT_EQ(rope_kv_write(a, 1, rp, nullptr), cudaSuccess) << what;
          ASSERT_EQ(attention(a.q, a.k_cache, a.v_cache, out.get(), ap, nullptr), cudaSuccess) << what;
        }
        outs[fused] = out.download();
        k_after[fused] = kc.download();
        v_after[fused] = vc.download();
        staged[fused] = st.download();
      }
      const auto bits = [](const std::vector<__half> &h) {
        std::vector<uint16_t> b(h.size());
        std::memcpy(b.data(), h.data(), h.size() * sizeof(__half));
        return b;
      };
      for (int f = 1; f < 3; ++f) {
        const std::string how = f == 2 ? " (settled positions)" : "";
        EXPECT_EQ(outs[f], outs[0]) << what << how << " output, seed " << seed;
        EXPECT_EQ(bits(k_after[f]), bits(k_after[0])) << what << how << " K cache, seed " << seed;
        EXPECT_EQ(bits(v_after[f]), bits(v_after[0])) << what << how << " V cache, seed " << seed;
      }
      for (int f = 0; f < 3; ++f) {
        std::vector<uint8_t> want(static_cast<size_t>(wo::staged::row_bytes(QD)));
        wo::staged::stage_row_host(outs[f].data(), QD, want.data());
        EXPECT_EQ(staged[f], want) << what << (f ? " fused" : " separate") << ": staged output, seed "
                                   << seed;
      }
    }
}

} // namespace
} // namespace wo::kernels::test
