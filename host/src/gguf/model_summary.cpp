#include "gguf/model_summary.hpp"

#include <worker/ggml_types.hpp>

#include <rapidjson/prettywriter.h>
#include <rapidjson/stringbuffer.h>

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <map>
#include <sstream>

namespace wo::gguf {

const char *file_type_name(int64_t ft) {
  // llama.cpp's llama_ftype numbering, as written in general.file_type.
  switch (ft) {
  case 0: return "F32";
  case 1: return "F16";
  case 2: return "Q4_0";
  case 3: return "Q4_1";
  case 7: return "Q8_0";
  case 8: return "Q5_0";
  case 9: return "Q5_1";
  case 10: return "Q2_K";
  case 11: return "Q3_K_S";
  case 12: return "Q3_K_M";
  case 13: return "Q3_K_L";
  case 14: return "Q4_K_S";
  case 15: return "Q4_K_M";
  case 16: return "Q5_K_S";
  case 17: return "Q5_K_M";
  case 18: return "Q6_K";
  case 19: return "IQ2_XXS";
  case 20: return "IQ2_XS";
  case 21: return "Q2_K_S";
  case 22: return "IQ3_XS";
  case 23: return "IQ3_XXS";
  case 24: return "IQ1_S";
  case 25: return "IQ4_NL";
  case 26: return "IQ3_S";
  case 27: return "IQ3_M";
  case 28: return "IQ2_S";
  case 29: return "IQ2_M";
  case 30: return "IQ4_XS";
  case 31: return "IQ1_M";
  case 32: return "BF16";
  case 36: return "TQ1_0";
  case 37: return "TQ2_0";
  case 38: return "MXFP4_MOE";
  default: return "";
  }
}

namespace {

std::optional<HparamValue> scalar(const Value &v) {
  if (v.is_integer()) {
    int64_t i;
    uint64_t u;
    bool neg;
    v.widen(i, u, neg);
    if (neg) return HparamValue(i);
    return HparamValue(u);
  }
  if (v.is_float()) return HparamValue(v.as_double());
  if (v.type == WO_VALUE_BOOL) return HparamValue(v.as_bool());
  if (v.type == WO_VALUE_STRING) return HparamValue(std::string(v.str()));
  return std::nullopt;
}

uint64_t uint_or(const File &f, const std::string &key, uint64_t dflt) {
  const Value *v = f.find(key);
  if (!v || !v->is_integer()) return dflt;
  int64_t i;
  uint64_t u;
  bool neg;
  v->widen(i, u, neg);
  return neg ? dflt : u;
}

// Saturating arithmetic: a corrupt hparam must not wrap the estimate around.
uint64_t mul_sat(uint64_t a, uint64_t b) { return (a != 0 && b > UINT64_MAX / a) ? UINT64_MAX : a * b; }
uint64_t add_sat(uint64_t a, uint64_t b) { return b > UINT64_MAX - a ? UINT64_MAX : a + b; }

// general.file_type when it is an integer (inspect reads odd files: any other type is ignored).
std::optional<int64_t> file_type_of(const File &f) {
  auto ft = f.find("general.file_type");
  if (!ft || !ft->is_integer()) return std::nullopt;
  int64_t i;
  uint64_t u;
  bool neg;
  ft->widen(i, u, neg);
  return i;
}

} // namespace

std::string quant_kind(const File &f) {
  if (auto ft = file_type_of(f)) {
    std::string name = file_type_name(*ft);
    const std::string moe = "_MOE";
    if (name.size() > moe.size() && name.compare(name.size() - moe.size(), moe.size(), moe) == 0)
      name.resize(name.size() - moe.size());
    if (!name.empty()) return name;
  }
  std::map<uint32_t, uint64_t> bytes;
  for (const TensorInfo &t : f.tensors())
    if (t.type != ggml::F32) bytes[t.type] += t.nbytes;
  if (bytes.empty()) return "F32";
  const auto best = std::max_element(bytes.begin(), bytes.end(),
                                     [](const auto &a, const auto &b) { return a.second < b.second; });
  return ggml::type_info(best->first)->name; // validated at open
}

ModelSummary summarize(const File &f) {
  ModelSummary s;
  s.source = f.source();
  s.file_size = f.size();
  s.version = f.version();
  s.alignment = f.alignment();
  if (auto a = f.find("general.architecture"); a && a->type == WO_VALUE_STRING) s.architecture = a->str();
  if (auto n = f.find("general.name"); n && n->type == WO_VALUE_STRING) s.name = n->str();
  if (!s.architecture.empty()) {
    const std::string prefix = s.architecture + ".";
    for (const KeyValue &kv : f.metadata())
      if (kv.key.size() > prefix.size() && kv.key.compare(0, prefix.size(), prefix) == 0)
        if (auto v = scalar(kv.value)) s.hparams.emplace_back(std::string(kv.key.substr(prefix.size())), *v);
  }
  if (auto m = f.find("tokenizer.ggml.model"); m && m->type == WO_VALUE_STRING) s.tokenizer_model = m->str();
  if (auto p = f.find("tokenizer.ggml.pre"); p && p->type == WO_VALUE_STRING) s.tokenizer_pre = p->str();
  if (auto t = f.find("tokenizer.ggml.tokens"); t && t->is_array())
    s.vocab_size = t->len;
  else if (!s.architecture.empty())
    s.vocab_size = uint_or(f, s.architecture + ".vocab_size", 0);

  // Per-type counts and bytes.
  std::map<uint32_t, TypeStat> by_type;
  for (const TensorInfo &t : f.tensors()) {
    TypeStat &st = by_type[t.type];
    st.type = t.type;
    st.name = ggml::type_info(t.type)->name; // validated at open
    st.count += 1;
    st.bytes += t.nbytes;
    s.weight_bytes += t.nbytes;
  }
  s.tensor_count = f.tensors().size();
  s.quant_kind = quant_kind(f);
  for (auto &kv : by_type)
    s.types.push_back(kv.second);
  std::sort(s.types.begin(), s.types.end(), [](const TypeStat &a, const TypeStat &b) {
    return a.count != b.count ? a.count > b.count : a.name < b.name;
  });

  // The label users know: general.file_type, else the type holding most bytes.
  if (auto ft = file_type_of(f)) {
    s.file_type = file_type_name(*ft);
    if (s.file_type.empty()) s.file_type = "file_type " + std::to_string(*ft);
  }
  if (s.file_type.empty() && !s.types.empty())
    s.file_type = std::max_element(s.types.begin(), s.types.end(), [](const TypeStat &a, const TypeStat &b) {
                    return a.bytes < b.bytes;
                  })->name;
  std::string parts;
  for (const TypeStat &t : s.types)
    parts += (parts.empty() ? "" : ", ") + t.name + "\u00d7" + std::to_string(t.count);
  if (s.types.empty())
    s.quant_label = "no tensors";
  else if (s.types.size() == 1)
    s.quant_label = s.file_type + ": " + parts;
  else
    s.quant_label = s.file_type + " mix: " + parts;

  // KV cache at the model's context length, FP16 K and V (spec ML-5011). Sliding-window layouts
  // (gpt-oss) are counted as full attention: an upper bound.
  if (!s.architecture.empty()) {
    const std::string a = s.architecture + ".";
    s.context_length = uint_or(f, a + "context_length", 0);
    const uint64_t n_layer = uint_or(f, a + "block_count", 0);
    const uint64_t n_embd = uint_or(f, a + "embedding_length", 0);
    const uint64_t n_head = uint_or(f, a + "attention.head_count", 0);
    const uint64_t n_head_kv = uint_or(f, a + "attention.head_count_kv", n_head);
    uint64_t k_dim = uint_or(f, a + "attention.key_length", n_head ? n_embd / n_head : 0);
    uint64_t v_dim = uint_or(f, a + "attention.value_length", k_dim);
    uint64_t per_token_layer = mul_sat(n_head_kv, add_sat(k_dim, v_dim)); // K + V elements
    s.kv_cache_bytes = mul_sat(mul_sat(mul_sat(n_layer, s.context_length), per_token_layer), 2);
  }
  s.estimated_vram_bytes = add_sat(s.weight_bytes, s.kv_cache_bytes);
  return s;
}

// ---------------------------------------------------------------------------------------------

namespace {

using Writer = rapidjson::PrettyWriter<rapidjson::StringBuffer>;

void put(Writer &w, const std::string &s) { w.String(s.c_str(), static_cast<rapidjson::SizeType>(s.size())); }
void put_or_null(Writer &w, const std::string &s) {
  if (s.empty())
    w.Null();
  else
    put(w, s);
}

void put_hparam(Writer &w, const HparamValue &v) {
  if (auto i = std::get_if<int64_t>(&v))
    w.Int64(*i);
  else if (auto u = std::get_if<uint64_t>(&v))
    w.Uint64(*u);
  else if (auto d = std::get_if<double>(&v))
    w.Double(*d);
  else if (auto b = std::get_if<bool>(&v))
    w.Bool(*b);
  else
    put(w, std::get<std::string>(v));
}

std::string hparam_text(const HparamValue &v) {
  if (auto i = std::get_if<int64_t>(&v)) return std::to_string(*i);
  if (auto u = std::get_if<uint64_t>(&v)) return std::to_string(*u);
  if (auto d = std::get_if<double>(&v)) {
    char b[32];
    std::snprintf(b, sizeof b, "%g", *d);
    return b;
  }
  if (auto b = std::get_if<bool>(&v)) return *b ? "true" : "false";
  return "\"" + std::get<std::string>(v) + "\"";
}

std::string human_bytes(uint64_t b) {
  char buf[32];
  if (b >= (1ull << 30))
    std::snprintf(buf, sizeof buf, "%.2f GiB", b / double(1ull << 30));
  else if (b >= (1ull << 20))
    std::snprintf(buf, sizeof buf, "%.2f MiB", b / double(1ull << 20));
  else if (b >= (1ull << 10))
    std::snprintf(buf, sizeof buf, "%.2f KiB", b / double(1ull << 10));
  else
    std::snprintf(buf, sizeof buf, "%" PRIu64 " B", b);
  return buf;
}

std::string shape_text(const TensorInfo &t) {
  std::string s = "[";
  for (uint32_t k = 0; k < t.n_dims; ++k)
    s += (k ? ", " : "") + std::to_string(t.ne[k]);
  return s + "]";
}

} // namespace

std::string summary_json(const File &f, const ModelSummary &s, const std::optional<PluginReport> &plugins,
                         bool with_tensors) {
  rapidjson::StringBuffer buf;
  Writer w(buf);
  w.SetIndent(' ', 2);
  w.StartObject();
  w.Key("source");
  put(w, s.source);
  w.Key("file_size");
  w.Uint64(s.file_size);
  w.Key("version");
  w.Uint(s.version);
  w.Key("alignment");
  w.Uint64(s.alignment);
  w.Key("architecture");
  put_or_null(w, s.architecture);
  w.Key("name");
  put_or_null(w, s.name);
  w.Key("hparams");
  w.StartObject();
  for (const auto &[k, v] : s.hparams) {
    w.Key(k.c_str(), static_cast<rapidjson::SizeType>(k.size()));
    put_hparam(w, v);
  }
  w.EndObject();
  w.Key("tokenizer");
  w.StartObject();
  w.Key("model");
  put_or_null(w, s.tokenizer_model);
  w.Key("pre");
  put_or_null(w, s.tokenizer_pre);
  w.Key("vocab_size");
  w.Uint64(s.vocab_size);
  w.EndObject();
  w.Key("tensor_count");
  w.Uint64(s.tensor_count);
  w.Key("tensor_types");
  w.StartObject();
  for (const TypeStat &t : s.types) {
    w.Key(t.name.c_str());
    w.Uint64(t.count);
  }
  w.EndObject();
  w.Key("tensor_bytes");
  w.StartObject();
  for (const TypeStat &t : s.types) {
    w.Key(t.name.c_str());
    w.Uint64(t.bytes);
  }
  w.EndObject();
  w.Key("file_type");
  put_or_null(w, s.file_type);
  w.Key("quant_kind");
  put(w, s.quant_kind);
  w.Key("quant_label");
  put(w, s.quant_label);
  w.Key("weight_bytes");
  w.Uint64(s.weight_bytes);
  w.Key("context_length");
  w.Uint64(s.context_length);
  w.Key("kv_cache_bytes");
  w.Uint64(s.kv_cache_bytes);
  w.Key("estimated_vram_bytes");
  w.Uint64(s.estimated_vram_bytes);
  w.Key("plugins");
  w.StartObject();
  w.Key("architecture");
  if (plugins)
    put_or_null(w, plugins->architecture);
  else
    w.Null();
  w.Key("tokenizer");
  if (plugins)
    put_or_null(w, plugins->tokenizer);
  else
    w.Null();
  w.Key("quant");
  w.StartObject();
  if (plugins)
    for (const auto &[type, plugin] : plugins->quant) {
      w.Key(type.c_str());
      put(w, plugin);
    }
  w.EndObject();
  w.EndObject();
  w.Key("missing");
  w.StartArray();
  if (plugins)
    for (const std::string &m : plugins->missing)
      put(w, m);
  else
    put(w, "plugins were not resolved (no plugin registry in this build)");
  w.EndArray();
  if (with_tensors) {
    w.Key("tensors");
    w.StartArray();
    for (const TensorInfo &t : f.tensors()) {
      w.StartObject();
      w.Key("name");
      put(w, t.name);
      w.Key("type");
      w.String(ggml::type_info(t.type)->name);
      w.Key("shape");
      w.StartArray();
      for (uint32_t k = 0; k < t.n_dims; ++k)
        w.Int64(t.ne[k]);
      w.EndArray();
      w.Key("offset");
      w.Uint64(t.offset);
      w.Key("bytes");
      w.Uint64(t.nbytes);
      w.EndObject();
    }
    w.EndArray();
  }
  w.EndObject();
  return std::string(buf.GetString(), buf.GetSize()) + "\n";
}

std::string summary_text(const File &f, const ModelSummary &s, const std::optional<PluginReport> &plugins,
                         bool with_tensors) {
  std::ostringstream o;
  o << "model:        " << s.source << "\n";
  o << "file size:    " << s.file_size << " bytes (" << human_bytes(s.file_size) << ")\n";
  o << "gguf:         version " << s.version << ", alignment " << s.alignment << ", data at "
    << hex(f.data_offset()) << "\n";
  o << "architecture: " << (s.architecture.empty() ? "(none)" : s.architecture) << "\n";
  o << "name:         " << (s.name.empty() ? "(none)" : s.name) << "\n";
  o << "quant:        " << s.quant_kind << " (" << s.quant_label << ")\n";
  o << "tensors:      " << s.tensor_count << ", " << s.weight_bytes << " bytes ("
    << human_bytes(s.weight_bytes) << ")\n";
  for (const TypeStat &t : s.types)
    o << "  " << t.name << std::string(t.name.size() < 8 ? 8 - t.name.size() : 1, ' ') << t.count
      << " tensors, " << t.bytes << " bytes\n";
  o << "tokenizer:    model " << (s.tokenizer_model.empty() ? "(none)" : s.tokenizer_model) << ", pre "
    << (s.tokenizer_pre.empty() ? "(none)" : s.tokenizer_pre) << ", vocab " << s.vocab_size << "\n";
  o << "hparams:\n";
  for (const auto &[k, v] : s.hparams)
    o << "  " << k << " = " << hparam_text(v) << "\n";
  o << "vram:         ~" << human_bytes(s.estimated_vram_bytes) << " (" << s.estimated_vram_bytes
    << " bytes: weights + FP16 KV cache of " << human_bytes(s.kv_cache_bytes) << " at context "
    << s.context_length << ")\n";
  if (plugins) {
    o << "plugins:      architecture " << (plugins->architecture.empty() ? "(none)" : plugins->architecture)
      << ", tokenizer " << (plugins->tokenizer.empty() ? "(none)" : plugins->tokenizer) << "\n";
    for (const auto &[type, plugin] : plugins->quant)
      o << "  " << type << " -> " << plugin << "\n";
    for (const std::string &m : plugins->missing)
      o << "missing:      " << m << "\n";
  } else {
    o << "plugins:      not resolved (no plugin registry in this build)\n";
  }
  if (with_tensors) {
    o << "tensor list (name, type, shape, offset, bytes):\n";
    for (const TensorInfo &t : f.tensors())
      o << "  " << t.name << "  " << ggml::type_info(t.type)->name << "  " << shape_text(t) << "  "
        << hex(t.offset) << "  " << t.nbytes << "\n";
  }
  return o.str();
}

} // namespace wo::gguf
