// The serve process in-process: startup sequence and its events, ready callback, SIGTERM/SIGINT
// and /shutdown drains with exit code 0, failed steps exit 1 with context.
#include "http/serve_lifecycle.hpp"
#include "server_fixture.hpp"

#include <Poco/Net/HTTPRequestHandler.h>
#include <Poco/Net/HTTPRequestHandlerFactory.h>
#include <Poco/Net/HTTPServer.h>
#include <Poco/Net/HTTPServerParams.h>
#include <Poco/Net/HTTPServerRequest.h>
#include <Poco/Net/HTTPServerResponse.h>
#include <Poco/Net/ServerSocket.h>
#include <Poco/StreamCopier.h>

#include <csignal>
#include <future>
#include <pthread.h>
#include <thread>

namespace wo::http::testing {
namespace {

using namespace std::chrono_literals;
using ::testing::_;
using ::testing::Invoke;

class ServeLifecycleTest : public ServerTest {
protected:
  // Runs run_serve on its own thread with a backend built like the fixture's.
  void launch() { launch_on(0); }
  void launch_on(uint16_t port) {
    options_.port = port;
    thread_ = std::thread([this] {
      exit_code_ = run_serve(options_, [this](const ServeOptions &) -> std::unique_ptr<Backend> {
        if (factory_error_) throw std::runtime_error(factory_error_);
        return std::move(backend_);
      });
      done_ = true;
    });
  }
  // Port from the `ready` event's uri; 0 if the worker never got ready.
  uint16_t wait_ready() {
    for (int i = 0; i < 500 && !done_; ++i) {
      auto ready = log_events("ready");
      if (!ready.empty()) {
        std::string uri = parse_json(ready[0])["uri"].GetString();
        return static_cast<uint16_t>(std::stoi(uri.substr(uri.rfind(':') + 1)));
      }
      std::this_thread::sleep_for(10ms);
    }
    return 0;
  }
  // Bounded: a worker that does not exit within 15 s fails the test and is stopped.
  int join() {
    for (int i = 0; i < 1500 && !done_; ++i)
      std::this_thread::sleep_for(10ms);
    if (!done_) {
      ADD_FAILURE() << "run_serve did not return within 15 s";
      pthread_kill(thread_.native_handle(), SIGTERM);
    }
    thread_.join();
    return exit_code_;
  }
  std::vector<std::string> event_names() {
    std::vector<std::string> names;
    for (const auto &l : log_lines())
      names.push_back(parse_json(l)["event"].GetString());
    return names;
  }
  void TearDown() override {
    if (thread_.joinable()) {
      pthread_kill(thread_.native_handle(), SIGTERM);
      thread_.join();
    }
    ServerTest::TearDown();
  }

