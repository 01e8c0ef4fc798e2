#include "sampling/gpu_sampler.hpp"

#include <worker/env_switch.hpp>
#include <worker/pdl.cuh>
#include <worker/sdk.hpp>

#include <cub/block/block_reduce.cuh>
#include <cub/block/block_scan.cuh>
#include <cub/device/device_radix_sort.cuh>

#include <algorithm>
#include <climits>
#include <string>

namespace wo::sampling {
namespace {

constexpr int kThreads = 1024;

void cuda_check(cudaError_t e, const char *what) {
  if (e != cudaSuccess)
    throw wo::Error(e == cudaErrorMemoryAllocation ? WO_ERR_OUT_OF_MEMORY : WO_ERR_CUDA,
                    std::string("sampler: ") + what + ": " + cudaGetErrorString(e));
}

// Token i's sort key: its logit, penalised if already generated, scaled by 1/T.
__device__ inline float penalised_logit(const float *logits, const uint8_t *seen, float penalty, int64_t i) {
  const float l = logits[i];
  return seen[i] ? (l > 0.0f ? l / penalty : l * penalty) : l;
}
__device__ inline float sample_key(const float *logits, const uint8_t *seen, float penalty, float inv_t,
                                   int64_t i) {
  return penalised_logit(logits, seen, penalty, i) * inv_t;
}

// The draw's result: the id the next decode step reads, and the history's mark for the repetition
// penalty (every path's last kernel, one thread).
__device__ inline void choose(int32_t *out_id, uint8_t *seen, int64_t id) {
  *out_id = static_cast<int32_t>(id);
  seen[id] = 1;
}

// keys = penalised logits scaled by 1/T; vals = ids.
__global__ void prepare_kernel(const float *logits, const uint8_t *seen, float penalty, float inv_t,
                               float *keys, int32_t *vals, int64_t n) {
  int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (i >= n) return;
  keys[i] = sample_key(logits, seen, penalty, inv_t, i);
  vals[i] = static_cast<int32_t>(i);
}

// Greedy: argmax of the penalised logits, lowest id on ties (NaN never wins; all NaN gives id 0).
// Many blocks so that the whole GPU reads the vocabulary (one block took 62 us over 151936 logits on
// an H100, a tenth of a 0.5B model's decode step): kArgmaxBlocks blocks each reduce a strided share
// into (value, id) partials, then the last of them reduces the partials, writes the id and marks it
// seen (argmax_kernel).
constexpr int kArgmaxBlocks = 264; // two per SM of an H100
constexpr int kArgmaxThreads = 256;

__device__ inline void better(float &bv, int32_t &bi, float v, int32_t i) {
  if (v > bv || (v == bv && i < bi)) bv = v, bi = i;
}

// The block's best (value, id) in thread 0 (and the rest of warp 0): each warp's by shuffles, then
// warp 0's over the warps' (better is a total order with NaN never winning, so any order of the
// comparisons gives the same pair). The shared-memory tree it replaced took eight barriers.
__device__ void block_argmax(float &bv, int32_t &bi) {
  __shared__ float sv[32];
  __shared__ int32_t si[32];
  const auto warp_best = [&] {
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) {
      const float v = __shfl_xor_sync(0xffffffffu, bv, o);
      const int32_t i = __shfl_xor_sync(0xffffffffu, bi, o);
      better(bv, bi, v, i);
    }
  };
  warp_best();
  if (threadIdx.x % 32 == 0) sv[threadIdx.x / 32] = bv, si[threadIdx.x / 32] = bi;
  __syncthreads();
  if (threadIdx.x < 32) {
    const bool on = threadIdx.x < blockDim.x / 32;
    bv = on ? sv[threadIdx.x] : -INFINITY, bi = on ? si[threadIdx.x] : INT_MAX;
    warp_best();
  }
}

// The chosen id into the host's mapped slot, fenced so that an event recorded after the kernel
// finds it written (publish_id_kernel, and the greedy argmax_kernel itself).
__device__ inline void publish_id(int32_t id, int32_t *h_slot) {
  *static_cast<volatile int32_t *>(h_slot) = id;
  __threadfence_system();
}

// Greedy in one launch: each block reduces its strided share into its (value, id) partial, and the
// block that finishes last (a ticket per launch, which that block resets to zero) reduces the
// partials, writes the id, marks it seen and, given h_slot, publishes it to the host as
// publish_id_kernel does. Why: the final reduction and the publication were two more launches
// after the partials, each a kernel boundary on the step's chain (H100 timeline, Qwen2.5 decode:
// argmax partial 3.9 us, final 1.9, publication 2.0 exposed per step).
__global__ void argmax_kernel(const float *logits, uint8_t *seen, float penalty, int64_t n, float *part_v,
                              int32_t *part_i, unsigned *ticket, int32_t *out_id, int32_t *h_slot) {
  pdl::enter(); // launched with pdl::launch (greedy decode: one kernel after the step)
  float bv = -INFINITY;
  int32_t bi = INT_MAX;
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    better(bv, bi, penalised_logit(logits, seen, penalty, i), static_cast<int32_t>(i));
  }
  block_argmax(bv, bi);
  __shared__ bool last;
  if (threadIdx.x == 0) {
    part_v[blockIdx.x] = bv, part_i[blockIdx.x] = bi;
    __threadfence(); // the partial before the ticket: the last block's reads below see it
    last = atomicAdd(ticket, 1u) == gridDim.x - 1;
  }
  __syncthreads();
  if (!last) return;
  // Every other block took its ticket after its partial and after its reads of `seen`, so the
  // partials are complete (read from L2, past this SM's L1) and marking the choice seen is safe.
  __threadfence();
  bv = -INFINITY, bi = INT_MAX;
  for (int i = threadIdx.x; i < static_cast<int>(gridDim.x); i += blockDim.x)
    better(bv, bi, __ldcg(part_v + i), __ldcg(part_i + i));
  block_argmax(bv, bi);
  if (threadIdx.x == 0) {
    *ticket = 0; // for the next launch (stream-ordered after this one)
    const int32_t id = bi == INT_MAX ? 0 : bi;
    choose(out_id, seen, id);
    if (h_slot) publish_id(id, h_slot);
  }
}

// The chosen id into a mapped pinned slot (request_id): a kernel after the sampler's last one, under
// PDL, where a cudaMemcpyAsync of the 4 bytes put a copy-engine operation between that kernel and
// the next step's first (run-ahead queues it right behind). The event recorded after it makes the
// write visible to the host; the fence orders it before the kernel's end.
__global__ void publish_id_kernel(const int32_t *d_id, int32_t *h_slot) {
  pdl::enter();
  publish_id(*d_id, h_slot);
}

