// `worker-orcd run`'s command line: every refusal exits 1 with a message that names the option,
// what was expected and what was found, before a model is opened or a GPU touched.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <array>
#include <cstdio>
#include <string>
#include <sys/wait.h>

using ::testing::HasSubstr;

namespace {

struct Outcome {
  int status = -1;
  std::string out; // stdout and stderr
};

Outcome run(const std::string &args) {
  const std::string cmd = std::string("'") + WORKER_ORCD_EXE + "' run " + args + " 2>&1";
  Outcome r;
  FILE *p = popen(cmd.c_str(), "r");
  if (!p) return r;
  std::array<char, 4096> buf;
  size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), p)) > 0)
    r.out.append(buf.data(), n);
  const int st = pclose(p);
  r.status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  return r;
}

TEST(RunCli, StepLogitsNeedAStepBelowTheTokenCount) {
  const Outcome o = run("--model /nonexistent.gguf --prompt hi --n 8 --step 8 --step-logits-out /tmp/x.f32");
  EXPECT_EQ(o.status, 1) << o.out;
  EXPECT_THAT(o.out, HasSubstr("--step: expected a generated token index below --n 8, found 8"));
}

TEST(RunCli, BadNumbersNameTheOptionAndTheText) {
  Outcome o = run("--model m.gguf --prompt hi --step -1 --step-logits-out /tmp/x.f32");
  EXPECT_EQ(o.status, 1) << o.out;
  EXPECT_THAT(o.out, HasSubstr("--step: expected an integer in 0..1048576, found '-1'"));
  o = run("--model m.gguf --prompt hi --n 12x");
  EXPECT_EQ(o.status, 1) << o.out;
  EXPECT_THAT(o.out, HasSubstr("--n: expected an integer in 0..1048576, found '12x'"));
}

TEST(RunCli, PromptAndModelAreRequiredOnce) {
  Outcome o = run("--prompt hi");
  EXPECT_EQ(o.status, 1) << o.out;
  EXPECT_THAT(o.out, HasSubstr("--model: expected a model, found none"));
  o = run("--model m.gguf --prompt hi --prompt-ids 1,2");
  EXPECT_EQ(o.status, 1) << o.out;
  EXPECT_THAT(o.out, HasSubstr("expected exactly one of --prompt and --prompt-ids, found both"));
  o = run("--model m.gguf --prompt hi --frobnicate 3");
  EXPECT_EQ(o.status, 1) << o.out;
  EXPECT_THAT(o.out, HasSubstr("unknown option '--frobnicate'"));
}

TEST(RunCli, HelpListsTheStepDump) {
  const Outcome o = run("--help");
  EXPECT_EQ(o.status, 0) << o.out;
  EXPECT_THAT(o.out, HasSubstr("--step-logits-out"));
}

} // namespace
