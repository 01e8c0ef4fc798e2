// Rotary position embedding with ggml's semantics (NORM / NEOX pairing, freq scale, YaRN ramp and
// magnitude correction). One thread per rotated pair; dims past n_dims are left untouched.
#include "launch.cuh"

#include <worker/kernels.hpp>

#include <algorithm>
#include <cmath>

namespace wo::kernels {
namespace {

struct RopeConsts {
  int32_t n_dims, head_dim, n_heads;
  int64_t stride;
  bool neox;
  float theta_scale; // freq_base^(-2/n_dims)
  float freq_scale, ext_factor, attn_factor;
  float corr_lo, corr_hi; // YaRN correction dims
};

// The YaRN ramp: 1 below corr_lo (pure extrapolation), 0 above corr_hi (pure interpolation).
__device__ inline float yarn_ramp(float lo, float hi, int i) {
  const float y = (static_cast<float>(i) - lo) / fmaxf(0.001f, hi - lo);
  return 1.0f - fminf(1.0f, fmaxf(0.0f, y));
}

__global__ void rope_kernel(float *x, int64_t n_tokens, const int32_t *positions, RopeConsts k) {
  const int32_t half = k.n_dims / 2;
  const int64_t n = n_tokens * k.n_heads * half;
  for (int64_t idx = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; idx < n;
       idx += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int32_t i = static_cast<int32_t>(idx % half); // pair index: theta index i0 = 2i
    const int64_t th = idx / half;
    const int32_t h = static_cast<int32_t>(th % k.n_heads);
    const int64_t t = th / k.n_heads;
    float *v = x + t * k.stride + static_cast<int64_t>(h) * k.head_dim;

    const float theta_extrap = static_cast<float>(positions[t]) * powf(k.theta_scale, static_cast<float>(i));
    const float theta_interp = k.freq_scale * theta_extrap;
    float theta = theta_interp, mscale = k.attn_factor;
    if (k.ext_factor != 0.0f) {
      const float mix = yarn_ramp(k.corr_lo, k.corr_hi, i) * k.ext_factor;
      theta = theta_interp * (1.0f - mix) + theta_extrap * mix;
      mscale *= 1.0f + 0.1f * logf(1.0f / k.freq_scale);
    }
    const float c = cosf(theta) * mscale, s = sinf(theta) * mscale;
    const int32_t a = k.neox ? i : 2 * i, b = k.neox ? i + half : 2 * i + 1;
    const float x0 = v[a], x1 = v[b];
    v[a] = x0 * c - x1 * s;
    v[b] = x0 * s + x1 * c;
  }
}

// Dimension index at which a rotation completes n_rot turns over n_ctx_orig positions.
float corr_dim(int32_t n_dims, int32_t n_ctx_orig, float n_rot, float base) {
  return static_cast<float>(n_dims) * std::log(static_cast<float>(n_ctx_orig) / (n_rot * 2.0f * 3.14159265358979f)) /
         (2.0f * std::log(base));
}

} // namespace

cudaError_t rope(float *x, int64_t n_tokens, int32_t n_heads, int32_t head_dim, const int32_t *positions,
                 const RopeParams &p, cudaStream_t stream, int64_t token_stride) {
  const int32_t n_dims = p.n_dims ? p.n_dims : head_dim;
  if (!x || !positions || n_tokens < 0 || n_heads <= 0 || head_dim <= 0 || n_dims <= 0 || n_dims > head_dim ||
      n_dims % 2 != 0 || p.freq_base <= 0.0f || p.freq_scale <= 0.0f ||
      (token_stride != 0 && token_stride < static_cast<int64_t>(n_heads) * head_dim))
    return cudaErrorInvalidValue;
  if (n_tokens == 0) return cudaSuccess;
  RopeConsts k{};
  k.n_dims = n_dims;
  k.head_dim = head_dim;
  k.n_heads = n_heads;
  k.stride = token_stride ? token_stride : static_cast<int64_t>(n_heads) * head_dim;
  k.neox = p.mode == RopeMode::Neox;
  k.theta_scale = std::pow(p.freq_base, -2.0f / static_cast<float>(n_dims));
  k.freq_scale = p.freq_scale;
  k.ext_factor = p.ext_factor;
  k.attn_factor = p.attn_factor;
  if (p.ext_factor != 0.0f && p.n_ctx_orig > 0) {
    k.corr_lo = std::max(0.0f, std::floor(corr_dim(n_dims, p.n_ctx_orig, p.beta_fast, p.freq_base)));
    k.corr_hi = std::min(static_cast<float>(n_dims - 1),
                         std::ceil(corr_dim(n_dims, p.n_ctx_orig, p.beta_slow, p.freq_base)));
  }
  const int64_t n = n_tokens * n_heads * (n_dims / 2);
  rope_kernel<<<detail::grid_for(n), detail::kBlock, 0, stream>>>(x, n_tokens, positions, k);
  return detail::launched();
}

} // namespace wo::kernels
