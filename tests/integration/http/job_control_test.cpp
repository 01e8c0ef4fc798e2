// One job at a time, /cancel, client disconnect, drain: every path ends with one terminal event.
#include "server_fixture.hpp"

#include <Poco/Net/SocketAddress.h>
#include <Poco/Net/StreamSocket.h>

#include <future>
#include <thread>

namespace wo::http::testing {
namespace {

using ::testing::_;
using ::testing::Invoke;
using namespace std::chrono_literals;

class JobControlTest : public ServerTest {
protected:
  // Starts a long job (up to 2000 tokens, 5 ms apart) on another thread; returns once it runs.
  std::future<HttpReply> start_long_job(const std::string &job_id) {
    ON_CALL(*backend_, run(_, _, _, _)).WillByDefault(Invoke(slow_job(2000, 5ms)));
    auto f = std::async(std::launch::async, [this, job_id] {
      return post("/execute", R"({"job_id":")" + job_id + R"(","prompt":"long"})");
    });
    wait_for_state("busy");
    return f;
  }
  void wait_for_state(const std::string &state) {
    for (int i = 0; i < 500; ++i) {
      auto h = parse_json(get("/health").body);
      if (h.IsObject() && state == h["state"].GetString()) return;
      std::this_thread::sleep_for(10ms);
    }
    FAIL() << "worker never reached state " << state;
  }
  double metric(const std::string &name, const std::map<std::string, std::string> &labels = {}) {
    return parse_prometheus(get("/metrics").body).value(name, labels);
  }
};

TEST_F(JobControlTest, SecondExecuteWhileBusyIs503WithRetryAfter) {
  start();
  auto first = start_long_job("first");
  auto r = post("/execute", R"({"job_id":"second","prompt":"p"})");
  EXPECT_EQ(r.status, 503);
  EXPECT_EQ(r.header("Retry-After"), "1");
  auto body = parse_json(r.body);
  EXPECT_STREQ(body["code"].GetString(), "WORKER_BUSY");
  EXPECT_TRUE(body["retriable"].GetBool());
  EXPECT_EQ(post("/cancel", R"({"job_id":"first"})").status, 202);
  checked_stream(first.get().body);
  EXPECT_EQ(metric("worker_requests_total", {{"outcome", "worker_busy"}}), 1.0);
}

TEST_F(JobControlTest, CancelEndsTheRunningJobWithCancelledAndIsIdempotent) {
  start();
  auto job = start_long_job("job-c");
  auto c1 = post("/cancel", R"({"job_id":"job-c"})");
  EXPECT_EQ(c1.status, 202);
  EXPECT_STREQ(parse_json(c1.body)["status"].GetString(), "cancelling");
  auto events = checked_stream(job.get().body);
  auto err = parse_json(events.back().data);
  EXPECT_EQ(events.back().event, "error");
  EXPECT_STREQ(err["code"].GetString(), "CANCELLED");
  EXPECT_FALSE(err["retriable"].GetBool());
  EXPECT_LT(events.size(), 2000u);
  // Again, after it finished: still 202, nothing to cancel.
  auto c2 = post("/cancel", R"({"job_id":"job-c"})");
  EXPECT_EQ(c2.status, 202);
  EXPECT_STREQ(parse_json(c2.body)["status"].GetString(), "not_running");
  wait_for_state("ready");
}

TEST_F(JobControlTest, CancelOfUnknownJobIs202NotRunningAndLeavesTheRunningJobAlone) {
  start();
  auto job = start_long_job("real");
  auto r = post("/cancel", R"({"job_id":"someone-else"})");
  EXPECT_EQ(r.status, 202);
  EXPECT_STREQ(parse_json(r.body)["status"].GetString(), "not_running");
  std::this_thread::sleep_for(50ms);
  auto h = parse_json(get("/health").body);
  EXPECT_STREQ(h["state"].GetString(), "busy");
  post("/cancel", R"({"job_id":"real"})");
  checked_stream(job.get().body);
}

TEST_F(JobControlTest, CancelRequiresAJobId) {
  start();
  for (const char *body : {"", "{}", R"({"job_id":""})", R"({"job_id":5})", "[", R"(["job_id"])"}) {
    auto r = post("/cancel", body);
    EXPECT_EQ(r.status, 400) << body;
    auto j = parse_json(r.body);
    ASSERT_TRUE(j.IsObject()) << r.body;
    EXPECT_STREQ(j["code"].GetString(), "INVALID_REQUEST");
  }
}

TEST_F(JobControlTest, ClientDisconnectCancelsTheJob) {
  std::atomic<bool> saw_gone{false};
  ScriptedJob job = slow_job(2000, 5ms);
  job.saw_client_gone = &saw_gone;
  EXPECT_CALL(*backend_, run(_, _, _, _)).WillOnce(Invoke(job));
  start();
  {
    Poco::Net::StreamSocket sock;
    sock.connect(Poco::Net::SocketAddress("127.0.0.1", port()));
    sock.setReceiveTimeout(Poco::Timespan(5, 0));
    std::string body = R"({"job_id":"gone","prompt":"p"})";
    std::string req =
        "POST /execute HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: " +
        std::to_string(body.size()) + "\r\n\r\n" + body;
    sock.sendBytes(req.data(), static_cast<int>(req.size()));
    std::string got;
    char buf[1024];
    while (got.find("event: token") == std::string::npos) {
      int n = sock.receiveBytes(buf, sizeof buf);
      ASSERT_GT(n, 0);
      got.append(buf, static_cast<size_t>(n));
    }
    sock.close();
  }
  for (int i = 0; i < 500 && !saw_gone; ++i)
    std::this_thread::sleep_for(10ms);
  EXPECT_TRUE(saw_gone) << "the backend never saw the client gone";
  wait_for_state("ready");
  EXPECT_EQ(metric("worker_requests_total", {{"outcome", "cancelled"}}), 1.0);
  auto ends = log_events("execute_end");
  ASSERT_EQ(ends.size(), 1u);
  EXPECT_TRUE(parse_json(ends[0])["client_gone"].GetBool());
  EXPECT_LT(parse_json(ends[0])["tokens_out"].GetUint64(), 2000u);
}

TEST_F(JobControlTest, DrainRefusesNewJobsAndCancelsTheRunningOneAtTheDeadline) {
  start();
  auto job = start_long_job("drained");
  server_->request_shutdown("test");
  auto refused = post("/execute", R"({"job_id":"late","prompt":"p"})");
  EXPECT_EQ(refused.status, 503);
  EXPECT_EQ(refused.header("Retry-After"), "30");
  EXPECT_STREQ(parse_json(refused.body)["code"].GetString(), "SHUTTING_DOWN");
  EXPECT_STREQ(parse_json(get("/health").body)["state"].GetString(), "draining");
  auto t0 = std::chrono::steady_clock::now();
  server_->drain_and_stop(100ms);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 5s);
  auto events = checked_stream(job.get().body);
  EXPECT_STREQ(parse_json(events.back().data)["code"].GetString(), "CANCELLED");
  auto shutdown = log_events("shutdown");
  ASSERT_EQ(shutdown.size(), 1u);
  EXPECT_TRUE(parse_json(shutdown[0])["job_cancelled"].GetBool());
}

TEST_F(JobControlTest, DrainLetsAJobThatFinishesInTimeEndNormally) {
  EXPECT_CALL(*backend_, run(_, _, _, _)).WillOnce(Invoke(slow_job(40, 5ms)));
  start();
  auto job = std::async(std::launch::async,
                        [this] { return post("/execute", R"({"job_id":"short","prompt":"p"})"); });
  wait_for_state("busy");
  server_->drain_and_stop(10s);
  auto events = checked_stream(job.get().body);
  EXPECT_EQ(events.back().event, "end");
  EXPECT_EQ(events.size(), 42u);
  EXPECT_FALSE(parse_json(log_events("shutdown").at(0))["job_cancelled"].GetBool());
}

TEST_F(JobControlTest, ShutdownEndpointStartsTheDrain) {
  start();
  auto r = post("/shutdown", "");
  EXPECT_EQ(r.status, 202);
  EXPECT_STREQ(parse_json(r.body)["status"].GetString(), "draining");
  EXPECT_TRUE(server_->wait_shutdown_requested(1s));
  EXPECT_EQ(post("/execute", R"({"job_id":"x","prompt":"p"})").status, 503);
  EXPECT_EQ(post("/shutdown", "").status, 202); // idempotent
}

} // namespace
} // namespace wo::http::testing
