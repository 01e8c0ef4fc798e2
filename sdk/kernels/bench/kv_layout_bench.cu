// What decode attention's reads of the KV cache cost at depth, by cache layout and by how a block
// orders its loads: the reads alone (no math), as many blocks as the split kernel launches.
//
// Why: Phi-3-mini's attention at depth 2048 reads 25 MB of keys and values per layer in ~17 us
// (~1.5 TB/s, half of the copy bandwidth). The cache is position-major ([pos][kv_head][hd]), so a
// head's key rows are 192-byte pieces 6 KB apart; a head-major cache ([kv_head][pos][hd]) would
// give each block one contiguous run. And a block walks its keys in tiles of 64, the tile's values
// loaded after its scores: two dependent DRAM round trips per tile.
//
// Layouts: pos-major, head-major. Orders: "all" (every K and V load of the block in flight at
// once), "tiles" (per tile of 64 keys: all its K loads, their sum, then all its V loads, their sum:
// the split kernel's chain), "tiles K+V" (per tile, K and V loads issued together).
//
//   kv_layout_bench [--heads 32] [--hd 96] [--keys 2048] [--splits 12]
#include <worker/bench_timing.hpp>

#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

namespace {

using wo::bench::timing_ok;

constexpr int kThreads = 128;
constexpr int kTile = 64;
constexpr int kBatch = 8; // 16-byte loads a thread has in flight per step

struct Shape {
  int heads, hd, keys, splits;
  bool head_major;
};

// Byte offset of 16-byte chunk `part` of key `pos`'s row in head h.
__device__ __forceinline__ size_t row_at(const Shape &s, int h, int pos, int part) {
  const size_t row = static_cast<size_t>(s.hd) * 2;
  return s.head_major ? (static_cast<size_t>(h) * s.keys + pos) * row + part * 16
                      : (static_cast<size_t>(pos) * s.heads + h) * row + part * 16;
}

// Sum of the 16-byte chunks [c0, c1) of keys from k0 (chunk c: key c / parts) in cache `a`, and in
// cache `b` too when b is not null (each step's loads from both issued before any is used).
__device__ __forceinline__ unsigned sum_chunks(const uint8_t *a, const uint8_t *b, const Shape &s, int h,
                                               int k0, int c0, int c1) {
  const int parts = s.hd * 2 / 16;
  unsigned acc = 0;
  for (int c = c0 + static_cast<int>(threadIdx.x); c < c1; c += kThreads * kBatch) {
    uint4 va[kBatch], vb[kBatch];
#pragma unroll
    for (int i = 0; i < kBatch; ++i) {
      const int cc = c + i * kThreads;
      const size_t at = row_at(s, h, k0 + cc / parts, cc % parts);
      va[i] = cc < c1 ? __ldcs(reinterpret_cast<const uint4 *>(a + at)) : make_uint4(0, 0, 0, 0);
      vb[i] = b && cc < c1 ? __ldcs(reinterpret_cast<const uint4 *>(b + at)) : make_uint4(0, 0, 0, 0);
    }
#pragma unroll
    for (int i = 0; i < kBatch; ++i)
      acc += (va[i].x ^ va[i].y ^ va[i].z ^ va[i].w) + (vb[i].x ^ vb[i].y ^ vb[i].z ^ vb[i].w);
  }
  return acc;
}

// order: 0 all, 1 tiles (K then V), 2 tiles (K and V together).
__global__ void __launch_bounds__(kThreads)
    read_kernel(const uint8_t *k, const uint8_t *v, Shape s, int order, unsigned *sink) {
  const int h = blockIdx.x % s.heads, split = blockIdx.x / s.heads;
  const int per = (s.keys + s.splits - 1) / s.splits;
  const int k0 = split * per, n = min(per, s.keys - k0);
  if (n <= 0) return;
  const int parts = s.hd * 2 / 16;
  __shared__ unsigned red[kThreads];
  unsigned acc = 0;
  if (order == 0) {
    acc += sum_chunks(k, v, s, h, k0, 0, n * parts); // K and V in one walk, 2 x kBatch loads per step
  } else {
    for (int t0 = 0; t0 < n; t0 += kTile) {
      const int c0 = t0 * parts, c1 = min(t0 + kTile, n) * parts;
      if (order == 1) {
        acc += sum_chunks(k, nullptr, s, h, k0, c0, c1);
        red[threadIdx.x] = acc; // the scores' reduction: the values wait for every key's
        __syncthreads();
        acc += red[(threadIdx.x + 1) % kThreads];
        __syncthreads();
        acc += sum_chunks(v, nullptr, s, h, k0, c0, c1);
      } else {
        acc += sum_chunks(k, v, s, h, k0, c0, c1);
      }
      red[threadIdx.x] = acc;
      __syncthreads();
      acc += red[(threadIdx.x + 1) % kThreads];
      __syncthreads();
    }
  }
  if (acc == 0x12345678u) *sink = acc; // keeps the loads
}

int arg_int(int argc, char **argv, const char *name, int fallback) {
  for (int i = 1; i + 1 < argc; ++i)
    if (std::string(argv[i]) == name) {
      char *end = nullptr;
      const long v = std::strtol(argv[i + 1], &end, 10);
      if (*end != '\0' || v <= 0 || v > 1 << 20) {
        std::fprintf(stderr, "kv_layout_bench: %s expects a positive whole number, found '%s'\n", name,
                     argv[i + 1]);
        std::exit(2);
      }
      return static_cast<int>(v);
    }
  return fallback;
}

} // namespace

