// State shared by the server and its endpoint handlers (internal to worker_http).
#pragma once

#include "http/backend.hpp"
#include "http/job_slot.hpp"
#include "http/worker_metrics.hpp"

#include <Poco/Net/HTTPServer.h>
#include <Poco/Net/HTTPServerRequest.h>
#include <Poco/Net/HTTPServerResponse.h>
#include <Poco/ThreadPool.h>

#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

namespace wo::http {

struct ServerContext {
  ServerContext(Backend &b, ServeOptions o);

  Backend &backend;
  ServeOptions options;
  ModelFacts facts_at_start; // model name and quant kind label every metric
  JobSlot slot;
  WorkerMetrics metrics;
  std::chrono::steady_clock::time_point started = std::chrono::steady_clock::now();

  std::mutex shutdown_mu;
  std::condition_variable shutdown_cv;
  bool shutdown_requested = false;
  bool stopped = false;

  std::unique_ptr<Poco::ThreadPool> pool;
  std::unique_ptr<Poco::Net::HTTPServer> server;
  uint16_t port = 0;

  void request_shutdown(const std::string &reason);
};

// One request as the endpoints see it: body already read, correlation id chosen.
struct Exchange {
  Poco::Net::HTTPServerRequest &request;
  Poco::Net::HTTPServerResponse &response;
  std::string body;
  bool body_too_large = false;
  std::string correlation_id;
};

// Response helpers: every JSON response carries X-Correlation-Id (set by the router).
void send_json(Exchange &ex, int status, const std::string &json);
// {"code","message","field"?}; Retry-After when retry_after_s > 0.
void send_error(Exchange &ex, const std::string &code, const std::string &message,
                const std::string &field = {}, int retry_after_s = 0);
// JSON string escaping for small hand-built bodies.
std::string json_string(const std::string &s);

void handle_execute(ServerContext &ctx, Exchange &ex);
void handle_health(ServerContext &ctx, Exchange &ex);
void handle_metrics(ServerContext &ctx, Exchange &ex);
void handle_cancel(ServerContext &ctx, Exchange &ex);
void handle_shutdown(ServerContext &ctx, Exchange &ex);

} // namespace wo::http
