#include <worker/testing/mock_host.hpp>

#include <memory>

namespace wo::testing {
namespace {

MockHost &self(void *ctx) { return *static_cast<MockHost *>(ctx); }

} // namespace

MockHost::MockHost() {
  host_.struct_size = sizeof(wo_host);
  host_.abi_major = WORKER_SDK_ABI_MAJOR;
  host_.abi_minor = WORKER_SDK_ABI_MINOR;
  host_.ctx = this;
  host_.log = [](void *ctx, wo_log_level level, const char *msg) { self(ctx).log(level, msg ? msg : ""); };
  host_.meta_get = [](void *ctx, const char *key, wo_value *out) {
    return key ? self(ctx).meta_get(key, out) : WO_ERR_INVALID_ARGUMENT;
  };
  host_.meta_array_str = [](void *ctx, const char *key, uint64_t i, wo_str *out) {
    return key ? self(ctx).meta_array_str(key, i, out) : WO_ERR_INVALID_ARGUMENT;
  };
  host_.tensor = [](void *ctx, const char *name) -> const wo_tensor * {
    return name ? self(ctx).tensor(name) : nullptr;
  };
  host_.vram_alloc = [](void *ctx, size_t bytes, wo_vram_kind kind, void **out) {
    return self(ctx).vram_alloc(bytes, kind, out);
  };
  host_.vram_free = [](void *ctx, void *ptr) { self(ctx).vram_free(ptr); };
  host_.scratch = [](void *ctx, size_t bytes, void **out) { return self(ctx).scratch(bytes, out); };
  host_.linear = [](void *ctx, const wo_tensor *w, const void *x, wo_dtype xt, void *y, wo_dtype yt, int64_t n) {
    return self(ctx).linear(w, x, xt, y, yt, n);
  };
  host_.gather_rows = [](void *ctx, const wo_tensor *w, const int32_t *ids, int64_t n, void *out, wo_dtype ot) {
    return self(ctx).gather_rows(w, ids, n, out, ot);
  };
  host_.linear_id = [](void *ctx, const wo_tensor *w, const void *x, wo_dtype xt, int64_t xs, void *y, wo_dtype yt,
                       int64_t n, const int32_t *ids, int64_t ns) {
    return self(ctx).linear_id(w, x, xt, xs, y, yt, n, ids, ns);
  };
  host_.trace = [](void *ctx, const char *name, const void *data, size_t bytes) {
    self(ctx).trace(name ? name : "", data, bytes);
  };
}

namespace {
wo_value base_value(wo_value *out, wo_value_type type) {
  wo_value v{};
  v.struct_size = out && out->struct_size ? out->struct_size : sizeof(wo_value);
  v.type = type;
  return v;
}
} // namespace

::testing::Action<wo_status(const std::string &, wo_value *)> ReturnString(const std::string &s) {
  auto keep = std::make_shared<std::string>(s);
  return [keep](const std::string &, wo_value *out) {
    if (!out) return WO_ERR_INVALID_ARGUMENT;
    wo_value v = base_value(out, WO_VALUE_STRING);
    v.str = {keep->data(), keep->size()};
    *out = v;
    return WO_OK;
  };
}

::testing::Action<wo_status(const std::string &, wo_value *)> ReturnUint(uint64_t x, wo_value_type type) {
  return [x, type](const std::string &, wo_value *out) {
    if (!out) return WO_ERR_INVALID_ARGUMENT;
    wo_value v = base_value(out, type);
    v.u64 = x;
    v.i64 = static_cast<int64_t>(x);
    *out = v;
    return WO_OK;
  };
}

::testing::Action<wo_status(const std::string &, wo_value *)> ReturnFloat(double x, wo_value_type type) {
  return [x, type](const std::string &, wo_value *out) {
    if (!out) return WO_ERR_INVALID_ARGUMENT;
    wo_value v = base_value(out, type);
    v.f64 = x;
    *out = v;
    return WO_OK;
  };
}

} // namespace wo::testing
