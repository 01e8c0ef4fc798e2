#include "http/ready_callback.hpp"

#include <Poco/Net/HTTPClientSession.h>
#include <Poco/Net/HTTPRequest.h>
#include <Poco/Net/HTTPResponse.h>
#include <Poco/StreamCopier.h>
#include <Poco/URI.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include <stdexcept>

namespace wo::http {

std::string ready_callback_body(const ReadyInfo &info) {
  rapidjson::StringBuffer sb;
  rapidjson::Writer<rapidjson::StringBuffer> w(sb);
  w.StartObject();
  w.Key("worker_id");
  w.String(info.worker_id.c_str());
  w.Key("model_ref");
  w.String(info.model_ref.c_str());
  w.Key("vram_bytes");
  w.Uint64(info.vram_bytes);
  w.Key("uri");
  w.String(info.uri.c_str());
  w.EndObject();
  return sb.GetString();
}

void post_ready_callback(const std::string &url, const ReadyInfo &info, std::chrono::milliseconds timeout) {
  std::string body = ready_callback_body(info);
  try {
    Poco::URI uri(url);
    Poco::Net::HTTPClientSession session(uri.getHost(), uri.getPort());
    session.setTimeout(Poco::Timespan(static_cast<long>(timeout.count() / 1000),
                                      static_cast<long>((timeout.count() % 1000) * 1000)));
    std::string path = uri.getPathAndQuery();
    if (path.empty()) path = "/";
    Poco::Net::HTTPRequest req(Poco::Net::HTTPRequest::HTTP_POST, path, Poco::Net::HTTPMessage::HTTP_1_1);
    req.setContentType("application/json");
    req.setContentLength(static_cast<std::streamsize>(body.size()));
    session.sendRequest(req) << body;
    Poco::Net::HTTPResponse resp;
    std::istream &in = session.receiveResponse(resp);
    std::string ignored;
    Poco::StreamCopier::copyToString(in, ignored);
    int status = resp.getStatus();
    if (status < 200 || status > 299)
      throw std::runtime_error("answered HTTP " + std::to_string(status) + " " + resp.getReason() +
                               "; expected a 2xx status");
  } catch (const Poco::Exception &e) {
    throw std::runtime_error("ready callback POST " + url + " failed: " + e.displayText());
  } catch (const std::runtime_error &e) {
    throw std::runtime_error("ready callback POST " + url + " failed: " + e.what());
  }
}

} // namespace wo::http
