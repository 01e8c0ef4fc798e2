// The linear_id fallback (for codecs without linear_id) on a random 3-D Q8_0 expert weight: it
// must compute y[t][k] = W[ids[t][k]] · x[t][slot] like a double-precision CPU reference on the
// exactly dequantized weights, and agree with quant-ggml's own linear_id.
#include "gpu_test_env.hpp"
#include "rel_l2.hpp"

#include "engine/engine.hpp"
#include "engine/linear_id_fallback.hpp"
#include "plugins/registry.hpp"

#include <worker/ggml_types.hpp>
#include <worker/sdk.hpp>

#include <gtest/gtest.h>

#include <cmath>
#include <random>

namespace wo::testing {
namespace {

// The codec's GEMV may round activations to FP16 (about 5e-4 relative per element): bound on the
// relative L2 error of all outputs.
constexpr double kTolerance = 2e-3;

TEST(LinearIdFallback, MatchesCpuReferenceAndTheCodecsOwnLinearId) {
  WO_SKIP_WITHOUT_GPU();
  const std::string model = models_dir() + "/llama-tiny-Q8_0.gguf";
  if (!file_exists(model)) GTEST_SKIP() << "model absent: " << model;
  wo::plugins::Registry reg;
  reg.scan(plugin_dir());
  const wo_plugin *qp = reg.find("quant-ggml");
  if (!qp) GTEST_SKIP() << "quant-ggml not found in " << plugin_dir();
  const wo_quant_v1 *q = wo::plugins::Registry::quant(qp);

  // A loaded engine provides a real wo_host (stream, cuBLAS, scratch) for the codec calls.
  wo::engine::Engine e;
  wo::engine::EngineOptions o;
  o.model = model;
  o.plugin_dir = plugin_dir();
  o.n_ctx = 16;
  e.load(o);

  std::random_device rd;
  std::mt19937_64 rng((uint64_t{rd()} << 32) | rd());
  std::normal_distribution<float> normal(0.f, 1.f);
  const int64_t cols = 256, rows = 48, n_expert = 5, n_tokens = 3, n_slots = 2;
  const uint64_t row_bytes = cols / 32 * 34;
  std::vector<float> wf(static_cast<size_t>(cols * rows * n_expert));
  for (auto &v : wf)
    v = normal(rng);
  std::vector<uint8_t> wq(row_bytes * rows * n_expert);
  ASSERT_EQ(q->quantize_rows(wo::ggml::Q8_0, wf.data(), rows * n_expert, cols, wq.data()), WO_OK);
  std::vector<float> wd(wf.size());
  ASSERT_EQ(q->dequantize_rows(wo::ggml::Q8_0, wq.data(), rows * n_expert, cols, wd.data()), WO_OK);

  void *d_w = nullptr, *d_x = nullptr, *d_y = nullptr, *d_ids = nullptr;
  ASSERT_EQ(cudaMalloc(&d_w, wq.size()), cudaSuccess);
  ASSERT_EQ(cudaMemcpy(d_w, wq.data(), wq.size(), cudaMemcpyHostToDevice), cudaSuccess);
  wo_tensor w{};
  w.struct_size = sizeof(w);
  w.ggml_type = wo::ggml::Q8_0;
  w.name = "test.ffn_up_exps.weight";
  w.n_dims = 3;
  w.ne[0] = cols;
  w.ne[1] = rows;
  w.ne[2] = n_expert;
  w.ne[3] = 1;
  w.nbytes = wq.size();
  w.nb1 = row_bytes;
  w.data = d_w;
  w.host_data = wq.data();

  std::vector<int32_t> ids(static_cast<size_t>(n_tokens * n_slots));
  for (auto &id : ids)
    id = static_cast<int32_t>(rng() % n_expert);
  ASSERT_EQ(cudaMalloc(&d_ids, ids.size() * 4), cudaSuccess);
  ASSERT_EQ(cudaMemcpy(d_ids, ids.data(), ids.size() * 4, cudaMemcpyHostToDevice), cudaSuccess);
  const size_t y_count = static_cast<size_t>(n_tokens * n_slots * rows);
  ASSERT_EQ(cudaMalloc(&d_y, y_count * 4), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&d_x, static_cast<size_t>(n_tokens * n_slots * cols) * 4), cudaSuccess);

