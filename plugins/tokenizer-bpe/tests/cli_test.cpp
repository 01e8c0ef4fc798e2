// `worker-orcd tokenize` end to end: the real executable, the real plugin directory.
#include "test_support.hpp"

#include <rapidjson/document.h>

#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <sys/wait.h>

namespace wo::tok::testing {
namespace {

struct Result {
  int status;
  std::string out;
};

Result run(const std::string &args) {
  const std::string cmd = std::string(WORKER_BUILD_DIR) + "/bin/worker-orcd tokenize --plugin-dir " +
                          WORKER_PLUGIN_DIR_DEFAULT + " " + args + " 2>&1";
  FILE *p = popen(cmd.c_str(), "r");
  Result r{-1, {}};
  if (!p) return r;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0)
    r.out.append(buf, n);
  int st = pclose(p);
  r.status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  return r;
}

std::string temp_text(const std::string &body) {
  std::string path = ::testing::TempDir() + "/tokenize_cli_input.txt";
  std::ofstream(path, std::ios::binary) << body;
  return path;
}

std::vector<int32_t> json_ids(const std::string &out, std::vector<std::string> *pieces = nullptr) {
  rapidjson::Document d;
  d.Parse(out.c_str());
  EXPECT_FALSE(d.HasParseError()) << out;
  std::vector<int32_t> ids;
  if (d.HasParseError() || !d.IsObject()) return ids;
  for (const auto &v : d["ids"].GetArray())
    ids.push_back(v.GetInt());
  if (pieces)
    for (const auto &v : d["pieces"].GetArray())
      pieces->emplace_back(v.GetString(), v.GetStringLength());
  return ids;
}

class TokenizeCli : public ::testing::Test {
protected:
  void SetUp() override {
    if (!file_exists(std::string(WORKER_BUILD_DIR) + "/bin/worker-orcd"))
      GTEST_SKIP() << "worker-orcd not built";
  }
  const std::string qwen = tokenizer_fixtures_dir() + "/qwen2-tiny-vocab.gguf";
};

TEST_F(TokenizeCli, JsonIdsMatchTheReferenceWithAndWithoutSpecialParsing) {
  for (const auto &e : load_reference(fixtures_dir() + "/reference/tokenize/qwen2.json")) {
    if (e.name != "qwen_chat" && e.name != "chinese" && e.name != "code") continue;
    const std::string file = temp_text(e.text);
    std::vector<std::string> pieces;
    auto r = run("--model " + qwen + " --json --text-file " + file);
    ASSERT_EQ(r.status, 0) << r.out;
    EXPECT_EQ(json_ids(r.out, &pieces), e.ids[3]) << e.name; // defaults: add + parse special
    EXPECT_EQ(pieces.size(), e.ids[3].size());
    r = run("--model " + qwen + " --json --no-parse-special --no-add-special --text-file " + file);
    ASSERT_EQ(r.status, 0) << r.out;
    EXPECT_EQ(json_ids(r.out), e.ids[0]) << e.name;
  }
}

TEST_F(TokenizeCli, DetokenizeAndSpmBos) {
  auto r = run("--model " + qwen + " --detokenize 151644,872,198,13048,0");
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_EQ(r.out, "<|im_start|>user\nHi!\n");
  const std::string phi3 = fixtures_dir() + "/models/phi3-tiny-Q4_K_M.gguf";
  r = run("--model " + phi3 + " --json Hello");
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_EQ(json_ids(r.out), (std::vector<int32_t>{1, 15043})); // BOS as the metadata asks
  r = run("--model " + phi3 + " --json --no-add-special Hello");
  EXPECT_EQ(json_ids(r.out), (std::vector<int32_t>{15043}));
  r = run("--model " + phi3 + " --detokenize 1,15043");
  EXPECT_EQ(r.out, "<s>Hello\n"); // the encoder's space prefix is dropped
}

TEST_F(TokenizeCli, ErrorsNameTheProblem) {
  auto r = run("--model /nonexistent/model.gguf hi");
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.out.find("/nonexistent/model.gguf"), std::string::npos) << r.out;
  r = run("--model " + qwen + " --detokenize 1,x");
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.out.find("'x'"), std::string::npos) << r.out;
  r = run("--model " + qwen);
  EXPECT_EQ(r.status, 1);
}

} // namespace
} // namespace wo::tok::testing
