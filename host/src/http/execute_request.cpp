#include "http/execute_request.hpp"

#include <rapidjson/document.h>
#include <rapidjson/error/en.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include <algorithm>
#include <cmath>
#include <optional>

namespace wo::http {
namespace {

using Value = rapidjson::Value;

const char *json_type_name(const Value &v) {
  if (v.IsNull()) return "null";
  if (v.IsBool()) return "boolean";
  if (v.IsString()) return "string";
  if (v.IsArray()) return "array";
  if (v.IsObject()) return "object";
  if (v.IsInt64() || v.IsUint64()) return "integer";
  return "number";
}

// A value as the message shows it: numbers verbatim, strings by length only, others by type.
std::string describe(const Value &v) {
  if (v.IsNumber()) {
    rapidjson::StringBuffer sb;
    rapidjson::Writer<rapidjson::StringBuffer> w(sb);
    v.Accept(w);
    return sb.GetString();
  }
  if (v.IsString()) return "a string of " + std::to_string(v.GetStringLength()) + " bytes";
  const char *t = json_type_name(v);
  return std::string(t[0] == 'a' || t[0] == 'o' ? "an " : "a ") + t;
}

ValidationError bad(const std::string &field, const std::string &found, const std::string &rule) {
  return {field, "field '" + field + "': found " + found + "; expected " + rule};
}

std::variant<rapidjson::Document, ValidationError> parse_object(std::string_view body) {
  if (body.size() > kMaxBodyBytes)
    return ValidationError{"body", "body: found " + std::to_string(body.size()) +
                                       " bytes; expected at most " + std::to_string(kMaxBodyBytes) +
                                       " bytes (1 MiB)"};
  rapidjson::Document doc;
  // Strict JSON: UTF-8 validated, no NaN/Infinity, no comments, no trailing commas. Iterative, so
  // deeply nested input cannot exhaust the stack.
  doc.Parse<rapidjson::kParseValidateEncodingFlag | rapidjson::kParseFullPrecisionFlag |
            rapidjson::kParseIterativeFlag>(body.data(), body.size());
  if (doc.HasParseError()) {
    std::string what = rapidjson::GetParseError_En(doc.GetParseError());
    if (body.empty()) what = "an empty body";
    return ValidationError{"body", "body: not valid JSON at byte offset " +
                                       std::to_string(doc.GetErrorOffset()) + " (" + what +
                                       "); expected a JSON object in UTF-8"};
  }
  if (!doc.IsObject())
    return ValidationError{"body", std::string("body: found ") + describe(doc) + "; expected a JSON object"};
  return doc;
}

const Value *member(const Value &obj, const char *name) {
  auto it = obj.FindMember(name);
  if (it == obj.MemberEnd()) return nullptr;
  return &it->value;
}

// A number field within [lo, hi]; absent keeps *out.
std::optional<ValidationError> number_field(const Value &obj, const char *name, double lo, double hi,
                                            float *out) {
  const Value *v = member(obj, name);
  if (!v) return std::nullopt;
  std::string rule = "a number in [" + describe(Value(lo)) + ", " + describe(Value(hi)) + "]";
  if (!v->IsNumber()) return bad(name, describe(*v), rule);
  double d = v->GetDouble();
  if (!std::isfinite(d) || d < lo || d > hi) return bad(name, describe(*v), rule);
  *out = static_cast<float>(d);
  return std::nullopt;
}

// An integer field within [lo, hi]; absent keeps *out.
std::optional<ValidationError> uint_field(const Value &obj, const char *name, uint64_t lo, uint64_t hi,
                                          const std::string &rule, uint64_t *out) {
  const Value *v = member(obj, name);
  if (!v) return std::nullopt;
  if (!v->IsUint64()) return bad(name, describe(*v), rule);
  uint64_t x = v->GetUint64();
  if (x < lo || x > hi) return bad(name, describe(*v), rule);
  *out = x;
  return std::nullopt;
}

std::optional<ValidationError> required_string(const Value &obj, const char *name, std::string *out) {
  const Value *v = member(obj, name);
  if (!v)
    return ValidationError{name, std::string("field '") + name + "': missing; expected a non-empty string"};
  if (!v->IsString() || v->GetStringLength() == 0) return bad(name, describe(*v), "a non-empty string");
  out->assign(v->GetString(), v->GetStringLength());
  return std::nullopt;
}

} // namespace

size_t utf8_code_points(std::string_view s) {
  size_t n = 0;
  for (unsigned char c : s)
    n += (c & 0xC0) != 0x80;
  return n;
}

std::variant<JobRequest, ValidationError> parse_execute_request(std::string_view body,
                                                                const RequestLimits &limits) {
  auto parsed = parse_object(body);
  if (auto *e = std::get_if<ValidationError>(&parsed)) return *e;
  const Value &obj = std::get<rapidjson::Document>(parsed);

  JobRequest r;
  if (auto e = required_string(obj, "job_id", &r.job_id)) return *e;
  if (auto e = required_string(obj, "prompt", &r.prompt)) return *e;
  if (size_t chars = utf8_code_points(r.prompt); chars > kMaxPromptChars)
    return bad("prompt", "a string of " + std::to_string(chars) + " characters",
               "1 to " + std::to_string(kMaxPromptChars) + " characters");

  uint64_t u = 0;
  u = std::min(kMaxTokensCeiling, limits.max_tokens_out);
  if (auto e = uint_field(obj, "max_tokens", 1, kMaxTokensCeiling,
                          "an integer in [1, " + std::to_string(kMaxTokensCeiling) + "]", &u))
    return *e;
  r.max_tokens = static_cast<uint32_t>(std::min<uint64_t>(u, limits.max_tokens_out));

  if (auto e = number_field(obj, "temperature", 0.0, 2.0, &r.temperature)) return *e;
  if (auto e = number_field(obj, "top_p", 0.0, 1.0, &r.top_p)) return *e;
  if (auto e = number_field(obj, "min_p", 0.0, 1.0, &r.min_p)) return *e;
  if (auto e = number_field(obj, "repetition_penalty", 0.0, 2.0, &r.repetition_penalty)) return *e;

  u = 0;
  uint64_t top_k_max = limits.vocab_size ? limits.vocab_size : UINT32_MAX;
  if (auto e = uint_field(obj, "top_k", 0, top_k_max,
                          "an integer in [0, " + std::to_string(top_k_max) +
                              (limits.vocab_size ? "] (the vocabulary size)" : "]"),
                          &u))
    return *e;
  r.top_k = static_cast<uint32_t>(u);

  if (const Value *v = member(obj, "seed")) {
    if (!v->IsUint64()) return bad("seed", describe(*v), "an integer in [0, 18446744073709551615]");
    r.seed = v->GetUint64();
    r.seed_given = true;
  }

  if (const Value *v = member(obj, "stop")) {
    std::string rule = "an array of at most " + std::to_string(kMaxStopSequences) + " non-empty strings";
    if (!v->IsArray()) return bad("stop", describe(*v), rule);
    if (v->Size() > kMaxStopSequences)
      return bad("stop", "an array of " + std::to_string(v->Size()) + " items", rule);
    for (rapidjson::SizeType i = 0; i < v->Size(); ++i) {
      const Value &s = (*v)[i];
      std::string field = "stop[" + std::to_string(i) + "]";
      if (!s.IsString() || s.GetStringLength() == 0) return bad(field, describe(s), "a non-empty string");
      r.stop.emplace_back(s.GetString(), s.GetStringLength());
    }
  }
  return r;
}

std::variant<std::string, ValidationError> parse_cancel_request(std::string_view body) {
  auto parsed = parse_object(body);
  if (auto *e = std::get_if<ValidationError>(&parsed)) return *e;
  std::string job_id;
  if (auto e = required_string(std::get<rapidjson::Document>(parsed), "job_id", &job_id)) return *e;
  return job_id;
}

} // namespace wo::http
