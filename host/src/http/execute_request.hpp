// Parsing and validation of request bodies (spec M0-W-1300) into JobRequest, before any stream
// starts. A failure names the field, the offending value (numbers only: user text is never echoed,
// only its length) and the rule, so the message is safe to log.
#pragma once

#include "http/backend.hpp"

#include <string>
#include <string_view>
#include <variant>

namespace wo::http {

inline constexpr size_t kMaxBodyBytes = 1u << 20;   // 1 MiB
inline constexpr size_t kMaxPromptChars = 32768;    // Unicode code points
inline constexpr uint32_t kMaxTokensCeiling = 2048; // spec bound of max_tokens
inline constexpr size_t kMaxStopSequences = 4;

struct ValidationError {
  std::string field; // "body" when the body as a whole is wrong
  std::string message;
};

struct RequestLimits {
  uint32_t vocab_size = 0;        // top_k upper bound (0 = unknown: only the type is checked)
  uint32_t max_tokens_out = 2048; // --max-tokens-out: default and cap of max_tokens
};

// POST /execute. max_tokens above --max-tokens-out is capped to it (not rejected); above 2048 it is
// an error. Unknown fields are ignored.
std::variant<JobRequest, ValidationError> parse_execute_request(std::string_view body,
                                                                const RequestLimits &limits);

// POST /cancel {job_id}: the job id or the error.
std::variant<std::string, ValidationError> parse_cancel_request(std::string_view body);

// Number of Unicode code points in valid UTF-8.
size_t utf8_code_points(std::string_view s);

} // namespace wo::http
