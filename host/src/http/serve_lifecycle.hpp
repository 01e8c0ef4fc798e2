// The serve process from validated options to exit code (spec M0-W-1110):
//   startup -> backend (CUDA, model: model_load_start/complete) -> HTTP server -> optional ready
//   callback -> `ready` -> wait for SIGTERM/SIGINT or POST /shutdown -> drain -> `shutdown` -> 0.
// A failed step logs `error` {step, message} and returns 1.
#pragma once

#include "http/backend.hpp"

#include <functional>
#include <memory>

namespace wo::http {

using BackendFactory = std::function<std::unique_ptr<Backend>(const ServeOptions &)>;

// Blocks SIGTERM and SIGINT in the calling thread (threads it starts inherit the mask) and waits
// for them synchronously, so a signal is handled as an ordinary event. Call from the thread that
// should own the process lifecycle (main in the executable).
int run_serve(const ServeOptions &options, const BackendFactory &factory);

} // namespace wo::http
