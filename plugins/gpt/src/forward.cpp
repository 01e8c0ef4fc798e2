// The device forward driver shared by both families (arguments are checked in instance.cpp):
// chunking by n_batch, token and position upload, and the LM head. The layer stacks live in gpt2_layers.cpp /
// gptoss_layers.cpp.
#include "device_ops.hpp"

#include <algorithm>
#include <string>

namespace wo::gpt {

void fail_cuda(cudaError_t e, const char *step, int64_t layer) {
  std::string where = step;
  if (layer >= 0) where += " (layer " + std::to_string(layer) + ")";
  throw Error(WO_ERR_CUDA, "forward: " + where + ": " + cudaGetErrorName(e) + ": " + cudaGetErrorString(e));
}

void fail_host(wo_status s, const char *service, const wo_tensor *w) {
  throw Error(s == WO_OK ? WO_ERR_INTERNAL : s, std::string("forward: host ") + service + " on tensor '" +
                                                    (w && w->name ? w->name : "?") +
                                                    "' failed: " + status_name(s));
}

int64_t attention_workspace_floats(const Hparams &hp, int64_t n_batch) {
  return kernels::attention_workspace_floats(n_batch, static_cast<int32_t>(hp.n_head),
                                             static_cast<int32_t>(hp.head_dim));
}

// The attention workspace and moe_route's counter must start at zero (kernels.hpp); zeroed on
// the session's first forward on the device (session_begin also runs on hosts without one). Were
// that first call a captured decode step, the graph would zero them on every replay, where they
// are zero already: correct either way.
namespace {
void zero_counters_once(Instance &inst, cudaStream_t stream) {
  Session &s = inst.session;
  if (s.counters_zeroed) return;
  auto *base = static_cast<unsigned char *>(s.scratch);
  cudaError_t e = kernels::attention_workspace_clear(reinterpret_cast<float *>(base + s.layout.attn_ws),
                                                     s.layout.attn_ws_floats, stream);
  if (e != cudaSuccess) fail_cuda(e, "zeroing the attention workspace", -1);
  if (inst.hp.family != Family::Gpt2) {
    e = cudaMemsetAsync(base + s.layout.route_counter, 0, sizeof(unsigned), stream);
    if (e != cudaSuccess) fail_cuda(e, "zeroing the routing counter", -1);
  }
  s.counters_zeroed = true;
}
} // namespace

Buffers carve(const Session &s) {
  auto *base = static_cast<unsigned char *>(s.scratch);
  const ScratchLayout &L = s.layout;
  auto f = [&](size_t off) { return reinterpret_cast<float *>(base + off); };
  auto i = [&](size_t off) { return reinterpret_cast<int32_t *>(base + off); };
  Buffers b{
      f(L.x),         f(L.h),       f(L.qkv),         f(L.q),
      f(L.k),         f(L.v),       f(L.attn),        f(L.proj),
      f(L.ffn),       f(L.router),  f(L.weights),     f(L.gate),
      f(L.up),        f(L.down),    i(L.ids),         i(L.tokens),
      i(L.positions), f(L.attn_ws), L.attn_ws_floats, reinterpret_cast<unsigned *>(base + L.route_counter)};
  b.attn_staged = L.attn_staged ? base + L.attn_staged : nullptr;
  return b;
}

__half *k_cache(const Instance &inst, int64_t il) {
  const size_t per = static_cast<size_t>(inst.session.n_ctx) * static_cast<size_t>(inst.hp.kv_dim());
  return static_cast<__half *>(inst.session.kv) + static_cast<size_t>(2 * il) * per;
}
__half *v_cache(const Instance &inst, int64_t il) {
  return k_cache(inst, il) + static_cast<size_t>(inst.session.n_ctx) * static_cast<size_t>(inst.hp.kv_dim());
}

namespace {

// Final norm of `rows` rows of x starting at row r0, then the LM head into logits.
void head(const Instance &inst, const DeviceOps &ops, const Buffers &b, int64_t r0, int64_t rows,
          float *logits) {
  const Hparams &hp = inst.hp;
  const float *x = b.x + r0 * hp.n_embd;
  if (hp.family == Family::Gpt2)
    cuda_ok(kernels::layer_norm(x, f32_data(inst.w.output_norm), f32_data(inst.w.output_norm_b), b.h, rows,
                                hp.n_embd, hp.norm_eps, ops.stream()),
            "output_norm");
  else {
    float *const out[1] = {logits}; // one row: the norm in the LM head's own pass where the host offers it
    if (rows == 1 && inst.fused &&
        ops.linear_fused(1, &inst.w.output, x, out,
                         wo::fusion_norm(f32_data(inst.w.output_norm), hp.norm_eps)))
      return;
    cuda_ok(
        kernels::rms_norm(x, f32_data(inst.w.output_norm), b.h, rows, hp.n_embd, hp.norm_eps, ops.stream()),
        "output_norm");
  }
  ops.linear(inst.w.output, b.h, logits, rows);
}

} // namespace

void forward_device(Instance &inst, const int32_t *tokens, int64_t n, int64_t pos, float *logits,
                    uint32_t flags) {
  const DeviceOps ops(inst.host);
  zero_counters_once(inst, ops.stream());
  const Buffers b = carve(inst.session);
  const bool all = (flags & WO_FWD_LOGITS_ALL) != 0;
  const bool on_device = (flags & WO_FWD_TOKENS_ON_DEVICE) != 0;
  const bool tracing = routing_trace_enabled(inst);
  if (tracing) begin_routing_trace(inst);
  for (int64_t c = 0; c < n; c += inst.n_batch) {
    const int64_t m = std::min(inst.n_batch, n - c);
    cuda_ok(cudaMemcpyAsync(b.tokens, tokens + c, static_cast<size_t>(m) * sizeof(int32_t),
                            on_device ? cudaMemcpyDeviceToDevice : cudaMemcpyHostToDevice, ops.stream()),
            "token upload");
    cuda_ok(kernels::fill_positions(b.positions, m, static_cast<int32_t>(pos + c), ops.stream()),
            "positions");
    ops.gather(inst.w.token_embd, b.tokens, m, b.x);
    if (inst.hp.family == Family::Gpt2) {
      gpt2_embed(inst, ops, b, m);
      gpt2_layers(inst, ops, b, m, pos + c);
    } else {
      gptoss_layers(inst, ops, b, m, pos + c);
    }
    if (all)
      head(inst, ops, b, 0, m, logits + c * inst.hp.n_vocab);
    else if (c + m == n)
      head(inst, ops, b, m - 1, 1, logits);
  }
  if (tracing) end_routing_trace(inst);
}

void decode_step_device(Instance &inst, const int32_t *token, const int32_t *pos, int64_t pos_bound,
                        float *logits) {
  if (routing_trace_enabled(inst)) // the trace copies expert ids to the host: not capturable
    throw Error(WO_ERR_INVALID_ARGUMENT, "decode_step: unavailable while the host records the routing trace; "
                                         "use forward");
  const DeviceOps ops(inst.host);
  zero_counters_once(inst, ops.stream());
  Buffers b = carve(inst.session);
  // The layers only read tokens and positions: the caller's device values stand in for the
  // scratch copies forward makes, so nothing here depends on the position on the host.
  b.tokens = const_cast<int32_t *>(token);
  b.positions = const_cast<int32_t *>(pos);
  ops.gather(inst.w.token_embd, b.tokens, 1, b.x);
  if (inst.hp.family == Family::Gpt2) {
    gpt2_embed(inst, ops, b, 1);
    gpt2_layers(inst, ops, b, 1, pos_bound - 1);
  } else {
    gptoss_layers(inst, ops, b, 1, pos_bound - 1);
  }
  head(inst, ops, b, 0, 1, logits);
}

} // namespace wo::gpt
