// The hf-json backend against the GGUF vocabularies built from the same tokenizer.json files.
#include "test_support.hpp"

#include "byte_level.hpp"

#include <worker/sdk.hpp>

#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>

namespace wo::tok::testing {
namespace {

// Texts where the hf-json backend is expected to differ from gguf-bpe: the o200k pattern's
// combining marks (see pre_patterns.cpp) — hf-json keeps the published pattern there.
bool has_combining_mark_words(const std::string &name) {
  return name == "mixed_scripts" || name == "khmer_mix";
}

void compare(const std::string &json, const std::string &gguf, const std::string &ref, bool o200k) {
  const Tokenizer &hf = cached_hf_json(json);
  const Tokenizer &gg = *cached_gguf(gguf).tok;
  EXPECT_STREQ(hf.kind(), Tokenizer::kHfJson);
  size_t compared = 0;
  for (const auto &e : load_reference(fixtures_dir() + "/reference/tokenize/" + ref + ".json"))
    for (int k = 0; k < 4; ++k) {
      const bool add = k & 2, parse = k & 1;
      const auto h = hf.encode(e.text, add, parse);
      EXPECT_EQ(hf.decode(h), e.text) << e.name; // lossless whatever the split
      if (o200k && has_combining_mark_words(e.name)) continue;
      EXPECT_EQ(h, gg.encode(e.text, add, parse))
          << ref << " '" << e.name << "' add=" << add << " parse=" << parse;
      EXPECT_EQ(h, e.ids[k]) << ref << " '" << e.name << "' add=" << add << " parse=" << parse;
      ++compared;
    }
  EXPECT_GE(compared, o200k ? 72u : 80u);
}

TEST(HfJson, QwenMatchesGgufBpe) {
  compare(tokenizer_fixtures_dir() + "/qwen/tokenizer.json",
          tokenizer_fixtures_dir() + "/qwen2-tiny-vocab.gguf", "qwen2", false);
}

TEST(HfJson, GptOssMatchesGgufBpe) {
  compare(tokenizer_fixtures_dir() + "/gpt-oss/tokenizer.json",
          tokenizer_fixtures_dir() + "/gpt-oss-tiny-vocab.gguf", "gpt-oss", true);
}

// With the published o200k pattern a word with combining marks stays one piece: " हिन्दी" is a
// single token of the vocabulary.
TEST(HfJson, GptOssKeepsCombiningMarksInWords) {
  const Tokenizer &hf = cached_hf_json(tokenizer_fixtures_dir() + "/gpt-oss/tokenizer.json");
  const auto ids =
      hf.encode(" \xE0\xA4\xB9\xE0\xA4\xBF\xE0\xA4\xA8\xE0\xA5\x8D\xE0\xA4\xA6\xE0\xA5\x80", false, false);
  ASSERT_EQ(ids.size(), 1u);
  EXPECT_EQ(ids[0], 191681);
}

TEST(HfJson, SpecialIdsFromTokenizerConfig) {
  const Tokenizer &q = cached_hf_json(tokenizer_fixtures_dir() + "/qwen/tokenizer.json");
  auto s = q.special_ids();
  EXPECT_EQ(s.eos, 151645); // <|im_end|>
  EXPECT_EQ(s.pad, 151643); // <|endoftext|>
  EXPECT_EQ(s.bos, -1);     // bos_token: null
  EXPECT_EQ(s.add_bos, 0);
  EXPECT_EQ(q.model_max_length(), 131072);
  EXPECT_TRUE(q.is_eog(151645));
  EXPECT_TRUE(q.is_eog(151643));
  EXPECT_FALSE(q.is_eog(151644)); // <|im_start|>
  EXPECT_EQ(q.vocab().size(), 151669);

  const Tokenizer &g = cached_hf_json(tokenizer_fixtures_dir() + "/gpt-oss/tokenizer.json");
  s = g.special_ids();
  EXPECT_EQ(s.bos, 199998); // <|startoftext|>
  EXPECT_EQ(s.eos, 200002); // <|return|>
  EXPECT_TRUE(g.is_eog(200002));
  EXPECT_TRUE(g.is_eog(200012));  // <|call|>
  EXPECT_FALSE(g.is_eog(200007)); // <|end|> closes a message, not the generation
}

std::string write_temp(const std::string &name, const std::string &body) {
  std::string dir = ::testing::TempDir();
  std::string path = dir + "/" + name;
  std::ofstream(path) << body;
  return path;
}

const char *kTinyJson = R"({
  "normalizer": %NORM%,
  "pre_tokenizer": {"type": "Sequence", "pretokenizers": [
      {"type": "Split", "pattern": {"Regex": " ?\\p{L}+|\\s+|."}, "behavior": "Isolated", "invert": false},
      {"type": "ByteLevel", "add_prefix_space": false, "use_regex": false}]},
  "decoder": {"type": "ByteLevel"},
  "added_tokens": [{"id": 300, "content": "<|x|>", "special": true}, {"id": 301, "content": "<w>", "special": false}],
  "model": {"type": "BPE", "vocab": %VOCAB%, "merges": [["a", "b"], "ab c", ["Ġ", "a"]]}
})";

