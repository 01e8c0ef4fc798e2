// The model's weights bound by name through the architecture table, with their shapes checked
// against the hyperparameters (so a malformed file fails at load, naming the tensor).
#pragma once

#include "hparams.hpp"

#include <worker/sdk.hpp>

#include <vector>

namespace wo::llama {

struct LayerWeights {
  const wo_tensor *attn_norm = nullptr;
  const wo_tensor *q = nullptr, *k = nullptr, *v = nullptr; // QkvLayout::Separate
  const wo_tensor *q_bias = nullptr, *k_bias = nullptr, *v_bias = nullptr;
  const wo_tensor *qkv = nullptr, *qkv_bias = nullptr; // QkvLayout::Fused: rows [q; k; v]
  const wo_tensor *o = nullptr, *o_bias = nullptr;
  const wo_tensor *ffn_norm = nullptr;
  const wo_tensor *gate = nullptr; // FfnLayout::Separate
  const wo_tensor *up = nullptr;   // FusedGateUp: rows [gate; up]
  const wo_tensor *down = nullptr;
  // FusedGateUp: up's gate and up halves as tensors of their own (wo::row_view), for
  // linear_swiglu; struct_size 0 otherwise.
  wo_tensor gate_half{}, up_half{};
};

struct Weights {
  const wo_tensor *token_embd = nullptr;
  const wo_tensor *output_norm = nullptr;
  const wo_tensor *output = nullptr; // == token_embd when the file has no output.weight (tied)
  bool tied_output = false;
  std::vector<LayerWeights> layers;
};

// Binds every tensor the forward pass reads. Norms and biases must be F32 (the kernels read them
// directly); matrices may have any type (the host routes them to their quant codec).
// require_device: also demand a device copy (data != nullptr) of every tensor.
Weights bind_weights(const HostView &host, const HParams &hp, bool require_device);

} // namespace wo::llama
