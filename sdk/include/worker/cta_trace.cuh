// Per-CTA timestamps for timing builds (cmake -DWORKER_CTA_TRACE=ON; compiled out otherwise): a
// traced kernel records, per CTA, %globaltimer at entry, when its PDL wait returned, at thread 0's
// exit and at up to four marks of its own, with the SM it ran on, into a ring of its translation
// unit. A plugin exports one dump function per such unit (WO_CTA_TRACE_EXPORT); `bench` calls them
// after a timeline when WORKER_CTA_TRACE_OUT names a folder, and tools/device/cta_trace.py reads the
// files.
// Why: CUPTI's kernel records give a grid's first start and last end only; where a decode step's
// time goes between kernels that overlap under PDL (a CTA waiting for room on an SM, a split that
// straggles, a staging phase) needs the CTAs' own clocks (docs/perf.md, thirty-seventh session).
// The records cost an atomic and a 64-byte store per CTA: compare traced builds with traced builds.
#pragma once

#ifdef WO_CTA_TRACE
#include <cuda_runtime.h>

#include <cstdint>
#include <cstdio>
#include <vector>

namespace wo::cta_trace {

// The traced kernels (Rec::a's high byte).
enum Kind : uint32_t { kAttention = 1, kInt8xGemv = 2, kUnitGemv = 3, kUnitGemvSwiglu = 4 };

struct Rec {
  uint32_t a;          // kind << 24 | info (the kernel's choice: rows, head_dim)
  uint32_t b;          // smid << 24 | linear block index
  uint64_t t0, t1, t2; // entry, PDL wait returned, thread 0's exit (ns, %globaltimer)
  uint64_t m[4];       // the kernel's own marks (0: not reached)
};
static_assert(sizeof(Rec) == 64, "tools/device/cta_trace.py reads 64-byte records");
constexpr uint32_t kCap = 1u << 20; // records per ring (64 MiB of device memory per traced unit)
static __device__ Rec g_ring[kCap];
static __device__ unsigned long long g_next;

__device__ __forceinline__ uint64_t now() {
  uint64_t t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}
__device__ __forceinline__ uint32_t smid() {
  uint32_t s;
  asm volatile("mov.u32 %0, %%smid;" : "=r"(s));
  return s;
}
__device__ __forceinline__ uint64_t &waited_slot() {
  __shared__ uint64_t s;
  return s;
}
__device__ __forceinline__ uint64_t *mark_slots() {
  __shared__ uint64_t s[4];
  return s;
}
__device__ __forceinline__ void waited() {
  if (threadIdx.x == 0) waited_slot() = now();
}
__device__ __forceinline__ void mark(int i) {
  if (threadIdx.x == 0) mark_slots()[i] = now();
}
// Entry at construction; the record at thread 0's exit from the scope (every return path).
struct Scope {
  uint64_t t0;
  uint32_t a;
  __device__ Scope(uint32_t kind, uint32_t info) : t0(now()), a(kind << 24 | (info & 0xffffffu)) {
    if (threadIdx.x == 0) {
      waited_slot() = 0;
      for (int i = 0; i < 4; ++i)
        mark_slots()[i] = 0;
    }
  }
  __device__ ~Scope() {
    if (threadIdx.x != 0) return;
    const uint64_t t2 = now();
    const uint32_t blk = blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z);
    const unsigned long long i = atomicAdd(&g_next, 1ull) % kCap;
    const uint64_t *m = mark_slots();
    g_ring[i] = Rec{a, smid() << 24 | (blk & 0xffffffu), t0, waited_slot(), t2, {m[0], m[1], m[2], m[3]}};
  }
};

// The ring as a file: the count of records ever written (8 bytes), then the kCap records.
inline int dump(const char *path) {
  unsigned long long n = 0;
  if (cudaMemcpyFromSymbol(&n, g_next, sizeof n) != cudaSuccess) return -1;
  std::vector<Rec> v(kCap);
  if (cudaMemcpyFromSymbol(v.data(), g_ring, sizeof(Rec) * kCap) != cudaSuccess) return -2;
  std::FILE *f = std::fopen(path, "wb");
  if (!f) return -3;
  const bool ok = std::fwrite(&n, sizeof n, 1, f) == 1 && std::fwrite(v.data(), sizeof(Rec), kCap, f) == kCap;
  return std::fclose(f) == 0 && ok ? 0 : -4;
}

} // namespace wo::cta_trace

#define WO_CTA_SCOPE(kind, info) wo::cta_trace::Scope wo_cta_scope_((kind), (info))
#define WO_CTA_WAITED() wo::cta_trace::waited()
#define WO_CTA_MARK(i) wo::cta_trace::mark(i)
// extern "C" int name(const char *path): this unit's ring into `path` (0, or a negative step).
#define WO_CTA_TRACE_EXPORT(name)                                                                            \
  extern "C" __attribute__((visibility("default"))) int name(const char *path) {                             \
    return wo::cta_trace::dump(path);                                                                        \
  }
#else
#define WO_CTA_SCOPE(kind, info) (void)0
#define WO_CTA_WAITED() (void)0
#define WO_CTA_MARK(i) (void)0
#define WO_CTA_TRACE_EXPORT(name)
#endif
