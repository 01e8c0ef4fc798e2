#include "http/worker_metrics.hpp"

namespace wo::http {
namespace {
const std::vector<double> kDurationBucketsMs = {10,   50,    100,   250,   500,    1000,  2500,
                                                5000, 10000, 30000, 60000, 120000, 300000};
const std::vector<double> kTtftBucketsMs = {5, 10, 25, 50, 100, 250, 500, 1000, 2500, 5000, 10000};
} // namespace

WorkerMetrics::WorkerMetrics(std::string model, std::string quant_kind, std::function<double()> vram_bytes)
    : model_(std::move(model)), quant_kind_(std::move(quant_kind)) {
  registry_.gauge_fn("worker_vram_bytes", "VRAM used by the loaded model (weights, KV cache, scratch)",
                     labels(), std::move(vram_bytes));
  registry_.gauge_fn("worker_uptime_seconds", "Seconds since the worker started serving", labels(), [this] {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - started_).count();
  });
  // Register the families up front so a fresh worker already exposes every series it documents.
  registry_.counter("worker_requests_total", "Execute requests by outcome", labels("outcome", "success"));
  registry_.counter("worker_tokens_in_total", "Prompt tokens processed", labels());
  registry_.counter("worker_tokens_generated_total", "Tokens generated and streamed", labels());
  registry_.histogram("worker_inference_duration_ms", "Job duration from admission to the terminal event, ms",
                      kDurationBucketsMs, labels());
  registry_.histogram("worker_time_to_first_token_ms", "Time from admission to the first token event, ms",
                      kTtftBucketsMs, labels());
}

observe::Labels WorkerMetrics::labels(const char *key, const std::string &value) const {
  observe::Labels l = {{"model", model_}, {"quant_kind", quant_kind_}};
  if (key) l.emplace_back(key, value);
  return l;
}

void WorkerMetrics::request(const std::string &outcome) {
  registry_.counter("worker_requests_total", "Execute requests by outcome", labels("outcome", outcome)).inc();
}

void WorkerMetrics::job(uint32_t tokens_in, uint32_t tokens_out, double duration_ms, double ttft_ms) {
  registry_.counter("worker_tokens_in_total", "Prompt tokens processed", labels()).inc(tokens_in);
  registry_.counter("worker_tokens_generated_total", "Tokens generated and streamed", labels())
      .inc(tokens_out);
  registry_.histogram("worker_inference_duration_ms", "", kDurationBucketsMs, labels()).observe(duration_ms);
  if (ttft_ms >= 0)
    registry_.histogram("worker_time_to_first_token_ms", "", kTtftBucketsMs, labels()).observe(ttft_ms);
}

} // namespace wo::http
