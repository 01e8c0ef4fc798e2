#include "device_host.hpp"

#include <cstring>

namespace wo::gpt::testing {

namespace {

__global__ void linear_kernel(const float *w, const float *x, float *y, int64_t n, int64_t rows,
                              int64_t cols) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n * rows;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t t = i / rows, r = i % rows;
    float s = 0.0f;
    for (int64_t c = 0; c < cols; ++c)
      s += w[r * cols + c] * x[t * cols + c];
    y[i] = s;
  }
}

__global__ void linear_id_kernel(const float *w, const float *x, float *y, const int32_t *ids, int64_t n,
                                 int64_t n_slots, int64_t x_slots, int64_t rows, int64_t cols) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n * n_slots * rows;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t ts = i / rows, r = i % rows, t = ts / n_slots, k = ts % n_slots;
    const int64_t e = ids[ts];
    const float *xr = x + (t * x_slots + (x_slots == 1 ? 0 : k)) * cols;
    const float *wr = w + (e * rows + r) * cols;
    float s = 0.0f;
    for (int64_t c = 0; c < cols; ++c)
      s += wr[c] * xr[c];
    y[i] = s;
  }
}

__global__ void gather_kernel(const float *w, const int32_t *ids, float *out, int64_t n, int64_t cols) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n * cols;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x)
    out[i] = w[static_cast<int64_t>(ids[i / cols]) * cols + i % cols];
}

unsigned blocks(int64_t n) { return static_cast<unsigned>(n / 256 + 1 < 4096 ? n / 256 + 1 : 4096); }

wo_status launched() { return cudaGetLastError() == cudaSuccess ? WO_OK : WO_ERR_CUDA; }

bool f32(const wo_tensor *w, wo_dtype a, wo_dtype b) {
  return w && w->ggml_type == 0 && a == WO_DTYPE_F32 && b == WO_DTYPE_F32;
}

} // namespace

bool cuda_device_present() {
  int n = 0;
  return cudaGetDeviceCount(&n) == cudaSuccess && n > 0;
}

DeviceHost::DeviceHost(const SynthModel &m) {
  cudaStreamCreate(&stream_);
  if (m.oss) {
    set_string("general.architecture", "gpt-oss");
    const std::string a = "gpt-oss.";
    set_u32(a + "context_length", static_cast<uint32_t>(m.n_ctx_train));
    set_u32(a + "embedding_length", static_cast<uint32_t>(m.n_embd));
    set_u32(a + "block_count", static_cast<uint32_t>(m.n_layer));
    set_u32(a + "feed_forward_length", static_cast<uint32_t>(m.n_ff));
    set_u32(a + "expert_feed_forward_length", static_cast<uint32_t>(m.n_ff));
    set_u32(a + "attention.head_count", static_cast<uint32_t>(m.n_head));
    set_u32(a + "attention.head_count_kv", static_cast<uint32_t>(m.n_head_kv));
    set_u32(a + "attention.key_length", static_cast<uint32_t>(m.head_dim));
    set_u32(a + "attention.value_length", static_cast<uint32_t>(m.head_dim));
    set_u32(a + "attention.sliding_window", static_cast<uint32_t>(m.sliding_window));
    set_f32(a + "attention.layer_norm_rms_epsilon", m.eps);
    set_u32(a + "expert_count", static_cast<uint32_t>(m.n_expert));
    set_u32(a + "expert_used_count", static_cast<uint32_t>(m.n_expert_used));
    set_f32(a + "rope.freq_base", m.rope_base);
    set_string(a + "rope.scaling.type", "yarn");
    set_f32(a + "rope.scaling.factor", m.rope_factor);
    set_u32(a + "rope.scaling.original_context_length", static_cast<uint32_t>(m.rope_orig_ctx));
  } else {
    set_string("general.architecture", "gpt2");
    set_u32("gpt2.context_length", static_cast<uint32_t>(m.n_ctx_train));
    set_u32("gpt2.embedding_length", static_cast<uint32_t>(m.n_embd));
    set_u32("gpt2.block_count", static_cast<uint32_t>(m.n_layer));
    set_u32("gpt2.feed_forward_length", static_cast<uint32_t>(m.n_ff));
    set_u32("gpt2.attention.head_count", static_cast<uint32_t>(m.n_head));
    set_f32("gpt2.attention.layer_norm_epsilon", m.eps);
  }
  for (const auto &kv : m.t) {
    void *d = nullptr;
    cudaMalloc(&d, kv.second.data.size() * sizeof(float));
    cudaMemcpy(d, kv.second.data.data(), kv.second.data.size() * sizeof(float), cudaMemcpyHostToDevice);
    weights_.push_back(d);
    add_tensor(kv.first, 0 /*F32*/, kv.second.ne, d);
  }
  wo_host *h = mutable_host();
  h->vram_alloc = &alloc;
  h->vram_free = &release;
  h->cuda_stream = stream_;
  h->linear = &linear;
  h->gather_rows = &gather;
  h->linear_id = &linear_id;
  h->trace = &trace;
  h->trace_enabled = 0;
}

