// Attention over the FP16 KV cache: the entry points, and the general kernel for the shapes the
// grouped kernel (attention_grouped.cu, prefill and decode) does not take: GQA groups above 8
// heads, head_dim not a multiple of 8, unaligned buffers, or WORKER_ATTN_GROUPED=0.
//
// General kernel: one block per (query token, head, key split); its warps split the block's keys and each
// keeps an online softmax (running max m, denominator l, weighted value sum acc), so scores never need a
// buffer of n_kv floats. The warps' states are merged in the block. With one split the block
// writes the output; with several (decode: few queries, long context, flash-decoding) each block
// writes its partial state to the workspace and a second kernel merges the splits.
#include "attention_common.cuh"

#include <worker/staged_x.cuh>

#include <worker/kernels.hpp>

#include <algorithm>

namespace wo::kernels {
namespace {

using detail::AttnConsts;
using detail::kMaxSplits;
using detail::kMaxSplitTokens;
constexpr int kWarps = 8;
constexpr int kMaxHeadDim = detail::kAttnMaxHeadDim;
constexpr int kMaxPerLane = kMaxHeadDim / 32;
constexpr int kUnroll = 4;             // keys per warp per step of the main loop
constexpr int64_t kTargetBlocks = 264; // about two waves of blocks on a 132-SM H100

__global__ void __launch_bounds__(kWarps * 32)
    attention_kernel(const float *q, const __half *kc, const __half *vc, float *out, AttnConsts k) {
  wo::pdl::enter();
  const int64_t t = blockIdx.x;
  const int32_t h = blockIdx.y;
  const int32_t split = blockIdx.z;
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int32_t hd = k.head_dim;
  const int32_t kvh = h / (k.n_heads / k.n_kv_heads);
  const int64_t kv_row = static_cast<int64_t>(k.n_kv_heads) * hd;

  // This split's share [lo, hi) of the keys the query sees.
  const detail::KeyRange range = detail::visible_keys(k, t, split, gridDim.x);
  const int64_t lo = range.lo, hi = range.hi;
  if (k.n_splits > 1 && lo >= hi) { // an empty split (past `used`): the merge skips states with l == 0
    if (threadIdx.x == 0) {
      float *ws = k.ws + ((t * k.n_heads + h) * k.n_splits + split) * (2 + hd);
      ws[0] = -INFINITY, ws[1] = 0.0f;
    }
    return;
  }

  float qr[kMaxPerLane], acc[kMaxPerLane];
  const float *qt = q + t * k.q_stride + static_cast<int64_t>(h) * hd;
#pragma unroll
  for (int r = 0; r < kMaxPerLane; ++r) {
    const int d = lane + 32 * r;
    qr[r] = d < hd ? qt[d] * k.scale : 0.0f;
    acc[r] = 0.0f;
  }
  float m = -INFINITY, l = 0.0f;
  int64_t j = lo + warp;
  // kUnroll keys per step (this warp's next ones): their loads and shuffle reductions overlap,
  // which decode needs (a block has few keys per warp, so latency, not bandwidth, bounds it).
  for (; j + (kUnroll - 1) * kWarps < hi; j += kUnroll * kWarps) {
    float s[kUnroll];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      const __half *kj = kc + (j + u * kWarps) * kv_row + static_cast<int64_t>(kvh) * hd;
      float dot = 0.0f;
#pragma unroll
      for (int r = 0; r < kMaxPerLane; ++r) {
        const int d = lane + 32 * r;
        if (d < hd) dot += qr[r] * __half2float(kj[d]);
      }
      s[u] = dot;
    }
#pragma unroll
    for (int u = 0; u < kUnroll; ++u)
      s[u] = detail::warp_sum(s[u]);
    float m_new = m;
#pragma unroll
    for (int u = 0; u < kUnroll; ++u)
      m_new = fmaxf(m_new, s[u]);
    const float corr = expf(m - m_new);
    float w[kUnroll];
    l *= corr;
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      w[u] = expf(s[u] - m_new);
      l += w[u];
    }
#pragma unroll
    for (int r = 0; r < kMaxPerLane; ++r) {
      const int d = lane + 32 * r;
      if (d < hd) {
        float a = acc[r] * corr;
#pragma unroll
        for (int u = 0; u < kUnroll; ++u)
          a += w[u] * __half2float(vc[(j + u * kWarps) * kv_row + static_cast<int64_t>(kvh) * hd + d]);
        acc[r] = a;
      }
    }
    m = m_new;
  }
  for (; j < hi; j += kWarps) { // the remaining keys, one at a time
    const __half *kj = kc + j * kv_row + static_cast<int64_t>(kvh) * hd;
    const __half *vj = vc + j * kv_row + static_cast<int64_t>(kvh) * hd;
    float s = 0.0f;
#pragma unroll
    for (int r = 0; r < kMaxPerLane; ++r) {
      const int d = lane + 32 * r;
      if (d < hd) s += qr[r] * __half2float(kj[d]);
    }
    s = detail::warp_sum(s);
    const float m_new = fmaxf(m, s);
    const float corr = expf(m - m_new), w = expf(s - m_new);
    l = l * corr + w;
#pragma unroll
    for (int r = 0; r < kMaxPerLane; ++r) {
      const int d = lane + 32 * r;
      if (d < hd) acc[r] = acc[r] * corr + w * __half2float(vj[d]);
    }
    m = m_new;
  }

