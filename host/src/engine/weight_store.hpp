// The model's weights on the device: one arena holding every tensor at a 256-byte aligned offset
// (the plan's "sum of 256-aligned tensor sizes" is then exactly what is allocated, with no
// allocator fragmentation), and the wo_tensor records plugins see, with both the device pointer
// and the bytes in the memory-mapped file.
#pragma once

#include "device/chunked_upload.hpp"
#include "device/residency.hpp"
#include "device/vram_accounting.hpp"
#include "gguf/gguf_file.hpp"

#include <worker/sdk.h>

#include <cstdint>
#include <functional>
#include <string>
#include <unordered_map>
#include <vector>

namespace wo::engine {

constexpr uint64_t kTensorAlignment = 256;
// F32 tensors up to this size (norm weights, biases, attention sinks) are placed first in the arena,
// in one contiguous range that the engine asks L2 to keep (pinned_bytes; engine.cpp, pin_small_weights).
// WORKER_L2_PIN_MAX_KB=N sets it to N KiB (A/B).
uint64_t pinned_tensor_max_bytes();
inline uint64_t align_up(uint64_t v, uint64_t a) { return (v + a - 1) / a * a; }

class WeightStore {
public:
  // Builds the tensor table (host pointers only). Allocates nothing.
  explicit WeightStore(const wo::gguf::File &file);
  ~WeightStore();
  WeightStore(const WeightStore &) = delete;
  WeightStore &operator=(const WeightStore &) = delete;

  // Bytes the arena needs: the sum of every tensor's size rounded up to 256.
  uint64_t arena_bytes() const { return arena_bytes_; }
  uint64_t file_bytes() const { return file_bytes_; } // sum of the tensors' own sizes
  // The arena's leading range holding the small F32 tensors (pinned_tensor_max_bytes()), and their count.
  uint64_t pinned_bytes() const { return pinned_bytes_; }
  size_t pinned_tensors() const { return pinned_tensors_; }
  const void *arena() const { return arena_; }

  // Allocate the arena from `vram` (kind weights) and copy every tensor into it through the
  // uploader. on_bytes(total so far) after each chunk. Throws wo::Error (OUT_OF_MEMORY naming the
  // bytes, CUDA naming the tensor).
  void upload(wo::device::VramAccountant &vram, wo::device::ChunkedUploader &up,
              const std::function<void(uint64_t)> &on_bytes);
  void release(wo::device::VramAccountant &vram);

  const wo_tensor *find(const char *name) const; // nullptr when absent
  const std::vector<const wo_tensor *> &all() const { return order_; }
  uint64_t offset(size_t i) const { return offsets_.at(i); } // arena offset of all()[i]
  // Each tensor's device range, for residency checks (empty before upload).
  std::vector<wo::device::ResidentBlock> resident_blocks() const;

private:
  std::unordered_map<std::string, wo_tensor> by_name_; // node-based: stable addresses for plugins
  std::vector<const wo_tensor *> order_;               // file order
  std::vector<uint64_t> offsets_;                      // arena offset of order_[i]
  uint64_t arena_bytes_ = 0;
  uint64_t file_bytes_ = 0;
  uint64_t pinned_bytes_ = 0;
  size_t pinned_tensors_ = 0;
  void *arena_ = nullptr;
};

} // namespace wo::engine
