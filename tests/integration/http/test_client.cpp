#include "test_client.hpp"

#include <Poco/Net/HTTPClientSession.h>
#include <Poco/Net/HTTPRequest.h>
#include <Poco/Net/HTTPResponse.h>
#include <Poco/Net/NetException.h>
#include <Poco/Net/SocketAddress.h>
#include <Poco/Net/StreamSocket.h>
#include <Poco/StreamCopier.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <sstream>

namespace wo::http::testing {
namespace {
std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}
bool name_char(char c, bool first) {
  return std::isalpha(static_cast<unsigned char>(c)) || c == '_' || c == ':' ||
         (!first && std::isdigit(static_cast<unsigned char>(c)));
}
bool parse_float(const std::string &s, double *out) {
  if (s == "+Inf" || s == "Inf") return *out = INFINITY, true;
  if (s == "-Inf") return *out = -INFINITY, true;
  if (s == "NaN") return *out = NAN, true;
  if (s.empty()) return false;
  char *end = nullptr;
  *out = std::strtod(s.c_str(), &end);
  return end == s.c_str() + s.size();
}
} // namespace

std::string HttpReply::header(const std::string &name) const {
  auto it = headers.find(lower(name));
  return it == headers.end() ? std::string() : it->second;
}

HttpReply http_request(uint16_t port, const std::string &method, const std::string &path,
                       const std::string &body, const Headers &headers) {
  Poco::Net::HTTPClientSession session("127.0.0.1", port);
  session.setTimeout(Poco::Timespan(5, 0));
  Poco::Net::HTTPRequest req(method, path, Poco::Net::HTTPMessage::HTTP_1_1);
  for (const auto &h : headers)
    req.set(h.first, h.second);
  if (!body.empty() || method == "POST") {
    if (req.getContentType() == Poco::Net::HTTPMessage::UNKNOWN_CONTENT_TYPE)
      req.setContentType("application/json");
    req.setContentLength(static_cast<std::streamsize>(body.size()));
  }
  session.sendRequest(req) << body;
  Poco::Net::HTTPResponse resp;
  std::istream &in = session.receiveResponse(resp);
  HttpReply r;
  r.status = resp.getStatus();
  for (const auto &h : resp)
    r.headers[lower(h.first)] = h.second;
  Poco::StreamCopier::copyToString(in, r.body);
  return r;
}

std::vector<SseEvent> parse_sse(const std::string &body, std::vector<std::string> *errors) {
  std::vector<SseEvent> events;
  SseEvent cur;
  bool open = false;
  size_t pos = 0, line_no = 0;
  while (pos < body.size()) {
    size_t nl = body.find('\n', pos);
    if (nl == std::string::npos) {
      errors->push_back("line " + std::to_string(line_no + 1) + ": not terminated by a newline");
      break;
    }
    std::string line = body.substr(pos, nl - pos);
    pos = nl + 1;
    ++line_no;
    if (line.empty()) {
      if (!open) {
        errors->push_back("line " + std::to_string(line_no) + ": blank line outside an event");
        continue;
      }
      if (cur.event.empty() || cur.data.empty())
        errors->push_back("line " + std::to_string(line_no) + ": event without name or data");
      events.push_back(cur);
      cur = {};
      open = false;
    } else if (line.rfind("event: ", 0) == 0 && !open) {
      cur.event = line.substr(7);
      open = true;
    } else if (line.rfind("data: ", 0) == 0 && open && cur.data.empty()) {
      cur.data = line.substr(6);
    } else {
      errors->push_back("line " + std::to_string(line_no) + ": unexpected '" + line.substr(0, 80) + "'");
    }
  }
  if (open) errors->push_back("stream ended inside an event (missing blank line)");
  return events;
}

