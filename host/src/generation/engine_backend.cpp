#include "generation/engine_backend.hpp"

#include "generation/stop_matcher.hpp"
#include "observe/log.hpp"
#include "plugins/registry.hpp"

#include <worker/env_switch.hpp>
#include <worker/sdk.hpp>
#include <worker/utf8_stream.hpp>

#include <cstdlib>
#include <random>
#include <string>

namespace wo::generation {
namespace {

using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point t) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t).count();
}

wo::http::JobResult failure(const char *code, const std::string &msg, bool retriable) {
  wo::http::JobResult r;
  r.ok = false;
  r.error_code = code;
  r.error_message = msg;
  r.retriable = retriable;
  return r;
}

} // namespace

EngineBackend::EngineBackend(std::unique_ptr<wo::engine::Engine> engine) : engine_(std::move(engine)) {
  const wo_host *h = engine_->host();
  sampler_ = std::make_unique<wo::sampling::GpuSampler>(
      engine_->vocab_size(), engine_->stream(),
      [h](size_t bytes) -> void * {
        void *p = nullptr;
        return h->vram_alloc(h->ctx, bytes, WO_VRAM_SCRATCH, &p) == WO_OK ? p : nullptr;
      },
      [h](void *p) { h->vram_free(h->ctx, p); });
  // One session for the worker's lifetime, at the planned capacity: the KV cache and scratch are
  // reserved at startup (a model that cannot hold its context fails here, with the numbers, not
  // in the middle of a job), jobs allocate nothing, and the decode graphs captured by the first
  // job serve the next ones. Each job restarts the sequence at position 0.
  engine_->begin_session();
  run_ahead_ = !wo::env_switched_off("WORKER_RUN_AHEAD");
  if (const char *d = std::getenv("WORKER_DEBUG_STEP_LOGITS")) {
    const std::string spec = d;
    const size_t colon = spec.find(':');
    char *end = nullptr;
    const long long step = colon == std::string::npos ? -1 : std::strtoll(spec.c_str(), &end, 10);
    if (colon == std::string::npos || end != spec.c_str() + colon || step < 0 || colon + 1 == spec.size())
      throw wo::Error(WO_ERR_INVALID_ARGUMENT,
                      "WORKER_DEBUG_STEP_LOGITS: expected STEP:FILE (e.g. 20:/tmp/step20.f32), found '" +
                          spec + "'");
    debug_step_ = step;
    debug_step_file_ = spec.substr(colon + 1);
    wo::observe::warn("debug_step_logits", {{"step", debug_step_}, {"file", debug_step_file_}});
  }

  const auto info = engine_->info();
  auto &f = facts_;
  f.model = info.model_ref;
  f.quant_kind = info.quant_kind;
  f.tokenizer_kind = info.tokenizer_kind;
  f.vocab_size = static_cast<uint32_t>(info.vocab_size);
  f.context_length = static_cast<uint32_t>(info.n_ctx);
  f.sm = std::to_string(info.sm_major) + "." + std::to_string(info.sm_minor);
  f.cuda_runtime_version = std::to_string(info.cuda_runtime_version / 1000) + "." +
                           std::to_string(info.cuda_runtime_version % 1000 / 10);
  for (const auto &p : info.plugins)
    f.plugins.push_back({p.name, p.kind, p.version});
  const auto residency = engine_->check_residency();
  f.resident = residency.ok;
  f.healthy = residency.ok;
  f.vram_bytes_used = engine_->vram().total_current;
}

EngineBackend::~EngineBackend() { sampler_.reset(); }

wo::http::ModelFacts EngineBackend::facts() const {
  std::lock_guard<std::mutex> lk(facts_mu_);
  return facts_;
}

uint32_t EngineBackend::count_prompt_tokens(const std::string &prompt) {
  std::lock_guard<std::mutex> lk(tokenizer_mu_);
  try {
    return static_cast<uint32_t>(engine_->tokenize(prompt, true, true).size());
  } catch (const std::exception &e) {
    throw wo::http::BackendError("INVALID_REQUEST",
                                 std::string("prompt could not be tokenized: ") + e.what());
  }
}

