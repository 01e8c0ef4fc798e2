// FakeHost: a complete wo_host over in-memory metadata and tensors, for testing a plugin in
// isolation. Its function pointers forward to this object through `ctx`, so plugin code is
// exercised through the C ABI exactly as the real host calls it (same meta_get widening rules,
// same struct_size handling, same status codes).
//
// Device services are hooks: by default vram_alloc/scratch answer WO_ERR_NO_DEVICE and
// linear/gather_rows/linear_id WO_ERR_UNSUPPORTED, unless a test routes them (route_quant, set_vram).
#pragma once

#include <worker/sdk.h>

#include <cstdint>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace wo::testing {

class FakeHost {
public:
  FakeHost();
  ~FakeHost(); // frees the scratch buffer through the vram hook
  FakeHost(const FakeHost &) = delete; // plugins keep the wo_host pointer
  FakeHost &operator=(const FakeHost &) = delete;

  const wo_host *host() const { return &host_; }

  // ---- metadata (replace any earlier value of the key) ----
  void set_u8(const std::string &key, uint8_t v) { set_int(key, WO_VALUE_U8, v, false); }
  void set_u32(const std::string &key, uint32_t v) { set_int(key, WO_VALUE_U32, v, false); }
  void set_i32(const std::string &key, int32_t v) { set_int(key, WO_VALUE_I32, static_cast<uint64_t>(int64_t{v}), v < 0); }
  void set_u64(const std::string &key, uint64_t v) { set_int(key, WO_VALUE_U64, v, false); }
  void set_i64(const std::string &key, int64_t v) { set_int(key, WO_VALUE_I64, static_cast<uint64_t>(v), v < 0); }
  void set_bool(const std::string &key, bool v) { set_int(key, WO_VALUE_BOOL, v ? 1 : 0, false); }
  void set_f32(const std::string &key, float v) { set_float(key, WO_VALUE_F32, v); }
  void set_f64(const std::string &key, double v) { set_float(key, WO_VALUE_F64, v); }
  void set_str(const std::string &key, const std::string &v);
  void set_str_array(const std::string &key, const std::vector<std::string> &v);
  // Numeric array; T is one of uint8_t..int64_t, float, double (bool arrays: use uint8_t + set_bool_array).
  template <class T> void set_num_array(const std::string &key, const std::vector<T> &v) {
    static_assert(std::is_arithmetic<T>::value, "numeric arrays only");
    std::vector<unsigned char> bytes(v.size() * sizeof(T));
    if (!v.empty()) std::memcpy(bytes.data(), v.data(), bytes.size());
    set_array(key, value_type_of<T>(), v.size(), std::move(bytes));
  }
  void set_bool_array(const std::string &key, const std::vector<bool> &v);
  void erase(const std::string &key);
  bool has(const std::string &key) const { return meta_.count(key) != 0; }

  // ---- tensors: bytes are copied and served as host_data; `device` (optional) as data ----
  const wo_tensor *add_tensor(const std::string &name, uint32_t ggml_type, std::vector<int64_t> ne,
                              std::vector<uint8_t> bytes, void *device = nullptr);

  // ---- device hooks ----
  using AllocFn = std::function<wo_status(size_t bytes, wo_vram_kind kind, void **out)>;
  using FreeFn = std::function<void(void *ptr)>;
  void set_vram(AllocFn alloc, FreeFn free);
  void set_cuda(void *stream, void *cublas);
  // linear / gather_rows / linear_id on a weight of `ggml_type` forward to this codec's functions.
  void route_quant(uint32_t ggml_type, const wo_quant_v1 *codec);
  void set_trace(bool enabled) { host_.trace_enabled = enabled ? 1 : 0; }

