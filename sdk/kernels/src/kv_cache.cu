// FP16 KV cache writes: one thread per element of the new K and V rows.
#include "launch.cuh"

#include <worker/kernels.hpp>

namespace wo::kernels {
namespace {

__global__ void kv_write_kernel(const float *k, const float *v, __half *kc, __half *vc, int64_t pos0,
                                const int32_t *positions, int64_t n_tokens, int64_t row, int64_t src_stride) {
  wo::pdl::enter();
  const int64_t n = n_tokens * row;
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t t = i / row, e = i % row;
    const int64_t dst = (positions ? positions[t] : pos0 + t) * row + e;
    kc[dst] = __float2half_rn(k[t * src_stride + e]);
    vc[dst] = __float2half_rn(v[t * src_stride + e]);
  }
}

} // namespace

cudaError_t kv_write(const float *k, const float *v, __half *k_cache, __half *v_cache, int64_t pos0,
                     int64_t n_tokens, int32_t n_kv_heads, int32_t head_dim, cudaStream_t stream,
                     int64_t src_stride, const int32_t *positions) {
  const int64_t row = static_cast<int64_t>(n_kv_heads) * head_dim;
  if (!k || !v || !k_cache || !v_cache || pos0 < 0 || n_tokens < 0 || n_kv_heads <= 0 || head_dim <= 0 ||
      (src_stride != 0 && src_stride < row))
    return cudaErrorInvalidValue;
  if (n_tokens == 0) return cudaSuccess;
  return detail::launch(kv_write_kernel, detail::grid_for(n_tokens * row), detail::kBlock, 0, stream, k, v,
                        k_cache, v_cache, pos0, positions, n_tokens, row, src_stride ? src_stride : row);
}

} // namespace wo::kernels
