// One tokenizer instance: a vocabulary plus the model that turns text pieces into ids
// (byte-level BPE or SentencePiece BPE) and the text preparation in front of it.
#pragma once

#include "bpe_model.hpp"
#include "normalizer.hpp"
#include "regex_splitter.hpp"
#include "spm_model.hpp"
#include "vocab.hpp"

#include <worker/sdk.h>

#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace wo {
class HostView;
}

namespace wo::tok {

class Tokenizer {
public:
  // Backends (what kind() reports).
  static constexpr const char *kGgufBpe = "gguf-bpe";
  static constexpr const char *kGgufSpm = "gguf-spm";
  static constexpr const char *kHfJson = "hf-json";

  // From GGUF metadata (tokenizer.ggml.*). Throws wo::Error naming the key on bad metadata and
  // listing the supported values on an unknown model / pre.
  static std::unique_ptr<Tokenizer> from_gguf(const HostView &host);
  // From a Hugging Face tokenizer.json (and the tokenizer_config.json beside it, when present).
  static std::unique_ptr<Tokenizer> from_hf_json(const std::string &path);

  // Encode UTF-8 text (throws WO_ERR_INVALID_ARGUMENT naming the offset when it is not UTF-8).
  void encode(std::string_view text, bool add_special, bool parse_special, std::vector<int32_t> &out) const;
  std::vector<int32_t> encode(std::string_view text, bool add_special, bool parse_special) const {
    std::vector<int32_t> v;
    encode(text, add_special, parse_special, v);
    return v;
  }
  // Raw bytes of a token; throws WO_ERR_INVALID_ARGUMENT for an id outside the vocabulary.
  const std::string &token_bytes(int32_t id) const;
  // Concatenated bytes of ids; with SentencePiece's space prefix, the leading space it added is
  // removed (so decode(encode(s)) == s).
  std::string decode(const std::vector<int32_t> &ids) const;

  const Vocab &vocab() const { return vocab_; }
  const char *kind() const { return kind_; }
  bool is_eog(int32_t id) const { return vocab_.eog.count(id) != 0; }
  wo_special_ids special_ids() const;
  int64_t model_max_length() const { return model_max_length_; }

private:
  Tokenizer() = default;
  void encode_text(std::string_view text, bool after_special, std::vector<int32_t> &out,
                   std::vector<std::string_view> &pieces) const;

  const char *kind_ = kGgufBpe;
  Vocab vocab_;
  std::unique_ptr<BpeModel> bpe_;
  std::unique_ptr<SpmModel> spm_;
  std::unique_ptr<RegexSplitter> splitter_; // BPE only
  NormForm norm_ = NormForm::None;
  bool add_space_prefix_ = false; // SPM: a text fragment at the start or after a special token gets ' '
  int64_t model_max_length_ = 0;

  friend struct GgufLoader;
  friend struct HfJsonLoader;
};

} // namespace wo::tok
