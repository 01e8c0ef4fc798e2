// The worker's HTTP server: Poco::Net::HTTPServer routing to the API endpoints over a Backend.
//
//   POST /execute   SSE stream: started -> token* -> end | error      (execute_endpoint.cpp)
//   GET  /health    cached model facts and worker state                (status_endpoints.cpp)
//   GET  /metrics   Prometheus text                                    (status_endpoints.cpp)
//   POST /cancel    202, idempotent                                    (control_endpoints.cpp)
//   POST /shutdown  202, starts the drain                              (control_endpoints.cpp)
//
// Lifecycle: start() -> [requests] -> request_shutdown() (from /shutdown or a signal) ->
// drain_and_stop(deadline): new jobs get 503 SHUTTING_DOWN, the running job may finish until the
// deadline, then it is cancelled; the listener stops and `shutdown` is logged.
#pragma once

#include "http/backend.hpp"

#include <chrono>
#include <memory>
#include <string>

namespace wo::http {

struct ServerContext;

class Server {
public:
  // The backend must outlive the server.
  Server(Backend &backend, ServeOptions options);
  ~Server();
  Server(const Server &) = delete;
  Server &operator=(const Server &) = delete;

  // Binds options.bind:options.port (port 0 picks a free one) and starts serving. Throws
  // std::runtime_error naming the address when the bind fails.
  void start();
  uint16_t port() const;
  // http://<bind>:<port>
  std::string uri() const;

  // Asks for a drain (idempotent, non-blocking, async-signal-unsafe: call from a normal thread).
  void request_shutdown(const std::string &reason);
  bool shutdown_requested() const;
  // Waits up to timeout for a shutdown request; true once requested.
  bool wait_shutdown_requested(std::chrono::milliseconds timeout);

  // Stops admitting jobs, waits up to `deadline` for the running one, then cancels it and waits a
  // little more for its terminal event; stops the listener; logs `shutdown`. Idempotent.
  void drain_and_stop(std::chrono::milliseconds deadline);

  // Prometheus text as /metrics serves it.
  std::string metrics_text() const;

private:
  std::unique_ptr<ServerContext> ctx_;
};

} // namespace wo::http