  __shared__ float sm_m[kWarps], sm_l[kWarps];
  __shared__ float sm_acc[kWarps][kMaxHeadDim];
  if (lane == 0) sm_m[warp] = m, sm_l[warp] = l;
#pragma unroll
  for (int r = 0; r < kMaxPerLane; ++r) {
    const int d = lane + 32 * r;
    if (d < hd) sm_acc[warp][d] = acc[r];
  }
  __syncthreads();

  // Merge the warps. A final block folds in the sink (a logit with no value); a partial block
  // leaves that to the merge kernel.
  const bool partial = k.n_splits > 1;
  const bool sink = k.sinks && !partial;
  float big = sink ? k.sinks[h] : -INFINITY;
  for (int w = 0; w < kWarps; ++w)
    if (sm_l[w] > 0.0f) big = fmaxf(big, sm_m[w]);
  float denom = sink ? expf(k.sinks[h] - big) : 0.0f;
  float wt[kWarps];
  for (int w = 0; w < kWarps; ++w) {
    wt[w] = sm_l[w] > 0.0f ? expf(sm_m[w] - big) : 0.0f; // empty warps have m = -inf
    denom += sm_l[w] * wt[w];
  }
  if (partial) {
    float *ws = k.ws + ((t * k.n_heads + h) * k.n_splits + split) * (2 + hd);
    if (threadIdx.x == 0) ws[0] = big, ws[1] = denom; // denom == 0: no keys in this split
    for (int d = threadIdx.x; d < hd; d += blockDim.x) {
      float o = 0.0f;
      for (int w = 0; w < kWarps; ++w)
        o += sm_acc[w][d] * wt[w];
      ws[2 + d] = o;
    }
    return;
  }
  const float inv = denom > 0.0f ? 1.0f / denom : 0.0f;
  float *ot = out + t * k.out_stride + static_cast<int64_t>(h) * hd;
  for (int d = threadIdx.x; d < hd; d += blockDim.x) {
    float o = 0.0f;
    for (int w = 0; w < kWarps; ++w)
      o += sm_acc[w][d] * wt[w];
    ot[d] = o * inv;
  }
}

// Merges the splits' partial states of one (query, head) per block. Thread s loads split s's
// (m, l) into shared memory, thread 0 forms the max, the per-split factors expf(m_s - big) and the
// denominator in split order, then every thread sums its dimensions' accumulators over the splits
// with those factors. (Each thread walking the splits' headers itself, twice and then once per
// dimension, chained ~3S dependent global loads: 6.6 us per merge on Phi-3, 13% of Qwen's step.)
__global__ void attention_merge_kernel(float *out, AttnConsts k) {
  __shared__ float sm_m[kMaxSplits], sm_l[kMaxSplits], sm_e[kMaxSplits];
  __shared__ float sm_inv;
  wo::pdl::enter();
  const int64_t t = blockIdx.x;
  const int32_t h = blockIdx.y;
  const int32_t hd = k.head_dim, S = k.n_splits;
  const float *ws = k.ws + (t * k.n_heads + h) * static_cast<int64_t>(S) * (2 + hd);
  for (int s = threadIdx.x; s < S; s += blockDim.x) {
    sm_m[s] = ws[s * (2 + hd)];
    sm_l[s] = ws[s * (2 + hd) + 1];
  }
  __syncthreads();
  if (threadIdx.x == 0) { // the same operations in the same order as one thread over the splits
    float big = k.sinks ? k.sinks[h] : -INFINITY;
    for (int s = 0; s < S; ++s)
      if (sm_l[s] > 0.0f) big = fmaxf(big, sm_m[s]);
    float denom = k.sinks ? expf(k.sinks[h] - big) : 0.0f;
    for (int s = 0; s < S; ++s) {
      const float l = sm_l[s];
      sm_e[s] = l > 0.0f ? expf(sm_m[s] - big) : 0.0f;
      if (l > 0.0f) denom += l * sm_e[s];
    }
    sm_inv = denom > 0.0f ? 1.0f / denom : 0.0f;
  }
  __syncthreads();
  const float inv = sm_inv;
  float *ot = out + t * k.out_stride + static_cast<int64_t>(h) * hd;
  for (int d = threadIdx.x; d < hd; d += blockDim.x) {
    float o = 0.0f;
#pragma unroll 4
    for (int s = 0; s < S; ++s)
      if (sm_l[s] > 0.0f) o += ws[s * (2 + hd) + 2 + d] * sm_e[s];
    ot[d] = o * inv;
  }
}

