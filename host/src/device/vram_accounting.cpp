#include "device/vram_accounting.hpp"

#include "device/cuda_check.hpp"

#include <cuda_runtime_api.h>

namespace wo::device {

const char *vram_kind_name(wo_vram_kind kind) {
  switch (kind) {
  case WO_VRAM_WEIGHTS: return "weights";
  case WO_VRAM_KV_CACHE: return "kv_cache";
  case WO_VRAM_SCRATCH: return "scratch";
  default: return "unknown";
  }
}

VramAccountant::~VramAccountant() { free_all(); }

wo_status VramAccountant::alloc(size_t bytes, wo_vram_kind kind, void **out, const char *what) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!out) {
    last_error_ = "vram_alloc: output pointer is NULL";
    return WO_ERR_INVALID_ARGUMENT;
  }
  *out = nullptr;
  if (kind < 0 || kind >= kVramKinds) {
    last_error_ =
        "vram_alloc: kind " + std::to_string(kind) + " is not one of WO_VRAM_WEIGHTS/KV_CACHE/SCRATCH";
    return WO_ERR_INVALID_ARGUMENT;
  }
  if (bytes == 0) return WO_OK;
  const std::string label = std::string(vram_kind_name(kind)) + (what ? std::string(" '") + what + "'" : "");
  if (cap_ && stats_.total_current + bytes > cap_) {
    last_error_ = "vram_alloc(" + label + ", " + std::to_string(bytes) + " bytes): would use " +
                  std::to_string(stats_.total_current + bytes) + " bytes, above the VRAM budget of " +
                  std::to_string(cap_) + " bytes";
    return WO_ERR_OUT_OF_MEMORY;
  }
  void *p = nullptr;
  // cudaMalloc only: device memory, never managed/unified memory (M0-W-1010).
  cudaError_t err = cudaMalloc(&p, bytes);
  if (err != cudaSuccess) {
    (void)cudaGetLastError(); // an allocation failure is not sticky; clear it so later calls work
    last_error_ = cuda_error_text(err, "cudaMalloc(" + label + ", " + std::to_string(bytes) + " bytes)");
    return err == cudaErrorMemoryAllocation ? WO_ERR_OUT_OF_MEMORY : WO_ERR_CUDA;
  }
  live_.emplace(p, Entry{bytes, kind});
  stats_.current[kind] += bytes;
  if (stats_.current[kind] > stats_.peak[kind]) stats_.peak[kind] = stats_.current[kind];
  stats_.total_current += bytes;
  if (stats_.total_current > stats_.total_peak) stats_.total_peak = stats_.total_current;
  stats_.allocations = live_.size();
  *out = p;
  return WO_OK;
}

bool VramAccountant::free(void *ptr) {
  if (!ptr) return true;
  std::lock_guard<std::mutex> lock(mu_);
  auto it = live_.find(ptr);
  if (it == live_.end()) return false;
  cudaFree(ptr);
  stats_.current[it->second.kind] -= it->second.bytes;
  stats_.total_current -= it->second.bytes;
  live_.erase(it);
  stats_.allocations = live_.size();
  return true;
}

void VramAccountant::free_all() {
  std::lock_guard<std::mutex> lock(mu_);
  for (auto &kv : live_)
    cudaFree(kv.first);
  live_.clear();
  for (int k = 0; k < kVramKinds; ++k)
    stats_.current[k] = 0;
  stats_.total_current = 0;
  stats_.allocations = 0;
}

VramStats VramAccountant::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  return stats_;
}

std::string VramAccountant::last_error() const {
  std::lock_guard<std::mutex> lock(mu_);
  return last_error_;
}

} // namespace wo::device
