// Decode through CUDA graphs (issue 11): the engine captures the architecture's decode_step once
// per context bucket and replays it, the position read from device memory. What users rely on:
// the replayed step computes what launching every kernel computes, at every position (across
// bucket boundaries), in every session (whose captures update the last session's executable
// graphs), for every architecture the fixtures cover; and the
// switch (EngineOptions.cuda_graphs = false / WORKER_CUDA_GRAPHS=0) really turns graphs off.
#include "gpu_test_env.hpp"
#include "rel_l2.hpp"

#include "engine/engine.hpp"

#include <worker/sdk.hpp>

#include <gtest/gtest.h>

#include <cuda_runtime_api.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>

namespace wo::testing {
namespace {

// Same kernels in both runs; only the attention's key split differs (the graph's grid is sized
// for the bucket, the launched one for the exact length), which reorders FP32 sums (~1e-6). Each
// run keeps its own FP16 KV cache, where such a difference now and then rounds an element to the
// neighbouring half (2^-11 relative), so the runs drift apart slowly: measured on H100 up to
// 1.6e-4 after 300 tokens. A wrong position, KV row or stale capture gives errors of order 1.
// Bound on the relative L2 of the logits:
constexpr double kGraphTolerance = 1e-3;

struct DeviceInt {
  int32_t *p = nullptr;
  DeviceInt() { EXPECT_EQ(cudaMalloc(reinterpret_cast<void **>(&p), sizeof(int32_t)), cudaSuccess); }
  ~DeviceInt() { cudaFree(p); }
  void set(int32_t v) { ASSERT_EQ(cudaMemcpy(p, &v, sizeof v, cudaMemcpyHostToDevice), cudaSuccess); }
};

class DecodeGraph : public ::testing::TestWithParam<std::string> {
protected:
  void SetUp() override {
    WO_SKIP_WITHOUT_GPU();
    path_ = models_dir() + "/" + GetParam() + ".gguf";
    if (!file_exists(path_)) GTEST_SKIP() << "model absent: " << path_ << " (set WORKER_MODELS_DIR)";
  }
  wo::engine::EngineOptions options(bool graphs) const {
    wo::engine::EngineOptions o;
    o.model = path_;
    o.plugin_dir = plugin_dir();
    o.n_ctx = 640;
    o.cuda_graphs = graphs;
    return o;
  }
  std::string path_;
};

TEST_P(DecodeGraph, ReplayMatchesLaunchedKernelsAcrossBucketsAndSessions) {
  wo::engine::Engine plain, graphed;
  plain.load(options(false));
  graphed.load(options(true));
  const int64_t nv = plain.vocab_size();
  std::mt19937 rng(std::random_device{}());
  // A random prompt of 230 tokens, then greedy decode to position 530 (gpt2's learned positions
  // stop at 512): crosses the 256 (and 512) bucket bounds, so every capture replays at positions
  // other than the one it was made at.
  const int64_t end = std::min<int64_t>(530, plain.info().context_length);
  const size_t buckets = end > 512 ? 3 : 2; // bounds 256, 512, then the session's 600
  std::vector<int32_t> prompt(230);
  for (auto &t : prompt)
    t = static_cast<int32_t>(3 + rng() % static_cast<uint32_t>(nv - 3));
  DeviceInt id_plain, id_graph;
  // A new session: a new KV cache, so every bucket is captured again; the second session's captures
  // update the first's executables in place, the third's (another n_ctx: its last bucket's grids
  // differ) update or replace them. Every replay must still compute the launched kernels' logits.
  const int64_t session_ctx[3] = {600, 600, 560};
  for (int session = 0; session < 3; ++session) {
    const int64_t ctx = session_ctx[session];
    plain.begin_session(ctx);
    graphed.begin_session(ctx);
    plain.forward(prompt.data(), static_cast<int64_t>(prompt.size()), 0, false);
    graphed.forward(prompt.data(), static_cast<int64_t>(prompt.size()), 0, false);
    int32_t next = argmax(plain.logits_host());
    double worst = 0;
    int64_t worst_pos = -1;
    for (int64_t pos = static_cast<int64_t>(prompt.size()); pos < end; ++pos) {
      id_plain.set(next);
      id_graph.set(next);
      plain.forward(id_plain.p, 1, pos, false, true);
      graphed.forward(id_graph.p, 1, pos, false, true);
      const auto a = plain.logits_host(), b = graphed.logits_host();
      const double err = rel_l2(b, a);
      if (err > worst) worst = err, worst_pos = pos;
      ASSERT_LE(err, kGraphTolerance) << GetParam() << " session " << session << " pos " << pos;
      next = argmax(a); // both follow the launched path's tokens
    }
    EXPECT_EQ(plain.decode_graphs(), 0u) << "cuda_graphs = false must launch kernels one by one";
    EXPECT_EQ(graphed.decode_graphs(), buckets) << "one capture per bucket (256, 512, n_ctx)";
    if (session == 1) {
      EXPECT_EQ(graphed.decode_graph_updates(), buckets)
          << "a session of the same n_ctx updates the last one's executables instead of instantiating";
    }
    std::printf("[ graph    ] %s session %d (n_ctx %lld): worst rel-L2 %.2e at pos %lld over positions "
                "230..%lld, %zu executables updated so far\n",
                GetParam().c_str(), session, static_cast<long long>(ctx), worst,
                static_cast<long long>(worst_pos), static_cast<long long>(end - 1),
                graphed.decode_graph_updates());
    plain.end_session();
    graphed.end_session();
    EXPECT_EQ(graphed.decode_graphs(), 0u) << "captures hold the session's addresses: none replays after it";
  }
}

// The llama plugin's L2 side branch (WORKER_L2_SIDE, read when the model loads): a second stream
// forked after each layer's q/k/v pass and joined before the LM head, whose kernel only asks L2 for
// weights. With it forced on and off, the replayed graphs must give the same bits at every
// position (the same kernels on the same grids), and the branched step must still capture once per
// bucket. (Architectures without the branch run the same check trivially.)
TEST_P(DecodeGraph, L2SideBranchChangesNoBits) {
  const char *saved = std::getenv("WORKER_L2_SIDE");
  const std::string saved_value = saved ? saved : "";
  wo::engine::Engine without, with;
  ::setenv("WORKER_L2_SIDE", "0", 1);
  without.load(options(true));
  ::setenv("WORKER_L2_SIDE", "1", 1);
  with.load(options(true));
  if (saved)
    ::setenv("WORKER_L2_SIDE", saved_value.c_str(), 1);
  else
    ::unsetenv("WORKER_L2_SIDE");
  const int64_t nv = without.vocab_size();
  std::mt19937 rng(std::random_device{}());
  std::vector<int32_t> prompt(40);
  for (auto &t : prompt)
    t = static_cast<int32_t>(3 + rng() % static_cast<uint32_t>(nv - 3));
  DeviceInt id_without, id_with;
  without.begin_session(600);
  with.begin_session(600);
  without.forward(prompt.data(), static_cast<int64_t>(prompt.size()), 0, false);
  with.forward(prompt.data(), static_cast<int64_t>(prompt.size()), 0, false);
  int32_t next = argmax(without.logits_host());
  // Positions 40..299: both the 256 and the 512 bucket's captures replay.
  for (int64_t pos = static_cast<int64_t>(prompt.size()); pos < 300; ++pos) {
    id_without.set(next);
    id_with.set(next);
    without.forward(id_without.p, 1, pos, false, true);
    with.forward(id_with.p, 1, pos, false, true);
    const auto a = without.logits_host(), b = with.logits_host();
    ASSERT_EQ(a.size(), b.size());
    ASSERT_EQ(std::memcmp(a.data(), b.data(), a.size() * sizeof(float)), 0)
        << GetParam() << ": the side branch changed the logits at pos " << pos;
    next = argmax(a);
  }
  EXPECT_EQ(with.decode_graphs(), 2u) << "one capture per bucket (256, 512) with the branch";
  EXPECT_EQ(without.decode_graphs(), 2u);
  without.end_session();
  with.end_session();
}

INSTANTIATE_TEST_SUITE_P(Fixtures, DecodeGraph,
                         ::testing::Values("llama-tiny-Q8_0", "phi3-tiny-Q4_K_M", "qwen2-tiny-Q4_K_M",
                                           "gpt2-tiny-Q8_0", "gpt-oss-tiny-MXFP4_MOE"),
                         FixtureName());

} // namespace
} // namespace wo::testing