using BlockReduce = cub::BlockReduce<float, kThreads>;
using BlockScan = cub::BlockScan<float, kThreads>;

struct FilterShared {
  union {
    typename BlockReduce::TempStorage reduce;
    typename BlockScan::TempStorage scan;
  } tmp;
  float total;
  int found;
};

__device__ float weight(const float *keys, float lmax, int64_t i) { return expf(keys[i] - lmax); }

// Sum of weights over [0, limit).
__device__ float block_sum(FilterShared &sh, const float *keys, float lmax, int64_t limit) {
  float acc = 0.0f;
  for (int64_t i = threadIdx.x; i < limit; i += blockDim.x)
    acc += weight(keys, lmax, i);
  float s = BlockReduce(sh.tmp.reduce).Sum(acc);
  if (threadIdx.x == 0) sh.total = s;
  __syncthreads();
  float r = sh.total;
  __syncthreads();
  return r;
}

// The first index i < count whose running sum (carry + the block's inclusive scan, kThreads values
// at a time) passes `threshold` (> when strictly_greater, else >=), or count when none; value(i)
// gives value i. With `total`, the scan runs to the end and leaves the whole sum there; without,
// it stops at the first hit.
template <class V>
__device__ int64_t scan_first(FilterShared &sh, int64_t count, float carry, float threshold,
                              bool strictly_greater, float *total, V &&value) {
  int64_t found = count;
  for (int64_t base = 0; base < count; base += blockDim.x) {
    const int64_t i = base + threadIdx.x;
    const float x = i < count ? value(i) : 0.0f;
    float incl, chunk;
    if (threadIdx.x == 0) sh.found = INT_MAX;
    __syncthreads();
    BlockScan(sh.tmp.scan).InclusiveSum(x, incl, chunk);
    const float run = carry + incl;
    const bool hit = i < count && (strictly_greater ? run > threshold : run >= threshold);
    if (hit) atomicMin(&sh.found, static_cast<int>(i - base));
    __syncthreads();
    const int f = sh.found;
    __syncthreads();
    if (f != INT_MAX && found == count) {
      found = base + f;
      if (!total) return found;
    }
    carry += chunk;
  }
  if (total) *total = carry;
  return found;
}

// First index i < limit whose inclusive prefix sum of weights is >= threshold (limit when none).
__device__ int64_t block_first_reaching(FilterShared &sh, const float *keys, float lmax, int64_t limit,
                                        float threshold, bool strictly_greater) {
  return scan_first(sh, limit, 0.0f, threshold, strictly_greater, nullptr,
                    [&](int64_t i) { return weight(keys, lmax, i); });
}

// keys sorted descending (ties by id ascending). Applies top-k, top-p, min-p, then draws (one block
// of kThreads).
__device__ void filter_draw(FilterShared &sh, const float *keys, const int32_t *ids, int64_t n, int32_t top_k,
                            float top_p, float min_p, float u, int32_t *out_id, uint8_t *seen) {
  const float lmax = keys[0];
  int64_t keep = top_k > 0 && top_k < n ? top_k : n;
  if (min_p > 0.0f) {
    // weights are non-increasing: binary search the first weight below min_p.
    int64_t lo = 1, hi = keep;
    while (lo < hi) {
      int64_t mid = (lo + hi) / 2;
      if (weight(keys, lmax, mid) >= min_p)
        lo = mid + 1;
      else
        hi = mid;
    }
    keep = lo;
  }
  if (top_p < 1.0f) {
    int64_t k_only = top_k > 0 && top_k < n ? top_k : n;
    float z_k = block_sum(sh, keys, lmax, k_only);
    int64_t cut = block_first_reaching(sh, keys, lmax, k_only, top_p * z_k, false) + 1;
    if (cut < keep) keep = cut;
  }
  float z = block_sum(sh, keys, lmax, keep);
  int64_t pick = block_first_reaching(sh, keys, lmax, keep, u * z, true);
  if (pick >= keep) pick = keep - 1;
  if (threadIdx.x == 0) choose(out_id, seen, ids[pick]);
}

__global__ void filter_draw_kernel(const float *keys, const int32_t *ids, int64_t n, int32_t top_k,
                                   float top_p, float min_p, float u, int32_t *out_id, uint8_t *seen) {
  __shared__ FilterShared sh;
  filter_draw(sh, keys, ids, n, top_k, top_p, min_p, u, out_id, seen);
}

// Top-k without sorting the vocabulary (1 <= top_k <= kSelectMaxK, top_k < n; filter_draw only reads
// the first top_k of the sorted order, so it draws exactly as after the full sort). The full path's
// radix sort of 151,936 keys took 4 x 11.5 us per token on an H100, plus ~20 us of gaps between its
// kernels; sorting each tile and then the tiles' candidates in one block (3795c11) still took 10.8
// and 28.4 us (timeline, Qwen's vocabulary, top-k 40), where greedy's argmax takes 6.2.
//   tile: each block finds its tile's first top_k (TopK::select) and writes them, in no order;
//   draw: one block finds the first top_k of the tiles' candidates, puts them in the sorted order
//         and runs filter_draw on them in shared memory.
// The sorted order is the full sort's: keys descending as unsigned bits in cub's order for floats
// (-0.0 equal to +0.0), ties by id ascending (the full sort is stable over ids in order).
constexpr int kTileThreads = 512, kTileItems = 4, kTileKeys = kTileThreads * kTileItems;
constexpr int kDrawItems = 8, kTopkCandidates = kThreads * kDrawItems;
constexpr int kSelectMaxK = kThreads; // the draw places one key per thread

__device__ inline uint32_t order_bits(float f) {
  uint32_t b = __float_as_uint(f);
  if (b == 0x80000000u) b = 0u; // -0.0 sorts as +0.0
  return (b & 0x80000000u) ? ~b : (b | 0x80000000u);
}

