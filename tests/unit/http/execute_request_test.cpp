// parse_execute_request: one test per rule, both sides of every bound.
#include "http/execute_request.hpp"

#include <gtest/gtest.h>

#include <random>

namespace wo::http {
namespace {

RequestLimits limits() {
  RequestLimits l;
  l.vocab_size = 1000;
  l.max_tokens_out = 2048;
  return l;
}

std::string body(const std::string &extra) {
  return R"({"job_id":"j","prompt":"p")" + (extra.empty() ? "" : "," + extra) + "}";
}

// The field named by the error, or "" when the body is accepted.
std::string rejected_field(const std::string &b, RequestLimits l = limits()) {
  auto r = parse_execute_request(b, l);
  if (auto *e = std::get_if<ValidationError>(&r)) return e->field;
  return "";
}

JobRequest accepted(const std::string &b, RequestLimits l = limits()) {
  auto r = parse_execute_request(b, l);
  if (auto *e = std::get_if<ValidationError>(&r))
    ADD_FAILURE() << b.substr(0, 200) << " rejected: " << e->message;
  return std::holds_alternative<JobRequest>(r) ? std::get<JobRequest>(r) : JobRequest{};
}

TEST(ExecuteRequest, DefaultsWhenOptionalFieldsAreAbsent) {
  JobRequest r = accepted(body(""));
  EXPECT_EQ(r.max_tokens, 2048u);
  EXPECT_FLOAT_EQ(r.temperature, 1.0f);
  EXPECT_FLOAT_EQ(r.top_p, 1.0f);
  EXPECT_EQ(r.top_k, 0u);
  EXPECT_FLOAT_EQ(r.min_p, 0.0f);
  EXPECT_FLOAT_EQ(r.repetition_penalty, 1.0f);
  EXPECT_TRUE(r.stop.empty());
  EXPECT_FALSE(r.seed_given);
}

TEST(ExecuteRequest, JobIdIsARequiredNonEmptyString) {
  EXPECT_EQ(rejected_field(R"({"prompt":"p"})"), "job_id");
  EXPECT_EQ(rejected_field(R"({"job_id":"","prompt":"p"})"), "job_id");
  EXPECT_EQ(rejected_field(R"({"job_id":1,"prompt":"p"})"), "job_id");
  EXPECT_EQ(accepted(R"({"job_id":"x","prompt":"p"})").job_id, "x");
}

TEST(ExecuteRequest, PromptIsRequiredNonEmptyAndAtMost32768Characters) {
  EXPECT_EQ(rejected_field(R"({"job_id":"j"})"), "prompt");
  EXPECT_EQ(rejected_field(R"({"job_id":"j","prompt":""})"), "prompt");
  std::string at(32768, 'a'), over(32769, 'a');
  EXPECT_EQ(accepted(R"({"job_id":"j","prompt":")" + at + R"("})").prompt.size(), 32768u);
  EXPECT_EQ(rejected_field(R"({"job_id":"j","prompt":")" + over + R"("})"), "prompt");
  // Characters, not bytes: 32768 three-byte characters are fine.
  std::string wide;
  for (int i = 0; i < 32768; ++i)
    wide += "\xe4\xb8\xad";
  EXPECT_EQ(accepted(R"({"job_id":"j","prompt":")" + wide + R"("})").prompt.size(), 3u * 32768u);
}

TEST(ExecuteRequest, MaxTokensIsAnIntegerFrom1To2048CappedByTheOption) {
  EXPECT_EQ(rejected_field(body(R"("max_tokens":0)")), "max_tokens");
  EXPECT_EQ(accepted(body(R"("max_tokens":1)")).max_tokens, 1u);
  EXPECT_EQ(accepted(body(R"("max_tokens":2048)")).max_tokens, 2048u);
  EXPECT_EQ(rejected_field(body(R"("max_tokens":2049)")), "max_tokens");
  EXPECT_EQ(rejected_field(body(R"("max_tokens":10.5)")), "max_tokens");
  RequestLimits l = limits();
  l.max_tokens_out = 100;
  EXPECT_EQ(accepted(body(R"("max_tokens":2048)"), l).max_tokens, 100u);
  EXPECT_EQ(accepted(body(""), l).max_tokens, 100u);
  EXPECT_EQ(accepted(body(R"("max_tokens":7)"), l).max_tokens, 7u);
}

// Number fields: inside [lo, hi] accepted (random interior values), just outside rejected.
struct RangeCase {
  const char *field;
  double lo, hi;
  float JobRequest::*member;
};

TEST(ExecuteRequest, SamplingNumbersStayInsideTheirRanges) {
  const RangeCase cases[] = {{"temperature", 0, 2, &JobRequest::temperature},
                             {"top_p", 0, 1, &JobRequest::top_p},
                             {"min_p", 0, 1, &JobRequest::min_p},
                             {"repetition_penalty", 0, 2, &JobRequest::repetition_penalty}};
  std::mt19937 rng(std::random_device{}());
  for (const auto &c : cases) {
    std::string f = std::string("\"") + c.field + "\":";
    char buf[64];
    for (double v : {c.lo, c.hi}) {
      std::snprintf(buf, sizeof buf, "%.17g", v);
      EXPECT_FLOAT_EQ(accepted(body(f + buf)).*c.member, static_cast<float>(v)) << c.field;
    }
    for (int i = 0; i < 20; ++i) {
      double v = std::uniform_real_distribution<double>(c.lo, c.hi)(rng);
      std::snprintf(buf, sizeof buf, "%.17g", v);
      EXPECT_NEAR(accepted(body(f + buf)).*c.member, v, 1e-6) << c.field << "=" << buf;
    }
    std::snprintf(buf, sizeof buf, "%.17g", c.lo - 1e-9);
    EXPECT_EQ(rejected_field(body(f + buf)), c.field);
    std::snprintf(buf, sizeof buf, "%.17g", c.hi + 1e-9);
    EXPECT_EQ(rejected_field(body(f + buf)), c.field);
    EXPECT_EQ(rejected_field(body(f + "\"1\"")), c.field);
  }
}

TEST(ExecuteRequest, TopKIsAnIntegerUpToTheVocabularySize) {
  EXPECT_EQ(accepted(body(R"("top_k":0)")).top_k, 0u);
  EXPECT_EQ(accepted(body(R"("top_k":1000)")).top_k, 1000u);
  EXPECT_EQ(rejected_field(body(R"("top_k":1001)")), "top_k");
  EXPECT_EQ(rejected_field(body(R"("top_k":-1)")), "top_k");
}

TEST(ExecuteRequest, StopIsAtMostFourNonEmptyStrings) {
  EXPECT_EQ(accepted(body(R"("stop":["a","b","c","d"])")).stop.size(), 4u);
  EXPECT_EQ(rejected_field(body(R"("stop":["a","b","c","d","e"])")), "stop");
  EXPECT_EQ(rejected_field(body(R"("stop":["a",""])")), "stop[1]");
  EXPECT_EQ(rejected_field(body(R"("stop":"a")")), "stop");
}

TEST(ExecuteRequest, SeedIsAnyUint64) {
  JobRequest r = accepted(body(R"("seed":18446744073709551615)"));
  EXPECT_EQ(r.seed, UINT64_MAX);
  EXPECT_TRUE(r.seed_given);
  EXPECT_EQ(accepted(body(R"("seed":0)")).seed, 0u);
  EXPECT_EQ(rejected_field(body(R"("seed":18446744073709551616)")), "seed");
  EXPECT_EQ(rejected_field(body(R"("seed":-1)")), "seed");
}

TEST(ExecuteRequest, MessagesNameFieldValueAndRuleButNeverEchoText) {
  auto r = parse_execute_request(body(R"("temperature":2.5)"), limits());
  auto e = std::get<ValidationError>(r);
  EXPECT_EQ(e.message, "field 'temperature': found 2.5; expected a number in [0.0, 2.0]");
  auto s = std::get<ValidationError>(
      parse_execute_request(R"({"job_id":"j","prompt":"p","max_tokens":"secret"})", limits()));
  EXPECT_EQ(s.message.find("secret"), std::string::npos) << s.message;
  EXPECT_NE(s.message.find("a string of 6 bytes"), std::string::npos) << s.message;
}

TEST(ExecuteRequest, BodyLargerThanOneMibIsRejectedAsBody) {
  std::string big = R"({"job_id":"j","prompt":"p","pad":")" + std::string(kMaxBodyBytes, 'x') + R"("})";
  EXPECT_EQ(rejected_field(big), "body");
}

TEST(CancelRequest, NeedsANonEmptyJobId) {
  EXPECT_EQ(std::get<std::string>(parse_cancel_request(R"({"job_id":"abc"})")), "abc");
  EXPECT_EQ(std::get<ValidationError>(parse_cancel_request("{}")).field, "job_id");
  EXPECT_EQ(std::get<ValidationError>(parse_cancel_request("nope")).field, "body");
}

TEST(Utf8, CodePointsCountCharactersNotBytes) {
  EXPECT_EQ(utf8_code_points("abc"), 3u);
  EXPECT_EQ(utf8_code_points("\xc3\xa9\xe4\xb8\xad\xf0\x9f\x99\x82"), 3u);
  EXPECT_EQ(utf8_code_points(""), 0u);
}

} // namespace
} // namespace wo::http
