// Mixture-of-experts helpers: router top-k with softmax over the chosen logits, per-expert bias,
// and the weighted combination of the experts' outputs.
#include "launch.cuh"

#include <worker/env_switch.hpp>
#include <worker/kernels.hpp>

namespace wo::kernels {
namespace {

constexpr int kMaxCols = 1024, kMaxK = 32;

// One warp picks one row's experts. Each lane holds P = ceil(n_cols / 32) logits (a template
// argument, so the arrays stay in registers: GPT-OSS's 32 experts take P = 1); k rounds of a
// warp-wide argmax pick the experts in descending order (ties: lower index). Lane s keeps round
// s's logit (k <= 32). load(c) returns logit c (c < n_cols).
template <int P, class Load>
__device__ __forceinline__ void topk_softmax_warp(Load load, const float *bias, int32_t *ids, float *weights,
                                                  int32_t n_cols, int32_t k) {
  const int lane = threadIdx.x & 31;
  float v[P];
#pragma unroll
  for (int r = 0; r < P; ++r) {
    const int c = lane + 32 * r;
    // NaN router logits (a broken upstream op) rank last instead of poisoning the comparisons:
    // every chosen id then stays inside [0, n_cols), so nothing downstream indexes out of bounds.
    const float xb = c < n_cols ? (bias ? load(c) + bias[c] : load(c)) : 0.0f; // the add add_bias would do
    v[r] = c < n_cols && !isnan(xb) ? xb : -INFINITY;
  }
  unsigned taken = 0; // bit r: column lane + 32r already chosen
  float mine = 0.0f;  // lane s: the logit chosen in round s
  for (int s = 0; s < k; ++s) {
    float bv = -INFINITY;
    int bi = 0x7fffffff;
#pragma unroll
    for (int r = 0; r < P; ++r) {
      const int c = lane + 32 * r;
      if (c < n_cols && !(taken >> r & 1u) && (v[r] > bv || (v[r] == bv && c < bi))) bv = v[r], bi = c;
    }
    for (int o = 16; o > 0; o >>= 1) {
      const float ov = __shfl_xor_sync(0xffffffffu, bv, o);
      const int oi = __shfl_xor_sync(0xffffffffu, bi, o);
      if (ov > bv || (ov == bv && oi < bi)) bv = ov, bi = oi;
    }
    if ((bi & 31) == lane) taken |= 1u << (bi >> 5);
    if (lane == s) mine = bv;
    if (lane == 0) ids[s] = bi;
  }
  // Softmax over the chosen logits, summed in round order on every lane (k is warp-uniform).
  const float m = __shfl_sync(0xffffffffu, mine, 0); // the largest
  float sum = 0.0f;
  for (int s = 0; s < k; ++s)
    sum += expf(__shfl_sync(0xffffffffu, mine, s) - m);
  if (lane < k) weights[lane] = expf(mine - m) / sum;
}

// One warp per row.
template <int P>
__global__ void topk_softmax_kernel(const float *logits, const float *bias, int32_t *ids, float *weights,
                                    int64_t n_rows, int32_t n_cols, int32_t k) {
  wo::pdl::enter();
  const int64_t row = blockIdx.x * static_cast<int64_t>(blockDim.x >> 5) + (threadIdx.x >> 5);
  if (row >= n_rows) return;
  const float *x = logits + row * n_cols;
  topk_softmax_warp<P>([&](int c) { return x[c]; }, bias, ids + row * k, weights + row * k, n_cols, k);
}

template <int P>
cudaError_t launch_topk(unsigned grid, int threads, cudaStream_t stream, const float *logits,
                        const float *bias, int32_t *ids, float *weights, int64_t n_rows, int32_t n_cols,
                        int32_t k) {
  return detail::launch(topk_softmax_kernel<P>, grid, threads, 0, stream, logits, bias, ids, weights, n_rows,
                        n_cols, k);
}

__global__ void add_bias_indexed_kernel(float *y, const float *b, const int32_t *ids, int64_t n_rows,
                                        int64_t n_cols) {
  wo::pdl::enter();
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n_rows * n_cols;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t r = i / n_cols, c = i % n_cols;
    y[i] += b[static_cast<int64_t>(ids[r]) * n_cols + c];
  }
}

constexpr int kEarlySlots = 8; // settled weighted sums: slots whose factors are read before the wait

__global__ void weighted_sum_slots_kernel(const float *y, const float *w, float *out, int64_t n_tokens,
                                          int32_t k, int64_t n_cols, bool accumulate, const float *bias,
                                          const int32_t *ids, bool settled) {
  // Settled w and ids (written by an earlier kernel: through L2): this thread's first element's
  // factors and bias values before the wait; decode has one element per thread.
  const int64_t first = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  const bool early = settled && k <= kEarlySlots && first < n_tokens * n_cols;
  float wf[kEarlySlots], bf[kEarlySlots];
  if (early) {
    const int64_t t = first / n_cols, c = first % n_cols;
#pragma unroll
    for (int32_t j = 0; j < kEarlySlots; ++j)
      if (j < k) {
        wf[j] = __ldcg(w + t * k + j);
        bf[j] = bias ? bias[static_cast<int64_t>(__ldcg(ids + t * k + j)) * n_cols + c] : 0.0f;
      }
  }
  wo::pdl::enter();
  for (int64_t i = first; i < n_tokens * n_cols; i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t t = i / n_cols, c = i % n_cols;
    float s = 0.0f;
    if (early && i == first) {
#pragma unroll
      for (int32_t j = 0; j < kEarlySlots; ++j)
        if (j < k) {
          const float v = y[(t * k + j) * n_cols + c];
          s += wf[j] * (bias ? v + bf[j] : v);
        }
    } else {
      for (int32_t j = 0; j < k; ++j) {
        const int64_t row = t * k + j;
        const float v = y[row * n_cols + c];
        s += w[row] * (bias ? v + bias[static_cast<int64_t>(ids[row]) * n_cols + c] : v);
      }
    }
    out[i] = accumulate ? out[i] + s : s;
  }
}

// moe_route: see kernels.hpp. Block e: the norm of x (rms_norm.cuh's partition: every block
// normalizes the row itself, 2880 floats from L2, rather than wait for a norm kernel), then router
// row e against h from shared memory. The weight row is in registers before pdl::enter (no earlier
// kernel writes it), so the wait overlaps the only DRAM read of the launch.
constexpr int kRouteThreads = wo::rmsnorm::kThreads;
constexpr int kRouteIters =
    static_cast<int>(wo::rmsnorm::kMaxCols / 8 / kRouteThreads); // 8-float blocks per thread
static_assert(kRouteThreads == 256,
              "the F32 router GEMV's CTA (gemv_wide_kernel): same partition, same bits");

template <int P> __global__ void __launch_bounds__(kRouteThreads) moe_route_kernel(const MoeRoute r) {
  namespace rn = wo::rmsnorm;
  extern __shared__ float4 h_s[]; // [n_embd / 4]
  __shared__ float warp_sums[kRouteThreads / 32];
  const int tid = threadIdx.x;
  const int64_t n4 = r.n_embd / 4, n8 = r.n_embd / 8;
  const float4 *wr = reinterpret_cast<const float4 *>(r.w) + blockIdx.x * n4;
  float4 wv[kRouteIters][2];
#pragma unroll
  for (int it = 0; it < kRouteIters; ++it) {
    const int64_t b = tid + static_cast<int64_t>(it) * kRouteThreads;
    wv[it][0] = wv[it][1] = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    if (b < n8) wv[it][0] = wr[2 * b], wv[it][1] = wr[2 * b + 1];
  }
  wo::pdl::enter();
  const float4 *xr = reinterpret_cast<const float4 *>(r.x), *gr = reinterpret_cast<const float4 *>(r.norm_w);
  float4 v[rn::kVec], g[rn::kVec];
#pragma unroll
  for (int k = 0; k < rn::kVec; ++k) {
    const int64_t i = tid + static_cast<int64_t>(k) * kRouteThreads;
    v[k] = g[k] = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    if (i < n4) v[k] = xr[i], g[k] = gr[i];
  }
  const float inv = rn::row_inv_rms([&](int k, int64_t) { return v[k]; }, r.n_embd, r.eps);
#pragma unroll
  for (int k = 0; k < rn::kVec; ++k) {
    const int64_t i = tid + static_cast<int64_t>(k) * kRouteThreads;
    if (i < n4) {
      const float4 hv = rn::apply(v[k], inv, g[k]);
      h_s[i] = hv;
      if (blockIdx.x == 0) reinterpret_cast<float4 *>(r.h)[i] = hv;
    }
  }
  __syncthreads();
  // gemv_wide_kernel's F32 dot: 8-float blocks tid, tid + 256, ..., each as two four-term sums onto
  // acc; warp sums, then the 8 warps' sums in order.
  float acc = 0.0f;
#pragma unroll
  for (int it = 0; it < kRouteIters; ++it) {
    const int64_t b = tid + static_cast<int64_t>(it) * kRouteThreads;
    if (b < n8) {
#pragma unroll
      for (int q = 0; q < 2; ++q) {
        const float4 a = wv[it][q], xv = h_s[2 * b + q];
        acc += a.x * xv.x + a.y * xv.y + a.z * xv.z + a.w * xv.w;
      }
    }
  }
  acc = detail::warp_sum(acc);
  if (tid % 32 == 0) warp_sums[tid / 32] = acc;
  __syncthreads();
  if (tid == 0) {
    float sum = 0.0f;
#pragma unroll
    for (int w8 = 0; w8 < kRouteThreads / 32; ++w8)
      sum += warp_sums[w8];
    r.logits[blockIdx.x] = sum;
  }
  if (!detail::last_block_to_arrive(r.counter, static_cast<unsigned>(r.n_expert)) || tid >= 32) return;
  // The other blocks' logits come from other SMs: L2 reads.
  topk_softmax_warp<P>([&](int c) { return __ldcg(r.logits + c); }, r.bias, r.ids, r.weights, r.n_expert,
                       r.k);
}

} // namespace