  // ---- what the plugin did ----
  struct LogLine {
    wo_log_level level;
    std::string msg;
  };
  const std::vector<LogLine> &logs() const { return logs_; }
  const std::vector<std::pair<std::string, std::vector<uint8_t>>> &traces() const { return traces_; }
  // Keys the plugin asked for, in order (also absent ones): what a probe depends on.
  const std::vector<std::string> &queried_keys() const { return queried_; }

private:
  struct Meta {
    wo_value_type type = WO_VALUE_U8;
    uint64_t u64 = 0;
    bool negative = false;
    double f64 = 0;
    std::string str;
    wo_value_type array_type = WO_VALUE_U8;
    uint64_t array_len = 0;
    std::vector<unsigned char> array_bytes;
    std::vector<std::string> array_strs;
  };
  template <class T> static constexpr wo_value_type value_type_of() {
    if (std::is_same<T, uint8_t>::value) return WO_VALUE_U8;
    if (std::is_same<T, int8_t>::value) return WO_VALUE_I8;
    if (std::is_same<T, uint16_t>::value) return WO_VALUE_U16;
    if (std::is_same<T, int16_t>::value) return WO_VALUE_I16;
    if (std::is_same<T, uint32_t>::value) return WO_VALUE_U32;
    if (std::is_same<T, int32_t>::value) return WO_VALUE_I32;
    if (std::is_same<T, float>::value) return WO_VALUE_F32;
    if (std::is_same<T, uint64_t>::value) return WO_VALUE_U64;
    if (std::is_same<T, int64_t>::value) return WO_VALUE_I64;
    if (std::is_same<T, double>::value) return WO_VALUE_F64;
    return WO_VALUE_ARRAY; // unreachable for the types above; makes meta_get fail loudly
  }
  void set_int(const std::string &key, wo_value_type t, uint64_t bits, bool negative);
  void set_float(const std::string &key, wo_value_type t, double v);
  void set_array(const std::string &key, wo_value_type elem, uint64_t n, std::vector<unsigned char> bytes);

  static FakeHost &self(void *ctx) { return *static_cast<FakeHost *>(ctx); }
  static void svc_log(void *ctx, wo_log_level level, const char *msg);
  static wo_status svc_meta_get(void *ctx, const char *key, wo_value *out);
  static wo_status svc_meta_array_str(void *ctx, const char *key, uint64_t i, wo_str *out);
  static const wo_tensor *svc_tensor(void *ctx, const char *name);
  static wo_status svc_vram_alloc(void *ctx, size_t bytes, wo_vram_kind kind, void **out);
  static void svc_vram_free(void *ctx, void *ptr);
  static wo_status svc_scratch(void *ctx, size_t bytes, void **out);
  static wo_status svc_linear(void *ctx, const wo_tensor *w, const void *x, wo_dtype xt, void *y, wo_dtype yt,
                              int64_t n_tokens);
  static wo_status svc_gather_rows(void *ctx, const wo_tensor *w, const int32_t *ids, int64_t n, void *out,
                                   wo_dtype out_type);
  static wo_status svc_linear_id(void *ctx, const wo_tensor *w, const void *x, wo_dtype xt, int64_t x_slots, void *y,
                                 wo_dtype yt, int64_t n_tokens, const int32_t *ids, int64_t n_slots);
  static void svc_trace(void *ctx, const char *name, const void *data, size_t bytes);
  const wo_quant_v1 *codec_for(const wo_tensor *w) const;

  struct Tensor {
    std::string name;
    std::vector<uint8_t> bytes;
    wo_tensor t{};
  };
  wo_host host_{};
  std::map<std::string, Meta> meta_;
  std::map<std::string, std::unique_ptr<Tensor>> tensors_;
  std::map<uint32_t, const wo_quant_v1 *> codecs_;
  AllocFn alloc_;
  FreeFn free_;
  void *scratch_ = nullptr;
  size_t scratch_bytes_ = 0;
  std::vector<LogLine> logs_;
  std::vector<std::pair<std::string, std::vector<uint8_t>>> traces_;
  std::vector<std::string> queried_;
};

} // namespace wo::testing
