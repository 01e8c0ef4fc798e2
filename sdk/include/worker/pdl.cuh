// Programmatic dependent launch (PDL, compute capability 9.0+), shared by the SDK kernels, the
// quant codecs and the engine.
//
// Why: a decode step is ~300-500 small kernels, each latency-bound at a few microseconds; between
// two of them the GPU drains the first grid, then launches and ramps up the next. With PDL the
// next grid is launched while the previous one still runs: its CTAs start, do what needs no
// earlier result (index math, L2 prefetch of weights), then wait in enter() until the previous
// grid has completed and its writes are visible. Works inside captured CUDA graphs.
//
// Contract for a kernel launched with pdl::launch: the first access to memory an earlier kernel
// writes, and every write, comes after pdl::enter(). Kernels launched any other way keep the
// ordinary stream order, so mixing is safe. WORKER_PDL=0 launches without the attribute.
#pragma once

#include <worker/env_switch.hpp>

#include <cuda_runtime.h>

#include <utility>

namespace wo::pdl {

// Waits for the grids this one depends on (returns at once without a programmatic dependency),
// then lets the next grid in the stream launch.
__device__ __forceinline__ void enter() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;" ::: "memory");
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}

// L2 prefetch hint for data no earlier kernel writes (weights), issued before enter().
__device__ __forceinline__ void prefetch_l2(const void *p) {
  asm volatile("prefetch.global.L2 [%0];" ::"l"(p));
}

inline bool enabled() {
  static const bool on = [] {
    if (env_switched_off("WORKER_PDL")) return false;
    int dev = 0, major = 0;
    if (cudaGetDevice(&dev) != cudaSuccess ||
        cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev) != cudaSuccess)
      return false;
    return major >= 9;
  }();
  return on;
}

// Shared-memory share (percent of the SM's most) a launch asks for; kDriverCarveout leaves it to the
// driver, kPreferL1 asks for the smallest configuration that holds one block.
constexpr int kDriverCarveout = -1;
constexpr int kPreferL1 = 0;

// kernel<<<grid, block, smem, stream>>>(args...) with the programmatic-serialization attribute
// and, unless kDriverCarveout, a preferred shared-memory carveout. Returns the launch status (also
// what cudaGetLastError reports next).
// WORKER_CARVEOUT=N (0..100): every launch asks for an N% shared-memory carveout instead of its own
// (A/B). An SM whose resident CTAs run under another carveout must drain before a CTA of a kernel
// with a different one can start there, which may keep a PDL launch's CTAs from starting beside the
// previous kernel's.
inline int uniform_carveout() {
  static const int v = static_cast<int>(env_int("WORKER_CARVEOUT", 0, 100, kDriverCarveout));
  return v;
}

template <class... Params, class... Args>
cudaError_t launch_carveout(int carveout, void (*kernel)(Params...), dim3 grid, dim3 block, size_t smem,
                            cudaStream_t stream, Args &&...args) {
  cudaLaunchAttribute attrs[2]{};
  unsigned n = 0;
  if (uniform_carveout() != kDriverCarveout) carveout = uniform_carveout();
  if (enabled()) {
    attrs[n].id = cudaLaunchAttributeProgrammaticStreamSerialization;
    attrs[n++].val.programmaticStreamSerializationAllowed = 1;
  }
  if (carveout != kDriverCarveout) {
    attrs[n].id = cudaLaunchAttributePreferredSharedMemoryCarveout;
    attrs[n++].val.sharedMemCarveout = static_cast<unsigned>(carveout);
  }
  cudaLaunchConfig_t cfg{};
  cfg.gridDim = grid;
  cfg.blockDim = block;
  cfg.dynamicSmemBytes = smem;
  cfg.stream = stream;
  cfg.attrs = attrs;
  cfg.numAttrs = n;
  return cudaLaunchKernelEx(&cfg, kernel, std::forward<Args>(args)...);
}

template <class... Params, class... Args>
cudaError_t launch(void (*kernel)(Params...), dim3 grid, dim3 block, size_t smem, cudaStream_t stream,
                   Args &&...args) {
  return pdl::launch_carveout(kDriverCarveout, kernel, grid, block, smem, stream,
                              std::forward<Args>(args)...);
}

} // namespace wo::pdl
