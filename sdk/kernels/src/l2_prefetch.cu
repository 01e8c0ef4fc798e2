// L2 prefetch: byte ranges asked of L2 by a kernel that waits for nothing and writes nothing, for a
// side branch of a decode graph (a plugin's second stream): weights a later kernel reads come in
// while the kernels on the chain leave DRAM idle, and no chain kernel carries the hint's code.
#include "launch.cuh"

#include <worker/kernels.hpp>

namespace wo::kernels {
namespace detail {
namespace {

constexpr int kPrefetchThreads = 32;

// Each thread asks for one slice of each range. On sm_90 one bulk prefetch per slice (the SM's copy
// engine walks it), slices widened to 16-byte boundaries within the range's lines as cp.async.bulk
// asks; H100, Qwen2.5's decode: +1.6% at depth 2048 and even at depth 0 against 8 blocks of 256
// threads with one prefetch.global.L2 per line, docs/perf.md. Before sm_90, a prefetch per line.
// Nothing waits for the data, but a block stays resident while its copies run (~7 us in the timeline
// for 4 blocks and Qwen2.5's 6 MB, beside decode attention and the o projection; it leaves them room).
__global__ void __launch_bounds__(kPrefetchThreads) l2_prefetch_kernel(L2Ranges r) {
  const uint64_t slices = static_cast<uint64_t>(gridDim.x) * blockDim.x;
  const uint64_t slice = static_cast<uint64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  for (int i = 0; i < L2Ranges::kMax; ++i) {
    const uint64_t bytes = r.bytes[i];
    const uint64_t per = (bytes + slices - 1) / slices, lo = per * slice;
    if (lo >= bytes) continue;
    const uint64_t hi = min(bytes, lo + per);
    const char *p = static_cast<const char *>(r.p[i]);
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    const uint64_t a = reinterpret_cast<uint64_t>(p + lo) & ~uint64_t{15};
    const uint64_t b = (reinterpret_cast<uint64_t>(p + hi) + 15) & ~uint64_t{15};
    asm volatile("cp.async.bulk.prefetch.L2.global [%0], %1;" ::"l"(a), "r"(static_cast<uint32_t>(b - a))
                 : "memory");
#else
    // Every line the slice touches, from the one holding its first byte.
    for (uint64_t a = reinterpret_cast<uint64_t>(p + lo) & ~uint64_t{127};
         a < reinterpret_cast<uint64_t>(p + hi); a += 128)
      asm volatile("prefetch.global.L2 [%0];" ::"l"(a));
#endif
  }
}

} // namespace
} // namespace detail

cudaError_t l2_prefetch(const L2Ranges &r, int blocks, cudaStream_t stream) {
  if (blocks < 1 || blocks > 4096) return cudaErrorInvalidValue;
  uint64_t total = 0;
  for (int i = 0; i < L2Ranges::kMax; ++i) {
    if (r.bytes[i] && !r.p[i]) return cudaErrorInvalidValue;
    if (r.bytes[i] > (uint64_t{1} << 32)) return cudaErrorInvalidValue; // a slice's size is 32-bit
    total += r.bytes[i];
  }
  if (!total) return cudaSuccess;
  // A plain launch: the kernel reads nothing an earlier kernel writes, so it has no PDL wait.
  detail::l2_prefetch_kernel<<<blocks, detail::kPrefetchThreads, 0, stream>>>(r);
  return detail::launched();
}

} // namespace wo::kernels
