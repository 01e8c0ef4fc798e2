// A llama-family model instance: weights bound from the host, a session's KV cache and scratch,
// and the forward pass. This is the type behind the SDK's opaque wo_arch_instance.
#pragma once

#include "hparams.hpp"
#include "weights.hpp"

#include <worker/sdk.hpp>

#include <string>

struct wo_arch_instance {
  virtual ~wo_arch_instance() = default;
  std::string error; // last_error() text
};

namespace wo::llama {

class Model : public wo_arch_instance {
public:
  // cfg as wo::read_arch_config returns it (every field present, n_batch > 0).
  Model(const wo_host *host, const wo_arch_config &cfg);
  ~Model() override;
  Model(const Model &) = delete;
  Model &operator=(const Model &) = delete;

  void session_begin(int64_t n_ctx);
  void session_end();
  void forward(const int32_t *tokens, int64_t n_tokens, int64_t pos, float *logits, uint32_t flags);
  // SDK 1.1 decode_step: one token, id and position read from device memory (CUDA-graph safe).
  void decode_step(const int32_t *token_dev, const int32_t *pos_dev, int64_t pos_bound, float *logits);

  const HParams &hparams() const { return hp_; }

  // Device scratch one session allocates: activations (scratch_bytes) plus the attention
  // workspace that lets decode split keys over blocks.
  static uint64_t session_scratch_bytes(const HParams &hp, int64_t n_batch);

private:
  struct Scratch; // device activation buffers, carved from one allocation
  // positions_dev: the chunk's positions on the device (decode_step), or nullptr: pos..pos+n-1 are
  // written to scratch. With positions_dev, pos + n - 1 is only an upper bound of the position.
  void run_chunk(const int32_t *tokens_dev, int64_t n, int64_t pos, float *logits, bool logits_all,
                 const int32_t *positions_dev = nullptr);
  void linear(const wo_tensor *w, const float *x, float *y, int64_t n, int layer);
  // y[i] = linear(w[i], x) for i < k (one launch where the codec can; see wo::linear_multi).
  void linear_multi(int32_t k, const wo_tensor *const *w, const float *x, float *const *y, int64_t n,
                    int layer);
  // The projections of a layer with the norm before and the residual add after them. For one token
  // each is one codec pass where the host folds them in (SDK 1.4 linear_fused), else the separate
  // kernels; both give the same bits. A residual delta the codec could not add stays pending in
  // the o buffer and the next norm adds it (add_rms_norm), as the unfolded forward always did.
  //   normed_linear: y_i[r] = W_i . (rmsnorm(x[first + r]) * norm) for r < rows, i < k
  //   normed_gate_up: gate/up . h_r into ffn, h_r = rmsnorm(x[r]) * norm; true when it produced
  //                   act[r] = silu(gate . h_r) * (up . h_r) itself instead (linear_swiglu)
  //   feed_forward: x[r] += down . act[r]; for one token the SwiGLU rides in down's pass
  //                 (SDK 1.5 WO_LINEAR_GLU), else the swiglu kernel runs first
  //   residual_linear: x[t] += W . in[t] + bias (bias may be null)
  void normed_linear(const wo_tensor *norm, int64_t first, int64_t rows, int32_t k, const wo_tensor *const *w,
                     float *const *y, int layer);
  // act_staged: whether the pass also staged act (Scratch::act_staged) for the down projection.
  bool normed_gate_up(const wo_tensor *norm, int64_t n, const LayerWeights &L, int layer, bool &act_staged);
  void feed_forward(const LayerWeights &L, int64_t n, int layer);
  void residual_linear(const wo_tensor *w, const wo_tensor *bias, const float *in, int64_t n, int layer,
                       const void *in_staged = nullptr);
  // linear_fused for one token; false (nothing enqueued) when declined or under WO_ARCH_UNFUSED.
  bool try_fused(int32_t op, int32_t k, const wo_tensor *const *w, const float *x, float *const *y,
                 const wo_linear_fusion &f, int layer);
  void cuda(int err, const char *what, int layer) const;
  // Decode's L2 side branch: after layer il's q/k/v pass, a kernel on side_ asks L2 for the
  // layer's gate and up weights while attention and the o projection leave DRAM idle (the gate/up
  // pass's CTAs hold whole SMs, so they cannot load their weights beside o's); side_join joins the
  // branch back before the step's LM head. On where gate and up take at most a quarter of L2
  // (WORKER_L2_SIDE=0: off, 1: on for any size).
  void side_prefetch(int il);
  void side_join();
  // Throws the host service's failure, naming the tensor, token count and layer.
  [[noreturn]] void host_failed(wo_status s, const char *service, const wo_tensor *w, int64_t n,
                                int layer) const;

  HostView host_;
  HParams hp_;
  Weights w_;
  int64_t n_batch_;
  uint32_t flags_;
  void *stream_;
  bool residual_pending_ = false; // the o buffer holds a delta not yet added to x (see normed_linear)
  bool l2_side_ = false;          // side_prefetch's branch is on
  void *side_ = nullptr;          // cudaStream_t of the side branch
  void *fork_ = nullptr, *join_ = nullptr; // cudaEvent_t

  // Session state.
  int64_t n_ctx_ = 0;
  void *kv_ = nullptr;      // [layer][K|V][n_ctx][n_kv_heads][head_dim] FP16
  void *scratch_ = nullptr; // see Scratch
  Scratch *bufs_ = nullptr;
};

} // namespace wo::llama