DeviceHost::~DeviceHost() {
  for (void *p : weights_)
    cudaFree(p);
  if (stream_) cudaStreamDestroy(stream_);
}

wo_status DeviceHost::alloc(void *ctx, size_t bytes, wo_vram_kind, void **out) {
  if (cudaMalloc(out, bytes) != cudaSuccess) return WO_ERR_OUT_OF_MEMORY;
  ++self(ctx)->device_live_;
  return WO_OK;
}

void DeviceHost::release(void *ctx, void *p) {
  if (p && cudaFree(p) == cudaSuccess) --self(ctx)->device_live_;
}

wo_status DeviceHost::linear(void *ctx, const wo_tensor *w, const void *x, wo_dtype xt, void *y, wo_dtype yt,
                             int64_t n) {
  if (!f32(w, xt, yt) || n <= 0) return WO_ERR_UNSUPPORTED;
  linear_kernel<<<blocks(n * w->ne[1]), 256, 0, self(ctx)->stream_>>>(
      static_cast<const float *>(w->data), static_cast<const float *>(x), static_cast<float *>(y), n,
      w->ne[1], w->ne[0]);
  return launched();
}

wo_status DeviceHost::gather(void *ctx, const wo_tensor *w, const int32_t *ids, int64_t n, void *out,
                             wo_dtype ot) {
  if (!f32(w, WO_DTYPE_F32, ot) || n <= 0) return WO_ERR_UNSUPPORTED;
  gather_kernel<<<blocks(n * w->ne[0]), 256, 0, self(ctx)->stream_>>>(
      static_cast<const float *>(w->data), ids, static_cast<float *>(out), n, w->ne[0]);
  return launched();
}

wo_status DeviceHost::linear_id(void *ctx, const wo_tensor *w, const void *x, wo_dtype xt, int64_t x_slots,
                                void *y, wo_dtype yt, int64_t n, const int32_t *ids, int64_t n_slots) {
  if (!f32(w, xt, yt) || w->n_dims != 3 || n <= 0 || (x_slots != 1 && x_slots != n_slots))
    return WO_ERR_UNSUPPORTED;
  linear_id_kernel<<<blocks(n * n_slots * w->ne[1]), 256, 0, self(ctx)->stream_>>>(
      static_cast<const float *>(w->data), static_cast<const float *>(x), static_cast<float *>(y), ids, n,
      n_slots, x_slots, w->ne[1], w->ne[0]);
  return launched();
}

void DeviceHost::trace(void *ctx, const char *name, const void *data, size_t bytes) {
  std::vector<int32_t> v(bytes / sizeof(int32_t));
  std::memcpy(v.data(), data, v.size() * sizeof(int32_t));
  self(ctx)->traces[name].push_back(std::move(v));
}

} // namespace wo::gpt::testing
