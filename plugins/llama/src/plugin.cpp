// The "llama" architecture plugin: wo_arch_v1 over llama, qwen2 and phi3 GGUF files.
// Each entry point converts exceptions to a status (wo::guard) and keeps the message on the
// instance, or in the thread's error text for calls that have no instance yet.
#include "arch_table.hpp"
#include "hparams.hpp"
#include "model.hpp"

#include <worker/sdk.hpp>

#include <algorithm>
#include <cstring>
#include <string>

namespace wo::llama {
namespace {

constexpr int32_t kProbeScore = 100;

int32_t probe(const wo_host *host) {
  std::string err;
  int32_t score = 0;
  guard(err, [&] {
    const HostView h(host);
    const auto arch = h.opt_str("general.architecture");
    if (arch && find_arch(*arch)) score = kProbeScore;
  });
  return score;
}

wo_status plan(const wo_host *host, const wo_arch_config *cfg, wo_arch_plan *out) {
  return guard(thread_error(), [&] {
    if (!host || !out) throw Error(WO_ERR_INVALID_ARGUMENT, "plan: host and out must not be NULL");
    const HostView h(host);
    const HParams hp = read_hparams(h);
    bind_weights(h, hp, /*require_device=*/false); // shapes checked before the host allocates anything
    const int64_t n_batch = read_arch_config(cfg, kDefaultBatch).n_batch;
    wo_arch_plan p{};
    p.struct_size = sizeof(wo_arch_plan);
    p.n_vocab = hp.n_vocab;
    p.n_ctx_train = hp.n_ctx_train;
    p.n_embd = hp.n_embd;
    p.n_layer = hp.n_layer;
    p.kv_bytes_per_token = hp.kv_bytes_per_token();
#ifdef WORKER_WITH_CUDA
    p.scratch_bytes = Model::session_scratch_bytes(hp, n_batch);
#else
    p.scratch_bytes = scratch_bytes(hp, n_batch);
#endif
    write_sized(out, p); // an older host may know fewer fields
  });
}

wo_status create(const wo_host *host, const wo_arch_config *cfg, wo_arch_instance **out) {
  return guard(thread_error(), [&] {
    if (!host || !out) throw Error(WO_ERR_INVALID_ARGUMENT, "create: host and out must not be NULL");
    *out = nullptr;
#ifdef WORKER_WITH_CUDA
    *out = new Model(host, read_arch_config(cfg, kDefaultBatch));
#else
    (void)cfg;
    throw Error(WO_ERR_NO_DEVICE, "llama plugin: built without CUDA (WORKER_WITH_CUDA=OFF), so no device: it "
                                  "can probe and plan but not run a model");
#endif
  });
}

void destroy(wo_arch_instance *inst) { delete inst; }

#ifdef WORKER_WITH_CUDA
Model &model(wo_arch_instance *inst) { return *static_cast<Model *>(inst); }
#endif

wo_status session_begin(wo_arch_instance *inst, int64_t n_ctx) {
  if (!inst) return WO_ERR_INVALID_ARGUMENT;
#ifdef WORKER_WITH_CUDA
  return guard(inst->error, [&] { model(inst).session_begin(n_ctx); });
#else
  (void)n_ctx;
  return WO_ERR_NO_DEVICE;
#endif
}

void session_end(wo_arch_instance *inst) {
#ifdef WORKER_WITH_CUDA
  if (inst) guard(inst->error, [&] { model(inst).session_end(); });
#else
  (void)inst;
#endif
}

wo_status forward(wo_arch_instance *inst, const int32_t *tokens, int64_t n_tokens, int64_t pos, float *logits,
                  uint32_t flags) {
  if (!inst) return WO_ERR_INVALID_ARGUMENT;
#ifdef WORKER_WITH_CUDA
  return guard(inst->error, [&] { model(inst).forward(tokens, n_tokens, pos, logits, flags); });
#else
  (void)tokens, (void)n_tokens, (void)pos, (void)logits, (void)flags;
  return WO_ERR_NO_DEVICE;
#endif
}

wo_status decode_step(wo_arch_instance *inst, const int32_t *token, const int32_t *pos, int64_t pos_bound,
                      float *logits) {
  if (!inst) return WO_ERR_INVALID_ARGUMENT;
#ifdef WORKER_WITH_CUDA
  return guard(inst->error, [&] { model(inst).decode_step(token, pos, pos_bound, logits); });
#else
  (void)token, (void)pos, (void)pos_bound, (void)logits;
  return WO_ERR_NO_DEVICE;
#endif
}

const char *last_error(const wo_arch_instance *inst) {
  return inst ? inst->error.c_str() : thread_error().c_str();
}

const wo_arch_v1 kVtable = [] {
  wo_arch_v1 v{};
  v.struct_size = sizeof(wo_arch_v1);
  v.probe = probe;
  v.plan = plan;
  v.create = create;
  v.destroy = destroy;
  v.session_begin = session_begin;
  v.session_end = session_end;
  v.forward = forward;
  v.last_error = last_error;
  v.decode_step = decode_step;
  return v;
}();

const wo_plugin kDescriptor = make_descriptor(WO_PLUGIN_ARCHITECTURE, "llama", "0.1.0", &kVtable);

} // namespace
} // namespace wo::llama

extern "C" const wo_plugin *llama_plugin_entry(uint32_t host_abi_major, uint32_t host_abi_minor) {
  return wo::negotiate(&wo::llama::kDescriptor, host_abi_major, host_abi_minor);
}
WORKER_PLUGIN(llama_plugin_entry)
