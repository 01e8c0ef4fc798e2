// Request headers the API interprets: X-Correlation-Id (echoed, or a fresh UUIDv4) and X-Deadline
// (absolute deadline: Unix epoch milliseconds or RFC 3339).
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <variant>

namespace wo::http {

// The client's id when it is 1-128 visible ASCII characters, else a new random UUIDv4.
std::string correlation_id_or_new(const std::string &header_value);

// A new random (version 4) UUID, lowercase.
std::string new_uuid_v4();

// True for the canonical 8-4-4-4-12 hex form (any version).
bool is_uuid(const std::string &s);

// X-Deadline: "1790000000000" (epoch ms) or "2026-11-22T05:00:00Z" / with fraction or offset.
// Returns the deadline, or an error message naming the value and the accepted forms.
std::variant<std::chrono::system_clock::time_point, std::string>
parse_deadline_header(const std::string &value);

} // namespace wo::http
