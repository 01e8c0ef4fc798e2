// Hyperparameters of the two model families the gpt plugin serves, read from GGUF metadata.
//
// Why one struct for both: gpt2 and gpt-oss share the plugin's plumbing (session, scratch,
// logits); the fields a family does not use stay at their defaults.
#pragma once

#include <worker/sdk.hpp>

#include <cstdint>
#include <string>

namespace wo::gpt {

enum class Family { Gpt2, GptOss };

// Score for general.architecture (0 = not ours). gpt-oss is also written `gptoss` by some tools.
int32_t arch_score(const std::string &arch);

struct Hparams {
  Family family = Family::Gpt2;
  std::string arch; // general.architecture as written (prefix of the metadata keys)
  int64_t n_vocab = 0;
  int64_t n_ctx_train = 0;
  int64_t n_embd = 0;
  int64_t n_layer = 0;
  int64_t n_head = 0;
  int64_t n_head_kv = 0;
  int64_t head_dim = 0; // gpt2: n_embd / n_head; gpt-oss: attention.key_length
  int64_t n_ff = 0;     // gpt2: feed_forward_length; gpt-oss: expert_feed_forward_length
  float norm_eps = 1e-5f;

  // gpt-oss only.
  int64_t n_expert = 0;
  int64_t n_expert_used = 0;
  int64_t sliding_window = 0; // layers il % 2 == 0 attend to the last `sliding_window` positions
  float rope_freq_base = 10000.0f;
  float rope_freq_scale = 1.0f; // 1 / rope.scaling.factor
  float rope_ext_factor = 0.0f; // 1 with YaRN scaling
  float rope_beta_fast = 32.0f;
  float rope_beta_slow = 1.0f;
  int64_t rope_n_ctx_orig = 0;
  int64_t rope_n_dims = 0;

  int64_t q_dim() const { return n_head * head_dim; }
  int64_t kv_dim() const { return n_head_kv * head_dim; }
  bool layer_uses_window(int64_t il) const {
    return family == Family::GptOss && sliding_window > 0 && il % 2 == 0;
  }
};

// Reads and checks every value the forward pass relies on; throws wo::Error naming the key.
// n_vocab comes from the token embedding tensor (its row count), which is what the logits size.
Hparams read_hparams(const HostView &host);

// The GPT-OSS expert activation's constants; the GGUF does not store them.
constexpr float kOaiSwigluAlpha = 1.702f;
constexpr float kOaiSwigluLimit = 7.0f;

} // namespace wo::gpt