PromText parse_prometheus(const std::string &text) {
  PromText out;
  std::istringstream in(text);
  std::string line;
  int n = 0;
  auto err = [&](const std::string &what) {
    out.errors.push_back("line " + std::to_string(n) + ": " + what);
  };
  while (std::getline(in, line)) {
    ++n;
    if (line.empty()) continue;
    if (line[0] == '#') {
      std::istringstream ls(line);
      std::string hash, kind, name;
      ls >> hash >> kind >> name;
      if (kind == "HELP" || kind == "TYPE") {
        if (name.empty() || !name_char(name[0], true)) err("bad metric name in " + kind);
        std::string rest;
        std::getline(ls, rest);
        if (!rest.empty() && rest[0] == ' ') rest.erase(0, 1);
        if (kind == "TYPE") {
          static const char *types[] = {"counter", "gauge", "histogram", "summary", "untyped"};
          if (std::find(std::begin(types), std::end(types), rest) == std::end(types))
            err("unknown type '" + rest + "'");
          if (out.types.count(name)) err("second TYPE for " + name);
          out.types[name] = rest;
        } else {
          out.helps[name] = rest;
        }
      }
      continue;
    }
    Sample s;
    size_t i = 0;
    while (i < line.size() && name_char(line[i], i == 0))
      ++i;
    s.name = line.substr(0, i);
    if (s.name.empty()) {
      err("sample without a metric name");
      continue;
    }
    if (i < line.size() && line[i] == '{') {
      ++i;
      while (i < line.size() && line[i] != '}') {
        size_t k0 = i;
        while (i < line.size() && name_char(line[i], i == k0) && line[i] != ':')
          ++i;
        std::string key = line.substr(k0, i - k0);
        if (key.empty() || i + 1 >= line.size() || line[i] != '=' || line[i + 1] != '"') {
          err("bad label in '" + line + "'");
          break;
        }
        i += 2;
        std::string value;
        bool closed = false;
        while (i < line.size()) {
          char c = line[i++];
          if (c == '\\' && i < line.size()) {
            char e = line[i++];
            if (e == 'n')
              value += '\n';
            else if (e == '\\' || e == '"')
              value += e;
            else
              err("bad escape in label value");
          } else if (c == '"') {
            closed = true;
            break;
          } else {
            value += c;
          }
        }
        if (!closed) err("unterminated label value");
        if (s.labels.count(key)) err("duplicate label " + key);
        s.labels[key] = value;
        if (i < line.size() && line[i] == ',') ++i;
      }
      if (i >= line.size() || line[i] != '}') {
        err("unterminated label set");
        continue;
      }
      ++i;
    }
    if (i >= line.size() || line[i] != ' ') {
      err("missing space before value");
      continue;
    }
    std::string rest = line.substr(i + 1);
    std::string value = rest.substr(0, rest.find(' '));
    if (!parse_float(value, &s.value)) err("bad value '" + value + "'");
    std::string family = s.name;
    for (const char *suffix : {"_bucket", "_sum", "_count"}) {
      std::string sf = suffix;
      if (family.size() > sf.size() && family.compare(family.size() - sf.size(), sf.size(), sf) == 0 &&
          out.types.count(family.substr(0, family.size() - sf.size())) &&
          out.types[family.substr(0, family.size() - sf.size())] == "histogram") {
        family.resize(family.size() - sf.size());
        break;
      }
    }
    if (!out.types.count(family)) err("sample " + s.name + " before its TYPE line");
    out.samples.push_back(s);
  }
  return out;
}

double PromText::value(const std::string &name, const std::map<std::string, std::string> &labels) const {
  for (const auto &s : samples) {
    if (s.name != name) continue;
    bool all = true;
    for (const auto &l : labels) {
      auto it = s.labels.find(l.first);
      all = all && it != s.labels.end() && it->second == l.second;
    }
    if (all) return s.value;
  }
  return NAN;
}

std::string raw_exchange(uint16_t port, const std::string &bytes) {
  Poco::Net::StreamSocket sock;
  sock.connect(Poco::Net::SocketAddress("127.0.0.1", port), Poco::Timespan(5, 0));
  sock.setReceiveTimeout(Poco::Timespan(5, 0));
  size_t sent = 0;
  try {
    while (sent < bytes.size()) {
      int n =
          sock.sendBytes(bytes.data() + sent, static_cast<int>(std::min<size_t>(bytes.size() - sent, 65536)));
      if (n <= 0) break;
      sent += static_cast<size_t>(n);
    }
  } catch (const Poco::Exception &) {
    // The server may close early (e.g. an oversized body): read what it answered.
  }
  std::string reply;
  char buf[4096];
  try {
    for (;;) {
      int n = sock.receiveBytes(buf, sizeof buf);
      if (n <= 0) break;
      reply.append(buf, static_cast<size_t>(n));
      // A complete non-chunked reply with Content-Length is enough.
      auto hdr_end = reply.find("\r\n\r\n");
      if (hdr_end != std::string::npos) {
        auto cl = lower(reply.substr(0, hdr_end)).find("content-length: ");
        if (cl != std::string::npos) {
          size_t len = std::strtoul(reply.c_str() + cl + 16, nullptr, 10);
          if (reply.size() >= hdr_end + 4 + len) break;
        }
      }
    }
  } catch (const Poco::Exception &) {
  }
  return reply;
}

} // namespace wo::http::testing
