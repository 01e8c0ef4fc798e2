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
                          const std::atomic<bool> &cancel, std::chrono::steady_clock::time_point deadline) override;

  wo::engine::Engine &engine() { return *engine_; }

private:
  wo::http::JobResult run_job(const wo::http::JobRequest &request, wo::http::TokenSink &sink,
                              const std::atomic<bool> &cancel, std::chrono::steady_clock::time_point deadline);

  std::unique_ptr<wo::engine::Engine> engine_;
  std::unique_ptr<wo::sampling::GpuSampler> sampler_;
  mutable std::mutex facts_mu_;
  wo::http::ModelFacts facts_;
  std::mutex tokenizer_mu_;
};

} // namespace wo::generation
