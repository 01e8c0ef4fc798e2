// VRAM accounting: every device allocation of the worker goes through a VramAccountant, which
// counts bytes by category (weights, KV cache, scratch) with current and peak values. Memory is
// cudaMalloc'd only: never managed (unified) memory, never a host fallback (spec M0-W-1010).
#pragma once

#include <worker/sdk.h>

#include <cstddef>
#include <cstdint>
#include <mutex>
#include <string>
#include <unordered_map>

namespace wo::device {

constexpr int kVramKinds = 3; // WO_VRAM_WEIGHTS, WO_VRAM_KV_CACHE, WO_VRAM_SCRATCH

const char *vram_kind_name(wo_vram_kind kind); // "weights", "kv_cache", "scratch"

struct VramStats {
  uint64_t current[kVramKinds] = {0, 0, 0}; // bytes allocated now, by wo_vram_kind
  uint64_t peak[kVramKinds] = {0, 0, 0};    // most bytes ever allocated at once, by kind
  uint64_t total_current = 0;
  uint64_t total_peak = 0;
  uint64_t allocations = 0; // live allocations
};

class VramAccountant {
public:
  VramAccountant() = default;
  ~VramAccountant(); // frees whatever is still allocated
  VramAccountant(const VramAccountant &) = delete;
  VramAccountant &operator=(const VramAccountant &) = delete;

  // Device memory on the current device. WO_ERR_OUT_OF_MEMORY (never an abort) when cudaMalloc
  // fails or when the allocation would pass the cap; the CUDA error is cleared in that case.
  // `what` names the allocation in error text. bytes == 0 gives *out = nullptr and WO_OK.
  wo_status alloc(size_t bytes, wo_vram_kind kind, void **out, const char *what = nullptr);
  // Free a pointer from alloc(); unknown pointers are ignored (and reported by the return value).
  bool free(void *ptr);
  void free_all();

  // A cap on the total (0 = none): allocations past it fail with WO_ERR_OUT_OF_MEMORY.
  void set_cap(uint64_t bytes) { cap_ = bytes; }
  VramStats stats() const;
  std::string last_error() const; // text of the last failed alloc

private:
  struct Entry {
    size_t bytes;
    wo_vram_kind kind;
  };
  mutable std::mutex mu_;
  std::unordered_map<void *, Entry> live_;
  VramStats stats_;
  uint64_t cap_ = 0;
  std::string last_error_;
};

} // namespace wo::device
