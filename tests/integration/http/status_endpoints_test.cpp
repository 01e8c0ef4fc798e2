// /health schema, /metrics as Prometheus text, 404/405, correlation ids.
#include "server_fixture.hpp"

#include <cmath>
#include <regex>

namespace wo::http::testing {
namespace {

using ::testing::Return;

TEST_F(ServerTest, HealthHasTheDocumentedSchemaFromCachedFacts) {
  start();
  auto r = get("/health");
  ASSERT_EQ(r.status, 200);
  EXPECT_EQ(r.header("Content-Type"), "application/json");
  auto h = parse_json(r.body);
  ASSERT_TRUE(h.IsObject()) << r.body;
  struct Key {
    const char *name;
    bool (rapidjson::Value::*is)() const;
  };
  const Key keys[] = {{"status", &rapidjson::Value::IsString},
                      {"state", &rapidjson::Value::IsString},
                      {"worker_id", &rapidjson::Value::IsString},
                      {"model", &rapidjson::Value::IsString},
                      {"resident", &rapidjson::Value::IsBool},
                      {"quant_kind", &rapidjson::Value::IsString},
                      {"vram_bytes_used", &rapidjson::Value::IsUint64},
                      {"tokenizer_kind", &rapidjson::Value::IsString},
                      {"vocab_size", &rapidjson::Value::IsUint},
                      {"context_length", &rapidjson::Value::IsUint},
                      {"uptime_seconds", &rapidjson::Value::IsUint64},
                      {"sm", &rapidjson::Value::IsString},
                      {"cuda_runtime_version", &rapidjson::Value::IsString},
                      {"plugins", &rapidjson::Value::IsArray}};
  for (const auto &k : keys) {
    ASSERT_TRUE(h.HasMember(k.name)) << "missing " << k.name;
    EXPECT_TRUE((h[k.name].*k.is)()) << k.name << " has the wrong type";
  }
  ModelFacts f = tiny_facts();
  EXPECT_STREQ(h["status"].GetString(), "healthy");
  EXPECT_STREQ(h["state"].GetString(), "ready");
  EXPECT_EQ(h["worker_id"].GetString(), options_.worker_id);
  EXPECT_EQ(h["model"].GetString(), f.model);
  EXPECT_EQ(h["quant_kind"].GetString(), f.quant_kind);
  EXPECT_EQ(h["vram_bytes_used"].GetUint64(), f.vram_bytes_used);
  EXPECT_EQ(h["vocab_size"].GetUint(), f.vocab_size);
  EXPECT_EQ(h["context_length"].GetUint(), f.context_length);
  EXPECT_EQ(h["sm"].GetString(), f.sm);
  ASSERT_EQ(h["plugins"].Size(), 2u);
  EXPECT_STREQ(h["plugins"][0]["name"].GetString(), "llama");
  EXPECT_STREQ(h["plugins"][0]["version"].GetString(), "0.1.0");
}

TEST_F(ServerTest, UnhealthyBackendReports503Failed) {
  ModelFacts f = tiny_facts();
  f.healthy = false;
  ON_CALL(*backend_, facts()).WillByDefault(Return(f));
  start();
  auto r = get("/health");
  EXPECT_EQ(r.status, 503);
  auto h = parse_json(r.body);
  EXPECT_STREQ(h["status"].GetString(), "unhealthy");
  EXPECT_STREQ(h["state"].GetString(), "failed");
}

TEST_F(ServerTest, MetricsParseAsPrometheusTextAndCountJobs) {
  start();
  checked_stream(post("/execute", R"({"job_id":"m1","prompt":"count me"})").body);
  post("/execute", R"({"job_id":""})"); // invalid
  auto r = get("/metrics");
  ASSERT_EQ(r.status, 200);
  EXPECT_EQ(r.header("Content-Type").rfind("text/plain; version=0.0.4", 0), 0u) << r.header("Content-Type");
  PromText m = parse_prometheus(r.body);
  for (const auto &e : m.errors)
    ADD_FAILURE() << e;
  EXPECT_EQ(m.types["worker_vram_bytes"], "gauge");
  EXPECT_EQ(m.types["worker_uptime_seconds"], "gauge");
  EXPECT_EQ(m.types["worker_requests_total"], "counter");
  EXPECT_EQ(m.types["worker_tokens_in_total"], "counter");
  EXPECT_EQ(m.types["worker_tokens_generated_total"], "counter");
  EXPECT_EQ(m.types["worker_inference_duration_ms"], "histogram");
  EXPECT_EQ(m.types["worker_time_to_first_token_ms"], "histogram");
  for (const auto &s : m.samples) {
    EXPECT_EQ(s.labels.count("model"), 1u) << s.name;
    EXPECT_EQ(s.labels.count("quant_kind"), 1u) << s.name;
  }
  EXPECT_EQ(m.value("worker_vram_bytes", {{"model", "llama-tiny-Q8_0.gguf"}, {"quant_kind", "Q8_0"}}),
            123456789.0);
  EXPECT_EQ(m.value("worker_requests_total", {{"outcome", "success"}}), 1.0);
  EXPECT_EQ(m.value("worker_requests_total", {{"outcome", "invalid_request"}}), 1.0);
  EXPECT_EQ(m.value("worker_tokens_in_total"), scripted_token_count("count me"));
  EXPECT_EQ(m.value("worker_tokens_generated_total"), 4.0);
  EXPECT_GE(m.value("worker_uptime_seconds"), 0.0);
  for (const char *h : {"worker_inference_duration_ms", "worker_time_to_first_token_ms"}) {
    std::string name = h;
    EXPECT_EQ(m.value(name + "_count"), 1.0) << h;
    EXPECT_EQ(m.value(name + "_bucket", {{"le", "+Inf"}}), 1.0) << h;
    double prev = 0;
    for (const auto &s : m.samples) {
      if (s.name != name + "_bucket") continue;
      EXPECT_GE(s.value, prev) << h << " buckets must be cumulative";
      prev = s.value;
    }
  }
}

TEST_F(ServerTest, UnknownPathIs404JsonAndWrongMethodIs405WithAllow) {
  start();
  auto nf = get("/nope");
  EXPECT_EQ(nf.status, 404);
  EXPECT_STREQ(parse_json(nf.body)["code"].GetString(), "NOT_FOUND");
  EXPECT_EQ(nf.header("Content-Type"), "application/json");
  auto na = get("/execute");
  EXPECT_EQ(na.status, 405);
  EXPECT_EQ(na.header("Allow"), "POST");
  EXPECT_STREQ(parse_json(na.body)["code"].GetString(), "METHOD_NOT_ALLOWED");
  auto na2 = post("/health", "{}");
  EXPECT_EQ(na2.status, 405);
  EXPECT_EQ(na2.header("Allow"), "GET");
  EXPECT_EQ(http_request(port(), "DELETE", "/cancel").status, 405);
}

TEST_F(ServerTest, CorrelationIdIsEchoedOrGeneratedAsUuidV4) {
  start();
  auto echoed = http_request(port(), "GET", "/health", "", {{"X-Correlation-Id", "req-abc-123"}});
  EXPECT_EQ(echoed.header("X-Correlation-Id"), "req-abc-123");
  auto generated = get("/health");
  static const std::regex v4("[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}");
  EXPECT_TRUE(std::regex_match(generated.header("X-Correlation-Id"), v4))
      << generated.header("X-Correlation-Id");
  EXPECT_NE(get("/health").header("X-Correlation-Id"), generated.header("X-Correlation-Id"));
  // On errors and streams too, and carried into the job's log events.
  EXPECT_EQ(post("/execute", "{", {{"X-Correlation-Id", "bad-1"}}).header("X-Correlation-Id"), "bad-1");
  auto s = post("/execute", R"({"job_id":"c","prompt":"p"})", {{"X-Correlation-Id", "stream-7"}});
  EXPECT_EQ(s.header("X-Correlation-Id"), "stream-7");
  auto start_events = log_events("execute_start");
  ASSERT_EQ(start_events.size(), 1u);
  EXPECT_STREQ(parse_json(start_events[0])["correlation_id"].GetString(), "stream-7");
}

TEST_F(ServerTest, NoPromptOrOutputTextInAnyLogLine) {
  const std::string prompt = "SECRET-PROMPT-7f3a9 tell me everything";
  EXPECT_CALL(*backend_, run(::testing::_, ::testing::_, ::testing::_, ::testing::_))
      .WillOnce(
          ::testing::Invoke(ScriptedJob{{"SECRET-", "OUTPUT-", "c41e"}, StopReason::eos, {}, 1, nullptr}))
      .WillOnce(::testing::Invoke([](const JobRequest &, TokenSink &, const std::atomic<bool> &, auto) {
        return failed("INTERNAL", "failed", false);
      }));
  start();
  checked_stream(
      post("/execute", R"({"job_id":"secret","prompt":")" + prompt + R"(","stop":["SECRET-STOP"]})").body);
  checked_stream(post("/execute", R"({"job_id":"secret2","prompt":")" + prompt + R"("})").body);
  post("/execute", R"({"job_id":"secret3","prompt":")" + prompt + R"(","temperature":9})");
  post("/execute", R"({"job_id":"secret4","prompt":")" + prompt + R"(","stop":[""]})");
  auto lines = log_lines();
  ASSERT_GE(lines.size(), 4u);
  for (const auto &l : lines) {
    EXPECT_EQ(l.find("SECRET-PROMPT"), std::string::npos) << l;
    EXPECT_EQ(l.find("SECRET-OUTPUT"), std::string::npos) << l;
    EXPECT_EQ(l.find("OUTPUT-c41e"), std::string::npos) << l;
    EXPECT_EQ(l.find("SECRET-STOP"), std::string::npos) << l;
  }
  auto start_event = parse_json(log_events("execute_start").at(0));
  EXPECT_EQ(start_event["prompt_sha256"].GetString(), observe::sha256_hex(prompt));
  EXPECT_EQ(start_event["prompt_chars"].GetUint64(), prompt.size());
  auto end_event = parse_json(log_events("execute_end").at(0));
  EXPECT_EQ(end_event["output_sha256"].GetString(), observe::sha256_hex("SECRET-OUTPUT-c41e"));
  EXPECT_EQ(end_event["output_bytes"].GetUint64(), 18u);
}

} // namespace
} // namespace wo::http::testing
