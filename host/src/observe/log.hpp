// Narration log: one JSON object per line on stderr (or a test sink), e.g.
//   {"ts":"2026-11-22T05:30:00.123Z","level":"info","event":"model_load_progress","percent":50}
// Context fields set once (worker_id, model_ref, gpu_device) are added to every event.
// Never log prompts or generated text: log their length and SHA-256 instead.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <variant>
#include <vector>

namespace wo::observe {

using FieldValue = std::variant<std::string, int64_t, uint64_t, double, bool>;
using Field = std::pair<std::string, FieldValue>;
using Fields = std::vector<Field>;

enum class Level { debug, info, warn, error };

// Emit one event. Thread-safe.
void event(Level level, const std::string &name, const Fields &fields = {});
inline void info(const std::string &name, const Fields &fields = {}) { event(Level::info, name, fields); }
inline void warn(const std::string &name, const Fields &fields = {}) { event(Level::warn, name, fields); }
inline void error(const std::string &name, const Fields &fields = {}) { event(Level::error, name, fields); }

// Fields added to every later event (e.g. worker_id, model_ref, gpu_device). Replaces same keys.
void set_context(const Fields &fields);

// Events below this level are dropped (default info; WORKER_LOG_LEVEL=debug|info|warn|error).
void set_min_level(Level level);

// Redirect output (tests). nullptr restores stderr. The sink receives one JSON line, no newline.
void set_sink(std::function<void(const std::string &line)> sink);

// Format one event as a JSON line (exposed for tests).
std::string format_event(Level level, const std::string &name, const Fields &fields);

// Current UTC time as RFC 3339 with milliseconds, e.g. 2026-11-22T05:30:00.123Z (log `ts`, SSE `started_at`).
std::string rfc3339_now();

// Lowercase hex SHA-256 of data: how logs refer to prompt and output text.
std::string sha256_hex(const std::string &data);

} // namespace wo::observe