std::string tiny_json(const std::string &norm) {
  // All 256 byte tokens, then merges' results.
  std::string vocab = "{";
  for (int b = 0; b < 256; ++b) {
    std::string t = byte_to_unicode(static_cast<unsigned char>(b));
    if (t == "\"" || t == "\\") t = "\\" + t; // JSON escapes
    vocab += "\"" + t + "\": " + std::to_string(b) + ",";
  }
  vocab += "\"ab\": 256, \"abc\": 257, \"\xC4\xA0"
           "a\": 258}";
  std::string s = kTinyJson;
  s.replace(s.find("%NORM%"), 6, norm);
  s.replace(s.find("%VOCAB%"), 7, vocab);
  return s;
}

TEST(HfJson, TinyFileBothMergeFormsAddedTokensAndNfc) {
  const std::string path = write_temp("tiny_tokenizer.json", tiny_json(R"({"type": "NFC"})"));
  auto t = Tokenizer::from_hf_json(path);
  EXPECT_EQ(t->encode("abc", false, false), (std::vector<int32_t>{257}));
  // Lowest rank first: (a, b) beats (Ġ, a), so " ab" is Ġ + ab while " ac" is Ġa + c.
  EXPECT_EQ(t->encode(" ab", false, false), (std::vector<int32_t>{' ', 256}));
  EXPECT_EQ(t->encode(" ac", false, false), (std::vector<int32_t>{258, 'c'}));
  // "<|x|>" is special: text unless parse_special; "<w>" is an added word: always one id.
  EXPECT_EQ(t->encode("<|x|>", false, true), (std::vector<int32_t>{300}));
  EXPECT_EQ(t->encode("<|x|>", false, false).size(), 5u);
  EXPECT_EQ(t->encode("<w>", false, false), (std::vector<int32_t>{301}));
  // NFC: "e" + U+0301 becomes U+00E9 (bytes C3 A9) before BPE.
  EXPECT_EQ(t->encode("e\xCC\x81", false, false), (std::vector<int32_t>{0xC3, 0xA9}));
}

TEST(HfJson, UnsupportedPartsAreNamed) {
  const std::string path = write_temp("bad_norm_tokenizer.json", tiny_json(R"({"type": "Lowercase"})"));
  try {
    Tokenizer::from_hf_json(path);
    FAIL() << "expected an error";
  } catch (const Error &e) {
    EXPECT_EQ(e.status(), WO_ERR_UNSUPPORTED);
    EXPECT_NE(std::string(e.what()).find("normalizer"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("Lowercase"), std::string::npos) << e.what();
  }
  try {
    Tokenizer::from_hf_json(::testing::TempDir() + "/does-not-exist.json");
    FAIL() << "expected an error";
  } catch (const Error &e) {
    EXPECT_EQ(e.status(), WO_ERR_IO);
  }
}

} // namespace
} // namespace wo::tok::testing