wo::http::JobResult EngineBackend::run(const wo::http::JobRequest &req, wo::http::TokenSink &sink,
                                       const std::atomic<bool> &cancel, Clock::time_point deadline) {
  wo::http::JobResult r = run_job(req, sink, cancel, deadline);
  // The step run_job queued ahead of a token that ended the job (run-ahead) finishes here, so
  // that no work of this job outlives it. Its results are not used; a CUDA error it met marks the
  // worker unhealthy as any other would.
  try {
    engine_->synchronize();
  } catch (const wo::Error &e) {
    std::lock_guard<std::mutex> lk(facts_mu_);
    if (e.status() == WO_ERR_CUDA) facts_.healthy = false;
  }
  // /health reports what stays allocated between jobs: weights, the reserved session, scratch.
  std::lock_guard<std::mutex> lk(facts_mu_);
  facts_.vram_bytes_used = engine_->vram().total_current;
  return r;
}

wo::http::JobResult EngineBackend::run_job(const wo::http::JobRequest &req, wo::http::TokenSink &sink,
                                           const std::atomic<bool> &cancel, Clock::time_point deadline) {
  using wo::http::job_error::CANCELLED;
  using wo::http::job_error::INFERENCE_TIMEOUT;
  const auto t_start = Clock::now();
  std::vector<int32_t> prompt;
  {
    std::lock_guard<std::mutex> lk(tokenizer_mu_);
    prompt = engine_->tokenize(req.prompt, true, true);
  }
  if (prompt.empty()) return failure("INVALID_REQUEST", "prompt encodes to no tokens", false);
  const int64_t n_ctx_max = engine_->info().n_ctx;
  const int64_t n_in = static_cast<int64_t>(prompt.size());
  if (n_in >= n_ctx_max)
    return failure("INVALID_REQUEST",
                   "prompt of " + std::to_string(n_in) + " tokens does not fit the context of " +
                       std::to_string(n_ctx_max) + " tokens",
                   false);
  const int64_t budget = std::min<int64_t>(req.max_tokens, n_ctx_max - n_in);

  const uint64_t seed = req.seed_given
                            ? req.seed
                            : (static_cast<uint64_t>(std::random_device{}()) << 32) ^ std::random_device{}();
  std::mt19937_64 rng(seed);
  wo::sampling::SamplingParams sp;
  sp.temperature = req.temperature;
  sp.top_k = static_cast<int32_t>(req.top_k);
  sp.top_p = req.top_p;
  sp.min_p = req.min_p;
  sp.repetition_penalty = req.repetition_penalty;

  wo::http::JobResult result;
  result.tokens_in = static_cast<uint32_t>(n_in);
  if (!sink.started(seed)) return failure(CANCELLED, "client disconnected", false);

  wo::Utf8Assembler utf8;
  StopMatcher stops(req.stop);
  uint32_t emitted = 0;
  auto emit = [&](const std::string &text, uint32_t index) {
    if (text.empty()) return true;
    ++emitted;
    return sink.token(text, index);
  };

  try {
    sampler_->reset();
    engine_->forward(prompt.data(), n_in, 0, false);
    // Token i from the logits last queued: its draw, the sampler's kernels and the id's publication
    // to the host, queued (the debug dump waits for those logits first).
    const auto queue_token = [&](int64_t i) {
      if (i == debug_step_) engine_->dump_logits(debug_step_file_);
      const double u = sp.greedy() ? 0.0 : wo::sampling::uniform_from_bits(rng());
      return sampler_->sample_request(engine_->logits_device(), sp, u);
    };
    // The step that reads token i (the device's copy) and samples token i + 1.
    const auto queue_step = [&](int64_t i) {
      engine_->forward(sampler_->device_id(), 1, n_in + i, false, true);
      return queue_token(i + 1);
    };
    // Run-ahead: from token 1 on, that step is queued before the host waits for token i, so the
    // host's wait, its handling of the token and the step's launches overlap the GPU's work
    // instead of idling it between steps (H100 decode: Qwen2.5-0.5B +0.8-1.3%, GPT-OSS +0.8% at
    // depth 0, Phi-3 even; served over HTTP, Qwen's inter-token latency -2.6%). Not before token
    // 0: the first step's launch (and a graph capture at a new bucket) would delay the first token.
    // A job that ends on end-of-generation, a stop sequence or a cancel leaves that one step
    // behind; run() waits for it before the job ends. The tokens are the same: the step reads the
    // device's id, and the draws are made in the same order.
    int ticket = queue_token(0);
    Clock::time_point t_first{};
    for (int64_t i = 0; i < budget; ++i) {
      if (cancel.load()) return failure(CANCELLED, "job cancelled", false);
      if (Clock::now() >= deadline) return failure(INFERENCE_TIMEOUT, "inference deadline passed", true);
      const bool more = i + 1 < budget, ahead = run_ahead_ && i > 0;
      const int next = ahead && more ? queue_step(i) : -1;
      const int32_t id = sampler_->wait_id(ticket);
      ticket = next;
      if (i == 0) {
        t_first = Clock::now();
        result.time_to_first_token_ms = ms_since(t_start);
      }
      result.tokens_out = static_cast<uint32_t>(i + 1);
      if (engine_->is_eog(id)) {
        result.tokens_out = static_cast<uint32_t>(i); // the end-of-generation token is not output
        result.stop_reason = wo::http::StopReason::eos;
        break;
      }
      auto step = stops.feed(utf8.push(engine_->token_bytes(id)));
      if (!emit(step.emit, static_cast<uint32_t>(i))) return failure(CANCELLED, "client disconnected", false);
      if (step.stopped) {
        result.stop_reason = wo::http::StopReason::stop_sequence;
        result.ok = true;
        result.decode_time_ms = ms_since(t_first);
        return result;
      }
      result.stop_reason = wo::http::StopReason::max_tokens;
      if (!ahead && more) ticket = queue_step(i);
    }
    // End without a stop match: what the assembler and the matcher held back is text too.
    auto tail = stops.feed(utf8.flush());
    std::string rest = tail.emit + (tail.stopped ? std::string() : stops.finish());
    if (tail.stopped) result.stop_reason = wo::http::StopReason::stop_sequence;
    if (!emit(rest, result.tokens_out ? result.tokens_out - 1 : 0))
      return failure(CANCELLED, "client disconnected", false);
    result.ok = true;
    result.decode_time_ms = t_first == Clock::time_point{} ? 0.0 : ms_since(t_first);
    return result;
  } catch (const wo::Error &e) {
    if (e.status() == WO_ERR_OUT_OF_MEMORY) return failure(wo::http::job_error::VRAM_OOM, e.what(), true);
    if (e.status() == WO_ERR_CUDA) {
      std::lock_guard<std::mutex> lk(facts_mu_);
      facts_.healthy = false;
      return failure(wo::http::job_error::CUDA_ERROR, e.what(), false);
    }
    return failure(wo::http::job_error::INTERNAL, e.what(), false);
  } catch (const std::exception &e) {
    return failure(wo::http::job_error::INTERNAL, e.what(), false);
  }
}

} // namespace wo::generation

namespace wo::http {

std::unique_ptr<Backend> make_engine_backend(const ServeOptions &o) {
  wo::engine::EngineOptions eo;
  eo.model = o.model_path;
  eo.plugin_dir = o.plugin_dir.empty() ? wo::plugins::Registry::default_dir() : o.plugin_dir;
  eo.gpu_device = o.gpu_device;
  eo.kv_cache_mb = o.kv_cache_size_mb;
  eo.max_tokens_in = o.max_tokens_in;
  eo.max_tokens_out = o.max_tokens_out;
  auto engine = std::make_unique<wo::engine::Engine>();
  engine->load(eo);
  return std::make_unique<wo::generation::EngineBackend>(std::move(engine));
}

} // namespace wo::http
