// Hyperparameters and weight checks read from the fixtures' real metadata and tensor lists.
#include "hparams.hpp"
#include "reference_host.hpp"
#include "weights.hpp"

#include <gtest/gtest.h>

#include <cmath>

namespace wo::gpt {
namespace {

using testing::ReferenceHost;

TEST(GptArchScore, ServesGpt2GptOssAndTheGptossSpellingOnly) {
  EXPECT_GT(arch_score("gpt2"), 0);
  EXPECT_GT(arch_score("gpt-oss"), 0);
  EXPECT_GT(arch_score("gptoss"), 0);
  EXPECT_EQ(arch_score("llama"), 0);
  EXPECT_EQ(arch_score("qwen2"), 0);
  EXPECT_EQ(arch_score(""), 0);
}

TEST(GptHparams, Gpt2FixtureShapes) {
  ReferenceHost rh("gpt2-tiny-Q8_0");
  const Hparams hp = read_hparams(HostView(rh.host()));
  EXPECT_EQ(hp.family, Family::Gpt2);
  EXPECT_EQ(hp.n_vocab, 50257);
  EXPECT_EQ(hp.n_embd, 64);
  EXPECT_EQ(hp.n_layer, 2);
  EXPECT_EQ(hp.n_head, 2);
  EXPECT_EQ(hp.n_head_kv, 2);
  EXPECT_EQ(hp.head_dim, 32);
  EXPECT_EQ(hp.n_ff, 256);
  EXPECT_EQ(hp.n_ctx_train, 512);
  EXPECT_NEAR(hp.norm_eps, 1e-5f, 1e-9f);
  EXPECT_FALSE(hp.layer_uses_window(0)); // gpt2 has no sliding window
}

TEST(GptHparams, GptOssFixtureShapesAndYarn) {
  ReferenceHost rh("gpt-oss-tiny-MXFP4_MOE");
  const Hparams hp = read_hparams(HostView(rh.host()));
  EXPECT_EQ(hp.family, Family::GptOss);
  EXPECT_EQ(hp.n_vocab, 201088);
  EXPECT_EQ(hp.n_embd, 32);
  EXPECT_EQ(hp.n_head, 4);
  EXPECT_EQ(hp.n_head_kv, 2);
  EXPECT_EQ(hp.head_dim, 64); // from key_length: n_head * head_dim != n_embd
  EXPECT_EQ(hp.q_dim(), 256);
  EXPECT_EQ(hp.kv_dim(), 128);
  EXPECT_EQ(hp.n_expert, 8);
  EXPECT_EQ(hp.n_expert_used, 4);
  EXPECT_EQ(hp.n_ff, 64);
  EXPECT_EQ(hp.sliding_window, 32);
  EXPECT_TRUE(hp.layer_uses_window(0));
  EXPECT_FALSE(hp.layer_uses_window(1));
  EXPECT_TRUE(hp.layer_uses_window(2));
  EXPECT_FLOAT_EQ(hp.rope_freq_base, 150000.0f);
  EXPECT_FLOAT_EQ(hp.rope_freq_scale, 1.0f / 32.0f);
  EXPECT_FLOAT_EQ(hp.rope_ext_factor, 1.0f);
  EXPECT_FLOAT_EQ(hp.rope_beta_fast, 32.0f);
  EXPECT_FLOAT_EQ(hp.rope_beta_slow, 1.0f);
  EXPECT_EQ(hp.rope_n_ctx_orig, 4096);
  EXPECT_EQ(hp.rope_n_dims, 64);
}

TEST(GptHparams, GptossSpellingReadsItsOwnKeyPrefix) {
  ReferenceHost rh("gpt-oss-tiny-MXFP4_MOE");
  rh.rename_prefix("gpt-oss", "gptoss");
  rh.set_string("general.architecture", "gptoss");
  const Hparams hp = read_hparams(HostView(rh.host()));
  EXPECT_EQ(hp.family, Family::GptOss);
  EXPECT_EQ(hp.head_dim, 64);
  EXPECT_EQ(hp.n_expert_used, 4);
}

TEST(GptHparams, RopeScalingNoneAndUnknown) {
  ReferenceHost rh("gpt-oss-tiny-MXFP4_MOE");
  rh.set_string("gpt-oss.rope.scaling.type", "none");
  Hparams hp = read_hparams(HostView(rh.host()));
  EXPECT_FLOAT_EQ(hp.rope_freq_scale, 1.0f);
  EXPECT_FLOAT_EQ(hp.rope_ext_factor, 0.0f);

  rh.set_string("gpt-oss.rope.scaling.type", "longrope");
  try {
    read_hparams(HostView(rh.host()));
    FAIL() << "longrope accepted";
  } catch (const Error &e) {
    EXPECT_EQ(e.status(), WO_ERR_UNSUPPORTED);
    EXPECT_NE(std::string(e.what()).find("gpt-oss.rope.scaling.type"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("longrope"), std::string::npos) << e.what();
  }
}

TEST(GptHparams, MissingKeyIsNamed) {
  ReferenceHost rh("gpt-oss-tiny-MXFP4_MOE");
  rh.erase_meta("gpt-oss.attention.key_length");
  try {
    read_hparams(HostView(rh.host()));
    FAIL() << "missing key_length accepted";
  } catch (const Error &e) {
    EXPECT_EQ(e.status(), WO_ERR_NOT_FOUND);
    EXPECT_NE(std::string(e.what()).find("gpt-oss.attention.key_length"), std::string::npos) << e.what();
  }
}

TEST(GptWeights, Gpt2HeadIsTiedToTheTokenEmbedding) {
  ReferenceHost rh("gpt2-tiny-Q8_0");
  HostView view(rh.host());
  const Weights w = load_weights(view, read_hparams(view));
  EXPECT_TRUE(w.tied_output);
  EXPECT_EQ(w.output, w.token_embd);
  ASSERT_NE(w.position_embd, nullptr);
  ASSERT_EQ(w.layers.size(), 2u);
  EXPECT_STREQ(w.layers[1].attn_qkv->name, "blk.1.attn_qkv.weight");
}

TEST(GptWeights, GptOssFindsEveryTensorWithItsExpertShapes) {
  ReferenceHost rh("gpt-oss-tiny-MXFP4_MOE");
  HostView view(rh.host());
  const Weights w = load_weights(view, read_hparams(view));
  EXPECT_FALSE(w.tied_output);
  EXPECT_STREQ(w.output->name, "output.weight");
  ASSERT_EQ(w.layers.size(), 3u);
  const LayerWeights &l2 = w.layers[2];
  EXPECT_EQ(l2.ffn_down_exps->ne[0], 64);
  EXPECT_EQ(l2.ffn_down_exps->ne[1], 32);
  EXPECT_EQ(l2.ffn_down_exps->ne[2], 8);
  EXPECT_EQ(l2.ffn_gate_exps->ggml_type, 39u); // MXFP4
  EXPECT_STREQ(l2.attn_sinks->name, "blk.2.attn_sinks.weight");
}

// A model that does not fit the hyperparameters fails with the tensor, expected and found shape.
TEST(GptWeights, WrongExpertCountIsReportedWithShapes) {
  ReferenceHost rh("gpt-oss-tiny-MXFP4_MOE");
  rh.tensor_desc("blk.1.ffn_up_exps.weight").ne[2] = 7;
  HostView view(rh.host());
  try {
    load_weights(view, read_hparams(view));
    FAIL() << "7 experts accepted where metadata says 8";
  } catch (const Error &e) {
    const std::string m = e.what();
    EXPECT_EQ(e.status(), WO_ERR_FORMAT);
    EXPECT_NE(m.find("blk.1.ffn_up_exps.weight"), std::string::npos) << m;
    EXPECT_NE(m.find("[32, 64, 8]"), std::string::npos) << m;
    EXPECT_NE(m.find("[32, 64, 7]"), std::string::npos) << m;
  }
}

TEST(GptWeights, QuantizedBiasIsRefused) {
  ReferenceHost rh("gpt2-tiny-Q8_0");
  rh.tensor_desc("blk.0.ffn_up.bias").ggml_type = 8; // Q8_0
  HostView view(rh.host());
  try {
    load_weights(view, read_hparams(view));
    FAIL() << "Q8_0 bias accepted";
  } catch (const Error &e) {
    const std::string m = e.what();
    EXPECT_EQ(e.status(), WO_ERR_UNSUPPORTED);
    EXPECT_NE(m.find("blk.0.ffn_up.bias"), std::string::npos) << m;
    EXPECT_NE(m.find("Q8_0"), std::string::npos) << m;
  }
}

TEST(GptWeights, GptOssNeedsItsOwnLmHead) {
  ReferenceHost rh("gpt-oss-tiny-MXFP4_MOE");
  rh.erase_tensor("output.weight");
  HostView view(rh.host());
  try {
    load_weights(view, read_hparams(view));
    FAIL() << "gpt-oss without output.weight accepted";
  } catch (const Error &e) {
    EXPECT_EQ(e.status(), WO_ERR_NOT_FOUND);
    EXPECT_NE(std::string(e.what()).find("output.weight"), std::string::npos) << e.what();
  }
}

} // namespace
} // namespace wo::gpt
