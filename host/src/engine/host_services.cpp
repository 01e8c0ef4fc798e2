// The wo_host the engine hands to every plugin: C callbacks over Engine::Impl. Nothing thrown
// inside may cross the C boundary: every callback catches and returns a status.
#include "engine/engine_impl.hpp"
#include "engine/linear_id_fallback.hpp"

#include "device/cuda_check.hpp"
#include "gguf/host_meta.hpp"
#include "observe/log.hpp"

#include <worker/ggml_types.hpp>
#include <worker/sdk.hpp>

#include <cuda_runtime_api.h>

namespace wo::engine {

namespace {

Engine::Impl &impl(void *ctx) { return *static_cast<Engine::Impl *>(ctx); }

void host_log(void *, wo_log_level level, const char *msg) {
  const wo::observe::Level lv = level <= WO_LOG_DEBUG  ? wo::observe::Level::debug
                                : level == WO_LOG_INFO ? wo::observe::Level::info
                                : level == WO_LOG_WARN ? wo::observe::Level::warn
                                                       : wo::observe::Level::error;
  wo::observe::event(lv, "plugin_log", {{"message", std::string(msg ? msg : "")}});
}

wo_status host_meta_get(void *ctx, const char *key, wo_value *out) {
  return wo::gguf::meta_get(*impl(ctx).file, key, out);
}

wo_status host_meta_array_str(void *ctx, const char *key, uint64_t i, wo_str *out) {
  return wo::gguf::meta_array_str(*impl(ctx).file, key, i, out);
}

const wo_tensor *host_tensor(void *ctx, const char *name) { return impl(ctx).weights->find(name); }

wo_status host_vram_alloc(void *ctx, size_t bytes, wo_vram_kind kind, void **out) {
  auto &e = impl(ctx);
  wo_status st = e.vram.alloc(bytes, kind, out, "plugin");
  if (st != WO_OK)
    wo::observe::warn("vram_alloc_failed", {{"bytes", uint64_t{bytes}},
                                            {"kind", std::string(wo::device::vram_kind_name(kind))},
                                            {"error", e.vram.last_error()}});
  return st;
}

void host_vram_free(void *ctx, void *ptr) {
  if (!impl(ctx).vram.free(ptr))
    wo::observe::warn("vram_free_unknown_pointer", {{"detail", std::string("a plugin freed a pointer the "
                                                                           "host did not allocate")}});
}

// Grow-only: plugins ask every forward, so reallocating only when a call needs more keeps the
// steady state allocation-free (and CUDA-graph friendly).
wo_status host_scratch(void *ctx, size_t bytes, void **out) {
  auto &e = impl(ctx);
  if (!out) return WO_ERR_INVALID_ARGUMENT;
  if (bytes <= e.scratch_bytes && e.scratch) {
    *out = e.scratch;
    return WO_OK;
  }
  const size_t want = static_cast<size_t>(align_up(bytes, 1u << 20));
  if (e.scratch) {
    // cudaFree would synchronize anyway; do it explicitly so queued kernels finish with the old one.
    cudaStreamSynchronize(e.dev->stream());
    e.vram.free(e.scratch);
    e.scratch = nullptr;
    e.scratch_bytes = 0;
  }
  wo_status st = e.vram.alloc(want, WO_VRAM_SCRATCH, &e.scratch, "scratch");
  if (st != WO_OK) {
    *out = nullptr;
    wo::observe::warn(
        "vram_alloc_failed",
        {{"bytes", uint64_t{want}}, {"kind", std::string("scratch")}, {"error", e.vram.last_error()}});
    return st;
  }
  e.scratch_bytes = want;
  *out = e.scratch;
  return WO_OK;
}

// Run a codec call; keep the failure text (exception or the codec's last_error) so the engine
// can add it to the architecture's error message.
template <class F> wo_status codec_call(Engine::Impl &e, const QuantRoute *&q, F &&f) {
  wo_status inner = WO_OK;
  std::string err;
  const wo_status thrown = wo::guard(err, [&] { inner = f(); });
  if (thrown != WO_OK) {
    e.last_codec_error = err;
    return thrown;
  }
  if (inner != WO_OK && q && q->vt->last_error) {
    const char *m = q->vt->last_error();
    e.last_codec_error = q->plugin + ": " + (m ? m : "");
  }
  return inner;
}

wo_status host_linear(void *ctx, const wo_tensor *w, const void *x, wo_dtype x_type, void *y, wo_dtype y_type,
                      int64_t n_tokens) {
  auto &e = impl(ctx);
  const QuantRoute *q = nullptr;
  return codec_call(e, q, [&]() -> wo_status {
    q = &e.route(w, "linear");
    return q->vt->linear(&e.host, w, x, x_type, y, y_type, n_tokens);
  });
}

wo_status host_gather_rows(void *ctx, const wo_tensor *w, const int32_t *ids, int64_t n, void *out,
                           wo_dtype out_type) {
  auto &e = impl(ctx);
  const QuantRoute *q = nullptr;
  return codec_call(e, q, [&]() -> wo_status {
    q = &e.route(w, "gather_rows");
    return q->vt->gather_rows(&e.host, w, ids, n, out, out_type);
  });
}

// linear_id and (1.6) linear_id_settled through the weight's codec: its settled entry when the
// caller promised settled ids and the codec has one, else its linear_id (the same results), else
// the host's per-expert fallback.
wo_status route_linear_id(void *ctx, bool settled, const wo_tensor *w, const void *x, wo_dtype x_type,
                          int64_t x_slots, void *y, wo_dtype y_type, int64_t n_tokens, const int32_t *ids,
                          int64_t n_slots) {
  auto &e = impl(ctx);
  const QuantRoute *q = nullptr;
  return codec_call(e, q, [&]() -> wo_status {
    q = &e.route(w, settled ? "linear_id_settled" : "linear_id");
    const wo_quant_v1 &vt = *q->vt;
    if (settled && WO_HAS_FIELD(wo_quant_v1, vt.struct_size, linear_id_settled) && vt.linear_id_settled)
      return vt.linear_id_settled(&e.host, w, x, x_type, x_slots, y, y_type, n_tokens, ids, n_slots);
    if (WO_HAS_FIELD(wo_quant_v1, vt.struct_size, linear_id) && vt.linear_id)
      return vt.linear_id(&e.host, w, x, x_type, x_slots, y, y_type, n_tokens, ids, n_slots);
    return e.linear_id_fallback(*q, w, x, x_type, x_slots, y, y_type, n_tokens, ids, n_slots);
  });
}

wo_status host_linear_id(void *ctx, const wo_tensor *w, const void *x, wo_dtype x_type, int64_t x_slots,
                         void *y, wo_dtype y_type, int64_t n_tokens, const int32_t *ids, int64_t n_slots) {
  return route_linear_id(ctx, false, w, x, x_type, x_slots, y, y_type, n_tokens, ids, n_slots);
}

wo_status host_linear_id_settled(void *ctx, const wo_tensor *w, const void *x, wo_dtype x_type,
                                 int64_t x_slots, void *y, wo_dtype y_type, int64_t n_tokens,
                                 const int32_t *ids, int64_t n_slots) {
  return route_linear_id(ctx, true, w, x, x_type, x_slots, y, y_type, n_tokens, ids, n_slots);
}

// linear_multi's and linear_fused's weight list: 1..WO_LINEAR_MULTI_MAX weights, none NULL.
wo_status check_weight_list(Engine::Impl &e, const char *op, int32_t n, const wo_tensor *const *w,
                            void *const *y) {
  if (n < 1 || n > WO_LINEAR_MULTI_MAX || !w || !y) {
    e.last_codec_error = std::string(op) + ": expected 1.." + std::to_string(WO_LINEAR_MULTI_MAX) +
                         " weights and non-NULL arrays, found n=" + std::to_string(n);
    return WO_ERR_INVALID_ARGUMENT;
  }
  for (int32_t i = 0; i < n; ++i)
    if (!w[i]) {
      e.last_codec_error = std::string(op) + ": weight " + std::to_string(i) + " is NULL";
      return WO_ERR_INVALID_ARGUMENT;
    }
  return WO_OK;
}

// One codec launch when every weight routes to the same codec with the same type and the codec
// takes them (unless WORKER_LINEAR_MULTI=0); otherwise, or when the codec answers
// WO_ERR_UNSUPPORTED, one linear call per weight.
wo_status host_linear_multi(void *ctx, int32_t n, const wo_tensor *const *w, const void *x, wo_dtype x_type,
                            void *const *y, wo_dtype y_type, int64_t n_tokens) {
  auto &e = impl(ctx);
  if (const wo_status st = check_weight_list(e, "linear_multi", n, w, y); st != WO_OK) return st;
  if (e.opts.linear_multi && n > 1) {
    const QuantRoute *q = nullptr;
    bool one_type = true;
    for (int32_t i = 1; i < n; ++i)
      one_type = one_type && w[i]->ggml_type == w[0]->ggml_type;
    const wo_status st = codec_call(e, q, [&]() -> wo_status {
      q = &e.route(w[0], "linear_multi");
      if (!one_type || !WO_HAS_FIELD(wo_quant_v1, q->vt->struct_size, linear_multi) || !q->vt->linear_multi)
        return WO_ERR_UNSUPPORTED;
      return q->vt->linear_multi(&e.host, n, w, x, x_type, y, y_type, n_tokens);
    });
    if (st != WO_ERR_UNSUPPORTED) return st;
  }
  for (int32_t i = 0; i < n; ++i)
    if (const wo_status st = host_linear(ctx, w[i], x, x_type, y[i], y_type, n_tokens); st != WO_OK)
      return st;
  return WO_OK;
}

// The codec's single pass when gate and up share a type (one codec) and it has one; otherwise
// WO_ERR_UNSUPPORTED with nothing enqueued (the architecture then runs its own linears + swiglu).
wo_status host_linear_swiglu(void *ctx, const wo_tensor *gate, const wo_tensor *up, const void *x,
                             wo_dtype x_type, void *y, wo_dtype y_type, int64_t n_tokens) {
  auto &e = impl(ctx);
  if (!gate || !up || !x || !y) {
    e.last_codec_error = "linear_swiglu: expected gate, up, x and y, found a NULL";
    return WO_ERR_INVALID_ARGUMENT;
  }
  if (!e.opts.linear_swiglu || gate->ggml_type != up->ggml_type) return WO_ERR_UNSUPPORTED;
  const QuantRoute *q = nullptr;
  return codec_call(e, q, [&]() -> wo_status {
    q = &e.route(gate, "linear_swiglu");
    if (!WO_HAS_FIELD(wo_quant_v1, q->vt->struct_size, linear_swiglu) || !q->vt->linear_swiglu)
      return WO_ERR_UNSUPPORTED;
    return q->vt->linear_swiglu(&e.host, gate, up, x, x_type, y, y_type, n_tokens);
  });
}

// The codec's single pass for the experts' gate, up and activation (1.7) when gate and up share a
// type (one codec), the codec has one and linear_id_glu is on; otherwise WO_ERR_UNSUPPORTED with
// nothing enqueued (the architecture then runs two linear_id calls and its activation kernel).
wo_status host_linear_id_glu(void *ctx, const wo_tensor *gate, const wo_tensor *up, const void *x,
                             wo_dtype x_type, void *y, wo_dtype y_type, int64_t n_tokens, const int32_t *ids,
                             int64_t n_slots, const wo_expert_glu *glu) {
  auto &e = impl(ctx);
  if (!gate || !up || !x || !y || !ids || !glu) {
    e.last_codec_error = "linear_id_glu: expected gate, up, x, y, ids and glu, found a NULL";
    return WO_ERR_INVALID_ARGUMENT;
  }
  if (!e.opts.linear_id_glu || gate->ggml_type != up->ggml_type) return WO_ERR_UNSUPPORTED;
  const QuantRoute *q = nullptr;
  return codec_call(e, q, [&]() -> wo_status {
    q = &e.route(gate, "linear_id_glu");
    if (!WO_HAS_FIELD(wo_quant_v1, q->vt->struct_size, linear_id_glu) || !q->vt->linear_id_glu)
      return WO_ERR_UNSUPPORTED;
    return q->vt->linear_id_glu(&e.host, gate, up, x, x_type, y, y_type, n_tokens, ids, n_slots, glu);
  });
}

// The codec's fused pass when every weight routes to one codec with one type and it has one, and the
// switches allow it (linear_fused; for several weights linear_multi; for SwiGLU linear_swiglu);
// a stack of several types too when they all route to one codec built against SDK 1.8 or later
// (mixed_stack); otherwise WO_ERR_UNSUPPORTED with nothing enqueued (the architecture runs the
// separate steps).
wo_status host_linear_fused(void *ctx, int32_t op, int32_t n, const wo_tensor *const *w, const void *x,
                            wo_dtype x_type, void *const *y, wo_dtype y_type, int64_t n_tokens,
                            const wo_linear_fusion *fusion) {
  auto &e = impl(ctx);
  if (const wo_status st = check_weight_list(e, "linear_fused", n, w, y); st != WO_OK) return st;
  if (!e.opts.linear_fused || (op == WO_LINEAR_SWIGLU && !e.opts.linear_swiglu) ||
      (op == WO_LINEAR_GLU && !e.opts.linear_glu) || (op == WO_LINEAR_STACK && n > 1 && !e.opts.linear_multi))
    return WO_ERR_UNSUPPORTED;
  if (op == WO_LINEAR_GLU &&
      !(fusion && WO_HAS_FIELD(wo_linear_fusion, fusion->struct_size, glu_up) && fusion->glu_up && n == 1)) {
    e.last_codec_error =
        "linear_fused: op WO_LINEAR_GLU expects 1 weight and a fusion with glu_up (SDK 1.5), "
        "found n=" +
        std::to_string(n) + (fusion ? "" : " and no fusion");
    return WO_ERR_INVALID_ARGUMENT;
  }
  bool mixed = false;
  for (int32_t i = 1; i < n; ++i)
    mixed = mixed || w[i]->ggml_type != w[0]->ggml_type;
  if (mixed && (op != WO_LINEAR_STACK || !e.opts.mixed_stack)) return WO_ERR_UNSUPPORTED;
  const QuantRoute *q = nullptr;
  return codec_call(e, q, [&]() -> wo_status {
    q = &e.route(w[0], "linear_fused");
    if (mixed) { // a 1.7 codec may take every weight for w[0]'s type: 1.8 promises it does not
      if (q->abi_minor < 8) return WO_ERR_UNSUPPORTED;
      for (int32_t i = 1; i < n; ++i)
        if (e.route(w[i], "linear_fused").vt != q->vt) return WO_ERR_UNSUPPORTED;
    }
    if (!WO_HAS_FIELD(wo_quant_v1, q->vt->struct_size, linear_fused) || !q->vt->linear_fused)
      return WO_ERR_UNSUPPORTED;
    if (op == WO_LINEAR_GLU && q->abi_minor < 5) return WO_ERR_UNSUPPORTED; // a 1.4 codec knows no GLU
    // A codec before 1.9 would ignore y_staged and leave the staged row unwritten; x_staged is a hint.
    if (fusion && WO_HAS_FIELD(wo_linear_fusion, fusion->struct_size, y_staged) && fusion->y_staged &&
        q->abi_minor < 9)
      return WO_ERR_UNSUPPORTED;
    return q->vt->linear_fused(&e.host, op, n, w, x, x_type, y, y_type, n_tokens, fusion);
  });
}

void host_trace(void *ctx, const char *name, const void *data, size_t bytes) {
  auto &e = impl(ctx);
  if (!e.opts.trace || !name) return;
  const auto *p = static_cast<const uint8_t *>(data);
  std::lock_guard<std::mutex> lock(e.trace_mu);
  e.traces[name].emplace_back(p, p + (data ? bytes : 0));
}

} // namespace

const QuantRoute &Engine::Impl::route(const wo_tensor *w, const char *op) const {
  if (!w) throw Error(WO_ERR_INVALID_ARGUMENT, std::string(op) + ": weight tensor is NULL");
  auto it = quant_by_type.find(w->ggml_type);
  if (it == quant_by_type.end()) {
    const auto *ti = wo::ggml::type_info(w->ggml_type);
    throw Error(WO_ERR_UNSUPPORTED, std::string(op) + " on tensor '" + (w->name ? w->name : "?") +
                                        "': no quant codec serves type " + (ti ? ti->name : "?") + " (" +
                                        std::to_string(w->ggml_type) + ")");
  }
  return it->second;
}

// The quant plugin has no linear_id: see linear_id_fallback.hpp.
wo_status Engine::Impl::linear_id_fallback(const QuantRoute &q, const wo_tensor *w, const void *x,
                                           wo_dtype x_type, int64_t x_slots, void *y, wo_dtype y_type,
                                           int64_t n_tokens, const int32_t *ids, int64_t n_slots) {
  return linear_id_by_rows(&host, q.vt, dev->stream(), w, x, x_type, x_slots, y, y_type, n_tokens, ids,
                           n_slots);
}

void Engine::Impl::fill_host() {
  host = wo_host{};
  host.struct_size = sizeof(wo_host);
  host.abi_major = WORKER_SDK_ABI_MAJOR;
  host.abi_minor = WORKER_SDK_ABI_MINOR;
  host.ctx = this;
  host.log = host_log;
  host.meta_get = host_meta_get;
  host.meta_array_str = host_meta_array_str;
  host.tensor = host_tensor;
  host.vram_alloc = host_vram_alloc;
  host.vram_free = host_vram_free;
  host.cuda_stream = dev ? static_cast<void *>(dev->stream()) : nullptr;
  host.cublas_handle = dev ? static_cast<void *>(dev->cublas()) : nullptr;
  host.scratch = host_scratch;
  host.linear = host_linear;
  host.gather_rows = host_gather_rows;
  host.linear_id = host_linear_id;
  host.trace_enabled = opts.trace ? 1 : 0;
  host.trace = host_trace;
  host.linear_multi = host_linear_multi;
  host.linear_swiglu = host_linear_swiglu;
  host.linear_fused = host_linear_fused;
  host.linear_id_settled = host_linear_id_settled;
  host.linear_id_glu = host_linear_id_glu;
}

} // namespace wo::engine
