// The CUDA side of one worker: the selected GPU, its one stream and its one cuBLAS handle
// (spec M0-W-1010/1400). Construction checks that the device exists, that it is a real device
// (not a CPU emulation), that its compute capability can run the kernels this build carries, and
// that it addresses memory the way the worker needs; every failure throws wo::Error naming the
// device index, what was expected and what was found.
#pragma once

#include "device/vram_accounting.hpp"

#include <cublas_api.h>
#include <cuda_runtime_api.h>

#include <cstdint>
#include <string>

namespace wo::device {

// Number of CUDA devices; 0 when there is no driver or no device (never throws).
int device_count();

struct DeviceProps {
  int index = 0;
  std::string name;
  int sm_major = 0, sm_minor = 0;
  uint64_t total_bytes = 0;
  int runtime_version = 0; // cudaRuntimeGetVersion
  int driver_version = 0;  // cudaDriverGetVersion
};

// Free and total device memory of the current device (cudaMemGetInfo).
struct MemInfo {
  uint64_t free_bytes = 0;
  uint64_t total_bytes = 0;
};

class DeviceContext {
public:
  // Select and check device `index`; create the stream. Allocates no device memory, so the VRAM
  // plan can run (and refuse) before anything is allocated.
  DeviceContext(int index, VramAccountant &vram);
  ~DeviceContext();
  DeviceContext(const DeviceContext &) = delete;
  DeviceContext &operator=(const DeviceContext &) = delete;

  const DeviceProps &props() const { return props_; }
  cudaStream_t stream() const { return stream_; }
  // Create the cuBLAS handle on the stream, with a workspace from `vram` (kind scratch) so that
  // none of cuBLAS's memory escapes the accounting. Idempotent.
  void create_cublas();
  cublasHandle_t cublas() const { return cublas_; }
  MemInfo mem_info() const;
  void synchronize() const; // throws WO_ERR_CUDA naming the failure

  // Bytes of the cuBLAS workspace this context allocates (counted in the VRAM plan's margin).
  static constexpr uint64_t kCublasWorkspaceBytes = 32ull << 20;

private:
  VramAccountant &vram_;
  DeviceProps props_;
  cudaStream_t stream_ = nullptr;
  cublasHandle_t cublas_ = nullptr;
  void *cublas_workspace_ = nullptr;
};

// "device 0 (NVIDIA H100 80GB HBM3, sm_90)": how messages name the GPU.
std::string describe(const DeviceProps &p);

} // namespace wo::device