cudaError_t topk_softmax(const float *logits, int32_t *ids, float *weights, int64_t n_rows, int64_t n_cols,
                         int32_t k, cudaStream_t stream, const float *bias) {
  if (!logits || !ids || !weights || n_rows < 0 || n_cols <= 0 || n_cols > kMaxCols || k <= 0 || k > kMaxK ||
      k > n_cols)
    return cudaErrorInvalidValue;
  if (n_rows == 0) return cudaSuccess;
  constexpr int warps_per_block = 4;
  const unsigned grid = static_cast<unsigned>((n_rows + warps_per_block - 1) / warps_per_block);
  const auto c = static_cast<int32_t>(n_cols);
  const int per_lane = (c + 31) / 32;
  if (per_lane <= 1)
    return launch_topk<1>(grid, warps_per_block * 32, stream, logits, bias, ids, weights, n_rows, c, k);
  if (per_lane <= 4)
    return launch_topk<4>(grid, warps_per_block * 32, stream, logits, bias, ids, weights, n_rows, c, k);
  return launch_topk<kMaxCols / 32>(grid, warps_per_block * 32, stream, logits, bias, ids, weights, n_rows, c,
                                    k);
}

cudaError_t add_bias_indexed(float *y, const float *b, const int32_t *ids, int64_t n_rows, int64_t n_cols,
                             cudaStream_t stream) {
  if (!y || !b || !ids || n_rows < 0 || n_cols <= 0) return cudaErrorInvalidValue;
  if (n_rows == 0) return cudaSuccess;
  return detail::launch(add_bias_indexed_kernel, detail::grid_for(n_rows * n_cols), detail::kBlock, 0, stream,
                        y, b, ids, n_rows, n_cols);
}

