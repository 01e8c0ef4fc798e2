// Stop sequences must match across token boundaries, never leak the stop string, and never
// withhold text that can no longer start a match.
#include "generation/stop_matcher.hpp"

#include <gtest/gtest.h>

#include <random>

using wo::generation::StopMatcher;

namespace {

// Feed `pieces`, returning (streamed text, stopped).
std::pair<std::string, bool> run(StopMatcher m, const std::vector<std::string> &pieces) {
  std::string out;
  for (const auto &p : pieces) {
    auto s = m.feed(p);
    out += s.emit;
    if (s.stopped) return {out, true};
  }
  return {out + m.finish(), false};
}

} // namespace

TEST(StopMatcher, NoStopsPassesEverythingThrough) {
  StopMatcher m({});
  EXPECT_EQ(m.feed("abc").emit, "abc");
  EXPECT_EQ(m.finish(), "");
}

TEST(StopMatcher, MatchInsideOnePiece) {
  auto [out, stopped] = run(StopMatcher({"END"}), {"hello END world"});
  EXPECT_TRUE(stopped);
  EXPECT_EQ(out, "hello ");
}

TEST(StopMatcher, MatchAcrossPieces) {
  auto [out, stopped] = run(StopMatcher({"</s>"}), {"abc<", "/", "s", "> tail"});
  EXPECT_TRUE(stopped);
  EXPECT_EQ(out, "abc");
}

TEST(StopMatcher, HoldsOnlyWhatCouldStillMatch) {
  StopMatcher m({"STOP"});
  EXPECT_EQ(m.feed("aST").emit, "a");  // "ST" may become STOP
  EXPECT_EQ(m.feed("x").emit, "STx");  // no longer can
  EXPECT_EQ(m.feed("S").emit, "");
  EXPECT_EQ(m.finish(), "S"); // end without a match: the tail is text
}

TEST(StopMatcher, EarliestOfSeveralStopsWins) {
  auto [out, stopped] = run(StopMatcher({"world", "lo w"}), {"hel", "lo world"});
  EXPECT_TRUE(stopped);
  EXPECT_EQ(out, "hel");
}

TEST(StopMatcher, MultibyteStopSequence) {
  auto [out, stopped] = run(StopMatcher({"。"}), {"你好", "。", "再见"});
  EXPECT_TRUE(stopped);
  EXPECT_EQ(out, "你好");
}

// Property: for random texts and random splits, the streamed output equals the text up to the
// first occurrence of a stop (or all of it), whatever the split.
TEST(StopMatcher, RandomSplitsAgreeWithWholeTextSearch) {
  std::mt19937 rng(1234);
  const std::string alphabet = "ab<>/";
  for (int trial = 0; trial < 2000; ++trial) {
    std::string text;
    int len = static_cast<int>(rng() % 40);
    for (int i = 0; i < len; ++i) text += alphabet[rng() % alphabet.size()];
    std::vector<std::string> stops = {"</a>", "bb"};
    size_t first = std::string::npos;
    for (const auto &s : stops) first = std::min(first, text.find(s));
    std::vector<std::string> pieces;
    for (size_t i = 0; i < text.size();) {
      size_t n = 1 + rng() % 4;
      pieces.push_back(text.substr(i, n));
      i += n;
    }
    auto [out, stopped] = run(StopMatcher(stops), pieces);
    EXPECT_EQ(stopped, first != std::string::npos) << text;
    EXPECT_EQ(out, first == std::string::npos ? text : text.substr(0, first)) << text;
  }
}
