// Server-Sent Events framing for /execute: `event: <name>\ndata: <one-line JSON>\n\n`, flushed per
// event. Enforces the stream's grammar: `started` first, then `token`*, then exactly one terminal
// event (`end` or `error`); nothing is written after the terminal event.
#pragma once

#include <cstdint>
#include <ostream>
#include <string>

namespace wo::http {

class SseStream {
public:
  explicit SseStream(std::ostream &out) : out_(out) {}

  // Each returns false when the client is gone (write or flush failed) or the event is not allowed
  // at this point of the stream (e.g. anything after the terminal event).
  bool started(const std::string &job_id, const std::string &model, const std::string &started_at,
               uint64_t seed);
  bool token(const std::string &text, uint32_t index);
  bool end(uint32_t tokens_out, uint32_t tokens_in, double decode_time_ms, const std::string &stop_reason);
  bool error(const std::string &code, const std::string &message, bool retriable);

  bool client_gone() const { return gone_; }
  bool terminal_sent() const { return terminal_; }
  // UTF-8 bytes of token text written so far (for the output's length in logs).
  const std::string &output_text() const { return output_; }

private:
  bool write(const char *event, const std::string &json);

  std::ostream &out_;
  bool started_ = false;
  bool terminal_ = false;
  bool gone_ = false;
  std::string output_;
};

} // namespace wo::http
