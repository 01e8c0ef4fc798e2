// POST /execute: validation and admission (answered with an HTTP error before any stream), then the
// SSE stream driven by the backend, ending with exactly one terminal event.
#include "http/error_codes.hpp"
#include "http/execute_request.hpp"
#include "http/request_headers.hpp"
#include "http/server_context.hpp"
#include "http/sse_stream.hpp"
#include "observe/log.hpp"

#include <algorithm>
#include <cctype>

namespace wo::http {
namespace {

using Clock = std::chrono::steady_clock;

constexpr int kBusyRetryAfterS = 1;
constexpr int kDrainingRetryAfterS = 30;

std::string lowercase(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

const char *stop_reason_name(StopReason r) {
  switch (r) {
  case StopReason::max_tokens: return "max_tokens";
  case StopReason::eos: return "eos";
  case StopReason::stop_sequence: return "stop_sequence";
  }
  return "max_tokens";
}

double ms_since(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

// Adapts the backend's callbacks to SSE events and records what the server reports about them.
class StreamSink : public TokenSink {
public:
  StreamSink(SseStream &sse, const JobRequest &req, const std::string &model, Clock::time_point admitted)
      : sse_(sse), req_(req), model_(model), admitted_(admitted) {}

  bool started(uint64_t seed) override {
    if (sse_.terminal_sent()) return false;
    started_ = true;
    return sse_.started(req_.job_id, model_, wo::observe::rfc3339_now(), seed);
  }
  bool token(const std::string &text, uint32_t index) override {
    if (!started_ && !started(req_.seed)) return false;
    if (first_token_ms_ < 0) first_token_ms_ = ms_since(admitted_);
    ++tokens_;
    return sse_.token(text, index);
  }
  bool was_started() const { return started_; }
  double first_token_ms() const { return first_token_ms_; }
  uint32_t tokens() const { return tokens_; }

private:
  SseStream &sse_;
  const JobRequest &req_;
  const std::string &model_;
  Clock::time_point admitted_;
  bool started_ = false;
  double first_token_ms_ = -1;
  uint32_t tokens_ = 0;
};

void reject(ServerContext &ctx, Exchange &ex, const std::string &code, const std::string &message,
            const std::string &field = {}, int retry_after_s = 0) {
  ctx.metrics.request(lowercase(code));
  observe::warn(
      "request_rejected",
      {{"code", code}, {"field", field}, {"message", message}, {"correlation_id", ex.correlation_id}});
  send_error(ex, code, message, field, retry_after_s);
}

// Runs the admitted job and writes the stream. Returns nothing: every path ends in one terminal event.
void stream_job(ServerContext &ctx, Exchange &ex, JobRequest &req, uint32_t tokens_in,
                Clock::time_point admitted, Clock::time_point deadline, const std::string &model) {
  auto &resp = ex.response;
  resp.setStatus(Poco::Net::HTTPResponse::HTTP_OK);
  resp.setContentType("text/event-stream");
  resp.set("Cache-Control", "no-cache");
  resp.setChunkedTransferEncoding(true);
  resp.setKeepAlive(false); // one stream per connection: the stream's end is the connection's end
  std::ostream &out = resp.send();
  SseStream sse(out);
  StreamSink sink(sse, req, model, admitted);

  JobResult result;
  try {
    result = ctx.backend.run(req, sink, ctx.slot.cancel_flag(), deadline);
  } catch (const BackendError &e) {
    result = {};
    result.error_code = e.code();
    result.error_message = e.what();
    result.retriable = e.retriable();
  } catch (const std::exception &e) {
    result = {};
    result.error_code = "INTERNAL";
    result.error_message = std::string("backend failed: ") + e.what();
  }
  if (!result.ok && result.error_code.empty()) {
    result.error_code = "INTERNAL";
    result.error_message = "backend reported failure without an error code";
  }
  if (result.tokens_in == 0) result.tokens_in = tokens_in;
  // tokens_out counts generated tokens, not token events: a token whose bytes end inside a UTF-8
  // character, or that a stop sequence holds back, has no event of its own. (Counting events made
  // a job stopped at max_tokens report fewer tokens than it generated.) A backend that leaves the
  // count unset still gets the events it sent.
  const uint32_t tokens_out = std::max(result.tokens_out, sink.tokens());

  bool client_gone = sse.client_gone();
  if (result.ok) {
    if (!sink.was_started()) sink.started(req.seed);
    sse.end(tokens_out, result.tokens_in,
            result.decode_time_ms > 0 ? result.decode_time_ms : ms_since(admitted),
            stop_reason_name(result.stop_reason));
  } else {
    if (client_gone && result.error_code == job_error::CANCELLED)
      result.error_message = "client disconnected; job cancelled";
    sse.error(result.error_code, result.error_message, result.retriable);
  }

  double duration_ms = ms_since(admitted);
  std::string outcome = result.ok ? "success" : lowercase(result.error_code);
  ctx.metrics.request(outcome);
  ctx.metrics.job(result.tokens_in, tokens_out, duration_ms, sink.first_token_ms());
  observe::Fields end_fields = {{"job_id", req.job_id},
                                {"correlation_id", ex.correlation_id},
                                {"outcome", outcome},
                                {"tokens_in", static_cast<uint64_t>(result.tokens_in)},
                                {"tokens_out", static_cast<uint64_t>(tokens_out)},
                                {"duration_ms", duration_ms},
                                {"ttft_ms", sink.first_token_ms()},
                                {"output_bytes", static_cast<uint64_t>(sse.output_text().size())},
                                {"output_sha256", observe::sha256_hex(sse.output_text())},
                                {"client_gone", client_gone}};
  if (result.ok) end_fields.emplace_back("stop_reason", stop_reason_name(result.stop_reason));
  if (!result.ok) {
    observe::error("error", {{"job_id", req.job_id},
                             {"correlation_id", ex.correlation_id},
                             {"code", result.error_code},
                             {"message", result.error_message},
                             {"retriable", result.retriable}});
  }
  observe::info("execute_end", end_fields);
}

} // namespace

void handle_execute(ServerContext &ctx, Exchange &ex) {
  if (ex.body_too_large) {
    reject(ctx, ex, "INVALID_REQUEST",
           "body: larger than " + std::to_string(kMaxBodyBytes) + " bytes; expected at most 1 MiB", "body");
    return;
  }
  if (ctx.slot.draining()) {
    reject(ctx, ex, "SHUTTING_DOWN", "worker is shutting down; expected no new jobs while draining", {},
           kDrainingRetryAfterS);
    return;
  }
  ModelFacts facts = ctx.backend.facts();
  RequestLimits limits;
  limits.vocab_size = facts.vocab_size;
  limits.max_tokens_out = ctx.options.max_tokens_out;
  auto parsed = parse_execute_request(ex.body, limits);
  if (auto *e = std::get_if<ValidationError>(&parsed)) {
    reject(ctx, ex, "INVALID_REQUEST", e->message, e->field);
    return;
  }
  JobRequest &req = std::get<JobRequest>(parsed);

  // Deadline: the worker's own inference timeout, tightened by X-Deadline when the client sent one.
  auto admitted = Clock::now();
  auto deadline = admitted + std::chrono::seconds(ctx.options.inference_timeout_sec);
  double client_remaining_ms = -1;
  if (ex.request.has("X-Deadline")) {
    auto d = parse_deadline_header(ex.request.get("X-Deadline"));
    if (auto *msg = std::get_if<std::string>(&d)) {
      reject(ctx, ex, "INVALID_REQUEST", *msg, "X-Deadline");
      return;
    }
    auto remaining = std::get<std::chrono::system_clock::time_point>(d) - std::chrono::system_clock::now();
    client_remaining_ms = std::chrono::duration<double, std::milli>(remaining).count();
    auto client_deadline = admitted + std::chrono::duration_cast<Clock::duration>(remaining);
    deadline = std::min(deadline, client_deadline);
  }

  switch (ctx.slot.try_begin(req.job_id)) {
  case JobSlot::Admit::ok: break;
  case JobSlot::Admit::busy:
    reject(ctx, ex, "WORKER_BUSY", "a job is already running; expected one job at a time, retry later", {},
           kBusyRetryAfterS);
    return;
  case JobSlot::Admit::draining:
    reject(ctx, ex, "SHUTTING_DOWN", "worker is shutting down; expected no new jobs while draining", {},
           kDrainingRetryAfterS);
    return;
  }
  // From here the slot is ours: release it on every path.
  struct Release {
    JobSlot &slot;
    ~Release() { slot.finish(); }
  } release{ctx.slot};

  uint32_t tokens_in = 0;
  try {
    tokens_in = ctx.backend.count_prompt_tokens(req.prompt);
  } catch (const BackendError &e) {
    reject(ctx, ex, e.code(), std::string("prompt: ") + e.what(), "prompt");
    return;
  } catch (const std::exception &e) {
    reject(ctx, ex, "INTERNAL", std::string("prompt: tokenization failed: ") + e.what(), "prompt");
    return;
  }
  uint32_t max_in =
      facts.context_length ? facts.context_length - 1 : UINT32_MAX; // room for >= 1 output token
  if (ctx.options.max_tokens_in) max_in = std::min(max_in, ctx.options.max_tokens_in);
  if (tokens_in > max_in) {
    reject(ctx, ex, "PROMPT_TOO_LONG",
           "field 'prompt': found " + std::to_string(tokens_in) + " tokens; expected at most " +
               std::to_string(max_in) + " (context length " + std::to_string(facts.context_length) +
               (ctx.options.max_tokens_in ? ", --max-tokens-in " + std::to_string(ctx.options.max_tokens_in)
                                          : "") +
               ")",
           "prompt");
    return;
  }
  if (facts.context_length) req.max_tokens = std::min(req.max_tokens, facts.context_length - tokens_in);

  observe::info("execute_start", {{"job_id", req.job_id},
                                  {"correlation_id", ex.correlation_id},
                                  {"prompt_chars", static_cast<uint64_t>(utf8_code_points(req.prompt))},
                                  {"prompt_sha256", observe::sha256_hex(req.prompt)},
                                  {"tokens_in", static_cast<uint64_t>(tokens_in)},
                                  {"max_tokens", static_cast<uint64_t>(req.max_tokens)},
                                  {"stop_count", static_cast<uint64_t>(req.stop.size())},
                                  {"deadline_remaining_ms", ms_since(deadline) * -1.0},
                                  {"client_deadline_remaining_ms", client_remaining_ms}});
  stream_job(ctx, ex, req, tokens_in, admitted, deadline, facts.model);
}

} // namespace wo::http