// The first k (bits descending, ids ascending) of a block's kT x kI keys, ids >= 0 (id -1: none),
// k <= the keys present. A radix select over four 8-bit digits, from the top, finds the k-th key's
// bits t (a shared-memory histogram per digit; `need` counts the keys still to take at or below the
// digits chosen); the keys above t and the ties at t with the smallest ids are the first k.
template <int kT, int kI> struct TopK {
  struct Shared {
    uint32_t hist[256];
    uint32_t prefix, need, n_tie;
    int32_t tie_ids[kT * kI]; // the ties at t, when more tie than are needed
  };
  // emit(bits, id) once for each of the first k, in no particular order.
  template <class Emit>
  __device__ static void select(Shared &sh, const uint32_t (&bits)[kI], const int32_t (&ids)[kI], int k,
                                Emit &&emit) {
    if (threadIdx.x == 0) sh.prefix = 0u, sh.need = static_cast<uint32_t>(k), sh.n_tie = 0u;
    uint32_t mask = 0u;
    for (int shift = 24; shift >= 0; shift -= 8) {
      for (int d = threadIdx.x; d < 256; d += kT)
        sh.hist[d] = 0u;
      __syncthreads();
      const uint32_t prefix = sh.prefix;
#pragma unroll
      for (int j = 0; j < kI; ++j)
        if (ids[j] >= 0 && (bits[j] & mask) == prefix) atomicAdd(&sh.hist[(bits[j] >> shift) & 255u], 1u);
      __syncthreads();
      if (threadIdx.x < 32) { // lane l: digits 255 - 8 l down to 248 - 8 l; the warp scans their counts
        const int lane = static_cast<int>(threadIdx.x);
        uint32_t c[8], sum = 0;
#pragma unroll
        for (int i = 0; i < 8; ++i)
          c[i] = sh.hist[255 - 8 * lane - i], sum += c[i];
        uint32_t incl = sum;
#pragma unroll
        for (int o = 1; o < 32; o <<= 1) {
          const uint32_t v = __shfl_up_sync(0xffffffffu, incl, o);
          if (lane >= o) incl += v;
        }
        const uint32_t need = sh.need;
        const unsigned hit = __ballot_sync(0xffffffffu, incl >= need); // some lane: the keys reach need
        if (lane == __ffs(hit) - 1) {
          uint32_t above = incl - sum;
          int i = 0;
          while (above + c[i] < need)
            above += c[i++];
          sh.prefix = prefix | (static_cast<uint32_t>(255 - 8 * lane - i) << shift);
          sh.need = need - above;
        }
      }
      mask |= 255u << shift;
      __syncthreads();
    }
    const uint32_t t = sh.prefix, need = sh.need; // 1 <= need <= the ties at t
    const uint32_t n_tie = sh.hist[t & 255u];
#pragma unroll
    for (int j = 0; j < kI; ++j) {
      if (ids[j] < 0) continue;
      if (bits[j] > t || (bits[j] == t && n_tie == need))
        emit(bits[j], ids[j]);
      else if (bits[j] == t)
        sh.tie_ids[atomicAdd(&sh.n_tie, 1u)] = ids[j];
    }
    if (n_tie == need) return; // (uniform)
    __syncthreads();
#pragma unroll
    for (int j = 0; j < kI; ++j) {
      if (ids[j] < 0 || bits[j] != t) continue;
      uint32_t rank = 0; // ties with a smaller id
      for (uint32_t i = 0; i < n_tie; ++i)
        rank += sh.tie_ids[i] < ids[j];
      if (rank < need) emit(t, ids[j]);
    }
  }
};

__global__ void __launch_bounds__(kTileThreads)
    topk_tile_kernel(const float *logits, const uint8_t *seen, float penalty, float inv_t, int64_t n,
                     int32_t k, float *keys, uint32_t *cand_bits, int32_t *cand_ids) {
  pdl::enter(); // launched with pdl::launch (after the step's last kernel)
  using Select = TopK<kTileThreads, kTileItems>;
  __shared__ typename Select::Shared sh;
  __shared__ uint32_t n_out;
  uint32_t bits[kTileItems];
  int32_t ids[kTileItems];
  const int64_t first = static_cast<int64_t>(blockIdx.x) * kTileKeys;
#pragma unroll
  for (int j = 0; j < kTileItems; ++j) {
    const int64_t i = first + j * kTileThreads + threadIdx.x;
    bits[j] = 0u, ids[j] = -1;
    if (i < n) {
      const float key = sample_key(logits, seen, penalty, inv_t, i);
      keys[i] = key;
      bits[j] = order_bits(key), ids[j] = static_cast<int32_t>(i);
    }
  }
  if (threadIdx.x == 0) n_out = 0u;
  // A tile of fewer than k keys (the last) gives them all; its other slots stay empty (id -1).
  const int present = n - first < kTileKeys ? static_cast<int>(n - first) : kTileKeys;
  const int kk = k < present ? k : present;
  for (int r = kk + static_cast<int>(threadIdx.x); r < k; r += kTileThreads)
    cand_ids[blockIdx.x * k + r] = -1;
  Select::select(sh, bits, ids, kk, [&](uint32_t b, int32_t id) {
    const uint32_t at = atomicAdd(&n_out, 1u);
    cand_bits[blockIdx.x * k + at] = b, cand_ids[blockIdx.x * k + at] = id;
  });
}

__global__ void __launch_bounds__(kThreads)
    topk_draw_kernel(const uint32_t *cand_bits, const int32_t *cand_ids, int n_cand, const float *keys,
                     int32_t k, float top_p, float min_p, float u, int32_t *out_id, uint8_t *seen) {
  pdl::enter(); // launched with pdl::launch
  using Select = TopK<kThreads, kDrawItems>;
  __shared__ struct {
    uint32_t n_sel;
    uint32_t sel_bits[kSelectMaxK];
    int32_t sel_ids[kSelectMaxK];
    union {
      typename Select::Shared select;
      struct {
        float keys[kSelectMaxK];
        int32_t ids[kSelectMaxK];
      } top; // the first k in the sorted order
    };
  } sh;
  __shared__ FilterShared filter;
  uint32_t bits[kDrawItems];
  int32_t ids[kDrawItems];
#pragma unroll
  for (int j = 0; j < kDrawItems; ++j) {
    const int r = j * kThreads + static_cast<int>(threadIdx.x);
    ids[j] = r < n_cand ? cand_ids[r] : -1;
    bits[j] = ids[j] >= 0 ? cand_bits[r] : 0u;
  }
  if (threadIdx.x == 0) sh.n_sel = 0u;
  Select::select(sh.select, bits, ids, k, [&](uint32_t b, int32_t id) {
    const uint32_t at = atomicAdd(&sh.n_sel, 1u);
    sh.sel_bits[at] = b, sh.sel_ids[at] = id;
  });
  __syncthreads();
  // Each of the k takes its place in the sorted order (bits descending, ids ascending).
  if (threadIdx.x < static_cast<unsigned>(k)) {
    const uint32_t b = sh.sel_bits[threadIdx.x];
    const int32_t id = sh.sel_ids[threadIdx.x];
    int rank = 0;
    for (int i = 0; i < k; ++i) {
      const uint32_t bi = sh.sel_bits[i];
      rank += bi > b || (bi == b && sh.sel_ids[i] < id);
    }
    sh.top.keys[rank] = keys[id], sh.top.ids[rank] = id;
  }
  __syncthreads();
  filter_draw(filter, sh.top.keys, sh.top.ids, k, k, top_p, min_p, u, out_id, seen);
}