// Splits that fill the GPU for this call, limited by the workspace given. Deliberately not by
// n_kv: in graph mode n_kv is only the capture's bound, and a split count that followed it would
// make the same decode step round differently when replayed from another bucket, or in a process
// with another context size (greedy outputs then part at near-ties). The kernel instead uses
// splits_used(keys) of the launched splits, from the real key count; the rest are empty blocks
// that return at once.
int32_t choose_splits(const AttentionParams &p, int64_t state_floats) {
  if (state_floats <= 0 || p.n_tokens > kMaxSplitTokens) return 1;
  const int64_t blocks = p.n_tokens * p.n_heads;
  int64_t s = (kTargetBlocks + blocks - 1) / blocks;
  s = std::min<int64_t>(s, kMaxSplits);
  const int64_t per_split = blocks * (2 + p.head_dim);
  s = std::min<int64_t>(s, state_floats / per_split);
  return static_cast<int32_t>(std::max<int64_t>(s, 1));
}

} // namespace

int64_t attention_workspace_floats(int64_t n_tokens, int32_t n_heads, int32_t head_dim) {
  if (n_tokens <= 0 || n_heads <= 0 || head_dim <= 0) return 0;
  // Per state the grouped kernel's largest (detail::max_state_floats; the general kernel's m, l,
  // acc[head_dim] fit in it).
  return detail::attn_counter_floats(n_heads) + std::min(n_tokens, kMaxSplitTokens) * n_heads *
                                                    static_cast<int64_t>(kMaxSplits) *
                                                    detail::max_state_floats(head_dim);
}

int64_t attention_workspace_counter_words(int32_t n_heads) {
  return n_heads > 0 ? detail::attn_counter_floats(n_heads) : 0;
}

cudaError_t attention_workspace_clear(float *workspace, int64_t workspace_floats, cudaStream_t stream) {
  if (workspace_floats < 0 || (!workspace && workspace_floats > 0)) return cudaErrorInvalidValue;
  if (workspace_floats == 0) return cudaSuccess;
  return cudaMemsetAsync(workspace, 0, static_cast<size_t>(workspace_floats) * sizeof(float), stream);
}

namespace {

bool attention_args_ok(const float *q, const __half *k_cache, const __half *v_cache, const float *out,
                       const AttentionParams &p) {
  const int64_t q_row = static_cast<int64_t>(p.n_heads) * p.head_dim;
  return q && k_cache && v_cache && out && q != out && p.n_tokens >= 0 && p.n_tokens <= 0x7fffffff &&
         p.pos0 >= 0 && p.n_kv >= 0 && p.n_heads > 0 && p.n_heads <= 65535 && p.n_kv_heads > 0 &&
         p.n_heads % p.n_kv_heads == 0 && p.head_dim > 0 && p.head_dim <= kMaxHeadDim && p.window >= 0 &&
         (p.q_stride == 0 || p.q_stride >= q_row) && (p.out_stride == 0 || p.out_stride >= q_row) &&
         p.workspace_floats >= 0 &&
         (!p.staged_out || p.n_tokens != 1 ||
          (wo::staged::fits(q_row) && reinterpret_cast<uintptr_t>(p.staged_out) % 16 == 0));
}

// The kernels' constants for a checked call; state_floats: the workspace's room for partial states.
AttnConsts attention_consts(const AttentionParams &p, int64_t &state_floats) {
  const int64_t q_row = static_cast<int64_t>(p.n_heads) * p.head_dim;
  AttnConsts k{};
  k.pos0 = p.pos0;
  k.n_kv = p.n_kv;
  k.window = p.window;
  k.q_stride = p.q_stride ? p.q_stride : q_row;
  k.out_stride = p.out_stride ? p.out_stride : q_row;
  k.n_heads = p.n_heads;
  k.n_kv_heads = p.n_kv_heads;
  k.head_dim = p.head_dim;
  k.scale = p.scale;
  k.causal = p.causal;
  k.sinks = p.sinks;
  k.positions = p.positions;
  // Workspace: the grouped kernel's split counters, then the partial states.
  const int64_t counter_floats = detail::attn_counter_floats(p.n_heads);
  const bool has_ws = p.workspace && p.workspace_floats > counter_floats;
  k.counters = has_ws ? reinterpret_cast<unsigned *>(p.workspace) : nullptr;
  k.ws = has_ws ? p.workspace + counter_floats : nullptr;
  state_floats = has_ws ? p.workspace_floats - counter_floats : 0;
  const bool staged = p.staged_out && p.n_tokens == 1;
  k.staged = staged ? static_cast<uint8_t *>(p.staged_out) : nullptr;
  k.staged_cols = staged ? q_row : 0;
  return k;
}

// The staged row where a call asked for it and its kernel did not write it (kernel_staged: the
// grouped kernel stages whole heads of head_dim % 32 == 0; the general kernel never).
cudaError_t stage_after(cudaError_t e, const AttnConsts &k, const float *out, bool kernel_staged,
                        cudaStream_t stream) {
  if (e != cudaSuccess || !k.staged || kernel_staged) return e;
  return stage_row(out, k.staged, k.staged_cols, stream);
}

} // namespace

