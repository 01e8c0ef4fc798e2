// One served model: hyperparameters, the host's weights, and the session (KV cache + scratch).
#pragma once

#include "hparams.hpp"
#include "scratch_layout.hpp"
#include "weights.hpp"

#include <string>
#include <vector>

namespace wo::gpt {

constexpr int64_t kDefaultBatch = 512;

struct Session {
  bool active = false;
  int64_t n_ctx = 0;
  void *kv = nullptr;      // WO_VRAM_KV_CACHE: per layer K then V, [n_ctx][kv_dim] FP16 each
  void *scratch = nullptr; // WO_VRAM_SCRATCH: ScratchLayout for n_batch tokens
  ScratchLayout layout;
  bool counters_zeroed =
      false; // the attention workspace's and routing counters start at zero (first forward)
};

struct Instance {
  // cfg as wo::read_arch_config returns it (every field present, n_batch > 0).
  Instance(const wo_host *h, const wo_arch_config &cfg);

  const wo_host *host;
  HostView view;
  Hparams hp;
  Weights w;
  int64_t n_batch;
  bool fused = true; // false with WO_ARCH_UNFUSED: every bias add as its own kernel (debugging)
  Session session;
  std::string error;
  // Debug mode only (host->trace_enabled): per layer, the expert ids of every token of the current
  // forward call, handed to host->trace once per call: "routing.L<layer>" = the experts chosen
  // (top-k of the router logits with their bias), "routing_prebias.L<layer>" = the top-k of the
  // router logits before the bias is added (what the fixtures' reference.json records).
  std::vector<std::vector<int32_t>> routing_trace, routing_prebias_trace;
};

// Allocate KV cache + scratch for n_ctx tokens. On failure frees what it took and throws
// (WO_ERR_OUT_OF_MEMORY when the host's accounting refused).
void session_begin(Instance &inst, int64_t n_ctx);
void session_end(Instance &inst) noexcept;

// Floats of attention workspace a session carries for n_batch queries (0 in a CPU-only build).
int64_t attention_workspace_floats(const Hparams &hp, int64_t n_batch);

// The session scratch layout for this model and batch.
inline ScratchLayout session_scratch_layout(const Hparams &hp, int64_t n_batch) {
  return scratch_layout(hp, n_batch, attention_workspace_floats(hp, n_batch));
}

// Enqueue the forward pass on the host's stream; throws wo::Error. Checks the arguments, then
// runs forward_device (forward.cpp with CUDA, forward_unavailable.cpp without).
void forward(Instance &inst, const int32_t *tokens, int64_t n_tokens, int64_t pos, float *logits,
             uint32_t flags);
void forward_device(Instance &inst, const int32_t *tokens, int64_t n_tokens, int64_t pos, float *logits,
                    uint32_t flags);

// SDK 1.1 decode_step: one token whose id and position are device int32s; pos_bound sizes the
// launches (see sdk.h). Checks the arguments, then runs decode_step_device.
void decode_step(Instance &inst, const int32_t *token, const int32_t *pos, int64_t pos_bound, float *logits);
void decode_step_device(Instance &inst, const int32_t *token, const int32_t *pos, int64_t pos_bound,
                        float *logits);

} // namespace wo::gpt