// Top-p without top-k (the nucleus: the sorted order's shortest prefix whose weight reaches top_p of
// the whole) without sorting. Weights are summed as 64-bit fixed point (w x 2^40: integer atomics
// give the same sums in any order, so the draws stay deterministic; the rounding is at most
// n x 2^-40 of z, which is >= 1). A radix select on the keys' sort bits, three digits of 11, 11 and
// 10 bits, finds the key where the sorted mass reaches top_p z (per-digit masses, the heavier keys'
// mass carried); the ties at that key join by id, as the sorted order takes them; then min-p's set
// (the shorter of two sorted prefixes is their intersection) and an id-order walk of the kept
// weights, as for the draws without top-p.
constexpr int kNucleusBins = 2048;
__host__ __device__ constexpr int digit_shift(int pass) { return pass == 0 ? 21 : pass == 1 ? 10 : 0; }
__host__ __device__ constexpr int digit_bits(int pass) { return pass == 2 ? 10 : 11; }
constexpr double kMassScale = 0x1p40;

struct NucleusState {
  unsigned long long z, target, above; // total, top_p z (rounded up), mass of keys past the prefix
  uint32_t prefix;                     // the digits chosen so far
  uint32_t tie_bits, tie_count, ties_needed;
  unsigned long long tie_w; // each tie's fixed-point weight
  float tie_weight;         // and as a float (min-p)
};
struct NucleusBuffers {
  unsigned long long *hist = nullptr; // [kNucleusBins] masses of the pass's digits
  uint32_t *count = nullptr;          // [kNucleusBins] keys per digit (the last pass: the ties)
  NucleusState *state = nullptr;
  unsigned long long *chunk_mass = nullptr; // [n_chunks] kept mass of keys past the ties
  uint32_t *chunk_ties = nullptr;           // [n_chunks] ties per chunk
};

__device__ inline unsigned long long fixed_weight(float w) {
  return __double2ull_rn(static_cast<double>(w) * kMassScale);
}
__device__ inline float key_of_bits(uint32_t b) { // order_bits' inverse (+0.0 for either zero)
  return __uint_as_float((b & 0x80000000u) ? (b & 0x7fffffffu) : ~b);
}

// Draws that need no sorted order (no top-k, no top-p; min-p keeps the tokens whose weight reaches
// it, a set): the draw walks the kept weights in id order, which gives each token the same
// probability w / z as the sorted walk (the ids for a given u differ, the distribution does not).
// The full path spent ~70 us per token on Qwen's vocabulary sorting it and ~40 us walking it in one
// block. Chunks of kThreads ids:
//   unsorted_keys:  keys and each chunk's largest key;
//   unsorted_sums:  each chunk's weights (0 under min-p) and their inclusive scan's last value;
//   unsorted_draw:  one block scans the chunk sums for z and for the chunk where u z is passed, then
//                   that chunk's weights with the same scan (so the chunk's total agrees bit for bit).
__device__ inline float chunk_max(const float *chunk_max_keys, int n_chunks) {
  using Reduce = cub::BlockReduce<float, kThreads>;
  __shared__ typename Reduce::TempStorage tmp;
  __shared__ float result;
  float m = -INFINITY;
  for (int c = threadIdx.x; c < n_chunks; c += kThreads)
    m = fmaxf(m, chunk_max_keys[c]);
  m = Reduce(tmp).Reduce(m, [](float a, float b) { return fmaxf(a, b); });
  if (threadIdx.x == 0) result = m;
  __syncthreads();
  return result;
}

__device__ inline float kept_weight(const float *keys, int64_t n, int64_t i, float lmax, float min_p) {
  if (i >= n) return 0.0f;
  const float w = weight(keys, lmax, i); // the sorted path's
  return min_p > 0.0f && w < min_p ? 0.0f : w;
}

__global__ void __launch_bounds__(kThreads)
    unsorted_keys_kernel(const float *logits, const uint8_t *seen, float penalty, float inv_t, int64_t n,
                         float *keys, float *chunk_max_keys, NucleusBuffers nb) {
  pdl::enter();                     // launched with pdl::launch (after the step's last kernel)
  if (nb.hist && blockIdx.x == 0) { // the nucleus's histogram and state, zero for its first pass
    for (int b = threadIdx.x; b < kNucleusBins; b += kThreads)
      nb.hist[b] = 0, nb.count[b] = 0;
    if (threadIdx.x == 0) *nb.state = NucleusState{};
  }
  using Reduce = cub::BlockReduce<float, kThreads>;
  __shared__ typename Reduce::TempStorage tmp;
  const int64_t i = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x;
  float key = -INFINITY;
  if (i < n) keys[i] = key = sample_key(logits, seen, penalty, inv_t, i);
  const float m = Reduce(tmp).Reduce(key, [](float a, float b) { return fmaxf(a, b); });
  if (threadIdx.x == 0) chunk_max_keys[blockIdx.x] = m;
}

__global__ void __launch_bounds__(kThreads)
    unsorted_sums_kernel(const float *keys, int64_t n, const float *chunk_max_keys, int n_chunks, float min_p,
                         float *chunk_sums) {
  pdl::enter();
  using Scan = cub::BlockScan<float, kThreads>;
  __shared__ typename Scan::TempStorage tmp;
  const float lmax = chunk_max(chunk_max_keys, n_chunks);
  const int64_t i = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x;
  float incl;
  Scan(tmp).InclusiveSum(kept_weight(keys, n, i, lmax, min_p), incl);
  if (threadIdx.x == kThreads - 1) chunk_sums[blockIdx.x] = incl;
}

