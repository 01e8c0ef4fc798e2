// What the two attention kernels (attention.cu: one block per query head, any shape;
// attention_grouped.cu: one block per KV head's group of heads, queries and key split) share: the launch
// constants, the workspace layout, and which keys a (query, split) block sees.
#pragma once

#include "launch.cuh"
#include "rope_math.cuh"

#include <worker/staged_x.hpp>

#include <cuda_fp16.h>

#include <cstdint>

namespace wo::kernels::detail {

constexpr int kAttnMaxHeadDim = 256;
constexpr int64_t kMaxSplitTokens = 8; // split keys only for calls of this many queries or fewer
constexpr int kMaxSplits = 64;
constexpr int64_t kMinKeysPerSplit = 64;
// Keys a query takes in one split, however many are launched: up to two tiles in one block finish
// sooner than a second block and the merge (the state stores, the counter's round trip, the
// merging block's L2 reads). More tiles in one block do not: each is a memory round trip of its own.
// H100, decode tok/s with one split up to N keys (one call, two rounds): Qwen2.5 depth 0 (16-144
// keys) 1481.9, 1490.2 (64 keys per split from 65 on) -> 1505.8, 1505.7 (N = 256); at depth 128
// (144-272 keys) 1431.9, 1440.3 -> 1353.4, 1353.3 (N = 256) and depth 256 1429.6, 1433.0 ->
// 1224.5, 1219.5 (N = 512). N = 128 (one call against the commit before): Qwen2.5 1466.5/1356.1,
// 1487.9/1360.2 -> 1499.7/1370.1, 1503.5/1371.4 at depth 0/2048; Phi-3 and gpt-oss even.
constexpr int64_t kOneSplitKeys = 2 * kMinKeysPerSplit;

// A decode step's fresh q/k/v (rope_kv_attention): the grouped kernel adds the biases and rotates
// the queries as it loads them, and the block whose keys end at the new position writes that
// position's K and V rows (rope_kv_write's arithmetic) before it reads its keys.
struct FreshQkv {
  const float *k, *v, *q_bias, *k_bias, *v_bias;
  int64_t kv_stride;
  __half *k_cache, *v_cache;
  RopeConsts rope;
};

struct AttnConsts {
  int64_t pos0, n_kv, window, q_stride, out_stride;
  int32_t n_heads, n_kv_heads, head_dim, n_splits;
  float scale;
  bool causal;
  const float *sinks;
  const int32_t *positions;  // device positions (graph mode), else nullptr: pos0 / n_kv are exact
  float *ws;                 // partial states [n_tokens][n_heads][n_splits] (when n_splits > 1): general
                             // kernel {m, l, acc[hd]}, grouped kernel {acc[hd], m, l, pad, pad}; its
                             // tagged instance [n_tokens][n_heads][kMaxSplits] of 64-bit words
  unsigned *counters;        // [kMaxSplitTokens][n_kv_heads * head_parts]: finished splits (grouped kernel),
                             // zero between calls; the one-row head_dim <= 64 instance's epochs instead
  int64_t n_tokens;          // grouped kernel: the call's queries
  int32_t queries_per_block; // grouped kernel: consecutive queries a block serves (1 with splits)
  int32_t head_parts;     // grouped kernel: blocks that share a KV head's group of heads (1 without splits)
  bool fresh_on;          // grouped kernel only: q is unrotated and the new K/V row is `fresh`'s to write
  bool positions_settled; // grouped kernel with fresh_on: positions are read before the PDL wait
  bool preload_keys;      // grouped kernel, one row, settled positions: the first key tile loads before
                          // the wait (WORKER_ATTN_PRELOAD=0 turns it off, for A/B runs)
  bool prefetch_second_tile; // grouped kernel, with preload_keys: the second tile's rows asked of L2
                             // before the wait (WORKER_ATTN_PREFETCH2=0 turns it off, for A/B runs)
  FreshQkv fresh;
  uint8_t *staged;     // one query: the output row's staged terms (AttentionParams::staged_out), else nullptr
  int64_t staged_cols; // n_heads * head_dim
};

// Whether the grouped kernel writes the staged row itself: a warp's (or 8 lanes') group of 32
// outputs lies in one head only where head_dim is a multiple of 32; otherwise stage_row after it.
inline bool grouped_kernel_stages(int32_t head_dim) { return head_dim % wo::staged::kGroup == 0; }

// Floats per split state in the workspace: the grouped kernel's {acc[hd], m, l} padded to 16 bytes;
// its one-row head_dim <= 64 instance stores each of those values as a tagged 64-bit word
// (attention_grouped.cu, merge_tagged), 16-byte rows since head_dim is a multiple of 8.
__host__ __device__ inline int64_t split_state_floats(int32_t hd) { return hd + 4; }
__host__ __device__ inline int64_t tagged_state_floats(int32_t hd) {
  return 2 * (static_cast<int64_t>(hd) + 2);
}
// The most either takes (attention_workspace_floats sizes for it).
__host__ __device__ inline int64_t max_state_floats(int32_t hd) {
  return hd <= 64 ? max(split_state_floats(hd), tagged_state_floats(hd)) : split_state_floats(hd);
}

// Workspace layout: the split counters first (their own 256 bytes per 64 heads, a multiple of 16
// bytes so the states that follow stay aligned), then the partial states.
inline int64_t attn_counter_floats(int32_t n_heads) { return (kMaxSplitTokens * n_heads + 3) / 4 * 4; }

// How many splits hold keys for a query that sees `len` keys: one up to kOneSplitKeys, else
// ceil(len / kMinKeysPerSplit), at most n_splits. visible_keys partitions by it; the grouped launch
// sizes its grid by it from the call's bound on len, so every split a query uses is launched.
__host__ __device__ inline int64_t splits_used(int64_t len, int32_t n_splits) {
  if (len <= kOneSplitKeys) return 1;
  return min(static_cast<int64_t>(n_splits),
             max((len + kMinKeysPerSplit - 1) / kMinKeysPerSplit, static_cast<int64_t>(1)));
}

// The keys [lo, hi) that split `split` of query t sees, from the real key count (device positions
// in graph mode), never from the launch's bound: the partition, and so the rounding, of a decode
// step must not depend on the context bucket a graph was captured for. `used` is how many of the
// n_splits launched splits hold keys (splits_used); the rest get an empty range. With one split
// the range is all visible keys.
struct KeyRange {
  int64_t lo, hi;
  int32_t used;
};
__device__ inline KeyRange visible_keys(const AttnConsts &k, int64_t t, int32_t split, int64_t n_queries) {
  // Positions through L2: read before the PDL wait when settled (written by an earlier kernel).
  const int64_t p = k.positions ? __ldcg(k.positions + t) : k.pos0 + t;
  const int64_t n_kv = k.positions ? __ldcg(k.positions + n_queries - 1) + 1 : k.n_kv;
  KeyRange r;
  r.hi = k.causal ? min(p + 1, n_kv) : n_kv;
  r.lo = k.window > 0 ? max(static_cast<int64_t>(0), p - k.window + 1) : 0;
  r.used = 1;
  if (k.n_splits > 1) {
    const int64_t len = max(r.hi - r.lo, static_cast<int64_t>(0));
    const int64_t used = splits_used(len, k.n_splits);
    const int64_t chunk = (len + used - 1) / used;
    r.lo = r.lo + split * chunk;
    r.hi = min(r.hi, r.lo + chunk);
    r.used = static_cast<int32_t>(used);
  }
  return r;
}

// Grouped kernel (attention_grouped.cu): launches it and returns true when it serves this call
// (few queries, a GQA group of at most 8 heads, head_dim a multiple of 8, 16-byte aligned caches,
// output rows and workspace); false leaves the call to the general kernel.
// state_floats: the workspace's room for partial states (after the counters).
bool attention_grouped(const float *q, const __half *k_cache, const __half *v_cache, float *out,
                       const AttnConsts &k, int64_t n_tokens, int64_t state_floats, cudaStream_t stream,
                       cudaError_t *status);

} // namespace wo::kernels::detail
