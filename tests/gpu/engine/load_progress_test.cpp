// model_load_progress events: 0/25/50/75/100 exactly once each, in order, however the upload's
// chunks fall (random chunk sizes, including chunks that jump several thresholds at once).
#include "engine/load_progress.hpp"
#include "observe/log.hpp"

#include <gtest/gtest.h>
#include <rapidjson/document.h>

#include <random>

namespace {

struct Captured {
  std::vector<int64_t> percents;
  std::vector<uint64_t> done;
};

Captured capture(uint64_t total, const std::vector<uint64_t> &steps) {
  Captured c;
  wo::observe::set_sink([&](const std::string &line) {
    rapidjson::Document d;
    d.Parse(line.c_str());
    ASSERT_FALSE(d.HasParseError()) << line;
    if (std::string(d["event"].GetString()) != "model_load_progress") return;
    c.percents.push_back(d["percent"].GetInt64());
    c.done.push_back(d["bytes_done"].GetUint64());
    EXPECT_EQ(d["bytes_total"].GetUint64(), total);
    EXPECT_EQ(std::string(d["model_ref"].GetString()), "m.gguf");
  });
  wo::engine::LoadProgress p("m.gguf", total);
  p.start();
  for (uint64_t s : steps)
    p.advance(s);
  p.finish();
  wo::observe::set_sink(nullptr);
  return c;
}

const std::vector<int64_t> kAll{0, 25, 50, 75, 100};

TEST(LoadProgress, RandomChunkingEmitsEveryThresholdOnceInOrder) {
  std::random_device rd;
  std::mt19937_64 rng((uint64_t{rd()} << 32) | rd());
  for (int trial = 0; trial < 50; ++trial) {
    const uint64_t total = 1 + rng() % (64ull << 20);
    std::vector<uint64_t> steps;
    uint64_t at = 0;
    while (at < total) {
      at = std::min(total, at + 1 + rng() % (total / 3 + 1));
      steps.push_back(at);
    }
    Captured c = capture(total, steps);
    ASSERT_EQ(c.percents, kAll) << "total " << total << ", " << steps.size() << " chunks";
    for (size_t i = 1; i + 1 < c.percents.size(); ++i)
      EXPECT_GE(c.done[i] * 100, total * static_cast<uint64_t>(c.percents[i]))
          << "emitted before the bytes were there";
    EXPECT_EQ(c.done.back(), total);
  }
}

TEST(LoadProgress, OneChunkAndEmptyModelStillReportEveryThreshold) {
  EXPECT_EQ(capture(1000, {1000}).percents, kAll);
  EXPECT_EQ(capture(0, {}).percents, kAll);
}

TEST(LoadProgress, HundredOnlyAfterFinish) {
  std::vector<int64_t> seen;
  wo::observe::set_sink([&](const std::string &line) {
    rapidjson::Document d;
    d.Parse(line.c_str());
    if (std::string(d["event"].GetString()) == "model_load_progress") seen.push_back(d["percent"].GetInt64());
  });
  wo::engine::LoadProgress p("m.gguf", 400);
  p.start();
  p.advance(400); // every byte staged, copies may still be in flight
  EXPECT_EQ(seen, (std::vector<int64_t>{0, 25, 50, 75}));
  p.finish();
  wo::observe::set_sink(nullptr);
  EXPECT_EQ(seen, kAll);
}

} // namespace
