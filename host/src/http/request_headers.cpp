#include "http/request_headers.hpp"

#include <Poco/DateTime.h>
#include <Poco/DateTimeFormat.h>
#include <Poco/DateTimeParser.h>
#include <Poco/UUIDGenerator.h>

#include <algorithm>
#include <cctype>
#include <regex>

namespace wo::http {

std::string new_uuid_v4() { return Poco::UUIDGenerator::defaultGenerator().createRandom().toString(); }

std::string correlation_id_or_new(const std::string &v) {
  bool ok = !v.empty() && v.size() <= 128;
  for (unsigned char c : v)
    ok = ok && c > 0x20 && c < 0x7f;
  return ok ? v : new_uuid_v4();
}

bool is_uuid(const std::string &s) {
  if (s.size() != 36) return false;
  for (size_t i = 0; i < s.size(); ++i) {
    if (i == 8 || i == 13 || i == 18 || i == 23) {
      if (s[i] != '-') return false;
    } else if (!std::isxdigit(static_cast<unsigned char>(s[i]))) {
      return false;
    }
  }
  return true;
}

std::variant<std::chrono::system_clock::time_point, std::string>
parse_deadline_header(const std::string &value) {
  const std::string expected = "; expected Unix epoch milliseconds (e.g. 1790000000000) or RFC 3339 "
                               "(e.g. 2026-11-22T05:00:00Z)";
  bool digits = !value.empty() && value.size() <= 15;
  for (unsigned char c : value)
    digits = digits && std::isdigit(c);
  // Deadlines beyond year ~2200 are clamped: system_clock counts nanoseconds and would overflow.
  constexpr long long kMaxEpochMs = 7258118400000LL; // 2200-01-01
  if (digits)
    return std::chrono::system_clock::time_point(
        std::chrono::milliseconds(std::min(std::stoll(value), kMaxEpochMs)));
  // Poco's parser is lenient (it accepts words), so check the RFC 3339 shape first.
  static const std::regex rfc3339(
      R"(\d{4}-\d{2}-\d{2}[Tt]\d{2}:\d{2}:\d{2}(\.\d{1,9})?([Zz]|[+-]\d{2}:\d{2}))");
  Poco::DateTime dt;
  int tzd = 0;
  if (value.size() > 64 || !std::regex_match(value, rfc3339) ||
      !Poco::DateTimeParser::tryParse(Poco::DateTimeFormat::ISO8601_FRAC_FORMAT, value, dt, tzd))
    return "header 'X-Deadline': cannot parse '" + value.substr(0, 64) + "'" + expected;
  dt.makeUTC(tzd);
  auto us = std::min<long long>(dt.timestamp().epochMicroseconds(), kMaxEpochMs * 1000);
  return std::chrono::system_clock::time_point(std::chrono::microseconds(us));
}

} // namespace wo::http
