// A GoogleMock Backend with scripted behaviours, so the real server runs without a GPU.
#pragma once

#include "http/backend.hpp"

#include <gmock/gmock.h>

#include <atomic>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

namespace wo::http::testing {

class MockBackend : public Backend {
public:
  MOCK_METHOD(ModelFacts, facts, (), (const, override));
  MOCK_METHOD(uint32_t, count_prompt_tokens, (const std::string &prompt), (override));
  MOCK_METHOD(JobResult, run,
              (const JobRequest &request, TokenSink &sink, const std::atomic<bool> &cancel,
               std::chrono::steady_clock::time_point deadline),
              (override));
};

inline ModelFacts tiny_facts() {
  ModelFacts f;
  f.model = "llama-tiny-Q8_0.gguf";
  f.resident = true;
  f.quant_kind = "Q8_0";
  f.vram_bytes_used = 123456789;
  f.tokenizer_kind = "gguf-bpe";
  f.vocab_size = 32000;
  f.context_length = 256;
  f.sm = "9.0";
  f.cuda_runtime_version = "13.0";
  f.plugins = {{"llama", "architecture", "0.1.0"}, {"quant-ggml", "quant", "0.1.0"}};
  return f;
}

// Prompt length in tokens as the scripted tokenizer sees it: one token per 4 bytes, at least 1.
inline uint32_t scripted_token_count(const std::string &prompt) {
  return static_cast<uint32_t>(prompt.size() / 4 + 1);
}

inline JobResult failed(const char *code, const std::string &msg, bool retriable, uint32_t tokens_out = 0) {
  JobResult r;
  r.ok = false;
  r.error_code = code;
  r.error_message = msg;
  r.retriable = retriable;
  r.tokens_out = tokens_out;
  return r;
}

// A backend job as the engine runs it: checks cancel and deadline before every token, stops when
// the sink reports the client gone. `gap` is the time between tokens.
struct ScriptedJob {
  std::vector<std::string> tokens;
  StopReason stop_reason = StopReason::eos;
  std::chrono::milliseconds gap{0};
  uint64_t seed_when_absent = 42;
  std::atomic<bool> *saw_client_gone = nullptr; // set when the sink returned false

  JobResult operator()(const JobRequest &req, TokenSink &sink, const std::atomic<bool> &cancel,
                       std::chrono::steady_clock::time_point deadline) const {
    uint32_t tokens_in = scripted_token_count(req.prompt);
    if (!sink.started(req.seed_given ? req.seed : seed_when_absent)) return gone();
    uint32_t n = 0;
    for (const auto &t : tokens) {
      if (n >= req.max_tokens) {
        JobResult r;
        r.ok = true;
        r.tokens_in = tokens_in;
        r.tokens_out = n;
        r.stop_reason = StopReason::max_tokens;
        return r;
      }
      if (gap.count()) std::this_thread::sleep_for(gap);
      if (cancel.load()) return failed("CANCELLED", "job cancelled", false, n);
      if (std::chrono::steady_clock::now() >= deadline)
        return failed("INFERENCE_TIMEOUT", "deadline passed after " + std::to_string(n) + " tokens", true, n);
      if (!sink.token(t, n)) return gone();
      ++n;
    }
    JobResult r;
    r.ok = true;
    r.tokens_in = tokens_in;
    r.tokens_out = n;
    r.stop_reason = stop_reason;
    r.decode_time_ms = 1.5;
    return r;
  }

  JobResult gone() const {
    if (saw_client_gone) saw_client_gone->store(true);
    return failed("CANCELLED", "client gone", false);
  }
};

// `count` tokens "tok0 ", "tok1 ", ... produced `gap` apart.
inline ScriptedJob slow_job(size_t count, std::chrono::milliseconds gap) {
  ScriptedJob j;
  for (size_t i = 0; i < count; ++i)
    j.tokens.push_back("tok" + std::to_string(i) + " ");
  j.gap = gap;
  return j;
}

} // namespace wo::http::testing
