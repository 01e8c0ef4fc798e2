// The forward pass of llama / qwen2 / phi3, written as the math reads:
//   x = embed(tokens)
//   per layer: h = rmsnorm(x) * w; q, k, v = linear(h) (+ bias); rope(q, k); cache k, v;
//              x += linear_o(attention(q, K, V)); h = rmsnorm(x) * w; x += down(silu(gate(h)) * up(h))
//   logits = lm_head(rmsnorm(x) * w)
// Every matmul goes through the host (the quant codec that owns the weight's type); the rest are
// sdk/kernels calls on the host's stream. For one token (decode) the norm before a projection and
// the residual add after it ride in the projection's own pass (SDK 1.4 linear_fused), and SiLU in
// gate/up's (linear_swiglu): a layer is then qkv, attention (with RoPE and the cache write), o,
// gate/up/SiLU, down. Nothing here allocates or synchronizes per call.
#include "model.hpp"

#include <worker/env_switch.hpp>
#include <worker/kernels.hpp>
#include <worker/staged_x.hpp>

#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>

namespace wo::llama {

namespace k = wo::kernels;

// Activation buffers for one chunk of up to n_batch tokens.
struct Model::Scratch {
  float *x = nullptr;   // [n][n_embd] residual stream
  float *h = nullptr;   // [n][n_embd] normed input of a projection
  float *o = nullptr;   // [n][n_embd] output of attn_output / ffn_down
  float *qkv = nullptr; // separate: q [n][q_dim], k [n][kv_dim], v [n][kv_dim]; fused: [n][q+2kv]
  float *att = nullptr; // [n][q_dim] attention output
  float *ffn = nullptr; // separate: gate [n][n_ff], up [n][n_ff]; fused: [n][2 n_ff]
  float *act = nullptr; // [n][n_ff] silu(gate) * up
  int32_t *tokens = nullptr;
  int32_t *positions = nullptr;
  float *attn_ws = nullptr; // attention split-K workspace
  int64_t attn_ws_floats = 0;
  // One token's attention output as the int8 GEMVs' staged terms (worker/staged_x.cuh), written by
  // decode attention so that the o projection copies them instead of quantizing att; nullptr where
  // q_dim is no multiple of 32 or WORKER_STAGED_X=0.
  uint8_t *att_staged = nullptr;
  // One token's SwiGLU output (act) staged likewise by the gate/up pass, for the down projection.
  uint8_t *act_staged = nullptr;
};

namespace {

// Bump allocator over one device block; 256-byte aligned pieces.
struct Carver {
  char *p;
  template <class T> T *take(uint64_t count) {
    T *out = reinterpret_cast<T *>(p);
    p += (count * sizeof(T) + 255) / 256 * 256;
    return out;
  }
};

} // namespace

Model::Model(const wo_host *host, const wo_arch_config &cfg)
    : host_(host), hp_(read_hparams(host_)), w_(bind_weights(host_, hp_, /*require_device=*/true)),
      n_batch_(cfg.n_batch), flags_(cfg.flags), stream_(host->cuda_stream) {
  if (!host->linear || !host->gather_rows || !host->vram_alloc || !host->vram_free)
    throw Error(WO_ERR_NO_DEVICE, "llama plugin: the host offers no device services (linear, gather_rows, "
                                  "vram_alloc); expected a GPU host");
  // The side branch pays where gate and up fit L2 beside everything else in flight (Qwen2.5-0.5B's
  // 6 MB of 50 MB: +1.3% / +1.5% decode at depth 0 / 2048 when it came; with 9a8afd3's attention
  // +1.0-1.4% at depth 0, -0.8% to +0.3% at 512-2048, +0.9% at 4096, so still on at every depth);
  // Phi-3-mini's 28 MB took DRAM from its depth-2048 attention (-17%). H100, docs/perf.md.
  const int64_t side = wo::env_int("WORKER_L2_SIDE", 0, 1, -1);
  if (side == 1)
    l2_side_ = true;
  else if (side == -1 && !w_.layers.empty()) {
    const LayerWeights &L = w_.layers[0];
    const uint64_t bytes = (L.gate ? L.gate->nbytes : 0) + (L.up ? L.up->nbytes : 0);
    int dev = 0, l2 = 0;
    if (cudaGetDevice(&dev) == cudaSuccess &&
        cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, dev) == cudaSuccess)
      l2_side_ = bytes > 0 && bytes <= static_cast<uint64_t>(l2) / 4;
    cudaGetLastError();
  }
  if (l2_side_) { // a hint: where the stream or events cannot be made, decode runs without it
    cudaStream_t s = nullptr;
    cudaEvent_t a = nullptr, b = nullptr;
    if (cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking) == cudaSuccess &&
        cudaEventCreateWithFlags(&a, cudaEventDisableTiming) == cudaSuccess &&
        cudaEventCreateWithFlags(&b, cudaEventDisableTiming) == cudaSuccess)
      side_ = s, fork_ = a, join_ = b;
    else {
      cudaGetLastError();
      if (b) cudaEventDestroy(b);
      if (a) cudaEventDestroy(a);
      if (s) cudaStreamDestroy(s);
      l2_side_ = false;
    }
  }
}

