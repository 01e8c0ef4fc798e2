// The vocabulary every backend shares: token texts, what bytes each token stands for, token
// classes, special ids and end-of-generation ids. Built by a loader (GGUF or tokenizer.json),
// immutable afterwards.
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

namespace wo::tok {

// GGUF tokenizer.ggml.token_type values.
enum TokenType : int32_t {
  kTypeUndefined = 0,
  kTypeNormal = 1,
  kTypeUnknown = 2,
  kTypeControl = 3,
  kTypeUserDefined = 4,
  kTypeUnused = 5,
  kTypeByte = 6,
};

// Per-token attributes that decide how special-token text is matched.
enum TokenAttr : uint32_t {
  kAttrControl = 1u << 0,     // matched in text only with parse_special
  kAttrUserDefined = 1u << 1, // always matched in text
  kAttrUnknown = 1u << 2,     // matched only with parse_special
  kAttrRstrip = 1u << 3,      // a match also swallows the whitespace after it
  kAttrLstrip = 1u << 4,      // ... and before it
};

struct Vocab {
  std::vector<std::string> text;  // as stored (byte-level BPE: GPT-2 unicode form; SPM: with U+2581)
  std::vector<std::string> bytes; // the raw bytes the token stands for (a special token: its text)
  std::vector<int32_t> type;      // TokenType
  std::vector<uint32_t> attr;     // TokenAttr bits
  std::vector<float> score;       // SPM merge scores (empty for BPE)
  std::unordered_map<std::string, int32_t> id_of; // text -> id (the last id wins on duplicates)

  int32_t bos = -1, eos = -1, eot = -1, eom = -1, pad = -1, unk = -1;
  bool add_bos = false, add_eos = false;
  std::unordered_set<int32_t> eog;

  // Ids matched in text before the model runs (CONTROL / USER_DEFINED / UNKNOWN), longest first.
  std::vector<int32_t> special_by_length;

  int32_t size() const { return static_cast<int32_t>(text.size()); }
  int32_t find(const std::string &t) const {
    auto it = id_of.find(t);
    return it == id_of.end() ? -1 : it->second;
  }

  // After text/type are filled: attributes from types, the by-name fixes llama.cpp applies
  // (EOT/EOG detection, harmony's always-rendered tokens, Phi-3's rstrip), the EOG set and the
  // special-token list. `model_name` is general.name (may be empty).
  void finish(const std::string &model_name);
};

} // namespace wo::tok
