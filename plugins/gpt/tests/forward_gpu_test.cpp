// The plugin's GPU forward pass on small random F32 models against a double-precision CPU
// reference of the same weights (reference_forward.hpp): prefill logits at every position,
// prefill split into n_batch chunks, token-by-token decode on the KV cache (host and device
// token ids), and, for gpt-oss, the expert routing the plugin traces.
//
// Tolerance: relative L2 of the logits <= 2e-3 per position. The reference rounds K and V to
// FP16 like the plugin's cache, so what remains is F32 vs double arithmetic (~1e-6) and the rare
// FP16 rounding decision that the two sides take differently; a wrong layout, position, window,
// sink, clamp or routing weight is off by > 5e-2. (Without the FP16 emulation the H100 run of
// 2026-11-22 measured up to 6.7e-3, i.e. the cache's own precision.)
#include "device_host.hpp"
#include "gpt_plugin_loader.hpp"
#include "reference_forward.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

namespace wo::gpt {
namespace {

using namespace testing;

constexpr double kRelL2 = 2e-3;

double rel_l2(const std::vector<float> &got, const std::vector<float> &want) {
  double num = 0, den = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    num += (double(got[i]) - want[i]) * (double(got[i]) - want[i]);
    den += double(want[i]) * want[i];
  }
  return std::sqrt(num / den);
}

class GptForwardGpu : public ::testing::Test {
protected:
  void SetUp() override {
    if (!cuda_device_present()) GTEST_SKIP() << "no CUDA device";
  }

  struct Run {
    GptPlugin plugin;
    DeviceHost host;
    wo_arch_instance *inst = nullptr;
    float *logits = nullptr;
    int32_t *dev_tokens = nullptr;
    int64_t n_vocab;
    Run(const SynthModel &m, int64_t n_batch, int64_t n_ctx) : host(m), n_vocab(m.n_vocab) {
      wo_arch_config c{};
      c.struct_size = sizeof(c);
      c.n_ctx = n_ctx;
      c.n_batch = n_batch;
      EXPECT_EQ(plugin.vt().create(host.host(), &c, &inst), WO_OK) << plugin.vt().last_error(nullptr);
      EXPECT_EQ(plugin.vt().session_begin(inst, n_ctx), WO_OK) << plugin.vt().last_error(inst);
      cudaMalloc(&logits, static_cast<size_t>(n_ctx * n_vocab) * sizeof(float));
      cudaMalloc(&dev_tokens, static_cast<size_t>(n_ctx) * sizeof(int32_t));
    }
    ~Run() {
      if (inst) plugin.vt().destroy(inst);
      cudaFree(logits);
      cudaFree(dev_tokens);
    }
    // Returns n_out rows of logits.
    std::vector<std::vector<float>> forward(const std::vector<int32_t> &toks, int64_t pos, uint32_t flags) {
      const int32_t *src = toks.data();
      if (flags & WO_FWD_TOKENS_ON_DEVICE) {
        cudaMemcpy(dev_tokens, toks.data(), toks.size() * sizeof(int32_t), cudaMemcpyHostToDevice);
        src = dev_tokens;
      }
      const wo_status s =
          plugin.vt().forward(inst, src, static_cast<int64_t>(toks.size()), pos, logits, flags);
      EXPECT_EQ(s, WO_OK) << plugin.vt().last_error(inst);
      EXPECT_EQ(cudaStreamSynchronize(host.stream()), cudaSuccess);
      const size_t n_out = (flags & WO_FWD_LOGITS_ALL) ? toks.size() : 1;
      std::vector<float> flat(n_out * static_cast<size_t>(n_vocab));
      cudaMemcpy(flat.data(), logits, flat.size() * sizeof(float), cudaMemcpyDeviceToHost);
      std::vector<std::vector<float>> rows;
      for (size_t r = 0; r < n_out; ++r)
        rows.emplace_back(flat.begin() + static_cast<long>(r * n_vocab),
                          flat.begin() + static_cast<long>((r + 1) * n_vocab));
      return rows;
    }
  };

  // Prefill all tokens in chunks of n_batch and compare every position.
  void check_prefill(const SynthModel &m, const std::vector<int32_t> &toks, int64_t n_batch) {
    const ReferenceRun ref = ReferenceForward(m).run(toks);
    Run run(m, n_batch, 64);
    const auto got = run.forward(toks, 0, WO_FWD_LOGITS_ALL);
    ASSERT_EQ(got.size(), toks.size());
    for (size_t p = 0; p < toks.size(); ++p)
      EXPECT_LE(rel_l2(got[p], ref.logits[p]), kRelL2) << "position " << p << " n_batch " << n_batch;
  }

