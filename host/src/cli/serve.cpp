// `worker-orcd serve` (also `worker-orcd --worker-id ...`): parse the spec's options and run the
// worker with the engine backend. Invalid options exit 1 naming the option, value and rule.
#include "cli/command.hpp"
#include "http/backend.hpp"
#include "http/serve_args.hpp"
#include "http/serve_lifecycle.hpp"

#include <cstdio>

namespace {

int serve_main(int argc, char **argv) {
  wo::http::ServeArgs args;
  try {
    args = wo::http::parse_serve_args(argc, argv);
  } catch (const wo::http::UsageError &e) {
    std::fprintf(stderr, "worker-orcd serve: %s\n", e.what());
    return 1;
  }
  if (args.help) {
    std::printf("%s", wo::http::serve_usage().c_str());
    return 0;
  }
  return wo::http::run_serve(
      args.options, [](const wo::http::ServeOptions &o) { return wo::http::make_engine_backend(o); });
}

} // namespace

WORKER_CLI_COMMAND("serve", "serve one model over HTTP (the worker; see serve --help)", serve_main);
