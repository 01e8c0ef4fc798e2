// POST /execute end to end: event order, SSE framing, payloads, request plumbing, backend errors.
#include "server_fixture.hpp"

#include <regex>

namespace wo::http::testing {
namespace {

using ::testing::_;
using ::testing::Invoke;

const std::regex kRfc3339(R"(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2}))");

TEST_F(ServerTest, NormalStreamHasStartedTokensEndInOrder) {
  start();
  auto r = post("/execute", R"({"job_id":"job-1","prompt":"Say hello","seed":7})");
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.header("Content-Type"), "text/event-stream");
  EXPECT_EQ(r.header("Cache-Control"), "no-cache");
  auto events = checked_stream(r.body);
  ASSERT_EQ(events.size(), 6u);
  EXPECT_EQ(events[0].event, "started");
  auto started = parse_json(events[0].data);
  EXPECT_STREQ(started["job_id"].GetString(), "job-1");
  EXPECT_STREQ(started["model"].GetString(), "llama-tiny-Q8_0.gguf");
  EXPECT_TRUE(std::regex_match(started["started_at"].GetString(), kRfc3339))
      << started["started_at"].GetString();
  EXPECT_EQ(started["seed"].GetUint64(), 7u);
  const char *texts[] = {"Hello", ",", " world", "!"};
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(events[1 + i].event, "token");
    auto t = parse_json(events[1 + i].data);
    EXPECT_STREQ(t["t"].GetString(), texts[i]);
    EXPECT_EQ(t["i"].GetInt(), i);
  }
  EXPECT_EQ(events[5].event, "end");
  auto end = parse_json(events[5].data);
  EXPECT_EQ(end["tokens_out"].GetUint(), 4u);
  EXPECT_EQ(end["tokens_in"].GetUint(), scripted_token_count("Say hello"));
  EXPECT_TRUE(end["decode_time_ms"].IsNumber());
  EXPECT_STREQ(end["stop_reason"].GetString(), "eos");
}

TEST_F(ServerTest, SeedChosenByBackendIsReportedWhenRequestHasNone) {
  start();
  auto events = checked_stream(post("/execute", R"({"job_id":"j","prompt":"p"})").body);
  ASSERT_FALSE(events.empty());
  EXPECT_EQ(parse_json(events[0].data)["seed"].GetUint64(), 42u);
}

TEST_F(ServerTest, StopReasonsReachTheEndEvent) {
  ScriptedJob stop_seq{{"a", "b"}, StopReason::stop_sequence, {}, 1, nullptr};
  EXPECT_CALL(*backend_, run(_, _, _, _)).WillOnce(Invoke(stop_seq)).WillOnce(Invoke(slow_job(10, {})));
  start();
  auto events = checked_stream(post("/execute", R"({"job_id":"j","prompt":"p","stop":["c"]})").body);
  EXPECT_STREQ(parse_json(events.back().data)["stop_reason"].GetString(), "stop_sequence");
  auto capped = checked_stream(post("/execute", R"({"job_id":"j2","prompt":"p","max_tokens":2})").body);
  ASSERT_EQ(capped.size(), 4u); // started, 2 tokens, end
  EXPECT_STREQ(parse_json(capped.back().data)["stop_reason"].GetString(), "max_tokens");
  EXPECT_EQ(parse_json(capped.back().data)["tokens_out"].GetUint(), 2u);
}

TEST_F(ServerTest, EveryRequestFieldReachesTheBackend) {
  JobRequest seen;
  EXPECT_CALL(*backend_, run(_, _, _, _))
      .WillOnce(Invoke([&](const JobRequest &r, TokenSink &s, const std::atomic<bool> &c, auto d) {
        seen = r;
        return ScriptedJob{{"x"}, StopReason::eos, {}, 1, nullptr}(r, s, c, d);
      }));
  start();
  auto r = post("/execute", R"({"job_id":"all","prompt":"héllo","max_tokens":17,"temperature":0.5,"top_p":0.9,
    "top_k":40,"min_p":0.05,"repetition_penalty":1.1,"stop":["\n\n","END"],"seed":18446744073709551615,
    "unknown_field":{"ignored":[1,2,3]}})");
  ASSERT_EQ(r.status, 200) << r.body;
  checked_stream(r.body);
  EXPECT_EQ(seen.job_id, "all");
  EXPECT_EQ(seen.prompt, "héllo");
  EXPECT_EQ(seen.max_tokens, 17u);
  EXPECT_FLOAT_EQ(seen.temperature, 0.5f);
  EXPECT_FLOAT_EQ(seen.top_p, 0.9f);
  EXPECT_EQ(seen.top_k, 40u);
  EXPECT_FLOAT_EQ(seen.min_p, 0.05f);
  EXPECT_FLOAT_EQ(seen.repetition_penalty, 1.1f);
  EXPECT_EQ(seen.stop, (std::vector<std::string>{"\n\n", "END"}));
  EXPECT_EQ(seen.seed, UINT64_MAX);
  EXPECT_TRUE(seen.seed_given);
}

