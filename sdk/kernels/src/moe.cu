// Mixture-of-experts helpers: router top-k with softmax over the chosen logits, per-expert bias,
// and the weighted combination of the experts' outputs.
#include "launch.cuh"

#include <worker/kernels.hpp>

namespace wo::kernels {
namespace {

constexpr int kMaxCols = 1024, kMaxK = 32;

// One warp per row. Each lane holds P = ceil(n_cols / 32) logits (a template argument, so the
// arrays stay in registers: GPT-OSS's 32 experts take P = 1); k rounds of a warp-wide argmax pick
// the experts in descending order (ties: lower index). Lane s keeps round s's logit (k <= 32).
template <int P>
__global__ void topk_softmax_kernel(const float *logits, const float *bias, int32_t *ids, float *weights,
                                    int64_t n_rows, int32_t n_cols, int32_t k) {
  wo::pdl::enter();
  const int lane = threadIdx.x & 31;
  const int64_t row = blockIdx.x * static_cast<int64_t>(blockDim.x >> 5) + (threadIdx.x >> 5);
  if (row >= n_rows) return;
  const float *x = logits + row * n_cols;
  float v[P];
#pragma unroll
  for (int r = 0; r < P; ++r) {
    const int c = lane + 32 * r;
    // NaN router logits (a broken upstream op) rank last instead of poisoning the comparisons:
    // every chosen id then stays inside [0, n_cols), so nothing downstream indexes out of bounds.
    const float xb = c < n_cols ? (bias ? x[c] + bias[c] : x[c]) : 0.0f; // the add add_bias would do
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
    if (lane == 0) ids[row * k + s] = bi;
  }
  // Softmax over the chosen logits, summed in round order on every lane (k is warp-uniform).
  const float m = __shfl_sync(0xffffffffu, mine, 0); // the largest
  float sum = 0.0f;
  for (int s = 0; s < k; ++s)
    sum += expf(__shfl_sync(0xffffffffu, mine, s) - m);
  if (lane < k) weights[row * k + lane] = expf(mine - m) / sum;
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

__global__ void weighted_sum_slots_kernel(const float *y, const float *w, float *out, int64_t n_tokens,
                                          int32_t k, int64_t n_cols, bool accumulate, const float *bias,
                                          const int32_t *ids) {
  wo::pdl::enter();
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n_tokens * n_cols;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t t = i / n_cols, c = i % n_cols;
    float s = 0.0f;
    for (int32_t j = 0; j < k; ++j) {
      const int64_t row = t * k + j;
      const float v = y[row * n_cols + c];
      s += w[row] * (bias ? v + bias[static_cast<int64_t>(ids[row]) * n_cols + c] : v);
    }
    out[i] = accumulate ? out[i] + s : s;
  }
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
                               const int32_t *ids) {
  if (!y || !w || !out || n_tokens < 0 || k <= 0 || n_cols <= 0 || (bias && !ids))
    return cudaErrorInvalidValue;
  if (n_tokens == 0) return cudaSuccess;
  return detail::launch(weighted_sum_slots_kernel, detail::grid_for(n_tokens * n_cols), detail::kBlock, 0,
                        stream, y, w, out, n_tokens, k, n_cols, accumulate, bias, ids);
}

} // namespace wo::kernels