  // Prefill `split` tokens (last logits only), then decode the rest one at a time.
  void check_decode(const SynthModel &m, const std::vector<int32_t> &toks, size_t split, bool on_device,
                    int64_t n_ctx = 64) {
    const ReferenceRun ref = ReferenceForward(m).run(toks);
    Run run(m, 512, n_ctx);
    const uint32_t dev = on_device ? WO_FWD_TOKENS_ON_DEVICE : 0u;
    auto got =
        run.forward(std::vector<int32_t>(toks.begin(), toks.begin() + static_cast<long>(split)), 0, dev);
    ASSERT_EQ(got.size(), 1u);
    EXPECT_LE(rel_l2(got[0], ref.logits[split - 1]), kRelL2) << "prefill last position " << split - 1;
    for (size_t p = split; p < toks.size(); ++p) {
      got = run.forward({toks[p]}, static_cast<int64_t>(p), dev);
      EXPECT_LE(rel_l2(got[0], ref.logits[p]), kRelL2) << "decode position " << p;
    }
  }
};

TEST_F(GptForwardGpu, Gpt2PrefillMatchesReference) {
  SynthBuilder b(7001);
  const SynthModel m = b.gpt2();
  check_prefill(m, b.tokens(m, 19), 512);
}

TEST_F(GptForwardGpu, Gpt2ChunkedPrefillMatchesReference) {
  SynthBuilder b(7002);
  const SynthModel m = b.gpt2();
  check_prefill(m, b.tokens(m, 19), 4);
}

TEST_F(GptForwardGpu, Gpt2DecodeOnTheKvCacheMatchesReference) {
  SynthBuilder b(7003);
  const SynthModel m = b.gpt2();
  const auto toks = b.tokens(m, 16);
  check_decode(m, toks, 6, false);
  check_decode(m, toks, 9, true);
}

TEST_F(GptForwardGpu, GptOssPrefillMatchesReference) {
  SynthBuilder b(7011);
  const SynthModel m = b.gptoss();
  check_prefill(m, b.tokens(m, 21), 512); // longer than the window (5)
}

TEST_F(GptForwardGpu, GptOssChunkedPrefillMatchesReference) {
  SynthBuilder b(7012);
  const SynthModel m = b.gptoss();
  check_prefill(m, b.tokens(m, 21), 3); // the window straddles chunks
}

TEST_F(GptForwardGpu, GptOssDecodeOnTheKvCacheMatchesReference) {
  SynthBuilder b(7013);
  const SynthModel m = b.gptoss();
  const auto toks = b.tokens(m, 18);
  check_decode(m, toks, 4, false);
  check_decode(m, toks, 11, true);
}

// Decode after a long prompt: the attention kernel splits the keys over several blocks
// (flash-decoding workspace in the session scratch) and merges them with the sinks.
TEST_F(GptForwardGpu, GptOssDecodeAfterALongPromptMatchesReference) {
  SynthBuilder b(7022); // its router gaps are all > 9e-3: no near-tie can flip an expert
  const SynthModel m = b.gptoss();
  check_decode(m, b.tokens(m, 140), 136, true, 160); // 137+ keys: 3 splits on full-attention layers
}

TEST_F(GptForwardGpu, GptOssTracesTheReferenceRouting) {
  SynthBuilder b(7014);
  const SynthModel m = b.gptoss();
  const auto toks = b.tokens(m, 12);
  const ReferenceRun ref = ReferenceForward(m).run(toks);
  Run run(m, 512, 64);
  run.host.enable_trace();
  run.forward(std::vector<int32_t>(toks.begin(), toks.begin() + 8), 0, 0); // prefill 8
  for (size_t p = 8; p < toks.size(); ++p)
    run.forward({toks[p]}, static_cast<int64_t>(p), 0);
  const size_t K = static_cast<size_t>(m.n_expert_used);
  // routing.L*: the experts chosen (biased router logits); routing_prebias.L*: top-k before the bias.
  for (const bool prebias : {false, true}) {
    const auto &want = prebias ? ref.experts_prebias : ref.experts;
    const auto &gaps = prebias ? ref.router_gap_prebias : ref.router_gap;
    int compared = 0;
    for (int64_t il = 0; il < m.n_layer; ++il) {
      const std::string name = (prebias ? "routing_prebias.L" : "routing.L") + std::to_string(il);
      const auto &calls = run.host.traces[name];
      ASSERT_EQ(calls.size(), 1u + (toks.size() - 8)) << "one trace per forward call: " << name;
      std::vector<int32_t> ids;
      for (const auto &c : calls)
        ids.insert(ids.end(), c.begin(), c.end());
      ASSERT_EQ(ids.size(), toks.size() * K) << name;
      for (size_t t = 0; t < toks.size(); ++t) {
        if (gaps[size_t(il)][t] < 1e-3) continue; // a near-tie may legitimately flip
        ++compared;
        for (size_t k = 0; k < K; ++k)
          EXPECT_EQ(ids[t * K + k], want[size_t(il)][t][k]) << name << " token " << t << " slot " << k;
      }
    }
    EXPECT_GE(compared, int(toks.size() * m.n_layer) - 3);
  }
  // The bias matters in this model: the two selections differ somewhere (else the test above
  // could not tell them apart).
  EXPECT_NE(ref.experts, ref.experts_prebias);
}

TEST_F(GptForwardGpu, SessionMemoryIsReturned) {
  SynthBuilder b(7021);
  const SynthModel m = b.gptoss();
  DeviceHost host(m);
  GptPlugin plugin;
  wo_arch_config c{};
  c.struct_size = sizeof(c);
  c.n_ctx = 32;
  c.n_batch = 8;
  wo_arch_instance *inst = nullptr;
  ASSERT_EQ(plugin.vt().create(host.host(), &c, &inst), WO_OK) << plugin.vt().last_error(nullptr);
  ASSERT_EQ(plugin.vt().session_begin(inst, 32), WO_OK);
  EXPECT_EQ(host.device_allocations(), 2u);
  plugin.vt().destroy(inst); // without session_end
  EXPECT_EQ(host.device_allocations(), 0u);
}

} // namespace
} // namespace wo::gpt
