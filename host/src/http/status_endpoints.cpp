// GET /health and GET /metrics: both served from cached state (no GPU call on the request path).
#include "http/server_context.hpp"

#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

namespace wo::http {
namespace {
using Writer = rapidjson::Writer<rapidjson::StringBuffer>;
void put(Writer &w, const char *k, const std::string &v) {
  w.Key(k);
  w.String(v.c_str(), static_cast<rapidjson::SizeType>(v.size()));
}
} // namespace

void handle_health(ServerContext &ctx, Exchange &ex) {
  ModelFacts f = ctx.backend.facts();
  const char *state = !f.healthy            ? "failed"
                      : ctx.slot.draining() ? "draining"
                      : ctx.slot.busy()     ? "busy"
                      : f.resident          ? "ready"
                                            : "starting";
  rapidjson::StringBuffer sb;
  Writer w(sb);
  w.StartObject();
  put(w, "status", f.healthy ? "healthy" : "unhealthy");
  put(w, "state", state);
  put(w, "worker_id", ctx.options.worker_id);
  put(w, "model", f.model);
  w.Key("resident");
  w.Bool(f.resident);
  put(w, "quant_kind", f.quant_kind);
  w.Key("vram_bytes_used");
  w.Uint64(f.vram_bytes_used);
  put(w, "tokenizer_kind", f.tokenizer_kind);
  w.Key("vocab_size");
  w.Uint(f.vocab_size);
  w.Key("context_length");
  w.Uint(f.context_length);
  w.Key("uptime_seconds");
  w.Uint64(static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::seconds>(std::chrono::steady_clock::now() - ctx.started)
          .count()));
  put(w, "sm", f.sm);
  put(w, "cuda_runtime_version", f.cuda_runtime_version);
  w.Key("plugins");
  w.StartArray();
  for (const auto &p : f.plugins) {
    w.StartObject();
    put(w, "name", p.name);
    put(w, "kind", p.kind);
    put(w, "version", p.version);
    w.EndObject();
  }
  w.EndArray();
  w.EndObject();
  // Unhealthy answers 503 so plain HTTP probes notice without parsing the body.
  send_json(ex, f.healthy ? 200 : 503, sb.GetString());
}

void handle_metrics(ServerContext &ctx, Exchange &ex) {
  std::string text = ctx.metrics.render();
  ex.response.setStatus(Poco::Net::HTTPResponse::HTTP_OK);
  ex.response.setContentType("text/plain; version=0.0.4; charset=utf-8");
  ex.response.setContentLength(static_cast<std::streamsize>(text.size()));
  ex.response.send() << text;
}

} // namespace wo::http