__global__ void __launch_bounds__(kThreads)
    unsorted_draw_kernel(const float *keys, int64_t n, const float *chunk_max_keys, const float *chunk_sums,
                         int n_chunks, float min_p, float u, int32_t *out_id, uint8_t *seen) {
  pdl::enter();
  __shared__ FilterShared sh;
  const float lmax = chunk_max(chunk_max_keys, n_chunks);
  const auto chunk_sum = [&](int64_t c) { return chunk_sums[c]; };
  float z = 0.0f, before = 0.0f; // before: the chunk sums ahead of chunk c, in the scan's order
  (void)scan_first(sh, n_chunks, 0.0f, INFINITY, true, &z, chunk_sum);
  const float t = u * z;
  const int64_t c = scan_first(sh, n_chunks, 0.0f, t, true, nullptr, chunk_sum);
  int64_t pick = -1, lo = 0, hi = n; // where to look for the last kept id if the walk finds none
  if (c < n_chunks) {
    (void)scan_first(sh, c, 0.0f, INFINITY, true, &before, chunk_sum);
    const int64_t base = c * kThreads, len = min(static_cast<int64_t>(kThreads), n - base);
    const int64_t j = scan_first(sh, len, before, t, true, nullptr,
                                 [&](int64_t k) { return kept_weight(keys, n, base + k, lmax, min_p); });
    if (j < len) pick = base + j;
    lo = base, hi = base + len;
  }
  if (pick < 0) { // rounding left u z at or past the walk's last sum: the last kept id there
    __shared__ unsigned long long last;
    if (threadIdx.x == 0) last = 0;
    __syncthreads();
    for (int64_t i = lo + threadIdx.x; i < hi; i += kThreads)
      if (kept_weight(keys, n, i, lmax, min_p) > 0.0f) atomicMax(&last, static_cast<unsigned long long>(i));
    __syncthreads();
    pick = static_cast<int64_t>(last);
  }
  if (threadIdx.x == 0) choose(out_id, seen, pick);
}

// Pass p of the select: the masses (and counts) of digit p of the keys whose earlier digits are the
// prefix chosen so far; pass 0 also sums z.
__global__ void __launch_bounds__(kThreads)
    nucleus_hist_kernel(const float *keys, int64_t n, const float *chunk_max_keys, int n_chunks, int pass,
                        NucleusBuffers nb) {
  pdl::enter();
  using Reduce = cub::BlockReduce<unsigned long long, kThreads>;
  __shared__ typename Reduce::TempStorage tmp;
  __shared__ unsigned long long mass[kNucleusBins];
  __shared__ uint32_t count[kNucleusBins];
  for (int b = threadIdx.x; b < kNucleusBins; b += kThreads)
    mass[b] = 0, count[b] = 0;
  const float lmax = chunk_max(chunk_max_keys, n_chunks); // (its barrier orders the zeroing too)
  const uint32_t prefix = nb.state->prefix;
  const int64_t i = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x;
  int d = -1; // this key's digit, -1 outside the prefix
  unsigned long long w = 0;
  if (i < n) {
    const float key = keys[i];
    const uint32_t bits = order_bits(key);
    const int high = digit_shift(pass) + digit_bits(pass);
    if (high == 32 || (bits >> high) == prefix) {
      w = fixed_weight(expf(key - lmax)); // weight() of the sorted path
      d = static_cast<int>((bits >> digit_shift(pass)) & ((1u << digit_bits(pass)) - 1u));
    }
  }
  // Most keys share a few digits: one shared-memory atomic per digit per warp, not per key. A
  // group's masses add as two 32-bit halves (w < 2^41, so 32 of them fit 2^20-scaled halves).
  const unsigned group = __match_any_sync(0xffffffffu, d);
  const unsigned lo = __reduce_add_sync(group, static_cast<unsigned>(w & 0xfffffu));
  const unsigned hi = __reduce_add_sync(group, static_cast<unsigned>(w >> 20));
  if (d >= 0 && static_cast<int>(threadIdx.x % 32) == __ffs(group) - 1) {
    atomicAdd(&mass[d], (static_cast<unsigned long long>(hi) << 20) + lo);
    atomicAdd(&count[d], static_cast<uint32_t>(__popc(group)));
  }
  const unsigned long long total = pass == 0 ? Reduce(tmp).Sum(w) : 0ull;
  __syncthreads();
  for (int b = threadIdx.x; b < kNucleusBins; b += kThreads)
    if (count[b]) atomicAdd(&nb.hist[b], mass[b]), atomicAdd(&nb.count[b], count[b]);
  if (pass == 0 && threadIdx.x == 0) atomicAdd(&nb.state->z, total);
}

// The digit where the mass of heavier keys (carried) plus the digits from the top reaches the
// target; the histogram is zeroed for the next pass. The last pass fixes the ties.
__global__ void __launch_bounds__(kThreads)
    nucleus_find_kernel(const float *chunk_max_keys, int n_chunks, float top_p, int pass, NucleusBuffers nb) {
  pdl::enter();
  using Scan = cub::BlockScan<unsigned long long, kThreads>;
  __shared__ typename Scan::TempStorage tmp;
  __shared__ int found;
  NucleusState &st = *nb.state;
  if (pass == 0 && threadIdx.x == 0)
    st.target = static_cast<unsigned long long>(ceil(static_cast<double>(top_p) * static_cast<double>(st.z)));
  if (threadIdx.x == 0) found = INT_MAX;
  __syncthreads();
  const int bins = 1 << digit_bits(pass), per = bins / kThreads; // per = 2 or 1, digits descending
  unsigned long long m[2] = {0, 0};
  for (int j = 0; j < per; ++j)
    m[j] = nb.hist[bins - 1 - (threadIdx.x * per + j)];
  unsigned long long before;
  Scan(tmp).ExclusiveSum(m[0] + m[1], before);
  unsigned long long run = st.above + before;
  for (int j = 0; j < per; ++j) {
    run += m[j];
    if (run >= st.target) atomicMin(&found, static_cast<int>(threadIdx.x) * per + j);
    if (run >= st.target) break;
  }
  __syncthreads();
  const int pos = found == INT_MAX ? bins - 1 : found; // (exact integers: always found)
  const int d = bins - 1 - pos;
  // the mass of the digits above d: the scan's value before pos
  if (static_cast<int>(threadIdx.x) == pos / per) {
    unsigned long long above = st.above + before;
    for (int j = 0; j < pos % per; ++j)
      above += m[j];
    const uint32_t count = nb.count[d];
    st.above = above;
    st.prefix = (st.prefix << digit_bits(pass)) | static_cast<uint32_t>(d);
    if (pass == 2) st.tie_bits = st.prefix, st.tie_count = count;
  }
  __syncthreads();
  if (pass == 2) { // the ties' weight needs lmax: every thread takes part in chunk_max
    const float lmax = chunk_max(chunk_max_keys, n_chunks);
    if (threadIdx.x == 0) {
      st.tie_weight = expf(key_of_bits(st.tie_bits) - lmax);
      st.tie_w = fixed_weight(st.tie_weight);
      const unsigned long long need = st.target > st.above ? st.target - st.above : 0;
      unsigned long long k = st.tie_w ? (need + st.tie_w - 1) / st.tie_w : st.tie_count;
      k = k < 1 ? 1 : k;
      st.ties_needed = static_cast<uint32_t>(k > st.tie_count ? st.tie_count : k);
    }
  }
  __syncthreads();
  for (int b = threadIdx.x; b < bins; b += kThreads)
    nb.hist[b] = 0, nb.count[b] = 0;
}

