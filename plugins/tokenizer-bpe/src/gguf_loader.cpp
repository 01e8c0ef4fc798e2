// Tokenizer from GGUF metadata: tokenizer.ggml.{model, pre, tokens, token_type, scores, merges,
// *_token_id, add_bos_token, add_eos_token, add_space_prefix}.
#include "byte_level.hpp"
#include "pre_patterns.hpp"
#include "tokenizer.hpp"

#include <worker/sdk.hpp>

namespace wo::tok {

struct GgufLoader {
  static std::unique_ptr<Tokenizer> load(const HostView &h) {
    const std::string model = h.get_str("tokenizer.ggml.model");
    std::unique_ptr<Tokenizer> t(new Tokenizer());
    Vocab &v = t->vocab_;
    v.text = h.get_str_array("tokenizer.ggml.tokens");
    const size_t n = v.text.size();
    if (n == 0)
      throw Error(WO_ERR_FORMAT,
                  "metadata key 'tokenizer.ggml.tokens': expected a non-empty array, found 0 tokens");
    if (n > static_cast<size_t>(INT32_MAX))
      throw Error(WO_ERR_FORMAT,
                  "metadata key 'tokenizer.ggml.tokens': " + std::to_string(n) + " tokens exceed int32 ids");
    if (h.has("tokenizer.ggml.token_type")) {
      v.type = h.get_num_array<int32_t>("tokenizer.ggml.token_type");
      if (v.type.size() != n)
        throw Error(WO_ERR_FORMAT, "metadata key 'tokenizer.ggml.token_type': expected " + std::to_string(n) +
                                       " entries (one per token), found " + std::to_string(v.type.size()));
    } else {
      v.type.assign(n, kTypeNormal);
    }
    if (h.has("tokenizer.ggml.scores")) {
      v.score = h.get_num_array<float>("tokenizer.ggml.scores");
      if (v.score.size() != n)
        throw Error(WO_ERR_FORMAT, "metadata key 'tokenizer.ggml.scores': expected " + std::to_string(n) +
                                       " entries (one per token), found " + std::to_string(v.score.size()));
    }
    v.id_of.reserve(n * 2);
    for (size_t i = 0; i < n; ++i) {
      if (v.text[i].empty()) v.text[i] = "[EMPTY_" + std::to_string(i) + "]"; // never matches text
      v.id_of[v.text[i]] = static_cast<int32_t>(i);
    }

    auto id_key = [&](const char *key, int32_t dflt) -> int32_t {
      if (!h.has(key)) return dflt;
      int64_t id = h.get_int(key);
      if (id < 0 || static_cast<size_t>(id) >= n)
        throw Error(WO_ERR_FORMAT, std::string("metadata key '") + key + "': expected a token id in [0, " +
                                       std::to_string(n) + "), found " + std::to_string(id));
      return static_cast<int32_t>(id);
    };

    std::string origin = "GGUF tokenizer (tokenizer.ggml.model = '" + model + "')";
    if (model == "gpt2") {
      t->kind_ = Tokenizer::kGgufBpe;
      const std::string pre = h.opt_str("tokenizer.ggml.pre").value_or("default");
      auto rule = pre_rule(pre);
      if (!rule)
        throw Error(WO_ERR_UNSUPPORTED, "metadata key 'tokenizer.ggml.pre': unknown pre-tokenizer '" + pre +
                                            "'; supported: " + supported_pre_list());
      t->splitter_ = std::make_unique<RegexSplitter>(rule->pattern, "tokenizer.ggml.pre = '" + pre + "'");
      // Bytes of a token: byte-level decoding for ordinary tokens, the text itself for added ones.
      v.bytes.resize(n);
      for (size_t i = 0; i < n; ++i) {
        const bool plain = v.type[i] == kTypeNormal || v.type[i] == kTypeUnused ||
                           v.type[i] == kTypeUndefined || v.type[i] == kTypeByte;
        if (!plain || !unicode_to_bytes(v.text[i], v.bytes[i])) v.bytes[i] = v.text[i];
      }
      v.bos = id_key("tokenizer.ggml.bos_token_id", -1);
      v.eos = id_key("tokenizer.ggml.eos_token_id", -1);
      v.add_bos = h.get_bool("tokenizer.ggml.add_bos_token", false);
      v.add_eos = h.get_bool("tokenizer.ggml.add_eos_token", false);
      std::vector<std::pair<std::string, std::string>> merges;
      const auto raw = h.get_str_array("tokenizer.ggml.merges");
      merges.reserve(raw.size());
      for (size_t i = 0; i < raw.size(); ++i) {
        size_t sp = raw[i].find(' ', 1);
        if (sp == std::string::npos)
          throw Error(WO_ERR_FORMAT, "metadata key 'tokenizer.ggml.merges'[" + std::to_string(i) +
                                         "]: expected 'left right', found '" + raw[i] + "'");
        merges.emplace_back(raw[i].substr(0, sp), raw[i].substr(sp + 1));
      }
      v.unk = id_key("tokenizer.ggml.unknown_token_id", -1);
      v.pad = id_key("tokenizer.ggml.padding_token_id", -1);
      v.eot = id_key("tokenizer.ggml.eot_token_id", -1);
      v.eom = id_key("tokenizer.ggml.eom_token_id", -1);
      v.finish(h.opt_str("general.name").value_or(""));
      t->bpe_ = std::make_unique<BpeModel>(v, merges, rule->ignore_merges, origin);
    } else if (model == "llama") {
      t->kind_ = Tokenizer::kGgufSpm;
      if (v.score.empty()) v.score.assign(n, 0.0f);
      v.bytes.resize(n);
      for (size_t i = 0; i < n; ++i)
        v.bytes[i] = spm_piece_bytes(v.text[i], v.type[i]);
      v.bos = id_key("tokenizer.ggml.bos_token_id", 1 < static_cast<int64_t>(n) ? 1 : -1);
      v.eos = id_key("tokenizer.ggml.eos_token_id", 2 < static_cast<int64_t>(n) ? 2 : -1);
      v.unk = id_key("tokenizer.ggml.unknown_token_id", 0);
      v.pad = id_key("tokenizer.ggml.padding_token_id", -1);
      v.eot = id_key("tokenizer.ggml.eot_token_id", -1);
      v.eom = id_key("tokenizer.ggml.eom_token_id", -1);
      v.add_bos = h.get_bool("tokenizer.ggml.add_bos_token", true);
      v.add_eos = h.get_bool("tokenizer.ggml.add_eos_token", false);
      t->add_space_prefix_ = h.get_bool("tokenizer.ggml.add_space_prefix", true);
      v.finish(h.opt_str("general.name").value_or(""));
      t->spm_ = std::make_unique<SpmModel>(v);
    } else {
      throw Error(WO_ERR_UNSUPPORTED, "metadata key 'tokenizer.ggml.model': unsupported tokenizer model '" +
                                          model +
                                          "'; supported: gpt2 (byte-level BPE), llama (SentencePiece BPE)");
    }
    return t;
  }

  // SentencePiece piece -> bytes: U+2581 is a space, <0xXX> byte tokens are that byte.
  static std::string spm_piece_bytes(const std::string &text, int32_t type) {
    if (type == kTypeByte && text.size() == 6 && text.compare(0, 3, "<0x") == 0 && text[5] == '>') {
      unsigned v = 0;
      for (int k = 3; k < 5; ++k) {
        char c = text[k];
        v = v * 16 + static_cast<unsigned>(c >= '0' && c <= '9' ? c - '0' : (c | 0x20) - 'a' + 10);
      }
      return std::string(1, static_cast<char>(v & 0xFF));
    }
    if (type == kTypeControl || type == kTypeUnknown || type == kTypeUserDefined) return text;
    std::string out;
    out.reserve(text.size());
    for (size_t i = 0; i < text.size();) {
      if (text.compare(i, 3, "\xE2\x96\x81") == 0) {
        out.push_back(' ');
        i += 3;
      } else {
        out.push_back(text[i++]);
      }
    }
    return out;
  }
};

std::unique_ptr<Tokenizer> Tokenizer::from_gguf(const HostView &host) { return GgufLoader::load(host); }

} // namespace wo::tok
