// Debugging and A/B switches read from the environment, shared by the SDK's PDL helper, the
// kernels, the codecs and the adapters: a switch is off when its variable holds exactly "0", on
// otherwise (unset included); a tuning number is taken only when it is a whole decimal number in
// range. Callers read it once (a static), so a process keeps one setting.
#pragma once

#include <cstdint>
#include <cstdlib>

namespace wo {

inline bool env_switched_off(const char *name) {
  const char *e = std::getenv(name);
  return e && e[0] == '0' && e[1] == '\0';
}

// A tuning number's value: `fallback` unless the variable holds a whole decimal number in [lo, hi]
// ("5x", "" and out-of-range values fall back; they are not cut to a number or clamped).
inline int64_t env_int(const char *name, int64_t lo, int64_t hi, int64_t fallback) {
  const char *e = std::getenv(name);
  if (!e || !*e) return fallback;
  char *end = nullptr;
  const long long v = std::strtoll(e, &end, 10);
  return (*end == '\0' && v >= lo && v <= hi) ? static_cast<int64_t>(v) : fallback;
}

} // namespace wo