// A key's kept fixed-point weight past the ties (min-p's set included), and whether it is a tie.
__device__ inline unsigned long long nucleus_weight(const float *keys, int64_t i, float lmax, float min_p,
                                                    uint32_t tie_bits, bool &tie) {
  const float key = keys[i];
  const uint32_t bits = order_bits(key);
  tie = bits == tie_bits;
  if (bits <= tie_bits) return 0;
  const float w = expf(key - lmax);
  return min_p > 0.0f && w < min_p ? 0 : fixed_weight(w);
}

__global__ void __launch_bounds__(kThreads)
    nucleus_chunks_kernel(const float *keys, int64_t n, const float *chunk_max_keys, int n_chunks,
                          float min_p, NucleusBuffers nb) {
  pdl::enter();
  using ReduceM = cub::BlockReduce<unsigned long long, kThreads>;
  using ReduceC = cub::BlockReduce<uint32_t, kThreads>;
  __shared__ typename ReduceM::TempStorage tm;
  __shared__ typename ReduceC::TempStorage tc;
  const float lmax = chunk_max(chunk_max_keys, n_chunks);
  const uint32_t tie_bits = nb.state->tie_bits;
  const int64_t i = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x;
  bool tie = false;
  const unsigned long long w = i < n ? nucleus_weight(keys, i, lmax, min_p, tie_bits, tie) : 0;
  const unsigned long long m = ReduceM(tm).Sum(w);
  const uint32_t t = ReduceC(tc).Sum(i < n && tie ? 1u : 0u);
  if (threadIdx.x == 0) nb.chunk_mass[blockIdx.x] = m, nb.chunk_ties[blockIdx.x] = t;
}

__global__ void __launch_bounds__(kThreads)
    nucleus_draw_kernel(const float *keys, int64_t n, const float *chunk_max_keys, int n_chunks, float min_p,
                        float u, NucleusBuffers nb, int32_t *out_id, uint8_t *seen) {
  pdl::enter();
  using ScanM = cub::BlockScan<unsigned long long, kThreads>;
  using ScanC = cub::BlockScan<uint32_t, kThreads>;
  __shared__ union {
    typename ScanM::TempStorage m;
    typename ScanC::TempStorage c;
  } tmp;
  __shared__ int found, tie_chunk;
  __shared__ uint32_t tie_base; // ties in the chunks ahead of tie_chunk
  __shared__ int64_t last_tie;
  __shared__ unsigned long long carry;
  if (threadIdx.x == 0) tie_chunk = 0, tie_base = 0, last_tie = -1;
  const float lmax = chunk_max(chunk_max_keys, n_chunks); // (its barrier orders the stores above)
  const NucleusState st = *nb.state;
  const bool ties_in = !(min_p > 0.0f && st.tie_weight < min_p);
  const int c = threadIdx.x; // n_chunks <= kThreads (sample())
  // The chunk of the last tie taken (the ties_needed-th in id order), and that tie's id.
  const uint32_t tc = c < n_chunks ? nb.chunk_ties[c] : 0u;
  uint32_t ties_before;
  ScanC(tmp.c).ExclusiveSum(tc, ties_before);
  if (c < n_chunks && ties_before < st.ties_needed && ties_before + tc >= st.ties_needed)
    tie_chunk = c, tie_base = ties_before;
  __syncthreads();
  {
    const int64_t i = tie_chunk * kThreads + threadIdx.x;
    bool tie = false;
    if (i < n) (void)nucleus_weight(keys, i, lmax, min_p, st.tie_bits, tie);
    uint32_t rank;
    __syncthreads();
    ScanC(tmp.c).InclusiveSum(i < n && tie ? 1u : 0u, rank);
    if (i < n && tie && tie_base + rank == st.ties_needed) last_tie = i;
  }
  __syncthreads();
  // Each chunk's kept mass with its ties (all of them before tie_chunk, the first ties_needed
  // overall), z, and the chunk where u z is passed.
  unsigned long long mc = 0;
  if (c < n_chunks) {
    const uint32_t ties = c < tie_chunk ? tc : c == tie_chunk ? st.ties_needed - ties_before : 0u;
    mc = nb.chunk_mass[c] + (ties_in ? st.tie_w * ties : 0ull);
  }
  unsigned long long before, z;
  __syncthreads();
  ScanM(tmp.m).ExclusiveSum(mc, before, z);
  unsigned long long t = static_cast<unsigned long long>(static_cast<double>(u) * static_cast<double>(z));
  if (t >= z) t = z - 1; // (u < 1; the product rounded up)
  if (threadIdx.x == 0) found = INT_MAX;
  __syncthreads();
  if (c < n_chunks && before + mc > t) atomicMin(&found, c);
  __syncthreads();
  const int chunk = found == INT_MAX ? n_chunks - 1 : found;
  if (c == chunk) carry = before;
  __syncthreads();
  // The walk inside that chunk, in id order.
  const int64_t i = static_cast<int64_t>(chunk) * kThreads + threadIdx.x;
  unsigned long long w = 0;
  if (i < n) {
    bool tie = false;
    w = nucleus_weight(keys, i, lmax, min_p, st.tie_bits, tie);
    if (tie && ties_in && i <= last_tie) w = st.tie_w;
  }
  unsigned long long incl;
  __syncthreads();
  ScanM(tmp.m).InclusiveSum(w, incl);
  if (threadIdx.x == 0) found = INT_MAX;
  __syncthreads();
  if (i < n && w > 0 && carry + incl > t) atomicMin(&found, static_cast<int>(threadIdx.x));
  __syncthreads();
  if (threadIdx.x == 0) {
    const int64_t pick = chunk * static_cast<int64_t>(kThreads) + (found == INT_MAX ? 0 : found);
    choose(out_id, seen, pick);
  }
}

