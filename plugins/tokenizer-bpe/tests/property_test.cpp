// Randomized properties over generated UTF-8 text (all planes, combining marks, whitespace runs,
// special-token text): no failure, decode(encode(s)) == s, every id inside the vocabulary, and the
// streaming assembler fed token by token yields exactly the whole decode. Invalid input (lone
// surrogates) is rejected.
#include "test_support.hpp"

#include <worker/sdk.hpp>
#include <worker/utf8_stream.hpp>

#include <gtest/gtest.h>

#include <random>
#include <thread>

namespace wo::tok::testing {
namespace {

void append_cp(std::string &s, uint32_t cp) {
  if (cp < 0x80) {
    s += static_cast<char>(cp);
  } else if (cp < 0x800) {
    s += static_cast<char>(0xC0 | (cp >> 6));
    s += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    s += static_cast<char>(0xE0 | (cp >> 12));
    s += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    s += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    s += static_cast<char>(0xF0 | (cp >> 18));
    s += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    s += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    s += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

class TextGen {
public:
  explicit TextGen(uint32_t seed, bool allow_sp_space = true) : rng_(seed), allow_sp_space_(allow_sp_space) {}
  std::string next() {
    std::string s;
    for (int segs = pick(12); segs > 0; --segs) {
      switch (pick(9)) {
      case 0: s += words[pick(sizeof words / sizeof *words)]; break;
      case 1: // whitespace run
        for (int k = 1 + pick(5); k > 0; --k)
          s += spaces[pick(sizeof spaces / sizeof *spaces)];
        break;
      case 2: // a base letter with combining marks
        append_cp(s, 'a' + pick(26));
        for (int k = 1 + pick(3); k > 0; --k)
          append_cp(s, 0x300 + pick(0x70));
        break;
      case 3: append_cp(s, any_plane()); break;
      case 4: append_cp(s, 0x4E00 + pick(0x5200)); break; // CJK
      case 5:                                             // emoji, sometimes joined
        append_cp(s, 0x1F300 + pick(0x300));
        if (pick(3) == 0) {
          append_cp(s, 0x200D);
          append_cp(s, 0x1F300 + pick(0x300));
        }
        break;
      case 6: s += std::to_string(rng_() % 100000); break;
      case 7: s += specials[pick(sizeof specials / sizeof *specials)]; break;
      default: append_cp(s, 0x20 + pick(0x5F)); break; // ASCII
      }
    }
    return s;
  }

private:
  uint32_t pick(uint32_t n) { return n ? static_cast<uint32_t>(rng_() % n) : 0; }
  uint32_t any_plane() {
    for (;;) {
      uint32_t plane = pick(17);
      uint32_t cp = (plane << 16) | pick(0x10000);
      if (cp >= 0xD800 && cp <= 0xDFFF) continue; // not scalar values
      if (cp == 0) continue;
      if (!allow_sp_space_ && cp == 0x2581) continue;
      return cp;
    }
  }
  std::mt19937 rng_;
  bool allow_sp_space_;
  static constexpr const char *words[] = {"hello",   " world", "I'm",      " they'll",
                                          "Ünïcödé", " naïve", "tokenizer"};
  static constexpr const char *spaces[] = {" ",    "  ",       "\t",           "\n",
                                           "\r\n", "\xC2\xA0", "\xE3\x80\x80", "\xE2\x80\x8B"};
  static constexpr const char *specials[] = {"<|im_start|>", "<|endoftext|>", "<think>",
                                             "<|start|>",    "<s>",           "</s>"};
};

void check_properties(const Tokenizer &tok, int n, bool spm, uint32_t seed) {
  TextGen gen(seed, !spm);
  const int64_t vocab = tok.vocab().size();
  for (int i = 0; i < n; ++i) {
    const std::string s = gen.next();
    // SentencePiece adds a space after special tokens and phi-3 tokens swallow spaces: only the
    // plain-text path is lossless there.
    for (bool parse : spm ? std::vector<bool>{false} : std::vector<bool>{false, true}) {
      std::vector<int32_t> ids;
      ASSERT_NO_THROW(ids = tok.encode(s, false, parse)) << "seed " << seed << " case " << i;
      for (int32_t id : ids)
        ASSERT_TRUE(id >= 0 && id < vocab) << id;
      const std::string whole = tok.decode(ids);
      ASSERT_EQ(whole, s) << "seed " << seed << " case " << i << " parse_special " << parse;
      wo::Utf8Assembler a;
      std::string streamed;
      for (size_t k = 0; k < ids.size(); ++k) {
        std::string_view b = tok.token_bytes(ids[k]);
        if (spm && k == 0 && !b.empty() && b[0] == ' ') b.remove_prefix(1); // the prefix the encoder added
        streamed += a.push(b);
      }
      streamed += a.flush();
      ASSERT_EQ(streamed, whole) << "seed " << seed << " case " << i;
    }
  }
}

TEST(Property, ByteLevelTenThousandRandomStrings) {
  const uint32_t seed = std::random_device{}();
  const Tokenizer &tok = *cached_gguf(tokenizer_fixtures_dir() + "/qwen2-tiny-vocab.gguf").tok;
  check_properties(tok, 10000, false, seed);
}

TEST(Property, SentencePieceRandomStrings) {
  const uint32_t seed = std::random_device{}();
  const Tokenizer &tok = *cached_gguf(fixtures_dir() + "/models/phi3-tiny-Q4_K_M.gguf").tok;
  check_properties(tok, 2000, true, seed);
}

// One instance serves several request threads: results must not depend on interleaving (the
// piece cache is shared).
TEST(Property, ConcurrentEncodeGivesTheSameIds) {
  const Tokenizer &tok = *cached_gguf(tokenizer_fixtures_dir() + "/gpt-oss-tiny-vocab.gguf").tok;
  TextGen gen(std::random_device{}());
  std::vector<std::string> texts(300);
  for (auto &t : texts)
    t = gen.next();
  std::vector<std::vector<int32_t>> expect;
  for (const auto &t : texts)
    expect.push_back(tok.encode(t, false, true));
  std::vector<int> mismatches(4, 0);
  std::vector<std::thread> threads;
  for (int th = 0; th < 4; ++th)
    threads.emplace_back([&, th] {
      for (int rep = 0; rep < 3; ++rep)
        for (size_t i = 0; i < texts.size(); ++i)
          mismatches[th] += tok.encode(texts[(i * (th + 1)) % texts.size()], false, true) !=
                            expect[(i * (th + 1)) % texts.size()];
    });
  for (auto &t : threads)
    t.join();
  for (int m : mismatches)
    EXPECT_EQ(m, 0);
}

TEST(Property, LoneSurrogatesAreRejected) {
  const Tokenizer &tok = *cached_gguf(tokenizer_fixtures_dir() + "/qwen2-tiny-vocab.gguf").tok;
  std::mt19937 rng(std::random_device{}());
  for (int i = 0; i < 200; ++i) {
    std::string s = "ok ";
    append_cp(s, 0x4E00 + rng() % 100);
    // A surrogate encoded as if it were a code point (CESU-8 style): ED A0..BF xx.
    s += static_cast<char>(0xED);
    s += static_cast<char>(0xA0 + rng() % 0x20);
    s += static_cast<char>(0x80 + rng() % 0x40);
    try {
      tok.encode(s, false, true);
      FAIL() << "surrogate accepted";
    } catch (const Error &e) {
      EXPECT_EQ(e.status(), WO_ERR_INVALID_ARGUMENT);
    }
  }
}

} // namespace
} // namespace wo::tok::testing
