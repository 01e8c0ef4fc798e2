// The VRAM plan (spec M0-W-1020): every byte the model will need, computed from metadata and the
// architecture's own sizing before anything is allocated, and compared with the device's free
// memory and the optional budget. Refusing here is what makes "does not fit" a clean exit 1
// instead of an out-of-memory error halfway through the upload.
#include "engine/engine_impl.hpp"

#include "device/device_context.hpp"
#include "observe/log.hpp"

#include <worker/sdk.hpp>

#include <algorithm>

namespace wo::engine {

namespace {

constexpr uint64_t kMiB = 1ull << 20;
// Beyond cuBLAS's workspace: allocator rounding of every allocation (2 MiB pages for big ones) and
// small buffers plugins allocate on their own.
constexpr uint64_t kHeadroomBytes = 32 * kMiB;

std::string mib(uint64_t b) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f", static_cast<double>(b) / static_cast<double>(kMiB));
  return buf;
}

} // namespace

void Engine::Impl::compute_plan() {
  const std::string model = opts.model;
  wo_arch_config cfg{};
  cfg.struct_size = sizeof(cfg);
  cfg.n_batch = opts.n_batch;
  cfg.flags = opts.arch_flags;

  // First ask with a one-token context: the per-token KV size and the trained context.
  cfg.n_ctx = 1;
  wo_arch_plan p{};
  p.struct_size = sizeof(p);
  wo::check(arch->plan(&host, &cfg, &p), "model '" + model + "': architecture plan()");
  if (p.n_vocab <= 0)
    throw Error(WO_ERR_FORMAT, "model '" + model + "': architecture plan() reported n_vocab " +
                                   std::to_string(p.n_vocab) + ", expected > 0");

  // Session capacity: asked for, else the model's context; capped by --kv-cache-size-mb and by
  // the longest job (--max-tokens-in + --max-tokens-out) when both are given.
  int64_t ctx = opts.n_ctx > 0 ? opts.n_ctx : p.n_ctx_train;
  if (ctx <= 0) ctx = 4096; // a model without a context length: a conservative default
  if (opts.kv_cache_mb > 0 && p.kv_bytes_per_token > 0) {
    const int64_t cap =
        static_cast<int64_t>(static_cast<uint64_t>(opts.kv_cache_mb) * kMiB / p.kv_bytes_per_token);
    if (cap < 1)
      throw Error(WO_ERR_INVALID_ARGUMENT, "--kv-cache-size-mb " + std::to_string(opts.kv_cache_mb) +
                                               ": too small for one token of '" + model + "' (needs " +
                                               std::to_string(p.kv_bytes_per_token) + " bytes per token)");
    ctx = std::min(ctx, cap);
  }
  if (opts.max_tokens_in > 0 && opts.max_tokens_out > 0)
    ctx = std::min(ctx, opts.max_tokens_in + opts.max_tokens_out);
  n_ctx = ctx;

  cfg.n_ctx = n_ctx;
  arch_plan = wo_arch_plan{};
  arch_plan.struct_size = sizeof(arch_plan);
  wo::check(arch->plan(&host, &cfg, &arch_plan),
            "model '" + model + "': architecture plan() for n_ctx " + std::to_string(n_ctx));

  plan = VramPlan{};
  plan.weights = weights->arena_bytes();
  plan.kv_cache = arch_plan.kv_bytes_per_token * static_cast<uint64_t>(n_ctx);
  plan.scratch = arch_plan.scratch_bytes;
  plan.logits =
      static_cast<uint64_t>(opts.n_batch) * static_cast<uint64_t>(arch_plan.n_vocab) * sizeof(float);
  plan.margin = wo::device::DeviceContext::kCublasWorkspaceBytes + kHeadroomBytes;

  const auto mem = dev->mem_info();
  const uint64_t need = plan.total();
  const std::string breakdown = "weights " + std::to_string(plan.weights) + " + KV cache " +
                                std::to_string(plan.kv_cache) + " (" + std::to_string(n_ctx) +
                                " tokens) + scratch " + std::to_string(plan.scratch) + " + logits " +
                                std::to_string(plan.logits) + " + margin " + std::to_string(plan.margin);
  wo::observe::info("vram_plan", {{"model_ref", model},
                                  {"required_bytes", need},
                                  {"free_bytes", mem.free_bytes},
                                  {"budget_bytes", uint64_t{opts.vram_budget_bytes}},
                                  {"weights_bytes", plan.weights},
                                  {"kv_cache_bytes", plan.kv_cache},
                                  {"scratch_bytes", plan.scratch},
                                  {"logits_bytes", plan.logits},
                                  {"n_ctx", n_ctx},
                                  {"gpu_device", int64_t{dev->props().index}}});
  const std::string where = "GPU " + wo::device::describe(dev->props()) + ", model '" + model + "'";
  if (opts.vram_budget_bytes && need > opts.vram_budget_bytes)
    throw Error(WO_ERR_OUT_OF_MEMORY, "VRAM plan does not fit the budget: required " + std::to_string(need) +
                                          " bytes (" + mib(need) + " MiB: " + breakdown + "), budget " +
                                          std::to_string(opts.vram_budget_bytes) + " bytes, free " +
                                          std::to_string(mem.free_bytes) + " bytes on " + where);
  if (need > mem.free_bytes)
    throw Error(WO_ERR_OUT_OF_MEMORY, "VRAM plan does not fit: required " + std::to_string(need) +
                                          " bytes (" + mib(need) + " MiB: " + breakdown + "), free " +
                                          std::to_string(mem.free_bytes) + " bytes (" + mib(mem.free_bytes) +
                                          " MiB) on " + where);
  // Later allocations (sessions) stay inside the budget too.
  if (opts.vram_budget_bytes) vram.set_cap(opts.vram_budget_bytes);
}

} // namespace wo::engine
