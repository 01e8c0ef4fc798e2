// A wo_host for CPU tests, built from a fixture's reference.json: the model's real metadata
// (scalars with the GGUF types the converter writes) and tensor descriptors (name, type, shape)
// without data. Device services are fakes that hand out host memory and record every
// allocation, so tests can check VRAM accounting, out-of-memory handling and balance.
#pragma once

#include <worker/ggml_types.hpp>
#include <worker/sdk.hpp>

#include <rapidjson/document.h>
#include <rapidjson/istreamwrapper.h>

#include <cstdlib>
#include <deque>
#include <fstream>
#include <map>
#include <set>
#include <stdexcept>
#include <string>

namespace wo::gpt::testing {

inline std::string fixtures_dir() {
  const char *env = std::getenv("WORKER_FIXTURES_DIR");
  return env && *env ? env : WORKER_FIXTURES_DIR_DEFAULT;
}

class ReferenceHost {
public:
  explicit ReferenceHost(const std::string &model) {
    const std::string path = fixtures_dir() + "/reference/" + model + "/reference.json";
    std::ifstream in(path);
    if (!in) throw std::runtime_error("cannot open " + path);
    rapidjson::IStreamWrapper isw(in);
    rapidjson::Document doc;
    doc.ParseStream(isw);
    if (doc.HasParseError() || !doc.IsObject()) throw std::runtime_error("malformed JSON in " + path);
    for (auto &m : doc["metadata"].GetObject()) add_meta(m.name.GetString(), m.value);
    for (auto &t : doc["tensors"].GetArray()) add_tensor(t["name"].GetString(), t["type"].GetString(), t["ne"]);
    host_.struct_size = sizeof(wo_host);
    host_.abi_major = WORKER_SDK_ABI_MAJOR;
    host_.abi_minor = WORKER_SDK_ABI_MINOR;
    host_.ctx = this;
    host_.meta_get = &meta_get;
    host_.tensor = &tensor;
    host_.vram_alloc = &vram_alloc;
    host_.vram_free = &vram_free;
  }
  ~ReferenceHost() {
    for (void *p : live_) std::free(p);
  }
  ReferenceHost(const ReferenceHost &) = delete;
  ReferenceHost &operator=(const ReferenceHost &) = delete;

  const wo_host *host() const { return &host_; }
  wo_host *mutable_host() { return &host_; }

  // Edit the model before create(): replace a metadata scalar, drop or reshape a tensor.
  void set_string(const std::string &key, const std::string &v) {
    strings_.push_back(v);
    wo_value x = empty_value();
    x.type = WO_VALUE_STRING;
    x.str = {strings_.back().data(), strings_.back().size()};
    meta_[key] = x;
  }
  // Re-key every "<from>.*" metadata entry as "<to>.*" (e.g. the `gptoss` spelling of gpt-oss).
  void rename_prefix(const std::string &from, const std::string &to) {
    std::map<std::string, wo_value> out;
    for (auto &kv : meta_)
      out[kv.first.rfind(from + ".", 0) == 0 ? to + kv.first.substr(from.size()) : kv.first] = kv.second;
    meta_ = out;
  }
  void erase_meta(const std::string &key) { meta_.erase(key); }
  void erase_tensor(const std::string &name) { tensors_.erase(name); }
  wo_tensor &tensor_desc(const std::string &name) { return tensors_.at(name); }