Model::~Model() {
  session_end();
  if (join_) cudaEventDestroy(static_cast<cudaEvent_t>(join_));
  if (fork_) cudaEventDestroy(static_cast<cudaEvent_t>(fork_));
  if (side_) cudaStreamDestroy(static_cast<cudaStream_t>(side_));
}

uint64_t Model::session_scratch_bytes(const HParams &hp, int64_t n_batch) {
  const int64_t ws = k::attention_workspace_floats(n_batch, hp.n_head, hp.head_dim);
  return scratch_bytes(hp, n_batch) + static_cast<uint64_t>(ws) * sizeof(float) + 256 +
         static_cast<uint64_t>(wo::staged::row_bytes(hp.q_dim())) + 256 +
         static_cast<uint64_t>(wo::staged::row_bytes(hp.n_ff)) + 256;
}

void Model::session_begin(int64_t n_ctx) {
  session_end();
  if (n_ctx <= 0 || n_ctx > INT32_MAX)
    throw Error(WO_ERR_INVALID_ARGUMENT, "session_begin: n_ctx expected in 1.." + std::to_string(INT32_MAX) +
                                             ", found " + std::to_string(n_ctx));
  const uint64_t kv_bytes = hp_.kv_bytes_per_token() * static_cast<uint64_t>(n_ctx);
  const uint64_t sc_bytes = session_scratch_bytes(hp_, n_batch_);
  const wo_host *h = host_.raw();
  wo_status s = h->vram_alloc(h->ctx, kv_bytes, WO_VRAM_KV_CACHE, &kv_);
  if (s != WO_OK) {
    kv_ = nullptr;
    throw Error(s, "session_begin: KV cache of " + std::to_string(kv_bytes) + " bytes for n_ctx=" +
                       std::to_string(n_ctx) + " could not be allocated (" + status_name(s) + ")");
  }
  s = h->vram_alloc(h->ctx, sc_bytes, WO_VRAM_SCRATCH, &scratch_);
  if (s != WO_OK) {
    scratch_ = nullptr;
    h->vram_free(h->ctx, kv_); // free the partial session: nothing stays accounted
    kv_ = nullptr;
    throw Error(s, "session_begin: scratch of " + std::to_string(sc_bytes) + " bytes for n_batch=" +
                       std::to_string(n_batch_) + " could not be allocated (" + status_name(s) + ")");
  }
  const int64_t n = n_batch_;
  Carver c{static_cast<char *>(scratch_)};
  bufs_ = new Scratch;
  bufs_->x = c.take<float>(n * hp_.n_embd);
  bufs_->h = c.take<float>(n * hp_.n_embd);
  bufs_->o = c.take<float>(n * hp_.n_embd);
  bufs_->qkv = c.take<float>(n * (hp_.q_dim() + 2 * hp_.kv_dim()));
  bufs_->att = c.take<float>(n * hp_.q_dim());
  bufs_->ffn = c.take<float>(n * 2 * hp_.n_ff);
  bufs_->act = c.take<float>(n * hp_.n_ff);
  bufs_->tokens = c.take<int32_t>(n);
  bufs_->positions = c.take<int32_t>(n);
  bufs_->attn_ws_floats = k::attention_workspace_floats(n, hp_.n_head, hp_.head_dim);
  bufs_->attn_ws = c.take<float>(bufs_->attn_ws_floats);
  if (wo::staged::enabled()) {
    if (wo::staged::fits(hp_.q_dim()))
      bufs_->att_staged = c.take<uint8_t>(static_cast<uint64_t>(wo::staged::row_bytes(hp_.q_dim())));
    // The gate/up pass staging act for the down projection is opt-in (WORKER_STAGED_ACT=1): its
    // CTA-major grid and closing barrier cost gate/up more than the copy saves the down projection
    // (H100, one call: Qwen2.5 1483.1/1335.9 -> 1469.5/1319.3 tok/s, Phi-3 586.1/485.0 ->
    // 583.4/484.1; docs/perf.md).
    if (wo::staged::fits(hp_.n_ff) && wo::env_int("WORKER_STAGED_ACT", 0, 1, 0) == 1)
      bufs_->act_staged = c.take<uint8_t>(static_cast<uint64_t>(wo::staged::row_bytes(hp_.n_ff)));
  }
  if (c.p > static_cast<char *>(scratch_) + sc_bytes) {
    session_end();
    throw Error(WO_ERR_INTERNAL, "session_begin: scratch layout exceeds its planned size");
  }
  // The attention workspace starts with split counters that must start at zero (kernels.hpp).
  const cudaError_t e =
      k::attention_workspace_clear(bufs_->attn_ws, bufs_->attn_ws_floats, static_cast<cudaStream_t>(stream_));
  if (e != cudaSuccess) {
    session_end();
    throw Error(WO_ERR_CUDA,
                std::string("session_begin: clearing the attention workspace: ") + cudaGetErrorName(e));
  }
  n_ctx_ = n_ctx;
}

