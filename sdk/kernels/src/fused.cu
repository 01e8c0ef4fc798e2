// Fused kernels: fewer launches and memory passes on the decode path, where a small model spends
// more time launching kernels than computing. Each matches a composition of plain kernels.
#include "launch.cuh"
#include "rope_math.cuh"

#include <worker/kernels.hpp>

namespace wo::kernels {
namespace {

// One thread per (token, head slot, pair); slots are the q heads, then k heads, then v heads.
__global__ void rope_kv_write_kernel(QkvRopeCache a, int64_t n_tokens, detail::RopeConsts k) {
  wo::pdl::enter();
  const int32_t hd = a.head_dim, pairs = hd / 2;
  const int32_t slots = a.n_heads + 2 * a.n_kv_heads;
  const int64_t n = n_tokens * slots * pairs;
  const int64_t kv_row = static_cast<int64_t>(a.n_kv_heads) * hd;
  for (int64_t idx = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; idx < n;
       idx += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int32_t i = static_cast<int32_t>(idx % pairs);
    const int64_t ts = idx / pairs;
    const int32_t slot = static_cast<int32_t>(ts % slots);
    const int64_t t = ts / slots;
    int32_t da, db; // the two dims this thread owns
    detail::rope_pair_dims(k, i, da, db);
    if (slot < a.n_heads + a.n_kv_heads) { // q or k: bias, then rotate when the pair is rotated
      const bool is_q = slot < a.n_heads;
      const int32_t h = is_q ? slot : slot - a.n_heads;
      const float *src = is_q ? a.q + t * a.q_stride + static_cast<int64_t>(h) * hd
                              : a.k + t * a.kv_stride + static_cast<int64_t>(h) * hd;
      const float *bias = is_q ? a.q_bias : a.k_bias;
      float x0 = src[da], x1 = src[db];
      detail::bias_rotate_pair(k, a.positions[t], i, bias ? bias + h * hd : nullptr, da, db, x0, x1);
      if (is_q) {
        float *dst = a.q + t * a.q_stride + static_cast<int64_t>(h) * hd;
        dst[da] = x0, dst[db] = x1;
      } else {
        __half *dst =
            a.k_cache + static_cast<int64_t>(a.positions[t]) * kv_row + static_cast<int64_t>(h) * hd;
        dst[da] = __float2half_rn(x0), dst[db] = __float2half_rn(x1);
      }
    } else { // v: bias and store
      const int32_t h = slot - a.n_heads - a.n_kv_heads;
      const float *src = a.v + t * a.kv_stride + static_cast<int64_t>(h) * hd;
      float x0 = src[2 * i], x1 = src[2 * i + 1];
      if (a.v_bias) x0 += a.v_bias[h * hd + 2 * i], x1 += a.v_bias[h * hd + 2 * i + 1];
      __half *dst = a.v_cache + static_cast<int64_t>(a.positions[t]) * kv_row + static_cast<int64_t>(h) * hd;
      dst[2 * i] = __float2half_rn(x0), dst[2 * i + 1] = __float2half_rn(x1);
    }
  }
}

} // namespace

cudaError_t add_rms_norm(float *x, const float *delta, const float *w, float *y, int64_t n_rows,
                         int64_t n_cols, float eps, cudaStream_t stream) {
  if (!x || !delta || !y || y == x || y == delta || n_rows < 0 || n_rows > 0x7fffffff || n_cols <= 0)
    return cudaErrorInvalidValue;
  if (n_rows == 0) return cudaSuccess;
  return detail::launch_rms_norm<true>(x, delta, w, y, n_rows, n_cols, eps, stream);
}

cudaError_t rope_kv_write(const QkvRopeCache &a, int64_t n_tokens, const RopeParams &p, cudaStream_t stream) {
  QkvRopeCache c;
  detail::RopeConsts k{};
  if (n_tokens < 0 || !detail::qkv_rope_args(a, p, c, k)) return cudaErrorInvalidValue;
  if (n_tokens == 0) return cudaSuccess;
  const int64_t n = n_tokens * (a.n_heads + 2 * a.n_kv_heads) * (a.head_dim / 2);
  return detail::launch(rope_kv_write_kernel, detail::grid_for(n), detail::kBlock, 0, stream, c, n_tokens, k);
}

} // namespace wo::kernels
