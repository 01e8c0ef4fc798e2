#include "http/server.hpp"

#include "http/error_codes.hpp"
#include "http/execute_request.hpp"
#include "http/request_headers.hpp"
#include "http/server_context.hpp"
#include "observe/log.hpp"

#include <Poco/Net/HTTPRequestHandler.h>
#include <Poco/Net/HTTPRequestHandlerFactory.h>
#include <Poco/Net/HTTPServerParams.h>
#include <Poco/Net/ServerSocket.h>
#include <Poco/Net/SocketAddress.h>

#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include <istream>

namespace wo::http {
namespace {

// Threads: one streaming job + busy refusals + health/metrics probes + cancel/shutdown, with room.
constexpr int kServerThreads = 16;

struct Route {
  const char *path;
  const char *method;
  void (*fn)(ServerContext &, Exchange &);
};
const Route kRoutes[] = {
    {"/execute", "POST", handle_execute},   {"/health", "GET", handle_health},
    {"/metrics", "GET", handle_metrics},    {"/cancel", "POST", handle_cancel},
    {"/shutdown", "POST", handle_shutdown},
};

// Bodies beyond this are not even drained: the connection is closed on them.
constexpr size_t kDrainLimitBytes = 16u << 20;

// Keeps up to `limit` bytes; reads (and drops) an oversized body up to kDrainLimitBytes so the client,
// still sending, gets the 400 rather than a connection reset.
void read_body(Exchange &ex, size_t limit) {
  std::istream &in = ex.request.stream();
  char buf[16384];
  size_t seen = 0;
  while (in && seen <= kDrainLimitBytes) {
    in.read(buf, sizeof buf);
    std::streamsize n = in.gcount();
    if (n <= 0) break;
    seen += static_cast<size_t>(n);
    if (seen > limit) ex.body_too_large = true;
    if (!ex.body_too_large) ex.body.append(buf, static_cast<size_t>(n));
  }
  if (ex.body_too_large) ex.body.clear();
}

class ApiHandler : public Poco::Net::HTTPRequestHandler {
public:
  explicit ApiHandler(ServerContext &ctx) : ctx_(ctx) {}

