// Elementwise kernels: bias, residual add, scale, activations. Grid-stride loops so any size
// launches with a bounded grid.
#include "launch.cuh"

#include <worker/kernels.hpp>
#include <worker/swiglu.cuh>

namespace wo::kernels {
namespace {

#define WO_GRID_STRIDE(i, n)                                                                                 \
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < (n);                     \
       i += static_cast<int64_t>(gridDim.x) * blockDim.x)

__global__ void add_bias_kernel(float *y, const float *b, int64_t n_rows, int64_t n_cols, int64_t stride) {
  wo::pdl::enter();
  WO_GRID_STRIDE(i, n_rows * n_cols) {
    const int64_t r = i / n_cols, c = i % n_cols;
    y[r * stride + c] += b[c];
  }
}

__global__ void add_kernel(float *y, const float *a, const float *b, int64_t n) {
  wo::pdl::enter();
  WO_GRID_STRIDE(i, n) y[i] = a[i] + b[i];
}

__global__ void scale_kernel(const float *x, float *y, float s, int64_t n) {
  wo::pdl::enter();
  WO_GRID_STRIDE(i, n) y[i] = x[i] * s;
}

__global__ void swiglu_kernel(const float *gate, const float *up, float *out, int64_t n_rows, int64_t n_cols,
                              int64_t stride) {
  wo::pdl::enter();
  WO_GRID_STRIDE(i, n_rows * n_cols) {
    const int64_t r = i / n_cols, c = i % n_cols;
    out[i] = wo::swiglu::apply(gate[r * stride + c], up[r * stride + c]);
  }
}

__global__ void swiglu_oai_kernel(const float *gate, const float *up, float *out, int64_t n_rows,
                                  int64_t n_cols, float alpha, float limit, int64_t stride,
                                  IndexedBias bias) {
  // Settled ids: this thread's first bias pair before the wait (ids through L2: written by an
  // earlier kernel); decode has one element per thread, so that is all of them.
  const int64_t first = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  float bg0 = 0.0f, bu0 = 0.0f;
  const bool early = bias.ids && bias.settled && first < n_rows * n_cols;
  if (early) {
    const int64_t b = static_cast<int64_t>(__ldcg(bias.ids + first / n_cols)) * n_cols + first % n_cols;
    bg0 = bias.gate[b], bu0 = bias.up[b];
  }
  wo::pdl::enter();
  WO_GRID_STRIDE(i, n_rows * n_cols) {
    const int64_t r = i / n_cols, c = i % n_cols;
    float gi = gate[r * stride + c], ui = up[r * stride + c];
    if (bias.ids) { // the adds add_bias_indexed would do, one pass fewer
      float bg = bg0, bu = bu0;
      if (!early || i != first) {
        const int64_t b = static_cast<int64_t>(bias.ids[r]) * n_cols + c;
        bg = bias.gate[b], bu = bias.up[b];
      }
      gi = gi + bg;
      ui = ui + bu;
    }
    out[i] = wo::swiglu::apply_clamped(gi, ui, alpha, limit);
  }
}

__global__ void gelu_tanh_kernel(const float *x, float *y, int64_t n) {
  wo::pdl::enter();
  const float k = 0.7978845608028654f; // sqrt(2/pi)
  WO_GRID_STRIDE(i, n) {
    const float v = x[i];
    y[i] = 0.5f * v * (1.0f + tanhf(k * (v + 0.044715f * v * v * v)));
  }
}

__global__ void fill_positions_kernel(int32_t *out, int64_t n, int32_t start) {
  wo::pdl::enter();
  WO_GRID_STRIDE(i, n) out[i] = start + static_cast<int32_t>(i);
}

} // namespace

cudaError_t fill_positions(int32_t *out, int64_t n, int32_t start, cudaStream_t stream) {
  if (!out || n < 0 || n > 0x7fffffff) return cudaErrorInvalidValue;
  if (n == 0) return cudaSuccess;
  return detail::launch(fill_positions_kernel, detail::grid_for(n), detail::kBlock, 0, stream, out, n, start);
}

cudaError_t add_bias(float *y, const float *b, int64_t n_rows, int64_t n_cols, cudaStream_t stream,
                     int64_t row_stride) {
  if (!y || !b || n_rows < 0 || n_cols <= 0 || (row_stride != 0 && row_stride < n_cols))
    return cudaErrorInvalidValue;
  if (n_rows == 0) return cudaSuccess;
  return detail::launch(add_bias_kernel, detail::grid_for(n_rows * n_cols), detail::kBlock, 0, stream, y, b,
                        n_rows, n_cols, row_stride ? row_stride : n_cols);
}

cudaError_t add(float *y, const float *a, const float *b, int64_t n, cudaStream_t stream) {
  if (!y || !a || !b || n < 0) return cudaErrorInvalidValue;
  if (n == 0) return cudaSuccess;
  return detail::launch(add_kernel, detail::grid_for(n), detail::kBlock, 0, stream, y, a, b, n);
}

cudaError_t scale(const float *x, float *y, float s, int64_t n, cudaStream_t stream) {
  if (!x || !y || n < 0) return cudaErrorInvalidValue;
  if (n == 0) return cudaSuccess;
  return detail::launch(scale_kernel, detail::grid_for(n), detail::kBlock, 0, stream, x, y, s, n);
}

cudaError_t swiglu(const float *gate, const float *up, float *out, int64_t n_rows, int64_t n_cols,
                   cudaStream_t stream, int64_t in_stride) {
  if (!gate || !up || !out || n_rows < 0 || n_cols <= 0 || (in_stride != 0 && in_stride < n_cols))
    return cudaErrorInvalidValue;
  if (n_rows == 0) return cudaSuccess;
  return detail::launch(swiglu_kernel, detail::grid_for(n_rows * n_cols), detail::kBlock, 0, stream, gate, up,
                        out, n_rows, n_cols, in_stride ? in_stride : n_cols);
}

cudaError_t swiglu_oai(const float *gate, const float *up, float *out, int64_t n_rows, int64_t n_cols,
                       float alpha, float limit, cudaStream_t stream, int64_t in_stride, IndexedBias bias) {
  if (!gate || !up || !out || n_rows < 0 || n_cols <= 0 || (in_stride != 0 && in_stride < n_cols) ||
      (bias.ids && (!bias.gate || !bias.up)))
    return cudaErrorInvalidValue;
  if (n_rows == 0) return cudaSuccess;
  return detail::launch(swiglu_oai_kernel, detail::grid_for(n_rows * n_cols), detail::kBlock, 0, stream, gate,
                        up, out, n_rows, n_cols, alpha, limit, in_stride ? in_stride : n_cols, bias);
}

cudaError_t gelu_tanh(const float *x, float *y, int64_t n, cudaStream_t stream) {
  if (!x || !y || n < 0) return cudaErrorInvalidValue;
  if (n == 0) return cudaSuccess;
  return detail::launch(gelu_tanh_kernel, detail::grid_for(n), detail::kBlock, 0, stream, x, y, n);
}

} // namespace wo::kernels