  std::thread thread_;
  std::atomic<bool> done_{false};
  int exit_code_ = -1;
  const char *factory_error_ = nullptr;
};

TEST_F(ServeLifecycleTest, SigtermDrainsAndExitsZeroAfterTheStartupSequence) {
  launch();
  uint16_t port = wait_ready();
  ASSERT_NE(port, 0);
  EXPECT_EQ(http_request(port, "GET", "/health").status, 200);
  pthread_kill(thread_.native_handle(), SIGTERM);
  EXPECT_EQ(join(), 0);
  auto names = event_names();
  std::vector<std::string> expected = {"startup", "model_load_start",   "model_load_complete",
                                       "ready",   "shutdown_requested", "shutdown"};
  EXPECT_EQ(names, expected);
  for (const auto &l : log_lines()) {
    auto j = parse_json(l);
    EXPECT_EQ(j["worker_id"].GetString(), options_.worker_id) << l;
    EXPECT_EQ(j["model_ref"].GetString(), options_.model_path) << l;
    EXPECT_TRUE(j["gpu_device"].IsInt()) << l;
  }
  EXPECT_STREQ(parse_json(log_events("shutdown_requested")[0])["reason"].GetString(), "SIGTERM");
}

TEST_F(ServeLifecycleTest, SigintDuringAJobCancelsItAtTheDeadlineAndExitsZero) {
  options_.shutdown_deadline_sec = 0;
  ON_CALL(*backend_, run(_, _, _, _)).WillByDefault(Invoke(slow_job(2000, 5ms)));
  launch();
  uint16_t port = wait_ready();
  ASSERT_NE(port, 0);
  auto job = std::async(std::launch::async, [port] {
    return http_request(port, "POST", "/execute", R"({"job_id":"j","prompt":"p"})");
  });
  for (int i = 0; i < 500 && log_events("execute_start").empty(); ++i)
    std::this_thread::sleep_for(10ms);
  pthread_kill(thread_.native_handle(), SIGINT);
  auto events = checked_stream(job.get().body);
  EXPECT_STREQ(parse_json(events.back().data)["code"].GetString(), "CANCELLED");
  EXPECT_EQ(join(), 0);
  EXPECT_STREQ(parse_json(log_events("shutdown_requested")[0])["reason"].GetString(), "SIGINT");
  // Job events carry the worker's context and the job id.
  for (const char *name : {"execute_start", "execute_end", "error"}) {
    auto lines = log_events(name);
    ASSERT_EQ(lines.size(), 1u) << name;
    auto j = parse_json(lines[0]);
    EXPECT_EQ(j["worker_id"].GetString(), options_.worker_id) << name;
    EXPECT_EQ(j["model_ref"].GetString(), options_.model_path) << name;
    EXPECT_EQ(j["gpu_device"].GetInt(), options_.gpu_device) << name;
    EXPECT_STREQ(j["job_id"].GetString(), "j") << name;
  }
}

TEST_F(ServeLifecycleTest, ShutdownEndpointExitsZero) {
  launch();
  uint16_t port = wait_ready();
  ASSERT_NE(port, 0);
  EXPECT_EQ(http_request(port, "POST", "/shutdown").status, 202);
  EXPECT_EQ(join(), 0);
  EXPECT_EQ(log_events("shutdown").size(), 1u);
}

TEST_F(ServeLifecycleTest, ModelLoadFailureExitsOneWithContext) {
  factory_error_ = "not enough VRAM on device 0: need 9000000000 bytes, 8000000000 free (model llama.gguf)";
  launch();
  EXPECT_EQ(join(), 1);
  auto errors = log_events("error");
  ASSERT_EQ(errors.size(), 1u);
  auto e = parse_json(errors[0]);
  EXPECT_STREQ(e["step"].GetString(), "model_load");
  EXPECT_STREQ(e["message"].GetString(), factory_error_);
  EXPECT_TRUE(log_events("ready").empty());
}

TEST_F(ServeLifecycleTest, BindFailureExitsOne) {
  Poco::Net::ServerSocket taken(Poco::Net::SocketAddress("127.0.0.1", 0));
  launch_on(taken.address().port());
  EXPECT_EQ(join(), 1);
  auto e = parse_json(log_events("error").at(0));
  EXPECT_STREQ(e["step"].GetString(), "http_server");
  EXPECT_NE(std::string(e["message"].GetString()).find(std::to_string(taken.address().port())),
            std::string::npos);
}

// Records the one POST a ready callback makes.
class CallbackRecorder : public Poco::Net::HTTPRequestHandler {
public:
  CallbackRecorder(std::promise<std::string> &body, int status) : body_(body), status_(status) {}
  void handleRequest(Poco::Net::HTTPServerRequest &req, Poco::Net::HTTPServerResponse &resp) override {
    std::string b;
    Poco::StreamCopier::copyToString(req.stream(), b);
    try {
      body_.set_value(req.getMethod() + " " + req.getURI() + " " + b);
    } catch (const std::future_error &) {
    }
    resp.setStatus(static_cast<Poco::Net::HTTPResponse::HTTPStatus>(status_));
    resp.setContentLength(0);
    resp.send();
  }

private:
  std::promise<std::string> &body_;
  int status_;
};

class CallbackFactory : public Poco::Net::HTTPRequestHandlerFactory {
public:
  CallbackFactory(std::promise<std::string> &body, int status) : body_(body), status_(status) {}
  Poco::Net::HTTPRequestHandler *createRequestHandler(const Poco::Net::HTTPServerRequest &) override {
    return new CallbackRecorder(body_, status_);
  }

private:
  std::promise<std::string> &body_;
  int status_;
};

TEST_F(ServeLifecycleTest, ReadyCallbackPostsWorkerFactsBeforeReady) {
  std::promise<std::string> got;
  Poco::Net::ServerSocket sock(Poco::Net::SocketAddress("127.0.0.1", 0));
  Poco::Net::HTTPServer cb(new CallbackFactory(got, 204), sock, new Poco::Net::HTTPServerParams);
  cb.start();
  options_.callback_url = "http://127.0.0.1:" + std::to_string(sock.address().port()) + "/workers/ready";
  launch();
  uint16_t port = wait_ready();
  ASSERT_NE(port, 0);
  auto fut = got.get_future();
  ASSERT_EQ(fut.wait_for(5s), std::future_status::ready);
  std::string request = fut.get();
  ASSERT_EQ(request.rfind("POST /workers/ready ", 0), 0u) << request;
  auto body = parse_json(request.substr(std::string("POST /workers/ready ").size()));
  EXPECT_EQ(body["worker_id"].GetString(), options_.worker_id);
  EXPECT_EQ(body["model_ref"].GetString(), options_.model_path);
  EXPECT_EQ(body["vram_bytes"].GetUint64(), tiny_facts().vram_bytes_used);
  EXPECT_EQ(body["uri"].GetString(), "http://127.0.0.1:" + std::to_string(port));
  pthread_kill(thread_.native_handle(), SIGTERM);
  EXPECT_EQ(join(), 0);
  cb.stop();
}

TEST_F(ServeLifecycleTest, RefusedReadyCallbackExitsOne) {
  std::promise<std::string> got;
  Poco::Net::ServerSocket sock(Poco::Net::SocketAddress("127.0.0.1", 0));
  Poco::Net::HTTPServer cb(new CallbackFactory(got, 500), sock, new Poco::Net::HTTPServerParams);
  cb.start();
  options_.callback_url = "http://127.0.0.1:" + std::to_string(sock.address().port()) + "/ready";
  launch();
  EXPECT_EQ(join(), 1);
  auto e = parse_json(log_events("error").at(0));
  EXPECT_STREQ(e["step"].GetString(), "ready_callback");
  EXPECT_NE(std::string(e["message"].GetString()).find("HTTP 500"), std::string::npos)
      << e["message"].GetString();
  EXPECT_TRUE(log_events("ready").empty());
  cb.stop();
}

} // namespace
} // namespace wo::http::testing