  void handleRequest(Poco::Net::HTTPServerRequest &req, Poco::Net::HTTPServerResponse &resp) override {
    Exchange ex{req, resp, {}, false, correlation_id_or_new(req.get("X-Correlation-Id", ""))};
    resp.set("X-Correlation-Id", ex.correlation_id);
    try {
      // Read the body first (Poco needs it consumed before the response on a kept-alive
      // connection); a declared length beyond the drain limit is refused without reading.
      if (req.hasContentLength() && req.getContentLength64() > static_cast<Poco::Int64>(kDrainLimitBytes)) {
        ex.body_too_large = true;
      } else {
        read_body(ex, kMaxBodyBytes);
      }
      if (ex.body_too_large) resp.setKeepAlive(false); // unread bytes would poison the connection
      std::string path = req.getURI();
      if (auto q = path.find('?'); q != std::string::npos) path.resize(q);
      const Route *match = nullptr;
      bool path_known = false;
      for (const auto &r : kRoutes) {
        if (path != r.path) continue;
        path_known = true;
        if (req.getMethod() == r.method) match = &r;
      }
      if (match) {
        match->fn(ctx_, ex);
      } else if (path_known) {
        for (const auto &r : kRoutes)
          if (path == r.path) resp.set("Allow", r.method);
        send_error(ex, "METHOD_NOT_ALLOWED",
                   "method " + req.getMethod() + " is not allowed on " + path + "; expected " +
                       resp.get("Allow"),
                   "method");
      } else {
        send_error(ex, "NOT_FOUND",
                   "no endpoint at path '" + path.substr(0, 256) +
                       "'; expected one of /execute, /health, /metrics, /cancel, /shutdown",
                   "path");
      }
    } catch (const std::exception &e) {
      observe::error("error",
                     {{"code", "INTERNAL"}, {"correlation_id", ex.correlation_id}, {"message", e.what()}});
      if (!resp.sent()) send_error(ex, "INTERNAL", std::string("internal error: ") + e.what());
    }
  }

private:
  ServerContext &ctx_;
};

class ApiHandlerFactory : public Poco::Net::HTTPRequestHandlerFactory {
public:
  explicit ApiHandlerFactory(ServerContext &ctx) : ctx_(ctx) {}
  Poco::Net::HTTPRequestHandler *createRequestHandler(const Poco::Net::HTTPServerRequest &) override {
    return new ApiHandler(ctx_);
  }

private:
  ServerContext &ctx_;
};

} // namespace

std::string json_string(const std::string &s) {
  rapidjson::StringBuffer sb;
  rapidjson::Writer<rapidjson::StringBuffer> w(sb);
  w.String(s.c_str(), static_cast<rapidjson::SizeType>(s.size()));
  return sb.GetString();
}

void send_json(Exchange &ex, int status, const std::string &json) {
  ex.response.setStatus(static_cast<Poco::Net::HTTPResponse::HTTPStatus>(status));
  ex.response.setContentType("application/json");
  ex.response.setContentLength(static_cast<std::streamsize>(json.size()));
  ex.response.send() << json;
}

void send_error(Exchange &ex, const std::string &code, const std::string &message, const std::string &field,
                int retry_after_s) {
  ErrorCodeInfo info = error_code_info(code);
  if (retry_after_s > 0) ex.response.set("Retry-After", std::to_string(retry_after_s));
  std::string body = "{\"code\":" + json_string(code) + ",\"message\":" + json_string(message);
  if (!field.empty()) body += ",\"field\":" + json_string(field);
  body += ",\"retriable\":" + std::string(info.retriable ? "true" : "false") + "}";
  send_json(ex, info.http_status, body);
}

ServerContext::ServerContext(Backend &b, ServeOptions o)
    : backend(b), options(std::move(o)), facts_at_start(b.facts()),
      metrics(facts_at_start.model, facts_at_start.quant_kind,
              [&b] { return static_cast<double>(b.facts().vram_bytes_used); }) {}

void ServerContext::request_shutdown(const std::string &reason) {
  {
    std::lock_guard<std::mutex> lk(shutdown_mu);
    if (shutdown_requested) return;
    shutdown_requested = true;
  }
  slot.start_draining(); // from now on /execute answers 503 SHUTTING_DOWN
  observe::info("shutdown_requested", {{"reason", reason}});
  shutdown_cv.notify_all();
}

Server::Server(Backend &backend, ServeOptions options)
    : ctx_(std::make_unique<ServerContext>(backend, std::move(options))) {}

Server::~Server() {
  if (ctx_->server && !ctx_->stopped) {
    ctx_->slot.start_draining();
    ctx_->slot.cancel_active();
    ctx_->slot.wait_idle(std::chrono::seconds(5));
    ctx_->server->stopAll(true);
  }
}

void Server::start() {
  Poco::Net::ServerSocket socket;
  try {
    Poco::Net::SocketAddress addr(ctx_->options.bind, ctx_->options.port);
    socket.bind(addr, true,
                false); // SO_REUSEADDR for restarts, never SO_REUSEPORT: a second worker must fail
    socket.listen(64);
  } catch (const Poco::Exception &e) {
    throw std::runtime_error("cannot listen on " + ctx_->options.bind + ":" +
                             std::to_string(ctx_->options.port) + ": " + e.displayText());
  }
  ctx_->port = socket.address().port();
  auto *params = new Poco::Net::HTTPServerParams; // owned by the server (ref-counted)
  params->setMaxThreads(kServerThreads);
  params->setMaxQueued(64);
  params->setKeepAlive(true);
  params->setTimeout(Poco::Timespan(30, 0));
  ctx_->pool = std::make_unique<Poco::ThreadPool>(2, kServerThreads + 2);
  ctx_->server =
      std::make_unique<Poco::Net::HTTPServer>(new ApiHandlerFactory(*ctx_), *ctx_->pool, socket, params);
  ctx_->server->start();
}

uint16_t Server::port() const { return ctx_->port; }

std::string Server::uri() const {
  std::string host = ctx_->options.bind;
  if (host.find(':') != std::string::npos) host = "[" + host + "]";
  return "http://" + host + ":" + std::to_string(ctx_->port);
}

void Server::request_shutdown(const std::string &reason) { ctx_->request_shutdown(reason); }

bool Server::shutdown_requested() const {
  std::lock_guard<std::mutex> lk(ctx_->shutdown_mu);
  return ctx_->shutdown_requested;
}

bool Server::wait_shutdown_requested(std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> lk(ctx_->shutdown_mu);
  return ctx_->shutdown_cv.wait_for(lk, timeout, [&] { return ctx_->shutdown_requested; });
}

void Server::drain_and_stop(std::chrono::milliseconds deadline) {
  ctx_->request_shutdown("drain");
  if (ctx_->stopped) return;
  auto t0 = std::chrono::steady_clock::now();
  std::string job = ctx_->slot.active_job_id();
  bool finished = ctx_->slot.wait_idle(deadline);
  bool cancelled = false;
  if (!finished) {
    cancelled = ctx_->slot.cancel_active();
    // The backend checks the flag every token; give it a bounded time to end the stream.
    finished = ctx_->slot.wait_idle(std::chrono::seconds(10));
  }
  if (ctx_->server) ctx_->server->stopAll(true);
  ctx_->stopped = true;
  double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  observe::info(
      "shutdown",
      {{"drain_ms", ms}, {"job_id", job}, {"job_cancelled", cancelled}, {"job_finished", finished}});
}

std::string Server::metrics_text() const { return ctx_->metrics.render(); }

} // namespace wo::http
