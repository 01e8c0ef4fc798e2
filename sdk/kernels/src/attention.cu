// Attention over the FP16 KV cache, one kernel for prefill and decode.
//
// One block per (query token, head); its warps split the visible keys and each keeps an online
// softmax (running max m, denominator l, weighted value sum acc) so scores never need a buffer
// of n_kv floats. The warps' partial states are merged at the end, exactly as a later
// split-over-keys decode kernel will merge partial states from several blocks.
#include "launch.cuh"

#include <worker/kernels.hpp>

namespace wo::kernels {
namespace {

constexpr int kWarps = 8;
constexpr int kMaxHeadDim = 256;
constexpr int kMaxPerLane = kMaxHeadDim / 32;

struct AttnConsts {
  int64_t pos0, n_kv, window, q_stride, out_stride;
  int32_t n_heads, n_kv_heads, head_dim;
  float scale;
  bool causal;
  const float *sinks;
};

__global__ void __launch_bounds__(kWarps * 32)
    attention_kernel(const float *q, const __half *kc, const __half *vc, float *out, AttnConsts k) {
  const int64_t t = blockIdx.x;
  const int32_t h = blockIdx.y;
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int32_t hd = k.head_dim;
  const int32_t kvh = h / (k.n_heads / k.n_kv_heads);
  const int64_t kv_row = static_cast<int64_t>(k.n_kv_heads) * hd;

  // Visible keys [lo, hi) for the query at position p.
  const int64_t p = k.pos0 + t;
  const int64_t hi = k.causal ? min(p + 1, k.n_kv) : k.n_kv;
  const int64_t lo = k.window > 0 ? max(static_cast<int64_t>(0), p - k.window + 1) : 0;

  float qr[kMaxPerLane], acc[kMaxPerLane];
  const float *qt = q + t * k.q_stride + static_cast<int64_t>(h) * hd;
#pragma unroll
  for (int r = 0; r < kMaxPerLane; ++r) {
    const int d = lane + 32 * r;
    qr[r] = d < hd ? qt[d] * k.scale : 0.0f;
    acc[r] = 0.0f;
  }
  float m = -INFINITY, l = 0.0f;
  for (int64_t j = lo + warp; j < hi; j += kWarps) {
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

  float big = k.sinks ? k.sinks[h] : -INFINITY;
  for (int w = 0; w < kWarps; ++w) big = fmaxf(big, sm_m[w]);
  float denom = k.sinks ? expf(k.sinks[h] - big) : 0.0f;
  float wt[kWarps];
  for (int w = 0; w < kWarps; ++w) {
    wt[w] = sm_l[w] > 0.0f ? expf(sm_m[w] - big) : 0.0f; // empty warps have m = -inf
    denom += sm_l[w] * wt[w];
  }
  const float inv = denom > 0.0f ? 1.0f / denom : 0.0f;
  float *ot = out + t * k.out_stride + static_cast<int64_t>(h) * hd;
  for (int d = threadIdx.x; d < hd; d += blockDim.x) {
    float o = 0.0f;
    for (int w = 0; w < kWarps; ++w) o += sm_acc[w][d] * wt[w];
    ot[d] = o * inv;
  }
}

} // namespace

cudaError_t attention(const float *q, const __half *k_cache, const __half *v_cache, float *out,
                      const AttentionParams &p, cudaStream_t stream) {
  const int64_t q_row = static_cast<int64_t>(p.n_heads) * p.head_dim;
  if (!q || !k_cache || !v_cache || !out || q == out || p.n_tokens < 0 || p.n_tokens > 0x7fffffff ||
      p.pos0 < 0 || p.n_kv < 0 || p.n_heads <= 0 || p.n_heads > 65535 || p.n_kv_heads <= 0 || p.n_heads % p.n_kv_heads != 0 ||
      p.head_dim <= 0 || p.head_dim > kMaxHeadDim || p.window < 0 || (p.q_stride != 0 && p.q_stride < q_row) ||
      (p.out_stride != 0 && p.out_stride < q_row))
    return cudaErrorInvalidValue;
  if (p.n_tokens == 0) return cudaSuccess;
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
  const dim3 grid(static_cast<unsigned>(p.n_tokens), static_cast<unsigned>(p.n_heads));
  attention_kernel<<<grid, kWarps * 32, 0, stream>>>(q, k_cache, v_cache, out, k);
  return detail::launched();
}

} // namespace wo::kernels
