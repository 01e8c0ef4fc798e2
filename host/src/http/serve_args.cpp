#include "http/serve_args.hpp"

#include "http/request_headers.hpp"

#include <Poco/URI.h>

#include <cerrno>
#include <cstdlib>
#include <functional>
#include <map>

namespace wo::http {
namespace {

uint64_t parse_uint(const std::string &opt, const std::string &v, uint64_t lo, uint64_t hi) {
  std::string allowed = "an integer in [" + std::to_string(lo) + ", " + std::to_string(hi) + "]";
  bool digits = !v.empty() && v.size() <= 19;
  for (unsigned char c : v)
    digits = digits && c >= '0' && c <= '9';
  if (!digits) throw UsageError("option " + opt + ": invalid value '" + v + "'; expected " + allowed);
  uint64_t x = std::strtoull(v.c_str(), nullptr, 10);
  if (x < lo || x > hi)
    throw UsageError("option " + opt + ": value " + v + " is out of range; expected " + allowed);
  return x;
}

} // namespace

std::string serve_usage() {
  return "usage: worker-orcd [serve] --worker-id UUID --model PATH --gpu-device N --port P [options]\n"
         "\n"
         "Loads one GGUF model into one GPU and serves it over HTTP (POST /execute streams SSE).\n"
         "\n"
         "required:\n"
         "  --worker-id UUID              this worker's id (8-4-4-4-12 hex), carried in every log event\n"
         "  --model PATH                  GGUF model file\n"
         "  --gpu-device N                CUDA device ordinal, 0-255\n"
         "  --port P                      TCP port, 1024-65535\n"
         "options:\n"
         "  --bind ADDR                   listen address (default 127.0.0.1: loopback only)\n"
         "  --callback-url URL            http:// URL POSTed {worker_id, model_ref, vram_bytes, uri} when "
         "ready\n"
         "  --max-tokens-in N             prompt token cap, 1-1048576 (default: the model's context length)\n"
         "  --max-tokens-out N            default and cap of a request's max_tokens, 1-2048 (default 2048)\n"
         "  --inference-timeout-sec N     per-job deadline, 1-86400 (default 300)\n"
         "  --kv-cache-size-mb N          KV cache size, 1-1048576 MiB (default: sized from the context)\n"
         "  --plugin-dir DIR              where architecture/quant/tokenizer plugins live\n"
         "                                (default: ../plugins next to the executable)\n"
         "  --shutdown-deadline-sec N     how long a drain lets the running job finish, 0-3600 (default 30)\n"
         "  --help                        this text\n"
         "\n"
         "Signals: SIGTERM/SIGINT (or POST /shutdown) drain: new jobs get 503, the running job may finish\n"
         "until the shutdown deadline, then it is cancelled; exit code 0. Any startup failure exits 1.\n";
}

ServeArgs parse_serve_args(int argc, const char *const *argv) {
  ServeArgs out;
  ServeOptions &o = out.options;
  bool has_id = false, has_model = false, has_gpu = false, has_port = false;
  std::map<std::string, std::function<void(const std::string &, const std::string &)>> options = {
      {"--worker-id",
       [&](const std::string &n, const std::string &v) {
         if (!is_uuid(v))
           throw UsageError("option " + n + ": invalid value '" + v +
                            "'; expected a UUID like 123e4567-e89b-42d3-a456-426614174000");
         o.worker_id = v;
         has_id = true;
       }},
      {"--model",
       [&](const std::string &n, const std::string &v) {
         if (v.empty()) throw UsageError("option " + n + ": empty value; expected a GGUF file path");
         o.model_path = v;
         has_model = true;
       }},
      {"--gpu-device",
       [&](const std::string &n, const std::string &v) {
         o.gpu_device = static_cast<int>(parse_uint(n, v, 0, 255));
         has_gpu = true;
       }},
      {"--port",
       [&](const std::string &n, const std::string &v) {
         o.port = static_cast<uint16_t>(parse_uint(n, v, 1024, 65535));
         has_port = true;
       }},
      {"--bind",
       [&](const std::string &n, const std::string &v) {
         if (v.empty())
           throw UsageError("option " + n + ": empty value; expected an IP address such as 127.0.0.1");
         o.bind = v;
       }},
      {"--callback-url",
       [&](const std::string &n, const std::string &v) {
         Poco::URI uri;
         try {
           uri = Poco::URI(v);
         } catch (const std::exception &) {
           throw UsageError("option " + n + ": invalid value '" + v + "'; expected an http:// URL");
         }
         if (uri.getScheme() != "http" || uri.getHost().empty())
           throw UsageError("option " + n + ": invalid value '" + v +
                            "'; expected an http:// URL with a host");
         o.callback_url = v;
       }},
      {"--max-tokens-in",
       [&](const std::string &n, const std::string &v) {
         o.max_tokens_in = static_cast<uint32_t>(parse_uint(n, v, 1, 1u << 20));
       }},
      {"--max-tokens-out",
       [&](const std::string &n, const std::string &v) {
         o.max_tokens_out = static_cast<uint32_t>(parse_uint(n, v, 1, 2048));
       }},
      {"--inference-timeout-sec",
       [&](const std::string &n, const std::string &v) {
         o.inference_timeout_sec = static_cast<uint32_t>(parse_uint(n, v, 1, 86400));
       }},
      {"--kv-cache-size-mb",
       [&](const std::string &n, const std::string &v) {
         o.kv_cache_size_mb = static_cast<uint32_t>(parse_uint(n, v, 1, 1u << 20));
       }},
      {"--plugin-dir",
       [&](const std::string &n, const std::string &v) {
         if (v.empty()) throw UsageError("option " + n + ": empty value; expected a directory");
         o.plugin_dir = v;
       }},
      {"--shutdown-deadline-sec",
       [&](const std::string &n, const std::string &v) {
         o.shutdown_deadline_sec = static_cast<uint32_t>(parse_uint(n, v, 0, 3600));
       }},
  };
  std::map<std::string, bool> seen;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--help" || arg == "-h") {
      out.help = true;
      return out;
    }
    std::string name = arg, value;
    bool inline_value = false;
    if (auto eq = arg.find('='); arg.rfind("--", 0) == 0 && eq != std::string::npos) {
      name = arg.substr(0, eq);
      value = arg.substr(eq + 1);
      inline_value = true;
    }
    auto it = options.find(name);
    if (it == options.end())
      throw UsageError("unknown argument '" + arg + "'; expected one of the options in --help");
    if (seen[name]) throw UsageError("option " + name + " given twice; expected it at most once");
    seen[name] = true;
    if (!inline_value) {
      if (i + 1 >= argc) throw UsageError("option " + name + ": missing value");
      value = argv[++i];
    }
    it->second(name, value);
  }
  std::string missing;
  if (!has_id) missing += " --worker-id";
  if (!has_model) missing += " --model";
  if (!has_gpu) missing += " --gpu-device";
  if (!has_port) missing += " --port";
  if (!missing.empty()) throw UsageError("missing required option(s):" + missing + " (see --help)");
  return out;
}

} // namespace wo::http
