// Hyperparameters of a llama-family model, read from `{arch}.*` metadata through the table's keys.
#pragma once

#include "arch_table.hpp"

#include <worker/sdk.hpp>

#include <cstdint>

namespace wo::llama {

// Tokens per forward chunk when the host's wo_arch_config does not say (n_batch <= 0 or absent).
constexpr int64_t kDefaultBatch = 512;

struct RopeConfig {
  Rope mode = Rope::Norm;
  int32_t n_dims = 0; // rotated dims per head
  float freq_base = 10000.0f;
  float freq_scale = 1.0f; // 1 / rope.scaling.factor for linear and YaRN scaling
  float ext_factor = 0.0f; // 1 with YaRN
  float attn_factor = 1.0f;
  int32_t n_ctx_orig = 0;
};

struct HParams {
  const ArchTable *arch = nullptr;
  int64_t n_vocab = 0;
  int64_t n_embd = 0;
  int64_t n_layer = 0;
  int64_t n_ff = 0;
  int32_t n_head = 0;
  int32_t n_head_kv = 0;
  int32_t head_dim = 0;
  int64_t n_ctx_train = 0;
  int64_t sliding_window = 0; // 0: full attention
  float rms_eps = 1e-5f;
  RopeConfig rope;

  int64_t q_dim() const { return static_cast<int64_t>(n_head) * head_dim; }
  int64_t kv_dim() const { return static_cast<int64_t>(n_head_kv) * head_dim; }
  // FP16 K and V for every layer.
  uint64_t kv_bytes_per_token() const { return 2ull * n_layer * kv_dim() * 2ull; }
};

// Reads and validates the hyperparameters; throws wo::Error naming the key on failure.
// n_vocab comes from the token embedding's shape (the one source every file has).
HParams read_hparams(const HostView &host);

// Device scratch bytes one forward of up to n_batch tokens needs (activations, ids; no logits).
uint64_t scratch_bytes(const HParams &hp, int64_t n_batch);

} // namespace wo::llama
