#include "http_bench.hpp"

#include "stats.hpp"

#include <Poco/Net/HTTPClientSession.h>
#include <Poco/Net/HTTPRequest.h>
#include <Poco/Net/HTTPResponse.h>
#include <Poco/URI.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include <chrono>
#include <cstdio>
#include <istream>
#include <stdexcept>

namespace wo::bench {

int run_http_bench(const HttpBenchOptions &o) {
  using Clock = std::chrono::steady_clock;
  Poco::URI uri(o.url);
  std::vector<double> ttft, itl;
  int tokens_total = 0;
  double stream_s = 0;
  for (int r = 0; r < o.requests; ++r) {
    Poco::Net::HTTPClientSession s(uri.getHost(), uri.getPort());
    s.setTimeout(Poco::Timespan(600, 0));
    rapidjson::StringBuffer sb;
    rapidjson::Writer<rapidjson::StringBuffer> w(sb);
    w.StartObject();
    w.Key("job_id");
    w.String(("bench-" + std::to_string(r)).c_str());
    w.Key("prompt");
    w.String(o.prompt.c_str());
    w.Key("max_tokens");
    w.Int(o.max_tokens);
    w.Key("temperature");
    w.Double(0.0);
    w.Key("seed");
    w.Uint64(42);
    w.EndObject();
    Poco::Net::HTTPRequest req(Poco::Net::HTTPRequest::HTTP_POST, "/execute", Poco::Net::HTTPMessage::HTTP_1_1);
    req.setContentType("application/json");
    req.setContentLength(static_cast<std::streamsize>(sb.GetSize()));
    auto t0 = Clock::now();
    s.sendRequest(req) << sb.GetString();
    Poco::Net::HTTPResponse resp;
    std::istream &in = s.receiveResponse(resp);
    if (resp.getStatus() != Poco::Net::HTTPResponse::HTTP_OK)
      throw std::runtime_error("POST /execute answered HTTP " + std::to_string(static_cast<int>(resp.getStatus())));
    std::string line;
    Clock::time_point last{};
    bool first = true;
    while (std::getline(in, line)) {
      if (line.rfind("event: token", 0) == 0) {
        auto now = Clock::now();
        if (first) {
          ttft.push_back(std::chrono::duration<double, std::milli>(now - t0).count());
          first = false;
        } else {
          itl.push_back(std::chrono::duration<double, std::milli>(now - last).count());
        }
        last = now;
        ++tokens_total;
      } else if (line.rfind("event: end", 0) == 0 || line.rfind("event: error", 0) == 0) {
        std::string data;
        std::getline(in, data);
        if (line.rfind("event: error", 0) == 0) throw std::runtime_error("job failed: " + data);
        break;
      }
    }
    stream_s += std::chrono::duration<double>(Clock::now() - t0).count();
  }
  if (o.json) {
    std::printf("{\"mode\":\"http\",\"requests\":%d,\"token_events\":%d,\"ttft_ms_median\":%.3f,\"ttft_ms_p95\":%.3f,"
                "\"itl_ms_median\":%.3f,\"itl_ms_p95\":%.3f,\"events_per_s\":%.1f}\n",
                o.requests, tokens_total, median(ttft), percentile(ttft, 95), median(itl), percentile(itl, 95),
                tokens_total / std::max(stream_s, 1e-9));
  } else {
    std::printf("HTTP/SSE client view of %s (%d requests, %d token events)\n", o.url.c_str(), o.requests, tokens_total);
    std::printf("  time to first token   median %8.2f ms   p95 %8.2f ms\n", median(ttft), percentile(ttft, 95));
    std::printf("  inter-token latency   median %8.3f ms   p95 %8.3f ms\n", median(itl), percentile(itl, 95));
  }
  return 0;
}

} // namespace wo::bench
