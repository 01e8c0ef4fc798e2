// The SDK testing kit itself: FakeHost serves metadata through the C ABI with the host's rules,
// MockHost forwards to gmock, LoadedPlugin loads a built .so, and the conformance checks pass on a
// good plugin and FAIL on broken ones (a check that cannot fail would prove nothing).
#include <worker/sdk.hpp>
#include <worker/testing/conformance.hpp>
#include <worker/testing/fake_host.hpp>
#include <worker/testing/mock_host.hpp>
#include <worker/testing/plugin_loader.hpp>

#include <gmock/gmock.h>
#include <gtest/gtest-spi.h>
#include <gtest/gtest.h>

#include <functional>
#include <random>

using ::testing::_;
using ::testing::HasSubstr;

namespace {

std::string tp(const std::string &c, const std::string &file) {
  return std::string(WORKER_TEST_PLUGIN_ROOT) + "/" + c + "/" + file + ".so";
}

// Run f with GoogleTest failures captured instead of reported; return the failure messages.
std::vector<std::string> failures_of(const std::function<void()> &f) {
  ::testing::TestPartResultArray results;
  {
    ::testing::ScopedFakeTestPartResultReporter reporter(
        ::testing::ScopedFakeTestPartResultReporter::INTERCEPT_ONLY_CURRENT_THREAD, &results);
    f();
  }
  std::vector<std::string> out;
  for (int i = 0; i < results.size(); ++i)
    if (results.GetTestPartResult(i).failed()) out.push_back(results.GetTestPartResult(i).message());
  return out;
}

bool any_contains(const std::vector<std::string> &msgs, const std::string &part) {
  for (const auto &m : msgs)
    if (m.find(part) != std::string::npos) return true;
  return false;
}

std::string joined(const std::vector<std::string> &msgs) {
  std::string s;
  for (const auto &m : msgs) s += m + "\n---\n";
  return s;
}

} // namespace

// ---- FakeHost ----------------------------------------------------------------------------------

TEST(FakeHost, ServesTypedMetadataThroughTheCAbi) {
  std::mt19937 rng(std::random_device{}());
  const uint32_t u = rng();
  const int32_t neg = -static_cast<int32_t>(rng() % 100000) - 1;
  const float f = std::uniform_real_distribution<float>(-1e3f, 1e3f)(rng);
  std::vector<float> scores(17);
  for (auto &s : scores) s = std::uniform_real_distribution<float>(-10.f, 10.f)(rng);
  std::vector<int32_t> types(9);
  for (auto &t : types) t = static_cast<int32_t>(rng() % 7) - 3;

  wo::testing::FakeHost fake;
  fake.set_u32("llama.block_count", u);
  fake.set_i32("test.negative", neg);
  fake.set_f32("llama.rope.freq_base", f);
  fake.set_bool("tokenizer.ggml.add_bos_token", true);
  fake.set_str("general.architecture", "llama");
  fake.set_str_array("tokenizer.ggml.tokens", {"a", "", "\xe2\x82\xac"});
  fake.set_num_array("tokenizer.ggml.scores", scores);
  fake.set_num_array("tokenizer.ggml.token_type", types);

  wo::HostView h(fake.host()); // the plugin-side view: every call goes through the function pointers
  EXPECT_EQ(h.get_int("llama.block_count"), static_cast<int64_t>(u));
  EXPECT_EQ(h.get_int("test.negative"), neg);
  EXPECT_FLOAT_EQ(static_cast<float>(h.get_float("llama.rope.freq_base")), f);
  EXPECT_TRUE(h.get_bool("tokenizer.ggml.add_bos_token"));
  EXPECT_EQ(h.get_str("general.architecture"), "llama");
  EXPECT_EQ(h.arch_key("context_length"), "llama.context_length");
  EXPECT_EQ(h.get_str_array("tokenizer.ggml.tokens"), (std::vector<std::string>{"a", "", "\xe2\x82\xac"}));
  EXPECT_EQ(h.get_num_array<float>("tokenizer.ggml.scores"), scores);
  EXPECT_EQ(h.get_num_array<int32_t>("tokenizer.ggml.token_type"), types);
  EXPECT_FALSE(h.has("absent.key"));
  EXPECT_THROW(h.get_str("llama.block_count"), wo::Error); // type mismatch names the key
  try {
    h.get_str("llama.block_count");
  } catch (const wo::Error &e) {
    EXPECT_EQ(e.status(), WO_ERR_TYPE_MISMATCH);
    EXPECT_THAT(e.what(), HasSubstr("'llama.block_count': expected string, found u32"));
  }
  EXPECT_EQ(fake.queried_keys().front(), "llama.block_count");
}

