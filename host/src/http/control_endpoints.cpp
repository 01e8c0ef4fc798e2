// POST /cancel and POST /shutdown.
#include "http/execute_request.hpp"
#include "http/server_context.hpp"
#include "observe/log.hpp"

namespace wo::http {

// Always 202 for a well-formed request, so retries are safe (idempotent):
//   {"job_id": ..., "status": "cancelling"}   the job runs now; it will end with error CANCELLED
//   {"job_id": ..., "status": "not_running"}  unknown or already finished: nothing to do
void handle_cancel(ServerContext &ctx, Exchange &ex) {
  if (ex.body_too_large) {
    send_error(ex, "INVALID_REQUEST", "body: larger than 1 MiB; expected a small JSON object {job_id}",
               "body");
    return;
  }
  auto parsed = parse_cancel_request(ex.body);
  if (auto *e = std::get_if<ValidationError>(&parsed)) {
    send_error(ex, "INVALID_REQUEST", e->message, e->field);
    return;
  }
  const std::string &job_id = std::get<std::string>(parsed);
  bool running = ctx.slot.cancel(job_id);
  observe::info("cancel_requested",
                {{"job_id", job_id}, {"correlation_id", ex.correlation_id}, {"was_running", running}});
  send_json(ex, 202,
            "{\"job_id\":" + json_string(job_id) + ",\"status\":\"" +
                (running ? "cancelling" : "not_running") + "\"}");
}

// 202 {"status":"draining"}; the serve loop sees the request and drains (see Server::drain_and_stop).
void handle_shutdown(ServerContext &ctx, Exchange &ex) {
  ctx.request_shutdown("http");
  send_json(ex, 202, "{\"status\":\"draining\"}");
}

} // namespace wo::http
