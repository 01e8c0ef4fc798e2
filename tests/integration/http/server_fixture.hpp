// A real worker Server on 127.0.0.1 (ephemeral port) over a scripted MockBackend, with the
// narration log captured.
#pragma once

#include "http/server.hpp"
#include "observe/log.hpp"
#include "scripted_backend.hpp"
#include "test_client.hpp"

#include <gtest/gtest.h>
#include <rapidjson/document.h>

#include <memory>
#include <mutex>

namespace wo::http::testing {

class ServerTest : public ::testing::Test {
protected:
  void SetUp() override {
    observe::set_sink([this](const std::string &line) {
      std::lock_guard<std::mutex> lk(log_mu_);
      log_.push_back(line);
    });
    backend_ = std::make_unique<::testing::NiceMock<MockBackend>>();
    ON_CALL(*backend_, facts()).WillByDefault(::testing::Return(tiny_facts()));
    ON_CALL(*backend_, count_prompt_tokens(::testing::_)).WillByDefault(scripted_token_count);
    ON_CALL(*backend_, run)
        .WillByDefault(ScriptedJob{{"Hello", ",", " world", "!"}, StopReason::eos, {}, 42, nullptr});
    options_.worker_id = "123e4567-e89b-42d3-a456-426614174000";
    options_.model_path = "llama-tiny-Q8_0.gguf";
    options_.port = 0;
    options_.inference_timeout_sec = 30;
  }
  void TearDown() override {
    server_.reset();
    observe::set_sink(nullptr);
  }
  void start() {
    server_ = std::make_unique<Server>(*backend_, options_);
    server_->start();
  }
  uint16_t port() const { return server_->port(); }

  HttpReply post(const std::string &path, const std::string &body, const Headers &h = {}) {
    return http_request(port(), "POST", path, body, h);
  }
  HttpReply get(const std::string &path) { return http_request(port(), "GET", path); }

  std::vector<std::string> log_lines() {
    std::lock_guard<std::mutex> lk(log_mu_);
    return log_;
  }
  // Events (parsed JSON) with this name.
  std::vector<std::string> log_events(const std::string &event) {
    std::vector<std::string> out;
    for (const auto &l : log_lines())
      if (l.find("\"event\":\"" + event + "\"") != std::string::npos) out.push_back(l);
    return out;
  }

  std::unique_ptr<::testing::NiceMock<MockBackend>> backend_;
  ServeOptions options_;
  std::unique_ptr<Server> server_;
  std::mutex log_mu_;
  std::vector<std::string> log_;
};

inline rapidjson::Document parse_json(const std::string &s) {
  rapidjson::Document d;
  d.Parse(s.c_str(), s.size());
  return d;
}

// Asserts the SSE body is well framed and its event grammar is started, token*, one terminal.
// Returns the events.
inline std::vector<SseEvent> checked_stream(const std::string &body) {
  std::vector<std::string> errors;
  auto events = parse_sse(body, &errors);
  for (const auto &e : errors)
    ADD_FAILURE() << "SSE framing: " << e;
  size_t terminals = 0;
  for (size_t i = 0; i < events.size(); ++i) {
    const auto &e = events[i];
    bool terminal = e.event == "end" || e.event == "error";
    terminals += terminal;
    if (terminal) {
      EXPECT_EQ(i, events.size() - 1) << "terminal event '" << e.event << "' is not last";
    }
    if (e.event == "started") {
      EXPECT_EQ(i, 0u) << "started must come first";
    }
    if (e.event == "token") {
      EXPECT_GT(i, 0u) << "token before started";
    }
    EXPECT_TRUE(e.event == "started" || e.event == "token" || terminal) << "unknown event " << e.event;
    EXPECT_FALSE(parse_json(e.data).HasParseError()) << "event data is not JSON: " << e.data;
  }
  EXPECT_EQ(terminals, 1u) << "expected exactly one terminal event in:\n" << body;
  return events;
}

} // namespace wo::http::testing
