#include "presets.hpp"

#include <worker/ggml_types.hpp>
#include <worker/sdk.hpp>

#include <cmath>

namespace wo::synth {
namespace {

namespace G = wo::ggml;

// llama.cpp's "more bits" layers for Q4_K_M: the first and last eighth, and every third between.
bool use_more_bits(int i, int n) { return i < n / 8 || i >= 7 * n / 8 || (i - n / 8) % 3 == 2; }

// K-quants need rows that are multiples of 256; llama.cpp falls back to these legacy types.
uint32_t fallback(uint32_t type, int64_t row_len) {
  if (row_len % 256 == 0) return type;
  switch (type) {
  case G::Q4_K: return G::Q5_0;
  case G::Q5_K: return G::Q5_1;
  case G::Q6_K: return G::Q8_0;
  default: return type;
  }
}

struct Dense {
  std::string arch;
  int64_t n_vocab, n_embd, n_ff, n_layer, n_head, n_head_kv, head_dim, n_ctx;
  bool qkv_bias = false, fused_qkv = false, fused_gate_up = false, tied = false;
  float rope_base = 10000.0f, eps = 1e-6f;
  int64_t rope_dims = 0;
};

float inv_sqrt(int64_t n) { return 1.0f / std::sqrt(static_cast<float>(n)); }

// llama / qwen2 / phi3 family with the Q4_K_M mix.
Preset dense_q4_k_m(const std::string &name, const std::string &desc, const std::string &pre, const Dense &d) {
  Preset p;
  p.name = name;
  p.description = desc;
  p.arch = d.arch;
  p.n_vocab = d.n_vocab;
  p.default_pre = pre;
  auto add = [&](std::string n, uint32_t type, std::vector<int64_t> ne, Fill f, float s) {
    uint32_t t = type == G::F32 ? type : fallback(type, ne[0]);
    p.tensors.push_back({std::move(n), t, std::move(ne), f, s});
  };
  const int64_t q_dim = d.n_head * d.head_dim, kv_dim = d.n_head_kv * d.head_dim;
  add("token_embd.weight", G::Q4_K, {d.n_embd, d.n_vocab}, Fill::normal, 1.0f);
  add("output_norm.weight", G::F32, {d.n_embd}, Fill::norm_gain, 0.1f);
  if (!d.tied) add("output.weight", G::Q6_K, {d.n_embd, d.n_vocab}, Fill::normal, inv_sqrt(d.n_embd));
  const int L = static_cast<int>(d.n_layer);
  for (int i = 0; i < L; ++i) {
    const std::string b = "blk." + std::to_string(i) + ".";
    const bool more = use_more_bits(i, L);
    add(b + "attn_norm.weight", G::F32, {d.n_embd}, Fill::norm_gain, 0.1f);
    if (d.fused_qkv) {
      add(b + "attn_qkv.weight", G::Q5_K, {d.n_embd, q_dim + 2 * kv_dim}, Fill::normal, inv_sqrt(d.n_embd));
    } else {
      add(b + "attn_q.weight", G::Q4_K, {d.n_embd, q_dim}, Fill::normal, inv_sqrt(d.n_embd));
      add(b + "attn_k.weight", G::Q4_K, {d.n_embd, kv_dim}, Fill::normal, inv_sqrt(d.n_embd));
      add(b + "attn_v.weight", more ? G::Q6_K : G::Q4_K, {d.n_embd, kv_dim}, Fill::normal, inv_sqrt(d.n_embd));
      if (d.qkv_bias) {
        add(b + "attn_q.bias", G::F32, {q_dim}, Fill::normal, 0.02f);
        add(b + "attn_k.bias", G::F32, {kv_dim}, Fill::normal, 0.02f);
        add(b + "attn_v.bias", G::F32, {kv_dim}, Fill::normal, 0.02f);
      }
    }
    add(b + "attn_output.weight", G::Q4_K, {q_dim, d.n_embd}, Fill::normal, inv_sqrt(q_dim));
    add(b + "ffn_norm.weight", G::F32, {d.n_embd}, Fill::norm_gain, 0.1f);
    if (d.fused_gate_up) {
      add(b + "ffn_up.weight", G::Q4_K, {d.n_embd, 2 * d.n_ff}, Fill::normal, inv_sqrt(d.n_embd));
    } else {
      add(b + "ffn_gate.weight", G::Q4_K, {d.n_embd, d.n_ff}, Fill::normal, inv_sqrt(d.n_embd));
      add(b + "ffn_up.weight", G::Q4_K, {d.n_embd, d.n_ff}, Fill::normal, inv_sqrt(d.n_embd));
    }
    add(b + "ffn_down.weight", more ? G::Q6_K : G::Q4_K, {d.n_ff, d.n_embd}, Fill::normal, inv_sqrt(d.n_ff));
  }
  p.metadata = [d, name](GgufWriter &w) {
    const std::string a = d.arch + ".";
    w.set_str("general.architecture", d.arch);
    w.set_str("general.name", name + " (gguf-synth random weights)");
    w.set_u32("general.file_type", 15); // MOSTLY_Q4_K_M
    w.set_u32(a + "context_length", static_cast<uint32_t>(d.n_ctx));
    w.set_u32(a + "embedding_length", static_cast<uint32_t>(d.n_embd));
    w.set_u32(a + "feed_forward_length", static_cast<uint32_t>(d.n_ff));
    w.set_u32(a + "block_count", static_cast<uint32_t>(d.n_layer));
    w.set_u32(a + "attention.head_count", static_cast<uint32_t>(d.n_head));
    w.set_u32(a + "attention.head_count_kv", static_cast<uint32_t>(d.n_head_kv));
    w.set_f32(a + "attention.layer_norm_rms_epsilon", d.eps);
    w.set_f32(a + "rope.freq_base", d.rope_base);
    if (d.rope_dims) w.set_u32(a + "rope.dimension_count", static_cast<uint32_t>(d.rope_dims));
    if (d.head_dim * d.n_head != d.n_embd) {
      w.set_u32(a + "attention.key_length", static_cast<uint32_t>(d.head_dim));
      w.set_u32(a + "attention.value_length", static_cast<uint32_t>(d.head_dim));
    }
  };
  return p;
}

// GPT-OSS with llama.cpp's MXFP4_MOE mix: experts MXFP4, other matrices Q8_0, the rest F32.
Preset gpt_oss(const std::string &name, const std::string &desc, int64_t n_vocab, int64_t n_embd, int64_t n_layer,
               int64_t n_head, int64_t n_head_kv, int64_t head_dim, int64_t n_expert, int64_t n_used, int64_t n_ff,
               int64_t window, int64_t n_ctx) {
  Preset p;
  p.name = name;
  p.description = desc;
  p.arch = "gpt-oss";
  p.n_vocab = n_vocab;
  p.default_pre = "gpt-4o";
  auto add = [&](std::string n, uint32_t t, std::vector<int64_t> ne, Fill f, float s) {
    p.tensors.push_back({std::move(n), t, std::move(ne), f, s});
  };
  const int64_t q_dim = n_head * head_dim, kv_dim = n_head_kv * head_dim;
  add("token_embd.weight", G::Q8_0, {n_embd, n_vocab}, Fill::normal, 1.0f);
  add("output_norm.weight", G::F32, {n_embd}, Fill::norm_gain, 0.1f);
  add("output.weight", G::Q8_0, {n_embd, n_vocab}, Fill::normal, inv_sqrt(n_embd));
  for (int64_t i = 0; i < n_layer; ++i) {
    const std::string b = "blk." + std::to_string(i) + ".";
    add(b + "attn_norm.weight", G::F32, {n_embd}, Fill::norm_gain, 0.1f);
    add(b + "attn_q.weight", G::Q8_0, {n_embd, q_dim}, Fill::normal, inv_sqrt(n_embd));
    add(b + "attn_q.bias", G::F32, {q_dim}, Fill::normal, 0.02f);
    add(b + "attn_k.weight", G::Q8_0, {n_embd, kv_dim}, Fill::normal, inv_sqrt(n_embd));
    add(b + "attn_k.bias", G::F32, {kv_dim}, Fill::normal, 0.02f);
    add(b + "attn_v.weight", G::Q8_0, {n_embd, kv_dim}, Fill::normal, inv_sqrt(n_embd));
    add(b + "attn_v.bias", G::F32, {kv_dim}, Fill::normal, 0.02f);
    add(b + "attn_output.weight", G::Q8_0, {q_dim, n_embd}, Fill::normal, inv_sqrt(q_dim));
    add(b + "attn_output.bias", G::F32, {n_embd}, Fill::normal, 0.02f);
    add(b + "attn_sinks.weight", G::F32, {n_head}, Fill::normal, 1.0f);
    add(b + "post_attention_norm.weight", G::F32, {n_embd}, Fill::norm_gain, 0.1f);
    add(b + "ffn_gate_inp.weight", G::F32, {n_embd, n_expert}, Fill::normal, inv_sqrt(n_embd));
    add(b + "ffn_gate_inp.bias", G::F32, {n_expert}, Fill::normal, 0.02f);
    add(b + "ffn_gate_exps.weight", G::MXFP4, {n_embd, n_ff, n_expert}, Fill::normal, inv_sqrt(n_embd));
    add(b + "ffn_gate_exps.bias", G::F32, {n_ff, n_expert}, Fill::normal, 0.02f);
    add(b + "ffn_up_exps.weight", G::MXFP4, {n_embd, n_ff, n_expert}, Fill::normal, inv_sqrt(n_embd));
    add(b + "ffn_up_exps.bias", G::F32, {n_ff, n_expert}, Fill::normal, 0.02f);
    add(b + "ffn_down_exps.weight", G::MXFP4, {n_ff, n_embd, n_expert}, Fill::normal, inv_sqrt(n_ff));
    add(b + "ffn_down_exps.bias", G::F32, {n_embd, n_expert}, Fill::normal, 0.02f);
  }
  p.metadata = [=](GgufWriter &w) {
    const std::string a = "gpt-oss.";
    w.set_str("general.architecture", "gpt-oss");
    w.set_str("general.name", name + " (gguf-synth random weights)");
    w.set_u32("general.file_type", 38); // MOSTLY_MXFP4_MOE
    w.set_u32(a + "context_length", static_cast<uint32_t>(n_ctx));
    w.set_u32(a + "embedding_length", static_cast<uint32_t>(n_embd));
    w.set_u32(a + "feed_forward_length", static_cast<uint32_t>(n_ff));
    w.set_u32(a + "expert_feed_forward_length", static_cast<uint32_t>(n_ff));
    w.set_u32(a + "block_count", static_cast<uint32_t>(n_layer));
    w.set_u32(a + "attention.head_count", static_cast<uint32_t>(n_head));
    w.set_u32(a + "attention.head_count_kv", static_cast<uint32_t>(n_head_kv));
    w.set_u32(a + "attention.key_length", static_cast<uint32_t>(head_dim));
    w.set_u32(a + "attention.value_length", static_cast<uint32_t>(head_dim));
    w.set_u32(a + "attention.sliding_window", static_cast<uint32_t>(window));
    w.set_f32(a + "attention.layer_norm_rms_epsilon", 1e-5f);
    w.set_u32(a + "expert_count", static_cast<uint32_t>(n_expert));
    w.set_u32(a + "expert_used_count", static_cast<uint32_t>(n_used));
    w.set_f32(a + "rope.freq_base", 150000.0f);
    w.set_str(a + "rope.scaling.type", "yarn");
    w.set_f32(a + "rope.scaling.factor", 32.0f);
    w.set_u32(a + "rope.scaling.original_context_length", 4096);
  };
  return p;
}

} // namespace

const std::vector<std::string> &preset_names() {
  static const std::vector<std::string> names = {"qwen2.5-0.5b-q4_k_m", "phi-3-mini-4k-q4_k_m", "gpt-oss-20b-mxfp4",
                                                 "llama-3-8b-q4_k_m",   "tiny-qwen2-q4_k_m",    "tiny-gpt-oss-mxfp4"};
  return names;
}

Preset make_preset(const std::string &name) {
  if (name == "qwen2.5-0.5b-q4_k_m") {
    Dense d{"qwen2", 151936, 896, 4864, 24, 14, 2, 64, 32768};
    d.qkv_bias = true;
    d.rope_base = 1000000.0f;
    return dense_q4_k_m(name, "Qwen2.5-0.5B-Instruct Q4_K_M shape (291 tensors, ~0.4 GB)", "qwen2", d);
  }
  if (name == "phi-3-mini-4k-q4_k_m") {
    Dense d{"phi3", 32064, 3072, 8192, 32, 32, 32, 96, 4096};
    d.fused_qkv = d.fused_gate_up = true;
    d.eps = 1e-5f;
    d.rope_dims = 96;
    return dense_q4_k_m(name, "Phi-3-mini-4k-instruct Q4_K_M shape (195 tensors, ~2.3 GB)", "default", d);
  }
  if (name == "llama-3-8b-q4_k_m") {
    Dense d{"llama", 128256, 4096, 14336, 32, 32, 8, 128, 8192};
    d.eps = 1e-5f;
    d.rope_base = 500000.0f;
    return dense_q4_k_m(name, "Llama-3-8B Q4_K_M shape (291 tensors, ~4.9 GB)", "llama-bpe", d);
  }
  if (name == "gpt-oss-20b-mxfp4")
    return gpt_oss(name, "GPT-OSS-20B MXFP4_MOE shape (459 tensors, ~12 GB)", 201088, 2880, 24, 64, 8, 64, 32, 4, 2880,
                   128, 131072);
  if (name == "tiny-qwen2-q4_k_m") {
    Dense d{"qwen2", 151936, 256, 512, 2, 4, 2, 64, 4096};
    d.qkv_bias = true;
    d.rope_base = 1000000.0f;
    return dense_q4_k_m(name, "tiny qwen2 for tests (2 layers, hidden 256)", "qwen2", d);
  }
  if (name == "tiny-gpt-oss-mxfp4")
    return gpt_oss(name, "tiny gpt-oss for tests (2 layers, hidden 64, 4 experts)", 201088, 64, 2, 4, 2, 32, 4, 2, 64, 16,
                   4096);
  std::string known;
  for (const auto &n : preset_names()) known += (known.empty() ? "" : ", ") + n;
  throw Error(WO_ERR_INVALID_ARGUMENT, "unknown preset '" + name + "' (expected one of: " + known + ")");
}

} // namespace wo::synth
