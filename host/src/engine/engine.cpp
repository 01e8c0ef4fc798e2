// Engine lifecycle (load / unload) and its public API over Engine::Impl.
#include "engine/engine_impl.hpp"

#include "device/cuda_check.hpp"
#include "engine/load_progress.hpp"
#include "gguf/model_summary.hpp"
#include "observe/log.hpp"

#include <worker/env_switch.hpp>
#include <worker/ggml_types.hpp>
#include <worker/sdk.hpp>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <map>

namespace wo::engine {

using wo::plugins::Registry;

namespace {

std::string status_text(const char *what, wo_status st, const char *detail) {
  return std::string(what) + ": " + wo::status_name(st) +
         (detail && *detail ? std::string(": ") + detail : "");
}

} // namespace

// ---------------------------------------------------------------------------------------------
// load steps
// ---------------------------------------------------------------------------------------------

void Engine::Impl::select_plugins() {
  if (opts.plugin_dir.empty()) opts.plugin_dir = Registry::default_dir(); // messages name the real folder
  const std::string &dir = opts.plugin_dir;
  registry = std::make_unique<Registry>();
  registry->scan(dir);
  const std::string ctx = " (model '" + opts.model + "', plugin dir '" + dir + "')";
  try {
    const wo_plugin *ap = registry->select_architecture(&host);
    arch = Registry::arch(ap);
    plugins_used.push_back({"architecture", ap->name, ap->version});

    wo_tokenizer_config tcfg{};
    tcfg.struct_size = sizeof(tcfg);
    tokenizer_json_storage = opts.tokenizer_json;
    tcfg.tokenizer_json = tokenizer_json_storage.empty() ? nullptr : tokenizer_json_storage.c_str();
    const wo_plugin *tp = registry->select_tokenizer(&host, &tcfg);
    tok = Registry::tokenizer(tp);
    plugins_used.push_back({"tokenizer", tp->name, tp->version});
    wo_status st = tok->create(&host, &tcfg, &tok_inst);
    if (st != WO_OK) {
      std::string detail = tok_inst && tok->last_error ? tok->last_error(tok_inst) : "";
      if (tok_inst) tok->destroy(tok_inst);
      tok_inst = nullptr;
      throw Error(
          st, status_text((std::string("tokenizer '") + tp->name + "' create").c_str(), st, detail.c_str()));
    }
  } catch (const Error &e) {
    throw Error(e.status(), e.what() + ctx);
  }
}

// Every tensor type needs a codec (spec: a clear startup error naming the type and the tensor),
// and the codec must accept the tensor's shape.
void Engine::Impl::check_codecs() {
  for (const wo_tensor *t : weights->all()) {
    auto it = quant_by_type.find(t->ggml_type);
    if (it == quant_by_type.end()) {
      const wo_plugin *qp = registry->quant_for_type(t->ggml_type);
      const auto *ti = wo::ggml::type_info(t->ggml_type);
      const std::string type_name = ti ? ti->name : "unknown";
      if (!qp)
        throw Error(WO_ERR_UNSUPPORTED, "model '" + opts.model + "': tensor '" + t->name + "' has type " +
                                            type_name + " (" + std::to_string(t->ggml_type) +
                                            "), and no quant plugin in '" + opts.plugin_dir + "' serves it");
      QuantRoute r{Registry::quant(qp), qp->name,
                   WO_HAS_FIELD(wo_plugin, qp->struct_size, abi_minor) ? qp->abi_minor : 0u};
      it = quant_by_type.emplace(t->ggml_type, r).first;
      if (std::none_of(plugins_used.begin(), plugins_used.end(),
                       [&](const PluginUse &u) { return u.kind == "quant" && u.name == qp->name; }))
        plugins_used.push_back({"quant", qp->name, qp->version});
    }
    const QuantRoute &q = it->second;
    if (q.vt->check_tensor) {
      wo_status st = q.vt->check_tensor(t);
      if (st != WO_OK) {
        const char *m = q.vt->last_error ? q.vt->last_error() : nullptr;
        throw Error(st, "model '" + opts.model + "': quant plugin '" + q.plugin + "' cannot serve tensor '" +
                            t->name + "': " + wo::status_name(st) + (m && *m ? std::string(": ") + m : ""));
      }
    }
  }
}

void Engine::Impl::upload_weights() {
  LoadProgress progress(opts.model, weights->file_bytes());
  progress.start();
  wo::device::ChunkedUploader up(dev->stream(), opts.upload_chunk_bytes);
  weights->upload(vram, up, [&](uint64_t done) { progress.advance(done); });
  progress.finish();
}

// The small F32 tensors (norm weights, biases: WeightStore places them first in the arena) marked
// persisting in L2 for every kernel of the stream, captured decode graphs included. Why: each is read
// once per token, by the fused projections' early copies, and the 0.4-2.6 GB of weights streamed
// between two reads evict it, so the copy that the staging waits on was a DRAM round trip.
// WORKER_L2_PIN=0: no window (A/B). A device or driver that refuses keeps the default policy.
void Engine::Impl::pin_small_weights() {
  if (wo::env_switched_off("WORKER_L2_PIN") || weights->pinned_bytes() == 0) return;
  const int d = dev->props().index;
  int max_persist = 0, max_window = 0;
  if (cudaDeviceGetAttribute(&max_persist, cudaDevAttrMaxPersistingL2CacheSize, d) != cudaSuccess ||
      cudaDeviceGetAttribute(&max_window, cudaDevAttrMaxAccessPolicyWindowSize, d) != cudaSuccess ||
      max_persist <= 0 || max_window <= 0) {
    (void)cudaGetLastError();
    return;
  }
  const size_t bytes = std::min<size_t>(weights->pinned_bytes(), static_cast<size_t>(max_window));
  const size_t reserve = std::min<size_t>(bytes, static_cast<size_t>(max_persist));
  cudaStreamAttrValue v{};
  v.accessPolicyWindow.base_ptr = const_cast<void *>(weights->arena());
  v.accessPolicyWindow.num_bytes = bytes;
  v.accessPolicyWindow.hitRatio = std::min(1.0f, static_cast<float>(reserve) / static_cast<float>(bytes));
  v.accessPolicyWindow.hitProp = cudaAccessPropertyPersisting;
  v.accessPolicyWindow.missProp = cudaAccessPropertyStreaming;
  const cudaError_t e1 = cudaDeviceSetLimit(cudaLimitPersistingL2CacheSize, reserve);
  const cudaError_t e2 =
      e1 == cudaSuccess ? cudaStreamSetAttribute(dev->stream(), cudaStreamAttributeAccessPolicyWindow, &v)
                        : e1;
  if (e2 != cudaSuccess) {
    (void)cudaGetLastError();
    wo::observe::warn("l2_pin_unavailable", {{"reason", cudaGetErrorString(e2)}, {"bytes", bytes}});
    return;
  }
  wo::observe::info("l2_pin", {{"tensors", weights->pinned_tensors()},
                               {"bytes", bytes},
                               {"reserved", reserve},
                               {"max_persisting", max_persist},
                               {"max_window", max_window}});
}

void Engine::Impl::create_instance() {
  wo_arch_config cfg{};
  cfg.struct_size = sizeof(cfg);
  cfg.n_ctx = n_ctx;
  cfg.n_batch = opts.n_batch;
  cfg.flags = opts.arch_flags;
  wo_status st = arch->create(&host, &cfg, &arch_inst);
  if (st != WO_OK) {
    std::string detail = arch_inst ? arch_error() : last_codec_error;
    if (arch_inst) arch->destroy(arch_inst);
    arch_inst = nullptr;
    throw Error(st, "model '" + opts.model + "': architecture '" + plugins_used.front().name +
                        "' create: " + wo::status_name(st) + (detail.empty() ? "" : ": " + detail));
  }
  void *p = nullptr;
  st = vram.alloc(plan.logits, WO_VRAM_SCRATCH, &p, "logits");
  if (st != WO_OK) throw Error(st, "model '" + opts.model + "': logits buffer: " + vram.last_error());
  logits = static_cast<float *>(p);
  if (opts.cuda_graphs && WO_HAS_FIELD(wo_arch_v1, arch->struct_size, decode_step) && arch->decode_step) {
    st = vram.alloc(sizeof(int32_t), WO_VRAM_SCRATCH, &p, "decode step position");
    if (st != WO_OK) throw Error(st, "model '" + opts.model + "': decode position: " + vram.last_error());
    d_step_pos = static_cast<int32_t *>(p);
    graphs = std::make_unique<DecodeGraphs>(dev->stream());
  }
}

bool Engine::Impl::decode_graph(const int32_t *id_dev, int64_t pos) {
  if (!graphs_ok) return false; // false without graphs too (begin_session)
  std::string why;
  DecodeGraphs::Made made;
  const bool ok = graphs->run(
      id_dev, pos, session_ctx, d_step_pos,
      [&](const int32_t *token, const int32_t *d_pos, int64_t bound) {
        return arch->decode_step(arch_inst, token, d_pos, bound, logits) == WO_OK;
      },
      why, &made);
  if (made.made)
    wo::observe::event(wo::observe::Level::debug, "decode_graph_made",
                       {{"bound", made.bound},
                        {"pos", pos},
                        {"updated", made.updated},
                        {"capture_ms", made.capture_ms},
                        {"build_ms", made.build_ms}});
  if (!ok) {
    graphs_ok = false; // for the rest of this session
    const std::string detail = arch_error();
    wo::observe::warn("decode_graph_unavailable",
                      {{"reason", why + (detail.empty() ? "" : ": " + detail)}, {"pos", pos}});
  }
  return ok;
}

void Engine::Impl::start_residency_monitor() {
  resident = weights->resident_blocks();
  const int device = dev->props().index;
  auto r = wo::device::check_residency(resident, device);
  if (!r.ok)
    throw Error(WO_ERR_CUDA, "model '" + opts.model + "': residency check after upload: " + r.failure);
  wo::observe::info("residency_check", {{"ok", true}, {"checked", r.checked}});
  {
    std::lock_guard<std::mutex> lock(residency_mu);
    last_residency = {r.ok, r.checked, r.failure, 0};
  }
  if (opts.residency_interval_s <= 0) return;
  monitor = std::make_unique<wo::device::ResidencyMonitor>(
      std::chrono::seconds(opts.residency_interval_s),
      [this, device] { return wo::device::check_residency(resident, device); },
      [this](const wo::device::ResidencyResult &res) {
        {
          std::lock_guard<std::mutex> lock(residency_mu);
          last_residency = {res.ok, res.checked, res.failure, last_residency.periodic_runs + 1};
        }
        if (!res.ok)
          wo::observe::error("residency_check_failed", {{"checked", res.checked}, {"failure", res.failure}});
      });
}

std::string Engine::Impl::arch_error() const {
  std::string s;
  if (arch && arch_inst && arch->last_error) {
    const char *m = arch->last_error(arch_inst);
    if (m) s = m;
  }
  if (!last_codec_error.empty())
    s += (s.empty() ? "" : " (codec: ") + last_codec_error + (s.empty() ? "" : ")");
  return s;
}

void Engine::Impl::load(const EngineOptions &o) {
  if (ever_loaded)
    throw Error(WO_ERR_INVALID_ARGUMENT, "engine already loaded model '" + opts.model +
                                             "': one model per engine lifetime (M0-W-1001), refusing '" +
                                             o.model + "'");
  ever_loaded = true;
  opts = o;
  // Debugging switches (issue 11): launch every kernel one by one; run the plain, unfused kernels.
  const auto env_is = [](const char *name, const char *value) {
    const char *v = std::getenv(name);
    return v && std::string(v) == value;
  };
  if (env_is("WORKER_CUDA_GRAPHS", "0")) opts.cuda_graphs = false;
  if (env_is("WORKER_LINEAR_MULTI", "0")) opts.linear_multi = false;
  if (env_is("WORKER_LINEAR_SWIGLU", "0")) opts.linear_swiglu = false;
  if (env_is("WORKER_LINEAR_FUSED", "0")) opts.linear_fused = false;
  if (env_is("WORKER_MIXED_STACK", "0")) opts.mixed_stack = false;
  if (env_is("WORKER_LINEAR_GLU", "1")) opts.linear_glu = true;
  if (env_is("WORKER_LINEAR_ID_GLU", "0")) opts.linear_id_glu = false;
  if (env_is("WORKER_ARCH_UNFUSED", "1")) opts.arch_flags |= WO_ARCH_UNFUSED;
  if (opts.n_batch <= 0)
    throw Error(WO_ERR_INVALID_ARGUMENT, "n_batch: expected > 0, found " + std::to_string(opts.n_batch));
  if (opts.upload_chunk_bytes == 0)
    throw Error(WO_ERR_INVALID_ARGUMENT, "upload_chunk_bytes: expected > 0, found 0");
  const auto t0 = std::chrono::steady_clock::now();
  try {
    dev = std::make_unique<wo::device::DeviceContext>(opts.gpu_device, vram);
    wo::gguf::OpenOptions oo;
    oo.model_root = opts.model_root;
    file = wo::gguf::File::open(opts.model, oo);
    weights = std::make_unique<WeightStore>(*file);
    fill_host();
    select_plugins();
    check_codecs();
    compute_plan(); // throws before any allocation when the model does not fit
    dev->create_cublas();
    host.cublas_handle = dev->cublas();
    upload_weights();
    pin_small_weights();
    create_instance();
    start_residency_monitor();
  } catch (...) {
    unload();
    throw;
  }
  info = ModelInfo{};
  info.model_ref = opts.model;
  info.architecture = file->architecture();
  info.quant_kind = wo::gguf::quant_kind(*file);
  info.tokenizer_kind = tok->kind ? tok->kind(tok_inst) : "";
  info.vocab_size = arch_plan.n_vocab;
  info.context_length = arch_plan.n_ctx_train;
  info.n_ctx = n_ctx;
  info.plugins = plugins_used;
  info.vram_weights = plan.weights;
  info.vram_kv = plan.kv_cache;
  info.vram_scratch = plan.scratch + plan.logits + plan.margin;
  info.vram_total = plan.total();
  info.sm_major = dev->props().sm_major;
  info.sm_minor = dev->props().sm_minor;
  info.cuda_runtime_version = dev->props().runtime_version;
  info.gpu_device = dev->props().index;
  info.gpu_name = dev->props().name;
  is_loaded = true;
  const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  wo::observe::info("model_loaded", {{"model_ref", opts.model},
                                     {"architecture", info.architecture},
                                     {"quant_kind", info.quant_kind},
                                     {"vram_bytes", vram.stats().total_current},
                                     {"n_ctx", n_ctx},
                                     {"load_ms", ms}});
}

void Engine::Impl::unload() {
  monitor.reset();
  if (dev) cudaStreamSynchronize(dev->stream());
  graphs.reset(); // captures hold the session's addresses
  if (d_step_pos) vram.free(d_step_pos);
  d_step_pos = nullptr;
  if (session_open && arch && arch_inst) arch->session_end(arch_inst);
  session_open = false;
  session_ctx = 0;
  if (arch && arch_inst) arch->destroy(arch_inst);
  arch_inst = nullptr;
  if (tok && tok_inst) tok->destroy(tok_inst);
  tok_inst = nullptr;
  if (logits) vram.free(logits);
  logits = nullptr;
  logits_rows = 0;
  if (scratch) vram.free(scratch);
  scratch = nullptr;
  scratch_bytes = 0;
  if (weights) weights->release(vram);
  resident.clear();
  dev.reset();     // cuBLAS handle + workspace, stream
  vram.free_all(); // anything a plugin forgot
  weights.reset();
  file.reset();
  quant_by_type.clear();
  arch = nullptr;
  tok = nullptr;
  registry.reset(); // unloads the plugin libraries last: nothing of theirs runs after this
  is_loaded = false;
}

Engine::Impl::~Impl() { unload(); }

void Engine::Impl::require_loaded(const char *what) const {
  if (!is_loaded) throw Error(WO_ERR_INVALID_ARGUMENT, std::string(what) + ": no model is loaded");
}

// ---------------------------------------------------------------------------------------------
// public API
// ---------------------------------------------------------------------------------------------

Engine::Engine() : impl_(std::make_unique<Impl>()) {}
Engine::~Engine() = default;

void Engine::load(const EngineOptions &opts) { impl_->load(opts); }
bool Engine::loaded() const { return impl_->is_loaded; }
void Engine::unload() { impl_->unload(); }

ModelInfo Engine::info() const {
  impl_->require_loaded("info");
  return impl_->info;
}
const VramPlan &Engine::plan() const { return impl_->plan; }
wo::device::VramStats Engine::vram() const { return impl_->vram.stats(); }

ResidencyReport Engine::check_residency() const {
  impl_->require_loaded("check_residency");
  auto r = wo::device::check_residency(impl_->resident, impl_->dev->props().index);
  return {r.ok, r.checked, r.failure, 0};
}

ResidencyReport Engine::last_residency() const {
  std::lock_guard<std::mutex> lock(impl_->residency_mu);
  return impl_->last_residency;
}

std::vector<int32_t> Engine::tokenize(const std::string &text, bool add_special, bool parse_special) const {
  impl_->require_loaded("tokenize");
  const auto &e = *impl_;
  uint32_t flags = (add_special ? WO_TOK_ADD_SPECIAL : 0u) | (parse_special ? WO_TOK_PARSE_SPECIAL : 0u);
  std::vector<int32_t> ids(text.size() + 8);
  for (int attempt = 0; attempt < 2; ++attempt) {
    size_t n = 0;
    wo_status st = e.tok->encode(e.tok_inst, text.data(), text.size(), flags, ids.data(), ids.size(), &n);
    if (st == WO_OK) {
      ids.resize(n);
      return ids;
    }
    if (st != WO_ERR_BUFFER_TOO_SMALL || n <= ids.size())
      throw Error(st, status_text("tokenize", st, e.tok->last_error ? e.tok->last_error(e.tok_inst) : ""));
    ids.resize(n);
  }
  throw Error(WO_ERR_INTERNAL, "tokenize: the tokenizer asked for a larger buffer twice");
}

std::string Engine::token_bytes(int32_t id) const {
  impl_->require_loaded("token_bytes");
  const auto &e = *impl_;
  wo_str s{};
  wo_status st = e.tok->token_bytes(e.tok_inst, id, &s);
  if (st != WO_OK)
    throw Error(st, status_text(("token_bytes(" + std::to_string(id) + ")").c_str(), st,
                                e.tok->last_error ? e.tok->last_error(e.tok_inst) : ""));
  return std::string(s.data, s.len);
}

bool Engine::is_eog(int32_t id) const {
  impl_->require_loaded("is_eog");
  return impl_->tok->is_eog(impl_->tok_inst, id) != 0;
}

wo_special_ids Engine::special_ids() const {
  impl_->require_loaded("special_ids");
  wo_special_ids s{};
  s.struct_size = sizeof(s);
  s.bos = s.eos = s.eot = s.pad = s.unk = -1;
  wo::check(impl_->tok->special_ids(impl_->tok_inst, &s), "special_ids");
  return s;
}

int64_t Engine::vocab_size() const {
  impl_->require_loaded("vocab_size");
  return impl_->arch_plan.n_vocab;
}

void Engine::begin_session(int64_t n_ctx) {
  auto &e = *impl_;
  e.require_loaded("begin_session");
  if (e.session_open) end_session();
  const int64_t want = n_ctx > 0 ? n_ctx : e.n_ctx;
  if (want > e.n_ctx)
    throw Error(WO_ERR_INVALID_ARGUMENT, "begin_session: n_ctx " + std::to_string(want) +
                                             " exceeds the planned capacity of " + std::to_string(e.n_ctx) +
                                             " tokens");
  e.last_codec_error.clear();
  wo_status st = e.arch->session_begin(e.arch_inst, want);
  if (st != WO_OK) {
    const std::string detail = e.arch_error();
    e.arch->session_end(e.arch_inst); // release whatever part was allocated
    throw Error(st, "begin_session(n_ctx " + std::to_string(want) + "): " + wo::status_name(st) +
                        (detail.empty() ? "" : ": " + detail));
  }
  e.session_open = true;
  e.session_ctx = want;
  e.graphs_ok = e.graphs != nullptr && !e.opts.trace; // the routing trace reads ids on the host
}

void Engine::end_session() {
  auto &e = *impl_;
  if (!e.session_open) return;
  cudaStreamSynchronize(e.dev->stream());
  // The captures hold this session's KV cache and scratch: none replays again, but the executables
  // stay for the next session's captures to update (WORKER_GRAPH_REUSE=0: destroyed, as before).
  static const bool reuse = !wo::env_switched_off("WORKER_GRAPH_REUSE");
  if (e.graphs && reuse) e.graphs->end_session();
  if (e.graphs && !reuse) e.graphs->clear();
  e.arch->session_end(e.arch_inst);
  e.session_open = false;
  e.session_ctx = 0;
}

bool Engine::in_session() const { return impl_->session_open; }
int64_t Engine::session_ctx() const { return impl_->session_ctx; }

void Engine::forward(const int32_t *ids, int64_t n, int64_t pos, bool all_logits, bool ids_on_device) {
  auto &e = *impl_;
  e.require_loaded("forward");
  const std::string where = "forward(n " + std::to_string(n) + ", pos " + std::to_string(pos) + ")";
  if (!e.session_open)
    throw Error(WO_ERR_INVALID_ARGUMENT, where + ": no session (call begin_session first)");
  if (n <= 0 || !ids) throw Error(WO_ERR_INVALID_ARGUMENT, where + ": expected n > 0 token ids");
  if (pos < 0 || pos + n > e.session_ctx)
    throw Error(WO_ERR_INVALID_ARGUMENT,
                where + ": positions " + std::to_string(pos) + ".." + std::to_string(pos + n - 1) +
                    " outside the session's context of " + std::to_string(e.session_ctx) + " tokens");
  if (all_logits && n > e.opts.n_batch)
    throw Error(WO_ERR_INVALID_ARGUMENT,
                where + ": all_logits needs n <= n_batch (" + std::to_string(e.opts.n_batch) + ")");
  if (!ids_on_device) {
    for (int64_t i = 0; i < n; ++i)
      if (ids[i] < 0 || ids[i] >= e.arch_plan.n_vocab)
        throw Error(WO_ERR_INVALID_ARGUMENT, where + ": token id " + std::to_string(ids[i]) + " at index " +
                                                 std::to_string(i) + " outside 0.." +
                                                 std::to_string(e.arch_plan.n_vocab - 1));
  }
  e.last_codec_error.clear();
  if (n == 1 && ids_on_device && !all_logits && e.decode_graph(ids, pos)) {
    e.logits_rows = 1;
    return;
  }
  for (int64_t done = 0; done < n;) {
    const int64_t chunk = std::min(n - done, e.opts.n_batch);
    const uint32_t flags =
        (all_logits ? WO_FWD_LOGITS_ALL : 0u) | (ids_on_device ? WO_FWD_TOKENS_ON_DEVICE : 0u);
    wo_status st = e.arch->forward(e.arch_inst, ids + done, chunk, pos + done, e.logits, flags);
    if (st != WO_OK) {
      e.logits_rows = 0;
      const std::string detail = e.arch_error();
      throw Error(st, where + ": architecture forward of tokens " + std::to_string(done) + ".." +
                          std::to_string(done + chunk - 1) + ": " + wo::status_name(st) +
                          (detail.empty() ? "" : ": " + detail));
    }
    done += chunk;
    e.logits_rows = all_logits ? chunk : 1;
  }
}

int64_t Engine::logits_rows() const { return impl_->logits_rows; }
size_t Engine::decode_graphs() const { return impl_->graphs ? impl_->graphs->captures() : 0; }
size_t Engine::decode_graph_updates() const { return impl_->graphs ? impl_->graphs->updates() : 0; }
const float *Engine::logits_device() const { return impl_->logits; }

void Engine::dump_logits(const std::string &path) const {
  const std::vector<float> l = logits_host();
  std::ofstream f(path, std::ios::binary);
  f.write(reinterpret_cast<const char *>(l.data()), static_cast<std::streamsize>(l.size() * sizeof(float)));
  if (!f)
    throw Error(WO_ERR_IO, "dump_logits: cannot write " + std::to_string(l.size() * sizeof(float)) +
                               " bytes to '" + path + "'");
}

std::vector<float> Engine::logits_host(int64_t row) const {
  const auto &e = *impl_;
  e.require_loaded("logits_host");
  if (e.logits_rows <= 0) throw Error(WO_ERR_INVALID_ARGUMENT, "logits_host: no forward has produced logits");
  if (row < 0) row = e.logits_rows - 1;
  if (row >= e.logits_rows)
    throw Error(WO_ERR_INVALID_ARGUMENT, "logits_host: row " + std::to_string(row) + " outside 0.." +
                                             std::to_string(e.logits_rows - 1));
  const int64_t nv = e.arch_plan.n_vocab;
  std::vector<float> out(static_cast<size_t>(nv));
  wo::device::cuda_check(cudaMemcpyAsync(out.data(), e.logits + row * nv, out.size() * sizeof(float),
                                         cudaMemcpyDeviceToHost, e.dev->stream()),
                         "logits_host: cudaMemcpyAsync");
  synchronize();
  return out;
}

std::vector<float> Engine::all_logits_host() const {
  const auto &e = *impl_;
  e.require_loaded("all_logits_host");
  std::vector<float> out(static_cast<size_t>(e.logits_rows * e.arch_plan.n_vocab));
  if (!out.empty())
    wo::device::cuda_check(cudaMemcpyAsync(out.data(), e.logits, out.size() * sizeof(float),
                                           cudaMemcpyDeviceToHost, e.dev->stream()),
                           "all_logits_host: cudaMemcpyAsync");
  synchronize();
  return out;
}

cudaStream_t Engine::stream() const { return impl_->dev ? impl_->dev->stream() : nullptr; }

void Engine::synchronize() const {
  impl_->require_loaded("synchronize");
  impl_->dev->synchronize();
}

const wo_host *Engine::host() const { return &impl_->host; }

const std::map<std::string, std::vector<std::vector<uint8_t>>> &Engine::traces() const {
  return impl_->traces;
}

void Engine::clear_traces() {
  std::lock_guard<std::mutex> lock(impl_->trace_mu);
  impl_->traces.clear();
}

} // namespace wo::engine
