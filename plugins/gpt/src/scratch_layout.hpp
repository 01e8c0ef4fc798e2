// Where each activation buffer of one forward chunk (up to n_batch tokens) lives inside the one
// scratch allocation a session owns. plan() reports its total, session_begin() allocates it, and
// the forward pass carves it: one layout for all three, so they cannot disagree.
#pragma once

#include "hparams.hpp"

#include <worker/staged_x.hpp>

#include <cstddef>
#include <cstdint>

namespace wo::gpt {

struct ScratchLayout {
  // Byte offsets; a buffer a family does not use has size 0 and shares an offset.
  size_t x = 0;         // residual stream        f32 [n][n_embd]
  size_t h = 0;         // normed input           f32 [n][n_embd]
  size_t qkv = 0;       // gpt2 fused q|k|v       f32 [n][3 n_embd]
  size_t q = 0;         // gpt-oss                f32 [n][n_head * head_dim]
  size_t k = 0;         // gpt-oss                f32 [n][n_head_kv * head_dim]
  size_t v = 0;         // gpt-oss                f32 [n][n_head_kv * head_dim]
  size_t attn = 0;      // attention output       f32 [n][n_head * head_dim]
  size_t proj = 0;      // projection to n_embd   f32 [n][n_embd]
  size_t ffn = 0;       // gpt2 FFN hidden        f32 [n][n_ff]
  size_t router = 0;    // gpt-oss router logits  f32 [n][n_expert]
  size_t ids = 0;       // chosen experts         i32 [n][n_used]
  size_t weights = 0;   // their weights          f32 [n][n_used]
  size_t gate = 0;      // expert gate / act      f32 [n][n_used][n_ff]
  size_t up = 0;        // expert up              f32 [n][n_used][n_ff]
  size_t down = 0;      // expert outputs         f32 [n][n_used][n_embd]
  size_t tokens = 0;    // token ids              i32 [n]
  size_t positions = 0; // positions             i32 [n]
  size_t attn_ws = 0;   // attention split-K workspace (decode on long contexts), f32
  int64_t attn_ws_floats = 0;
  size_t route_counter = 0; // gpt-oss: moe_route's last-block counter, u32 (zeroed with attn_ws)
  size_t attn_staged = 0;   // gpt-oss: one token's attention output as staged int8 terms
                            // (worker/staged_x.hpp), for attn_output's codec to copy
  size_t total = 0;
};

// attn_ws_floats: the shared attention kernel's split-K workspace for n_batch queries
// (attention_workspace_floats(); 0 without CUDA).
inline ScratchLayout scratch_layout(const Hparams &hp, int64_t n_batch, int64_t attn_ws_floats) {
  constexpr size_t kAlign = 256; // every buffer starts on a 256-byte boundary (vector loads)
  ScratchLayout L;
  const size_t n = static_cast<size_t>(n_batch);
  auto take = [&](size_t bytes) {
    const size_t at = L.total;
    L.total += (bytes + kAlign - 1) / kAlign * kAlign;
    return at;
  };
  const size_t f = sizeof(float), E = static_cast<size_t>(hp.n_embd);
  L.x = take(n * E * f);
  L.h = take(n * E * f);
  L.attn = take(n * static_cast<size_t>(hp.q_dim()) * f);
  L.proj = take(n * E * f);
  if (hp.family == Family::Gpt2) {
    L.qkv = take(n * 3 * E * f);
    L.ffn = take(n * static_cast<size_t>(hp.n_ff) * f);
  } else {
    const size_t K = static_cast<size_t>(hp.n_expert_used);
    L.q = take(n * static_cast<size_t>(hp.q_dim()) * f);
    L.k = take(n * static_cast<size_t>(hp.kv_dim()) * f);
    L.v = take(n * static_cast<size_t>(hp.kv_dim()) * f);
    L.router = take(n * static_cast<size_t>(hp.n_expert) * f);
    L.ids = take(n * K * sizeof(int32_t));
    L.weights = take(n * K * f);
    L.gate = take(n * K * static_cast<size_t>(hp.n_ff) * f);
    L.up = take(n * K * static_cast<size_t>(hp.n_ff) * f);
    L.down = take(n * K * E * f);
  }
  L.tokens = take(n * sizeof(int32_t));
  L.positions = take(n * sizeof(int32_t));
  L.attn_ws_floats = attn_ws_floats;
  L.attn_ws = take(static_cast<size_t>(attn_ws_floats) * f);
  if (hp.family != Family::Gpt2) L.route_counter = take(sizeof(unsigned));
  if (hp.family != Family::Gpt2 && wo::staged::fits(hp.q_dim()))
    L.attn_staged = take(static_cast<size_t>(wo::staged::row_bytes(hp.q_dim())));
  return L;
}

// KV cache: per layer K then V, each [n_ctx][n_head_kv][head_dim] FP16.
inline uint64_t kv_bytes_per_token(const Hparams &hp) {
  return static_cast<uint64_t>(hp.n_layer) * 2u * static_cast<uint64_t>(hp.kv_dim()) * 2u;
}

} // namespace wo::gpt