void Model::session_end() {
  const wo_host *h = host_.raw();
  if (kv_) h->vram_free(h->ctx, kv_);
  if (scratch_) h->vram_free(h->ctx, scratch_);
  kv_ = scratch_ = nullptr;
  delete bufs_;
  bufs_ = nullptr;
  n_ctx_ = 0;
}

void Model::cuda(int err, const char *what, int layer) const {
  if (err == cudaSuccess) return;
  throw Error(WO_ERR_CUDA, std::string("llama forward: ") + what +
                               (layer >= 0 ? " (layer " + std::to_string(layer) + ")" : std::string()) +
                               ": " + cudaGetErrorString(static_cast<cudaError_t>(err)));
}

void Model::side_prefetch(int il) {
  const LayerWeights &L = w_.layers[il];
  k::L2Ranges r;
  int n = 0;
  for (const wo_tensor *t : {L.gate, L.up}) // (fused gate/up: L.up holds both)
    if (t) r.p[n] = t->data, r.bytes[n] = t->nbytes, ++n;
  auto st = static_cast<cudaStream_t>(stream_), side = static_cast<cudaStream_t>(side_);
  auto fork = static_cast<cudaEvent_t>(fork_);
  cuda(cudaEventRecord(fork, st), "L2 side branch: fork", il);
  cuda(cudaStreamWaitEvent(side, fork, 0), "L2 side branch: fork", il);
  // 4 blocks of 32 slices (~47 KB each for Qwen2.5): 2, 4 and 8 blocks within 1%, H100.
  cuda(k::l2_prefetch(r, 4, side), "L2 side branch: prefetch", il);
}

void Model::side_join() {
  auto join = static_cast<cudaEvent_t>(join_);
  cuda(cudaEventRecord(join, static_cast<cudaStream_t>(side_)), "L2 side branch: join", -1);
  cuda(cudaStreamWaitEvent(static_cast<cudaStream_t>(stream_), join, 0), "L2 side branch: join", -1);
}

void Model::host_failed(wo_status s, const char *service, const wo_tensor *w, int64_t n, int layer) const {
  throw Error(s, std::string("llama forward: ") + service + " on tensor '" + w->name + "' (" +
                     std::to_string(n) + " tokens" +
                     (layer >= 0 ? ", layer " + std::to_string(layer) : std::string()) +
                     ") failed: " + status_name(s));
}

void Model::linear(const wo_tensor *w, const float *x, float *y, int64_t n, int layer) {
  const wo_host *h = host_.raw();
  const wo_status s = h->linear(h->ctx, w, x, WO_DTYPE_F32, y, WO_DTYPE_F32, n);
  if (s != WO_OK) host_failed(s, "linear", w, n, layer);
}