TEST(FakeHost, WidensIntegersAndWritesOnlyTheFieldsTheCallerKnows) {
  wo::testing::FakeHost fake;
  fake.set_i64("k", -42);
  wo_value v = wo::empty_value();
  ASSERT_EQ(fake.host()->meta_get(fake.host()->ctx, "k", &v), WO_OK);
  EXPECT_EQ(v.type, WO_VALUE_I64);
  EXPECT_EQ(v.i64, -42);
  EXPECT_EQ(v.is_negative, 1);

  // An older caller that knows only struct_size, type and i64: nothing past them is written.
  wo_value old;
  std::memset(&old, 0xab, sizeof old);
  old.struct_size = static_cast<uint32_t>(offsetof(wo_value, u64));
  ASSERT_EQ(fake.host()->meta_get(fake.host()->ctx, "k", &old), WO_OK);
  EXPECT_EQ(old.i64, -42);
  EXPECT_EQ(old.struct_size, offsetof(wo_value, u64));
  const auto *tail = reinterpret_cast<const unsigned char *>(&old) + offsetof(wo_value, u64);
  for (size_t i = 0; i < sizeof(wo_value) - offsetof(wo_value, u64); ++i) ASSERT_EQ(tail[i], 0xab) << "byte " << i;

  EXPECT_EQ(fake.host()->meta_get(fake.host()->ctx, "absent", &v), WO_ERR_NOT_FOUND);
  wo_str s{};
  EXPECT_EQ(fake.host()->meta_array_str(fake.host()->ctx, "k", 0, &s), WO_ERR_TYPE_MISMATCH);
}

TEST(FakeHost, ServesTensorsAndRoutesLinearToTheCodecOfTheWeightsType) {
  wo::testing::FakeHost fake;
  std::vector<uint8_t> bytes(2 * 34);
  std::mt19937 rng(3);
  for (auto &b : bytes) b = static_cast<uint8_t>(rng());
  const wo_tensor *t = fake.add_tensor("blk.0.attn_q.weight", 8, {32, 2}, bytes);
  const wo_tensor *got = fake.host()->tensor(fake.host()->ctx, "blk.0.attn_q.weight");
  ASSERT_EQ(got, t);
  EXPECT_EQ(got->ne[0], 32);
  EXPECT_EQ(got->ne[1], 2);
  EXPECT_EQ(got->nb1, 34u);
  EXPECT_EQ(std::memcmp(got->host_data, bytes.data(), bytes.size()), 0);
  EXPECT_EQ(fake.host()->tensor(fake.host()->ctx, "absent"), nullptr);

  // Unrouted: the host has no codec for the type, and no device.
  EXPECT_EQ(fake.host()->linear(fake.host()->ctx, t, nullptr, WO_DTYPE_F32, nullptr, WO_DTYPE_F32, 1),
            WO_ERR_UNSUPPORTED);
  void *p = nullptr;
  EXPECT_EQ(fake.host()->vram_alloc(fake.host()->ctx, 64, WO_VRAM_SCRATCH, &p), WO_ERR_NO_DEVICE);

  // Routed: linear reaches the codec's linear with the same arguments and the host pointer.
  static const wo_tensor *seen_w = nullptr;
  static int64_t seen_n = 0;
  static const wo_host *seen_host = nullptr;
  wo_quant_v1 codec{};
  codec.struct_size = sizeof codec;
  codec.linear = [](const wo_host *h, const wo_tensor *w, const void *, wo_dtype, void *, wo_dtype, int64_t n) {
    seen_host = h, seen_w = w, seen_n = n;
    return WO_OK;
  };
  fake.route_quant(8, &codec);
  EXPECT_EQ(fake.host()->linear(fake.host()->ctx, t, nullptr, WO_DTYPE_F32, nullptr, WO_DTYPE_F32, 5), WO_OK);
  EXPECT_EQ(seen_w, t);
  EXPECT_EQ(seen_n, 5);
  EXPECT_EQ(seen_host, fake.host());
}

