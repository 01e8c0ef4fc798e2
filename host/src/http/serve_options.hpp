// What `worker-orcd serve` was asked to do, after validation. Shared by the HTTP server and the
// engine factory so both read the same limits.
#pragma once

#include <cstdint>
#include <string>

namespace wo::http {

struct ServeOptions {
  std::string worker_id;          // UUID, validated by the CLI
  std::string model_path;         // --model: GGUF file (or a model reference the engine resolves)
  int gpu_device = 0;             // --gpu-device
  std::string bind = "127.0.0.1"; // --bind: loopback unless told otherwise
  uint16_t port = 0;              // --port (1024-65535; 0 = ephemeral, tests only)
  std::string callback_url;       // --callback-url: POSTed {worker_id, model_ref, vram_bytes, uri} when ready
  uint32_t max_tokens_in = 0;     // --max-tokens-in: prompt token cap (0 = the model's context length)
  uint32_t max_tokens_out = 2048; // --max-tokens-out: caps and defaults the request's max_tokens
  uint32_t inference_timeout_sec = 300; // --inference-timeout-sec: per-job deadline
  uint32_t kv_cache_size_mb = 0;        // --kv-cache-size-mb (0 = sized from the context length)
  std::string plugin_dir;               // --plugin-dir (empty = next to the executable)
  uint32_t shutdown_deadline_sec = 30;  // --shutdown-deadline-sec: how long a drain waits for the job
};

} // namespace wo::http
