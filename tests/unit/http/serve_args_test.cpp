// `worker-orcd serve` options: required ones, bounds, both spellings, messages naming the option.
#include "http/serve_args.hpp"

#include <gtest/gtest.h>

#include <algorithm>

namespace wo::http {
namespace {

const char *kId = "123e4567-e89b-42d3-a456-426614174000";

ServeArgs parse(std::vector<std::string> extra, bool with_required = true) {
  // Required options first, unless `extra` gives that option itself.
  std::vector<std::string> args = {"serve"};
  const std::vector<std::string> required = {"--worker-id",  kId, "--model", "m.gguf",
                                             "--gpu-device", "0", "--port",  "8080"};
  for (size_t i = 0; with_required && i < required.size(); i += 2)
    if (std::find(extra.begin(), extra.end(), required[i]) == extra.end())
      args.insert(args.end(), {required[i], required[i + 1]});
  args.insert(args.end(), extra.begin(), extra.end());
  std::vector<const char *> argv;
  for (auto &a : args)
    argv.push_back(a.c_str());
  return parse_serve_args(static_cast<int>(argv.size()), argv.data());
}

std::string error_of(std::vector<std::string> extra, bool with_required = true) {
  try {
    parse(std::move(extra), with_required);
  } catch (const UsageError &e) {
    return e.what();
  }
  return "";
}

TEST(ServeArgs, RequiredOptionsAndDefaults) {
  ServeOptions o = parse({}).options;
  EXPECT_EQ(o.worker_id, kId);
  EXPECT_EQ(o.model_path, "m.gguf");
  EXPECT_EQ(o.gpu_device, 0);
  EXPECT_EQ(o.port, 8080);
  EXPECT_EQ(o.bind, "127.0.0.1");
  EXPECT_EQ(o.max_tokens_out, 2048u);
  EXPECT_EQ(o.inference_timeout_sec, 300u);
  EXPECT_EQ(o.shutdown_deadline_sec, 30u);
  EXPECT_TRUE(o.callback_url.empty());
  std::string missing = error_of({"--model", "m"}, false);
  EXPECT_NE(missing.find("--worker-id"), std::string::npos) << missing;
  EXPECT_NE(missing.find("--port"), std::string::npos) << missing;
}

TEST(ServeArgs, EveryOptionIsParsedInBothSpellings) {
  ServeOptions o =
      parse({"--bind", "0.0.0.0", "--callback-url=http://pool:9000/ready", "--max-tokens-in", "4096",
             "--max-tokens-out=512", "--inference-timeout-sec", "60", "--kv-cache-size-mb=1024",
             "--plugin-dir", "/opt/plugins", "--shutdown-deadline-sec", "5"})
          .options;
  EXPECT_EQ(o.bind, "0.0.0.0");
  EXPECT_EQ(o.callback_url, "http://pool:9000/ready");
  EXPECT_EQ(o.max_tokens_in, 4096u);
  EXPECT_EQ(o.max_tokens_out, 512u);
  EXPECT_EQ(o.inference_timeout_sec, 60u);
  EXPECT_EQ(o.kv_cache_size_mb, 1024u);
  EXPECT_EQ(o.plugin_dir, "/opt/plugins");
  EXPECT_EQ(o.shutdown_deadline_sec, 5u);
}

struct Bad {
  std::vector<std::string> args;
  const char *must_mention;
};

TEST(ServeArgs, InvalidValuesNameTheOptionTheValueAndTheRule) {
  auto with_port = [](const std::string &p) {
    return std::vector<std::string>{"--worker-id", kId, "--model", "m", "--gpu-device", "0", "--port", p};
  };
  const Bad bad[] = {
      {with_port("1023"), "--port"},
      {with_port("65536"), "--port"},
      {with_port("80a"), "--port"},
      {with_port("-1"), "--port"},
      {with_port(""), "--port"},
      {{"--worker-id", "not-a-uuid"}, "not-a-uuid"},
      {{"--gpu-device", "256"}, "--gpu-device"},
      {{"--max-tokens-out", "0"}, "--max-tokens-out"},
      {{"--max-tokens-out", "2049"}, "--max-tokens-out"},
      {{"--inference-timeout-sec", "0"}, "--inference-timeout-sec"},
      {{"--callback-url", "ftp://x/"}, "--callback-url"},
      {{"--callback-url", "not a url"}, "--callback-url"},
      {{"--bogus", "1"}, "--bogus"},
      {{"--port"}, "--port"},
      {{"--plugin-dir", ""}, "--plugin-dir"},
  };
  for (const auto &b : bad) {
    std::string msg = error_of(b.args);
    EXPECT_FALSE(msg.empty()) << "accepted: " << ::testing::PrintToString(b.args);
    EXPECT_NE(msg.find(b.must_mention), std::string::npos) << msg;
  }
  std::vector<std::string> ok_low = with_port("1024"), ok_high = with_port("65535");
  EXPECT_EQ(error_of(ok_low), "");
  EXPECT_EQ(error_of(ok_high), "");
  std::string range = error_of(with_port("80"));
  EXPECT_NE(range.find("80"), std::string::npos);
  EXPECT_NE(range.find("[1024, 65535]"), std::string::npos) << range;
}

TEST(ServeArgs, RepeatedOptionIsAnError) {
  EXPECT_NE(error_of({"--bind", "::1", "--bind", "127.0.0.1"}).find("given twice"), std::string::npos);
}

TEST(ServeArgs, HelpDocumentsEveryOption) {
  EXPECT_TRUE(parse({"--help"}, false).help);
  std::string usage = serve_usage();
  for (const char *opt : {"--worker-id", "--model", "--gpu-device", "--port", "--bind", "--callback-url",
                          "--max-tokens-in", "--max-tokens-out", "--inference-timeout-sec",
                          "--kv-cache-size-mb", "--plugin-dir", "--shutdown-deadline-sec"})
    EXPECT_NE(usage.find(opt), std::string::npos) << opt;
}

} // namespace
} // namespace wo::http
