// Tokenizer from a Hugging Face tokenizer.json (byte-level BPE): normalizer (NFC/NFD/NFKC/NFKD,
// possibly in a Sequence), pre_tokenizer (Split by regex, ByteLevel, Sequence of those), BPE model
// (vocab, merges as "a b" or ["a", "b"], ignore_merges), ByteLevel decoder, added_tokens. Special
// ids and add_bos/add_eos/model_max_length come from tokenizer_config.json beside it.
#include "byte_level.hpp"
#include "pre_patterns.hpp"
#include "tokenizer.hpp"

#include <worker/sdk.hpp>

#include <rapidjson/document.h>
#include <rapidjson/error/en.h>

#include <cmath>
#include <fstream>
#include <sstream>

namespace wo::tok {

namespace {

std::string read_file(const std::string &path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw Error(WO_ERR_IO, "cannot open tokenizer file '" + path + "'");
  std::ostringstream ss;
  ss << f.rdbuf();
  if (f.bad()) throw Error(WO_ERR_IO, "cannot read tokenizer file '" + path + "'");
  return ss.str();
}

void parse_json(rapidjson::Document &doc, const std::string &text, const std::string &path) {
  doc.Parse(text.data(), text.size());
  if (doc.HasParseError())
    throw Error(WO_ERR_FORMAT,
                "'" + path + "' is not valid JSON: " + rapidjson::GetParseError_En(doc.GetParseError()) +
                    " at byte offset " + std::to_string(doc.GetErrorOffset()));
  if (!doc.IsObject()) throw Error(WO_ERR_FORMAT, "'" + path + "': expected a JSON object at the top level");
}

std::string type_of(const rapidjson::Value &v) {
  if (v.IsObject() && v.HasMember("type") && v["type"].IsString()) return v["type"].GetString();
  return "";
}

// A token in tokenizer_config.json: "text" or {"content": "text", ...}.
std::string token_text(const rapidjson::Value &v) {
  if (v.IsString()) return v.GetString();
  if (v.IsObject() && v.HasMember("content") && v["content"].IsString()) return v["content"].GetString();
  return "";
}

bool get_bool(const rapidjson::Value &obj, const char *key, bool dflt) {
  if (!obj.IsObject() || !obj.HasMember(key) || !obj[key].IsBool()) return dflt;
  return obj[key].GetBool();
}

} // namespace

struct HfJsonLoader {
  std::string path;
  Tokenizer *t = nullptr;

  [[noreturn]] void fail(wo_status s, const std::string &field, const std::string &msg) const {
    throw Error(s, "'" + path + "' field '" + field + "': " + msg);
  }

  void normalizer(const rapidjson::Value &n, const std::string &field) {
    if (n.IsNull()) return;
    const std::string ty = type_of(n);
    if (ty == "Sequence") {
      if (!n.HasMember("normalizers") || !n["normalizers"].IsArray())
        fail(WO_ERR_FORMAT, field, "Sequence without 'normalizers' array");
      int i = 0;
      for (const auto &c : n["normalizers"].GetArray())
        normalizer(c, field + ".normalizers[" + std::to_string(i++) + "]");
      return;
    }
    NormForm f;
    if (ty == "NFC")
      f = NormForm::NFC;
    else if (ty == "NFD")
      f = NormForm::NFD;
    else if (ty == "NFKC")
      f = NormForm::NFKC;
    else if (ty == "NFKD")
      f = NormForm::NFKD;
    else
      fail(WO_ERR_UNSUPPORTED, field,
           "normalizer type '" + ty + "' is not supported (supported: NFC, NFD, NFKC, NFKD, Sequence)");
    if (t->norm_ != NormForm::None && t->norm_ != f)
      fail(WO_ERR_UNSUPPORTED, field, "more than one normalization form");
    t->norm_ = f;
  }

