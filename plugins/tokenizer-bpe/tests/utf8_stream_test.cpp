// wo::Utf8Assembler: complete characters only, nothing dropped, U+FFFD only where certain.
#include <worker/utf8_stream.hpp>

#include "utf8_text.hpp"

#include <gtest/gtest.h>

#include <random>

namespace {

const std::string kFFFD = "\xEF\xBF\xBD";

std::string feed_bytewise(const std::string &s) {
  wo::Utf8Assembler a;
  std::string out;
  for (char c : s)
    out += a.push(std::string_view(&c, 1));
  out += a.flush();
  return out;
}

TEST(Utf8Assembler, HoldsBackPartialCharacters) {
  wo::Utf8Assembler a;
  EXPECT_EQ(a.push("a\xE4\xBD"), "a"); // 你 = E4 BD A0, cut after two bytes
  EXPECT_EQ(a.pending_bytes(), 2u);
  EXPECT_EQ(a.push("\xA0!"), "\xE4\xBD\xA0!");
  EXPECT_EQ(a.flush(), "");
  EXPECT_EQ(a.push("\xF0\x9F"), "");
  EXPECT_EQ(a.push("\x9A"), "");
  EXPECT_EQ(a.push("\x80"), "\xF0\x9F\x9A\x80"); // 🚀
}

TEST(Utf8Assembler, ReplacesOnlyCertainlyInvalidSequences) {
  wo::Utf8Assembler a;
  EXPECT_EQ(a.push("\x80"), kFFFD);                         // stray continuation
  EXPECT_EQ(a.push("\xC0\xAF"), kFFFD + kFFFD);             // overlong lead, then stray continuation
  EXPECT_EQ(a.push("\xE4\xBDx"), kFFFD + "x");              // cut by an ASCII byte: one U+FFFD for E4 BD
  EXPECT_EQ(a.push("\xED\xA0\x80"), kFFFD + kFFFD + kFFFD); // a UTF-16 surrogate is not UTF-8
  EXPECT_EQ(a.push("\xF4\x90"), kFFFD + kFFFD);             // beyond U+10FFFF
  EXPECT_EQ(a.push("\xE4"), "");                            // could still complete
  EXPECT_EQ(a.flush(), kFFFD);                              // ... but the stream ended
  EXPECT_EQ(a.flush(), "");
}

TEST(Utf8Assembler, ValidTextPassesUnchangedAnyChunking) {
  std::mt19937 rng(std::random_device{}());
  for (int iter = 0; iter < 500; ++iter) {
    std::string s;
    int n = rng() % 40;
    for (int i = 0; i < n; ++i) {
      uint32_t cp;
      do
        cp = rng() % 0x110000;
      while (cp >= 0xD800 && cp <= 0xDFFF);
      if (cp < 0x80)
        s += static_cast<char>(cp);
      else if (cp < 0x800)
        s += {static_cast<char>(0xC0 | (cp >> 6)), static_cast<char>(0x80 | (cp & 0x3F))};
      else if (cp < 0x10000)
        s += {static_cast<char>(0xE0 | (cp >> 12)), static_cast<char>(0x80 | ((cp >> 6) & 0x3F)),
              static_cast<char>(0x80 | (cp & 0x3F))};
      else
        s += {static_cast<char>(0xF0 | (cp >> 18)), static_cast<char>(0x80 | ((cp >> 12) & 0x3F)),
              static_cast<char>(0x80 | ((cp >> 6) & 0x3F)), static_cast<char>(0x80 | (cp & 0x3F))};
    }
    EXPECT_EQ(feed_bytewise(s), s);
  }
}

// Any byte soup: the output never depends on where the chunks were cut.
TEST(Utf8Assembler, OutputIndependentOfChunking) {
  std::mt19937 rng(std::random_device{}());
  const unsigned char interesting[] = {0x00, 0x41, 0x7F, 0x80, 0xBF, 0xC0, 0xC2, 0xDF, 0xE0, 0xE4,
                                       0xED, 0xEF, 0xF0, 0xF4, 0xF5, 0xFF, 0xA0, 0x9F, 0x90, 0x8F};
  for (int iter = 0; iter < 2000; ++iter) {
    std::string s;
    int n = rng() % 24;
    for (int i = 0; i < n; ++i)
      s += static_cast<char>(rng() % 2 ? interesting[rng() % sizeof interesting] : rng() % 256);
    wo::Utf8Assembler whole;
    std::string expect = whole.push(s);
    expect += whole.flush(); // (not `push() + flush()`: operand order is unspecified)
    wo::Utf8Assembler chunked;
    std::string got;
    for (size_t i = 0; i < s.size();) {
      size_t len = 1 + rng() % 4;
      got += chunked.push(std::string_view(s).substr(i, len));
      i += len;
    }
    got += chunked.flush();
    ASSERT_EQ(got, expect);
    EXPECT_NO_THROW(wo::tok::require_utf8(got, "assembler output")); // always valid UTF-8
  }
}

} // namespace
