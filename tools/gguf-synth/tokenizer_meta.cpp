#include "tokenizer_meta.hpp"

#include "gguf/gguf_file.hpp"
#include "gguf/host_meta.hpp"

#include <worker/sdk.hpp>

#include <rapidjson/document.h>
#include <rapidjson/error/en.h>

#include <cstring>
#include <map>
#include <fstream>
#include <sstream>

namespace wo::synth {
namespace {

constexpr int32_t kNormal = 1, kControl = 3, kUserDefined = 4, kUnused = 5;

// GPT-2's reversible byte -> printable code point table (bytes that are printable map to
// themselves, the others to 256 + n in byte order).
std::string byte_token(int b) {
  int cp = b;
  if (!((b >= 33 && b <= 126) || (b >= 161 && b <= 172) || (b >= 174 && b <= 255))) {
    int n = 0;
    for (int x = 0; x < b; ++x)
      if (!((x >= 33 && x <= 126) || (x >= 161 && x <= 172) || (x >= 174 && x <= 255))) ++n;
    cp = 256 + n;
  }
  std::string s;
  if (cp < 0x80) {
    s.push_back(static_cast<char>(cp));
  } else {
    s.push_back(static_cast<char>(0xC0 | (cp >> 6)));
    s.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
  return s;
}

void pad(std::vector<std::string> &tokens, std::vector<int32_t> &types, int64_t n_vocab, const std::string &what) {
  if (static_cast<int64_t>(tokens.size()) > n_vocab)
    throw Error(WO_ERR_INVALID_ARGUMENT, what + ": vocabulary of " + std::to_string(tokens.size()) +
                                             " tokens does not fit the preset's n_vocab " + std::to_string(n_vocab));
  for (int64_t i = static_cast<int64_t>(tokens.size()); i < n_vocab; ++i) {
    tokens.push_back("[PAD" + std::to_string(i) + "]");
    types.push_back(kUnused);
  }
}

MetaValue to_meta(const wo::gguf::File &f, const std::string &key, const wo_value &v) {
  switch (v.type) {
  case WO_VALUE_STRING: return {static_cast<uint32_t>(v.type), std::string(v.str.data, v.str.len)};
  case WO_VALUE_F32:
  case WO_VALUE_F64: return {static_cast<uint32_t>(v.type), v.f64};
  case WO_VALUE_BOOL: return {static_cast<uint32_t>(v.type), v.u64 != 0};
  case WO_VALUE_ARRAY: {
    MetaArray a;
    a.elem_type = static_cast<uint32_t>(v.array_type);
    a.count = v.array_len;
    if (v.array_type == WO_VALUE_STRING) {
      a.strings.reserve(v.array_len);
      for (uint64_t i = 0; i < v.array_len; ++i) {
        wo_str s{};
        wo::check(wo::gguf::meta_array_str(f, key.c_str(), i, &s), "reading '" + key + "'");
        a.strings.emplace_back(s.data, s.len);
      }
    } else {
      static const size_t sizes[] = {1, 1, 2, 2, 4, 4, 4, 1, 0, 0, 8, 8, 8};
      size_t es = v.array_type >= 0 && v.array_type <= 12 ? sizes[v.array_type] : 0;
      if (!es) throw Error(WO_ERR_UNSUPPORTED, "metadata key '" + key + "': nested arrays are not copied");
      const auto *p = static_cast<const uint8_t *>(v.array_data);
      a.raw.assign(p, p + es * v.array_len);
    }
    return {WO_VALUE_ARRAY, std::move(a)};
  }
  default:
    if (v.is_negative) return {static_cast<uint32_t>(v.type), v.i64};
    return {static_cast<uint32_t>(v.type), v.u64};
  }
}

void from_gguf(GgufWriter &w, const std::string &path, int64_t n_vocab) {
  auto f = wo::gguf::File::open(path);
  static const char *keys[] = {
      "tokenizer.ggml.model", "tokenizer.ggml.pre", "tokenizer.ggml.scores", "tokenizer.ggml.merges",
      "tokenizer.ggml.bos_token_id", "tokenizer.ggml.eos_token_id", "tokenizer.ggml.unknown_token_id",
      "tokenizer.ggml.padding_token_id", "tokenizer.ggml.eot_token_id", "tokenizer.ggml.eom_token_id",
      "tokenizer.ggml.seperator_token_id", "tokenizer.ggml.add_bos_token", "tokenizer.ggml.add_eos_token",
      "tokenizer.ggml.add_space_prefix", "tokenizer.ggml.remove_extra_whitespaces", "tokenizer.chat_template"};
  wo_value v = wo::empty_value();
  if (wo::gguf::meta_get(*f, "tokenizer.ggml.tokens", &v) != WO_OK || v.type != WO_VALUE_ARRAY)
    throw Error(WO_ERR_FORMAT, path + ": no tokenizer.ggml.tokens array to copy");
  std::vector<std::string> tokens;
  for (uint64_t i = 0; i < v.array_len; ++i) {
    wo_str s{};
    wo::check(wo::gguf::meta_array_str(*f, "tokenizer.ggml.tokens", i, &s), path + ": tokenizer.ggml.tokens");
    tokens.emplace_back(s.data, s.len);
  }
  std::vector<int32_t> types(tokens.size(), kNormal);
  wo_value tv = wo::empty_value();
  if (wo::gguf::meta_get(*f, "tokenizer.ggml.token_type", &tv) == WO_OK && tv.type == WO_VALUE_ARRAY &&
      tv.array_type == WO_VALUE_I32 && tv.array_len == tokens.size())
    std::memcpy(types.data(), tv.array_data, tokens.size() * 4);
  bool has_scores = false;
  for (const char *k : keys) {
    wo_value kv = wo::empty_value();
    if (wo::gguf::meta_get(*f, k, &kv) != WO_OK) continue;
    if (std::strcmp(k, "tokenizer.ggml.scores") == 0) {
      has_scores = true;
      continue; // padded below
    }
    w.set(k, to_meta(*f, k, kv));
  }
  const size_t n_src = tokens.size();
  pad(tokens, types, n_vocab, path);
  if (has_scores) {
    wo_value sv = wo::empty_value();
    wo::gguf::meta_get(*f, "tokenizer.ggml.scores", &sv);
    std::vector<float> s(tokens.size(), -1e9f);
    if (sv.array_type == WO_VALUE_F32 && sv.array_len == n_src) std::memcpy(s.data(), sv.array_data, n_src * 4);
    w.set_f32_array("tokenizer.ggml.scores", s);
  }
  w.set_str_array("tokenizer.ggml.tokens", std::move(tokens));
  w.set_i32_array("tokenizer.ggml.token_type", types);
}

std::string read_file(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(WO_ERR_IO, "cannot read '" + path + "'");
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string token_text(const rapidjson::Value &v) {
  if (v.IsString()) return v.GetString();
  if (v.IsObject() && v.HasMember("content") && v["content"].IsString()) return v["content"].GetString();
  return {};
}

void from_tokenizer_json(GgufWriter &w, const std::string &path, int64_t n_vocab, const std::string &pre) {
  rapidjson::Document d;
  std::string text = read_file(path);
  d.Parse(text.c_str(), text.size());
  if (d.HasParseError())
    throw Error(WO_ERR_FORMAT, path + ": JSON error at offset " + std::to_string(d.GetErrorOffset()) + ": " +
                                   rapidjson::GetParseError_En(d.GetParseError()));
  if (!d.HasMember("model") || !d["model"].IsObject() || !d["model"].HasMember("vocab") ||
      !d["model"]["vocab"].IsObject())
    throw Error(WO_ERR_FORMAT, path + ": expected model.vocab (a BPE tokenizer.json)");
  std::vector<std::string> tokens;
  std::vector<int32_t> types;
  auto put = [&](int64_t id, std::string s, int32_t type) {
    if (id < 0 || id >= n_vocab)
      throw Error(WO_ERR_INVALID_ARGUMENT, path + ": token id " + std::to_string(id) + " outside n_vocab " +
                                               std::to_string(n_vocab));
    if (static_cast<int64_t>(tokens.size()) <= id) {
      for (int64_t i = static_cast<int64_t>(tokens.size()); i <= id; ++i) {
        tokens.push_back("[PAD" + std::to_string(i) + "]");
        types.push_back(kUnused);
      }
    }
    tokens[static_cast<size_t>(id)] = std::move(s);
    types[static_cast<size_t>(id)] = type;
  };
  for (auto it = d["model"]["vocab"].MemberBegin(); it != d["model"]["vocab"].MemberEnd(); ++it)
    put(it->value.GetInt64(), std::string(it->name.GetString(), it->name.GetStringLength()), kNormal);
  std::map<std::string, int64_t> special_ids;
  if (d.HasMember("added_tokens") && d["added_tokens"].IsArray())
    for (const auto &t : d["added_tokens"].GetArray()) {
      std::string content = t["content"].GetString();
      bool special = t.HasMember("special") && t["special"].GetBool();
      put(t["id"].GetInt64(), content, special ? kControl : kUserDefined);
      special_ids[content] = t["id"].GetInt64();
    }
  std::vector<std::string> merges;
  if (d["model"].HasMember("merges") && d["model"]["merges"].IsArray())
    for (const auto &m : d["model"]["merges"].GetArray()) {
      if (m.IsString()) merges.emplace_back(m.GetString());
      else if (m.IsArray() && m.Size() == 2) merges.push_back(std::string(m[0].GetString()) + " " + m[1].GetString());
    }
  pad(tokens, types, n_vocab, path);
  w.set_str("tokenizer.ggml.model", "gpt2");
  w.set_str("tokenizer.ggml.pre", pre);
  w.set_str_array("tokenizer.ggml.tokens", std::move(tokens));
  w.set_i32_array("tokenizer.ggml.token_type", types);
  w.set_str_array("tokenizer.ggml.merges", std::move(merges));
  // bos/eos from tokenizer_config.json beside it, when present.
  std::string cfg_path = path.substr(0, path.find_last_of('/') + 1) + "tokenizer_config.json";
  std::ifstream probe(cfg_path);
  if (probe) {
    rapidjson::Document c;
    std::string ct = read_file(cfg_path);
    c.Parse(ct.c_str(), ct.size());
    if (!c.HasParseError() && c.IsObject()) {
      for (const auto &[key, meta] : {std::pair<const char *, const char *>{"bos_token", "tokenizer.ggml.bos_token_id"},
                                      {"eos_token", "tokenizer.ggml.eos_token_id"},
                                      {"pad_token", "tokenizer.ggml.padding_token_id"}}) {
        if (!c.HasMember(key)) continue;
        auto id = special_ids.find(token_text(c[key]));
        if (id != special_ids.end()) w.set_u32(meta, static_cast<uint32_t>(id->second));
      }
    }
  }
}

void byte_level(GgufWriter &w, int64_t n_vocab) {
  std::vector<std::string> tokens;
  std::vector<int32_t> types;
  for (int b = 0; b < 256; ++b) {
    tokens.push_back(byte_token(b));
    types.push_back(kNormal);
  }
  tokens.push_back("<|endoftext|>");
  types.push_back(kControl);
  pad(tokens, types, n_vocab, "byte-level vocabulary");
  w.set_str("tokenizer.ggml.model", "gpt2");
  w.set_str("tokenizer.ggml.pre", "default");
  w.set_str_array("tokenizer.ggml.tokens", std::move(tokens));
  w.set_i32_array("tokenizer.ggml.token_type", types);
  w.set_str_array("tokenizer.ggml.merges", {});
  w.set_u32("tokenizer.ggml.bos_token_id", 256);
  w.set_u32("tokenizer.ggml.eos_token_id", 256);
}

} // namespace

void add_tokenizer(GgufWriter &w, const std::string &source, int64_t n_vocab, const std::string &default_pre) {
  if (source.empty()) return byte_level(w, n_vocab);
  if (source.size() >= 5 && source.compare(source.size() - 5, 5, ".json") == 0)
    return from_tokenizer_json(w, source, n_vocab, default_pre);
  return from_gguf(w, source, n_vocab);
}

} // namespace wo::synth