TEST(FakeHost, ScratchIsReusedAndGrownThroughTheVramHook) {
  wo::testing::FakeHost fake;
  std::vector<std::unique_ptr<char[]>> blocks;
  size_t live = 0;
  fake.set_vram(
      [&](size_t bytes, wo_vram_kind, void **out) {
        blocks.emplace_back(new char[bytes]);
        *out = blocks.back().get();
        ++live;
        return WO_OK;
      },
      [&](void *) { --live; });
  void *a = nullptr, *b = nullptr, *c = nullptr;
  ASSERT_EQ(fake.host()->scratch(fake.host()->ctx, 100, &a), WO_OK);
  ASSERT_EQ(fake.host()->scratch(fake.host()->ctx, 50, &b), WO_OK);
  EXPECT_EQ(a, b) << "a smaller request reuses the buffer";
  ASSERT_EQ(fake.host()->scratch(fake.host()->ctx, 1000, &c), WO_OK);
  EXPECT_NE(a, c);
  EXPECT_EQ(live, 1u) << "growing frees the old buffer";
}

// ---- MockHost ----------------------------------------------------------------------------------

TEST(MockHost, APluginsProbeReadsMetadataThroughTheMock) {
  auto plugin = wo::testing::LoadedPlugin::load(tp("good", "tp_arch"));
  const auto *arch = static_cast<const wo_arch_v1 *>(plugin.descriptor()->vtable);
  wo::testing::MockHost mock;
  EXPECT_CALL(mock, meta_get("general.architecture", _))
      .WillOnce(wo::testing::ReturnString("tiny"))
      .WillOnce(wo::testing::ReturnString("llama"))
      .WillOnce(::testing::Return(WO_ERR_NOT_FOUND));
  EXPECT_EQ(arch->probe(mock.host()), 10);
  EXPECT_EQ(arch->probe(mock.host()), 0);
  EXPECT_EQ(arch->probe(mock.host()), 0);
}

TEST(MockHost, EveryServiceReachesItsMockMethod) {
  wo::testing::MockHost mock;
  const wo_host *h = mock.host();
  wo_tensor w{};
  EXPECT_CALL(mock, log(WO_LOG_WARN, "hello"));
  EXPECT_CALL(mock, tensor("t")).WillOnce(::testing::Return(&w));
  EXPECT_CALL(mock, vram_alloc(123u, WO_VRAM_KV_CACHE, _)).WillOnce(::testing::Return(WO_ERR_OUT_OF_MEMORY));
  EXPECT_CALL(mock, linear(&w, _, WO_DTYPE_F16, _, WO_DTYPE_F32, 7)).WillOnce(::testing::Return(WO_OK));
  EXPECT_CALL(mock, meta_get("n", _)).WillOnce(wo::testing::ReturnUint(4096));
  h->log(h->ctx, WO_LOG_WARN, "hello");
  EXPECT_EQ(h->tensor(h->ctx, "t"), &w);
  void *p = nullptr;
  EXPECT_EQ(h->vram_alloc(h->ctx, 123, WO_VRAM_KV_CACHE, &p), WO_ERR_OUT_OF_MEMORY);
  EXPECT_EQ(h->linear(h->ctx, &w, nullptr, WO_DTYPE_F16, nullptr, WO_DTYPE_F32, 7), WO_OK);
  EXPECT_EQ(wo::HostView(h).get_int("n"), 4096);
}

