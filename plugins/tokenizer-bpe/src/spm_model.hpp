// SentencePiece-style BPE (GGUF tokenizer.ggml.model = llama): characters are merged pairwise by
// the score of the token they form (highest first, leftmost on ties); a final piece that is not a
// token falls back to its bytes as <0xXX> tokens.
#pragma once

#include "vocab.hpp"

#include <array>
#include <cstdint>
#include <string_view>
#include <vector>

namespace wo::tok {

class SpmModel {
public:
  explicit SpmModel(const Vocab &vocab);
  // Append the ids of `text` (spaces already escaped as U+2581, prefix already added).
  void encode(std::string_view text, std::vector<int32_t> &out) const;

private:
  const Vocab &vocab_;
  std::array<int32_t, 256> byte_id_{};
};

} // namespace wo::tok