  // Collects the split pattern; ByteLevel must be present (this backend is byte-level only).
  void pre_tokenizer(const rapidjson::Value &p, const std::string &field, std::string &pattern,
                     bool &byte_level) {
    const std::string ty = type_of(p);
    if (ty == "Sequence") {
      if (!p.HasMember("pretokenizers") || !p["pretokenizers"].IsArray())
        fail(WO_ERR_FORMAT, field, "Sequence without 'pretokenizers' array");
      int i = 0;
      for (const auto &c : p["pretokenizers"].GetArray())
        pre_tokenizer(c, field + ".pretokenizers[" + std::to_string(i++) + "]", pattern, byte_level);
    } else if (ty == "Split") {
      if (!pattern.empty()) fail(WO_ERR_UNSUPPORTED, field, "more than one Split pre-tokenizer");
      if (!p.HasMember("pattern") || !p["pattern"].IsObject())
        fail(WO_ERR_FORMAT, field, "Split without a 'pattern' object");
      const auto &pat = p["pattern"];
      if (pat.HasMember("Regex") && pat["Regex"].IsString())
        pattern = pat["Regex"].GetString();
      else if (pat.HasMember("String") && pat["String"].IsString()) {
        // A literal: quote it for PCRE2.
        pattern = std::string("\\Q") + pat["String"].GetString() + "\\E";
      } else
        fail(WO_ERR_FORMAT, field + ".pattern", "expected {\"Regex\": ...} or {\"String\": ...}");
      const std::string behavior =
          p.HasMember("behavior") && p["behavior"].IsString() ? p["behavior"].GetString() : "";
      if (behavior != "Isolated")
        fail(WO_ERR_UNSUPPORTED, field + ".behavior", "expected 'Isolated', found '" + behavior + "'");
      if (get_bool(p, "invert", false))
        fail(WO_ERR_UNSUPPORTED, field + ".invert", "inverted splits are not supported");
    } else if (ty == "ByteLevel") {
      byte_level = true;
      if (get_bool(p, "add_prefix_space", false))
        fail(WO_ERR_UNSUPPORTED, field + ".add_prefix_space",
             "ByteLevel with add_prefix_space = true is not supported");
      if (get_bool(p, "use_regex", true)) {
        if (!pattern.empty()) fail(WO_ERR_UNSUPPORTED, field, "ByteLevel use_regex after a Split");
        pattern = gpt2_pattern();
      }
    } else {
      fail(WO_ERR_UNSUPPORTED, field,
           "pre-tokenizer type '" + ty + "' is not supported (supported: Split, ByteLevel, Sequence)");
    }
  }

