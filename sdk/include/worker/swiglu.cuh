// The arithmetic of one SwiGLU element, shared by the SDK's swiglu kernel (sdk/kernels) and the
// quant codecs' GEMVs (linear_swiglu's epilogue, linear_fused's WO_LINEAR_GLU prologue,
// linear_id_glu's epilogue): one expression each, so that the folds give the separate kernels' bits.
#pragma once

#include <cuda_runtime.h>

namespace wo::swiglu {

// silu(gate) * up
__device__ __forceinline__ float apply(float gate, float up) { return gate / (1.0f + expf(-gate)) * up; }

// gpt-oss's clamped form (SDK swiglu_oai, WO_GLU_CLAMPED): min(g, limit) * sigmoid(alpha min(g,
// limit)) * (clamp(u, -limit, limit) + 1).
__device__ __forceinline__ float apply_clamped(float gate, float up, float alpha, float limit) {
  const float g = fminf(gate, limit);
  const float u = fminf(fmaxf(up, -limit), limit);
  return g / (1.0f + expf(-alpha * g)) * (u + 1.0f);
}

} // namespace wo::swiglu
