// The optional ready callback of the startup sequence: POST {worker_id, model_ref, vram_bytes, uri}
// to --callback-url once the server listens.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

namespace wo::http {

struct ReadyInfo {
  std::string worker_id;
  std::string model_ref;
  uint64_t vram_bytes = 0;
  std::string uri;
};

// The JSON body the callback sends.
std::string ready_callback_body(const ReadyInfo &info);

// POSTs the body; throws std::runtime_error naming the URL and the failure (connection error or a
// non-2xx status) so startup can exit 1 with context.
void post_ready_callback(const std::string &url, const ReadyInfo &info,
                         std::chrono::milliseconds timeout = std::chrono::seconds(10));

} // namespace wo::http
