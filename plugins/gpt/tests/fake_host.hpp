// A wo_host over in-memory metadata and tensor descriptors. Its VRAM services hand out host
// memory and record every allocation, so CPU tests can check accounting, out-of-memory handling
// and balance; GPU tests replace the device services (see forward_gpu_test.cu).
#pragma once

#include <worker/ggml_types.hpp>
#include <worker/sdk.hpp>

#include <cstdlib>
#include <deque>
#include <map>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

namespace wo::gpt::testing {

class FakeHost {
public:
  FakeHost() {
    host_.struct_size = sizeof(wo_host);
    host_.abi_major = WORKER_SDK_ABI_MAJOR;
    host_.abi_minor = WORKER_SDK_ABI_MINOR;
    host_.ctx = this;
    host_.meta_get = &meta_get;
    host_.tensor = &tensor;
    host_.vram_alloc = &vram_alloc;
    host_.vram_free = &vram_free;
  }
  ~FakeHost() {
    for (void *p : live_)
      std::free(p);
  }
  FakeHost(const FakeHost &) = delete;
  FakeHost &operator=(const FakeHost &) = delete;

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

  void set_u32(const std::string &key, uint32_t v) {
    wo_value x = empty_value();
    x.type = WO_VALUE_U32;
    x.i64 = v;
    x.u64 = v;
    meta_[key] = x;
  }
  void set_f32(const std::string &key, double v) {
    wo_value x = empty_value();
    x.type = WO_VALUE_F32;
    x.f64 = v;
    meta_[key] = x;
  }
  // A tensor descriptor; `data` is the device copy (nullptr in CPU tests).
  wo_tensor &add_tensor(const std::string &name, uint32_t type, std::initializer_list<int64_t> ne,
                        void *data = nullptr) {
    std::vector<int64_t> v(ne);
    return add_tensor(name, type, v, data);
  }
  wo_tensor &add_tensor(const std::string &name, uint32_t type, const std::vector<int64_t> &ne,
                        void *data = nullptr) {
    names_.push_back(name);
    wo_tensor t{};
    t.struct_size = sizeof(wo_tensor);
    t.name = names_.back().c_str();
    t.ggml_type = type;
    t.n_dims = static_cast<uint32_t>(ne.size());
    for (int i = 0; i < 4; ++i)
      t.ne[i] = i < static_cast<int>(t.n_dims) ? ne[static_cast<size_t>(i)] : 1;
    t.nb1 = ggml::row_bytes(t.ggml_type, t.ne[0]);
    t.nbytes = t.nb1 * static_cast<uint64_t>(t.ne[1] * t.ne[2] * t.ne[3]);
    t.data = data;
    return tensors_[name] = t;
  }

  static uint32_t type_id(const std::string &name) {
    for (uint32_t id = 0; id < ggml::kTypeCount; ++id)
      if (const char *n = ggml::type_name(id); n && name == n) return id;
    throw std::runtime_error("unknown ggml type " + name);
  }

private:
  static FakeHost *self(void *ctx) { return static_cast<FakeHost *>(ctx); }
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
    FakeHost *h = self(ctx);
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
    FakeHost *h = self(ctx);
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
