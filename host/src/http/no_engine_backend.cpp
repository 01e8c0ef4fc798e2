// Fallback for builds without the engine (CPU-only CI): kept alone in this file so the linker
// only pulls it in when nothing else defines make_engine_backend; weak so a real definition wins.
#include "http/backend.hpp"

namespace wo::http {

__attribute__((weak)) std::unique_ptr<Backend> make_engine_backend(const ServeOptions &options) {
  throw std::runtime_error("cannot serve model '" + options.model_path +
                           "': this build has no engine (make_engine_backend is not linked in; "
                           "build with -DWORKER_WITH_CUDA=ON and host/src/engine)");
}

} // namespace wo::http
