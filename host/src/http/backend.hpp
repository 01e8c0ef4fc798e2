// The one seam between the HTTP layer and inference. The server never sees CUDA: it talks to a
// Backend. CI drives the real Poco server with a scripted GoogleMock backend; the GPU build plugs
// in the engine through make_engine_backend().
//
// Division of labour:
//   - Backend (engine): tokenization, sampling, UTF-8 assembly, stop-sequence matching, checking
//     the cancel flag and the deadline every token, mapping failures to stable error codes.
//   - Server (http): request validation, one job at a time, SSE framing, exactly one terminal event,
//     busy/draining refusals, metrics and narration events.
#pragma once

#include "http/serve_options.hpp"

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

namespace wo::http {

struct PluginInfo {
  std::string name;    // e.g. "llama"
  std::string kind;    // architecture | quant | tokenizer
  std::string version; // plugin's own version string
};

// Facts about the loaded model, cached by the backend after startup. Reading them must never touch
// the GPU: /health and /metrics are served from this on the request path.
struct ModelFacts {
  std::string model;                // model reference as given (--model)
  bool resident = false;            // weights verified resident in VRAM
  std::string quant_kind;           // e.g. "Q4_K_M", "Q8_0", "MXFP4"
  uint64_t vram_bytes_used = 0;     // weights + KV cache + scratch
  std::string tokenizer_kind;       // e.g. "gguf-bpe", "gguf-spm", "hf-json"
  uint32_t vocab_size = 0;          // bounds the request's top_k
  uint32_t context_length = 0;      // prompt + output tokens must fit
  std::string sm;                   // compute capability, e.g. "9.0"
  std::string cuda_runtime_version; // e.g. "13.0"
  std::vector<PluginInfo> plugins;  // plugins in use
  bool healthy = true;              // false after a fatal device error (e.g. sticky CUDA error)
};

// One validated /execute request. Every field is already inside its spec bounds.
struct JobRequest {
  std::string job_id;
  std::string prompt;
  uint32_t max_tokens = 2048;
  float temperature = 1.0f;
  float top_p = 1.0f;
  uint32_t top_k = 0; // 0 = disabled
  float min_p = 0.0f; // 0 = disabled
  float repetition_penalty = 1.0f;
  std::vector<std::string> stop; // at most 4; matched on text by the backend
  uint64_t seed = 0;
  bool seed_given = false; // false: the backend picks a seed and reports it in started()
};

// Receives a job's output as it is produced. Each call writes to the client; false means the
// client is gone, and the backend must stop and return error CANCELLED (the server already knows).
class TokenSink {
public:
  virtual ~TokenSink() = default;
  // Exactly once, before any token: the seed actually used.
  virtual bool started(uint64_t seed) = 0;
  // One complete UTF-8 fragment (never split inside a code point) and its 0-based output index.
  // Text belonging to a matched stop sequence is never emitted.
  virtual bool token(const std::string &text, uint32_t index) = 0;
};

enum class StopReason { max_tokens, eos, stop_sequence };

// Stable error codes a job can end with (see error_codes.hpp for the whole table).
namespace job_error {
inline constexpr const char *CANCELLED = "CANCELLED";                 // /cancel, client gone, drain deadline
inline constexpr const char *INFERENCE_TIMEOUT = "INFERENCE_TIMEOUT"; // deadline passed
inline constexpr const char *VRAM_OOM = "VRAM_OOM";                   // allocation failed mid-job
inline constexpr const char *CUDA_ERROR = "CUDA_ERROR";               // device failure
inline constexpr const char *INTERNAL = "INTERNAL";                   // anything else
} // namespace job_error

struct JobResult {
  bool ok = false;
  uint32_t tokens_in = 0;                          // prompt tokens
  uint32_t tokens_out = 0;                         // tokens generated (the end event's tokens_out;
                                                   // some have no token event of their own)
  StopReason stop_reason = StopReason::max_tokens; // when ok
  // When !ok:
  std::string error_code; // one of job_error::*
  std::string error_message;
  bool retriable = false;
  // Timing the backend measured (0 if unknown); the server measures its own too.
  double time_to_first_token_ms = 0;
  double decode_time_ms = 0;
};

// A failure before the stream starts (tokenizer error, ...). code is a stable error code.
class BackendError : public std::runtime_error {
public:
  BackendError(std::string code, const std::string &message, bool retriable = false)
      : std::runtime_error(message), code_(std::move(code)), retriable_(retriable) {}
  const std::string &code() const { return code_; }
  bool retriable() const { return retriable_; }

private:
  std::string code_;
  bool retriable_;
};

class Backend {
public:
  virtual ~Backend() = default;

  // Cached facts; cheap, thread-safe, no GPU call.
  virtual ModelFacts facts() const = 0;

  // Number of tokens the prompt encodes to (as run() would feed it). Called before the stream
  // starts so an over-long prompt is a 400 rather than an SSE error. Thread-safe; CPU only.
  // Throws BackendError on failure.
  virtual uint32_t count_prompt_tokens(const std::string &prompt) = 0;

  // Run one job to completion on the calling thread. The server guarantees one job at a time.
  // Must check `cancel` and `deadline` before every token and return promptly:
  //   cancel set      -> !ok, CANCELLED (retriable=false)
  //   deadline passed -> !ok, INFERENCE_TIMEOUT (retriable=true)
  //   sink false      -> !ok, CANCELLED
  // Should not throw; if it does, the server ends the stream with INTERNAL.
  virtual JobResult run(const JobRequest &request, TokenSink &sink, const std::atomic<bool> &cancel,
                        std::chrono::steady_clock::time_point deadline) = 0;
};

// Builds the real engine backend: CUDA context, GGUF, plugins, VRAM plan, upload (emitting the
// model_load_* narration events). Throws std::runtime_error naming the failed step and its context
// (device, model path, bytes needed/free ...); `serve` prints it and exits 1.
//
// Defined by the engine (host/src/engine/). The http library carries a weak fallback in its own
// object file that throws "this build has no engine", so a build without the engine still links;
// the engine's strong definition wins wherever it is linked (worker_engine precedes worker_http on
// the executable's link line).
std::unique_ptr<Backend> make_engine_backend(const ServeOptions &options);

} // namespace wo::http