// The nucleus path's buffers, carved from one allocation of nucleus_bytes(n).
size_t nucleus_bytes(int64_t n) {
  const size_t chunks = static_cast<size_t>((n + kThreads - 1) / kThreads);
  return kNucleusBins * (sizeof(unsigned long long) + sizeof(uint32_t)) + 64 +
         chunks * (sizeof(unsigned long long) + sizeof(uint32_t));
}
NucleusBuffers nucleus_buffers(void *base, int64_t n) {
  static_assert(sizeof(NucleusState) <= 64, "the state's slot");
  const size_t chunks = static_cast<size_t>((n + kThreads - 1) / kThreads);
  auto *p = static_cast<uint8_t *>(base);
  NucleusBuffers b;
  b.hist = reinterpret_cast<unsigned long long *>(p);
  b.chunk_mass = reinterpret_cast<unsigned long long *>(p + kNucleusBins * sizeof(unsigned long long));
  b.state = reinterpret_cast<NucleusState *>(p + (kNucleusBins + chunks) * sizeof(unsigned long long));
  b.count = reinterpret_cast<uint32_t *>(p + (kNucleusBins + chunks) * sizeof(unsigned long long) + 64);
  b.chunk_ties = b.count + kNucleusBins;
  return b;
}

} // namespace

GpuSampler::GpuSampler(int64_t n_vocab, cudaStream_t stream, Alloc alloc, Free free)
    : n_vocab_(n_vocab), stream_(stream), free_(std::move(free)),
      fast_paths_(!wo::env_switched_off("WORKER_SAMPLER_FAST")) {
  if (n_vocab <= 0 || n_vocab > INT_MAX)
    throw wo::Error(WO_ERR_INVALID_ARGUMENT, "sampler: vocabulary size " + std::to_string(n_vocab) +
                                                 " outside 1.." + std::to_string(INT_MAX));
  cuda_check(cub::DeviceRadixSort::SortPairsDescending(nullptr, temp_bytes_, d_keys_, d_keys_sorted_, d_vals_,
                                                       d_vals_sorted_, static_cast<int>(n_vocab)),
             "sizing the sort");
  const size_t n = static_cast<size_t>(n_vocab);
  auto take = [&](size_t bytes) {
    void *p = alloc(bytes);
    if (!p) {
      this->~GpuSampler();
      throw wo::Error(WO_ERR_OUT_OF_MEMORY,
                      "sampler: device allocation of " + std::to_string(bytes) + " bytes failed");
    }
    return p;
  };
  d_keys_ = static_cast<float *>(take(n * sizeof(float)));
  d_keys_sorted_ = static_cast<float *>(take(n * sizeof(float)));
  d_vals_ = static_cast<int32_t *>(take(n * sizeof(int32_t)));
  d_vals_sorted_ = static_cast<int32_t *>(take(n * sizeof(int32_t)));
  d_seen_ = static_cast<uint8_t *>(take(n));
  d_id_ = static_cast<int32_t *>(take(sizeof(int32_t)));
  d_ticket_ = static_cast<unsigned *>(take(sizeof(unsigned)));
  d_temp_ = take(temp_bytes_ ? temp_bytes_ : 1);
  d_nucleus_ = take(nucleus_bytes(n_vocab));
  try {
    cuda_check(
        cudaHostAlloc(reinterpret_cast<void **>(&h_id_), kIdSlots * sizeof(int32_t), cudaHostAllocMapped),
        "pinned id buffer");
    cuda_check(cudaHostGetDevicePointer(reinterpret_cast<void **>(&h_id_dev_), h_id_, 0),
               "the pinned id buffer's device address");
    for (cudaEvent_t &e : copied_)
      cuda_check(cudaEventCreateWithFlags(&e, cudaEventDisableTiming), "id publication event");
    cuda_check(cudaMemsetAsync(d_ticket_, 0, sizeof(unsigned), stream_), "clearing the argmax ticket");
  } catch (...) {
    this->~GpuSampler();
    throw;
  }
  reset();
}

GpuSampler::~GpuSampler() {
  for (void *p :
       {static_cast<void *>(d_keys_), static_cast<void *>(d_keys_sorted_), static_cast<void *>(d_vals_),
        static_cast<void *>(d_vals_sorted_), static_cast<void *>(d_seen_), static_cast<void *>(d_id_),
        static_cast<void *>(d_ticket_), d_temp_, d_nucleus_})
    if (p) free_(p);
  d_keys_ = d_keys_sorted_ = nullptr;
  d_vals_ = d_vals_sorted_ = d_id_ = nullptr;
  d_ticket_ = nullptr;
  d_seen_ = nullptr;
  d_temp_ = d_nucleus_ = nullptr;
  if (h_id_) cudaFreeHost(h_id_);
  h_id_ = nullptr;
  for (cudaEvent_t &e : copied_) {
    if (e) cudaEventDestroy(e);
    e = nullptr;
  }
}

void GpuSampler::reset() {
  cuda_check(cudaMemsetAsync(d_seen_, 0, static_cast<size_t>(n_vocab_), stream_), "clearing the history");
}

void GpuSampler::sample(const float *logits, const SamplingParams &p, double u) {
  (void)draw(logits, p, u, nullptr);
}

int GpuSampler::sample_request(const float *logits, const SamplingParams &p, double u) {
  // draw's greedy path writes the id into the slot publish takes next
  const bool published = draw(logits, p, u, h_id_dev_ + next_slot_);
  return publish(!published);
}

