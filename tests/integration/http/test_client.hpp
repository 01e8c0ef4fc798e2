// Test-side HTTP: plain requests, SSE stream parsing, a strict Prometheus text parser.
#pragma once

#include <map>
#include <string>
#include <utility>
#include <vector>

namespace wo::http::testing {

struct HttpReply {
  int status = 0;
  std::map<std::string, std::string> headers; // names lowercased
  std::string body;
  std::string header(const std::string &name) const;
};

using Headers = std::vector<std::pair<std::string, std::string>>;

// One request on a fresh connection to 127.0.0.1:port (5 s timeout).
HttpReply http_request(uint16_t port, const std::string &method, const std::string &path,
                       const std::string &body = {}, const Headers &headers = {});

struct SseEvent {
  std::string event;
  std::string data;
};

// Splits an SSE body into events; records framing violations (a line that is neither `event:`
// nor `data:`, an event without data, a missing blank line at the end) in `errors`.
std::vector<SseEvent> parse_sse(const std::string &body, std::vector<std::string> *errors);

struct Sample {
  std::string name;
  std::map<std::string, std::string> labels;
  double value = 0;
};
struct PromText {
  std::map<std::string, std::string> types; // family -> counter|gauge|histogram|...
  std::map<std::string, std::string> helps;
  std::vector<Sample> samples;
  std::vector<std::string> errors; // grammar violations with line numbers
  // Value of the sample with this name whose labels include all of `labels`; NaN if absent.
  double value(const std::string &name, const std::map<std::string, std::string> &labels = {}) const;
};
PromText parse_prometheus(const std::string &text);

// Raw bytes over a socket; returns what the server answered until it closed (or 5 s passed).
std::string raw_exchange(uint16_t port, const std::string &bytes);

} // namespace wo::http::testing
