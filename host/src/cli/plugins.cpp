// `worker-orcd plugins [--plugin-dir DIR] [--json]`: every candidate `.so` in the plugin
// directory, accepted or with the reason it was rejected. What to run when a plugin "is not
// picked up": the reason says whether it is not a plugin, built for another ABI, or a duplicate.
#include "cli/command.hpp"
#include "observe/log.hpp"
#include "plugins/registry.hpp"

#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>

namespace {

const char *kUsage = "usage: worker-orcd plugins [--plugin-dir DIR] [--json]\n"
                     "  --plugin-dir DIR  directory to scan (default: <dir of worker-orcd>/../plugins)\n"
                     "  --json            print a JSON array of {path, name, kind, version, abi, accepted, reason}\n"
                     "exit status: 0 when the directory was scanned (even if some files were rejected), 1 otherwise\n";

std::string to_json(const std::vector<wo::plugins::Candidate> &cands) {
  rapidjson::StringBuffer buf;
  rapidjson::Writer<rapidjson::StringBuffer> w(buf);
  w.StartArray();
  for (const auto &c : cands) {
    w.StartObject();
    w.Key("path"), w.String(c.path.c_str(), static_cast<rapidjson::SizeType>(c.path.size()));
    w.Key("name"), w.String(c.name.c_str(), static_cast<rapidjson::SizeType>(c.name.size()));
    w.Key("kind"), w.String(c.kind.c_str(), static_cast<rapidjson::SizeType>(c.kind.size()));
    w.Key("version"), w.String(c.version.c_str(), static_cast<rapidjson::SizeType>(c.version.size()));
    w.Key("abi"), w.String(c.abi.c_str(), static_cast<rapidjson::SizeType>(c.abi.size()));
    w.Key("accepted"), w.Bool(c.accepted);
    w.Key("reason"), w.String(c.reason.c_str(), static_cast<rapidjson::SizeType>(c.reason.size()));
    w.EndObject();
  }
  w.EndArray();
  return std::string(buf.GetString(), buf.GetSize()) + "\n";
}

std::string or_dash(const std::string &s) { return s.empty() ? "-" : s; }

std::string to_table(const std::string &dir, const std::vector<wo::plugins::Candidate> &cands) {
  size_t wn = 4, wk = 4, wv = 7;
  for (const auto &c : cands) {
    wn = std::max(wn, c.name.size());
    wk = std::max(wk, c.kind.size());
    wv = std::max(wv, c.version.size());
  }
  std::string out = "plugin directory: " + dir + "\n";
  if (cands.empty()) return out + "(no .so files found)\n";
  char line[1024];
  std::snprintf(line, sizeof line, "%-8s  %-*s  %-*s  %-*s  %-5s  %s\n", "STATUS", static_cast<int>(wn), "NAME",
                static_cast<int>(wk), "KIND", static_cast<int>(wv), "VERSION", "ABI", "PATH");
  out += line;
  size_t n_ok = 0;
  for (const auto &c : cands) {
    n_ok += c.accepted;
    std::snprintf(line, sizeof line, "%-8s  %-*s  %-*s  %-*s  %-5s  ", c.accepted ? "accepted" : "REJECTED",
                  static_cast<int>(wn), or_dash(c.name).c_str(), static_cast<int>(wk), or_dash(c.kind).c_str(),
                  static_cast<int>(wv), or_dash(c.version).c_str(), or_dash(c.abi).c_str());
    out += line + c.path + "\n";
    if (!c.accepted) out += "          reason: " + c.reason + "\n";
  }
  out += std::to_string(n_ok) + " accepted, " + std::to_string(cands.size() - n_ok) + " rejected\n";
  return out;
}

int plugins_main(int argc, char **argv) {
  std::string dir;
  bool json = false;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--help" || a == "-h") {
      std::fputs(kUsage, stdout);
      return 0;
    } else if (a == "--json") {
      json = true;
    } else if (a == "--plugin-dir" && i + 1 < argc) {
      dir = argv[++i];
    } else if (a.rfind("--plugin-dir=", 0) == 0) {
      dir = a.substr(13);
    } else {
      std::fprintf(stderr, "plugins: unexpected argument '%s' (argument %d); expected --plugin-dir DIR or --json\n%s",
                   a.c_str(), i, kUsage);
      return 1;
    }
  }
  if (dir.empty()) dir = wo::plugins::Registry::default_dir();
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec)) {
    std::fprintf(stderr, "plugins: --plugin-dir '%s' is not a directory (%s)\n", dir.c_str(),
                 ec ? ec.message().c_str() : "missing or not a folder");
    return 1;
  }
  // The listing already shows every reason; keep the narration log for real errors unless asked.
  if (!std::getenv("WORKER_LOG_LEVEL")) wo::observe::set_min_level(wo::observe::Level::error);
  wo::plugins::Registry reg;
  reg.scan(dir);
  std::string out = json ? to_json(reg.candidates()) : to_table(dir, reg.candidates());
  std::fwrite(out.data(), 1, out.size(), stdout);
  return 0;
}

} // namespace

WORKER_CLI_COMMAND("plugins", "list the plugin directory: each .so accepted, or why not (--json)", plugins_main);