cudaError_t weighted_sum_slots(const float *y, const float *w, float *out, int64_t n_tokens, int32_t k,
                               int64_t n_cols, bool accumulate, cudaStream_t stream, const float *bias,
                               const int32_t *ids, bool settled) {
  if (!y || !w || !out || n_tokens < 0 || k <= 0 || n_cols <= 0 || (bias && !ids))
    return cudaErrorInvalidValue;
  if (n_tokens == 0) return cudaSuccess;
  return detail::launch(weighted_sum_slots_kernel, detail::grid_for(n_tokens * n_cols), detail::kBlock, 0,
                        stream, y, w, out, n_tokens, k, n_cols, accumulate, bias, ids, settled);
}

namespace {
bool route_prefers_l1() {
  static const bool on = !wo::env_switched_off("WORKER_ROUTE_L1");
  return on;
}
} // namespace

bool moe_route_fits(const MoeRoute &r) {
  const auto al = [](const void *p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; };
  return r.x && r.norm_w && r.w && r.h && r.logits && r.ids && r.weights && r.counter && al(r.x) &&
         al(r.norm_w) && al(r.w) && al(r.h) && r.n_embd > 0 && r.n_embd % 8 == 0 &&
         r.n_embd <= wo::rmsnorm::kMaxCols && r.n_expert > 0 && r.n_expert <= 128 && r.k > 0 &&
         r.k <= kMaxK && r.k <= r.n_expert;
}

cudaError_t moe_route(const MoeRoute &r, cudaStream_t stream) {
  if (!moe_route_fits(r)) return cudaErrorInvalidValue;
  const size_t smem = static_cast<size_t>(r.n_embd) * sizeof(float);
  const auto grid = static_cast<unsigned>(r.n_expert);
  // A block per expert (gpt-oss: 32; up to 128, so one per SM on an H100): the smallest
  // shared-memory configuration that holds a block, the rest L1. With the driver's choice its exposed
  // time in the decode step was 4.24-4.31 us, with this 3.67-3.72 (H100 timeline, GPT-OSS at depth
  // 0 and 2048; why is not known, docs/perf.md, twentieth session). WORKER_ROUTE_L1=0: the driver's
  // choice, for A/B runs.
  const int carveout = route_prefers_l1() ? wo::pdl::kPreferL1 : wo::pdl::kDriverCarveout;
  if (r.n_expert <= 32)
    return detail::launch_carveout(carveout, moe_route_kernel<1>, grid, kRouteThreads, smem, stream, r);
  return detail::launch_carveout(carveout, moe_route_kernel<4>, grid, kRouteThreads, smem, stream, r);
}

} // namespace wo::kernels
