// The tensors of a gpt2 / gpt-oss model, looked up by GGUF name and checked against the
// hyperparameters once at create time, so the forward pass never meets a surprise.
//
// Matrices go through the host's linear / linear_id / gather_rows (any quant type); vectors the
// kernels read directly (norm weights, biases, attention sinks) must be F32.
#pragma once

#include "hparams.hpp"

#include <vector>

namespace wo::gpt {

struct LayerWeights {
  const wo_tensor *attn_norm = nullptr, *attn_norm_b = nullptr; // _b: gpt2 only
  const wo_tensor *attn_output = nullptr, *attn_output_b = nullptr;

  // gpt2
  const wo_tensor *attn_qkv = nullptr, *attn_qkv_b = nullptr;
  const wo_tensor *ffn_norm = nullptr, *ffn_norm_b = nullptr;
  const wo_tensor *ffn_up = nullptr, *ffn_up_b = nullptr;
  const wo_tensor *ffn_down = nullptr, *ffn_down_b = nullptr;

  // gpt-oss
  const wo_tensor *attn_q = nullptr, *attn_q_b = nullptr;
  const wo_tensor *attn_k = nullptr, *attn_k_b = nullptr;
  const wo_tensor *attn_v = nullptr, *attn_v_b = nullptr;
  const wo_tensor *attn_sinks = nullptr;
  const wo_tensor *post_attention_norm = nullptr;
  const wo_tensor *ffn_gate_inp = nullptr, *ffn_gate_inp_b = nullptr; // router
  const wo_tensor *ffn_gate_exps = nullptr, *ffn_gate_exps_b = nullptr;
  const wo_tensor *ffn_up_exps = nullptr, *ffn_up_exps_b = nullptr;
  const wo_tensor *ffn_down_exps = nullptr, *ffn_down_exps_b = nullptr;
};

struct Weights {
  const wo_tensor *token_embd = nullptr;
  const wo_tensor *position_embd = nullptr; // gpt2
  const wo_tensor *output_norm = nullptr, *output_norm_b = nullptr;
  const wo_tensor *output = nullptr; // output.weight, or token_embd when the head is tied
  bool tied_output = false;
  std::vector<LayerWeights> layers;
};

// Throws wo::Error naming the tensor, the expected and the found shape or type.
Weights load_weights(const HostView &host, const Hparams &hp);

// Device pointer of an F32 vector/matrix tensor (nullptr for an absent optional tensor).
inline const float *f32_data(const wo_tensor *t) { return t ? static_cast<const float *>(t->data) : nullptr; }

} // namespace wo::gpt
