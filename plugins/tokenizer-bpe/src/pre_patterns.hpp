// The pre-tokenizer split rules named by GGUF's tokenizer.ggml.pre.
#pragma once

#include <optional>
#include <string>

namespace wo::tok {

struct PreRule {
  std::string pattern;
  bool ignore_merges = false; // a piece that is itself a token is emitted whole (Llama 3)
};

// The rule for a tokenizer.ggml.pre value; nullopt when unknown.
std::optional<PreRule> pre_rule(const std::string &pre);

// "qwen2, gpt-4o, ..." for messages.
std::string supported_pre_list();

// GPT-2's original pattern (also what a ByteLevel pre-tokenizer with use_regex applies).
const std::string &gpt2_pattern();

} // namespace wo::tok
