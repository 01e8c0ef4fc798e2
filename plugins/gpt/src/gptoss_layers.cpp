// GPT-OSS: per layer RMSNorm -> q/k/v (+bias) -> RoPE NEOX with YaRN -> GQA attention with
// per-head sinks, sliding window on even layers -> attn_output (+bias) residual ->
// post_attention_norm -> router (+bias) -> top-k, softmax over the chosen logits -> experts
// (MXFP4 through linear_id, biases per expert, clamped SwiGLU) -> weighted sum residual.
//
// Experts never copy weights: linear_id reads the chosen experts' rows in place. For prefill
// the quant codec groups tokens by expert on the device (grouped_gemm.cuh, one tensor-core GEMM
// launch per matrix); for decode it runs the k chosen GEMVs straight from
// the device ids (no host round trip unless the host is tracing the routing), gate, up and the
// clamped SwiGLU in one of them (linear_id_glu).
#include "device_ops.hpp"

#include <worker/ggml_types.hpp>
#include <worker/staged_x.hpp>

#include <cmath>

namespace wo::gpt {

namespace {

kernels::RopeParams rope_params(const Hparams &hp) {
  kernels::RopeParams rp;
  rp.n_dims = static_cast<int32_t>(hp.rope_n_dims);
  rp.mode = kernels::RopeMode::Neox;
  rp.freq_base = hp.rope_freq_base;
  rp.freq_scale = hp.rope_freq_scale;
  rp.ext_factor = hp.rope_ext_factor;
  rp.attn_factor = 1.0f; // the YaRN magnitude correction is applied inside rope (ggml semantics)
  rp.beta_fast = hp.rope_beta_fast;
  rp.beta_slow = hp.rope_beta_slow;
  rp.n_ctx_orig = static_cast<int32_t>(hp.rope_n_ctx_orig);
  return rp;
}

} // namespace

void gptoss_layers(Instance &inst, const DeviceOps &ops, const Buffers &b, int64_t m, int64_t pos0) {
  const Hparams &hp = inst.hp;
  const int64_t E = hp.n_embd, F = hp.n_ff, Q = hp.q_dim(), KV = hp.kv_dim();
  const int64_t K = hp.n_expert_used, X = hp.n_expert;
  const cudaStream_t s = ops.stream();
  const kernels::RopeParams rp = rope_params(hp);
  const int32_t H = static_cast<int32_t>(hp.n_head), Hkv = static_cast<int32_t>(hp.n_head_kv);
  const int32_t hd = static_cast<int32_t>(hp.head_dim);

  kernels::AttentionParams ap;
  ap.n_tokens = m;
  ap.pos0 = pos0;
  ap.n_kv = pos0 + m;
  ap.n_heads = H;
  ap.n_kv_heads = Hkv;
  ap.head_dim = hd;
  ap.scale = 1.0f / std::sqrt(static_cast<float>(hp.head_dim));
  ap.causal = true;
  ap.workspace = b.attn_ws; // lets decode split long contexts over several blocks
  ap.workspace_floats = b.attn_ws_floats;
  ap.positions = b.positions; // device positions: pos0 / n_kv are bounds (decode_step replays)

  // One token: the norms before q/k/v and the residual add after attn_output ride in the
  // projections' own passes where the host offers it (SDK 1.4 linear_fused; the same values, within
  // float rounding where the codec scales its dots by the norm's 1/rms).
  const bool fold = inst.fused && m == 1;
  // One token: attention stages its output for attn_output, whose codec copies it instead of
  // quantizing b.attn (SDK 1.9; WORKER_STAGED_X=0: not asked for).
  const bool staged_on = wo::staged::enabled();
  void *const attn_staged = fold && staged_on ? b.attn_staged : nullptr;
  ap.staged_out = attn_staged;
  for (int64_t il = 0; il < hp.n_layer; ++il) {
    const LayerWeights &w = inst.w.layers[static_cast<size_t>(il)];
    // ---- attention: q, k, v = W (rmsnorm(x) * attn_norm)
    const wo_tensor *qkv_w[3] = {w.attn_q, w.attn_k, w.attn_v};
    float *const qkv_y[3] = {b.q, b.k, b.v};
    if (!(fold &&
          ops.linear_fused(3, qkv_w, b.x, qkv_y, wo::fusion_norm(f32_data(w.attn_norm), hp.norm_eps)))) {
      cuda_ok(kernels::rms_norm(b.x, f32_data(w.attn_norm), b.h, m, E, hp.norm_eps, s), "attn_norm", il);
      ops.linear_multi(3, qkv_w, b.h, qkv_y, m);
    }
    ap.window = hp.layer_uses_window(il) ? hp.sliding_window : 0;
    ap.sinks = f32_data(w.attn_sinks);
    if (inst.fused) { // biases, RoPE, cache write, (one token) attention in one pass: same float ops
      kernels::QkvRopeCache a;
      a.q = b.q, a.k = b.k, a.v = b.v;
      a.q_bias = f32_data(w.attn_q_b), a.k_bias = f32_data(w.attn_k_b), a.v_bias = f32_data(w.attn_v_b);
      a.k_cache = k_cache(inst, il), a.v_cache = v_cache(inst, il);
      a.positions = b.positions;
      a.positions_settled = true; // written before the replay, or by fill_positions ahead of the gather
      a.n_heads = H, a.n_kv_heads = Hkv, a.head_dim = hd;
      cuda_ok(kernels::rope_kv_attention(a, rp, b.attn, ap, s), "q/k/v bias + rope + kv write + attention",
              il);
    } else {
      cuda_ok(kernels::add_bias(b.q, f32_data(w.attn_q_b), m, Q, s), "attn_q bias", il);
      cuda_ok(kernels::add_bias(b.k, f32_data(w.attn_k_b), m, KV, s), "attn_k bias", il);
      cuda_ok(kernels::add_bias(b.v, f32_data(w.attn_v_b), m, KV, s), "attn_v bias", il);
      cuda_ok(kernels::rope(b.q, m, H, hd, b.positions, rp, s), "rope q", il);
      cuda_ok(kernels::rope(b.k, m, Hkv, hd, b.positions, rp, s), "rope k", il);
      cuda_ok(kernels::kv_write(b.k, b.v, k_cache(inst, il), v_cache(inst, il), pos0, m, Hkv, hd, s, 0,
                                b.positions),
              "kv_write", il);
      cuda_ok(kernels::attention(b.q, k_cache(inst, il), v_cache(inst, il), b.attn, ap, s), "attention", il);
    }
    float *const x_out[1] = {b.x};
    const bool residual_folded =
        fold && ops.linear_fused(1, &w.attn_output, b.attn, x_out,
                                 wo::fusion_residual(f32_data(w.attn_output_b), attn_staged));
    if (!residual_folded) {
      ops.linear(w.attn_output, b.attn, b.proj, m);
      cuda_ok(kernels::add_bias(b.proj, f32_data(w.attn_output_b), m, E, s), "attn_output bias", il);
      if (inst.fused) { // x += proj; h = rmsnorm(x) * w in one kernel
        cuda_ok(
            kernels::add_rms_norm(b.x, b.proj, f32_data(w.post_attention_norm), b.h, m, E, hp.norm_eps, s),
            "attention residual + post_attention_norm", il);
      } else {
        cuda_ok(kernels::add(b.x, b.x, b.proj, m * E, s), "attention residual", il);
        cuda_ok(kernels::rms_norm(b.x, f32_data(w.post_attention_norm), b.h, m, E, hp.norm_eps, s),
                "post_attention_norm", il);
      }
    }

    // ---- mixture of experts
    const bool tracing = routing_trace_enabled(inst);
    // One token with the residual already in x: norm, router and top-k in one launch (the same
    // bits as the three steps below, kernels.hpp).
    kernels::MoeRoute route;
    route.x = b.x, route.norm_w = f32_data(w.post_attention_norm), route.eps = hp.norm_eps;
    route.w = f32_data(w.ffn_gate_inp), route.bias = f32_data(w.ffn_gate_inp_b);
    route.h = b.h, route.logits = b.router, route.ids = b.ids, route.weights = b.weights;
    route.counter = b.route_counter;
    route.n_embd = static_cast<int32_t>(E), route.n_expert = static_cast<int32_t>(X);
    route.k = static_cast<int32_t>(K);
    if (residual_folded && !tracing && w.ffn_gate_inp->ggml_type == ggml::F32 &&
        w.ffn_gate_inp->nb1 == static_cast<uint64_t>(E) * sizeof(float) && kernels::moe_route_fits(route)) {
      cuda_ok(kernels::moe_route(route, s), "post_attention_norm + router + top-k", il);
    } else {
      if (residual_folded)
        cuda_ok(kernels::rms_norm(b.x, f32_data(w.post_attention_norm), b.h, m, E, hp.norm_eps, s),
                "post_attention_norm", il);
      ops.linear(w.ffn_gate_inp, b.h, b.router, m);
      if (tracing) { // debug: the pre-bias top-k, in the buffers the real selection overwrites next
        cuda_ok(kernels::topk_softmax(b.router, b.ids, b.weights, m, X, static_cast<int32_t>(K), s),
                "router top-k (pre-bias trace)", il);
        record_routing(inst, RoutingTrace::PreBias, b.ids, m * K, il, s);
      }
      if (inst.fused) { // the biases ride in their consumers: the same float adds, 4 launches fewer
        cuda_ok(kernels::topk_softmax(b.router, b.ids, b.weights, m, X, static_cast<int32_t>(K), s,
                                      f32_data(w.ffn_gate_inp_b)),
                "router bias + top-k", il);
      } else {
        cuda_ok(kernels::add_bias(b.router, f32_data(w.ffn_gate_inp_b), m, X, s), "router bias", il);
        cuda_ok(kernels::topk_softmax(b.router, b.ids, b.weights, m, X, static_cast<int32_t>(K), s),
                "router top-k", il);
      }
      if (tracing) record_routing(inst, RoutingTrace::Chosen, b.ids, m * K, il, s);
    }
    // One token: gate, up, their biases and the clamped SwiGLU in one codec pass (SDK 1.7), the
    // same bits as the steps below.
    const bool one_pass =
        inst.fused && m == 1 &&
        ops.linear_id_glu(w.ffn_gate_exps, w.ffn_up_exps, b.h, b.gate, m, b.ids, K,
                          wo::expert_glu(WO_GLU_CLAMPED, kOaiSwigluAlpha, kOaiSwigluLimit,
                                         f32_data(w.ffn_gate_exps_b), f32_data(w.ffn_up_exps_b)));
    if (!one_pass) {
      ops.linear_id(w.ffn_gate_exps, b.h, 1, b.gate, m, b.ids, K);
      // The ids are settled for up and down (the gate launch came between): their weights start early.
      ops.linear_id(w.ffn_up_exps, b.h, 1, b.up, m, b.ids, K, /*settled=*/true);
      kernels::IndexedBias expert_b; // empty: no bias in the SwiGLU
      if (inst.fused) {
        expert_b.gate = f32_data(w.ffn_gate_exps_b);
        expert_b.up = f32_data(w.ffn_up_exps_b);
        expert_b.ids = b.ids;
        expert_b.settled = true; // written by the router, three launches back
      } else {
        cuda_ok(kernels::add_bias_indexed(b.gate, f32_data(w.ffn_gate_exps_b), b.ids, m * K, F, s),
                "expert gate bias", il);
        cuda_ok(kernels::add_bias_indexed(b.up, f32_data(w.ffn_up_exps_b), b.ids, m * K, F, s),
                "expert up bias", il);
      }
      cuda_ok(kernels::swiglu_oai(b.gate, b.up, b.gate, m * K, F, kOaiSwigluAlpha, kOaiSwigluLimit, s, 0,
                                  expert_b),
              "expert clamped swiglu", il);
    }
    // The ids are settled for down (the router ran two or more launches back).
    ops.linear_id(w.ffn_down_exps, b.gate, K, b.down, m, b.ids, K, /*settled=*/true);
    if (!inst.fused)
      cuda_ok(kernels::add_bias_indexed(b.down, f32_data(w.ffn_down_exps_b), b.ids, m * K, E, s),
              "expert down bias", il);
    cuda_ok(kernels::weighted_sum_slots(b.down, b.weights, b.x, m, static_cast<int32_t>(K), E,
                                        /*accumulate=*/true, s,
                                        inst.fused ? f32_data(w.ffn_down_exps_b) : nullptr,
                                        inst.fused ? b.ids : nullptr, /*settled=*/true),
            "expert weighted sum", il);
  }
}

} // namespace wo::gpt