void Model::linear_multi(int32_t k, const wo_tensor *const *w, const float *x, float *const *y, int64_t n,
                         int layer) {
  const wo_status s = wo::linear_multi(host_.raw(), k, w, x, WO_DTYPE_F32, reinterpret_cast<void *const *>(y),
                                       WO_DTYPE_F32, n);
  if (s != WO_OK) host_failed(s, "linear_multi (first weight)", w[0], n, layer);
}

void Model::forward(const int32_t *tokens, int64_t n_tokens, int64_t pos, float *logits, uint32_t flags) {
  if (!kv_) throw Error(WO_ERR_INVALID_ARGUMENT, "forward: no session; call session_begin first");
  if (!tokens || !logits || n_tokens <= 0)
    throw Error(WO_ERR_INVALID_ARGUMENT,
                "forward: expected tokens and logits pointers and n_tokens > 0, found n_tokens=" +
                    std::to_string(n_tokens));
  if (pos < 0 || pos + n_tokens > n_ctx_)
    throw Error(WO_ERR_INVALID_ARGUMENT, "forward: positions " + std::to_string(pos) + ".." +
                                             std::to_string(pos + n_tokens - 1) +
                                             " exceed the session's n_ctx=" + std::to_string(n_ctx_));
  const bool on_device = flags & WO_FWD_TOKENS_ON_DEVICE;
  if (!on_device) // ids from the host can be checked cheaply; out-of-range ids would read past the table
    for (int64_t i = 0; i < n_tokens; ++i)
      if (tokens[i] < 0 || tokens[i] >= hp_.n_vocab)
        throw Error(WO_ERR_INVALID_ARGUMENT, "forward: token " + std::to_string(i) + " has id " +
                                                 std::to_string(tokens[i]) + ", expected 0.." +
                                                 std::to_string(hp_.n_vocab - 1));
  const bool all = flags & WO_FWD_LOGITS_ALL;
  auto stream = static_cast<cudaStream_t>(stream_);
  for (int64_t start = 0; start < n_tokens; start += n_batch_) {
    const int64_t n = std::min(n_batch_, n_tokens - start);
    const int32_t *ids = tokens + start;
    if (!on_device) {
      cuda(cudaMemcpyAsync(bufs_->tokens, ids, n * sizeof(int32_t), cudaMemcpyHostToDevice, stream),
           "copy token ids to the device", -1);
      ids = bufs_->tokens;
    }
    const bool last = start + n == n_tokens;
    float *out = all ? logits + start * hp_.n_vocab : (last ? logits : nullptr);
    run_chunk(ids, n, pos + start, out, all);
  }
}

void Model::decode_step(const int32_t *token_dev, const int32_t *pos_dev, int64_t pos_bound, float *logits) {
  if (!kv_) throw Error(WO_ERR_INVALID_ARGUMENT, "decode_step: no session; call session_begin first");
  if (!token_dev || !pos_dev || !logits)
    throw Error(WO_ERR_INVALID_ARGUMENT, "decode_step: expected device token, position and logits pointers");
  if (pos_bound <= 0 || pos_bound > n_ctx_)
    throw Error(WO_ERR_INVALID_ARGUMENT, "decode_step: pos_bound expected in 1.." + std::to_string(n_ctx_) +
                                             " (the session's n_ctx), found " + std::to_string(pos_bound));
  run_chunk(token_dev, 1, pos_bound - 1, logits, false, pos_dev);
}

bool Model::try_fused(int32_t op, int32_t k, const wo_tensor *const *w, const float *x, float *const *y,
                      const wo_linear_fusion &f, int layer) {
  if (flags_ & WO_ARCH_UNFUSED) return false;
  const wo_status s = wo::linear_fused(host_.raw(), op, k, w, x, WO_DTYPE_F32,
                                       reinterpret_cast<void *const *>(y), WO_DTYPE_F32, 1, &f);
  if (s == WO_ERR_UNSUPPORTED) return false;
  if (s != WO_OK) host_failed(s, "linear_fused (first weight)", w[0], 1, layer);
  return true;
}

