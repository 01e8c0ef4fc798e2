#include "observe/log.hpp"

#include <Poco/DigestEngine.h>
#include <Poco/SHA2Engine.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <mutex>

namespace wo::observe {
namespace {

struct State {
  std::mutex mu;
  Fields context;
  Level min_level = Level::info;
  std::function<void(const std::string &)> sink;
  State() {
    if (const char *env = std::getenv("WORKER_LOG_LEVEL")) {
      std::string v = env;
      if (v == "debug") min_level = Level::debug;
      else if (v == "warn") min_level = Level::warn;
      else if (v == "error") min_level = Level::error;
    }
  }
};

State &state() {
  static State s;
  return s;
}

const char *level_name(Level l) {
  switch (l) {
  case Level::debug: return "debug";
  case Level::info: return "info";
  case Level::warn: return "warn";
  case Level::error: return "error";
  }
  return "info";
}


void write_value(rapidjson::Writer<rapidjson::StringBuffer> &w, const FieldValue &v) {
  std::visit(
      [&](const auto &x) {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<T, std::string>) w.String(x.c_str(), static_cast<rapidjson::SizeType>(x.size()));
        else if constexpr (std::is_same_v<T, int64_t>) w.Int64(x);
        else if constexpr (std::is_same_v<T, uint64_t>) w.Uint64(x);
        else if constexpr (std::is_same_v<T, double>) w.Double(x);
        else w.Bool(x);
      },
      v);
}

} // namespace

std::string rfc3339_now() {
  using namespace std::chrono;
  auto now = system_clock::now();
  std::time_t t = system_clock::to_time_t(now);
  auto ms = duration_cast<milliseconds>(now.time_since_epoch()).count() % 1000;
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[96];
  std::snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900, tm.tm_mon + 1,
                tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, static_cast<int>(ms));
  return buf;
}

std::string format_event(Level level, const std::string &name, const Fields &fields) {
  rapidjson::StringBuffer sb;
  rapidjson::Writer<rapidjson::StringBuffer> w(sb);
  w.StartObject();
  w.Key("ts");
  w.String(rfc3339_now().c_str());
  w.Key("level");
  w.String(level_name(level));
  w.Key("event");
  w.String(name.c_str(), static_cast<rapidjson::SizeType>(name.size()));
  Fields ctx;
  {
    std::lock_guard<std::mutex> lk(state().mu);
    ctx = state().context;
  }
  for (const auto &f : ctx) {
    bool overridden = false;
    for (const auto &g : fields) overridden |= g.first == f.first;
    if (overridden) continue;
    w.Key(f.first.c_str());
    write_value(w, f.second);
  }
  for (const auto &f : fields) {
    w.Key(f.first.c_str());
    write_value(w, f.second);
  }
  w.EndObject();
  return sb.GetString();
}

void event(Level level, const std::string &name, const Fields &fields) {
  if (static_cast<int>(level) < static_cast<int>(state().min_level)) return;
  std::string line = format_event(level, name, fields);
  std::lock_guard<std::mutex> lk(state().mu);
  if (state().sink) {
    state().sink(line);
  } else {
    line.push_back('\n');
    std::fwrite(line.data(), 1, line.size(), stderr);
    std::fflush(stderr);
  }
}

void set_context(const Fields &fields) {
  std::lock_guard<std::mutex> lk(state().mu);
  for (const auto &f : fields) {
    bool replaced = false;
    for (auto &c : state().context)
      if (c.first == f.first) {
        c.second = f.second;
        replaced = true;
      }
    if (!replaced) state().context.push_back(f);
  }
}

void set_min_level(Level level) {
  std::lock_guard<std::mutex> lk(state().mu);
  state().min_level = level;
}

void set_sink(std::function<void(const std::string &)> sink) {
  std::lock_guard<std::mutex> lk(state().mu);
  state().sink = std::move(sink);
}

std::string sha256_hex(const std::string &data) {
  Poco::SHA2Engine sha(Poco::SHA2Engine::SHA_256);
  sha.update(data);
  return Poco::DigestEngine::digestToHex(sha.digest());
}

} // namespace wo::observe
