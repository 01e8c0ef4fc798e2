// Exact ids against llama.cpp's outputs: the vocab/*.inp/.out vectors and the
// reference/tokenize/*.json texts under all four (add_special, parse_special) combinations.
#include "test_support.hpp"

#include <gtest/gtest.h>

namespace wo::tok::testing {
namespace {

std::string show(const std::vector<int32_t> &ids) {
  std::string s;
  for (int32_t id : ids)
    s += std::to_string(id) + " ";
  return s;
}

void check_vocab_vectors(const std::string &name, bool lossless) {
  const std::string path = fixtures_dir() + "/vocab/ggml-vocab-" + name + ".gguf";
  const Tokenizer &tok = *cached_gguf(path).tok;
  const auto cases = load_vocab_cases(path);
  ASSERT_EQ(cases.size(), 46u) << path;
  size_t exact = 0;
  for (size_t i = 0; i < cases.size(); ++i) {
    const auto ids = tok.encode(cases[i].text, false, false);
    EXPECT_EQ(show(ids), show(cases[i].ids)) << name << " case " << i << " text '" << cases[i].text << "'";
    exact += ids == cases[i].ids;
    if (lossless) {
      EXPECT_EQ(tok.decode(ids), cases[i].text) << name << " case " << i;
    }
  }
  EXPECT_EQ(exact, cases.size());
}

TEST(VocabVectors, Gpt2) { check_vocab_vectors("gpt-2", true); }
TEST(VocabVectors, LlamaSpm) { check_vocab_vectors("llama-spm", true); }
TEST(VocabVectors, Phi3) { check_vocab_vectors("phi-3", true); }

void check_reference(const std::string &ref_name, const std::string &gguf_path, const char *kind) {
  const Tokenizer &tok = *cached_gguf(gguf_path).tok;
  EXPECT_STREQ(tok.kind(), kind);
  const auto entries = load_reference(fixtures_dir() + "/reference/tokenize/" + ref_name + ".json");
  ASSERT_EQ(entries.size(), 20u);
  for (const auto &e : entries)
    for (int k = 0; k < 4; ++k) {
      const bool add = k & 2, parse = k & 1;
      const auto ids = tok.encode(e.text, add, parse);
      EXPECT_EQ(show(ids), show(e.ids[k]))
          << ref_name << " '" << e.name << "' add_special=" << add << " parse_special=" << parse;
    }
}

TEST(ReferenceTokenize, Qwen2) {
  check_reference("qwen2", tokenizer_fixtures_dir() + "/qwen2-tiny-vocab.gguf", Tokenizer::kGgufBpe);
}
TEST(ReferenceTokenize, GptOss) {
  check_reference("gpt-oss", tokenizer_fixtures_dir() + "/gpt-oss-tiny-vocab.gguf", Tokenizer::kGgufBpe);
}
TEST(ReferenceTokenize, Gpt2) {
  check_reference("gpt2", fixtures_dir() + "/models/gpt2-tiny-Q8_0.gguf", Tokenizer::kGgufBpe);
}
TEST(ReferenceTokenize, Phi3) {
  // The reference was made with the Q8_0 file; the Q4_K_M file carries the same tokenizer metadata.
  check_reference("phi3", fixtures_dir() + "/models/phi3-tiny-Q4_K_M.gguf", Tokenizer::kGgufSpm);
}
TEST(ReferenceTokenize, LlamaSpm) {
  check_reference("llama-spm", fixtures_dir() + "/vocab/ggml-vocab-llama-spm.gguf", Tokenizer::kGgufSpm);
}
TEST(ReferenceTokenize, LlamaTinyVocab1024) {
  check_reference("llama-tiny-vocab1024", fixtures_dir() + "/models/llama-tiny-Q8_0.gguf",
                  Tokenizer::kGgufSpm);
}

// Byte-level BPE is lossless: the reference texts come back byte for byte, special text included.
TEST(RoundTrip, ByteLevelReferenceTexts) {
  for (const std::string &path : {tokenizer_fixtures_dir() + "/qwen2-tiny-vocab.gguf",
                                  tokenizer_fixtures_dir() + "/gpt-oss-tiny-vocab.gguf",
                                  fixtures_dir() + "/models/gpt2-tiny-Q8_0.gguf"}) {
    const Tokenizer &tok = *cached_gguf(path).tok;
    for (const auto &e : load_reference(fixtures_dir() + "/reference/tokenize/qwen2.json"))
      for (bool parse : {false, true}) {
        EXPECT_EQ(tok.decode(tok.encode(e.text, false, parse)), e.text) << path << " " << e.name;
      }
  }
}

} // namespace
} // namespace wo::tok::testing
