#include <worker/testing/fake_host.hpp>

#include <algorithm>

namespace wo::testing {

FakeHost::FakeHost() {
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
  host_.scratch = svc_scratch;
  host_.linear = svc_linear;
  host_.gather_rows = svc_gather_rows;
  host_.linear_id = svc_linear_id;
  host_.trace = svc_trace;
}

FakeHost::~FakeHost() {
  if (scratch_ && free_) free_(scratch_);
}

void FakeHost::set_int(const std::string &key, wo_value_type t, uint64_t bits, bool negative) {
  Meta m;
  m.type = t;
  m.u64 = bits;
  m.negative = negative;
  meta_[key] = std::move(m);
}

void FakeHost::set_float(const std::string &key, wo_value_type t, double v) {
  Meta m;
  m.type = t;
  m.f64 = v;
  meta_[key] = std::move(m);
}

void FakeHost::set_str(const std::string &key, const std::string &v) {
  Meta m;
  m.type = WO_VALUE_STRING;
  m.str = v;
  meta_[key] = std::move(m);
}

void FakeHost::set_array(const std::string &key, wo_value_type elem, uint64_t n, std::vector<unsigned char> bytes) {
  Meta m;
  m.type = WO_VALUE_ARRAY;
  m.array_type = elem;
  m.array_len = n;
  m.array_bytes = std::move(bytes);
  meta_[key] = std::move(m);
}

void FakeHost::set_str_array(const std::string &key, const std::vector<std::string> &v) {
  Meta m;
  m.type = WO_VALUE_ARRAY;
  m.array_type = WO_VALUE_STRING;
  m.array_len = v.size();
  m.array_strs = v;
  meta_[key] = std::move(m);
}

void FakeHost::set_bool_array(const std::string &key, const std::vector<bool> &v) {
  std::vector<unsigned char> bytes(v.begin(), v.end());
  set_array(key, WO_VALUE_BOOL, v.size(), std::move(bytes));
}

void FakeHost::erase(const std::string &key) { meta_.erase(key); }

const wo_tensor *FakeHost::add_tensor(const std::string &name, uint32_t ggml_type, std::vector<int64_t> ne,
                                      std::vector<uint8_t> bytes, void *device) {
  auto t = std::make_unique<Tensor>();
  t->name = name;
  t->bytes = std::move(bytes);
  wo_tensor &w = t->t;
  w.struct_size = sizeof(wo_tensor);
  w.ggml_type = ggml_type;
  w.name = t->name.c_str();
  w.n_dims = static_cast<uint32_t>(std::min<size_t>(ne.size(), 4));
  for (int i = 0; i < 4; ++i) w.ne[i] = i < static_cast<int>(ne.size()) ? ne[i] : 1;
  w.nbytes = t->bytes.size();
  const int64_t rows = w.ne[1] * w.ne[2] * w.ne[3];
  w.nb1 = rows > 0 ? w.nbytes / static_cast<uint64_t>(rows) : 0;
  w.data = device;
  w.host_data = t->bytes.empty() ? nullptr : t->bytes.data();
  const wo_tensor *out = &t->t;
  tensors_[name] = std::move(t);
  return out;
}

void FakeHost::set_vram(AllocFn alloc, FreeFn free) {
  alloc_ = std::move(alloc);
  free_ = std::move(free);
}

void FakeHost::set_cuda(void *stream, void *cublas) {
  host_.cuda_stream = stream;
  host_.cublas_handle = cublas;
}

void FakeHost::route_quant(uint32_t ggml_type, const wo_quant_v1 *codec) { codecs_[ggml_type] = codec; }

const wo_quant_v1 *FakeHost::codec_for(const wo_tensor *w) const {
  if (!w) return nullptr;
  auto it = codecs_.find(w->ggml_type);
  return it == codecs_.end() ? nullptr : it->second;
}

void FakeHost::svc_log(void *ctx, wo_log_level level, const char *msg) {
  self(ctx).logs_.push_back({level, msg ? msg : ""});
}

wo_status FakeHost::svc_meta_get(void *ctx, const char *key, wo_value *out) {
  if (!key || !out) return WO_ERR_INVALID_ARGUMENT;
  FakeHost &h = self(ctx);
  h.queried_.push_back(key);
  auto it = h.meta_.find(key);
  if (it == h.meta_.end()) return WO_ERR_NOT_FOUND;
  const Meta &m = it->second;
  wo_value full{};
  full.struct_size = sizeof(wo_value);
  full.type = m.type;
  switch (m.type) {
  case WO_VALUE_F32:
  case WO_VALUE_F64: full.f64 = m.f64; break;
  case WO_VALUE_STRING: full.str = {m.str.data(), m.str.size()}; break;
  case WO_VALUE_ARRAY:
    full.array_type = m.array_type;
    full.array_len = m.array_len;
    full.array_data = m.array_type == WO_VALUE_STRING ? nullptr : m.array_bytes.data();
    break;
  default: // integers and bool: widened to both views (sdk.h)
    full.u64 = m.u64;
    full.i64 = static_cast<int64_t>(m.u64);
    full.is_negative = m.negative ? 1 : 0;
    break;
  }
  // Write only the fields the caller's struct_size says it knows (0 = this SDK's size).
  const size_t known = out->struct_size == 0 ? sizeof(wo_value) : out->struct_size;
  const size_t n = std::min(known, sizeof(wo_value));
  std::memcpy(out, &full, n);
  out->struct_size = static_cast<uint32_t>(n);
  return WO_OK;
}

wo_status FakeHost::svc_meta_array_str(void *ctx, const char *key, uint64_t i, wo_str *out) {
  if (!key || !out) return WO_ERR_INVALID_ARGUMENT;
  FakeHost &h = self(ctx);
  auto it = h.meta_.find(key);
  if (it == h.meta_.end()) return WO_ERR_NOT_FOUND;
  const Meta &m = it->second;
  if (m.type != WO_VALUE_ARRAY || m.array_type != WO_VALUE_STRING) return WO_ERR_TYPE_MISMATCH;
  if (i >= m.array_strs.size()) return WO_ERR_INVALID_ARGUMENT;
  *out = {m.array_strs[i].data(), m.array_strs[i].size()};
  return WO_OK;
}

const wo_tensor *FakeHost::svc_tensor(void *ctx, const char *name) {
  if (!name) return nullptr;
  FakeHost &h = self(ctx);
  auto it = h.tensors_.find(name);
  return it == h.tensors_.end() ? nullptr : &it->second->t;
}

wo_status FakeHost::svc_vram_alloc(void *ctx, size_t bytes, wo_vram_kind kind, void **out) {
  FakeHost &h = self(ctx);
  if (!out) return WO_ERR_INVALID_ARGUMENT;
  *out = nullptr;
  return h.alloc_ ? h.alloc_(bytes, kind, out) : WO_ERR_NO_DEVICE;
}

void FakeHost::svc_vram_free(void *ctx, void *ptr) {
  FakeHost &h = self(ctx);
  if (ptr && h.free_) h.free_(ptr);
}

wo_status FakeHost::svc_scratch(void *ctx, size_t bytes, void **out) {
  FakeHost &h = self(ctx);
  if (!out) return WO_ERR_INVALID_ARGUMENT;
  if (!h.alloc_) return WO_ERR_NO_DEVICE;
  if (bytes > h.scratch_bytes_) {
    if (h.scratch_ && h.free_) h.free_(h.scratch_);
    h.scratch_ = nullptr;
    h.scratch_bytes_ = 0;
    if (wo_status s = h.alloc_(bytes, WO_VRAM_SCRATCH, &h.scratch_); s != WO_OK) return s;
    h.scratch_bytes_ = bytes;
  }
  *out = h.scratch_;
  return WO_OK;
}

wo_status FakeHost::svc_linear(void *ctx, const wo_tensor *w, const void *x, wo_dtype xt, void *y, wo_dtype yt,
                               int64_t n_tokens) {
  FakeHost &h = self(ctx);
  const wo_quant_v1 *q = h.codec_for(w);
  if (!q || !q->linear) return WO_ERR_UNSUPPORTED;
  return q->linear(&h.host_, w, x, xt, y, yt, n_tokens);
}

wo_status FakeHost::svc_gather_rows(void *ctx, const wo_tensor *w, const int32_t *ids, int64_t n, void *out,
                                    wo_dtype out_type) {
  FakeHost &h = self(ctx);
  const wo_quant_v1 *q = h.codec_for(w);
  if (!q || !q->gather_rows) return WO_ERR_UNSUPPORTED;
  return q->gather_rows(&h.host_, w, ids, n, out, out_type);
}

wo_status FakeHost::svc_linear_id(void *ctx, const wo_tensor *w, const void *x, wo_dtype xt, int64_t x_slots, void *y,
                                  wo_dtype yt, int64_t n_tokens, const int32_t *ids, int64_t n_slots) {
  FakeHost &h = self(ctx);
  const wo_quant_v1 *q = h.codec_for(w);
  if (!q || !q->linear_id) return WO_ERR_UNSUPPORTED;
  return q->linear_id(&h.host_, w, x, xt, x_slots, y, yt, n_tokens, ids, n_slots);
}

void FakeHost::svc_trace(void *ctx, const char *name, const void *data, size_t bytes) {
  const auto *p = static_cast<const uint8_t *>(data);
  self(ctx).traces_.emplace_back(name ? name : "", std::vector<uint8_t>(p, p ? p + bytes : p));
}

} // namespace wo::testing