int main(int argc, char **argv) try {
  for (int i = 1; i < argc; i += 2) {
    const std::string a = argv[i];
    if ((a != "--heads" && a != "--hd" && a != "--keys" && a != "--splits") || i + 1 >= argc) {
      std::fprintf(stderr,
                   "usage: kv_layout_bench [--heads 32] [--hd 96] [--keys 2048] [--splits 12] (found '%s')\n",
                   a.c_str());
      return 2;
    }
  }
  Shape s{arg_int(argc, argv, "--heads", 32), arg_int(argc, argv, "--hd", 96),
          arg_int(argc, argv, "--keys", 2048), arg_int(argc, argv, "--splits", 12), false};
  if (s.hd % 8 != 0) {
    std::fprintf(stderr, "kv_layout_bench: --hd must be a multiple of 8, found %d\n", s.hd);
    return 2;
  }
  const cudaDeviceProp prop = wo::bench::current_device();
  const size_t cache = static_cast<size_t>(s.heads) * s.keys * s.hd * 2; // bytes of K (and of V)
  // Enough layers' caches that a graph of calls reads DRAM, not L2.
  const int layers =
      static_cast<int>(std::max<size_t>(4, 6 * static_cast<size_t>(prop.l2CacheSize) / (2 * cache)));
  uint8_t *pool = nullptr;
  unsigned *sink = nullptr;
  timing_ok(cudaMalloc(&pool, 2 * cache * layers), "malloc caches");
  timing_ok(cudaMemset(pool, 1, 2 * cache * layers), "memset caches");
  timing_ok(cudaMalloc(&sink, sizeof(unsigned)), "malloc sink");
  cudaStream_t st;
  timing_ok(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking), "stream");
  std::printf("%s; %d heads x %d dims x %d keys, %d splits (%d blocks of %d threads), K+V %.1f MB per call\n",
              prop.name, s.heads, s.hd, s.keys, s.splits, s.heads * s.splits, kThreads, 2.0 * cache / 1e6);
  std::printf("%-11s %-12s %10s %10s\n", "layout", "order", "us/call", "GB/s");
  const char *orders[] = {"all", "tiles", "tiles K+V"};
  for (const bool head_major : {false, true})
    for (int order = 0; order < 3; ++order) {
      s.head_major = head_major;
      const double us = wo::bench::graph_us_per_call(st, 48, [&](int i) {
        const uint8_t *k = pool + 2 * cache * (i % layers);
        read_kernel<<<s.heads * s.splits, kThreads, 0, st>>>(k, k + cache, s, order, sink);
        timing_ok(cudaGetLastError(), "read launch");
      });
      std::printf("%-11s %-12s %10.2f %10.0f\n", head_major ? "head-major" : "pos-major", orders[order], us,
                  2.0 * cache / (us * 1e3));
    }
  timing_ok(cudaFree(pool), "free caches");
  timing_ok(cudaFree(sink), "free sink");
  timing_ok(cudaStreamDestroy(st), "stream destroy");
  return 0;
} catch (const std::exception &e) {
  std::fprintf(stderr, "kv_layout_bench: %s\n", e.what());
  return 1;
}