bool GpuSampler::draw(const float *logits, const SamplingParams &p, double u, int32_t *h_slot) {
  if (p.greedy()) { // the sort buffers (n_vocab entries) are free in this path: they hold the partials
    const int parts = static_cast<int>(
        std::min<int64_t>(kArgmaxBlocks, (n_vocab_ + kArgmaxThreads - 1) / kArgmaxThreads)); // <= n_vocab
    cuda_check(pdl::launch(argmax_kernel, parts, kArgmaxThreads, 0, stream_, logits, d_seen_,
                           p.repetition_penalty, n_vocab_, d_keys_sorted_, d_vals_sorted_, d_ticket_, d_id_,
                           h_slot),
               "argmax kernel");
    return true;
  }
  const float inv_t = 1.0f / p.temperature;
  const int64_t n_chunks = (n_vocab_ + kThreads - 1) / kThreads;
  if (fast_paths_ && (p.top_k <= 0 || p.top_k >= n_vocab_) && p.top_p >= 1.0f && n_chunks <= n_vocab_) {
    float *chunk_max_keys = d_keys_sorted_, *chunk_sums = reinterpret_cast<float *>(d_vals_sorted_);
    const auto chunks = static_cast<unsigned>(n_chunks);
    cuda_check(pdl::launch(unsorted_keys_kernel, chunks, kThreads, 0, stream_, logits, d_seen_,
                           p.repetition_penalty, inv_t, n_vocab_, d_keys_, chunk_max_keys, NucleusBuffers{}),
               "unsorted keys kernel");
    cuda_check(pdl::launch(unsorted_sums_kernel, chunks, kThreads, 0, stream_, d_keys_, n_vocab_,
                           chunk_max_keys, static_cast<int>(n_chunks), p.min_p, chunk_sums),
               "unsorted sums kernel");
    cuda_check(pdl::launch(unsorted_draw_kernel, 1, kThreads, 0, stream_, d_keys_, n_vocab_, chunk_max_keys,
                           chunk_sums, static_cast<int>(n_chunks), p.min_p, static_cast<float>(u), d_id_,
                           d_seen_),
               "unsorted draw kernel");
    return false;
  }
  if (fast_paths_ && (p.top_k <= 0 || p.top_k >= n_vocab_) && p.top_p < 1.0f && n_chunks <= kThreads) {
    float *chunk_max_keys = d_keys_sorted_;
    const auto chunks = static_cast<unsigned>(n_chunks);
    const int nc = static_cast<int>(n_chunks);
    const NucleusBuffers nb = nucleus_buffers(d_nucleus_, n_vocab_);
    cuda_check(pdl::launch(unsorted_keys_kernel, chunks, kThreads, 0, stream_, logits, d_seen_,
                           p.repetition_penalty, inv_t, n_vocab_, d_keys_, chunk_max_keys, nb),
               "nucleus keys kernel");
    for (int pass = 0; pass < 3; ++pass) {
      cuda_check(pdl::launch(nucleus_hist_kernel, chunks, kThreads, 0, stream_, d_keys_, n_vocab_,
                             chunk_max_keys, nc, pass, nb),
                 "nucleus histogram kernel");
      cuda_check(
          pdl::launch(nucleus_find_kernel, 1, kThreads, 0, stream_, chunk_max_keys, nc, p.top_p, pass, nb),
          "nucleus select kernel");
    }
    cuda_check(pdl::launch(nucleus_chunks_kernel, chunks, kThreads, 0, stream_, d_keys_, n_vocab_,
                           chunk_max_keys, nc, p.min_p, nb),
               "nucleus chunks kernel");
    cuda_check(pdl::launch(nucleus_draw_kernel, 1, kThreads, 0, stream_, d_keys_, n_vocab_, chunk_max_keys,
                           nc, p.min_p, static_cast<float>(u), nb, d_id_, d_seen_),
               "nucleus draw kernel");
    return false;
  }
  if (fast_paths_ && p.top_k > 0 && p.top_k < n_vocab_ && p.top_k <= kSelectMaxK) {
    const int64_t tiles = (n_vocab_ + kTileKeys - 1) / kTileKeys;
    const int64_t n_cand = tiles * p.top_k;
    if (n_cand <= std::min<int64_t>(kTopkCandidates, n_vocab_)) { // the candidates fit one block and d_vals_
      auto *cand_bits = reinterpret_cast<uint32_t *>(d_vals_);
      cuda_check(pdl::launch(topk_tile_kernel, static_cast<unsigned>(tiles), kTileThreads, 0, stream_, logits,
                             d_seen_, p.repetition_penalty, inv_t, n_vocab_, p.top_k, d_keys_, cand_bits,
                             d_vals_sorted_),
                 "top-k tile kernel");
      cuda_check(pdl::launch(topk_draw_kernel, 1, kThreads, 0, stream_, cand_bits, d_vals_sorted_,
                             static_cast<int>(n_cand), d_keys_, p.top_k, p.top_p, p.min_p,
                             static_cast<float>(u), d_id_, d_seen_),
                 "top-k draw kernel");
      return false;
    }
  }
  const int blocks = static_cast<int>((n_vocab_ + 255) / 256);
  prepare_kernel<<<blocks, 256, 0, stream_>>>(logits, d_seen_, p.repetition_penalty, inv_t, d_keys_, d_vals_,
                                              n_vocab_);
  cuda_check(cudaGetLastError(), "prepare kernel");
  size_t temp = temp_bytes_;
  cuda_check(cub::DeviceRadixSort::SortPairsDescending(d_temp_, temp, d_keys_, d_keys_sorted_, d_vals_,
                                                       d_vals_sorted_, static_cast<int>(n_vocab_), 0,
                                                       static_cast<int>(sizeof(float) * 8), stream_),
             "sorting logits");
  filter_draw_kernel<<<1, kThreads, 0, stream_>>>(d_keys_sorted_, d_vals_sorted_, n_vocab_, p.top_k, p.top_p,
                                                  p.min_p, static_cast<float>(u), d_id_, d_seen_);
  cuda_check(cudaGetLastError(), "filter/draw kernel");
  return false;
}

int GpuSampler::request_id() { return publish(true); }

int GpuSampler::publish(bool launch_kernel) {
  const int slot = next_slot_;
  next_slot_ = (next_slot_ + 1) % kIdSlots;
  if (launch_kernel)
    cuda_check(pdl::launch(publish_id_kernel, 1, 1, 0, stream_, static_cast<const int32_t *>(d_id_),
                           h_id_dev_ + slot),
               "publishing the id");
  cuda_check(cudaEventRecord(copied_[slot], stream_), "recording the id's publication");
  return slot;
}

int32_t GpuSampler::wait_id(int ticket) {
  if (ticket < 0 || ticket >= kIdSlots)
    throw wo::Error(WO_ERR_INVALID_ARGUMENT, "sampler: id ticket " + std::to_string(ticket) + " outside 0.." +
                                                 std::to_string(kIdSlots - 1));
  cuda_check(cudaEventSynchronize(copied_[ticket]), "waiting for the sampler");
  return static_cast<volatile const int32_t *>(h_id_)[ticket];
}

} // namespace wo::sampling
