// A FakeHost whose services run on the GPU: a SynthModel's F32 weights uploaded once, VRAM from
// cudaMalloc, and plain (unoptimised, obviously correct) linear / linear_id / gather_rows
// kernels standing in for the quant plugins. Records the plugin's trace calls.
#pragma once

#include "fake_host.hpp"
#include "synth_model.hpp"

#include <cuda_runtime.h>

#include <map>
#include <string>
#include <vector>

namespace wo::gpt::testing {

bool cuda_device_present();

class DeviceHost : public FakeHost {
public:
  explicit DeviceHost(const SynthModel &m);
  ~DeviceHost();

  cudaStream_t stream() const { return stream_; }
  void enable_trace() { mutable_host()->trace_enabled = 1; }
  // name -> one entry per trace call (e.g. "routing.L0" -> per forward chunk, [n][k] ids).
  std::map<std::string, std::vector<std::vector<int32_t>>> traces;
  size_t device_allocations() const { return device_live_; }

private:
  static DeviceHost *self(void *ctx) { return static_cast<DeviceHost *>(static_cast<FakeHost *>(ctx)); }
  static wo_status alloc(void *ctx, size_t bytes, wo_vram_kind kind, void **out);
  static void release(void *ctx, void *p);
  static wo_status linear(void *ctx, const wo_tensor *w, const void *x, wo_dtype xt, void *y, wo_dtype yt,
                          int64_t n);
  static wo_status gather(void *ctx, const wo_tensor *w, const int32_t *ids, int64_t n, void *out,
                          wo_dtype ot);
  static wo_status linear_id(void *ctx, const wo_tensor *w, const void *x, wo_dtype xt, int64_t x_slots,
                             void *y, wo_dtype yt, int64_t n, const int32_t *ids, int64_t n_slots);
  static void trace(void *ctx, const char *name, const void *data, size_t bytes);

  cudaStream_t stream_ = nullptr;
  std::vector<void *> weights_;
  size_t device_live_ = 0;
};

} // namespace wo::gpt::testing
