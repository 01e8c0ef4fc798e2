// `worker-orcd run`'s command line: every refusal exits 1 with a message that names the option,
// what was expected and what was found, before a model is opened or a GPU touched.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "run_command.hpp"

#include <string>

using ::testing::HasSubstr;

namespace {

wo::test::CommandResult run(const std::string &args) {
  return wo::test::run_command(std::string("'") + WORKER_ORCD_EXE + "' run " + args + " 2>&1");
}

TEST(RunCli, StepLogitsNeedAStepBelowTheTokenCount) {
  const wo::test::CommandResult o =
      run("--model /nonexistent.gguf --prompt hi --n 8 --step 8 --step-logits-out /tmp/x.f32");
  EXPECT_EQ(o.status, 1) << o.out;
  EXPECT_THAT(o.out, HasSubstr("--step: expected a generated token index below --n 8, found 8"));
}

TEST(RunCli, BadNumbersNameTheOptionAndTheText) {
  wo::test::CommandResult o = run("--model m.gguf --prompt hi --step -1 --step-logits-out /tmp/x.f32");
  EXPECT_EQ(o.status, 1) << o.out;
  EXPECT_THAT(o.out, HasSubstr("--step: expected an integer in 0..1048576, found '-1'"));
  o = run("--model m.gguf --prompt hi --n 12x");
  EXPECT_EQ(o.status, 1) << o.out;
  EXPECT_THAT(o.out, HasSubstr("--n: expected an integer in 0..1048576, found '12x'"));
}

TEST(RunCli, PromptAndModelAreRequiredOnce) {
  wo::test::CommandResult o = run("--prompt hi");
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
  const wo::test::CommandResult o = run("--help");
  EXPECT_EQ(o.status, 0) << o.out;
  EXPECT_THAT(o.out, HasSubstr("--step-logits-out"));
}

} // namespace
