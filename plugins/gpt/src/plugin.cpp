// The `gpt` architecture plugin: serves general.architecture gpt2, gpt-oss and gptoss through
// the wo_arch_v1 vtable. Everything here converts between the C ABI and the C++ inside
// (exceptions become statuses, the message stays on the instance).
#include "instance.hpp"

#include <cstring>

namespace {

using wo::gpt::Instance;

Instance *impl(wo_arch_instance *p) { return reinterpret_cast<Instance *>(p); }
const Instance *impl(const wo_arch_instance *p) { return reinterpret_cast<const Instance *>(p); }

// Errors of calls that have no instance yet (probe/plan/create) are kept per thread.
const char *no_instance_error() { return wo::thread_error().c_str(); }

int32_t gpt_probe(const wo_host *host) {
  if (!host || !host->meta_get) return 0;
  wo::HostView view(host);
  try {
    auto arch = view.opt_str("general.architecture");
    return arch ? wo::gpt::arch_score(*arch) : 0;
  } catch (...) {
    return 0; // a malformed key means "not ours", never a crash
  }
}

wo_status gpt_plan(const wo_host *host, const wo_arch_config *cfg, wo_arch_plan *out) {
  return wo::guard(wo::thread_error(), [&] {
    if (!host || !out) throw wo::Error(WO_ERR_INVALID_ARGUMENT, "plan: host and out must not be NULL");
    const wo::gpt::Hparams hp = wo::gpt::read_hparams(wo::HostView(host));
    const int64_t n_batch = wo::read_arch_config(cfg, wo::gpt::kDefaultBatch).n_batch;
    wo_arch_plan p{};
    p.struct_size = sizeof(wo_arch_plan);
    p.n_vocab = hp.n_vocab;
    p.n_ctx_train = hp.n_ctx_train;
    p.n_embd = hp.n_embd;
    p.n_layer = hp.n_layer;
    p.kv_bytes_per_token = wo::gpt::kv_bytes_per_token(hp);
    p.scratch_bytes = wo::gpt::session_scratch_layout(hp, n_batch).total;
    wo::write_sized(out, p); // the caller's struct may be older than ours
  });
}

wo_status gpt_create(const wo_host *host, const wo_arch_config *cfg, wo_arch_instance **out) {
  return wo::guard(wo::thread_error(), [&] {
    if (!host || !out) throw wo::Error(WO_ERR_INVALID_ARGUMENT, "create: host and out must not be NULL");
    *out = nullptr;
    auto *inst = new Instance(host, wo::read_arch_config(cfg, wo::gpt::kDefaultBatch));
    *out = reinterpret_cast<wo_arch_instance *>(inst);
  });
}

void gpt_destroy(wo_arch_instance *p) {
  if (!p) return;
  wo::gpt::session_end(*impl(p));
  delete impl(p);
}

wo_status gpt_session_begin(wo_arch_instance *p, int64_t n_ctx) {
  if (!p) return WO_ERR_INVALID_ARGUMENT;
  return wo::guard(impl(p)->error, [&] { wo::gpt::session_begin(*impl(p), n_ctx); });
}

void gpt_session_end(wo_arch_instance *p) {
  if (p) wo::gpt::session_end(*impl(p));
}

wo_status gpt_forward(wo_arch_instance *p, const int32_t *tokens, int64_t n_tokens, int64_t pos,
                      float *logits, uint32_t flags) {
  if (!p) return WO_ERR_INVALID_ARGUMENT;
  return wo::guard(impl(p)->error, [&] { wo::gpt::forward(*impl(p), tokens, n_tokens, pos, logits, flags); });
}

wo_status gpt_decode_step(wo_arch_instance *p, const int32_t *token, const int32_t *pos, int64_t pos_bound,
                          float *logits) {
  if (!p) return WO_ERR_INVALID_ARGUMENT;
  return wo::guard(impl(p)->error, [&] { wo::gpt::decode_step(*impl(p), token, pos, pos_bound, logits); });
}

const char *gpt_last_error(const wo_arch_instance *p) {
  return p ? impl(p)->error.c_str() : no_instance_error();
}

const wo_arch_v1 kVtable = {
    sizeof(wo_arch_v1), gpt_probe,       gpt_plan,    gpt_create,     gpt_destroy,
    gpt_session_begin,  gpt_session_end, gpt_forward, gpt_last_error, gpt_decode_step,
};

const wo_plugin kDescriptor = wo::make_descriptor(WO_PLUGIN_ARCHITECTURE, "gpt", "0.1.0", &kVtable);

const wo_plugin *gpt_entry(uint32_t host_major, uint32_t host_minor) {
  return wo::negotiate(&kDescriptor, host_major, host_minor);
}

} // namespace

extern "C" const wo_plugin *worker_gpt_plugin_entry(uint32_t host_major, uint32_t host_minor) {
  return gpt_entry(host_major, host_minor);
}
WORKER_PLUGIN(worker_gpt_plugin_entry)
