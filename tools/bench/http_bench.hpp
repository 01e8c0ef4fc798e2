// Client-side view of the worker: time to first token and inter-token latency over SSE, as a
// client of POST /execute sees them.
#pragma once

#include <string>

namespace wo::bench {

struct HttpBenchOptions {
  std::string url; // http://host:port
  std::string prompt = "Write a haiku about GPU computing";
  int max_tokens = 256;
  int requests = 5;
  bool json = false;
};

int run_http_bench(const HttpBenchOptions &o);

} // namespace wo::bench