TEST_F(ServerTest, MaxTokensDefaultsToAndIsCappedByMaxTokensOut) {
  options_.max_tokens_out = 5;
  std::vector<uint32_t> seen;
  ON_CALL(*backend_, run(_, _, _, _))
      .WillByDefault(Invoke([&](const JobRequest &r, TokenSink &s, const std::atomic<bool> &c, auto d) {
        seen.push_back(r.max_tokens);
        return ScriptedJob{{"x"}, StopReason::eos, {}, 1, nullptr}(r, s, c, d);
      }));
  start();
  checked_stream(post("/execute", R"({"job_id":"a","prompt":"p"})").body);
  checked_stream(post("/execute", R"({"job_id":"b","prompt":"p","max_tokens":2048})").body);
  checked_stream(post("/execute", R"({"job_id":"c","prompt":"p","max_tokens":3})").body);
  EXPECT_EQ(seen, (std::vector<uint32_t>{5, 5, 3}));
}

TEST_F(ServerTest, MaxTokensIsCappedByRemainingContext) {
  uint32_t seen = 0;
  ON_CALL(*backend_, run(_, _, _, _))
      .WillByDefault(Invoke([&](const JobRequest &r, TokenSink &s, const std::atomic<bool> &c, auto d) {
        seen = r.max_tokens;
        return ScriptedJob{{"x"}, StopReason::eos, {}, 1, nullptr}(r, s, c, d);
      }));
  start();
  std::string prompt(400, 'a'); // 101 scripted tokens of a 256 context
  checked_stream(post("/execute", R"({"job_id":"a","prompt":")" + prompt + R"(","max_tokens":2048})").body);
  EXPECT_EQ(seen, 256u - 101u);
}

TEST_F(ServerTest, BackendErrorAfterStartIsOneSseErrorEvent) {
  EXPECT_CALL(*backend_, run(_, _, _, _))
      .WillOnce(Invoke([](const JobRequest &, TokenSink &s, const std::atomic<bool> &, auto) {
        s.started(1);
        s.token("a", 0);
        return failed("VRAM_OOM", "KV cache allocation of 1048576 bytes failed", true, 1);
      }));
  start();
  auto r = post("/execute", R"({"job_id":"oom","prompt":"p"})");
  EXPECT_EQ(r.status, 200);
  auto events = checked_stream(r.body);
  ASSERT_EQ(events.size(), 3u);
  auto err = parse_json(events.back().data);
  EXPECT_EQ(events.back().event, "error");
  EXPECT_STREQ(err["code"].GetString(), "VRAM_OOM");
  EXPECT_STREQ(err["message"].GetString(), "KV cache allocation of 1048576 bytes failed");
  EXPECT_TRUE(err["retriable"].GetBool());
}

TEST_F(ServerTest, BackendFailureBeforeStartedIsALoneErrorEvent) {
  EXPECT_CALL(*backend_, run(_, _, _, _))
      .WillOnce(Invoke([](const JobRequest &, TokenSink &, const std::atomic<bool> &, auto) {
        return failed("CUDA_ERROR", "illegal memory access in forward", false);
      }));
  start();
  auto events = checked_stream(post("/execute", R"({"job_id":"cuda","prompt":"p"})").body);
  ASSERT_EQ(events.size(), 1u);
  EXPECT_STREQ(parse_json(events[0].data)["code"].GetString(), "CUDA_ERROR");
}

