// Grouped attention, the kernel for decode and prefill alike. A block holds up to 8 rows
// (query, head) of one KV head and walks that head's keys once for all of them; threads work on
// keys, not on one key's dimensions (the general kernel in attention.cu spends a 5-shuffle
// reduction per key).
//   prefill (no key splits): the KV head's whole group of heads, and as many consecutive queries as
//     fill the rows, so every key tile serves up to 8 rows (Phi-3's group of 1: 8 queries);
//   decode (key splits over the workspace): one query head per block (the group's blocks re-read
//     its keys from L2; what decode waits on is a block's serial chain, see head_parts_for).
//
// Keys come in tiles of 64, all of a tile's loads issued before its math:
//   scores   two threads per key, 8 dimensions (one 16-byte load) at a time, every row; keys a
//            row's query does not see (causal, window) score -inf;
//   softmax  one warp per row: the tile's max joins the running max, probabilities replace scores;
//   values   each warp a quarter of the tile's keys, each lane two dimensions (one half2 load) per 64.
// The four warps' value sums are added in warp order. The one-row head_dim <= 64 decode instance
// (Qwen2.5, gpt-oss) instead runs a softmax per warp over the keys it scored, with no barrier per
// tile, and combines the warps' states at the end (kWarpSoftmax). With one split the block writes
// the output. With several (decode), each writes its partial state (m, l, acc) to the workspace
// and one block merges the states in split order (the bits do not depend on which split finished
// last, and no merge kernel runs): in the one-row head_dim <= 64 instance (Qwen2.5, gpt-oss) split
// 0, reading states whose every word carries the call's tag (merge_tagged); in the others the last
// split to finish (a counter per query and block row of heads, which that block resets to zero).
#include "attention_common.cuh"

#include <worker/staged_x.cuh>

#include <worker/cta_trace.cuh>
#include <worker/env_switch.hpp>
#include <worker/occupancy.hpp>

#include <algorithm>

