// The worker's Prometheus series, labelled with model and quant_kind, over observe::Registry.
#pragma once

#include "observe/metrics.hpp"

#include <chrono>
#include <functional>
#include <string>

namespace wo::http {

class WorkerMetrics {
public:
  // vram_bytes is read at scrape time from the backend's cached facts.
  WorkerMetrics(std::string model, std::string quant_kind, std::function<double()> vram_bytes);

  // One /execute outcome: "success" or the lowercased error code (invalid_request, worker_busy ...).
  void request(const std::string &outcome);
  void job(uint32_t tokens_in, uint32_t tokens_out, double duration_ms, double ttft_ms /* <0: no token */);

  std::string render() const { return registry_.render(); }
  observe::Registry &registry() { return registry_; }

private:
  observe::Labels labels(const char *key = nullptr, const std::string &value = {}) const;

  std::string model_, quant_kind_;
  std::chrono::steady_clock::time_point started_ = std::chrono::steady_clock::now();
  observe::Registry registry_;
};

} // namespace wo::http
