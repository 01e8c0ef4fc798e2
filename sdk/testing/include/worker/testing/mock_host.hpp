// MockHost: GoogleMock expectations on every host service. host() is a real wo_host whose function
// pointers forward to the mock methods, so a plugin calls it exactly as it calls the real host:
//
//   wo::testing::MockHost mock;
//   EXPECT_CALL(mock, meta_get("general.architecture", ::testing::_))
//       .WillOnce(wo::testing::ReturnString("llama"));
//   EXPECT_GT(arch->probe(mock.host()), 0);
#pragma once

#include <worker/sdk.h>

#include <gmock/gmock.h>

#include <string>

namespace wo::testing {

class MockHost {
public:
  MockHost();
  virtual ~MockHost() = default;
  MockHost(const MockHost &) = delete;
  MockHost &operator=(const MockHost &) = delete;

  const wo_host *host() const { return &host_; }
  void set_cuda(void *stream, void *cublas) {
    host_.cuda_stream = stream;
    host_.cublas_handle = cublas;
  }
  void set_trace_enabled(bool on) { host_.trace_enabled = on ? 1 : 0; }

  MOCK_METHOD(void, log, (wo_log_level level, const std::string &msg));
  MOCK_METHOD(wo_status, meta_get, (const std::string &key, wo_value *out));
  MOCK_METHOD(wo_status, meta_array_str, (const std::string &key, uint64_t index, wo_str *out));
  MOCK_METHOD(const wo_tensor *, tensor, (const std::string &name));
  MOCK_METHOD(wo_status, vram_alloc, (size_t bytes, wo_vram_kind kind, void **out));
  MOCK_METHOD(void, vram_free, (void *ptr));
  MOCK_METHOD(wo_status, scratch, (size_t bytes, void **out));
  MOCK_METHOD(wo_status, linear,
              (const wo_tensor *w, const void *x, wo_dtype x_type, void *y, wo_dtype y_type, int64_t n_tokens));
  MOCK_METHOD(wo_status, gather_rows,
              (const wo_tensor *w, const int32_t *ids, int64_t n, void *out, wo_dtype out_type));
  MOCK_METHOD(wo_status, linear_id,
              (const wo_tensor *w, const void *x, wo_dtype x_type, int64_t x_slots, void *y, wo_dtype y_type,
               int64_t n_tokens, const int32_t *ids, int64_t n_slots));
  MOCK_METHOD(void, trace, (const std::string &name, const void *data, size_t bytes));

private:
  wo_host host_{};
};

// Actions for meta_get: fill *out (arg 1) as the real host would, then return WO_OK. The string
// is copied into storage owned by the action, so it outlives the call.
::testing::Action<wo_status(const std::string &, wo_value *)> ReturnString(const std::string &s);
::testing::Action<wo_status(const std::string &, wo_value *)> ReturnUint(uint64_t v, wo_value_type type = WO_VALUE_U32);
::testing::Action<wo_status(const std::string &, wo_value *)> ReturnFloat(double v, wo_value_type type = WO_VALUE_F32);

} // namespace wo::testing