cudaError_t attention(const float *q, const __half *k_cache, const __half *v_cache, float *out,
                      const AttentionParams &p, cudaStream_t stream) {
  if (!attention_args_ok(q, k_cache, v_cache, out, p)) return cudaErrorInvalidValue;
  if (p.n_tokens == 0) return cudaSuccess;
  int64_t state_floats = 0;
  AttnConsts k = attention_consts(p, state_floats);
  cudaError_t decoded = cudaSuccess;
  if (detail::attention_grouped(q, k_cache, v_cache, out, k, p.n_tokens, state_floats, stream, &decoded))
    return stage_after(decoded, k, out, detail::grouped_kernel_stages(k.head_dim), stream);
  k.n_splits = choose_splits(p, state_floats);
  const dim3 grid(static_cast<unsigned>(p.n_tokens), static_cast<unsigned>(p.n_heads),
                  static_cast<unsigned>(k.n_splits));
  cudaError_t e = detail::launch(attention_kernel, grid, kWarps * 32, 0, stream, q, k_cache, v_cache, out, k);
  if (e == cudaSuccess && k.n_splits > 1) {
    const dim3 merge_grid(static_cast<unsigned>(p.n_tokens), static_cast<unsigned>(p.n_heads));
    e = detail::launch(attention_merge_kernel, merge_grid, 128, 0, stream, out, k);
  }
  return stage_after(e, k, out, false, stream);
}

cudaError_t rope_kv_attention(const QkvRopeCache &a, const RopeParams &rp, float *out,
                              const AttentionParams &p, cudaStream_t stream) {
  AttentionParams ap = p;
  ap.q_stride = a.q_stride; // attention reads the q that rope_kv_write rotates
  QkvRopeCache c;
  detail::RopeConsts rc{};
  const bool one_step = ap.n_tokens == 1 && ap.causal && detail::qkv_rope_args(a, rp, c, rc) &&
                        a.n_heads == ap.n_heads && a.n_kv_heads == ap.n_kv_heads &&
                        a.head_dim == ap.head_dim && attention_args_ok(a.q, a.k_cache, a.v_cache, out, ap);
  if (one_step) {
    int64_t state_floats = 0;
    AttnConsts k = attention_consts(ap, state_floats);
    k.positions = a.positions; // the RoPE positions and cache rows; n_kv follows them
    k.fresh_on = true;
    k.positions_settled = a.positions_settled;
    k.fresh = detail::FreshQkv{c.k, c.v, c.q_bias, c.k_bias, c.v_bias, c.kv_stride, c.k_cache, c.v_cache, rc};
    cudaError_t e = cudaSuccess;
    if (detail::attention_grouped(a.q, a.k_cache, a.v_cache, out, k, 1, state_floats, stream, &e))
      return stage_after(e, k, out, detail::grouped_kernel_stages(k.head_dim), stream);
  }
  const cudaError_t e = rope_kv_write(a, ap.n_tokens, rp, stream);
  return e != cudaSuccess ? e : attention(a.q, a.k_cache, a.v_cache, out, ap, stream);
}

} // namespace wo::kernels
