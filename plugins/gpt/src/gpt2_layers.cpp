// GPT-2: learned absolute positions; per layer LayerNorm -> fused QKV (+bias) -> causal MHA ->
// attn_output (+bias) residual -> LayerNorm -> up (+bias) -> GELU (tanh) -> down (+bias) residual.
#include "device_ops.hpp"

#include <cmath>

namespace wo::gpt {

void gpt2_embed(const Instance &inst, const DeviceOps &ops, const Buffers &b, int64_t m) {
  // x += position_embd[positions]: gathered through the host like any weight (it is F32 in
  // practice, but a quantized table would work the same way).
  ops.gather(inst.w.position_embd, b.positions, m, b.h);
  cuda_ok(kernels::add(b.x, b.x, b.h, m * inst.hp.n_embd, ops.stream()), "position add");
}

void gpt2_layers(const Instance &inst, const DeviceOps &ops, const Buffers &b, int64_t m, int64_t pos0) {
  const Hparams &hp = inst.hp;
  const int64_t E = hp.n_embd, F = hp.n_ff;
  const cudaStream_t s = ops.stream();
  kernels::AttentionParams ap;
  ap.n_tokens = m;
  ap.pos0 = pos0;
  ap.n_kv = pos0 + m;
  ap.n_heads = static_cast<int32_t>(hp.n_head);
  ap.n_kv_heads = static_cast<int32_t>(hp.n_head);
  ap.head_dim = static_cast<int32_t>(hp.head_dim);
  ap.scale = 1.0f / std::sqrt(static_cast<float>(hp.head_dim));
  ap.causal = true;
  ap.workspace = b.attn_ws; // lets decode split long contexts over several blocks
  ap.workspace_floats = b.attn_ws_floats;
  ap.q_stride = 3 * E;        // q is the first third of each fused [q;k;v] row
  ap.positions = b.positions; // device positions: pos0 / n_kv are bounds (decode_step replays)

  for (int64_t il = 0; il < hp.n_layer; ++il) {
    const LayerWeights &w = inst.w.layers[static_cast<size_t>(il)];
    cuda_ok(
        kernels::layer_norm(b.x, f32_data(w.attn_norm), f32_data(w.attn_norm_b), b.h, m, E, hp.norm_eps, s),
        "attn_norm", il);
    ops.linear(w.attn_qkv, b.h, b.qkv, m);
    cuda_ok(kernels::add_bias(b.qkv, f32_data(w.attn_qkv_b), m, 3 * E, s), "attn_qkv bias", il);
    cuda_ok(kernels::kv_write(b.qkv + E, b.qkv + 2 * E, k_cache(inst, il), v_cache(inst, il), pos0, m,
                              ap.n_kv_heads, ap.head_dim, s, 3 * E, b.positions),
            "kv_write", il);
    cuda_ok(kernels::attention(b.qkv, k_cache(inst, il), v_cache(inst, il), b.attn, ap, s), "attention", il);
    ops.linear(w.attn_output, b.attn, b.proj, m);
    cuda_ok(kernels::add_bias(b.proj, f32_data(w.attn_output_b), m, E, s), "attn_output bias", il);
    cuda_ok(kernels::add(b.x, b.x, b.proj, m * E, s), "attention residual", il);

    cuda_ok(kernels::layer_norm(b.x, f32_data(w.ffn_norm), f32_data(w.ffn_norm_b), b.h, m, E, hp.norm_eps, s),
            "ffn_norm", il);
    ops.linear(w.ffn_up, b.h, b.ffn, m);
    cuda_ok(kernels::add_bias(b.ffn, f32_data(w.ffn_up_b), m, F, s), "ffn_up bias", il);
    cuda_ok(kernels::gelu_tanh(b.ffn, b.ffn, m * F, s), "gelu", il);
    ops.linear(w.ffn_down, b.ffn, b.proj, m);
    cuda_ok(kernels::add_bias(b.proj, f32_data(w.ffn_down_b), m, E, s), "ffn_down bias", il);
    cuda_ok(kernels::add(b.x, b.x, b.proj, m * E, s), "ffn residual", il);
  }
}

} // namespace wo::gpt
