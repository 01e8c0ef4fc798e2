// The gpt plugin through its C boundary, loaded from the built gpt.so: descriptor and ABI
// handshake, probe, plan, create, sessions (VRAM accounting, out-of-memory cleanup) and the
// forward argument checks that run before any device work.
#include "gpt_plugin_loader.hpp"
#include "reference_host.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace wo::gpt {
namespace {

using testing::GptPlugin;
using testing::ReferenceHost;

const char *kGpt2 = "gpt2-tiny-Q8_0";
const char *kGptOss = "gpt-oss-tiny-MXFP4_MOE";

wo_arch_config config(int64_t n_ctx, int64_t n_batch) {
  wo_arch_config c{};
  c.struct_size = sizeof(c);
  c.n_ctx = n_ctx;
  c.n_batch = n_batch;
  return c;
}

wo_arch_plan plan_of(const GptPlugin &p, const ReferenceHost &rh, int64_t n_batch) {
  wo_arch_plan out{};
  out.struct_size = sizeof(out);
  const wo_arch_config c = config(512, n_batch);
  EXPECT_EQ(p.vt().plan(rh.host(), &c, &out), WO_OK);
  return out;
}

struct Created {
  const GptPlugin &p;
  wo_arch_instance *inst = nullptr;
  ~Created() {
    if (inst) p.vt().destroy(inst);
  }
};

TEST(GptPluginAbi, DescriptorAndHandshake) {
  GptPlugin p;
  EXPECT_EQ(p.desc().kind, WO_PLUGIN_ARCHITECTURE);
  EXPECT_STREQ(p.desc().name, "gpt");
  EXPECT_EQ(p.desc().abi_major, WORKER_SDK_ABI_MAJOR);
  EXPECT_GE(p.vt().struct_size, sizeof(wo_arch_v1));
  EXPECT_EQ(p.entry()(WORKER_SDK_ABI_MAJOR + 1, 0), nullptr) << "a host of another major ABI must be refused";
}

TEST(GptPluginAbi, ProbeClaimsOnlyItsArchitectures) {
  GptPlugin p;
  ReferenceHost gpt2(kGpt2), oss(kGptOss);
  EXPECT_GT(p.vt().probe(gpt2.host()), 0);
  EXPECT_GT(p.vt().probe(oss.host()), 0);
  oss.set_string("general.architecture", "gptoss");
  EXPECT_GT(p.vt().probe(oss.host()), 0);
  oss.set_string("general.architecture", "llama");
  EXPECT_EQ(p.vt().probe(oss.host()), 0);
  oss.erase_meta("general.architecture");
  EXPECT_EQ(p.vt().probe(oss.host()), 0);
}

TEST(GptPluginAbi, PlanSizesFromMetadata) {
  GptPlugin p;
  ReferenceHost gpt2(kGpt2), oss(kGptOss);
  const wo_arch_plan a = plan_of(p, gpt2, 64);
  EXPECT_EQ(a.n_vocab, 50257);
  EXPECT_EQ(a.n_embd, 64);
  EXPECT_EQ(a.n_layer, 2);
  EXPECT_EQ(a.n_ctx_train, 512);
  EXPECT_EQ(a.kv_bytes_per_token, 2u * 2u * 64u * 2u); // layers * (K,V) * kv_dim * fp16
  const wo_arch_plan b = plan_of(p, oss, 64);
  EXPECT_EQ(b.n_vocab, 201088);
  EXPECT_EQ(b.kv_bytes_per_token, 3u * 2u * 128u * 2u);
  // Scratch holds at least the residual stream and the expert activations of n_batch tokens.
  EXPECT_GE(b.scratch_bytes, 64u * (32u + 4u * (64u + 64u + 32u)) * 4u);
  EXPECT_GT(plan_of(p, oss, 128).scratch_bytes, b.scratch_bytes);
}

TEST(GptPluginAbi, PlanWritesOnlyWhatAnOlderCallerKnows) {
  GptPlugin p;
  ReferenceHost gpt2(kGpt2);
  struct {
    wo_arch_plan plan;
    uint64_t canary;
  } out{};
  out.plan.struct_size = offsetof(wo_arch_plan, kv_bytes_per_token); // knows no KV/scratch fields
  out.plan.kv_bytes_per_token = 777;
  out.plan.scratch_bytes = 888;
  const wo_arch_config c = config(512, 64);
  ASSERT_EQ(p.vt().plan(gpt2.host(), &c, &out.plan), WO_OK);
  EXPECT_EQ(out.plan.n_layer, 2);
  EXPECT_EQ(out.plan.kv_bytes_per_token, 777u);
  EXPECT_EQ(out.plan.scratch_bytes, 888u);
}

TEST(GptPluginAbi, CreateFailureNamesTheTensor) {
  GptPlugin p;
  ReferenceHost oss(kGptOss);
  oss.erase_tensor("blk.2.attn_sinks.weight");
  const wo_arch_config c = config(256, 32);
  wo_arch_instance *inst = reinterpret_cast<wo_arch_instance *>(0x1);
  EXPECT_EQ(p.vt().create(oss.host(), &c, &inst), WO_ERR_NOT_FOUND);
  EXPECT_EQ(inst, nullptr);
  const std::string msg = p.vt().last_error(nullptr);
  EXPECT_NE(msg.find("blk.2.attn_sinks.weight"), std::string::npos) << msg;
}

TEST(GptPluginAbi, SessionAllocatesPlannedBytesAndFreesThem) {
  GptPlugin p;
  for (const char *model : {kGpt2, kGptOss}) {
    ReferenceHost rh(model);
    const wo_arch_config c = config(256, 32);
    const wo_arch_plan plan = plan_of(p, rh, 32);
    Created made{p};
    ASSERT_EQ(p.vt().create(rh.host(), &c, &made.inst), WO_OK) << p.vt().last_error(nullptr);
    EXPECT_EQ(rh.live_allocations(), 0u) << "create must not allocate the KV cache";
    ASSERT_EQ(p.vt().session_begin(made.inst, 256), WO_OK) << p.vt().last_error(made.inst);
    EXPECT_EQ(rh.bytes_of_kind(WO_VRAM_KV_CACHE), plan.kv_bytes_per_token * 256u) << model;
    EXPECT_EQ(rh.bytes_of_kind(WO_VRAM_SCRATCH), plan.scratch_bytes) << model;
    // A second session replaces the first instead of leaking it.
    ASSERT_EQ(p.vt().session_begin(made.inst, 100), WO_OK);
    EXPECT_EQ(rh.live_allocations(), 2u);
    EXPECT_EQ(rh.bytes_of_kind(WO_VRAM_KV_CACHE), plan.kv_bytes_per_token * 100u);
    p.vt().session_end(made.inst);
    EXPECT_EQ(rh.live_allocations(), 0u);
    p.vt().session_end(made.inst); // idempotent
    EXPECT_EQ(rh.bad_frees(), 0);
  }
}

TEST(GptPluginAbi, OutOfMemoryReleasesPartialAllocations) {
  GptPlugin p;
  ReferenceHost rh(kGptOss);
  const wo_arch_config c = config(256, 32);
  Created made{p};
  ASSERT_EQ(p.vt().create(rh.host(), &c, &made.inst), WO_OK);
  for (int fail_at : {0, 1}) { // the KV cache, then the scratch
    rh.fail_alloc_at(fail_at);
    EXPECT_EQ(p.vt().session_begin(made.inst, 4096), WO_ERR_OUT_OF_MEMORY);
    const std::string msg = p.vt().last_error(made.inst);
    EXPECT_NE(msg.find(fail_at == 0 ? "KV cache" : "scratch"), std::string::npos) << msg;
    EXPECT_EQ(rh.live_allocations(), 0u) << "partial allocations must be released";
    // The instance stays usable: no session now, and a later session succeeds.
    const int32_t tok = 1;
    float *logits = reinterpret_cast<float *>(0x10);
    EXPECT_EQ(p.vt().forward(made.inst, &tok, 1, 0, logits, 0), WO_ERR_INVALID_ARGUMENT);
    ASSERT_EQ(p.vt().session_begin(made.inst, 64), WO_OK);
    p.vt().session_end(made.inst);
  }
  EXPECT_EQ(rh.bad_frees(), 0);
}

TEST(GptPluginAbi, ForwardRefusesPositionsPastTheSessionAndTheLearnedTable) {
  GptPlugin p;
  ReferenceHost rh(kGpt2);
  const wo_arch_config c = config(1024, 32);
  Created made{p};
  ASSERT_EQ(p.vt().create(rh.host(), &c, &made.inst), WO_OK);
  std::vector<int32_t> toks(8, 50256);
  float *logits = reinterpret_cast<float *>(0x10); // never touched: the checks run first
  EXPECT_EQ(p.vt().forward(made.inst, toks.data(), 8, 0, logits, 0), WO_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(p.vt().last_error(made.inst)).find("session"), std::string::npos);

  ASSERT_EQ(p.vt().session_begin(made.inst, 16), WO_OK);
  EXPECT_EQ(p.vt().forward(made.inst, toks.data(), 8, 10, logits, 0), WO_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(p.vt().last_error(made.inst)).find("n_ctx 16"), std::string::npos)
      << p.vt().last_error(made.inst);
  EXPECT_EQ(p.vt().forward(made.inst, toks.data(), 0, 0, logits, 0), WO_ERR_INVALID_ARGUMENT);

  // Host token ids are checked against the vocabulary before anything is enqueued.
  std::vector<int32_t> bad = {1, 2, 50257};
  EXPECT_EQ(p.vt().forward(made.inst, bad.data(), 3, 0, logits, 0), WO_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(p.vt().last_error(made.inst)).find("token id 50257 at index 2"), std::string::npos)
      << p.vt().last_error(made.inst);

  // gpt2 knows positions 0..511 only, whatever the session size.
  ASSERT_EQ(p.vt().session_begin(made.inst, 1024), WO_OK);
  EXPECT_EQ(p.vt().forward(made.inst, toks.data(), 8, 508, logits, 0), WO_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(p.vt().last_error(made.inst)).find("position_embd"), std::string::npos)
      << p.vt().last_error(made.inst);
}

TEST(GptPluginAbi, GptossSpellingPlansLikeGptOss) {
  GptPlugin p;
  ReferenceHost oss(kGptOss), alias(kGptOss);
  alias.rename_prefix("gpt-oss", "gptoss");
  alias.set_string("general.architecture", "gptoss");
  const wo_arch_plan a = plan_of(p, oss, 16), b = plan_of(p, alias, 16);
  EXPECT_EQ(a.kv_bytes_per_token, b.kv_bytes_per_token);
  EXPECT_EQ(a.scratch_bytes, b.scratch_bytes);
  EXPECT_EQ(a.n_vocab, b.n_vocab);
}

#ifndef WORKER_WITH_CUDA
// A CPU-only build loads, validates and plans, but says plainly that it cannot compute.
TEST(GptPluginAbi, CpuOnlyBuildRefusesToComputeWithNoDevice) {
  GptPlugin p;
  ReferenceHost rh(kGpt2);
  const wo_arch_config c = config(64, 16);
  Created made{p};
  ASSERT_EQ(p.vt().create(rh.host(), &c, &made.inst), WO_OK);
  ASSERT_EQ(p.vt().session_begin(made.inst, 64), WO_OK);
  const int32_t tok = 50256;
  std::vector<float> logits(50257);
  EXPECT_EQ(p.vt().forward(made.inst, &tok, 1, 0, logits.data(), 0), WO_ERR_NO_DEVICE);
  EXPECT_NE(std::string(p.vt().last_error(made.inst)).find("WORKER_WITH_CUDA"), std::string::npos);
}
#endif

} // namespace
} // namespace wo::gpt
