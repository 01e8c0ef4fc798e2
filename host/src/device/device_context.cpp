#include "device/device_context.hpp"

#include "device/cuda_check.hpp"
#include "device/kernel_image_probe.hpp"

#include <cublas_v2.h>

namespace wo::device {

int device_count() {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    (void)cudaGetLastError();
    return 0;
  }
  return n;
}

std::string describe(const DeviceProps &p) {
  return "device " + std::to_string(p.index) + " (" + p.name + ", sm_" + std::to_string(p.sm_major) +
         std::to_string(p.sm_minor) + ")";
}

DeviceContext::DeviceContext(int index, VramAccountant &vram) : vram_(vram) {
  int n = 0;
  cudaError_t err = cudaGetDeviceCount(&n);
  if (err != cudaSuccess) {
    (void)cudaGetLastError();
    throw Error(WO_ERR_NO_DEVICE, "--gpu-device " + std::to_string(index) +
                                      ": expected a CUDA device, found none (" + cudaGetErrorName(err) +
                                      ": " + cudaGetErrorString(err) + ")");
  }
  if (index < 0 || index >= n)
    throw Error(WO_ERR_INVALID_ARGUMENT, "--gpu-device " + std::to_string(index) + ": expected 0.." +
                                             std::to_string(n - 1) + ", this host has " + std::to_string(n) +
                                             " CUDA device(s)");
  cuda_check(cudaSetDevice(index), "cudaSetDevice(" + std::to_string(index) + ")");
  cudaDeviceProp prop{};
  cuda_check(cudaGetDeviceProperties(&prop, index), "cudaGetDeviceProperties(" + std::to_string(index) + ")");
  props_.index = index;
  props_.name = prop.name;
  props_.sm_major = prop.major;
  props_.sm_minor = prop.minor;
  props_.total_bytes = prop.totalGlobalMem;
  cudaRuntimeGetVersion(&props_.runtime_version);
  cudaDriverGetVersion(&props_.driver_version);

  // The worker keeps weights in device memory only and hands plugins raw device pointers that
  // must be comparable with host ones: unified addressing is required (every 64-bit device since
  // Fermi has it; a missing one means an unsupported setup).
  if (!prop.unifiedAddressing)
    throw Error(WO_ERR_UNSUPPORTED, describe(props_) + ": expected unified virtual addressing, found none");
  if (prop.major < 7)
    throw Error(WO_ERR_UNSUPPORTED, describe(props_) + ": expected compute capability 7.0 or newer, found " +
                                        std::to_string(prop.major) + "." + std::to_string(prop.minor));
  err = kernel_image_available();
  if (err != cudaSuccess) {
    (void)cudaGetLastError();
    throw Error(WO_ERR_UNSUPPORTED,
                describe(props_) + ": this build has no device code for sm_" + std::to_string(prop.major) +
                    std::to_string(prop.minor) +
                    " (rebuild with CMAKE_CUDA_ARCHITECTURES including it): " + cudaGetErrorName(err));
  }

  cuda_check(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking),
             describe(props_) + ": cudaStreamCreate");
}

void DeviceContext::create_cublas() {
  if (cublas_) return;
  try {
    cublas_check(cublasCreate(&cublas_), describe(props_) + ": cublasCreate");
    cublas_check(cublasSetStream(cublas_, stream_), "cublasSetStream");
    wo_status st =
        vram_.alloc(kCublasWorkspaceBytes, WO_VRAM_SCRATCH, &cublas_workspace_, "cublas workspace");
    if (st != WO_OK) throw Error(st, describe(props_) + ": " + vram_.last_error());
    cublas_check(cublasSetWorkspace(cublas_, cublas_workspace_, kCublasWorkspaceBytes), "cublasSetWorkspace");
  } catch (...) {
    if (cublas_) cublasDestroy(cublas_);
    cublas_ = nullptr;
    vram_.free(cublas_workspace_);
    cublas_workspace_ = nullptr;
    throw;
  }
}

DeviceContext::~DeviceContext() {
  cudaStreamSynchronize(stream_);
  if (cublas_) cublasDestroy(cublas_);
  vram_.free(cublas_workspace_);
  cudaStreamDestroy(stream_);
}

MemInfo DeviceContext::mem_info() const {
  size_t free_b = 0, total_b = 0;
  cuda_check(cudaMemGetInfo(&free_b, &total_b), describe(props_) + ": cudaMemGetInfo");
  return {free_b, total_b};
}

void DeviceContext::synchronize() const {
  cuda_check(cudaStreamSynchronize(stream_), describe(props_) + ": cudaStreamSynchronize");
}

} // namespace wo::device
