#include "gguf/host_meta.hpp"

#include "observe/log.hpp"

#include <cstring>

namespace wo::gguf {

wo_status meta_get(const File &f, const char *key, wo_value *out) {
  if (!key || !out) return WO_ERR_INVALID_ARGUMENT;
  const Value *v = f.find(key);
  if (!v) return WO_ERR_NOT_FOUND;
  // Fill a full local value, then copy only the prefix the caller's struct knows.
  wo_value full{};
  full.struct_size = sizeof(wo_value);
  full.type = v->type;
  if (v->is_integer() || v->type == WO_VALUE_BOOL) {
    bool neg = false;
    v->widen(full.i64, full.u64, neg);
    full.is_negative = neg ? 1 : 0;
    full.f64 = v->as_double();
  } else if (v->is_float()) {
    full.f64 = v->as_double();
  } else if (v->type == WO_VALUE_STRING) {
    full.str.data = reinterpret_cast<const char *>(v->data);
    full.str.len = v->len;
  } else if (v->is_array()) {
    full.array_type = v->array_type;
    full.array_len = v->len;
    full.array_data = v->array_type == WO_VALUE_STRING ? nullptr : v->data;
  }
  const uint32_t known = out->struct_size == 0 ? sizeof(wo_value) : out->struct_size;
  const size_t n = known < sizeof(wo_value) ? known : sizeof(wo_value);
  std::memcpy(out, &full, n);
  out->struct_size = static_cast<uint32_t>(n);
  return WO_OK;
}

wo_status meta_array_str(const File &f, const char *key, uint64_t i, wo_str *out) {
  if (!key || !out) return WO_ERR_INVALID_ARGUMENT;
  const Value *v = f.find(key);
  if (!v) return WO_ERR_NOT_FOUND;
  if (!v->is_array() || v->array_type != WO_VALUE_STRING) return WO_ERR_TYPE_MISMATCH;
  if (i >= v->strings.size()) return WO_ERR_INVALID_ARGUMENT;
  out->data = v->strings[i].data();
  out->len = v->strings[i].size();
  return WO_OK;
}

wo_tensor to_wo_tensor(const File &f, const TensorInfo &t) {
  wo_tensor w{};
  w.struct_size = sizeof(wo_tensor);
  w.ggml_type = t.type;
  w.name = t.name.c_str();
  w.n_dims = t.n_dims;
  for (int k = 0; k < 4; ++k)
    w.ne[k] = t.ne[k];
  w.nbytes = t.nbytes;
  w.nb1 = t.nb1;
  w.data = nullptr;
  w.host_data = f.tensor_data(t);
  return w;
}

namespace {

MetaHost &self(void *ctx) { return *static_cast<MetaHost *>(ctx); }

void svc_log(void *ctx, wo_log_level level, const char *msg);
wo_status svc_meta_get(void *ctx, const char *key, wo_value *out) {
  return meta_get(self(ctx).file(), key, out);
}
wo_status svc_meta_array_str(void *ctx, const char *key, uint64_t i, wo_str *out) {
  return meta_array_str(self(ctx).file(), key, i, out);
}
const wo_tensor *svc_tensor(void *ctx, const char *name) { return self(ctx).tensor(name); }
wo_status svc_vram_alloc(void *, size_t, wo_vram_kind, void **out) {
  if (out) *out = nullptr;
  return WO_ERR_NO_DEVICE;
}
void svc_vram_free(void *, void *) {}
wo_status svc_scratch(void *, size_t, void **out) {
  if (out) *out = nullptr;
  return WO_ERR_NO_DEVICE;
}
wo_status svc_linear(void *, const wo_tensor *, const void *, wo_dtype, void *, wo_dtype, int64_t) {
  return WO_ERR_NO_DEVICE;
}
wo_status svc_gather_rows(void *, const wo_tensor *, const int32_t *, int64_t, void *, wo_dtype) {
  return WO_ERR_NO_DEVICE;
}
wo_status svc_linear_id(void *, const wo_tensor *, const void *, wo_dtype, int64_t, void *, wo_dtype, int64_t,
                        const int32_t *, int64_t) {
  return WO_ERR_NO_DEVICE;
}
void svc_trace(void *, const char *, const void *, size_t) {}

} // namespace

namespace {
void svc_log(void *ctx, wo_log_level level, const char *msg) { self(ctx).log_message(level, msg); }
} // namespace

MetaHost::MetaHost(const File &f, LogFn log) : file_(f), log_(std::move(log)) {
  for (const TensorInfo &t : f.tensors())
    tensors_.emplace(t.name, to_wo_tensor(f, t));
  host_.struct_size = sizeof(wo_host);
  host_.abi_major = WORKER_SDK_ABI_MAJOR;
  host_.abi_minor = WORKER_SDK_ABI_MINOR;
  host_.ctx = this;
  host_.log = svc_log;
  host_.meta_get = svc_meta_get;
  host_.meta_array_str = svc_meta_array_str;
  host_.tensor = svc_tensor;
  host_.vram_alloc = svc_vram_alloc;
  host_.vram_free = svc_vram_free;
  host_.cuda_stream = nullptr;
  host_.cublas_handle = nullptr;
  host_.scratch = svc_scratch;
  host_.linear = svc_linear;
  host_.gather_rows = svc_gather_rows;
  host_.linear_id = svc_linear_id;
  host_.trace_enabled = 0;
  host_.trace = svc_trace;
}

const wo_tensor *MetaHost::tensor(const char *name) const {
  if (!name) return nullptr;
  auto it = tensors_.find(name);
  return it == tensors_.end() ? nullptr : &it->second;
}

void MetaHost::log_message(wo_log_level level, const char *msg) const {
  if (log_) {
    log_(level, msg ? msg : "");
    return;
  }
  observe::Level l = level <= WO_LOG_DEBUG  ? observe::Level::debug
                     : level == WO_LOG_INFO ? observe::Level::info
                     : level == WO_LOG_WARN ? observe::Level::warn
                                            : observe::Level::error;
  observe::event(l, "plugin_log", {{"message", std::string(msg ? msg : "")}});
}

} // namespace wo::gguf
