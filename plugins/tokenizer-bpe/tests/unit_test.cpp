// Building blocks: byte-level mapping, regex splitting, UTF-8 checks, special-token splitting,
// metadata errors.
#include "byte_level.hpp"
#include "normalizer.hpp"
#include "pre_patterns.hpp"
#include "regex_splitter.hpp"
#include "special_split.hpp"
#include "test_support.hpp"
#include "utf8_text.hpp"

#include <worker/sdk.hpp>

#include <gtest/gtest.h>

#include <random>

#include <utf8proc.h>

namespace wo::tok::testing {
namespace {

TEST(ByteLevel, AllBytesRoundTripThroughPrintableText) {
  std::string all;
  for (int b = 0; b < 256; ++b)
    all.push_back(static_cast<char>(b));
  const std::string text = bytes_to_unicode(all);
  std::string back;
  ASSERT_TRUE(unicode_to_bytes(text, back));
  EXPECT_EQ(back, all);
  EXPECT_EQ(byte_to_unicode(' '), "\xC4\xA0");  // Ġ
  EXPECT_EQ(byte_to_unicode('\n'), "\xC4\x8A"); // Ċ
  EXPECT_EQ(byte_to_unicode('A'), "A");
  EXPECT_FALSE(unicode_to_bytes("\xE4\xBD\xA0", back)); // not a byte-level code point
}

TEST(RegexSplitter, PiecesCoverTheTextExactly) {
  std::mt19937 rng(std::random_device{}());
  const char *alphabet[] = {"a",       "Z",  "7", " ",        "  ",           "\n",
                            "\t",      "'s", "!", "\xC3\xA9", "\xE4\xBD\xA0", "\xF0\x9F\x9A\x80",
                            "\xCC\x81"};
  for (const std::string &pre :
       {std::string("qwen2"), std::string("gpt-4o"), std::string("llama-bpe"), std::string("gpt-2")}) {
    RegexSplitter sp(pre_rule(pre)->pattern, pre);
    for (int iter = 0; iter < 300; ++iter) {
      std::string s;
      for (int i = rng() % 30; i > 0; --i)
        s += alphabet[rng() % (sizeof alphabet / sizeof *alphabet)];
      std::vector<std::string_view> pieces;
      sp.split(s, pieces);
      std::string joined;
      for (auto p : pieces) {
        EXPECT_FALSE(p.empty());
        joined += p;
      }
      ASSERT_EQ(joined, s) << pre;
    }
  }
}

TEST(RegexSplitter, Qwen2SplitsDigitsOneByOneLlama3InThrees) {
  std::vector<std::string_view> q, l;
  RegexSplitter(pre_rule("qwen2")->pattern, "qwen2").split("12345", q);
  RegexSplitter(pre_rule("llama-bpe")->pattern, "llama-bpe").split("12345", l);
  EXPECT_EQ(q.size(), 5u);
  ASSERT_EQ(l.size(), 2u);
  EXPECT_EQ(l[0], "123");
}

TEST(RegexSplitter, BadPatternIsAFormatErrorNamingTheOrigin) {
  try {
    RegexSplitter("(unclosed", "tokenizer.json pre_tokenizer");
    FAIL();
  } catch (const Error &e) {
    EXPECT_EQ(e.status(), WO_ERR_FORMAT);
    EXPECT_NE(std::string(e.what()).find("tokenizer.json pre_tokenizer"), std::string::npos);
  }
}

TEST(Utf8Check, RejectsSurrogatesOverlongAndTruncation) {
  EXPECT_NO_THROW(require_utf8("h\xC3\xA9llo \xF0\x9F\x9A\x80", "t"));
  for (const std::string &bad :
       {std::string("ab\xED\xA0\x80"), std::string("\xC0\x80"), std::string("x\xE4\xBD"),
        std::string("\xF4\x90\x80\x80"), std::string("\xFF")}) {
    try {
      require_utf8(bad, "text to tokenize");
      FAIL() << "accepted invalid UTF-8";
    } catch (const Error &e) {
      EXPECT_EQ(e.status(), WO_ERR_INVALID_ARGUMENT);
      EXPECT_NE(std::string(e.what()).find("offset"), std::string::npos) << e.what();
    }
  }
}

// The ASCII fast path of normalize() must give what utf8proc gives on the whole text.
TEST(Normalizer, SegmentedNfcEqualsWholeText) {
  std::mt19937 rng(std::random_device{}());
  const char *parts[] = {"e",
                         "a",
                         " ",
                         "x",
                         "\xCC\x81",
                         "\xCC\xA3",
                         "\xCC\x88",
                         "\xC3\xA9",
                         "\xEF\xAC\x81",
                         "\xE1\x84\x80",
                         "\xE1\x85\xA1",
                         "\xEA\xB0\x80",
                         "\xE2\x84\xAB",
                         "1"};
  for (int iter = 0; iter < 2000; ++iter) {
    std::string s;
    for (int k = rng() % 16; k > 0; --k)
      s += parts[rng() % (sizeof parts / sizeof *parts)];
    for (auto [form, opts] :
         {std::pair<NormForm, int>{NormForm::NFC, UTF8PROC_COMPOSE},
          std::pair<NormForm, int>{NormForm::NFKD, UTF8PROC_DECOMPOSE | UTF8PROC_COMPAT}}) {
      utf8proc_uint8_t *out = nullptr;
      utf8proc_ssize_t n = utf8proc_map(reinterpret_cast<const utf8proc_uint8_t *>(s.data()),
                                        static_cast<utf8proc_ssize_t>(s.size()), &out,
                                        static_cast<utf8proc_option_t>(UTF8PROC_STABLE | opts));
      ASSERT_GE(n, 0);
      std::string whole(reinterpret_cast<const char *>(out), static_cast<size_t>(n));
      std::free(out);
      ASSERT_EQ(normalize(s, form), whole) << s;
    }
  }
}

TEST(Encode, InvalidUtf8IsRejectedWithTheOffset) {
  const Tokenizer &tok = *cached_gguf(fixtures_dir() + "/models/gpt2-tiny-Q8_0.gguf").tok;
  try {
    tok.encode("abc\xED\xA0\x80", false, false);
    FAIL();
  } catch (const Error &e) {
    EXPECT_EQ(e.status(), WO_ERR_INVALID_ARGUMENT);
    EXPECT_NE(std::string(e.what()).find("offset 4"), std::string::npos) << e.what();
  }
}

TEST(SpecialSplit, LongestFirstAndOnlyWhenAsked) {
  const Tokenizer &tok = *cached_gguf(tokenizer_fixtures_dir() + "/qwen2-tiny-vocab.gguf").tok;
  const Vocab &v = tok.vocab();
  auto f = split_special("x<|im_start|>y<think>", v, true);
  ASSERT_EQ(f.size(), 4u);
  EXPECT_EQ(f[1].token, 151644);
  EXPECT_EQ(f[3].token, 151667);
  // Without parse_special, control tokens stay text but user-defined ones (<think>) are still words.
  f = split_special("x<|im_start|>y<think>", v, false);
  ASSERT_EQ(f.size(), 2u);
  EXPECT_EQ(f[0].text, "x<|im_start|>y");
  EXPECT_EQ(f[1].token, 151667);
}

TEST(Specials, EogAndIdsPerVocabulary) {
  const Tokenizer &q = *cached_gguf(tokenizer_fixtures_dir() + "/qwen2-tiny-vocab.gguf").tok;
  EXPECT_EQ(q.special_ids().eos, 151645);
  EXPECT_EQ(q.special_ids().bos, 151643);
  EXPECT_EQ(q.special_ids().add_bos, 0);
  EXPECT_TRUE(q.is_eog(151645));
  EXPECT_TRUE(q.is_eog(151643));
  EXPECT_FALSE(q.is_eog(151644));
  EXPECT_FALSE(q.is_eog(9707));

  const Tokenizer &g = *cached_gguf(tokenizer_fixtures_dir() + "/gpt-oss-tiny-vocab.gguf").tok;
  EXPECT_TRUE(g.is_eog(200002));  // <|return|>
  EXPECT_TRUE(g.is_eog(200012));  // <|call|>
  EXPECT_FALSE(g.is_eog(200007)); // <|end|>
  EXPECT_EQ(g.token_bytes(200006), "<|start|>");

  const Tokenizer &p = *cached_gguf(fixtures_dir() + "/models/phi3-tiny-Q4_K_M.gguf").tok;
  EXPECT_EQ(p.special_ids().bos, 1);
  EXPECT_EQ(p.special_ids().add_bos, 1);
  EXPECT_TRUE(p.is_eog(32000));            // <|endoftext|>
  EXPECT_TRUE(p.is_eog(32007));            // <|end|>
  EXPECT_EQ(p.token_bytes(3 + 0x41), "A"); // <0x41>
  EXPECT_EQ(p.token_bytes(1678), "   ");   // "▁▁▁"
  EXPECT_THROW(p.token_bytes(32064), Error);
  EXPECT_THROW(p.token_bytes(-1), Error);
}

// A host over a real GGUF whose tokenizer.ggml.pre is replaced: an unknown value must be a load
// error that names it and the supported list.
struct OverrideHost {
  const wo_host *base;
  std::string pre;
  wo_host host;
  static wo_status meta_get(void *ctx, const char *key, wo_value *out) {
    auto *self = static_cast<OverrideHost *>(ctx);
    if (std::string(key) == "tokenizer.ggml.pre") {
      *out = empty_value();
      out->type = WO_VALUE_STRING;
      out->str = {self->pre.data(), self->pre.size()};
      return WO_OK;
    }
    return self->base->meta_get(self->base->ctx, key, out);
  }
  static wo_status meta_array_str(void *ctx, const char *key, uint64_t i, wo_str *out) {
    auto *self = static_cast<OverrideHost *>(ctx);
    return self->base->meta_array_str(self->base->ctx, key, i, out);
  }
  OverrideHost(const wo_host *b, std::string p) : base(b), pre(std::move(p)), host(*b) {
    host.ctx = this;
    host.meta_get = meta_get;
    host.meta_array_str = meta_array_str;
  }
};

TEST(GgufLoad, UnknownPreIsAClearError) {
  const auto &g = cached_gguf(fixtures_dir() + "/models/gpt2-tiny-Q8_0.gguf");
  OverrideHost o(g.host->host(), "made-up-pre");
  try {
    Tokenizer::from_gguf(HostView(&o.host));
    FAIL();
  } catch (const Error &e) {
    const std::string m = e.what();
    EXPECT_EQ(e.status(), WO_ERR_UNSUPPORTED);
    EXPECT_NE(m.find("tokenizer.ggml.pre"), std::string::npos) << m;
    EXPECT_NE(m.find("made-up-pre"), std::string::npos) << m;
    EXPECT_NE(m.find("qwen2"), std::string::npos) << m;
    EXPECT_NE(m.find("gpt-4o"), std::string::npos) << m;
  }
}

} // namespace
} // namespace wo::tok::testing
