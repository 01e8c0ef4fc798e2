// Header-only C++ layer over sdk.h for plugin authors and the host.
//
// Inside a plugin, C++ is fine; at the boundary everything becomes a wo_status. `guard` converts
// exceptions into statuses plus a stored message; `HostView` gives typed, checked access to the
// host services; `WORKER_PLUGIN` exports the one entry point the host looks for.
#pragma once

#include <worker/sdk.h>

#include <cstdint>
#include <cstring>
#include <exception>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace wo {

inline const char *status_name(wo_status s) {
  switch (s) {
  case WO_OK: return "OK";
  case WO_ERR_INVALID_ARGUMENT: return "INVALID_ARGUMENT";
  case WO_ERR_NOT_FOUND: return "NOT_FOUND";
  case WO_ERR_TYPE_MISMATCH: return "TYPE_MISMATCH";
  case WO_ERR_UNSUPPORTED: return "UNSUPPORTED";
  case WO_ERR_OUT_OF_MEMORY: return "OUT_OF_MEMORY";
  case WO_ERR_BUFFER_TOO_SMALL: return "BUFFER_TOO_SMALL";
  case WO_ERR_CUDA: return "CUDA";
  case WO_ERR_FORMAT: return "FORMAT";
  case WO_ERR_IO: return "IO";
  case WO_ERR_INTERNAL: return "INTERNAL";
  case WO_ERR_NO_DEVICE: return "NO_DEVICE";
  default: return "UNKNOWN_STATUS";
  }
}

inline const char *value_type_name(wo_value_type t) {
  static const char *names[] = {"u8",   "i8",     "u16",   "i16", "u32", "i32", "f32",
                                "bool", "string", "array", "u64", "i64", "f64"};
  return (t >= 0 && t <= 12) ? names[t] : "unknown";
}

// An error carrying a status; thrown inside plugins and the host, never across the ABI.
class Error : public std::runtime_error {
public:
  Error(wo_status status, const std::string &msg) : std::runtime_error(msg), status_(status) {}
  wo_status status() const { return status_; }

private:
  wo_status status_;
};

// Run f(); turn any exception into a status and keep its text in `err`.
template <class F> wo_status guard(std::string &err, F &&f) noexcept {
  try {
    f();
    return WO_OK;
  } catch (const Error &e) {
    err = e.what();
    return e.status();
  } catch (const std::bad_alloc &) {
    err = "host memory exhausted";
    return WO_ERR_INTERNAL;
  } catch (const std::exception &e) {
    err = e.what();
    return WO_ERR_INTERNAL;
  } catch (...) {
    err = "unknown exception";
    return WO_ERR_INTERNAL;
  }
}

// Per-thread error text for stateless plugins (quant codecs).
inline std::string &thread_error() {
  thread_local std::string e;
  return e;
}

// Throw an Error when a status from the other side of the boundary is not OK.
inline void check(wo_status s, const std::string &what, const char *detail = nullptr) {
  if (s != WO_OK)
    throw Error(s, what + ": " + status_name(s) + (detail && *detail ? std::string(": ") + detail : ""));
}

inline wo_value empty_value() {
  wo_value v{};
  v.struct_size = sizeof(wo_value);
  return v;
}

// Typed, checked access to the host services. Every failure names the key and what was found.
class HostView {
public:
  explicit HostView(const wo_host *h) : h_(h) {}
  const wo_host *raw() const { return h_; }

  void log(wo_log_level lvl, const std::string &msg) const {
    if (h_ && h_->log) h_->log(h_->ctx, lvl, msg.c_str());
  }

  std::optional<wo_value> find(const std::string &key) const {
    wo_value v = empty_value();
    if (h_->meta_get(h_->ctx, key.c_str(), &v) != WO_OK) return std::nullopt;
    return v;
  }
  bool has(const std::string &key) const { return find(key).has_value(); }

  wo_value require(const std::string &key) const {
    auto v = find(key);
    if (!v) throw Error(WO_ERR_NOT_FOUND, "metadata key '" + key + "' is required but absent");
    return *v;
  }

  std::string get_str(const std::string &key) const {
    wo_value v = require(key);
    if (v.type != WO_VALUE_STRING) throw mismatch(key, "string", v.type);
    return std::string(v.str.data, v.str.len);
  }
  std::optional<std::string> opt_str(const std::string &key) const {
    return has(key) ? std::optional<std::string>(get_str(key)) : std::nullopt;
  }

