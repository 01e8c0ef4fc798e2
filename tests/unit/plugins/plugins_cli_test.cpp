// `worker-orcd plugins` end to end: the real executable, its JSON contract (an array of objects
// with exactly path, name, kind, version, abi, accepted, reason), its table, and its errors.
#include "run_command.hpp"

#include <rapidjson/document.h>
#include <worker/sdk.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <set>
#include <string>

namespace fs = std::filesystem;
using ::testing::HasSubstr;

namespace {

wo::test::CommandResult run(const std::string &args, bool with_stderr = false) {
  return wo::test::run_command(std::string("'") + WORKER_ORCD_EXE + "' " + args +
                               (with_stderr ? " 2>&1" : " 2>/dev/null"));
}

std::string case_dir(const std::string &c) { return std::string(WORKER_TEST_PLUGIN_ROOT) + "/" + c; }

rapidjson::Document parse_listing(const std::string &json) {
  rapidjson::Document d;
  d.Parse(json.c_str());
  EXPECT_FALSE(d.HasParseError()) << "not JSON: " << json;
  EXPECT_TRUE(d.IsArray());
  return d;
}

void expect_exact_keys(const rapidjson::Value &o) {
  ASSERT_TRUE(o.IsObject());
  std::set<std::string> keys;
  for (auto it = o.MemberBegin(); it != o.MemberEnd(); ++it)
    keys.insert(it->name.GetString());
  EXPECT_EQ(keys, (std::set<std::string>{"path", "name", "kind", "version", "abi", "accepted", "reason"}));
  for (const char *k : {"path", "name", "kind", "version", "abi", "reason"})
    EXPECT_TRUE(o[k].IsString()) << k;
  EXPECT_TRUE(o["accepted"].IsBool());
}

} // namespace

TEST(PluginsCommand, JsonListsEveryCandidateWithTheContractsKeys) {
  wo::test::CommandResult r = run("plugins --json --plugin-dir '" + case_dir("duplicate") + "'");
  ASSERT_EQ(r.status, 0) << r.out;
  auto d = parse_listing(r.out);
  ASSERT_EQ(d.Size(), 2u);
  for (const auto &o : d.GetArray())
    expect_exact_keys(o);
  EXPECT_STREQ(d[0]["path"].GetString(), (case_dir("duplicate") + "/dup_a.so").c_str());
  EXPECT_STREQ(d[0]["name"].GetString(), "tp-dup");
  EXPECT_STREQ(d[0]["kind"].GetString(), "quant");
  EXPECT_STREQ(d[0]["version"].GetString(), "1.2.3");
  EXPECT_EQ(std::string(d[0]["abi"].GetString()), "1." + std::to_string(WORKER_SDK_ABI_MINOR));
  EXPECT_TRUE(d[0]["accepted"].GetBool());
  EXPECT_STREQ(d[0]["reason"].GetString(), "");
  EXPECT_FALSE(d[1]["accepted"].GetBool());
  EXPECT_THAT(d[1]["reason"].GetString(), HasSubstr("duplicate name 'tp-dup'"));
}

TEST(PluginsCommand, TableShowsStatusAndReasons) {
  wo::test::CommandResult r = run("plugins --plugin-dir '" + case_dir("abi_major") + "'");
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_THAT(r.out, HasSubstr("plugin directory: " + case_dir("abi_major")));
  EXPECT_THAT(r.out, HasSubstr("REJECTED"));
  EXPECT_THAT(r.out, HasSubstr("reason: ABI major mismatch"));
  EXPECT_THAT(r.out, HasSubstr("0 accepted, 1 rejected"));
  wo::test::CommandResult good = run("plugins --plugin-dir=" + case_dir("good"));
  EXPECT_THAT(good.out, HasSubstr("3 accepted, 0 rejected"));
}

TEST(PluginsCommand, MissingDirectoryAndBadArgumentsExitOneWithAMessage) {
  wo::test::CommandResult r = run("plugins --plugin-dir /nonexistent/wo-plugins", true);
  EXPECT_EQ(r.status, 1);
  EXPECT_THAT(r.out, HasSubstr("--plugin-dir '/nonexistent/wo-plugins' is not a directory"));
  wo::test::CommandResult bad = run("plugins --frobnicate", true);
  EXPECT_EQ(bad.status, 1);
  EXPECT_THAT(bad.out, HasSubstr("unexpected argument '--frobnicate'"));
  wo::test::CommandResult help = run("plugins --help");
  EXPECT_EQ(help.status, 0);
  EXPECT_THAT(help.out, HasSubstr("--json"));
}

TEST(PluginsCommand, TheProjectsOwnPluginsAreAllAccepted) {
  const std::string dir = WORKER_PLUGIN_DIR_DEFAULT;
  size_t n_so = 0;
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec))
    n_so += it->path().extension() == ".so";
  if (n_so == 0) GTEST_SKIP() << "no plugins built in " << dir;
  wo::test::CommandResult r =
      run("plugins --json"); // default dir: <exe dir>/../plugins = the build's plugin folder
  ASSERT_EQ(r.status, 0) << r.out;
  auto d = parse_listing(r.out);
  EXPECT_EQ(d.Size(), n_so);
  for (const auto &o : d.GetArray()) {
    expect_exact_keys(o);
    EXPECT_TRUE(o["accepted"].GetBool()) << o["path"].GetString() << ": " << o["reason"].GetString();
  }
}