TEST_F(ServerTest, BackendExceptionBecomesInternalErrorAndServerKeepsServing) {
  EXPECT_CALL(*backend_, run(_, _, _, _))
      .WillOnce(Invoke([](const JobRequest &, TokenSink &s, const std::atomic<bool> &, auto) -> JobResult {
        s.started(3);
        throw std::runtime_error("unexpected state");
      }))
      .WillOnce(Invoke(ScriptedJob{{"ok"}, StopReason::eos, {}, 1, nullptr}));
  start();
  auto events = checked_stream(post("/execute", R"({"job_id":"boom","prompt":"p"})").body);
  auto err = parse_json(events.back().data);
  EXPECT_STREQ(err["code"].GetString(), "INTERNAL");
  EXPECT_NE(std::string(err["message"].GetString()).find("unexpected state"), std::string::npos);
  EXPECT_EQ(checked_stream(post("/execute", R"({"job_id":"after","prompt":"p"})").body).back().event, "end");
}

TEST_F(ServerTest, TokensOutCountsGeneratedTokensNotTokenEvents) {
  // Token 1's bytes end inside a UTF-8 character: it has no event; token 2 completes the character.
  // A client comparing tokens_out with max_tokens (or billing by it) must see 3, not 2 events.
  EXPECT_CALL(*backend_, run(_, _, _, _))
      .WillOnce(Invoke([](const JobRequest &, TokenSink &s, const std::atomic<bool> &, auto) {
        EXPECT_TRUE(s.started(1));
        EXPECT_TRUE(s.token("a", 0));
        EXPECT_TRUE(s.token("\xC3\xA9", 2));
        JobResult r;
        r.ok = true;
        r.tokens_out = 3;
        r.stop_reason = StopReason::max_tokens;
        return r;
      }));
  start();
  auto events = checked_stream(post("/execute", R"({"job_id":"j","prompt":"p","max_tokens":3})").body);
  ASSERT_EQ(events.size(), 4u); // started, 2 token events, end
  EXPECT_EQ(parse_json(events[2].data)["i"].GetInt(), 2);
  auto end = parse_json(events.back().data);
  EXPECT_EQ(end["tokens_out"].GetUint(), 3u);
  EXPECT_STREQ(end["stop_reason"].GetString(), "max_tokens");
}

TEST_F(ServerTest, SinkRefusesEventsAfterTheTerminalOne) {
  // A backend that misbehaves by writing after it was cancelled must not corrupt the stream.
  EXPECT_CALL(*backend_, run(_, _, _, _))
      .WillOnce(Invoke([](const JobRequest &, TokenSink &s, const std::atomic<bool> &, auto) {
        EXPECT_TRUE(s.started(1));
        EXPECT_FALSE(s.started(2)) << "second started accepted";
        s.token("a", 0);
        JobResult r;
        r.ok = true;
        r.tokens_out = 1;
        return r;
      }));
  start();
  auto events = checked_stream(post("/execute", R"({"job_id":"j","prompt":"p"})").body);
  EXPECT_EQ(events.size(), 3u);
}

TEST_F(ServerTest, InferenceTimeoutEndsTheStreamWithOneErrorEvent) {
  options_.inference_timeout_sec = 1;
  ON_CALL(*backend_, run(_, _, _, _)).WillByDefault(Invoke(slow_job(1000, std::chrono::milliseconds(5))));
  start();
  auto events = checked_stream(post("/execute", R"({"job_id":"slow","prompt":"p"})").body);
  auto err = parse_json(events.back().data);
  EXPECT_STREQ(err["code"].GetString(), "INFERENCE_TIMEOUT");
  EXPECT_TRUE(err["retriable"].GetBool());
  EXPECT_GT(events.size(), 2u);
  EXPECT_LT(events.size(), 1000u);
}