  int64_t get_int(const std::string &key) const {
    wo_value v = require(key);
    if (!is_integer(v.type)) throw mismatch(key, "integer", v.type);
    if (!v.is_negative && v.u64 > static_cast<uint64_t>(INT64_MAX))
      throw Error(WO_ERR_INVALID_ARGUMENT,
                  "metadata key '" + key + "': value " + std::to_string(v.u64) + " exceeds int64");
    return v.i64;
  }
  int64_t get_int(const std::string &key, int64_t dflt) const { return has(key) ? get_int(key) : dflt; }

  double get_float(const std::string &key) const {
    wo_value v = require(key);
    if (v.type == WO_VALUE_F32 || v.type == WO_VALUE_F64) return v.f64;
    if (is_integer(v.type)) return static_cast<double>(v.i64);
    throw mismatch(key, "float", v.type);
  }
  double get_float(const std::string &key, double dflt) const { return has(key) ? get_float(key) : dflt; }

  bool get_bool(const std::string &key) const {
    wo_value v = require(key);
    if (v.type != WO_VALUE_BOOL) throw mismatch(key, "bool", v.type);
    return v.u64 != 0;
  }
  bool get_bool(const std::string &key, bool dflt) const { return has(key) ? get_bool(key) : dflt; }

  // Array of strings (e.g. tokenizer.ggml.tokens).
  std::vector<std::string> get_str_array(const std::string &key) const {
    wo_value v = require(key);
    if (v.type != WO_VALUE_ARRAY || v.array_type != WO_VALUE_STRING)
      throw mismatch(key, "array of string", v.type);
    std::vector<std::string> out;
    out.reserve(v.array_len);
    for (uint64_t i = 0; i < v.array_len; ++i) {
      wo_str s{};
      check(h_->meta_array_str(h_->ctx, key.c_str(), i, &s),
            "metadata key '" + key + "'[" + std::to_string(i) + "]");
      out.emplace_back(s.data, s.len);
    }
    return out;
  }

  // Numeric array converted to T (e.g. scores as float, token types as int32).
  template <class T> std::vector<T> get_num_array(const std::string &key) const {
    wo_value v = require(key);
    if (v.type != WO_VALUE_ARRAY || v.array_type == WO_VALUE_STRING || v.array_type == WO_VALUE_ARRAY)
      throw mismatch(key, "numeric array", v.type);
    std::vector<T> out(v.array_len);
    const auto *p = static_cast<const unsigned char *>(v.array_data);
    for (uint64_t i = 0; i < v.array_len; ++i)
      out[i] = static_cast<T>(read_elem(v.array_type, p, i));
    return out;
  }

  // `{arch}.suffix`, e.g. arch_key("context_length") -> "qwen2.context_length".
  std::string arch_key(const std::string &suffix) const {
    return get_str("general.architecture") + "." + suffix;
  }

  const wo_tensor *tensor(const std::string &name) const { return h_->tensor(h_->ctx, name.c_str()); }
  const wo_tensor &require_tensor(const std::string &name) const {
    const wo_tensor *t = tensor(name);
    if (!t) throw Error(WO_ERR_NOT_FOUND, "tensor '" + name + "' is required but absent from the model");
    return *t;
  }

private:
  static bool is_integer(wo_value_type t) {
    return (t >= WO_VALUE_U8 && t <= WO_VALUE_I32) || t == WO_VALUE_U64 || t == WO_VALUE_I64 ||
           t == WO_VALUE_BOOL;
  }
  static Error mismatch(const std::string &key, const char *expected, wo_value_type found) {
    return Error(WO_ERR_TYPE_MISMATCH,
                 "metadata key '" + key + "': expected " + expected + ", found " + value_type_name(found));
  }
  static double read_elem(wo_value_type t, const unsigned char *p, uint64_t i) {
    auto rd = [&](auto tag) {
      decltype(tag) x;
      std::memcpy(&x, p + i * sizeof(x), sizeof(x));
      return static_cast<double>(x);
    };
    switch (t) {
    case WO_VALUE_U8: return rd(uint8_t{});
    case WO_VALUE_I8: return rd(int8_t{});
    case WO_VALUE_U16: return rd(uint16_t{});
    case WO_VALUE_I16: return rd(int16_t{});
    case WO_VALUE_U32: return rd(uint32_t{});
    case WO_VALUE_I32: return rd(int32_t{});
    case WO_VALUE_F32: return rd(float{});
    case WO_VALUE_BOOL: return rd(uint8_t{});
    case WO_VALUE_U64: return rd(uint64_t{});
    case WO_VALUE_I64: return rd(int64_t{});
    case WO_VALUE_F64: return rd(double{});
    default: throw Error(WO_ERR_TYPE_MISMATCH, "array element type is not numeric");
    }
  }
  const wo_host *h_;
};

