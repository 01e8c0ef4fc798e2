// The README example's test: the conformance kit against the built .so, with no host involved.
#include <worker/testing/conformance.hpp>
#include <worker/testing/fake_host.hpp>
#include <worker/testing/plugin_loader.hpp>

#include <gtest/gtest.h>

TEST(TokenizerBytes, PassesTheConformanceKit) {
  auto plugin = wo::testing::LoadedPlugin::load(EXAMPLE_PLUGIN_PATH);
  wo::testing::expect_descriptor_invariants(plugin.descriptor(), WO_PLUGIN_TOKENIZER);
  wo::testing::expect_version_negotiation(plugin.entry());

  auto *tok = static_cast<const wo_tokenizer_v1 *>(plugin.descriptor()->vtable);
  wo::testing::FakeHost model; // metadata the probe reads, served through the C ABI
  model.set_str("tokenizer.ggml.model", "bytes");
  EXPECT_GT(tok->probe(model.host(), nullptr), 0);
  model.set_str("tokenizer.ggml.model", "gpt2");
  EXPECT_EQ(tok->probe(model.host(), nullptr), 0);

  wo_tokenizer_instance *inst = nullptr;
  ASSERT_EQ(tok->create(model.host(), nullptr, &inst), WO_OK);
  wo::testing::expect_tokenizer_round_trip(tok, inst, {"", "hello", "caf\xc3\xa9 \xf0\x9f\x99\x82\n"});
  tok->destroy(inst);
}