// ---- LoadedPlugin ------------------------------------------------------------------------------

TEST(LoadedPlugin, LoadErrorsNameThePathAndWhatWasExpected) {
  try {
    wo::testing::LoadedPlugin::load("/nonexistent/plugin.so");
    FAIL();
  } catch (const std::runtime_error &e) {
    EXPECT_THAT(e.what(), HasSubstr("plugin '/nonexistent/plugin.so': dlopen failed"));
  }
  try {
    wo::testing::LoadedPlugin::load(tp("no_entry", "no_entry"));
    FAIL();
  } catch (const std::runtime_error &e) {
    EXPECT_THAT(e.what(), HasSubstr("expected the symbol 'worker_plugin_entry'"));
  }
}

// ---- conformance on good plugins ---------------------------------------------------------------

TEST(Conformance, GoodQuantPluginPassesEveryCheck) {
  auto p = wo::testing::LoadedPlugin::load(tp("good", "tp_quant"));
  wo::testing::expect_descriptor_invariants(p.descriptor(), WO_PLUGIN_QUANT);
  wo::testing::expect_version_negotiation(p.entry());
  const auto *q = static_cast<const wo_quant_v1 *>(p.descriptor()->vtable);
  // Q8_0 with an fp16 scale: about amax/127/sqrt(12) per element, ~0.5% of the row's RMS.
  wo::testing::expect_quant_cpu_conformance(q, {{8, 0.01}}, std::random_device{}());
  wo::testing::expect_quant_rejects_bad_arguments(q);
}

TEST(Conformance, GoodTokenizerRoundTripsTextAndSpecialTokens) {
  auto p = wo::testing::LoadedPlugin::load(tp("good", "tp_tok"));
  wo::testing::expect_descriptor_invariants(p.descriptor(), WO_PLUGIN_TOKENIZER);
  wo::testing::expect_version_negotiation(p.entry());
  const auto *t = static_cast<const wo_tokenizer_v1 *>(p.descriptor()->vtable);
  wo::testing::FakeHost fake;
  wo_tokenizer_config cfg{sizeof cfg, nullptr};
  wo_tokenizer_instance *inst = nullptr;
  ASSERT_EQ(t->create(fake.host(), &cfg, &inst), WO_OK);
  const std::vector<std::string> texts = {"", "hello world", "caf\xc3\xa9 \xe2\x82\xac 1+1=2\n\t", "<s>x</s>"};
  wo::testing::expect_tokenizer_round_trip(t, inst, texts);
  wo::testing::expect_tokenizer_round_trip(t, inst, texts, WO_TOK_PARSE_SPECIAL);
  EXPECT_EQ(wo::testing::encode(t, inst, "<s>a", WO_TOK_PARSE_SPECIAL), (std::vector<int32_t>{256, 'a'}));
  t->destroy(inst);
}

TEST(Conformance, GoodArchitectureRefusesForeignModels) {
  auto p = wo::testing::LoadedPlugin::load(tp("good", "tp_arch"));
  wo::testing::expect_descriptor_invariants(p.descriptor(), WO_PLUGIN_ARCHITECTURE);
  wo::testing::expect_version_negotiation(p.entry());
  wo::testing::expect_arch_refuses_foreign_models(static_cast<const wo_arch_v1 *>(p.descriptor()->vtable));
}

// ---- conformance catches broken plugins --------------------------------------------------------

