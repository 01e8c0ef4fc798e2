// Debugging and A/B switches read from the environment, shared by the SDK's PDL helper, the
// kernels and the codecs: a switch is off when its variable holds exactly "0", on otherwise
// (unset included). Callers read it once (a static), so a process keeps one setting.
#pragma once

#include <cstdlib>

namespace wo {

inline bool env_switched_off(const char *name) {
  const char *e = std::getenv(name);
  return e && e[0] == '0' && e[1] == '\0';
}

} // namespace wo
