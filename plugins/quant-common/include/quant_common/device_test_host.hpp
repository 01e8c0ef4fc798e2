// A minimal device-side wo_host for codec tests and benchmarks: one stream, one cuBLAS handle, and
// a growable scratch buffer. No engine, no accounting. CUDA builds only.
#pragma once

#include <worker/sdk.h>

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <stdexcept>
#include <string>

namespace wo::quant {

inline bool cuda_device_present() {
  int n = 0;
  return cudaGetDeviceCount(&n) == cudaSuccess && n > 0;
}

inline void cuda_ok(cudaError_t e, const char *what) {
  if (e != cudaSuccess) throw std::runtime_error(std::string(what) + ": " + cudaGetErrorString(e));
}

class DeviceTestHost {
public:
  DeviceTestHost() {
    cuda_ok(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "cudaStreamCreate");
    if (cublasCreate(&cublas_) != CUBLAS_STATUS_SUCCESS) throw std::runtime_error("cublasCreate failed");
    cublasSetStream(cublas_, stream_);
    host_ = wo_host{};
    host_.struct_size = sizeof(wo_host);
    host_.abi_major = WORKER_SDK_ABI_MAJOR;
    host_.abi_minor = WORKER_SDK_ABI_MINOR;
    host_.ctx = this;
    host_.cuda_stream = stream_;
    host_.cublas_handle = cublas_;
    host_.scratch = &DeviceTestHost::scratch;
  }
  ~DeviceTestHost() {
    cudaStreamSynchronize(stream_);
    if (scratch_) cudaFree(scratch_);
    cublasDestroy(cublas_);
    cudaStreamDestroy(stream_);
  }
  DeviceTestHost(const DeviceTestHost &) = delete;
  DeviceTestHost &operator=(const DeviceTestHost &) = delete;

  const wo_host *host() const { return &host_; }
  cudaStream_t stream() const { return stream_; }
  void sync() const { cuda_ok(cudaStreamSynchronize(stream_), "cudaStreamSynchronize"); }
  size_t scratch_calls() const { return scratch_calls_; }

private:
  static wo_status scratch(void *ctx, size_t bytes, void **out) {
    auto *self = static_cast<DeviceTestHost *>(ctx);
    ++self->scratch_calls_;
    if (bytes > self->scratch_bytes_) {
      cudaStreamSynchronize(self->stream_); // earlier work may still use the old buffer
      if (self->scratch_) cudaFree(self->scratch_);
      self->scratch_ = nullptr;
      self->scratch_bytes_ = 0;
      if (cudaMalloc(&self->scratch_, bytes) != cudaSuccess) return WO_ERR_OUT_OF_MEMORY;
      self->scratch_bytes_ = bytes;
    }
    *out = self->scratch_;
    return WO_OK;
  }

  wo_host host_{};
  cudaStream_t stream_ = nullptr;
  cublasHandle_t cublas_ = nullptr;
  void *scratch_ = nullptr;
  size_t scratch_bytes_ = 0;
  size_t scratch_calls_ = 0;
};

} // namespace wo::quant
