#include "device_host.hpp"

#include <vector>

namespace wo::llama::test {

// The wo_host's ctx points at the TestHost; device services find this object through a registry
// keyed by that ctx (one DeviceHost per TestHost in these tests).
static std::map<void *, DeviceHost *> &registry() {
  static std::map<void *, DeviceHost *> r;
  return r;
}

DeviceHost &DeviceHost::self(void *ctx) { return *registry().at(ctx); }

DeviceHost::DeviceHost(TestHost &h, size_t vram_budget)
    : h_(h), outer_ctx_(h.raw().ctx), budget_(vram_budget) {
  cudaStreamCreate(&stream_);
  cublasCreate(&cublas_);
  cublasSetStream(cublas_, stream_);
  cublasSetMathMode(cublas_, CUBLAS_PEDANTIC_MATH); // plain FP32: the reference is exact math
  for (auto &kv : h.model().tensors) {
    TensorData &t = *kv.second;
    void *d = nullptr;
    cudaMalloc(&d, t.host.size() * sizeof(float));
    cudaMemcpy(d, t.host.data(), t.host.size() * sizeof(float), cudaMemcpyHostToDevice);
    t.t.data = d;
    weights_.insert(d);
  }
  registry()[outer_ctx_] = this;
  wo_host &w = h.raw();
  w.vram_alloc = vram_alloc;
  w.vram_free = vram_free;
  w.linear = linear;
  w.gather_rows = gather_rows;
  w.cuda_stream = stream_;
  w.cublas_handle = cublas_;
}

DeviceHost::~DeviceHost() {
  cudaStreamSynchronize(stream_);
  for (void *p : weights_)
    cudaFree(p);
  for (void *p : live_)
    cudaFree(p);
  for (auto &kv : h_.model().tensors)
    kv.second->t.data = nullptr;
  cublasDestroy(cublas_);
  cudaStreamDestroy(stream_);
  registry().erase(outer_ctx_);
}

wo_status DeviceHost::vram_alloc(void *ctx, size_t bytes, wo_vram_kind, void **out) {
  DeviceHost &d = self(ctx);
  *out = nullptr;
  if (d.live_bytes_ + bytes > d.budget_) return WO_ERR_OUT_OF_MEMORY;
  if (cudaMalloc(out, bytes) != cudaSuccess) return WO_ERR_OUT_OF_MEMORY;
  d.live_.insert(*out);
  d.sizes_[*out] = bytes;
  d.live_bytes_ += bytes;
  return WO_OK;
}

void DeviceHost::vram_free(void *ctx, void *p) {
  DeviceHost &d = self(ctx);
  if (!d.live_.erase(p)) return;
  cudaStreamSynchronize(d.stream_);
  cudaFree(p);
  d.live_bytes_ -= d.sizes_[p];
  d.sizes_.erase(p);
}

wo_status DeviceHost::linear(void *ctx, const wo_tensor *w, const void *x, wo_dtype xt, void *y, wo_dtype yt,
                             int64_t n) {
  DeviceHost &d = self(ctx);
  if (xt != WO_DTYPE_F32 || yt != WO_DTYPE_F32 || w->ggml_type != 0) return WO_ERR_UNSUPPORTED;
  const int cols = static_cast<int>(w->ne[0]), rows = static_cast<int>(w->ne[1]);
  const float one = 1.0f, zero = 0.0f;
  // Row-major y[n][rows] = x[n][cols] * W^T, i.e. column-major y^T = W^T' ... : W (cols x rows, ld cols)
  // transposed times x^T (cols x n, ld cols).
  const cublasStatus_t s =
      cublasSgemm(d.cublas_, CUBLAS_OP_T, CUBLAS_OP_N, rows, static_cast<int>(n), cols, &one,
                  static_cast<const float *>(w->data), cols, static_cast<const float *>(x), cols, &zero,
                  static_cast<float *>(y), rows);
  return s == CUBLAS_STATUS_SUCCESS ? WO_OK : WO_ERR_CUDA;
}

wo_status DeviceHost::gather_rows(void *ctx, const wo_tensor *w, const int32_t *ids, int64_t n, void *out,
                                  wo_dtype ot) {
  DeviceHost &d = self(ctx);
  if (ot != WO_DTYPE_F32 || w->ggml_type != 0) return WO_ERR_UNSUPPORTED;
  std::vector<int32_t> h(n);
  if (cudaMemcpyAsync(h.data(), ids, n * sizeof(int32_t), cudaMemcpyDeviceToHost, d.stream_) != cudaSuccess ||
      cudaStreamSynchronize(d.stream_) != cudaSuccess)
    return WO_ERR_CUDA;
  const int64_t row = w->ne[0];
  for (int64_t i = 0; i < n; ++i) {
    if (h[i] < 0 || h[i] >= w->ne[1]) return WO_ERR_INVALID_ARGUMENT;
    if (cudaMemcpyAsync(static_cast<float *>(out) + i * row, static_cast<const float *>(w->data) + h[i] * row,
                        row * sizeof(float), cudaMemcpyDeviceToDevice, d.stream_) != cudaSuccess)
      return WO_ERR_CUDA;
  }
  return WO_OK;
}

} // namespace wo::llama::test
