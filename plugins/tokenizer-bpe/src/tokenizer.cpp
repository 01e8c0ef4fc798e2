#include "tokenizer.hpp"

#include "special_split.hpp"
#include "utf8_text.hpp"

#include <worker/sdk.hpp>

namespace wo::tok {

void Tokenizer::encode(std::string_view text, bool add_special, bool parse_special,
                       std::vector<int32_t> &out) const {
  require_utf8(text, "text to tokenize");
  out.clear();
  if (add_special && vocab_.add_bos && vocab_.bos >= 0) out.push_back(vocab_.bos);
  std::vector<std::string_view> pieces;
  bool after_special = true; // the start of the text counts as "after a special token"
  for (const Fragment &f : split_special(text, vocab_, parse_special)) {
    if (f.token >= 0) {
      out.push_back(f.token);
      after_special = true;
    } else {
      encode_text(f.text, after_special, out, pieces);
      after_special = false;
    }
  }
  if (add_special && vocab_.add_eos && vocab_.eos >= 0) out.push_back(vocab_.eos);
}

void Tokenizer::encode_text(std::string_view text, bool after_special, std::vector<int32_t> &out,
                            std::vector<std::string_view> &pieces) const {
  if (spm_) {
    // SentencePiece sees spaces as U+2581 and a leading space where a word starts.
    std::string s;
    s.reserve(text.size() * 2 + 3);
    if (add_space_prefix_ && after_special) s += "\xE2\x96\x81";
    for (char c : text) {
      if (c == ' ')
        s += "\xE2\x96\x81";
      else
        s.push_back(c);
    }
    spm_->encode(s, out);
    return;
  }
  std::string normalized;
  if (norm_ != NormForm::None) {
    normalized = normalize(text, norm_);
    text = normalized;
  }
  pieces.clear();
  splitter_->split(text, pieces);
  for (std::string_view p : pieces)
    bpe_->encode_piece(p, out);
}

const std::string &Tokenizer::token_bytes(int32_t id) const {
  if (id < 0 || id >= vocab_.size())
    throw Error(WO_ERR_INVALID_ARGUMENT, "token id " + std::to_string(id) +
                                             " is outside the vocabulary [0, " +
                                             std::to_string(vocab_.size()) + ")");
  return vocab_.bytes[id];
}

std::string Tokenizer::decode(const std::vector<int32_t> &ids) const {
  std::string s;
  for (int32_t id : ids)
    s += token_bytes(id);
  if (spm_ && add_space_prefix_) {
    // Drop the space the encoder put in front of the first word.
    size_t skip = 0;
    for (size_t i = 0; i < ids.size(); ++i) {
      if (vocab_.attr[ids[i]] & (kAttrControl | kAttrUnknown)) {
        skip += vocab_.bytes[ids[i]].size();
        continue;
      }
      if (skip < s.size() && s[skip] == ' ') s.erase(skip, 1);
      break;
    }
  }
  return s;
}

wo_special_ids Tokenizer::special_ids() const {
  wo_special_ids s{};
  s.struct_size = sizeof(wo_special_ids);
  s.bos = vocab_.bos;
  s.eos = vocab_.eos;
  s.eot = vocab_.eot;
  s.pad = vocab_.pad;
  s.unk = vocab_.unk;
  s.add_bos = vocab_.add_bos ? 1 : 0;
  s.add_eos = vocab_.add_eos ? 1 : 0;
  return s;
}

} // namespace wo::tok