TEST_F(ServerTest, XDeadlineTightensTheJobDeadlineAndIsLogged) {
  ON_CALL(*backend_, run(_, _, _, _)).WillByDefault(Invoke(slow_job(1000, std::chrono::milliseconds(5))));
  start();
  auto in_300ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                      (std::chrono::system_clock::now() + std::chrono::milliseconds(300)).time_since_epoch())
                      .count();
  auto r = post("/execute", R"({"job_id":"dl","prompt":"p"})", {{"X-Deadline", std::to_string(in_300ms)}});
  auto events = checked_stream(r.body);
  EXPECT_STREQ(parse_json(events.back().data)["code"].GetString(), "INFERENCE_TIMEOUT");
  auto starts = log_events("execute_start");
  ASSERT_EQ(starts.size(), 1u);
  auto remaining = parse_json(starts[0])["client_deadline_remaining_ms"].GetDouble();
  EXPECT_GT(remaining, 0.0);
  EXPECT_LE(remaining, 300.0);
}

TEST_F(ServerTest, XDeadlineAcceptsRfc3339AndRejectsGarbage) {
  start();
  auto ok =
      post("/execute", R"({"job_id":"a","prompt":"p"})", {{"X-Deadline", "2099-01-01T00:00:00.250+02:00"}});
  EXPECT_EQ(checked_stream(ok.body).back().event, "end");
  auto bad = post("/execute", R"({"job_id":"b","prompt":"p"})", {{"X-Deadline", "tomorrow"}});
  EXPECT_EQ(bad.status, 400);
  auto body = parse_json(bad.body);
  EXPECT_STREQ(body["field"].GetString(), "X-Deadline");
  EXPECT_NE(std::string(body["message"].GetString()).find("tomorrow"), std::string::npos);
}

TEST_F(ServerTest, PromptLongerThanContextIs400BeforeTheStream) {
  EXPECT_CALL(*backend_, run(_, _, _, _)).Times(0);
  start();
  std::string prompt(1020, 'x'); // 256 scripted tokens: no room left in a 256-token context
  auto r = post("/execute", R"({"job_id":"long","prompt":")" + prompt + R"("})");
  EXPECT_EQ(r.status, 400);
  auto body = parse_json(r.body);
  EXPECT_STREQ(body["code"].GetString(), "PROMPT_TOO_LONG");
  EXPECT_STREQ(body["field"].GetString(), "prompt");
  EXPECT_NE(std::string(body["message"].GetString()).find("256 tokens"), std::string::npos) << r.body;
}

TEST_F(ServerTest, MaxTokensInBoundIsInclusive) {
  options_.max_tokens_in = 16;
  start();
  std::string at_limit(60, 'x');   // 16 tokens
  std::string over_limit(64, 'x'); // 17 tokens
  EXPECT_EQ(post("/execute", R"({"job_id":"a","prompt":")" + at_limit + R"("})").status, 200);
  auto r = post("/execute", R"({"job_id":"b","prompt":")" + over_limit + R"("})");
  EXPECT_EQ(r.status, 400);
  EXPECT_NE(r.body.find("--max-tokens-in 16"), std::string::npos) << r.body;
}

TEST_F(ServerTest, TokenizerFailureIsAnErrorBeforeTheStream) {
  EXPECT_CALL(*backend_, count_prompt_tokens(_)).WillOnce(Invoke([](const std::string &) -> uint32_t {
    throw BackendError("INVALID_REQUEST", "byte 3 cannot be encoded by the vocabulary");
  }));
  start();
  auto r = post("/execute", R"({"job_id":"t","prompt":"p"})");
  EXPECT_EQ(r.status, 400);
  EXPECT_NE(r.body.find("byte 3 cannot be encoded"), std::string::npos);
}

TEST_F(ServerTest, TokenTextIsJsonEscapedOnOneDataLine) {
  EXPECT_CALL(*backend_, run(_, _, _, _))
      .WillOnce(Invoke(ScriptedJob{{"line1\nline2", "\"quoted\"", "tab\there", "\r\n\r\n", "é中🙂"},
                                   StopReason::eos,
                                   {},
                                   1,
                                   nullptr}));
  start();
  auto events = checked_stream(post("/execute", R"({"job_id":"esc","prompt":"p"})").body);
  ASSERT_EQ(events.size(), 7u);
  EXPECT_STREQ(parse_json(events[1].data)["t"].GetString(), "line1\nline2");
  EXPECT_STREQ(parse_json(events[4].data)["t"].GetString(), "\r\n\r\n");
  EXPECT_STREQ(parse_json(events[5].data)["t"].GetString(), "é中🙂");
}

} // namespace
} // namespace wo::http::testing
