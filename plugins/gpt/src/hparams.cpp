#include "hparams.hpp"

namespace wo::gpt {

int32_t arch_score(const std::string &arch) {
  // One fixed score: no other plugin claims these names, and a tie would be an error anyway.
  if (arch == "gpt2" || arch == "gpt-oss" || arch == "gptoss") return 100;
  return 0;
}

namespace {

[[noreturn]] void bad(const std::string &key, const std::string &expected, int64_t found) {
  throw Error(WO_ERR_FORMAT,
              "metadata key '" + key + "': expected " + expected + ", found " + std::to_string(found));
}

int64_t positive(const HostView &h, const std::string &key) {
  const int64_t v = h.get_int(key);
  if (v <= 0) bad(key, "a positive integer", v);
  return v;
}

void read_gpt2(const HostView &h, Hparams &p) {
  p.n_head_kv = p.n_head; // plain multi-head attention
  if (p.n_embd % p.n_head != 0)
    bad(h.arch_key("attention.head_count"), "a divisor of embedding_length " + std::to_string(p.n_embd),
        p.n_head);
  p.head_dim = p.n_embd / p.n_head;
  p.n_ff = positive(h, h.arch_key("feed_forward_length"));
  p.norm_eps = static_cast<float>(h.get_float(h.arch_key("attention.layer_norm_epsilon"), 1e-5));
}

void read_gptoss(const HostView &h, Hparams &p) {
  p.n_head_kv = h.get_int(h.arch_key("attention.head_count_kv"), p.n_head);
  if (p.n_head_kv <= 0 || p.n_head % p.n_head_kv != 0)
    bad(h.arch_key("attention.head_count_kv"), "a positive divisor of head_count " + std::to_string(p.n_head),
        p.n_head_kv);
  p.head_dim = positive(h, h.arch_key("attention.key_length"));
  const int64_t v_len = h.get_int(h.arch_key("attention.value_length"), p.head_dim);
  if (v_len != p.head_dim)
    bad(h.arch_key("attention.value_length"), "key_length " + std::to_string(p.head_dim), v_len);
  if (p.head_dim > 256) bad(h.arch_key("attention.key_length"), "at most 256 (attention kernel)", p.head_dim);
  p.norm_eps = static_cast<float>(h.get_float(h.arch_key("attention.layer_norm_rms_epsilon"), 1e-5));
  p.n_expert = positive(h, h.arch_key("expert_count"));
  p.n_expert_used = positive(h, h.arch_key("expert_used_count"));
  if (p.n_expert_used > p.n_expert || p.n_expert_used > 32 || p.n_expert > 1024)
    bad(h.arch_key("expert_used_count"),
        "at most expert_count " + std::to_string(p.n_expert) + " and at most 32 (expert_count <= 1024)",
        p.n_expert_used);
  p.n_ff = h.has(h.arch_key("expert_feed_forward_length"))
               ? positive(h, h.arch_key("expert_feed_forward_length"))
               : positive(h, h.arch_key("feed_forward_length"));
  p.sliding_window = h.get_int(h.arch_key("attention.sliding_window"), 0);
  if (p.sliding_window < 0)
    bad(h.arch_key("attention.sliding_window"), "a non-negative integer", p.sliding_window);

  p.rope_n_dims = h.get_int(h.arch_key("rope.dimension_count"), p.head_dim);
  if (p.rope_n_dims <= 0 || p.rope_n_dims > p.head_dim || p.rope_n_dims % 2 != 0)
    bad(h.arch_key("rope.dimension_count"), "an even count <= key_length " + std::to_string(p.head_dim),
        p.rope_n_dims);
  p.rope_freq_base = static_cast<float>(h.get_float(h.arch_key("rope.freq_base"), 10000.0));
  const std::string scaling = h.opt_str(h.arch_key("rope.scaling.type")).value_or("none");
  const double factor = h.get_float(h.arch_key("rope.scaling.factor"), 1.0);
  if (scaling != "none") {
    if (!(factor > 0.0))
      throw Error(WO_ERR_FORMAT, "metadata key '" + h.arch_key("rope.scaling.factor") +
                                     "': expected a positive factor, found " + std::to_string(factor));
    p.rope_freq_scale = static_cast<float>(1.0 / factor);
  }
  if (scaling == "yarn") {
    p.rope_ext_factor = 1.0f; // what llama.cpp derives for YaRN models
  } else if (scaling != "none" && scaling != "linear") {
    throw Error(WO_ERR_UNSUPPORTED, "metadata key '" + h.arch_key("rope.scaling.type") +
                                        "': expected none, linear or yarn, found '" + scaling + "'");
  }
  p.rope_beta_fast = static_cast<float>(h.get_float(h.arch_key("rope.scaling.yarn_beta_fast"), 32.0));
  p.rope_beta_slow = static_cast<float>(h.get_float(h.arch_key("rope.scaling.yarn_beta_slow"), 1.0));
  p.rope_n_ctx_orig = h.get_int(h.arch_key("rope.scaling.original_context_length"), p.n_ctx_train);
}

} // namespace

Hparams read_hparams(const HostView &h) {
  Hparams p;
  p.arch = h.get_str("general.architecture");
  if (arch_score(p.arch) == 0)
    throw Error(WO_ERR_UNSUPPORTED,
                "general.architecture: expected gpt2, gpt-oss or gptoss, found '" + p.arch + "'");
  p.family = p.arch == "gpt2" ? Family::Gpt2 : Family::GptOss;
  p.n_ctx_train = positive(h, h.arch_key("context_length"));
  p.n_embd = positive(h, h.arch_key("embedding_length"));
  p.n_layer = positive(h, h.arch_key("block_count"));
  p.n_head = positive(h, h.arch_key("attention.head_count"));
  if (p.family == Family::Gpt2)
    read_gpt2(h, p);
  else
    read_gptoss(h, p);

  const wo_tensor &embd = h.require_tensor("token_embd.weight");
  if (embd.n_dims != 2 || embd.ne[0] != p.n_embd)
    throw Error(WO_ERR_FORMAT, "tensor 'token_embd.weight': expected [" + std::to_string(p.n_embd) +
                                   ", n_vocab], found " + std::to_string(embd.n_dims) + " dims with ne0 " +
                                   std::to_string(embd.ne[0]));
  p.n_vocab = embd.ne[1];
  return p;
}

} // namespace wo::gpt