  std::unique_ptr<Tokenizer> load() {
    rapidjson::Document doc;
    const std::string text = read_file(path);
    parse_json(doc, text, path);
    std::unique_ptr<Tokenizer> tk(new Tokenizer());
    t = tk.get();
    t->kind_ = Tokenizer::kHfJson;
    Vocab &v = t->vocab_;

    if (!doc.HasMember("model") || !doc["model"].IsObject())
      fail(WO_ERR_FORMAT, "model", "expected an object");
    const auto &model = doc["model"];
    const std::string mty = type_of(model);
    if (!mty.empty() && mty != "BPE")
      fail(WO_ERR_UNSUPPORTED, "model.type", "expected 'BPE', found '" + mty + "'");
    if (!model.HasMember("vocab") || !model["vocab"].IsObject())
      fail(WO_ERR_FORMAT, "model.vocab", "expected an object of token -> id");
    if (!model.HasMember("merges") || !model["merges"].IsArray())
      fail(WO_ERR_FORMAT, "model.merges", "expected an array");

    // Ids: vocab entries and added tokens; holes become unused placeholders.
    int64_t max_id = -1;
    for (const auto &m : model["vocab"].GetObject()) {
      if (!m.value.IsInt64() || m.value.GetInt64() < 0)
        fail(WO_ERR_FORMAT, std::string("model.vocab[\"") + m.name.GetString() + "\"]",
             "expected a non-negative integer id");
      max_id = std::max<int64_t>(max_id, m.value.GetInt64());
    }
    const rapidjson::Value empty_array(rapidjson::kArrayType);
    const auto &added =
        doc.HasMember("added_tokens") && doc["added_tokens"].IsArray() ? doc["added_tokens"] : empty_array;
    for (const auto &a : added.GetArray()) {
      if (!a.IsObject() || !a.HasMember("id") || !a["id"].IsInt64() || !a.HasMember("content") ||
          !a["content"].IsString())
        fail(WO_ERR_FORMAT, "added_tokens", "expected objects with integer 'id' and string 'content'");
      max_id = std::max<int64_t>(max_id, a["id"].GetInt64());
    }
    if (max_id < 0) fail(WO_ERR_FORMAT, "model.vocab", "no tokens");
    if (max_id >= INT32_MAX)
      fail(WO_ERR_FORMAT, "model.vocab", "token id " + std::to_string(max_id) + " exceeds int32");
    const size_t n = static_cast<size_t>(max_id) + 1;
    v.text.assign(n, std::string());
    v.type.assign(n, kTypeUnused);
    v.bytes.assign(n, std::string());
    for (const auto &m : model["vocab"].GetObject()) {
      size_t id = static_cast<size_t>(m.value.GetInt64());
      v.text[id].assign(m.name.GetString(), m.name.GetStringLength());
      v.type[id] = kTypeNormal;
      if (!unicode_to_bytes(v.text[id], v.bytes[id])) v.bytes[id] = v.text[id];
    }
    for (const auto &a : added.GetArray()) {
      size_t id = static_cast<size_t>(a["id"].GetInt64());
      v.text[id].assign(a["content"].GetString(), a["content"].GetStringLength());
      v.bytes[id] = v.text[id];
      const bool special = get_bool(a, "special", false);
      const std::string &c = v.text[id];
      // Special tokens and <|...|>-shaped ones are control tokens (matched only when parsing
      // special text); other added tokens are ordinary added words, always matched.
      const bool control_shaped =
          c.size() >= 4 && c.compare(0, 2, "<|") == 0 && c.compare(c.size() - 2, 2, "|>") == 0;
      v.type[id] = (special || control_shaped) ? kTypeControl : kTypeUserDefined;
    }
    for (size_t i = 0; i < n; ++i) {
      if (v.text[i].empty()) v.text[i] = "[UNUSED_" + std::to_string(i) + "]";
      v.id_of[v.text[i]] = static_cast<int32_t>(i);
    }

    std::vector<std::pair<std::string, std::string>> merges;
    merges.reserve(model["merges"].Size());
    int i = 0;
    for (const auto &m : model["merges"].GetArray()) {
      const std::string field = "model.merges[" + std::to_string(i++) + "]";
      if (m.IsString()) {
        std::string s(m.GetString(), m.GetStringLength());
        size_t sp = s.find(' ', 1);
        if (sp == std::string::npos) fail(WO_ERR_FORMAT, field, "expected 'left right', found '" + s + "'");
        merges.emplace_back(s.substr(0, sp), s.substr(sp + 1));
      } else if (m.IsArray() && m.Size() == 2 && m[0].IsString() && m[1].IsString()) {
        merges.emplace_back(std::string(m[0].GetString(), m[0].GetStringLength()),
                            std::string(m[1].GetString(), m[1].GetStringLength()));
      } else {
        fail(WO_ERR_FORMAT, field, "expected \"left right\" or [\"left\", \"right\"]");
      }
    }

    if (doc.HasMember("normalizer")) normalizer(doc["normalizer"], "normalizer");
    std::string pattern;
    bool byte_level = false;
    if (!doc.HasMember("pre_tokenizer") || doc["pre_tokenizer"].IsNull())
      fail(WO_ERR_UNSUPPORTED, "pre_tokenizer", "absent; this backend needs a ByteLevel pre-tokenizer");
    pre_tokenizer(doc["pre_tokenizer"], "pre_tokenizer", pattern, byte_level);
    if (!byte_level)
      fail(WO_ERR_UNSUPPORTED, "pre_tokenizer",
           "no ByteLevel step; only byte-level BPE tokenizer.json files are supported");
    if (pattern.empty()) pattern = "(?s).+"; // ByteLevel without regex: the whole text is one piece
    if (doc.HasMember("decoder") && !doc["decoder"].IsNull() && type_of(doc["decoder"]) != "ByteLevel")
      fail(WO_ERR_UNSUPPORTED, "decoder.type",
           "expected 'ByteLevel', found '" + type_of(doc["decoder"]) + "'");
    t->splitter_ = std::make_unique<RegexSplitter>(pattern, "'" + path + "' pre_tokenizer");

    // tokenizer_config.json beside tokenizer.json.
    const size_t slash = path.find_last_of('/');
    const std::string cfg_path =
        (slash == std::string::npos ? std::string() : path.substr(0, slash + 1)) + "tokenizer_config.json";
    std::ifstream probe(cfg_path);
    if (probe.good()) {
      rapidjson::Document cfg;
      parse_json(cfg, read_file(cfg_path), cfg_path);
      auto id_for = [&](const char *key) -> int32_t {
        if (!cfg.HasMember(key)) return -1;
        std::string tt = token_text(cfg[key]);
        if (tt.empty()) return -1;
        int32_t id = v.find(tt);
        if (id < 0)
          throw Error(WO_ERR_FORMAT, "'" + cfg_path + "' field '" + key + "': token '" + tt +
                                         "' is not in the vocabulary of '" + path + "'");
        return id;
      };
      v.bos = id_for("bos_token");
      v.eos = id_for("eos_token");
      v.pad = id_for("pad_token");
      v.unk = id_for("unk_token");
      v.add_bos = get_bool(cfg, "add_bos_token", false);
      v.add_eos = get_bool(cfg, "add_eos_token", false);
      if (cfg.HasMember("model_max_length") && cfg["model_max_length"].IsNumber()) {
        double m = cfg["model_max_length"].GetDouble();
        t->model_max_length_ = (m >= 9.2e18 || !std::isfinite(m)) ? INT64_MAX : static_cast<int64_t>(m);
      }
    }
    v.finish("");
    t->bpe_ =
        std::make_unique<BpeModel>(v, merges, get_bool(model, "ignore_merges", false), "'" + path + "'");
    return tk;
  }
};

std::unique_ptr<Tokenizer> Tokenizer::from_hf_json(const std::string &path) {
  HfJsonLoader l;
  l.path = path;
  return l.load();
}

} // namespace wo::tok