// Copies `value` into a caller's struct of the same type that may be older (shorter) or newer
// (longer) than this build's: only the bytes both know (all of ours when out->struct_size is 0),
// and out->struct_size then says how many were written, so the caller reads no field we did not set.
template <class T> void write_sized(T *out, T value) {
  const size_t n = out->struct_size == 0 || out->struct_size > sizeof(T) ? sizeof(T) : out->struct_size;
  value.struct_size = static_cast<uint32_t>(n);
  std::memcpy(out, &value, n);
}

// The arch config a host passed, read as far as its struct_size reaches (an older host sends a
// shorter struct, and NULL none): fields it did not send, and an n_batch <= 0, keep the defaults
// (n_ctx 0, flags 0, n_batch = default_n_batch).
inline wo_arch_config read_arch_config(const wo_arch_config *cfg, int64_t default_n_batch) {
  wo_arch_config c{};
  c.struct_size = sizeof c;
  c.n_batch = default_n_batch;
  if (!cfg) return c;
  if (WO_HAS_FIELD(wo_arch_config, cfg->struct_size, n_ctx)) c.n_ctx = cfg->n_ctx;
  if (WO_HAS_FIELD(wo_arch_config, cfg->struct_size, n_batch) && cfg->n_batch > 0) c.n_batch = cfg->n_batch;
  if (WO_HAS_FIELD(wo_arch_config, cfg->struct_size, flags)) c.flags = cfg->flags;
  return c;
}

// y[i] = linear(w[i], x) for i < n (the same activations into several weights: q/k/v, gate/up)
// through the host's linear_multi (SDK 1.2), or one linear call per weight on an older host.
inline wo_status linear_multi(const wo_host *h, int32_t n, const wo_tensor *const *w, const void *x,
                              wo_dtype x_type, void *const *y, wo_dtype y_type, int64_t n_tokens) {
  if (WO_HAS_FIELD(wo_host, h->struct_size, linear_multi) && h->linear_multi)
    return h->linear_multi(h->ctx, n, w, x, x_type, y, y_type, n_tokens);
  if (!h->linear) return WO_ERR_UNSUPPORTED;
  for (int32_t i = 0; i < n; ++i)
    if (const wo_status s = h->linear(h->ctx, w[i], x, x_type, y[i], y_type, n_tokens); s != WO_OK) return s;
  return WO_OK;
}

// y = silu(gate x) * (up x) in one pass through the host's linear_swiglu (SDK 1.3).
// WO_ERR_UNSUPPORTED, with nothing enqueued, on an older host or when no single pass serves these
// weights: the caller then runs the two linears and the swiglu kernel itself.
inline wo_status linear_swiglu(const wo_host *h, const wo_tensor *gate, const wo_tensor *up, const void *x,
                               wo_dtype x_type, void *y, wo_dtype y_type, int64_t n_tokens) {
  if (WO_HAS_FIELD(wo_host, h->struct_size, linear_swiglu) && h->linear_swiglu)
    return h->linear_swiglu(h->ctx, gate, up, x, x_type, y, y_type, n_tokens);
  return WO_ERR_UNSUPPORTED;
}

// linear_id whose ids were written two or more launches back (SDK 1.6, see wo_host.linear_id_settled):
// the host's settled entry, or its plain linear_id on an older host (the same results).
inline wo_status linear_id_settled(const wo_host *h, const wo_tensor *w, const void *x, wo_dtype x_type,
                                   int64_t x_slots, void *y, wo_dtype y_type, int64_t n_tokens,
                                   const int32_t *ids, int64_t n_slots) {
  if (WO_HAS_FIELD(wo_host, h->struct_size, linear_id_settled) && h->linear_id_settled)
    return h->linear_id_settled(h->ctx, w, x, x_type, x_slots, y, y_type, n_tokens, ids, n_slots);
  if (!h->linear_id) return WO_ERR_UNSUPPORTED;
  return h->linear_id(h->ctx, w, x, x_type, x_slots, y, y_type, n_tokens, ids, n_slots);
}

// The experts' gate, up and gated activation in one pass through the host's linear_id_glu (SDK 1.7;
// see wo_expert_glu). WO_ERR_UNSUPPORTED, with nothing enqueued, on an older host or when no single
// pass serves the request: the caller then runs the two linear_id calls and its activation kernel.
inline wo_status linear_id_glu(const wo_host *h, const wo_tensor *gate, const wo_tensor *up, const void *x,
                               wo_dtype x_type, void *y, wo_dtype y_type, int64_t n_tokens,
                               const int32_t *ids, int64_t n_slots, const wo_expert_glu &glu) {
  if (WO_HAS_FIELD(wo_host, h->struct_size, linear_id_glu) && h->linear_id_glu)
    return h->linear_id_glu(h->ctx, gate, up, x, x_type, y, y_type, n_tokens, ids, n_slots, &glu);
  return WO_ERR_UNSUPPORTED;
}