TEST(ConformanceCatches, ALossyCodec) {
  auto p = wo::testing::LoadedPlugin::load(tp("lossy", "tp_lossy"));
  const auto *q = static_cast<const wo_quant_v1 *>(p.descriptor()->vtable);
  auto f = failures_of([&] { wo::testing::expect_quant_cpu_conformance(q, {{8, 0.01}}); });
  EXPECT_TRUE(any_contains(f, "relative L2 error")) << joined(f);
  EXPECT_TRUE(any_contains(f, "exceeds the bound 0.01")) << joined(f);
}

TEST(ConformanceCatches, ATypeWithoutABound) {
  auto p = wo::testing::LoadedPlugin::load(tp("good", "tp_quant"));
  const auto *q = static_cast<const wo_quant_v1 *>(p.descriptor()->vtable);
  auto f = failures_of([&] { wo::testing::expect_quant_cpu_conformance(q, {}); });
  EXPECT_TRUE(any_contains(f, "the codec lists Q8_0 (8) but the test gave no error bound")) << joined(f);
}

TEST(ConformanceCatches, AnEntryThatIgnoresTheHostsMajorVersion) {
  auto p = wo::testing::LoadedPlugin::load(tp("ignores_version", "tp_anyabi"));
  auto f = failures_of([&] { wo::testing::expect_version_negotiation(p.entry()); });
  EXPECT_TRUE(any_contains(f, "a host of ABI major 2 must get NULL")) << joined(f);
}

TEST(ConformanceCatches, AnEntryThatRefusesItsOwnAbi) {
  auto p = wo::testing::LoadedPlugin::load(tp("null_entry", "tp_null"));
  auto f = failures_of([&] { wo::testing::expect_version_negotiation(p.entry()); });
  EXPECT_TRUE(any_contains(f, "returned NULL: the plugin refuses the SDK it was built with")) << joined(f);
  auto g = failures_of([&] { wo::testing::expect_descriptor_invariants(p.descriptor(), WO_PLUGIN_QUANT); });
  EXPECT_TRUE(any_contains(g, "the entry returned NULL")) << joined(g);
}

TEST(ConformanceCatches, BrokenDescriptors) {
  auto small = wo::testing::LoadedPlugin::load(tp("small_vtable", "tp_smallvt"));
  auto f = failures_of([&] { wo::testing::expect_descriptor_invariants(small.descriptor(), WO_PLUGIN_TOKENIZER); });
  EXPECT_TRUE(any_contains(f, "wo_tokenizer_v1 struct_size")) << joined(f);

  auto nofn = wo::testing::LoadedPlugin::load(tp("missing_fn", "tp_nofn"));
  f = failures_of([&] { wo::testing::expect_descriptor_invariants(nofn.descriptor(), WO_PLUGIN_TOKENIZER); });
  EXPECT_TRUE(any_contains(f, "required function pointer encode is NULL")) << joined(f);

  auto good = wo::testing::LoadedPlugin::load(tp("good", "tp_quant"));
  f = failures_of([&] { wo::testing::expect_descriptor_invariants(good.descriptor(), WO_PLUGIN_TOKENIZER); });
  EXPECT_TRUE(any_contains(f, "kind")) << joined(f);
}

TEST(ConformanceCatches, ARoundTripThatAddsTokens) {
  auto p = wo::testing::LoadedPlugin::load(tp("good", "tp_tok"));
  const auto *t = static_cast<const wo_tokenizer_v1 *>(p.descriptor()->vtable);
  wo::testing::FakeHost fake;
  wo_tokenizer_instance *inst = nullptr;
  ASSERT_EQ(t->create(fake.host(), nullptr, &inst), WO_OK);
  // ADD_SPECIAL prepends <s>, so decode(encode(s)) != s: the check must say so.
  auto f = failures_of([&] { wo::testing::expect_tokenizer_round_trip(t, inst, {"abc"}, WO_TOK_ADD_SPECIAL); });
  EXPECT_TRUE(any_contains(f, "decode(encode(text)) differs from the text")) << joined(f);
  t->destroy(inst);
}
