// The real backend behind the HTTP server: the engine (one model on the GPU), the GPU sampler,
// UTF-8 assembly and stop sequences. One job at a time, as the server guarantees.
#pragma once

#include "engine/engine.hpp"
#include "http/backend.hpp"
#include "sampling/gpu_sampler.hpp"

#include <memory>
#include <mutex>

namespace wo::generation {

class EngineBackend : public wo::http::Backend {
public:
  // Takes a loaded engine.
  explicit EngineBackend(std::unique_ptr<wo::engine::Engine> engine);
  ~EngineBackend() override;

  wo::http::ModelFacts facts() const override;
  uint32_t count_prompt_tokens(const std::string &prompt) override;
  wo::http::JobResult run(const wo::http::JobRequest &request, wo::http::TokenSink &sink,
                          const std::atomic<bool> &cancel,
                          std::chrono::steady_clock::time_point deadline) override;

  wo::engine::Engine &engine() { return *engine_; }

private:
  wo::http::JobResult run_job(const wo::http::JobRequest &request, wo::http::TokenSink &sink,
                              const std::atomic<bool> &cancel,
                              std::chrono::steady_clock::time_point deadline);

  std::unique_ptr<wo::engine::Engine> engine_;
  std::unique_ptr<wo::sampling::GpuSampler> sampler_;
  mutable std::mutex facts_mu_;
  wo::http::ModelFacts facts_;
  std::mutex tokenizer_mu_;
  // WORKER_DEBUG_STEP_LOGITS=N:FILE (debugging): every job writes the logits its generated token N
  // is chosen from to FILE, as `worker-orcd run --step N --step-logits-out FILE` does.
  int64_t debug_step_ = -1;
  std::string debug_step_file_;
  // WORKER_RUN_AHEAD=0: queue each decode step after the host has handled the token before it
  // (the order before run-ahead; A/B and debugging). The tokens are the same either way.
  bool run_ahead_ = true;
};

} // namespace wo::generation
