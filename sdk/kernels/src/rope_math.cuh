// RoPE math shared by the plain rope kernel and the fused rope + KV-cache kernel: ggml's
// semantics (NORM / NEOX pairing, frequency scale, YaRN ramp and magnitude).
#pragma once

#include <worker/kernels.hpp>

#include <algorithm>
#include <cmath>

namespace wo::kernels::detail {

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

// Dimension index at which a rotation completes n_rot turns over n_ctx_orig positions.
inline float corr_dim(int32_t n_dims, int32_t n_ctx_orig, float n_rot, float base) {
  return static_cast<float>(n_dims) *
         std::log(static_cast<float>(n_ctx_orig) / (n_rot * 2.0f * 3.14159265358979f)) /
         (2.0f * std::log(base));
}

// The constants for one call, or false when the parameters are out of range.
inline bool make_rope_consts(const RopeParams &p, int32_t n_heads, int32_t head_dim, int64_t stride,
                             RopeConsts &k) {
  const int32_t n_dims = p.n_dims ? p.n_dims : head_dim;
  if (n_heads <= 0 || head_dim <= 0 || head_dim % 2 != 0 || n_dims <= 0 || n_dims > head_dim ||
      n_dims % 2 != 0 || p.freq_base <= 0.0f || p.freq_scale <= 0.0f)
    return false;
  k = RopeConsts{};
  k.n_dims = n_dims;
  k.head_dim = head_dim;
  k.n_heads = n_heads;
  k.stride = stride;
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
  return true;
}

// rope_kv_write's arguments checked (rope_kv_attention takes the same): c is `a` with its strides
// filled in, k its RoPE constants; false when something is missing or out of range.
inline bool qkv_rope_args(const QkvRopeCache &a, const RopeParams &p, QkvRopeCache &c, RopeConsts &k) {
  const int64_t q_row = static_cast<int64_t>(a.n_heads) * a.head_dim;
  const int64_t kv_row = static_cast<int64_t>(a.n_kv_heads) * a.head_dim;
  c = a;
  c.q_stride = a.q_stride ? a.q_stride : q_row;
  c.kv_stride = a.kv_stride ? a.kv_stride : kv_row;
  return a.q && a.k && a.v && a.k_cache && a.v_cache && a.positions && a.n_kv_heads > 0 &&
         c.q_stride >= q_row && c.kv_stride >= kv_row &&
         make_rope_consts(p, a.n_heads, a.head_dim, c.q_stride, k);
}

// cos and sin (times the magnitude) of pair i at position pos.
__device__ inline void rope_cos_sin(const RopeConsts &k, int32_t pos, int32_t i, float &c, float &s) {
  const float theta_extrap = static_cast<float>(pos) * powf(k.theta_scale, static_cast<float>(i));
  const float theta_interp = k.freq_scale * theta_extrap;
  float theta = theta_interp, mscale = k.attn_factor;
  if (k.ext_factor != 0.0f) {
    const float mix = yarn_ramp(k.corr_lo, k.corr_hi, i) * k.ext_factor;
    theta = theta_interp * (1.0f - mix) + theta_extrap * mix;
    mscale *= 1.0f + 0.1f * logf(1.0f / k.freq_scale);
  }
  c = cosf(theta) * mscale;
  s = sinf(theta) * mscale;
}

// The two dims rotated together by pair i (i < n_dims/2); pairs past n_dims/2 are the
// pass-through dims (2i, 2i+1) in both modes.
__device__ inline void rope_pair_dims(const RopeConsts &k, int32_t i, int32_t &a, int32_t &b) {
  const int32_t half = k.n_dims / 2;
  if (i < half && k.neox) {
    a = i, b = i + half;
  } else {
    a = 2 * i, b = 2 * i + 1;
  }
}

// Bias, then the rotation of pair i by the factors c, s (rope_cos_sin's for i < n_dims / 2; pairs
// past it do not rotate).
__device__ inline void bias_rotate_pair_cs(const RopeConsts &k, int32_t i, const float *bias, int32_t da,
                                           int32_t db, float c, float s, float &x0, float &x1) {
  if (bias) x0 += bias[da], x1 += bias[db];
  if (i < k.n_dims / 2) {
    // Explicit roundings: left to contraction, nvcc fused a different product of the pair at
    // different call sites (factors from registers or from shared memory) and the bits differed.
    const float r0 = __fmaf_rn(x0, c, -__fmul_rn(x1, s)), r1 = __fmaf_rn(x0, s, __fmul_rn(x1, c));
    x0 = r0, x1 = r1;
  }
}

// Bias, then the rotation of pair i (only pairs below n_dims / 2 rotate) at position pos: the
// one expression of the fused rope + cache kernel and the decode attention that rotates its
// queries as it loads them, so both give the same bits.
__device__ inline void bias_rotate_pair(const RopeConsts &k, int32_t pos, int32_t i, const float *bias,
                                        int32_t da, int32_t db, float &x0, float &x1) {
  float c = 0.0f, s = 0.0f;
  if (i < k.n_dims / 2) rope_cos_sin(k, pos, i, c, s);
  bias_rotate_pair_cs(k, i, bias, da, db, c, s, x0, x1);
}

} // namespace wo::kernels::detail