// The activation of linear_id_glu: kind WO_GLU_SILU or WO_GLU_CLAMPED, biases F32 [n_expert][rows].
inline wo_expert_glu expert_glu(int32_t kind, float alpha, float limit, const float *gate_bias = nullptr,
                                const float *up_bias = nullptr) {
  wo_expert_glu g{};
  g.struct_size = sizeof g;
  g.kind = kind;
  g.alpha = alpha;
  g.limit = limit;
  g.gate_bias = gate_bias;
  g.up_bias = up_bias;
  return g;
}

// A projection with its norm, bias or residual add folded in (SDK 1.4; see wo_linear_fusion),
// through the host's linear_fused. WO_ERR_UNSUPPORTED, with nothing enqueued, on an older host or
// when no single pass serves the request: the caller then runs the steps itself.
inline wo_status linear_fused(const wo_host *h, int32_t op, int32_t n, const wo_tensor *const *w,
                              const void *x, wo_dtype x_type, void *const *y, wo_dtype y_type,
                              int64_t n_tokens, const wo_linear_fusion *fusion) {
  if (WO_HAS_FIELD(wo_host, h->struct_size, linear_fused) && h->linear_fused)
    return h->linear_fused(h->ctx, op, n, w, x, x_type, y, y_type, n_tokens, fusion);
  return WO_ERR_UNSUPPORTED;
}

// The two linear_fused requests a transformer layer makes: the norm before a projection, and the
// bias (may be NULL) and residual add after one.
inline wo_linear_fusion fusion_norm(const float *norm_weight, float eps) {
  wo_linear_fusion f{};
  f.struct_size = sizeof f;
  f.norm_weight = norm_weight;
  f.norm_eps = eps;
  return f;
}
// x_staged (1.9, optional): x as its producer staged it (worker/staged_x.cuh), a hint for the codec.
inline wo_linear_fusion fusion_residual(const float *bias, const void *x_staged = nullptr) {
  wo_linear_fusion f{};
  f.struct_size = sizeof f;
  f.bias = bias;
  f.accumulate = 1;
  f.x_staged = x_staged;
  return f;
}
// op WO_LINEAR_GLU (1.5): the down projection of silu(gate) * up, added into y (the residual).
inline wo_linear_fusion fusion_glu_residual(const float *up) {
  wo_linear_fusion f = fusion_residual(nullptr);
  f.glu_up = up;
  return f;
}

// Rows [first, first + rows) of a 2-D matrix as a tensor of their own (same type, name and row
// stride; data and host_data moved by first rows): e.g. the gate and up halves of a fused
// [gate; up] weight. A zero tensor (struct_size 0) when t is not 2-D, has no row stride or the
// range leaves it.
inline wo_tensor row_view(const wo_tensor &t, int64_t first, int64_t rows) {
  if (t.n_dims != 2 || t.nb1 == 0 || first < 0 || rows <= 0 || first + rows > t.ne[1]) return wo_tensor{};
  const uint64_t off = static_cast<uint64_t>(first) * t.nb1;
  wo_tensor v = t;
  v.ne[1] = rows;
  v.nbytes = static_cast<uint64_t>(rows) * t.nb1;
  v.data = t.data ? static_cast<char *>(t.data) + off : nullptr;
  v.host_data = t.host_data ? static_cast<const char *>(t.host_data) + off : nullptr;
  return v;
}

// Fill a descriptor's common fields.
inline wo_plugin make_descriptor(wo_plugin_kind kind, const char *name, const char *version,
                                 const void *vtable) {
  wo_plugin p{};
  p.struct_size = sizeof(wo_plugin);
  p.abi_major = WORKER_SDK_ABI_MAJOR;
  p.abi_minor = WORKER_SDK_ABI_MINOR;
  p.kind = kind;
  p.name = name;
  p.version = version;
  p.vtable = vtable;
  return p;
}

// The standard handshake: serve hosts of the same major ABI version, refuse others.
inline const wo_plugin *negotiate(const wo_plugin *desc, uint32_t host_major, uint32_t /*host_minor*/) {
  return host_major == WORKER_SDK_ABI_MAJOR ? desc : nullptr;
}

} // namespace wo

// Export `fn` (a wo_plugin_entry_fn) as the plugin's one entry point, listed in the ELF section
// the host scans before it loads any code.
#ifndef BOOST_DLL_USE_STD_FS
#define BOOST_DLL_USE_STD_FS
#endif
#include <boost/dll/alias.hpp>
#define WORKER_PLUGIN(fn) BOOST_DLL_ALIAS_SECTIONED(fn, worker_plugin_entry, worker)
