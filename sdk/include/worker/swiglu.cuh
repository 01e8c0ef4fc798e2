// The arithmetic of one SwiGLU element, shared by the SDK's swiglu kernel (sdk/kernels) and the
// quant codecs' GEMV prologue (linear_fused's WO_LINEAR_GLU): one expression, so that folding the
// SwiGLU into the down projection gives the separate kernel's bits.
#pragma once

#include <cuda_runtime.h>

namespace wo::swiglu {

// silu(gate) * up
__device__ __forceinline__ float apply(float gate, float up) { return gate / (1.0f + expf(-gate)) * up; }

} // namespace wo::swiglu
