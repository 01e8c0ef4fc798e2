// Thin checked wrappers over the host's weight math and the shared kernels' status codes, so the
// forward pass reads as a list of steps. Error text is built only on failure: a decode step
// allocates nothing on the host.
#pragma once

#include "instance.hpp"

#include <worker/kernels.hpp>

#include <cuda_runtime.h>

namespace wo::gpt {

[[noreturn]] void fail_cuda(cudaError_t e, const char *step, int64_t layer);
[[noreturn]] void fail_host(wo_status s, const char *service, const wo_tensor *w);

inline void cuda_ok(cudaError_t e, const char *step, int64_t layer = -1) {
  if (e != cudaSuccess) fail_cuda(e, step, layer);
}

class DeviceOps {
public:
  explicit DeviceOps(const wo_host *h) : h_(h), stream_(static_cast<cudaStream_t>(h->cuda_stream)) {}
  cudaStream_t stream() const { return stream_; }

  // y[t] = W x[t], f32 in and out.
  void linear(const wo_tensor *w, const float *x, float *y, int64_t n) const {
    if (!h_->linear) fail_host(WO_ERR_UNSUPPORTED, "linear", w);
    const wo_status s = h_->linear(h_->ctx, w, x, WO_DTYPE_F32, y, WO_DTYPE_F32, n);
    if (s != WO_OK) fail_host(s, "linear", w);
  }
  // y_i[t] = W_i x[t] for the n weights (one launch where the codec can; see wo::linear_multi).
  void linear_multi(int32_t n, const wo_tensor *const *w, const float *x, float *const *y, int64_t m) const {
    const wo_status s =
        wo::linear_multi(h_, n, w, x, WO_DTYPE_F32, reinterpret_cast<void *const *>(y), WO_DTYPE_F32, m);
    if (s != WO_OK) fail_host(s, "linear_multi", w[0]);
  }
  // One token's projection with its norm or residual add folded in (SDK 1.4, see wo::linear_fused);
  // false, with nothing enqueued, when the host declines: the caller runs the steps apart.
  bool linear_fused(int32_t n, const wo_tensor *const *w, const float *x, float *const *y,
                    const wo_linear_fusion &f) const {
    const wo_status s = wo::linear_fused(h_, WO_LINEAR_STACK, n, w, x, WO_DTYPE_F32,
                                         reinterpret_cast<void *const *>(y), WO_DTYPE_F32, 1, &f);
    if (s == WO_ERR_UNSUPPORTED) return false;
    if (s != WO_OK) fail_host(s, "linear_fused", w[0]);
    return true;
  }
  // Experts: y[t][k] = W[ids[t][k]] x[t][x_slots == 1 ? 0 : k]. settled: the ids were written two
  // or more launches back, so the codec may start on the experts' weights early (SDK 1.6).
  void linear_id(const wo_tensor *w, const float *x, int64_t x_slots, float *y, int64_t n, const int32_t *ids,
                 int64_t n_slots, bool settled = false) const {
    if (!h_->linear_id) fail_host(WO_ERR_UNSUPPORTED, "linear_id", w);
    const wo_status s =
        settled ? wo::linear_id_settled(h_, w, x, WO_DTYPE_F32, x_slots, y, WO_DTYPE_F32, n, ids, n_slots)
                : h_->linear_id(h_->ctx, w, x, WO_DTYPE_F32, x_slots, y, WO_DTYPE_F32, n, ids, n_slots);
    if (s != WO_OK) fail_host(s, settled ? "linear_id_settled" : "linear_id", w);
  }
  // The experts' gate, up and activation in one pass (SDK 1.7, see wo::linear_id_glu): y[t][k] =
  // act(gate[e] x[t] + gate_bias[e], up[e] x[t] + up_bias[e]); false, with nothing enqueued, when
  // the host declines: the caller runs the two linear_id calls and its activation kernel.
  bool linear_id_glu(const wo_tensor *gate, const wo_tensor *up, const float *x, float *y, int64_t n,
                     const int32_t *ids, int64_t n_slots, const wo_expert_glu &glu) const {
    const wo_status s =
        wo::linear_id_glu(h_, gate, up, x, WO_DTYPE_F32, y, WO_DTYPE_F32, n, ids, n_slots, glu);
    if (s == WO_ERR_UNSUPPORTED) return false;
    if (s != WO_OK) fail_host(s, "linear_id_glu", gate);
    return true;
  }
  // out[i] = W[ids[i]] as f32 (ids on the device).
  void gather(const wo_tensor *w, const int32_t *ids, int64_t n, float *out) const {
    if (!h_->gather_rows) fail_host(WO_ERR_UNSUPPORTED, "gather_rows", w);
    const wo_status s = h_->gather_rows(h_->ctx, w, ids, n, out, WO_DTYPE_F32);
    if (s != WO_OK) fail_host(s, "gather_rows", w);
  }

private:
  const wo_host *h_;
  cudaStream_t stream_;
};

// Device buffers of the current chunk, carved from the session scratch.
struct Buffers {
  float *x, *h, *qkv, *q, *k, *v, *attn, *proj, *ffn, *router, *weights, *gate, *up, *down;
  int32_t *ids, *tokens, *positions;
  float *attn_ws;
  int64_t attn_ws_floats;
  unsigned *route_counter;     // gpt-oss moe_route
  void *attn_staged = nullptr; // gpt-oss: attention's staged output (nullptr where the layout has none)
};
Buffers carve(const Session &s);

// One layer stack over a chunk of m tokens at positions pos0.. (already embedded into b.x).
void gpt2_embed(const Instance &inst, const DeviceOps &ops, const Buffers &b, int64_t m);
void gpt2_layers(const Instance &inst, const DeviceOps &ops, const Buffers &b, int64_t m, int64_t pos0);
void gptoss_layers(Instance &inst, const DeviceOps &ops, const Buffers &b, int64_t m, int64_t pos0);

// Routing trace (gpt-oss, debug mode): one blob per layer and forward call, whatever the chunking.
bool routing_trace_enabled(const Instance &inst);
void begin_routing_trace(Instance &inst);
enum class RoutingTrace { Chosen, PreBias };
void record_routing(Instance &inst, RoutingTrace which, const int32_t *ids, int64_t count, int64_t il,
                    cudaStream_t stream);
void end_routing_trace(Instance &inst);

// KV cache of layer il.
__half *k_cache(const Instance &inst, int64_t il);
__half *v_cache(const Instance &inst, int64_t il);

} // namespace wo::gpt
