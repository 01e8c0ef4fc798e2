#include "http/sse_stream.hpp"

#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include <chrono>
#include <cstdio>
#include <ctime>

namespace wo::http {
namespace {
using Writer = rapidjson::Writer<rapidjson::StringBuffer>;
void put(Writer &w, const char *key, const std::string &v) {
  w.Key(key);
  w.String(v.c_str(), static_cast<rapidjson::SizeType>(v.size()));
}
} // namespace

bool SseStream::write(const char *event, const std::string &json) {
  if (gone_) return false;
  try {
    // The JSON writer escapes control characters, so data is always a single line.
    out_ << "event: " << event << "\ndata: " << json << "\n\n";
    out_.flush();
  } catch (...) {
    gone_ = true;
    return false;
  }
  if (!out_.good()) gone_ = true;
  return !gone_;
}

bool SseStream::started(const std::string &job_id, const std::string &model, const std::string &started_at,
                        uint64_t seed) {
  if (started_ || terminal_) return false;
  started_ = true;
  rapidjson::StringBuffer sb;
  Writer w(sb);
  w.StartObject();
  put(w, "job_id", job_id);
  put(w, "model", model);
  put(w, "started_at", started_at);
  w.Key("seed");
  w.Uint64(seed);
  w.EndObject();
  return write("started", sb.GetString());
}

bool SseStream::token(const std::string &text, uint32_t index) {
  if (!started_ || terminal_) return false;
  output_ += text;
  rapidjson::StringBuffer sb;
  Writer w(sb);
  w.StartObject();
  put(w, "t", text);
  w.Key("i");
  w.Uint(index);
  w.EndObject();
  return write("token", sb.GetString());
}

bool SseStream::end(uint32_t tokens_out, uint32_t tokens_in, double decode_time_ms,
                    const std::string &stop_reason) {
  if (!started_ || terminal_) return false;
  terminal_ = true;
  rapidjson::StringBuffer sb;
  Writer w(sb);
  w.StartObject();
  w.Key("tokens_out");
  w.Uint(tokens_out);
  w.Key("tokens_in");
  w.Uint(tokens_in);
  w.Key("decode_time_ms");
  w.Double(decode_time_ms);
  put(w, "stop_reason", stop_reason);
  w.EndObject();
  return write("end", sb.GetString());
}

bool SseStream::error(const std::string &code, const std::string &message, bool retriable) {
  if (terminal_) return false;
  terminal_ = true;
  rapidjson::StringBuffer sb;
  Writer w(sb);
  w.StartObject();
  put(w, "code", code);
  put(w, "message", message);
  w.Key("retriable");
  w.Bool(retriable);
  w.EndObject();
  return write("error", sb.GetString());
}

} // namespace wo::http
