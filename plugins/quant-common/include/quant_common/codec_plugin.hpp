// The wo_quant_v1 vtable of a codec plugin, written once for both codecs. A plugin describes
// itself with a Codec struct:
//   static constexpr const char *kName;                 // for messages
//   static const uint32_t *types(); static uint32_t n_types();
//   static const TypeOps *ops(uint32_t type);            // CUDA builds only; NULL when not served
// and exports CodecPlugin<Codec>::vtable() through its descriptor.
#pragma once

#include "quant_common/cpu_codec.hpp"
#include "quant_common/cuda_ops.hpp"

#include <worker/ggml_types.hpp>
#include <worker/sdk.hpp>

#include <string>

namespace wo::quant {

template <class Codec> struct CodecPlugin {
  static bool serves(uint32_t type) {
    for (uint32_t i = 0; i < Codec::n_types(); ++i)
      if (Codec::types()[i] == type) return true;
    return false;
  }

  static void require(uint32_t type, const std::string &where) {
    if (!serves(type))
      throw Error(WO_ERR_UNSUPPORTED,
                  where + ": ggml type " + type_label(type) + " is not served by " + Codec::kName);
  }

  // Load-time check: a type we serve, a whole number of blocks per row, consistent strides/sizes.
  static void check(const wo_tensor *w) {
    if (!w)
      throw Error(WO_ERR_INVALID_ARGUMENT, std::string(Codec::kName) + ": check_tensor: tensor is NULL");
    const std::string where = std::string(Codec::kName) + ": tensor '" + (w->name ? w->name : "?") + "'";
    require(w->ggml_type, where);
    if (w->n_dims < 1 || w->n_dims > 4)
      throw Error(WO_ERR_FORMAT, where + ": expected 1 to 4 dimensions, found " + std::to_string(w->n_dims));
    uint64_t rows = 1;
    for (uint32_t i = 0; i < w->n_dims; ++i) {
      if (w->ne[i] <= 0)
        throw Error(WO_ERR_FORMAT, where + ": ne[" + std::to_string(i) + "] must be positive, found " +
                                       std::to_string(w->ne[i]));
      if (i > 0) rows *= static_cast<uint64_t>(w->ne[i]);
    }
    check_row_len(w->ggml_type, w->ne[0], where);
    const uint64_t rb = wo::ggml::row_bytes(w->ggml_type, w->ne[0]);
    if (w->nb1 != 0 && w->nb1 != rb)
      throw Error(WO_ERR_FORMAT, where + ": row stride nb1 = " + std::to_string(w->nb1) +
                                     " bytes, expected " + std::to_string(rb) +
                                     " (rows stored one after another)");
    if (w->nbytes != 0 && w->nbytes != rb * rows)
      throw Error(WO_ERR_FORMAT, where + ": nbytes = " + std::to_string(w->nbytes) + ", expected " +
                                     std::to_string(rb * rows) + " for ne[0]=" + std::to_string(w->ne[0]) +
                                     " and " + std::to_string(rows) + " rows");
    if (w->data && reinterpret_cast<uintptr_t>(w->data) % 16 != 0)
      throw Error(WO_ERR_FORMAT, where + ": device data must be 16-byte aligned, found offset " +
                                     std::to_string(reinterpret_cast<uintptr_t>(w->data) % 16));
  }

  static wo_status dequantize_rows(uint32_t type, const void *src, int64_t n_rows, int64_t row_len,
                                   float *dst) {
    return guard(thread_error(), [&] {
      require(type, "dequantize_rows");
      wo::quant::dequantize_rows(type, src, n_rows, row_len, dst);
    });
  }
  static wo_status quantize_rows(uint32_t type, const float *src, int64_t n_rows, int64_t row_len,
                                 void *dst) {
    return guard(thread_error(), [&] {
      require(type, "quantize_rows");
      wo::quant::quantize_rows(type, src, n_rows, row_len, dst);
    });
  }
  static wo_status check_tensor(const wo_tensor *w) {
    return guard(thread_error(), [&] { check(w); });
  }
  static const char *last_error() { return thread_error().c_str(); }

#ifdef WORKER_WITH_CUDA
  static const TypeOps &ops_for(const wo_tensor *w, const char *op) {
    if (!w) throw Error(WO_ERR_INVALID_ARGUMENT, std::string(op) + ": weight tensor is NULL");
    const TypeOps *o = Codec::ops(w->ggml_type);
    if (!o)
      throw Error(WO_ERR_UNSUPPORTED, std::string(op) + ": tensor '" + (w->name ? w->name : "?") +
                                          "' of type " + type_label(w->ggml_type) + " is not served by " +
                                          Codec::kName);
    return *o;
  }
  static wo_status gather_rows(const wo_host *host, const wo_tensor *w, const int32_t *ids, int64_t n,
                               void *out, wo_dtype out_type) {
    return guard(thread_error(),
                 [&] { run_gather(ops_for(w, "gather_rows"), host, w, ids, n, out, out_type); });
  }
  static wo_status linear(const wo_host *host, const wo_tensor *w, const void *x, wo_dtype x_type, void *y,
                          wo_dtype y_type, int64_t n_tokens) {
    return guard(thread_error(),
                 [&] { run_linear(ops_for(w, "linear"), host, w, x, x_type, y, y_type, n_tokens); });
  }
  static wo_status linear_id(const wo_host *host, const wo_tensor *w, const void *x, wo_dtype x_type,
                             int64_t x_slots, void *y, wo_dtype y_type, int64_t n_tokens, const int32_t *ids,
                             int64_t n_slots) {
    return guard(thread_error(), [&] {
      run_linear_id(ops_for(w, "linear_id"), host, w, x, x_type, x_slots, y, y_type, n_tokens, ids, n_slots);
    });
  }
  static wo_status linear_id_settled(const wo_host *host, const wo_tensor *w, const void *x, wo_dtype x_type,
                                     int64_t x_slots, void *y, wo_dtype y_type, int64_t n_tokens,
                                     const int32_t *ids, int64_t n_slots) {
    return guard(thread_error(), [&] {
      run_linear_id(ops_for(w, "linear_id_settled"), host, w, x, x_type, x_slots, y, y_type, n_tokens, ids,
                    n_slots, /*ids_settled=*/true);
    });
  }
  // The optional one-launch entries: run() says whether it launched; WO_ERR_UNSUPPORTED with
  // `declined` as the error text when it did not (nothing enqueued, the caller takes another path).
  template <class F> static wo_status one_launch(const char *declined, F &&run) {
    bool launched = false;
    const wo_status st = guard(thread_error(), [&] { launched = run(); });
    if (st != WO_OK) return st;
    if (launched) return WO_OK;
    thread_error() = declined;
    return WO_ERR_UNSUPPORTED;
  }
  static wo_status linear_multi(const wo_host *host, int32_t n, const wo_tensor *const *w, const void *x,
                                wo_dtype x_type, void *const *y, wo_dtype y_type, int64_t n_tokens) {
    return one_launch("linear_multi: no one-launch path for these weights; call linear per weight", [&] {
      if (!w || n < 1) throw Error(WO_ERR_INVALID_ARGUMENT, "linear_multi: no weights");
      return run_linear_multi(ops_for(w[0], "linear_multi"), host, n, w, x, x_type, y, y_type, n_tokens);
    });
  }
  static wo_status linear_swiglu(const wo_host *host, const wo_tensor *gate, const wo_tensor *up,
                                 const void *x, wo_dtype x_type, void *y, wo_dtype y_type, int64_t n_tokens) {
    return one_launch("linear_swiglu: no single pass for these weights; run two linears and swiglu", [&] {
      return run_linear_swiglu(ops_for(gate, "linear_swiglu"), host, gate, up, x, x_type, y, y_type,
                               n_tokens);
    });
  }
  static wo_status linear_id_glu(const wo_host *host, const wo_tensor *gate, const wo_tensor *up,
                                 const void *x, wo_dtype x_type, void *y, wo_dtype y_type, int64_t n_tokens,
                                 const int32_t *ids, int64_t n_slots, const wo_expert_glu *glu) {
    return one_launch("linear_id_glu: no single pass for these experts; run two linear_id and the activation",
                      [&] {
                        return run_linear_id_glu(ops_for(gate, "linear_id_glu"), host, gate, up, x, x_type, y,
                                                 y_type, n_tokens, ids, n_slots, glu);
                      });
  }
  static wo_status linear_fused(const wo_host *host, int32_t op, int32_t n, const wo_tensor *const *w,
                                const void *x, wo_dtype x_type, void *const *y, wo_dtype y_type,
                                int64_t n_tokens, const wo_linear_fusion *fusion) {
    return one_launch("linear_fused: no single pass for this request; run the steps apart", [&] {
      if (!w || n < 1) throw Error(WO_ERR_INVALID_ARGUMENT, "linear_fused: no weights");
      return run_linear_fused(ops_for(w[0], "linear_fused"), host, op, n, w, x, x_type, y, y_type, n_tokens,
                              fusion);
    });
  }
#endif

  static wo_quant_v1 vtable() {
    wo_quant_v1 v{};
    v.struct_size = sizeof(wo_quant_v1);
    v.n_types = Codec::n_types();
    v.types = Codec::types();
    v.dequantize_rows = &dequantize_rows;
    v.quantize_rows = &quantize_rows;
    v.check_tensor = &check_tensor;
#ifdef WORKER_WITH_CUDA
    v.gather_rows = &gather_rows;
    v.linear = &linear;
    v.linear_id = &linear_id;
    v.linear_multi = &linear_multi;
    v.linear_swiglu = &linear_swiglu;
    v.linear_fused = &linear_fused;
    v.linear_id_settled = &linear_id_settled;
    v.linear_id_glu = &linear_id_glu;
#endif
    v.last_error = &last_error;
    return v;
  }
};

} // namespace wo::quant
