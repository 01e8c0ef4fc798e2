#include "device/residency.hpp"

#include <cuda_runtime_api.h>

namespace wo::device {

namespace {
const char *memory_type_name(cudaMemoryType t) {
  switch (t) {
  case cudaMemoryTypeUnregistered: return "unregistered host memory";
  case cudaMemoryTypeHost: return "host memory";
  case cudaMemoryTypeDevice: return "device memory";
  case cudaMemoryTypeManaged: return "managed (unified) memory";
  default: return "unknown memory type";
  }
}
} // namespace

ResidencyResult check_residency(const std::vector<ResidentBlock> &blocks, int device) {
  ResidencyResult r;
  cudaSetDevice(device);
  for (const auto &b : blocks) {
    if (!b.ptr) {
      if (b.bytes == 0) continue;
      r.ok = false;
      r.failure = "tensor '" + b.name + "': expected a device pointer for " + std::to_string(b.bytes) +
                  " bytes, found NULL";
      return r;
    }
    cudaPointerAttributes attr{};
    cudaError_t err = cudaPointerGetAttributes(&attr, b.ptr);
    ++r.checked;
    if (err != cudaSuccess) {
      (void)cudaGetLastError();
      r.ok = false;
      r.failure = "tensor '" + b.name + "': cudaPointerGetAttributes failed: " + cudaGetErrorName(err);
      return r;
    }
    if (attr.type != cudaMemoryTypeDevice || attr.hostPointer != nullptr || attr.device != device) {
      r.ok = false;
      r.failure = "tensor '" + b.name + "': expected device memory on GPU " + std::to_string(device) +
                  " with no host mapping, found " + memory_type_name(attr.type) + " on GPU " +
                  std::to_string(attr.device) + (attr.hostPointer ? " with a host pointer" : "");
      return r;
    }
  }
  return r;
}

ResidencyMonitor::ResidencyMonitor(std::chrono::milliseconds interval, std::function<ResidencyResult()> check,
                                   std::function<void(const ResidencyResult &)> on_result)
    : interval_(interval), check_(std::move(check)), on_result_(std::move(on_result)) {
  thread_ = std::thread([this] { loop(); });
}

ResidencyMonitor::~ResidencyMonitor() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

uint64_t ResidencyMonitor::runs() const {
  std::lock_guard<std::mutex> lock(mu_);
  return runs_;
}

void ResidencyMonitor::loop() {
  std::unique_lock<std::mutex> lock(mu_);
  while (!stop_) {
    if (cv_.wait_for(lock, interval_, [this] { return stop_; })) break;
    lock.unlock();
    ResidencyResult r = check_();
    on_result_(r);
    lock.lock();
    ++runs_;
  }
}

} // namespace wo::device
