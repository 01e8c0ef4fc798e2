// Rotary position embedding with ggml's semantics (NORM / NEOX pairing, freq scale, YaRN ramp and
// magnitude correction). One thread per rotated pair; dims past n_dims are left untouched.
#include "launch.cuh"

#include "rope_math.cuh"

#include <worker/kernels.hpp>

namespace wo::kernels {
namespace {

__global__ void rope_kernel(float *x, int64_t n_tokens, const int32_t *positions, detail::RopeConsts k) {
  wo::pdl::enter();
  const int32_t half = k.n_dims / 2;
  const int64_t n = n_tokens * k.n_heads * half;
  for (int64_t idx = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; idx < n;
       idx += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int32_t i = static_cast<int32_t>(idx % half); // pair index: theta index i0 = 2i
    const int64_t th = idx / half;
    const int32_t h = static_cast<int32_t>(th % k.n_heads);
    const int64_t t = th / k.n_heads;
    float *v = x + t * k.stride + static_cast<int64_t>(h) * k.head_dim;
    int32_t a, b;
    detail::rope_pair_dims(k, i, a, b);
    float x0 = v[a], x1 = v[b];
    detail::bias_rotate_pair(k, positions[t], i, nullptr, a, b, x0, x1); // i < n_dims / 2: rotates
    v[a] = x0, v[b] = x1;
  }
}

} // namespace

cudaError_t rope(float *x, int64_t n_tokens, int32_t n_heads, int32_t head_dim, const int32_t *positions,
                 const RopeParams &p, cudaStream_t stream, int64_t token_stride) {
  detail::RopeConsts k{};
  const int64_t row = static_cast<int64_t>(n_heads) * head_dim;
  if (!x || !positions || n_tokens < 0 || (token_stride != 0 && token_stride < row) ||
      !detail::make_rope_consts(p, n_heads, head_dim, token_stride ? token_stride : row, k))
    return cudaErrorInvalidValue;
  if (n_tokens == 0) return cudaSuccess;
  const int64_t n = n_tokens * n_heads * (k.n_dims / 2);
  return detail::launch(rope_kernel, detail::grid_for(n), detail::kBlock, 0, stream, x, n_tokens, positions,
                        k);
}

} // namespace wo::kernels
