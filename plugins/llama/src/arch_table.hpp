// One table per architecture served by this plugin: which GGUF tensors hold which weights and how
// the architecture differs (RoPE pairing, fused projections, biases). The forward pass reads only
// these fields, never the architecture's name.
#pragma once

#include <string>

namespace wo::llama {

enum class Rope { Norm, Neox };                 // adjacent pairs (2i, 2i+1) | halves (i, i + n_rot/2)
enum class QkvLayout { Separate, Fused };       // attn_q/k/v | attn_qkv rows [q; k; v]
enum class FfnLayout { Separate, FusedGateUp }; // ffn_gate + ffn_up | ffn_up rows [gate; up]
enum class Need { Absent, Optional, Required };

struct ArchTable {
  const char *name; // general.architecture
  Rope rope;
  QkvLayout qkv;
  FfnLayout ffn;
  Need qkv_bias;           // attn_q/k/v.bias (or attn_qkv.bias)
  Need output_bias;        // attn_output.bias
  bool use_sliding_window; // false: ignore {arch}.attention.sliding_window (phi3, as llama.cpp does)

  // Tensor names; "%d" is the layer index.
  const char *token_embd = "token_embd.weight";
  const char *output_norm = "output_norm.weight";
  const char *output = "output.weight"; // absent: the LM head reuses token_embd (tied)
  const char *attn_norm = "blk.%d.attn_norm.weight";
  const char *attn_q = "blk.%d.attn_q.weight";
  const char *attn_k = "blk.%d.attn_k.weight";
  const char *attn_v = "blk.%d.attn_v.weight";
  const char *attn_q_bias = "blk.%d.attn_q.bias";
  const char *attn_k_bias = "blk.%d.attn_k.bias";
  const char *attn_v_bias = "blk.%d.attn_v.bias";
  const char *attn_qkv = "blk.%d.attn_qkv.weight";
  const char *attn_qkv_bias = "blk.%d.attn_qkv.bias";
  const char *attn_output = "blk.%d.attn_output.weight";
  const char *attn_output_bias = "blk.%d.attn_output.bias";
  const char *ffn_norm = "blk.%d.ffn_norm.weight";
  const char *ffn_gate = "blk.%d.ffn_gate.weight";
  const char *ffn_up = "blk.%d.ffn_up.weight";
  const char *ffn_down = "blk.%d.ffn_down.weight";
  // Tensors that change the math in ways this plugin does not implement yet (refused at load
  // rather than silently ignored): Llama 3.1 RoPE frequency factors, Phi-3 long/short RoPE.
  const char *unsupported[3] = {"rope_freqs.weight", "rope_factors_long.weight", "rope_factors_short.weight"};

  // Hyperparameter keys, relative to "{arch}.".
  const char *key_n_layer = "block_count";
  const char *key_n_embd = "embedding_length";
  const char *key_n_ff = "feed_forward_length";
  const char *key_n_head = "attention.head_count";
  const char *key_n_head_kv = "attention.head_count_kv";
  const char *key_rms_eps = "attention.layer_norm_rms_epsilon";
  const char *key_head_dim = "attention.key_length";
  const char *key_head_dim_v = "attention.value_length";
  const char *key_sliding_window = "attention.sliding_window";
  const char *key_n_ctx_train = "context_length";
  const char *key_rope_base = "rope.freq_base";
  const char *key_rope_dims = "rope.dimension_count";
  const char *key_rope_scaling_type = "rope.scaling.type";
  const char *key_rope_scaling_factor = "rope.scaling.factor";
  const char *key_rope_scaling_orig_ctx = "rope.scaling.original_context_length";
};

// The table for `arch`, or nullptr when this plugin does not serve it.
const ArchTable *find_arch(const std::string &arch);

// "blk.%d.x" with the layer index filled in.
std::string layer_name(const char *pattern, int layer);

} // namespace wo::llama
