// How many CTAs of a kernel one SM holds at once, and how many SMs the device has, for the launches
// that size a one-wave grid (the SDK's decode attention, the quant codecs' GEMVs): asked of the
// runtime once (per kernel, block size and dynamic shared memory) and cached, since those launches
// ask on every call.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <map>
#include <mutex>
#include <tuple>

namespace wo::occupancy {

// The current device's SM count, asked once per process (the worker drives one device); 0 where the
// runtime cannot say (its error cleared, not left for the next launch). Each caller keeps its own
// fallback for 0.
inline int sm_count() {
  static const int n = [] {
    int dev = 0, sms = 0;
    if (cudaGetDevice(&dev) != cudaSuccess ||
        cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev) != cudaSuccess || sms < 0) {
      (void)cudaGetLastError();
      return 0;
    }
    return sms;
  }();
  return n;
}

// CTAs of `kernel` (a __global__ function) per SM at `threads` threads and `smem` bytes of dynamic
// shared memory; 0 where the runtime cannot say (its error cleared, not left for the next launch).
template <class Kernel> int ctas_per_sm(Kernel kernel, int threads, size_t smem) {
  static std::mutex mu;
  static std::map<std::tuple<const void *, int, size_t>, int> known;
  const std::lock_guard<std::mutex> lock(mu);
  const auto key = std::make_tuple(reinterpret_cast<const void *>(kernel), threads, smem);
  const auto it = known.find(key);
  if (it != known.end()) return it->second;
  int n = 0;
  if (cudaOccupancyMaxActiveBlocksPerMultiprocessor(&n, kernel, threads, smem) != cudaSuccess || n < 0) {
    (void)cudaGetLastError();
    n = 0;
  }
  known.emplace(key, n);
  return n;
}

} // namespace wo::occupancy
