// Asynchronous global -> shared copies (sm_80+, PTX cp.async) for the kernels that stage weights
// in shared memory (grouped_gemm.cuh, unit_gemv.cuh). The "memory" clobbers keep the compiler
// from moving shared-memory accesses across a commit or a wait.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

namespace wo::quant::dev {

__device__ __forceinline__ uint32_t smem_addr(const void *p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}
__device__ __forceinline__ void cp_async4(void *smem_dst, const void *src) {
  asm volatile("cp.async.ca.shared.global [%0], [%1], 4;" ::"r"(smem_addr(smem_dst)), "l"(src) : "memory");
}
__device__ __forceinline__ void cp_async8(void *smem_dst, const void *src) {
  asm volatile("cp.async.ca.shared.global [%0], [%1], 8;" ::"r"(smem_addr(smem_dst)), "l"(src) : "memory");
}
// 16 bytes bypass L1 (.cg): streamed weights are read once.
__device__ __forceinline__ void cp_async16(void *smem_dst, const void *src) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(smem_addr(smem_dst)), "l"(src) : "memory");
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;" ::: "memory"); }
// Waits until at most N of this thread's committed groups are still in flight.
template <int N> __device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;" ::"n"(N) : "memory");
}

} // namespace wo::quant::dev