  // Allocation faults: the n-th vram_alloc from now on (0-based) fails with OUT_OF_MEMORY.
  void fail_alloc_at(int n) { fail_at_ = n; }
  size_t live_allocations() const { return live_.size(); }
  int bad_frees() const { return bad_frees_; }
  size_t bytes_of_kind(wo_vram_kind k) const {
    auto it = bytes_by_kind_.find(k);
    return it == bytes_by_kind_.end() ? 0 : it->second;
  }

private:
  void add_meta(const std::string &key, const rapidjson::Value &v) {
    wo_value x = empty_value();
    if (v.IsString()) {
      strings_.emplace_back(v.GetString(), v.GetStringLength());
      x.type = WO_VALUE_STRING;
      x.str = {strings_.back().data(), strings_.back().size()};
    } else if (v.IsBool()) {
      x.type = WO_VALUE_BOOL;
      x.i64 = v.GetBool();
      x.u64 = v.GetBool();
    } else if (v.IsInt64() && !v.IsDouble()) {
      x.type = WO_VALUE_U32; // the converter writes counts and ids as u32
      x.i64 = v.GetInt64();
      x.u64 = static_cast<uint64_t>(v.GetInt64());
      x.is_negative = v.GetInt64() < 0;
      if (x.is_negative) x.type = WO_VALUE_I32;
    } else if (v.IsNumber()) {
      x.type = WO_VALUE_F32;
      x.f64 = v.GetDouble();
    } else {
      return; // arrays are reduced to counts in reference.json; the plugin needs none of them
    }
    meta_[key] = x;
  }

  void add_tensor(const std::string &name, const std::string &type, const rapidjson::Value &ne) {
    names_.push_back(name);
    wo_tensor t{};
    t.struct_size = sizeof(wo_tensor);
    t.name = names_.back().c_str();
    t.ggml_type = type_id(type);
    t.n_dims = ne.Size();
    for (int i = 0; i < 4; ++i) t.ne[i] = i < static_cast<int>(t.n_dims) ? ne[i].GetInt64() : 1;
    t.nb1 = ggml::row_bytes(t.ggml_type, t.ne[0]);
    t.nbytes = t.nb1 * static_cast<uint64_t>(t.ne[1] * t.ne[2] * t.ne[3]);
    tensors_[name] = t;
  }

  static uint32_t type_id(const std::string &name) {
    for (uint32_t id = 0; id < ggml::kTypeCount; ++id)
      if (const char *n = ggml::type_name(id); n && name == n) return id;
    throw std::runtime_error("unknown ggml type " + name);
  }

  static ReferenceHost *self(void *ctx) { return static_cast<ReferenceHost *>(ctx); }
  static wo_status meta_get(void *ctx, const char *key, wo_value *out) {
    auto &m = self(ctx)->meta_;
    auto it = m.find(key);
    if (it == m.end()) return WO_ERR_NOT_FOUND;
    *out = it->second;
    return WO_OK;
  }
  static const wo_tensor *tensor(void *ctx, const char *name) {
    auto &m = self(ctx)->tensors_;
    auto it = m.find(name);
    return it == m.end() ? nullptr : &it->second;
  }
  static wo_status vram_alloc(void *ctx, size_t bytes, wo_vram_kind kind, void **out) {
    ReferenceHost *h = self(ctx);
    if (h->fail_at_ == 0) {
      h->fail_at_ = -1;
      return WO_ERR_OUT_OF_MEMORY;
    }
    if (h->fail_at_ > 0) --h->fail_at_;
    void *p = std::malloc(bytes ? bytes : 1);
    if (!p) return WO_ERR_OUT_OF_MEMORY;
    h->live_.insert(p);
    h->kind_of_[p] = {kind, bytes};
    h->bytes_by_kind_[kind] += bytes;
    *out = p;
    return WO_OK;
  }
  static void vram_free(void *ctx, void *p) {
    ReferenceHost *h = self(ctx);
    if (!h->live_.erase(p)) {
      ++h->bad_frees_; // double free or foreign pointer: the test checks this count
      return;
    }
    auto kb = h->kind_of_.at(p);
    h->bytes_by_kind_[kb.first] -= kb.second;
    h->kind_of_.erase(p);
    std::free(p);
  }

  wo_host host_{};
  std::map<std::string, wo_value> meta_;
  std::map<std::string, wo_tensor> tensors_;
  std::deque<std::string> strings_, names_;
  std::set<void *> live_;
  std::map<void *, std::pair<wo_vram_kind, size_t>> kind_of_;
  std::map<wo_vram_kind, size_t> bytes_by_kind_;
  int fail_at_ = -1;
  int bad_frees_ = 0;
};

} // namespace wo::gpt::testing
