// RMSNorm and LayerNorm: one block per row (rows are a few thousand floats at most), FP32
// accumulation, two passes over the row so y may alias x.
#include "launch.cuh"

#include <worker/kernels.hpp>

namespace wo::kernels {
namespace {

__global__ void layer_norm_kernel(const float *x, const float *w, const float *b, float *y, int64_t n_cols,
                                  float eps) {
  wo::pdl::enter();
  const float *xr = x + blockIdx.x * n_cols;
  float *yr = y + blockIdx.x * n_cols;
  float s = 0.0f;
  for (int64_t c = threadIdx.x; c < n_cols; c += blockDim.x)
    s += xr[c];
  const float mean = detail::block_sum(s) / static_cast<float>(n_cols);
  float v = 0.0f; // centred second pass: no cancellation for rows with a large mean
  for (int64_t c = threadIdx.x; c < n_cols; c += blockDim.x)
    v += (xr[c] - mean) * (xr[c] - mean);
  const float inv = rsqrtf(detail::block_sum(v) / static_cast<float>(n_cols) + eps);
  for (int64_t c = threadIdx.x; c < n_cols; c += blockDim.x)
    yr[c] = (xr[c] - mean) * inv * (w ? w[c] : 1.0f) + (b ? b[c] : 0.0f);
}

bool bad_rows(const float *x, const float *y, int64_t n_rows, int64_t n_cols) {
  return !x || !y || n_rows < 0 || n_rows > 0x7fffffff || n_cols <= 0;
}

} // namespace

cudaError_t rms_norm(const float *x, const float *w, float *y, int64_t n_rows, int64_t n_cols, float eps,
                     cudaStream_t stream) {
  if (bad_rows(x, y, n_rows, n_cols)) return cudaErrorInvalidValue;
  if (n_rows == 0) return cudaSuccess;
  return detail::launch_rms_norm<false>(const_cast<float *>(x), nullptr, w, y, n_rows, n_cols, eps, stream);
}

cudaError_t layer_norm(const float *x, const float *w, const float *b, float *y, int64_t n_rows,
                       int64_t n_cols, float eps, cudaStream_t stream) {
  if (bad_rows(x, y, n_rows, n_cols)) return cudaErrorInvalidValue;
  if (n_rows == 0) return cudaSuccess;
  return detail::launch(layer_norm_kernel, static_cast<unsigned>(n_rows), detail::kBlock, 0, stream, x, w, b,
                        y, n_cols, eps);
}

} // namespace wo::kernels