void Model::normed_linear(const wo_tensor *norm, int64_t first, int64_t rows, int32_t k,
                          const wo_tensor *const *w, float *const *y, int layer) {
  const Scratch &b = *bufs_;
  const int64_t E = hp_.n_embd;
  float *x = b.x + first * E;
  const float *nw = static_cast<const float *>(norm->data);
  int32_t done = 0; // weights already enqueued with the norm folded in
  if (!residual_pending_ && rows == 1) {
    const wo_linear_fusion fn = wo::fusion_norm(nw, hp_.rms_eps);
    if (try_fused(WO_LINEAR_STACK, k, w, x, y, fn, layer)) return;
    // A stack of mixed types (Qwen2.5's Q4_K_M: Q5_0 q and k, Q8_0 v in half of the layers) runs
    // as one pass where the codec has one for the mix (SDK 1.8); where it is refused as a whole,
    // one fused pass per run of one type, each with the norm, beats the norm kernel and k separate
    // GEMVs (the same bits as the one pass: a row's dot depends only on its weights and x).
    while (k > 1 && done < k) {
      int32_t run = 1;
      while (done + run < k && w[done + run]->ggml_type == w[done]->ggml_type)
        ++run;
      if (run == k || !try_fused(WO_LINEAR_STACK, run, w + done, x, y + done, fn, layer)) break;
      done += run;
    }
    if (done == k) return;
  }
  auto st = static_cast<cudaStream_t>(stream_);
  if (residual_pending_ && !(flags_ & WO_ARCH_UNFUSED))
    cuda(k::add_rms_norm(x, b.o + first * E, nw, b.h, rows, E, hp_.rms_eps, st), "residual + norm", layer);
  else {
    if (residual_pending_) cuda(k::add(x, x, b.o + first * E, rows * E, st), "residual", layer);
    cuda(k::rms_norm(x, nw, b.h, rows, E, hp_.rms_eps, st), "norm", layer);
  }
  residual_pending_ = false;
  if (k - done == 1) // the rest: weights done.. (all of them unless a run above was refused)
    linear(w[done], b.h, y[done], rows, layer);
  else
    linear_multi(k - done, w + done, b.h, y + done, rows, layer);
}

bool Model::normed_gate_up(const wo_tensor *norm, int64_t n, const LayerWeights &L, int layer,
                           bool &act_staged) {
  const Scratch &b = *bufs_;
  const int64_t FF = hp_.n_ff;
  const bool fused_ffn = hp_.arch->ffn == FfnLayout::FusedGateUp;
  // One pass for gate, up and SiLU where the host offers it (off: WORKER_LINEAR_SWIGLU=0).
  const wo_tensor *gu[2] = {fused_ffn ? &L.gate_half : L.gate, fused_ffn ? &L.up_half : L.up};
  float *const act[1] = {b.act};
  if (!residual_pending_ && n == 1 && gu[0]->struct_size && gu[1]->struct_size) {
    wo_linear_fusion f = wo::fusion_norm(static_cast<const float *>(norm->data), hp_.rms_eps);
    // With act staged for the down projection where the codec's grid can (SDK 1.9), else without.
    f.y_staged = b.act_staged;
    act_staged = b.act_staged && try_fused(WO_LINEAR_SWIGLU, 2, gu, b.x, act, f, layer);
    if (act_staged) return true;
    f.y_staged = nullptr;
    if (try_fused(WO_LINEAR_SWIGLU, 2, gu, b.x, act, f, layer)) return true;
  }
  if (fused_ffn) {
    float *const y[1] = {b.ffn}; // rows [gate; up]
    normed_linear(norm, 0, n, 1, &L.up, y, layer);
  } else {
    const wo_tensor *w2[2] = {L.gate, L.up};
    float *const y2[2] = {b.ffn, b.ffn + n * FF};
    normed_linear(norm, 0, n, 2, w2, y2, layer);
  }
  return false;
}

