#include "http/serve_lifecycle.hpp"

#include "http/ready_callback.hpp"
#include "http/server.hpp"
#include "observe/log.hpp"

#include <csignal>
#include <cstdio>
#include <ctime>
#include <pthread.h>

namespace wo::http {
namespace {

int fail(const char *step, const std::string &message) {
  observe::error("error", {{"step", step}, {"message", message}});
  std::fprintf(stderr, "worker-orcd: %s failed: %s\n", step, message.c_str());
  return 1;
}

} // namespace

int run_serve(const ServeOptions &options, const BackendFactory &factory) {
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  observe::set_context({{"worker_id", options.worker_id},
                        {"model_ref", options.model_path},
                        {"gpu_device", static_cast<int64_t>(options.gpu_device)}});
  observe::info("startup", {{"bind", options.bind},
                            {"port", static_cast<uint64_t>(options.port)},
                            {"max_tokens_out", static_cast<uint64_t>(options.max_tokens_out)},
                            {"inference_timeout_sec", static_cast<uint64_t>(options.inference_timeout_sec)}});

  std::unique_ptr<Backend> backend;
  observe::info("model_load_start", {{"model", options.model_path}});
  auto t0 = std::chrono::steady_clock::now();
  try {
    backend = factory(options);
    if (!backend) throw std::runtime_error("the backend factory returned no backend");
  } catch (const std::exception &e) {
    return fail("model_load", e.what());
  }
  ModelFacts facts = backend->facts();
  observe::info("model_load_complete",
                {{"vram_bytes", facts.vram_bytes_used},
                 {"quant_kind", facts.quant_kind},
                 {"load_ms",
                  std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count()}});

  Server server(*backend, options);
  try {
    server.start();
  } catch (const std::exception &e) {
    return fail("http_server", e.what());
  }
  if (!options.callback_url.empty()) {
    try {
      post_ready_callback(options.callback_url,
                          {options.worker_id, options.model_path, facts.vram_bytes_used, server.uri()});
    } catch (const std::exception &e) {
      server.drain_and_stop(std::chrono::milliseconds(0));
      return fail("ready_callback", e.what());
    }
  }
  observe::info("ready", {{"uri", server.uri()}, {"vram_bytes", facts.vram_bytes_used}});

  // Wait for a signal or /shutdown; poll both every 100 ms.
  while (!server.shutdown_requested()) {
    timespec tick{0, 100 * 1000 * 1000};
    int sig = sigtimedwait(&signals, nullptr, &tick);
    if (sig == SIGTERM || sig == SIGINT) server.request_shutdown(sig == SIGTERM ? "SIGTERM" : "SIGINT");
  }
  server.drain_and_stop(std::chrono::seconds(options.shutdown_deadline_sec));
  backend.reset(); // frees VRAM before the process exits
  return 0;
}

} // namespace wo::http
