// The llama plugin without a GPU: architecture tables, hyperparameters, plan sizes, descriptor,
// and the error messages users see for malformed models.
#include "hparams.hpp"
#include "plugin_loader.hpp"
#include "test_model.hpp"
#include "weights.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

using ::testing::HasSubstr;

namespace wo::llama::test {
namespace {

TEST(LlamaPlugin, DescriptorNegotiatesMajorVersion) {
  void *lib = dlopen(llama_plugin_path().c_str(), RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(lib, nullptr) << dlerror();
  auto entry = *reinterpret_cast<wo_plugin_entry_fn *>(dlsym(lib, WORKER_PLUGIN_ENTRY_NAME));
  const wo_plugin *d = entry(WORKER_SDK_ABI_MAJOR, WORKER_SDK_ABI_MINOR);
  ASSERT_NE(d, nullptr);
  EXPECT_STREQ(d->name, "llama");
  EXPECT_EQ(d->kind, WO_PLUGIN_ARCHITECTURE);
  EXPECT_EQ(entry(WORKER_SDK_ABI_MAJOR + 1, 0), nullptr); // another major: refused
  const auto *v = static_cast<const wo_arch_v1 *>(d->vtable);
  EXPECT_EQ(v->struct_size, sizeof(wo_arch_v1));
  for (auto fn :
       {(void *)v->probe, (void *)v->plan, (void *)v->create, (void *)v->destroy, (void *)v->session_begin,
        (void *)v->session_end, (void *)v->forward, (void *)v->last_error})
    EXPECT_NE(fn, nullptr);
  dlclose(lib);
}

TEST(LlamaPlugin, ProbeServesLlamaQwen2Phi3Only) {
  const wo_arch_v1 *v = load_llama_vtable();
  ASSERT_NE(v, nullptr);
  for (const Spec &s : {Spec::llama(), Spec::qwen2(), Spec::phi3()}) {
    TestModel m(s);
    TestHost h(m);
    EXPECT_GT(v->probe(h.host()), 0) << s.arch;
    m.set_str("general.architecture", "gpt2");
    EXPECT_EQ(v->probe(h.host()), 0) << "gpt2 must not be claimed";
    m.meta.erase("general.architecture");
    EXPECT_EQ(v->probe(h.host()), 0) << "no architecture key";
  }
}

TEST(LlamaPlugin, PlanReportsSizesFromMetadata) {
  const wo_arch_v1 *v = load_llama_vtable();
  ASSERT_NE(v, nullptr);
  for (const Spec &s : {Spec::llama(), Spec::qwen2(), Spec::phi3()}) {
    TestModel m(s);
    TestHost h(m);
    wo_arch_config cfg{sizeof(wo_arch_config), 512, 64, 0};
    wo_arch_plan p{};
    p.struct_size = sizeof p;
    ASSERT_EQ(v->plan(h.host(), &cfg, &p), WO_OK) << s.arch << ": " << v->last_error(nullptr);
    EXPECT_EQ(p.n_vocab, s.n_vocab);
    EXPECT_EQ(p.n_embd, s.n_embd);
    EXPECT_EQ(p.n_layer, s.n_layer);
    EXPECT_EQ(p.n_ctx_train, 2048);
    EXPECT_EQ(p.kv_bytes_per_token, uint64_t(2 * s.n_layer * s.n_head_kv * s.head_dim * 2)) << s.arch;
    // Scratch holds at least the residual stream, q/k/v and the FFN for n_batch tokens.
    const uint64_t floor = 64ull * 4 * (s.n_embd + s.n_head * s.head_dim + 2 * s.n_ff);
    EXPECT_GE(p.scratch_bytes, floor) << s.arch;
    wo_arch_plan p2{};
    p2.struct_size = sizeof p2;
    cfg.n_batch = 512;
    ASSERT_EQ(v->plan(h.host(), &cfg, &p2), WO_OK);
    EXPECT_GT(p2.scratch_bytes, p.scratch_bytes) << "scratch grows with n_batch";
  }
}

TEST(LlamaHParams, ArchitectureTablesDriveTheLayout) {
  {
    TestModel m(Spec::llama());
    TestHost h(m);
    const HParams hp = read_hparams(HostView(h.host()));
    EXPECT_EQ(hp.rope.mode, Rope::Norm);
    EXPECT_EQ(hp.head_dim, 16);
    EXPECT_EQ(hp.rope.n_dims, 16);
    const Weights w = bind_weights(HostView(h.host()), hp, false);
    EXPECT_FALSE(w.tied_output);
    EXPECT_STREQ(w.output->name, "output.weight");
    EXPECT_EQ(w.layers.size(), 2u);
    EXPECT_EQ(w.layers[1].q_bias, nullptr);
  }
  {
    TestModel m(Spec::qwen2());
    TestHost h(m);
    const HParams hp = read_hparams(HostView(h.host()));
    EXPECT_EQ(hp.rope.mode, Rope::Neox);
    EXPECT_FLOAT_EQ(hp.rope.freq_base, 1e6f);
    EXPECT_FLOAT_EQ(hp.rms_eps, 1e-6f);
    const Weights w = bind_weights(HostView(h.host()), hp, false);
    EXPECT_TRUE(w.tied_output); // no output.weight: LM head = token_embd
    EXPECT_EQ(w.output, w.token_embd);
    EXPECT_NE(w.layers[0].k_bias, nullptr);
  }
  {
    TestModel m(Spec::phi3());
    TestHost h(m);
    const HParams hp = read_hparams(HostView(h.host()));
    EXPECT_EQ(hp.rope.mode, Rope::Neox);
    EXPECT_EQ(hp.rope.n_dims, 32);
    EXPECT_EQ(hp.head_dim, 48); // from attention.key_length
    EXPECT_EQ(hp.sliding_window, 0) << "phi3's sliding_window metadata is ignored, as llama.cpp does";
    const Weights w = bind_weights(HostView(h.host()), hp, false);
    EXPECT_NE(w.layers[0].qkv, nullptr);
    EXPECT_EQ(w.layers[0].gate, nullptr); // fused into ffn_up
  }
}

TEST(LlamaHParams, RopeScalingFromMetadata) {
  Spec s = Spec::llama();
  s.rope_scaling = "linear";
  s.rope_factor = 4.0f;
  TestModel m(s);
  TestHost h(m);
  HParams hp = read_hparams(HostView(h.host()));
  EXPECT_FLOAT_EQ(hp.rope.freq_scale, 0.25f);
  EXPECT_EQ(hp.rope.ext_factor, 0.0f);
  m.set_str("llama.rope.scaling.type", "yarn");
  m.set_u32("llama.rope.scaling.original_context_length", 1024);
  hp = read_hparams(HostView(h.host()));
  EXPECT_EQ(hp.rope.ext_factor, 1.0f);
  EXPECT_EQ(hp.rope.n_ctx_orig, 1024);
  m.set_str("llama.rope.scaling.type", "longrope");
  try {
    read_hparams(HostView(h.host()));
    FAIL() << "unknown scaling type accepted";
  } catch (const Error &e) {
    EXPECT_EQ(e.status(), WO_ERR_UNSUPPORTED);
    EXPECT_THAT(e.what(), HasSubstr("llama.rope.scaling.type"));
    EXPECT_THAT(e.what(), HasSubstr("longrope"));
  }
}

// plan() fails with `status` and a message containing every string of `parts`.
void expect_plan_error(TestModel &m, wo_status status, std::initializer_list<const char *> parts) {
  const wo_arch_v1 *v = load_llama_vtable();
  ASSERT_NE(v, nullptr);
  TestHost h(m);
  wo_arch_plan p{};
  p.struct_size = sizeof p;
  EXPECT_EQ(v->plan(h.host(), nullptr, &p), status);
  const std::string msg = v->last_error(nullptr);
  for (const char *part : parts)
    EXPECT_THAT(msg, HasSubstr(part));
}

TEST(LlamaPlugin, MalformedModelsFailWithNamedCause) {
  {
    TestModel m(Spec::llama());
    m.tensors.erase("blk.1.ffn_down.weight");
    expect_plan_error(m, WO_ERR_NOT_FOUND, {"blk.1.ffn_down.weight", "required"});
  }
  {
    TestModel m(Spec::llama());
    m.tensors.erase("blk.0.attn_k.weight");
    m.add("blk.0.attn_k.weight", {64, 48}, 0.1f);
    expect_plan_error(m, WO_ERR_FORMAT, {"blk.0.attn_k.weight", "expected shape [64, 32]", "found [64, 48]"});
  }
  {
    TestModel m(Spec::qwen2());
    m.tensors.erase("blk.1.attn_v.bias");
    expect_plan_error(m, WO_ERR_NOT_FOUND, {"blk.1.attn_v.bias"});
  }
  {
    TestModel m(Spec::llama());
    m.tensors.at("blk.0.ffn_norm.weight")->t.ggml_type = 1; // F16 norm: kernels read F32 only
    expect_plan_error(m, WO_ERR_UNSUPPORTED, {"blk.0.ffn_norm.weight", "F32", "found type 1"});
  }
  {
    TestModel m(Spec::llama());
    m.set_u32("llama.attention.head_count_kv", 3);
    expect_plan_error(m, WO_ERR_FORMAT, {"llama.attention.head_count_kv", "divisor", "found 3"});
  }
  {
    TestModel m(Spec::llama());
    m.add("rope_freqs.weight", {8}, 0.1f, 1.0f); // Llama 3.1 frequency factors: refused, not ignored
    expect_plan_error(m, WO_ERR_UNSUPPORTED, {"rope_freqs.weight", "not supported"});
  }
  {
    TestModel m(Spec::llama());
    m.meta.erase("llama.block_count");
    expect_plan_error(m, WO_ERR_NOT_FOUND, {"llama.block_count"});
  }
  {
    TestModel m(Spec::llama());
    m.set_str("llama.embedding_length", "wide");
    expect_plan_error(m, WO_ERR_TYPE_MISMATCH, {"llama.embedding_length", "integer", "string"});
  }
}

TEST(LlamaPlugin, CreateWithoutDeviceIsRefusedCleanly) {
  const wo_arch_v1 *v = load_llama_vtable();
  ASSERT_NE(v, nullptr);
  TestModel m(Spec::llama());
  TestHost h(m); // no device services, no device copies of weights
  wo_arch_config cfg{sizeof(wo_arch_config), 128, 32, 0};
  wo_arch_instance *inst = reinterpret_cast<wo_arch_instance *>(&cfg); // must be reset to NULL
  EXPECT_EQ(v->create(h.host(), &cfg, &inst), WO_ERR_NO_DEVICE);
  EXPECT_EQ(inst, nullptr);
  EXPECT_THAT(std::string(v->last_error(nullptr)), HasSubstr("device"));
}

} // namespace
} // namespace wo::llama::test