  for (int64_t x_slots : {int64_t{1}, n_slots}) {
    SCOPED_TRACE("x_slots " + std::to_string(x_slots));
    std::vector<float> x(static_cast<size_t>(n_tokens * x_slots * cols));
    for (auto &v : x)
      v = normal(rng);
    ASSERT_EQ(cudaMemcpy(d_x, x.data(), x.size() * 4, cudaMemcpyHostToDevice), cudaSuccess);

    std::vector<double> ref(y_count);
    for (int64_t t = 0; t < n_tokens; ++t)
      for (int64_t k = 0; k < n_slots; ++k) {
        const int64_t ex = ids[static_cast<size_t>(t * n_slots + k)];
        const float *xr = &x[static_cast<size_t>((t * x_slots + (x_slots == 1 ? 0 : k)) * cols)];
        for (int64_t r = 0; r < rows; ++r) {
          double acc = 0;
          const float *wr = &wd[static_cast<size_t>((ex * rows + r) * cols)];
          for (int64_t c = 0; c < cols; ++c)
            acc += static_cast<double>(wr[c]) * xr[c];
          ref[static_cast<size_t>((t * n_slots + k) * rows + r)] = acc;
        }
      }

    ASSERT_EQ(cudaMemset(d_y, 0xFF, y_count * 4), cudaSuccess); // NaN pattern: every output must be written
    ASSERT_EQ(wo::engine::linear_id_by_rows(e.host(), q, e.stream(), &w, d_x, WO_DTYPE_F32, x_slots, d_y,
                                            WO_DTYPE_F32, n_tokens, static_cast<const int32_t *>(d_ids),
                                            n_slots),
              WO_OK);
    std::vector<float> y_fb(y_count);
    ASSERT_EQ(cudaStreamSynchronize(e.stream()), cudaSuccess);
    ASSERT_EQ(cudaMemcpy(y_fb.data(), d_y, y_count * 4, cudaMemcpyDeviceToHost), cudaSuccess);
    EXPECT_LE(rel_l2(y_fb, ref), kTolerance);

    if (q->linear_id) {
      ASSERT_EQ(cudaMemset(d_y, 0xFF, y_count * 4), cudaSuccess);
      ASSERT_EQ(q->linear_id(e.host(), &w, d_x, WO_DTYPE_F32, x_slots, d_y, WO_DTYPE_F32, n_tokens,
                             static_cast<const int32_t *>(d_ids), n_slots),
                WO_OK);
      std::vector<float> y_codec(y_count);
      ASSERT_EQ(cudaStreamSynchronize(e.stream()), cudaSuccess);
      ASSERT_EQ(cudaMemcpy(y_codec.data(), d_y, y_count * 4, cudaMemcpyDeviceToHost), cudaSuccess);
      EXPECT_LE(rel_l2(y_codec, ref), kTolerance) << "quant-ggml's own linear_id";
    }
  }

  // An expert id out of range is an error naming the tensor, token and slot.
  std::vector<int32_t> bad = ids;
  bad[3] = static_cast<int32_t>(n_expert);
  ASSERT_EQ(cudaMemcpy(d_ids, bad.data(), bad.size() * 4, cudaMemcpyHostToDevice), cudaSuccess);
  try {
    wo::engine::linear_id_by_rows(e.host(), q, e.stream(), &w, d_x, WO_DTYPE_F32, 1, d_y, WO_DTYPE_F32,
                                  n_tokens, static_cast<const int32_t *>(d_ids), n_slots);
    FAIL() << "expert id " << n_expert << " accepted";
  } catch (const wo::Error &err) {
    const std::string m = err.what();
    EXPECT_NE(m.find("test.ffn_up_exps.weight"), std::string::npos) << m;
    EXPECT_NE(m.find("token 1 slot 1"), std::string::npos) << m;
  }
  cudaFree(d_w);
  cudaFree(d_x);
  cudaFree(d_y);
  cudaFree(d_ids);
}

} // namespace
} // namespace wo::testing
