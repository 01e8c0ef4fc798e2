#include "pre_patterns.hpp"

#include <utility>
#include <vector>

namespace wo::tok {

namespace {

// Patterns are facts of each model family's tokenizer (as published with the models). The
// contraction alternatives are spelled with explicit case classes rather than (?i:) so that only
// ASCII letters fold, as in the reference implementation.
const std::string kContractions = "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])";

const std::string kLlama3 =
    kContractions + "|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|"
                    "\\s+(?!\\S)|\\s+";
// Qwen2 differs from Llama 3 only in splitting numbers into single digits.
const std::string kQwen2 =
    kContractions + "|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|"
                    "\\s+(?!\\S)|\\s+";
// o200k (GPT-4o, gpt-oss). The published pattern lists \p{M} (combining marks) inside the letter
// classes; GGUF models are tokenized by the reference implementation as if marks were neither
// letters nor digits (a mark starts a new piece: " हिन्दी" -> " ह" "िन" "्द" "ी"), and this backend
// reproduces that exactly. The hf-json backend keeps the published pattern.
const std::string kGpt4o = "[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}]*[\\p{Ll}\\p{Lm}\\p{Lo}]+(?i:"
                           "'s|'t|'re|'ve|'m|'ll|'d)?|"
                           "[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}]+[\\p{Ll}\\p{Lm}\\p{Lo}]*(?i:"
                           "'s|'t|'re|'ve|'m|'ll|'d)?|"
                           "\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
const std::string kGpt2 =
    "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+";

const std::vector<std::pair<std::string, PreRule>> &rules() {
  static const std::vector<std::pair<std::string, PreRule>> r = {
      {"qwen2", {kQwen2, false}},  {"gpt-4o", {kGpt4o, false}}, {"llama-bpe", {kLlama3, true}},
      {"llama3", {kLlama3, true}}, {"gpt-2", {kGpt2, false}},   {"default", {kGpt2, false}},
  };
  return r;
}

} // namespace

std::optional<PreRule> pre_rule(const std::string &pre) {
  for (const auto &[name, rule] : rules())
    if (name == pre) return rule;
  return std::nullopt;
}

std::string supported_pre_list() {
  std::string s;
  for (const auto &[name, rule] : rules())
    s += (s.empty() ? "" : ", ") + name;
  return s;
}

const std::string &gpt2_pattern() { return kGpt2; }

} // namespace wo::tok
