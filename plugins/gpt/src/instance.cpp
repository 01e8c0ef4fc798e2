#include "instance.hpp"

namespace wo::gpt {

Instance::Instance(const wo_host *h, const wo_arch_config &cfg)
    : host(h), view(h), hp(read_hparams(view)), w(load_weights(view, hp)), n_batch(cfg.n_batch),
      fused(!(cfg.flags & WO_ARCH_UNFUSED)) {}

void session_begin(Instance &inst, int64_t n_ctx) {
  if (n_ctx <= 0)
    throw Error(WO_ERR_INVALID_ARGUMENT,
                "session_begin: n_ctx must be positive, found " + std::to_string(n_ctx));
  session_end(inst); // a new session replaces the old one
  if (!inst.host->vram_alloc)
    throw Error(WO_ERR_NO_DEVICE, "session_begin: the host offers no vram_alloc service (no device)");
  Session s;
  s.n_ctx = n_ctx;
  s.layout = session_scratch_layout(inst.hp, inst.n_batch);
  const size_t kv_bytes = static_cast<size_t>(kv_bytes_per_token(inst.hp)) * static_cast<size_t>(n_ctx);
  wo_status st = inst.host->vram_alloc(inst.host->ctx, kv_bytes, WO_VRAM_KV_CACHE, &s.kv);
  if (st != WO_OK)
    throw Error(st, "session_begin: KV cache of " + std::to_string(kv_bytes) + " bytes for n_ctx " +
                        std::to_string(n_ctx) + " not allocated: " + status_name(st));
  st = inst.host->vram_alloc(inst.host->ctx, s.layout.total, WO_VRAM_SCRATCH, &s.scratch);
  if (st != WO_OK) {
    inst.host->vram_free(inst.host->ctx, s.kv);
    throw Error(st, "session_begin: scratch of " + std::to_string(s.layout.total) + " bytes for n_batch " +
                        std::to_string(inst.n_batch) + " not allocated: " + status_name(st) +
                        " (KV cache released)");
  }
  s.active = true;
  inst.session = s;
}

namespace {
void check_args(const Instance &inst, const int32_t *tokens, int64_t n, int64_t pos, const float *logits,
                uint32_t flags) {
  const Session &s = inst.session;
  if (!s.active) throw Error(WO_ERR_INVALID_ARGUMENT, "forward: no session (call session_begin first)");
  if (!tokens || !logits) throw Error(WO_ERR_INVALID_ARGUMENT, "forward: tokens and logits must not be NULL");
  if (n <= 0)
    throw Error(WO_ERR_INVALID_ARGUMENT, "forward: n_tokens must be positive, found " + std::to_string(n));
  if (pos < 0 || pos + n > s.n_ctx)
    throw Error(WO_ERR_INVALID_ARGUMENT, "forward: positions " + std::to_string(pos) + ".." +
                                             std::to_string(pos + n - 1) + " exceed the session's n_ctx " +
                                             std::to_string(s.n_ctx));
  if (!(flags & WO_FWD_TOKENS_ON_DEVICE)) // device ids cannot be read without a sync; the host checks those
    for (int64_t i = 0; i < n; ++i)
      if (tokens[i] < 0 || tokens[i] >= inst.hp.n_vocab)
        throw Error(WO_ERR_INVALID_ARGUMENT, "forward: token id " + std::to_string(tokens[i]) + " at index " +
                                                 std::to_string(i) + " outside the vocabulary 0.." +
                                                 std::to_string(inst.hp.n_vocab - 1));
  if (inst.hp.family == Family::Gpt2 && pos + n > inst.hp.n_ctx_train)
    throw Error(WO_ERR_INVALID_ARGUMENT, "forward: gpt2 has learned positions 0.." +
                                             std::to_string(inst.hp.n_ctx_train - 1) +
                                             " (position_embd), asked up to " + std::to_string(pos + n - 1));
}

} // namespace

void forward(Instance &inst, const int32_t *tokens, int64_t n, int64_t pos, float *logits, uint32_t flags) {
  check_args(inst, tokens, n, pos, logits, flags);
  forward_device(inst, tokens, n, pos, logits, flags);
}

void decode_step(Instance &inst, const int32_t *token, const int32_t *pos, int64_t pos_bound, float *logits) {
  const Session &s = inst.session;
  if (!s.active) throw Error(WO_ERR_INVALID_ARGUMENT, "decode_step: no session (call session_begin first)");
  if (!token || !pos || !logits)
    throw Error(WO_ERR_INVALID_ARGUMENT, "decode_step: token, pos and logits must not be NULL");
  if (pos_bound <= 0 || pos_bound > s.n_ctx)
    throw Error(WO_ERR_INVALID_ARGUMENT, "decode_step: pos_bound expected in 1.." + std::to_string(s.n_ctx) +
                                             " (the session's n_ctx), found " + std::to_string(pos_bound));
  if (inst.hp.family == Family::Gpt2 && pos_bound > inst.hp.n_ctx_train)
    throw Error(WO_ERR_INVALID_ARGUMENT, "decode_step: gpt2 has learned positions 0.." +
                                             std::to_string(inst.hp.n_ctx_train - 1) + ", pos_bound " +
                                             std::to_string(pos_bound) + " exceeds them");
  decode_step_device(inst, token, pos, pos_bound, logits);
}

void session_end(Instance &inst) noexcept {
  Session &s = inst.session;
  if (s.kv) inst.host->vram_free(inst.host->ctx, s.kv);
  if (s.scratch) inst.host->vram_free(inst.host->ctx, s.scratch);
  s = Session{};
}

} // namespace wo::gpt
