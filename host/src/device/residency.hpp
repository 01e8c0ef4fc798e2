// Residency checks (spec M0-W-1010/1400): every weight allocation must be device memory
// (cudaPointerGetAttributes type cudaMemoryTypeDevice) with no host mapping, i.e. never managed or
// host-pinned memory in disguise. Run on demand and periodically from a background thread.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace wo::device {

struct ResidentBlock {
  std::string name; // tensor name, for messages
  const void *ptr = nullptr;
  uint64_t bytes = 0;
};

struct ResidencyResult {
  bool ok = true;
  uint64_t checked = 0;
  std::string failure; // first failure, naming the tensor and what was found
};

// Inspect every block. Safe from any thread (the CUDA device is set for the calling thread).
ResidencyResult check_residency(const std::vector<ResidentBlock> &blocks, int device);

// Runs `check` every `interval` on its own thread until destroyed; `on_result` receives each
// result (the engine logs failures). Stops promptly on destruction.
class ResidencyMonitor {
public:
  ResidencyMonitor(std::chrono::milliseconds interval, std::function<ResidencyResult()> check,
                   std::function<void(const ResidencyResult &)> on_result);
  ~ResidencyMonitor();
  ResidencyMonitor(const ResidencyMonitor &) = delete;
  ResidencyMonitor &operator=(const ResidencyMonitor &) = delete;
  uint64_t runs() const;

private:
  void loop();
  std::chrono::milliseconds interval_;
  std::function<ResidencyResult()> check_;
  std::function<void(const ResidencyResult &)> on_result_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  uint64_t runs_ = 0;
  std::thread thread_;
};

} // namespace wo::device