void Model::feed_forward(const LayerWeights &L, int64_t n, int layer) {
  const Scratch &b = *bufs_;
  const int64_t FF = hp_.n_ff;
  bool act_staged = false;
  if (normed_gate_up(L.ffn_norm, n, L, layer, act_staged)) {
    residual_linear(L.down, nullptr, b.act, n, layer, act_staged ? b.act_staged : nullptr);
    return;
  }
  // gate and up: [n][2 FF] rows of [gate; up], or [n][FF] gate then [n][FF] up
  const bool fused_ffn = hp_.arch->ffn == FfnLayout::FusedGateUp;
  const float *up = b.ffn + (fused_ffn ? FF : n * FF);
  float *const x_out[1] = {b.x};
  if (n == 1 && !residual_pending_ &&
      try_fused(WO_LINEAR_GLU, 1, &L.down, b.ffn, x_out, wo::fusion_glu_residual(up), layer))
    return;
  auto st = static_cast<cudaStream_t>(stream_);
  cuda(k::swiglu(b.ffn, up, b.act, n, FF, st, fused_ffn ? 2 * FF : 0), "swiglu", layer);
  residual_linear(L.down, nullptr, b.act, n, layer);
}

void Model::residual_linear(const wo_tensor *w, const wo_tensor *bias, const float *in, int64_t n, int layer,
                            const void *in_staged) {
  const Scratch &b = *bufs_;
  const float *bias_f = bias ? static_cast<const float *>(bias->data) : nullptr;
  float *const x_out[1] = {b.x};
  if (n == 1 && !residual_pending_ &&
      try_fused(WO_LINEAR_STACK, 1, &w, in, x_out, wo::fusion_residual(bias_f, in_staged), layer))
    return;
  linear(w, in, b.o, n, layer);
  if (bias_f)
    cuda(k::add_bias(b.o, bias_f, n, hp_.n_embd, static_cast<cudaStream_t>(stream_)), "bias", layer);
  residual_pending_ = true; // the next norm adds it
}