namespace wo::kernels::detail {
namespace {

constexpr int kThreads = 128;
constexpr int kWarps = kThreads / 32;
constexpr int kTile = kThreads / 2; // keys per tile: two threads per key for the scores
constexpr int kMaxRows = 8;         // (query, head) rows per block, so also the largest GQA group
constexpr int kMergeBatch = 8;      // split states a merging thread loads at once
// The instances whose split states are tagged words merged by split 0 (merge_tagged): one row of
// head_dim <= 64 (Qwen2.5, gpt-oss). The host's split choice and the kernel's path both ask this.
__host__ __device__ constexpr bool tagged_states(int kr, int hd) { return kr == 1 && hd <= 64; }
// The instances whose warps each run their own softmax (kWarpSoftmax in grouped_attention): the same.
__host__ __device__ constexpr bool warp_softmax(int kr, int hd) { return tagged_states(kr, hd); }
// Room in red_s (below), in rows of the block's queries: kWarps for the merge's pass 2 and the value
// sums; twice that for the tagged instances, whose merge_tagged needs kWarps x (hd + 2) floats.
__host__ __device__ constexpr int merge_parts_cap(int kr, int hd) {
  return tagged_states(kr, hd) ? 2 * kWarps : kWarps;
}
// Decode's blocks when the runtime cannot say how many the GPU holds (resident_blocks): about eight
// per SM of a 132-SM H100.
constexpr int64_t kTargetBlocks = 1056;
static_assert(kTile == kMinKeysPerSplit, "a split's share is a whole number of tiles at the minimum");

// The kernel instance's most rows (kR) for blocks of `rows` rows: kernel_for's choice.
__host__ __device__ constexpr int instance_rows(int rows) { return rows == 1 ? 1 : rows <= 4 ? 4 : kMaxRows; }

// Dynamic shared memory, in floats, for `rows` rows of an instance of kr = instance_rows(rows) or
// more (the kernel passes its kR, the host instance_rows of its largest block: the kernel's layout
// never ends past the host's). Sized by kr, not kMaxRows: the one-row decode instance needs 2.8 KB
// instead of 8 KB, shared memory its neighbours in a decode step (PDL) can use.
struct SmemLayout {
  int q_len; // the rows' queries, rounded up to whole float4
  int q, p, stat, e, red, total;
};
__host__ __device__ inline SmemLayout smem_layout(int rows, int hd, int kr) {
  SmemLayout s;
  s.q_len = (rows * hd + 3) / 4 * 4;
  s.q = 0;
  // 2 x [kTile][kr]: scores, then probabilities; alternate tiles use alternate halves, so a tile's
  // scores need not wait for the last one's values (none where each warp keeps its own: warp_softmax)
  s.p = s.q_len;
  // m, l, tile correction (even tiles), merge 1/denominator, tile correction (odd tiles): [5][kMaxRows]
  s.stat = s.p + (warp_softmax(kr, hd) ? 0 : 2 * kTile * kr);
  s.e = s.stat + 5 * kMaxRows;   // [kr][kMaxSplits]: the merge's per-split factors
  s.red = s.e + kr * kMaxSplits; // [kWarps][q_len]: the warps' value sums, then the merge's parts
  s.total = s.red + merge_parts_cap(kr, hd) * s.q_len;
  return s;
}

// One key's probabilities for the kR rows (float4 reads where they fit).
template <int kR> __device__ inline void load_probs(const float *p, float (&pg)[kR]) {
  if constexpr (kR % 4 == 0) {
#pragma unroll
    for (int i = 0; i < kR / 4; ++i) {
      const float4 v = reinterpret_cast<const float4 *>(p)[i];
      pg[4 * i] = v.x, pg[4 * i + 1] = v.y, pg[4 * i + 2] = v.z, pg[4 * i + 3] = v.w;
    }
  } else {
#pragma unroll
    for (int i = 0; i < kR; ++i)
      pg[i] = p[i];
  }
}

// The merge's pass 2 (below): parts of the states whose partial sums add in part order, for a block
// of n4 output quads: kWarps parts, fewer where the threads run out.
__device__ inline int merge_parts(int n4) { return max(1, min(kWarps, kThreads / n4)); }

__device__ inline void unpack8(const uint4 raw, float f[8]) {
  const __half2 *h = reinterpret_cast<const __half2 *>(&raw);
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const float2 v = __half22float2(h[i]);
    f[2 * i] = v.x, f[2 * i + 1] = v.y;
  }
}

// A query chunk's dot with a key chunk: 8 values at q (16-byte aligned) against unpack8's kf, in
// one fixed order, so that both score loops (grouped_attention) give the same bits.
__device__ __forceinline__ float dot8(const float *q, const float (&kf)[8]) {
  const float4 a = reinterpret_cast<const float4 *>(q)[0], b = reinterpret_cast<const float4 *>(q)[1];
  return a.x * kf[0] + a.y * kf[1] + a.z * kf[2] + a.w * kf[3] + b.x * kf[4] + b.y * kf[5] + b.z * kf[6] +
         b.w * kf[7];
}

// The new position's K row (bias, RoPE) and V row (bias) of KV head kvh into the cache, by the
// block whose keys end there; the barrier makes them visible to its own loads that follow. cs: the
// position's RoPE factors (c, s of pair i at 2i, 2i + 1), from this thread for its pairs. row_s
// (nullptr: none): the same halves in shared memory too, K then V (2 hd), for a tile in registers.
__device__ inline void write_fresh_row(const AttnConsts &k, int64_t t, int32_t kvh, const float *cs,
                                       __half *row_s) {
  const FreshQkv &f = k.fresh;
  const int32_t hd = k.head_dim, pos = k.positions[t];
  const int64_t kv_row = static_cast<int64_t>(k.n_kv_heads) * hd, head = static_cast<int64_t>(kvh) * hd;
  const float *ks = f.k + t * f.kv_stride + head, *vs = f.v + t * f.kv_stride + head;
  __half *kd = f.k_cache + pos * kv_row + head, *vd = f.v_cache + pos * kv_row + head;
  for (int i = threadIdx.x; i < hd / 2; i += blockDim.x) {
    int32_t da, db;
    rope_pair_dims(f.rope, i, da, db);
    float x0 = ks[da], x1 = ks[db];
    bias_rotate_pair_cs(f.rope, i, f.k_bias ? f.k_bias + head : nullptr, da, db, cs[2 * i], cs[2 * i + 1], x0,
                        x1);
    const __half k0 = __float2half_rn(x0), k1 = __float2half_rn(x1);
    kd[da] = k0, kd[db] = k1;
    float v0 = vs[2 * i], v1 = vs[2 * i + 1];
    if (f.v_bias) v0 += f.v_bias[head + 2 * i], v1 += f.v_bias[head + 2 * i + 1];
    const __half2 v = __floats2half2_rn(v0, v1);
    reinterpret_cast<__half2 *>(vd)[i] = v;
    if (row_s) row_s[da] = k0, row_s[db] = k1, reinterpret_cast<__half2 *>(row_s + hd)[i] = v;
  }
  __syncthreads();
}

// Tagged split states (the one-row head_dim <= 64 instance): every value of a split's state is stored
// as one 64-bit word, its float's bits below the call's tag, so that a reader that sees the tag sees
// the value, with no fence, counter or flag between them. The merging block (split 0, fixed) polls
// the words of the states it needs until every tag is its call's; the splits store and leave.
// Why: the last-arriving count cost the block that finishes last a drain of its state stores (the
// count's release), the count's own round trip and then the merging reads: three L2 round trips
// after its last tile; here the last split's stores go out one way and split 0, already waiting,
// sees them on its next poll. The tag is the call's epoch + 1: the epoch word (the counter slot of
// the query and block row) is read by every block after the PDL wait and advanced by split 0 after
// its merge, which it reaches only once every split has stored (so after every split read it).
// Stale words carry older tags: a (query, head) row's states sit at fixed places whatever the
// call's split count, so only that row's calls write them (with n_splits in the layout, a 4-query
// call's second query read words a 1-query call's first had left with the very tag its own row's
// epoch gave next: kernels_gpu_test WorkspaceReusedAcrossCallsMatchesFreshWorkspace). Tags run
// 1 .. 2^32 - 1 and wrap to 1, never 0, so the zeroed workspace never matches. The worker keeps one
// workspace for its lifetime and Qwen2.5 decoding at 1,500 tok/s wraps a row's epoch in about 33
// hours: a stale word matches only if its state went unwritten through a whole cycle of its row's
// calls and the one call that reads it again carries exactly its old tag.
//
// Deadlock freedom: split 0 waits for blocks of its own grid only, and the grid fits the GPU at once
// (attention_grouped sizes the splits from the resident blocks); the next kernel's CTAs launch only
// after every block of this grid has passed its PDL wait.
//
// H100, one call, against the last-arriving count with the one-pass merge (2665db4): attention_bench
// qwen depth 512 / 2048 5.49 -> 4.64 / 6.84 -> 6.23 us, oss-full 6.99 -> 6.41 / 12.82 -> 12.21;
// Qwen2.5 decode 1608.9/1423.6, 1613.6/1421.9 -> 1608.1/1455.7, 1604.5/1455.6 tok/s (depth 0 /
// 2048), gpt-oss 564.3/529.6, 562.7/532.9 -> 561.1/530.0, 558.8/532.9 (the racy first version).
//
// Words go in pairs (16-byte aligned: a state is hd + 2 words, hd a multiple of 8), one v2 access
// each: each word of a vector access is single-copy atomic on its own, which is all a tagged word
// needs, and the merge's poll is 9 loads per lane instead of 18 (ptxas: 10 local-memory ops instead
// of 19). H100, one call, Qwen2.5 decode 1721.1/1530.8, 1731.0/1541.5 -> 1731.2/1546.2,
// 1736.1/1553.2 tok/s (depth 0 / 2048), gpt-oss 590.8/545.0, 587.5/545.9 -> 588.9/552.4,
// 592.8/550.6; per-CTA trace (depth 2048): split 0 saw every state 4.26 -> 4.10 us after the wait.
__device__ __forceinline__ void store_tagged2(uint64_t *p, float v0, float v1, unsigned tag) {
  const uint64_t w0 = (static_cast<uint64_t>(tag) << 32) | __float_as_uint(v0);
  const uint64_t w1 = (static_cast<uint64_t>(tag) << 32) | __float_as_uint(v1);
  asm volatile("st.relaxed.gpu.global.v2.u64 [%0], {%1, %2};" ::"l"(p), "l"(w0), "l"(w1) : "memory");
}
__device__ __forceinline__ void load_tagged2(const uint64_t *p, uint64_t &w0, uint64_t &w1) {
  asm volatile("ld.relaxed.gpu.global.v2.u64 {%0, %1}, [%2];" : "=l"(w0), "=l"(w1) : "l"(p) : "memory");
}
__device__ __forceinline__ uint64_t load_tagged(const uint64_t *p) {
  uint64_t w;
  asm volatile("ld.relaxed.gpu.global.u64 %0, [%1];" : "=l"(w) : "l"(p) : "memory");
  return w;
}
__device__ __forceinline__ unsigned load_epoch(const unsigned *p) {
  unsigned v;
  asm volatile("ld.relaxed.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
  return v;
}
__device__ __forceinline__ void store_epoch(unsigned *p, unsigned v) {
  asm volatile("st.relaxed.gpu.global.u32 [%0], %1;" ::"l"(p), "r"(v) : "memory");
}
__device__ __forceinline__ bool tag_is(uint64_t w, unsigned tag) {
  return static_cast<unsigned>(w >> 32) == tag;
}
__device__ __forceinline__ float value_of(uint64_t w) { return __uint_as_float(static_cast<unsigned>(w)); }

// One output of kWarps partial states (max m, denominator l, value sum a; l = 0: no key) combined in
// warp order with the sink (a logit without a value; nullptr: none): merge_tagged's last step and
// the one-split output of the warps' own softmax (kWarpSoftmax).
__device__ __forceinline__ float combine_states(const float (&wm)[kWarps], const float (&wl)[kWarps],
                                                const float (&wa)[kWarps], const float *sink) {
  float big = sink ? *sink : -INFINITY;
#pragma unroll
  for (int w = 0; w < kWarps; ++w)
    if (wl[w] > 0.0f) big = fmaxf(big, wm[w]);
  // Every factor first, with no branch (expf(-inf) = 0 stands in for an empty state, whose terms
  // stay left out below): behind a branch per state, each expf waited for the one before it (the
  // SASS: merge_tagged's nine factors in one chain, and four here and at the state's store).
  float e[kWarps];
#pragma unroll
  for (int w = 0; w < kWarps; ++w)
    e[w] = expf(wl[w] > 0.0f ? wm[w] - big : -INFINITY);
  float den = sink ? expf(*sink - big) : 0.0f, o = 0.0f;
#pragma unroll
  for (int w = 0; w < kWarps; ++w)
    if (wl[w] > 0.0f) {
      den += wl[w] * e[w];
      o += wa[w] * e[w];
    }
  return den > 0.0f ? o / den : 0.0f;
}

// States a warp polls at once (Qwen2.5's 33 over four warps: 9, 8, 8, 8).
constexpr int kPollStates = 9;

// Split 0's merge of a head's `used` tagged states (ws64: the head's [kMaxSplits][state64] words, each
// state {acc[hd], m, l}). Warp w takes states w, w + 4, ... in batches of kPollStates: each lane the
// dimensions 2 lane, 2 lane + 1 of every state, and the (m or l) word 2 j + (0 or 1) of the batch's
// state j (lane (2 j) % 32 and the next), shuffled to the warp; the batch's words poll until every
// tag is the call's. Then an online softmax merge per warp in state order, the warps' (m, l, acc)
// through red_s ([kWarps][hd + 2] floats), and threads 0..hd-1 combine them in warp order with the sink.
__device__ __forceinline__ void merge_tagged(const AttnConsts &k, const uint64_t *ws64, int64_t state64,
                                             int32_t h, int32_t used, unsigned tag, float *red_s,
                                             float *out_t) {
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int32_t hd = k.head_dim;
  const bool dims = 2 * lane < hd; // this lane's pair inside head_dim (hd even)
  float m = -INFINITY, l = 0.0f, acc0 = 0.0f, acc1 = 0.0f;
  for (int first = warp; first < used; first += kWarps * kPollStates) {
    uint64_t a[kPollStates][2], ml = 0;
    // Batch state j is first + kWarps j; its (m, l) words are the batch's words 2 j and 2 j + 1.
    const int ml_j = lane / 2, ml_s = first + kWarps * ml_j;
    const bool ml_on = ml_j < kPollStates && ml_s < used;
    for (;;) {
      bool ok = true;
#pragma unroll
      for (int j = 0; j < kPollStates; ++j) {
        const int s = first + kWarps * j;
        if (s < used && dims) {
          load_tagged2(ws64 + s * state64 + 2 * lane, a[j][0], a[j][1]);
        }
      }
      if (ml_on) ml = load_tagged(ws64 + ml_s * state64 + hd + (lane & 1));
#pragma unroll
      for (int j = 0; j < kPollStates; ++j)
        if (first + kWarps * j < used && dims) ok = ok && tag_is(a[j][0], tag) && tag_is(a[j][1], tag);
      if (ml_on) ok = ok && tag_is(ml, tag);
      if (__all_sync(0xffffffffu, ok)) break;
    }
    // (m, l) of batch state j from lanes 2 j and 2 j + 1.
    float sm[kPollStates], sl[kPollStates];
    float m_new = m;
#pragma unroll
    for (int j = 0; j < kPollStates; ++j) {
      sm[j] = __shfl_sync(0xffffffffu, value_of(ml), 2 * j);
      sl[j] = __shfl_sync(0xffffffffu, value_of(ml), 2 * j + 1);
      if (first + kWarps * j < used && sl[j] > 0.0f) m_new = fmaxf(m_new, sm[j]);
    }
    const float m_use = m_new == -INFINITY ? 0.0f : m_new;
    const float c = expf(m - m_use); // 0 before the first non-empty state (m = -inf)
    l *= c, acc0 *= c, acc1 *= c;
    bool on[kPollStates]; // batch state j exists and holds keys
    float e[kPollStates]; // every factor first, with no branch (see combine_states)
#pragma unroll
    for (int j = 0; j < kPollStates; ++j) {
      on[j] = first + kWarps * j < used && sl[j] > 0.0f;
      e[j] = expf(on[j] ? sm[j] - m_use : -INFINITY);
    }
#pragma unroll
    for (int j = 0; j < kPollStates; ++j)
      if (on[j]) {
        l += sl[j] * e[j];
        if (dims) acc0 += value_of(a[j][0]) * e[j], acc1 += value_of(a[j][1]) * e[j];
      }
    m = m_new;
  }
  // The warps' states, combined in warp order with the sink: red_s[w] = {acc[hd], m, l}. red_s held
  // this block's value sums until every thread had stored its share of the block's own state (a
  // warp with no share of it polls and arrives here first): the barrier first.
  __syncthreads();
  WO_CTA_MARK(3); // (trace builds) every state polled
  float *rw = red_s + warp * (hd + 2);
  if (dims) rw[2 * lane] = acc0, rw[2 * lane + 1] = acc1;
  if (lane == 0) rw[hd] = m, rw[hd + 1] = l;
  __syncthreads();
  for (int base = 0; base < hd; base += kThreads) { // whole warps (staging's groups of 32)
    const int d = base + tid;
    const bool on = d < hd;
    float v[1] = {0.0f};
    if (on) {
      float wm[kWarps], wl[kWarps], wa[kWarps];
#pragma unroll
      for (int w = 0; w < kWarps; ++w) {
        const float *r = red_s + w * (hd + 2);
        wm[w] = r[hd], wl[w] = r[hd + 1], wa[w] = r[d];
      }
      v[0] = combine_states(wm, wl, wa, k.sinks ? k.sinks + h : nullptr);
      out_t[static_cast<int64_t>(h) * hd + d] = v[0];
    }
    if (k.staged) // (warp-uniform: hd % 32 == 0 where staged)
      wo::staged::write_group<1>(v, static_cast<int64_t>(h) * hd + d, on, k.staged, k.staged_cols);
  }
}

// A block serves rows (query t0 + r / G, head h0 + r % G) for r < R: the KV head's G query heads
// for Q consecutive queries (Q > 1 only without key splits, i.e. prefill and workspace-less calls,
// so that a group of 1 still fills a block). kR: the most rows this instance holds (registers: one
// row needs an eighth of eight's); kPairs: half2 per lane per 64 dimensions, head_dim <= 64 kPairs.
template <int kR, int kPairs>
__device__ __forceinline__ void grouped_attention(const float *q, const __half *kc, const __half *vc,
                                                  float *out, const AttnConsts &k) {
  constexpr int kChunks = 4 * kPairs;          // 8-dimension chunks of a key per thread (of two)
  constexpr int kKeysPerWarp = kTile / kWarps; // value rows per warp per tile
  extern __shared__ float4 dyn_smem[];
  __shared__ int64_t row_lo[kR], row_hi[kR]; // each row's visible keys (its query's)
  __shared__ float cs_s[kAttnMaxHeadDim];    // fresh_on: the query position's RoPE factors
  __shared__ __align__(16)
      __half new_row_s[kR == 1 && kPairs == 1 ? 2 * 64 : 8]; // the new K, V rows (preload)
  constexpr bool kTagged = tagged_states(kR, 64 * kPairs);   // (64 kPairs: the instance's widest head)
  // The one-row hd <= 64 instance (Qwen2.5, gpt-oss decode): each warp's own online softmax over its
  // quarter of every tile (keys 16 w .. 16 w + 15, whose scores its lanes hold), values of the same
  // keys, and the four warps' states (m, l, acc) combined once after the last tile. The one-warp
  // softmax between two barriers per tile (scores through shared memory, probabilities back) was
  // the longest stretch of the tile's chain, with three warps waiting at the barrier.
  constexpr bool kWarpSoftmax = warp_softmax(kR, 64 * kPairs);
  static_assert(kWarpSoftmax == (kR == 1 && kPairs == 1), "the instance whose warps' loops are below");
  __shared__ float wm_s[kWarpSoftmax ? kWarps : 1], wl_s[kWarpSoftmax ? kWarps : 1]; // warps' m, l
  __shared__ unsigned epoch_s; // kTagged with splits: this call's epoch
  // Settled positions (fresh_on): the keys, an unused split's exit and the RoPE factors before the
  // wait, off the chain a decode step waits on; otherwise all of it after.
  const bool early = k.fresh_on && k.positions_settled;
  if (!early) {
    wo::pdl::enter();
    WO_CTA_WAITED();
  }
  // blockIdx.y: part hp of KV head kvh's group of heads (decode: one head per part; prefill: the
  // whole group). G: heads of this block.
  // Tagged states: splits in reverse block order. The GPU dispatches a grid's blocks in linear order,
  // and where it cannot hold the whole grid beside the previous kernel's CTAs (Qwen2.5 at depth
  // 2048: 462 blocks beside the q/k/v pass's) the last z slice waits for those CTAs to leave. That
  // slice is then split 0, which merges the others' states and waits for them anyway, rather than
  // the split of the newest keys, which writes the new row and was the merge's straggler (per-CTA
  // trace, docs/perf.md, thirty-seventh session).
  const int32_t kvh = blockIdx.y / k.head_parts, hp = blockIdx.y % k.head_parts;
  const int32_t split = static_cast<int32_t>(kTagged ? gridDim.z - 1 - blockIdx.z : blockIdx.z);
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int32_t hd = k.head_dim, group = k.n_heads / k.n_kv_heads;
  const int32_t per_part = (group + k.head_parts - 1) / k.head_parts;
  const int32_t h0 = kvh * group + hp * per_part, G = min(per_part, group - hp * per_part);
  const int64_t t0 = static_cast<int64_t>(blockIdx.x) * k.queries_per_block;
  const int32_t R = static_cast<int32_t>(min(static_cast<int64_t>(k.queries_per_block), k.n_tokens - t0)) * G;
  const KeyRange r = visible_keys(k, t0, split, k.n_tokens); // with several queries: one split
  if (split >= r.used) return;                               // a launched split past the real keys' share
  if (tid < R) {
    const KeyRange rr = visible_keys(k, t0 + tid / G, split, k.n_tokens);
    row_lo[tid] = rr.lo, row_hi[tid] = rr.hi;
  }
  const int32_t pos = k.fresh_on ? __ldcg(k.positions + t0) : 0; // fresh_on: the new row's position
  if (k.fresh_on) { // (one query) pair i's factors, by the thread that rotates pair i of the K row
    for (int i = tid; i < k.head_dim / 2; i += kThreads) {
      float c = 0.0f, sn = 0.0f;
      if (i < k.fresh.rope.n_dims / 2) rope_cos_sin(k.fresh.rope, pos, i, c, sn);
      cs_s[2 * i] = c, cs_s[2 * i + 1] = sn;
    }
  }

  const int64_t kv_row = static_cast<int64_t>(k.n_kv_heads) * hd;
  const __half *kb = kc + static_cast<int64_t>(kvh) * hd, *vb = vc + static_cast<int64_t>(kvh) * hd;
  const int n_chunks = hd / 8;
  const int kk_s = tid >> 1, half = tid & 1; // the key and chunk parity this thread scores
  // This thread's load addresses, computed once and advanced a tile per trip: per load only a
  // constant offset or one pointer step (the 64-bit row arithmetic per load was most of the
  // loop's instructions). Keys past the tile's last and dimensions past head_dim are not loaded.
  // With one query (fresh_on) every row sees r's keys; otherwise the rows' union, known after the
  // barrier below.
  bool v_dims[kPairs]; // lane's pair j inside head_dim
#pragma unroll
  for (int j = 0; j < kPairs; ++j)
    v_dims[j] = 2 * lane + 64 * j < hd;
  const int64_t k_tile_step = kTile * kv_row / 8, v_tile_step = kTile * kv_row / 2; // uint4 / half2
  // half2 between this warp's value rows (kWarpSoftmax: consecutive keys, its own)
  const int64_t v_row_step = (kWarpSoftmax ? 1 : kWarps) * kv_row / 2;
  const int v_key0 = kWarpSoftmax ? kKeysPerWarp * warp : warp; // this warp's first value row in a tile
  const uint4 *kp = nullptr;   // this thread's first key chunk of the tile (chunk 2 i at kp[2 i])
  const __half2 *vp = nullptr; // this lane's pair of the warp's first value row of the tile
  uint4 kraw[kChunks];
  __half2 vraw[kKeysPerWarp][kPairs];
  const auto point_at = [&](int64_t first_key) {
    kp = reinterpret_cast<const uint4 *>(kb + (first_key + kk_s) * kv_row) + half;
    vp = reinterpret_cast<const __half2 *>(vb + (first_key + v_key0) * kv_row) + lane;
  };
  // A tile's loads (zeros past n_keys): this thread's key chunks, its warp's value rows.
  const auto load_keys = [&](int n_keys) {
    const bool k_in = kk_s < n_keys;
#pragma unroll
    for (int i = 0; i < kChunks; ++i)
      kraw[i] = k_in && half + 2 * i < n_chunks ? kp[2 * i] : make_uint4(0, 0, 0, 0);
  };
  const auto load_values = [&](int n_keys) {
    const __half2 *vr = vp;
#pragma unroll
    for (int i = 0; i < kKeysPerWarp; ++i, vr += v_row_step) {
      const bool v_in = v_key0 + (kWarpSoftmax ? 1 : kWarps) * i < n_keys;
#pragma unroll
      for (int j = 0; j < kPairs; ++j) { // zeros first: a move after the load would wait for it
        vraw[i][j] = __floats2half2_rn(0.0f, 0.0f);
        if (v_in && v_dims[j]) vraw[i][j] = vr[32 * j];
      }
    }
  };
  // Settled positions: the first tile's keys are cache rows of earlier steps (written two or more
  // launches back) but for the new one, which this block writes below and then reloads: they load
  // before the wait, one memory latency off the chain.
  // The one-row hd <= 64 instance only (Qwen2.5, gpt-oss): kept live across the prologue, the tile's
  // registers made ptxas spill in the capped hd-96 prefill instance, and in Phi-3's one-row hd-96
  // instance (at its 128-register limit) compiling the preload in cost decode 1.5-2% (H100 A/B,
  // one call: 533.6/450.6, 531.8/450.0 before this change; with it 526.0/443.3, 525.4/442.9;
  // without it for hd > 64 539.2/452.3, 541.5/452.4).
  const bool preload = kR == 1 && kPairs == 1 && early && k.preload_keys;
  if (preload) {
    point_at(r.lo);
    const int n_keys = static_cast<int>(min(static_cast<int64_t>(kTile), r.hi - r.lo));
    load_keys(n_keys);
    load_values(n_keys);
    // A second tile (a one-split query of 65-128 keys, kOneSplitKeys): its key and value rows
    // asked of L2 too, so that its loads after the first tile's math meet L2 rather than DRAM
    // (the weights streamed since the last step have evicted them). No registers held; ptxas -v of
    // every instance unchanged. H100, one call, WORKER_ATTN_PREFETCH2=0 -> on, depth 0: Qwen2.5
    // 1502.1, 1497.6, 1501.7, 1501.9 -> 1504.6, 1504.6, 1505.7, 1506.0 tok/s; gpt-oss 552.1, 553.0
    // -> 554.6, 554.3.
    if (k.prefetch_second_tile && half == 0 && r.lo + kTile + kk_s < r.hi) {
      const int64_t key = r.lo + kTile + kk_s;
      wo::pdl::prefetch_l2(kb + key * kv_row);
      wo::pdl::prefetch_l2(vb + key * kv_row);
    }
  }
  // kWarpSoftmax with a fresh query: thread i < hd / 2 holds pair i of it with the bias added (the
  // bias before the wait, the query's values right after it), so that the query's L2 round trip
  // runs beside the new K/V row's (write_fresh_row) instead of after that row's barrier.
  const bool q_pair = kWarpSoftmax && k.fresh_on && tid < hd / 2;
  int32_t qda = 0, qdb = 0;
  float qa = 0.0f, qb = 0.0f;
  if (q_pair) {
    rope_pair_dims(k.fresh.rope, tid, qda, qdb);
    if (k.fresh.q_bias) qa = k.fresh.q_bias[h0 * hd + qda], qb = k.fresh.q_bias[h0 * hd + qdb];
  }
  if (early) {
    wo::pdl::enter();
    WO_CTA_WAITED();
  }
  if (q_pair) { // (bias_rotate_pair_cs's x + bias, the same bits)
    const float *qt = q + t0 * k.q_stride + static_cast<int64_t>(h0) * hd;
    qa = k.fresh.q_bias ? qt[qda] + qa : qt[qda];
    qb = k.fresh.q_bias ? qt[qdb] + qb : qt[qdb];
  }
  // kTagged with several splits: this call's epoch, loaded after the wait (the previous call's split 0
  // advanced it) into thread 0's register and only handed to epoch_s at the state stores, so that the
  // load's round trip overlaps the tiles. (Stored to epoch_s here, it stalled warp 0 and through it
  // the first barrier on every call: gpt-oss decode at depth 0, one split, -0.6%.)
  unsigned epoch = 0;
  if constexpr (kTagged)
    if (tid == 0 && r.used > 1) epoch = load_epoch(k.counters + t0 * gridDim.y + blockIdx.y);

  const SmemLayout L = smem_layout(R, hd, kR);
  float *sm = reinterpret_cast<float *>(dyn_smem);
  float *q_s = sm + L.q, *p_s = sm + L.p, *e_s = sm + L.e, *red_s = sm + L.red;
  float *m_s = sm + L.stat, *l_s = m_s + kMaxRows, *c_s = l_s + kMaxRows, *inv_s = c_s + kMaxRows;
  float *const c_odd_s = inv_s + kMaxRows;

  // (One query.) Every head part of the last split writes the row, the same bits, before it reads it.
  if (k.fresh_on && split == r.used - 1) {
    const bool in_tile = preload && pos - r.lo < kTile;
    write_fresh_row(k, t0, kvh, cs_s, in_tile ? new_row_s : nullptr);
    WO_CTA_MARK(0); // (trace builds) the new row written
    // A preloaded first tile holds the new row as the cache had it: the row as written, from
    // shared memory (its key chunks in the threads that hold them, its value pair in each lane of
    // the warp that holds it; an unrolled select, since an index would put vraw in local memory).
    // Reloaded from the cache, the value loads' zero-fill (a move into each loaded register) held
    // that warp for the loads' L2 round trip before the queries' barrier: depth 0, per-CTA trace,
    // queries staged 0.83 us after the row.
    if (in_tile) {
      const int at = static_cast<int>(pos - r.lo);
      if (kk_s == at) {
#pragma unroll
        for (int i = 0; i < kChunks; ++i)
          kraw[i] = half + 2 * i < n_chunks ? reinterpret_cast<const uint4 *>(new_row_s)[half + 2 * i]
                                            : make_uint4(0, 0, 0, 0);
      }
      if (warp == (kWarpSoftmax ? at / kKeysPerWarp : at % kWarps)) {
        const __half2 v = v_dims[0] ? reinterpret_cast<const __half2 *>(new_row_s + hd)[lane]
                                    : __floats2half2_rn(0.0f, 0.0f);
#pragma unroll
        for (int i = 0; i < kKeysPerWarp; ++i) {
          const bool here = i == (kWarpSoftmax ? at % kKeysPerWarp : at / kWarps);
          const unsigned a = *reinterpret_cast<const unsigned *>(&vraw[i][0]),
                         b = *reinterpret_cast<const unsigned *>(&v);
          const unsigned c = here ? b : a;
          vraw[i][0] = *reinterpret_cast<const __half2 *>(&c);
        }
      }
    }
  }
  if (tid < kMaxRows) m_s[tid] = -INFINITY, l_s[tid] = 0.0f; // every row's state, keys or none
  __syncthreads();                                           // row_lo / row_hi, m_s / l_s
  int64_t lo = row_lo[0], hi = row_hi[0];                    // the union of the rows' keys
  for (int i = G; i < R; i += G)
    lo = min(lo, row_lo[i]), hi = max(hi, row_hi[i]);

  if (k.fresh_on) { // bias and RoPE on the way in (rope_kv_write's arithmetic with the factors from
                    // above, then the scale), before the tiles' loads
    const float *qt = q + t0 * k.q_stride + static_cast<int64_t>(h0) * hd;
    const int32_t pairs = hd / 2;
    if (kWarpSoftmax && q_pair) { // the pair loaded above (bias added)
      float x0 = qa, x1 = qb;
      bias_rotate_pair_cs(k.fresh.rope, tid, nullptr, qda, qdb, cs_s[2 * tid], cs_s[2 * tid + 1], x0, x1);
      q_s[qda] = x0 * k.scale;
      q_s[qdb] = x1 * k.scale;
    }
    for (int i = tid; !kWarpSoftmax && i < G * pairs; i += kThreads) {
      // (one row, kR == 1: G is 1, so g is 0 without a division, which was ~30 instructions of
      // warp 0's chain before the queries' barrier: ncu source counters, H100)
      const int g = kR == 1 ? 0 : i / pairs, pi = i - g * pairs;
      int32_t da, db;
      rope_pair_dims(k.fresh.rope, pi, da, db);
      float x0 = qt[g * hd + da], x1 = qt[g * hd + db];
      bias_rotate_pair_cs(k.fresh.rope, pi, k.fresh.q_bias ? k.fresh.q_bias + (h0 + g) * hd : nullptr, da, db,
                          cs_s[2 * pi], cs_s[2 * pi + 1], x0, x1);
      q_s[g * hd + da] = x0 * k.scale;
      q_s[g * hd + db] = x1 * k.scale;
    }
  }

  float acc[kR][2 * kPairs];
#pragma unroll
  for (int g = 0; g < kR; ++g)
#pragma unroll
    for (int i = 0; i < 2 * kPairs; ++i)
      acc[g][i] = 0.0f;
  float m_w = -INFINITY, l_w = 0.0f; // kWarpSoftmax: this warp's running max and denominator
  if (!preload) point_at(lo);
  int odd = 0; // which half of p_s (and which tile correction) this tile uses
#pragma unroll 1
  for (int64_t base = lo; base < hi; base += kTile, kp += k_tile_step, vp += v_tile_step, odd ^= 1) {
    const int n_keys = static_cast<int>(min(static_cast<int64_t>(kTile), hi - base));
    float *const pt = p_s + odd * kTile * kR, *const ct = odd ? c_odd_s : c_s;
    // Every load of the tile first (one memory latency per tile); on the first tile also the
    // queries (unless rotated above). The first tile of an early block is in registers already:
    // only the new position's row, if it is in that tile, was taken from shared memory above.
    if (!preload || base != lo) { // (a preloaded tile holds the new row as written)
      load_keys(n_keys);
      load_values(n_keys);
    }
    if (base == lo) {
      if (!k.fresh_on) {
        const int32_t n_q = R / G, group_len = G * hd; // a query's group of heads is contiguous
        for (int32_t qi = 0; qi < n_q; ++qi) {
          const float *qt = q + (t0 + qi) * k.q_stride + static_cast<int64_t>(h0) * hd;
          for (int i = tid; i < group_len; i += kThreads)
            q_s[qi * group_len + i] = qt[i] * k.scale;
        }
      }
      __syncthreads();
      WO_CTA_MARK(1); // (trace builds) the queries staged
    }
    { // Scores: key tid / 2; the pair's threads take alternate 8-dimension chunks.
      float s[kR];
#pragma unroll
      for (int g = 0; g < kR; ++g)
        s[g] = 0.0f;
      if constexpr (kWarpSoftmax) {
        // (One row.) Every chunk's dot first, then summed in chunk order under the same condition
        // (the same bits): behind a branch per chunk, each chunk's query loads and FMA chain waited
        // for the chunk before it (the SASS: four blocks in series, ~0.4 us from the queries'
        // barrier to the scores in the per-CTA trace). A chunk past head_dim reads chunk 0 of the
        // query against its zero-filled key chunk, and is left out of the sum.
        float d[kChunks];
#pragma unroll
        for (int i = 0; i < kChunks; ++i) {
          const int c = half + 2 * i < n_chunks ? half + 2 * i : 0;
          float kf[8];
          unpack8(kraw[i], kf);
          d[i] = dot8(q_s + 8 * c, kf);
        }
#pragma unroll
        for (int i = 0; i < kChunks; ++i)
          if (half + 2 * i < n_chunks) s[0] += d[i];
      }
      // The other instances. (A loop bound, not an else: as an else, ptxas allocated the one-row
      // instance's registers differently, and its SASS would no longer be the one measured.)
#pragma unroll
      for (int i = 0; i < kChunks && !kWarpSoftmax; ++i) {
        const int c = half + 2 * i;
        if (c < n_chunks) {
          float kf[8];
          unpack8(kraw[i], kf);
#pragma unroll
          for (int g = 0; g < kR; ++g)
            if (g < R) s[g] += dot8(q_s + g * hd + 8 * c, kf);
        }
      }
#pragma unroll
      for (int g = 0; g < kR; ++g)
        s[g] += __shfl_xor_sync(0xffffffffu, s[g], 1);
      if constexpr (kWarpSoftmax) {
        // Lanes 2 i and 2 i + 1 hold key 16 w + i's score (one query: every key of the tile lies
        // in [lo, hi)); reductions over the pairs' lanes (xor 2 .. 16: the pair holds equal values).
        const float sc = kk_s < n_keys ? s[0] : -INFINITY;
        float mt = sc;
#pragma unroll
        for (int o = 2; o < 32; o <<= 1)
          mt = fmaxf(mt, __shfl_xor_sync(0xffffffffu, mt, o));
        const float m_new = fmaxf(m_w, mt);
        const float m_use = m_new == -INFINITY ? 0.0f : m_new; // (no key yet: nothing changes)
        const float pk = expf(sc - m_use);
        float sum = pk;
#pragma unroll
        for (int o = 2; o < 32; o <<= 1)
          sum += __shfl_xor_sync(0xffffffffu, sum, o);
        const float corr = expf(m_w - m_use); // 0 before the warp's first key (m_w = -inf)
        l_w = l_w * corr + sum;
        m_w = m_new;
        acc[0][0] *= corr, acc[0][1] *= corr;
#pragma unroll
        for (int i = 0; i < kKeysPerWarp; ++i) { // key 16 w + i: its probability from lane 2 i
          const float pi = __shfl_sync(0xffffffffu, pk, 2 * i);
          const float2 v = __half22float2(vraw[i][0]);
          acc[0][0] += pi * v.x, acc[0][1] += pi * v.y;
        }
        continue; // no barrier: the warp's keys, probabilities and values are its own
      }
      if (half == 0) {
        const int64_t j = base + kk_s;
#pragma unroll
        for (int g = 0; g < kR; ++g)
          pt[kk_s * kR + g] = kk_s < n_keys && g < R && j >= row_lo[g] && j < row_hi[g] ? s[g] : -INFINITY;
      }
    }
    __syncthreads();
    // Softmax: warp w owns rows w and w + 4. A row may have no key in this tile (a query before
    // the tile, or a window past it): then nothing changes (m_use keeps -inf - -inf out).
    for (int g = warp; g < R; g += kWarps) {
      const float a = pt[lane * kR + g], b = pt[(lane + 32) * kR + g];
      const float m_old = m_s[g];
      const float m_new = fmaxf(m_old, warp_max(fmaxf(a, b)));
      const float m_use = m_new == -INFINITY ? 0.0f : m_new;
      const float pa = expf(a - m_use), pb = expf(b - m_use);
      pt[lane * kR + g] = pa;
      pt[(lane + 32) * kR + g] = pb;
      const float sum = warp_sum(pa + pb);
      if (lane == 0) {
        const float corr = expf(m_old - m_use); // 0 while the row has seen no key (m_old = -inf)
        ct[g] = corr;
        l_s[g] = l_s[g] * corr + sum;
        m_s[g] = m_new;
      }
    }
    __syncthreads();
    // Values: warp w takes keys w, w + 4, ...; lane the dimensions 2 lane + 64 j and the next
    // (rows past the tile's keys were loaded as zeros and have probability 0).
#pragma unroll
    for (int g = 0; g < kR; ++g)
      if (g < R) {
        const float corr = ct[g];
#pragma unroll
        for (int i = 0; i < 2 * kPairs; ++i)
          acc[g][i] *= corr;
      }
#pragma unroll
    for (int i = 0; i < kKeysPerWarp; ++i) {
      const int kk = warp + kWarps * i;
      float pg[kR];
      load_probs<kR>(pt + kk * kR, pg);
#pragma unroll
      for (int j = 0; j < kPairs; ++j) {
        const float2 v = __half22float2(vraw[i][j]);
#pragma unroll
        for (int g = 0; g < kR; ++g)
          if (g < R) {
            acc[g][2 * j] += pg[g] * v.x;
            acc[g][2 * j + 1] += pg[g] * v.y;
          }
      }
    }
    // No barrier here: the next tile writes the other half of p_s and the other correction, and
    // the one after this tile's halves only past the next tile's first barrier, which every warp
    // reaches after these reads.
  }
#pragma unroll
  for (int g = 0; g < kR; ++g)
    if (g < R)
#pragma unroll
      for (int j = 0; j < kPairs; ++j) {
        const int d = 2 * lane + 64 * j;
        if (d < hd) {
          red_s[warp * L.q_len + g * hd + d] = acc[g][2 * j];
          red_s[warp * L.q_len + g * hd + d + 1] = acc[g][2 * j + 1];
        }
      }
  if constexpr (kWarpSoftmax)
    if (lane == 0) wm_s[warp] = m_w, wl_s[warp] = l_w;
  if constexpr (kTagged)
    if (tid == 0) epoch_s = epoch;
  __syncthreads();
  WO_CTA_MARK(2); // (trace builds) the last tile done
  const int n_out = R * hd;
  const auto block_sum_at = [&](int i) {
    float a = red_s[i];
#pragma unroll
    for (int w = 1; w < kWarps; ++w)
      a += red_s[w * L.q_len + i];
    return a;
  };

  if (kWarpSoftmax && r.used == 1) { // the warps' states with the sink, normalized (one row: i < hd)
    for (int d = tid; d < hd; d += kThreads) { // (whole warps where staged: hd % 32 == 0)
      float wm[kWarps], wl[kWarps], wa[kWarps];
#pragma unroll
      for (int w = 0; w < kWarps; ++w)
        wm[w] = wm_s[w], wl[w] = wl_s[w], wa[w] = red_s[w * L.q_len + d];
      const float o[1] = {combine_states(wm, wl, wa, k.sinks ? k.sinks + h0 : nullptr)};
      out[t0 * k.out_stride + static_cast<int64_t>(h0) * hd + d] = o[0];
      if (k.staged)
        wo::staged::write_group<1>(o, static_cast<int64_t>(h0) * hd + d, true, k.staged, k.staged_cols);
    }
    return;
  }
  if (r.used == 1) { // the whole range: fold in the sink (a logit without a value) and normalize
    // (n_out is a multiple of 32 where k.staged is set: a warp's 32 outputs are one staged group)
    // One row (kR == 1: R is 1, so G is 1 and i < hd): row 0, head h0, query t0 without the three
    // integer divisions, ~90 instructions on the chain of the two warps that end the kernel (ncu
    // source counters, H100: the depth-0 decode call of Qwen2.5's attention).
    for (int i = tid; i < n_out; i += kThreads) {
      const int row = kR == 1 ? 0 : i / hd, d = i - row * hd;
      const int32_t h = h0 + (kR == 1 ? 0 : row % G);
      const int64_t q_row = kR == 1 ? 0 : row / G;
      const float m = m_s[row], l = l_s[row];
      float big = k.sinks ? k.sinks[h] : -INFINITY;
      if (l > 0.0f) big = fmaxf(big, m);
      const float e = l > 0.0f ? expf(m - big) : 0.0f;
      const float denom = (k.sinks ? expf(k.sinks[h] - big) : 0.0f) + l * e;
      const float o[1] = {denom > 0.0f ? block_sum_at(i) * e * (1.0f / denom) : 0.0f};
      out[(t0 + q_row) * k.out_stride + static_cast<int64_t>(h) * hd + d] = o[0];
      if (k.staged)
        wo::staged::write_group<1>(o, static_cast<int64_t>(h) * hd + d, true, k.staged, k.staged_cols);
    }
    return;
  }

  // Several splits (one query: rows are the group's heads). Partial state of head h0 + g at
  // split s: ws_t + (g S + s) state = {acc[hd], m, l, -, -} (16-byte rows: the merge reads float4);
  // kTagged: the same values as tagged 64-bit words, split 0 merging (merge_tagged).
  const int64_t t = t0;
  if constexpr (kTagged) {
    const unsigned tag = epoch_s == 0xffffffffu ? 1u : epoch_s + 1u; // (never 0: see store_tagged2)
    const int64_t state64 = tagged_state_floats(hd) / 2;
    // Fixed rows of kMaxSplits states per (query, head), whatever the call's n_splits: a word is only
    // ever written by its own (query, head) row, under that row's rising tags (see store_tagged2).
    uint64_t *ws64 = reinterpret_cast<uint64_t *>(k.ws) + (t * k.n_heads + h0) * kMaxSplits * state64;
    uint64_t *st = ws64 + split * state64; // (one row: G == 1)
    { // the block's state of the warps' (kWarpSoftmax): m their max, e_w = exp(m_w - m)
      float m = -INFINITY, e[kWarps];
#pragma unroll
      for (int w = 0; w < kWarps; ++w)
        if (wl_s[w] > 0.0f) m = fmaxf(m, wm_s[w]);
#pragma unroll
      for (int w = 0; w < kWarps; ++w) // (no branch: see combine_states)
        e[w] = expf(wl_s[w] > 0.0f ? wm_s[w] - m : -INFINITY);
      for (int i = 2 * tid; i < n_out; i += 2 * kThreads) { // (n_out = hd, even)
        float a0 = 0.0f, a1 = 0.0f;
#pragma unroll
        for (int w = 0; w < kWarps; ++w)
          a0 += red_s[w * L.q_len + i] * e[w], a1 += red_s[w * L.q_len + i + 1] * e[w];
        store_tagged2(st + i, a0, a1, tag);
      }
      if (tid == 0) {
        float l = 0.0f;
#pragma unroll
        for (int w = 0; w < kWarps; ++w)
          l += wl_s[w] * e[w];
        store_tagged2(st + hd, m, l, tag);
      }
    }
    if (split != 0) return;
    merge_tagged(k, ws64, state64, h0, r.used, tag, red_s, out + t * k.out_stride);
    if (tid == 0) store_epoch(k.counters + t * gridDim.y + blockIdx.y, tag);
    return;
  }
  const int64_t state = split_state_floats(hd);
  float *ws_t = k.ws + (t * k.n_heads + h0) * static_cast<int64_t>(k.n_splits) * state;
  for (int i = tid; i < n_out; i += kThreads) {
    const int g = i / hd, d = i - g * hd;
    float *st = ws_t + (static_cast<int64_t>(g) * k.n_splits + split) * state;
    st[d] = block_sum_at(i);
    if (d == 0) st[hd] = m_s[g], st[hd + 1] = l_s[g];
  }
  // The last split to finish (a counter per query and block row of heads) merges.
  if (!last_block_to_arrive(k.counters + t * gridDim.y + blockIdx.y, static_cast<unsigned>(r.used))) return;

  // (The other instances.) Merge in split order. Per head: max over the non-empty states and the sink,
  // factors e_s = exp(m_s - max), denominator sum l_s e_s (+ the sink's share). The other splits' states come
  // from other SMs: L2 reads (__ldcg). One row of head_dim > 64 (Phi-3): where every thread has one (part,
  // quad) of pass 2 and one batch, its states' quads load here, before pass 1's (m, l), which they do not
  // depend on: both passes' loads are one L2 round trip instead of two. Not the head_dim <= 64 instance: at
  // its 80 registers (six blocks per SM) ptxas spilled the quads to local memory, and the spill stores waited
  // for the loads before pass 1's were issued (the SASS; the seventeenth session's loss). H100:
  // attention_bench phi3 depth 2048 17.1 -> 16.6 us, Phi-3 decode +0.4% at depth 2048.
  constexpr bool kEarly2 = kR == 1 && kPairs > 1;
  float4 early_quads[kEarly2 ? kMergeBatch : 1]; // this thread's (part, quad) of pass 2, one batch
  bool early2 = false;
  if constexpr (kEarly2) {
    const int n4 = G * (hd / 4), parts = merge_parts(n4), per = (r.used + parts - 1) / parts;
    early2 = parts * n4 <= kThreads && per <= kMergeBatch;
    if (early2 && tid < parts * n4) {
      const int p = tid / n4, q4 = tid - p * n4, g = q4 / (hd / 4), d4 = q4 - g * (hd / 4);
      const float4 *hg =
          reinterpret_cast<const float4 *>(ws_t + static_cast<int64_t>(g) * k.n_splits * state) + d4;
      const int s0 = p * per, s_hi = min(r.used, (p + 1) * per);
#pragma unroll
      for (int j = 0; j < kMergeBatch; ++j)
        if (s0 + j < s_hi) early_quads[j] = __ldcg(hg + (s0 + j) * (state / 4));
    }
  }
  for (int g = warp; g < G; g += kWarps) {
    const float *hg = ws_t + static_cast<int64_t>(g) * k.n_splits * state + hd;
    float ms[2], ls[2];
    float big = k.sinks ? k.sinks[h0 + g] : -INFINITY;
#pragma unroll
    for (int u = 0; u < 2; ++u) {
      const int s = lane + 32 * u;
      ms[u] = s < r.used ? __ldcg(hg + s * state) : -INFINITY;
      ls[u] = s < r.used ? __ldcg(hg + s * state + 1) : 0.0f;
      if (ls[u] > 0.0f) big = fmaxf(big, ms[u]);
    }
    big = warp_max(big);
    float den = 0.0f;
#pragma unroll
    for (int u = 0; u < 2; ++u) {
      const int s = lane + 32 * u;
      const float e = ls[u] > 0.0f ? expf(ms[u] - big) : 0.0f;
      if (s < r.used) e_s[g * kMaxSplits + s] = e;
      den += ls[u] * e;
    }
    den = warp_sum(den);
    if (lane == 0) {
      if (k.sinks) den += expf(k.sinks[h0 + g] - big);
      inv_s[g] = den > 0.0f ? 1.0f / den : 0.0f;
    }
  }
  __syncthreads();
  // Pass 2: the G heads' n4 output quads, each summed over the states by `parts` threads (states
  // [p per, (p + 1) per) for part p) whose partial sums then add in part order: every thread's
  // loads go out together (kMergeBatch at a time), so a merge of up to parts x kMergeBatch states
  // is one L2 round trip (a loop over r.used, one quad per thread, was ~used / 16 round trips plus
  // one dependent load per state of the remainder: all of Phi-3's 12). The partial sums go where
  // the value sums were (red_s holds merge_parts_cap x G hd floats; this block's were stored above).
  const int hd4 = hd / 4, n4 = G * hd4;
  const int parts = merge_parts(n4);
  const int per = (r.used + parts - 1) / parts;
  const int64_t stride4 = state / 4;
  float4 *part_s = reinterpret_cast<float4 *>(red_s); // [parts][n4]
  for (int i = tid; i < parts * n4; i += kThreads) {
    const int p = i / n4, q4 = i - p * n4, g = q4 / hd4, d4 = q4 - g * hd4;
    const float4 *hg =
        reinterpret_cast<const float4 *>(ws_t + static_cast<int64_t>(g) * k.n_splits * state) + d4;
    const float *eg = e_s + g * kMaxSplits;
    const int s_hi = min(r.used, (p + 1) * per);
    float4 o = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    if (early2) { // (i == tid) the one batch loaded before pass 1, the same sums
      const int s0 = p * per;
#pragma unroll
      for (int j = 0; j < kMergeBatch; ++j)
        if (s0 + j < s_hi) {
          const float e = eg[s0 + j];
          const float4 a = early_quads[j];
          o.x += a.x * e, o.y += a.y * e, o.z += a.z * e, o.w += a.w * e;
        }
    } else {
      for (int s0 = p * per; s0 < s_hi; s0 += kMergeBatch) {
        float4 a[kMergeBatch];
#pragma unroll
        for (int j = 0; j < kMergeBatch; ++j)
          if (s0 + j < s_hi) a[j] = __ldcg(hg + (s0 + j) * stride4);
#pragma unroll
        for (int j = 0; j < kMergeBatch; ++j)
          if (s0 + j < s_hi) {
            const float e = eg[s0 + j];
            o.x += a[j].x * e, o.y += a[j].y * e, o.z += a[j].z * e, o.w += a[j].w * e;
          }
      }
    }
    part_s[i] = o;
  }
  __syncthreads();
  // Whole warps take each round (the staging's shuffles): 8 lanes hold a group of 32 outputs.
  for (int base = 0; base < n4; base += kThreads) {
    const int q4 = base + tid;
    const bool on = q4 < n4; // whole groups of 8 lanes (n4 = G hd / 4, hd % 32 == 0 where staged)
    const int g = on ? q4 / hd4 : 0, d4 = q4 - g * hd4;
    float4 o = on ? part_s[q4] : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    for (int p = 1; on && p < parts; ++p) {
      const float4 a = part_s[p * n4 + q4];
      o.x += a.x, o.y += a.y, o.z += a.z, o.w += a.w;
    }
    const float inv = on ? inv_s[g] : 0.0f;
    const float v[4] = {o.x * inv, o.y * inv, o.z * inv, o.w * inv};
    if (on) {
      float4 *dst =
          reinterpret_cast<float4 *>(out + t * k.out_stride + static_cast<int64_t>(h0 + g) * hd) + d4;
      *dst = make_float4(v[0], v[1], v[2], v[3]);
    }
    if (k.staged) // (warp-uniform)
      wo::staged::write_group<4>(v, static_cast<int64_t>(h0 + g) * hd + 4 * d4, on, k.staged, k.staged_cols);
  }
}

// Instances with 4+ rows and head_dim > 64 run held to 128 registers (4 blocks per SM): Phi-3's
// prefill (8 rows of 96) took 168 and 3 blocks (2048-token prefill 11.7k -> 12.2k tok/s). Capping
// the one-row decode instance the same way (80) cost Phi-3 decode 5-12% (its prefetch), and even
// a bound of one block changes ptxas's choices, so an instance gets a bound only where one was
// measured (the one-row instances below).
template <int kR, int kPairs>
__global__ void __launch_bounds__(kThreads)
    attention_grouped_kernel(const float *q, const __half *kc, const __half *vc, float *out, AttnConsts k) {
  grouped_attention<kR, kPairs>(q, kc, vc, out, k);
}
template <int kR, int kPairs>
__global__ void __launch_bounds__(kThreads, 4)
    attention_grouped_capped_kernel(const float *q, const __half *kc, const __half *vc, float *out,
                                    AttnConsts k) {
  grouped_attention<kR, kPairs>(q, kc, vc, out, k);
}

// The one-row hd <= 64 decode instance (Qwen2.5, gpt-oss) keeps six blocks per SM (80 registers, as
// it compiled before the first tile's loads moved ahead of the PDL wait and stayed live across the
// prologue; unbounded it took 127 and four blocks).
__global__ void __launch_bounds__(kThreads, 6)
    attention_grouped_one_row_kernel(const float *q, const __half *kc, const __half *vc, float *out,
                                     AttnConsts k) {
  WO_CTA_SCOPE(wo::cta_trace::kAttention, k.head_dim);
  grouped_attention<1, 1>(q, kc, vc, out, k);
}

// The one-row 64 < hd <= 128 decode instance (Phi-3) held to three blocks per SM: unbounded,
// ptxas's choice flips between 138 registers (3 blocks) and 128 (4 blocks, 16 splits instead of
// 12) with unrelated code changes, and at 128 Phi-3 decode lost 1-3% (H100 A/B, the nineteenth
// session and the seventeenth, docs/perf.md). Bounded it takes 148 and keeps 3 blocks:
// attention_bench phi3 depth 2048 18.74 -> 16.93 us with the one-round-trip merge, Phi-3 decode
// +1% / +2.3% at depth 0 / 2048.
__global__ void __launch_bounds__(kThreads, 3)
    attention_grouped_one_row_hd128_kernel(const float *q, const __half *kc, const __half *vc, float *out,
                                           AttnConsts k) {
  grouped_attention<1, 2>(q, kc, vc, out, k);
}

using AttnKernel = void (*)(const float *, const __half *, const __half *, float *, AttnConsts);

// The instance for blocks of `rows` rows of head_dim dimensions.
template <int kR> AttnKernel kernel_for_rows(int32_t head_dim) {
  if constexpr (kR >= 4) {
    return head_dim <= 64    ? attention_grouped_kernel<kR, 1>
           : head_dim <= 128 ? attention_grouped_capped_kernel<kR, 2>
                             : attention_grouped_capped_kernel<kR, 4>;
  } else {
    static_assert(kR == 1, "instance_rows gives 1, 4 or 8 rows");
    return head_dim <= 64    ? attention_grouped_one_row_kernel
           : head_dim <= 128 ? attention_grouped_one_row_hd128_kernel
                             : attention_grouped_kernel<1, 4>;
  }
}
AttnKernel kernel_for(int32_t rows, int32_t head_dim) {
  const int kr = instance_rows(rows);
  return kr == 1   ? kernel_for_rows<1>(head_dim)
         : kr == 4 ? kernel_for_rows<4>(head_dim)
                   : kernel_for_rows<8>(head_dim);
}

// How many blocks of `kernel` the GPU holds at once (occupancy x SMs; the occupancy asked once per
// instance and shared-memory size); kTargetBlocks if the runtime cannot say.
int64_t resident_blocks(AttnKernel kernel, size_t smem) {
  const int sms = wo::occupancy::sm_count();
  const int per_sm = wo::occupancy::ctas_per_sm(kernel, kThreads, smem);
  return per_sm > 0 && sms > 0 ? static_cast<int64_t>(per_sm) * sms : kTargetBlocks;
}

bool preload_enabled() {
  static const bool on = !wo::env_switched_off("WORKER_ATTN_PRELOAD");
  return on;
}

bool prefetch_second_tile_enabled() {
  static const bool on = !wo::env_switched_off("WORKER_ATTN_PREFETCH2");
  return on;
}

bool grouped_enabled() {
  static const bool on = !wo::env_switched_off("WORKER_ATTN_GROUPED");
  return on;
}

// Blocks per KV head's group in decode: one per query head. Each re-reads the group's keys (from
// L2), but a block's serial chain (load, scores, softmax, values, merge) is what decode waits on:
// H100 bench_suite, depth 0 / 2048, parts 1 -> 2 -> 4 -> 8 (group = 8 heads, Qwen2.5's 7 alike):
// Qwen 1058/1039 -> 1114/1076 -> 1131/1076 -> 1177/1087, GPT-OSS 416/412 -> 431/424 -> 435/412
// -> 441/419 tok/s. WORKER_ATTN_HEAD_PARTS=N, 1 <= N <= kMaxRows, sets N (A/B; other values: the
// default, as for every tuning number, worker/env_switch.hpp).
int32_t head_parts_for(int32_t group) {
  static const int32_t forced = static_cast<int32_t>(wo::env_int("WORKER_ATTN_HEAD_PARTS", 1, kMaxRows, 0));
  return forced > 0 ? forced : group;
}

} // namespace

bool attention_grouped(const float *q, const __half *k_cache, const __half *v_cache, float *out,
                       const AttnConsts &k0, int64_t n_tokens, int64_t state_floats, cudaStream_t stream,
                       cudaError_t *status) {
  const int32_t group = k0.n_heads / k0.n_kv_heads;
  const auto aligned16 = [](const void *p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; };
  if (group > kMaxRows || k0.head_dim % 8 != 0 || !aligned16(k_cache) || !aligned16(v_cache) ||
      !aligned16(out) || k0.out_stride % 4 != 0 || (k0.ws && !aligned16(k0.ws)) || !grouped_enabled())
    return false;
  AttnConsts k = k0;
  k.n_tokens = n_tokens;
  if (!grouped_kernel_stages(k.head_dim)) k.staged = nullptr; // the caller stages (stage_row)
  k.preload_keys = preload_enabled();
  k.prefetch_second_tile = prefetch_second_tile_enabled();
  // Decode-sized calls: as many splits as the GPU holds blocks at once (one wave: a block's chain of
  // tiles and the merge is what decode waits on, and a second partial wave doubles it), limited by
  // the workspace; never by n_kv (see visible_keys). H100, depth 2048, a fixed 1056 blocks ->
  // one wave: Phi-3 (4 blocks per SM, 33 -> 16 splits) 422 -> 436 tok/s, GPT-OSS (5 per SM, 17 ->
  // 10 splits) 429 -> 434; registers capped for more blocks per SM instead lost 2-5%.
  // The split count, hence the merge's rounding, follows the GPU model (SMs, occupancy).
  k.n_splits = 1;
  // Decode splits a group's heads over blocks (head_parts_for).
  const bool splittable = k.ws && k.counters && n_tokens <= kMaxSplitTokens;
  if (splittable) { // parts of ceil(group / parts) heads, none empty
    const int32_t per =
        (group + std::min(group, head_parts_for(group)) - 1) / std::min(group, head_parts_for(group));
    k.head_parts = (group + per - 1) / per;
  } else {
    k.head_parts = 1;
  }
  if (splittable) {
    const int64_t blocks = n_tokens * k.n_kv_heads * k.head_parts;
    const int32_t rows = (group + k.head_parts - 1) / k.head_parts; // one query per block
    const int64_t resident = resident_blocks(
        kernel_for(rows, k.head_dim),
        static_cast<size_t>(smem_layout(rows, k.head_dim, instance_rows(rows)).total) * sizeof(float));
    int64_t s = std::min<int64_t>(std::max<int64_t>(resident / blocks, 1), kMaxSplits);
    if (tagged_states(instance_rows(rows), k.head_dim)) // tagged states in fixed rows of kMaxSplits
      s = state_floats >= n_tokens * k.n_heads * kMaxSplits * tagged_state_floats(k.head_dim) ? s : 1;
    else
      s = std::min<int64_t>(s, state_floats / (n_tokens * k.n_heads * split_state_floats(k.head_dim)));
    k.n_splits = static_cast<int32_t>(std::max<int64_t>(s, 1));
  }
  // Without splits a block takes as many consecutive queries as fill its eight rows (prefill: a
  // group of 1 shares each key tile among 8 queries).
  k.queries_per_block =
      k.n_splits == 1 ? static_cast<int32_t>(std::min<int64_t>(std::max(1, kMaxRows / group), n_tokens)) : 1;
  const int32_t rows = k.queries_per_block * ((group + k.head_parts - 1) / k.head_parts);
  const SmemLayout L = smem_layout(rows, k.head_dim, instance_rows(rows));
  const size_t smem = static_cast<size_t>(L.total) * sizeof(float);
  const int64_t n_blocks = (n_tokens + k.queries_per_block - 1) / k.queries_per_block;
  if (n_blocks > 0x7fffffff) return false;
  // Launched splits: only those that can hold keys under the call's bounds. A query sees at most
  // n_kv keys (graph mode: the capture's bound, never below the real count) and at most `window`,
  // so at most splits_used(that) splits hold keys (visible_keys); the partition still
  // follows k.n_splits alone, so the bits do not depend on the bound. A decode graph of a short
  // bucket, or a sliding-window layer, no longer launches (and schedules) empty blocks: Qwen2.5's
  // 56 splits at a 256-key bucket launch 4.
  const int64_t max_keys = k.window > 0 ? std::min(k.window, k.n_kv) : k.n_kv;
  const int64_t launched_splits = splits_used(max_keys, k.n_splits);
  const dim3 grid(static_cast<unsigned>(n_blocks), static_cast<unsigned>(k.n_kv_heads * k.head_parts),
                  static_cast<unsigned>(launched_splits));
  *status = launch(kernel_for(rows, k.head_dim), grid, kThreads, smem, stream, q, k_cache, v_cache, out, k);
  return true;
}

} // namespace wo::kernels::detail

// Trace builds (WORKER_CTA_TRACE): decode attention's per-CTA ring, for bench (worker/cta_trace.cuh).
WO_CTA_TRACE_EXPORT(wo_cta_trace_dump_attention)
