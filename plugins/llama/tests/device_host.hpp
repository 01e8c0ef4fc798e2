// GPU services for a TestHost: weights uploaded as F32, linear through cuBLAS (FP32, no TF32),
// gather_rows by copying rows, and VRAM allocation with a budget and a live count, so tests can
// check out-of-memory handling and that sessions free what they allocate.
#pragma once

#include "test_model.hpp"

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <cstddef>
#include <set>

namespace wo::llama::test {

class DeviceHost {
public:
  explicit DeviceHost(TestHost &h, size_t vram_budget = size_t(1) << 30);
  ~DeviceHost();
  DeviceHost(const DeviceHost &) = delete;
  DeviceHost &operator=(const DeviceHost &) = delete;

  cudaStream_t stream() const { return stream_; }
  size_t live_bytes() const { return live_bytes_; }
  size_t live_allocs() const { return live_.size(); }
  void set_budget(size_t b) { budget_ = b; }

private:
  static wo_status vram_alloc(void *ctx, size_t bytes, wo_vram_kind kind, void **out);
  static void vram_free(void *ctx, void *p);
  static wo_status linear(void *ctx, const wo_tensor *w, const void *x, wo_dtype xt, void *y, wo_dtype yt,
                          int64_t n);
  static wo_status gather_rows(void *ctx, const wo_tensor *w, const int32_t *ids, int64_t n, void *out,
                               wo_dtype ot);
  static DeviceHost &self(void *ctx);

  TestHost &h_;
  void *outer_ctx_;
  cudaStream_t stream_ = nullptr;
  cublasHandle_t cublas_ = nullptr;
  size_t budget_, live_bytes_ = 0;
  std::set<void *> weights_;
  std::set<void *> live_;
  std::map<void *, size_t> sizes_;
};

} // namespace wo::llama::test