void Model::run_chunk(const int32_t *ids, int64_t n, int64_t pos, float *logits, bool logits_all,
                      const int32_t *positions_dev) {
  auto st = static_cast<cudaStream_t>(stream_);
  const wo_host *h = host_.raw();
  const Scratch &b = *bufs_;
  const int64_t QD = hp_.q_dim(), KVD = hp_.kv_dim();
  const bool fused_qkv = hp_.arch->qkv == QkvLayout::Fused;

  k::RopeParams rp;
  rp.n_dims = hp_.rope.n_dims;
  rp.mode = hp_.rope.mode == Rope::Neox ? k::RopeMode::Neox : k::RopeMode::Norm;
  rp.freq_base = hp_.rope.freq_base;
  rp.freq_scale = hp_.rope.freq_scale;
  rp.ext_factor = hp_.rope.ext_factor;
  rp.attn_factor = hp_.rope.attn_factor;
  rp.n_ctx_orig = hp_.rope.n_ctx_orig;

  k::AttentionParams ap;
  ap.n_tokens = n;
  ap.pos0 = pos;
  ap.n_kv = pos + n;
  ap.n_heads = hp_.n_head;
  ap.n_kv_heads = hp_.n_head_kv;
  ap.head_dim = hp_.head_dim;
  ap.scale = 1.0f / std::sqrt(static_cast<float>(hp_.head_dim));
  ap.causal = true;
  ap.window = hp_.sliding_window;
  ap.workspace = b.attn_ws;
  ap.workspace_floats = b.attn_ws_floats;
  const bool fuse = !(flags_ & WO_ARCH_UNFUSED);
  // Decode: attention stages its output for the o projection (one token; the fused path only).
  const void *att_staged = n == 1 && fuse ? b.att_staged : nullptr;
  ap.staged_out = const_cast<void *>(att_staged);

  // q, k, v views: three contiguous blocks, or one fused [n][q+2kv] block read with a stride.
  const int64_t qkv_stride = QD + 2 * KVD;
  float *q = b.qkv;
  float *kk = fused_qkv ? b.qkv + QD : b.qkv + n * QD;
  float *v = fused_qkv ? b.qkv + QD + KVD : kk + n * KVD;
  const int64_t q_stride = fused_qkv ? qkv_stride : QD;
  const int64_t kv_stride = fused_qkv ? qkv_stride : KVD;
  ap.q_stride = q_stride;

  // Positions live on the device so that no kernel argument depends on them (graph replay).
  const int32_t *positions = positions_dev ? positions_dev : b.positions;
  if (!positions_dev) cuda(k::fill_positions(b.positions, n, static_cast<int32_t>(pos), st), "positions", -1);
  ap.positions = positions;
  wo_status s = h->gather_rows(h->ctx, w_.token_embd, ids, n, b.x, WO_DTYPE_F32);
  if (s != WO_OK) host_failed(s, "gather_rows", w_.token_embd, n, -1);
  residual_pending_ = false;

  auto f32 = [](const wo_tensor *t) { return t ? static_cast<const float *>(t->data) : nullptr; };
  const bool side = n == 1 && fuse && l2_side_; // this chunk forks and joins the L2 side branch
  const uint64_t layer_kv = static_cast<uint64_t>(n_ctx_) * KVD; // halves per K (or V) per layer
  for (int il = 0; il < static_cast<int>(hp_.n_layer); ++il) {
    const LayerWeights &L = w_.layers[il];
    __half *kc = static_cast<__half *>(kv_) + 2 * layer_kv * il;
    __half *vc = kc + layer_kv;

    // Attention block: q, k, v = W (rmsnorm(x) * attn_norm) (+bias), RoPE, cache, attend; x += W_o att.
    const float *q_bias = f32(fused_qkv ? L.qkv_bias : L.q_bias);
    const float *k_bias = fused_qkv ? (q_bias ? q_bias + QD : nullptr) : f32(L.k_bias);
    const float *v_bias = fused_qkv ? (q_bias ? q_bias + QD + KVD : nullptr) : f32(L.v_bias);
    if (fused_qkv) {
      float *const y1[1] = {b.qkv};
      normed_linear(L.attn_norm, 0, n, 1, &L.qkv, y1, il);
    } else {
      const wo_tensor *w3[3] = {L.q, L.k, L.v};
      float *const y3[3] = {q, kk, v};
      normed_linear(L.attn_norm, 0, n, 3, w3, y3, il);
    }
    // After the q/k/v pass, not before: the fork waits for its kernel's completion, and the q/k/v
    // weights' own loads would share DRAM with the branch's (+0.9% against +1.6%, H100).
    if (side) side_prefetch(il);
    if (fuse) {
      k::QkvRopeCache a;
      a.q = q, a.k = kk, a.v = v;
      a.q_stride = q_stride, a.kv_stride = kv_stride;
      a.q_bias = q_bias, a.k_bias = k_bias, a.v_bias = v_bias;
      a.k_cache = kc, a.v_cache = vc;
      a.positions = positions;
      a.positions_settled = true; // written before the replay, or by fill_positions ahead of this layer's qkv
      a.n_heads = hp_.n_head, a.n_kv_heads = hp_.n_head_kv, a.head_dim = hp_.head_dim;
      // One token: the attention kernel rotates q and writes the new cache rows itself (one launch).
      cuda(k::rope_kv_attention(a, rp, b.att, ap, st), "bias + rope + kv write + attention", il);
    } else {
      if (q_bias) cuda(k::add_bias(q, q_bias, n, QD, st, q_stride), "q bias", il);
      if (k_bias) cuda(k::add_bias(kk, k_bias, n, KVD, st, kv_stride), "k bias", il);
      if (v_bias) cuda(k::add_bias(v, v_bias, n, KVD, st, kv_stride), "v bias", il);
      cuda(k::rope(q, n, hp_.n_head, hp_.head_dim, positions, rp, st, q_stride), "rope q", il);
      cuda(k::rope(kk, n, hp_.n_head_kv, hp_.head_dim, positions, rp, st, kv_stride), "rope k", il);
      cuda(k::kv_write(kk, v, kc, vc, pos, n, hp_.n_head_kv, hp_.head_dim, st, kv_stride, positions),
           "kv write", il);
      cuda(k::attention(q, kc, vc, b.att, ap, st), "attention", il);
    }
    residual_linear(L.o, L.o_bias, b.att, n, il, att_staged);

    // Feed-forward block: x += down(silu(gate(h)) * up(h)), h = rmsnorm(x) * ffn_norm.
    feed_forward(L, n, il);
  }

  if (side) side_join();
  // The last FFN residual is only needed for the rows whose logits are wanted.
  if (!logits) return; // an earlier prefill chunk when only the last position's logits are wanted
  const int64_t n_out = logits_all ? n : 1;
  float *const out[1] = {logits};
  normed_linear(w_.output_norm, n - n_out, n_out, 1, &w_.output, out, -1);
}

} // namespace wo::llama
