// A tiny GGUF writer for tests: builds well-formed files and, through its knobs, every kind of
// malformed one the reader must reject. Records where each field landed so tests can check the
// byte offsets the reader's messages name.
#pragma once

#include <cstdint>
#include <cstring>
#include <optional>
#include <random>
#include <string>
#include <vector>

namespace wo::gguf::test {

class GgufBuilder {
public:
  std::string magic = "GGUF";
  uint32_t version = 3;
  std::optional<uint64_t> tensor_count_override;
  std::optional<uint64_t> kv_count_override;
  uint64_t alignment = 32; // used to place data; write general.alignment yourself to change the file's

  // ---- metadata ----
  void kv_raw(const std::string &key, uint32_t type, const std::vector<uint8_t> &payload) {
    str(kv_, key);
    pod(kv_, type);
    kv_.insert(kv_.end(), payload.begin(), payload.end());
    ++n_kv_;
  }
  template <class T> void kv_scalar(const std::string &key, uint32_t type, T v) {
    std::vector<uint8_t> p;
    pod(p, v);
    kv_raw(key, type, p);
  }
  void kv_u32(const std::string &key, uint32_t v) { kv_scalar(key, 4, v); }
  void kv_i32(const std::string &key, int32_t v) { kv_scalar(key, 5, v); }
  void kv_u64(const std::string &key, uint64_t v) { kv_scalar(key, 10, v); }
  void kv_f32(const std::string &key, float v) { kv_scalar(key, 6, v); }
  void kv_bool(const std::string &key, bool v) { kv_scalar(key, 7, static_cast<uint8_t>(v)); }
  void kv_str(const std::string &key, const std::string &v) {
    std::vector<uint8_t> p;
    str(p, v);
    kv_raw(key, 8, p);
  }
  void kv_str_array(const std::string &key, const std::vector<std::string> &v) {
    std::vector<uint8_t> p;
    pod(p, uint32_t{8});
    pod(p, static_cast<uint64_t>(v.size()));
    for (const auto &s : v)
      str(p, s);
    kv_raw(key, 9, p);
  }
  template <class T> void kv_array(const std::string &key, uint32_t elem_type, const std::vector<T> &v) {
    std::vector<uint8_t> p;
    pod(p, elem_type);
    pod(p, static_cast<uint64_t>(v.size()));
    for (const T &x : v)
      pod(p, x);
    kv_raw(key, 9, p);
  }

  // ---- tensors ----
  struct Tensor {
    std::string name;
    std::vector<uint64_t> ne;
    uint32_t type;
    uint64_t nbytes;                // bytes of data written
    std::optional<uint64_t> offset; // relative to the data section; default: packed, aligned
    std::vector<uint8_t> data;      // filled with random bytes unless given
  };
  // Adds a tensor of `nbytes` random bytes (the caller computes the right size, or a wrong one).
  Tensor &tensor(const std::string &name, std::vector<uint64_t> ne, uint32_t type, uint64_t nbytes,
                 std::optional<uint64_t> offset = std::nullopt) {
    Tensor t{name, std::move(ne), type, nbytes, offset, {}};
    t.data.resize(nbytes);
    for (auto &b : t.data)
      b = static_cast<uint8_t>(rng_());
    tensors_.push_back(std::move(t));
    return tensors_.back();
  }

  // ---- layout facts, valid after build() ----
  uint64_t kv_start = 0;                // first key/value
  std::vector<uint64_t> tensor_info_at; // each tensor's info record
  uint64_t data_offset = 0;             // start of the data section
  std::vector<uint64_t> tensor_rel;     // each tensor's offset relative to the data section
  uint64_t truncate_to = UINT64_MAX;    // cut the file after building

  std::vector<uint8_t> build() {
    std::vector<uint8_t> f(magic.begin(), magic.end());
    pod(f, version);
    pod(f, tensor_count_override.value_or(tensors_.size()));
    pod(f, kv_count_override.value_or(n_kv_));
    kv_start = f.size();
    f.insert(f.end(), kv_.begin(), kv_.end());
    tensor_info_at.clear();
    tensor_rel.clear();
    uint64_t next = 0;
    for (const Tensor &t : tensors_) {
      tensor_info_at.push_back(f.size());
      str(f, t.name);
      pod(f, static_cast<uint32_t>(t.ne.size()));
      for (uint64_t n : t.ne)
        pod(f, n);
      pod(f, t.type);
      const uint64_t rel = t.offset.value_or(next);
      tensor_rel.push_back(rel);
      pod(f, rel);
      next = align(rel + t.nbytes);
    }
    data_offset = align(f.size());
    f.resize(data_offset, 0);
    for (size_t i = 0; i < tensors_.size(); ++i) {
      const uint64_t at = data_offset + tensor_rel[i];
      if (tensor_rel[i] > (1ull << 30) || tensors_[i].nbytes == 0) continue; // absurd offsets: header only
      if (at + tensors_[i].nbytes > f.size()) f.resize(at + tensors_[i].nbytes, 0);
      std::memcpy(f.data() + at, tensors_[i].data.data(), tensors_[i].nbytes);
    }
    if (truncate_to < f.size()) f.resize(truncate_to);
    return f;
  }

  const std::vector<Tensor> &tensors() const { return tensors_; }
  void seed(uint32_t s) { rng_.seed(s); }

  template <class T> static void pod(std::vector<uint8_t> &out, T v) {
    uint8_t b[sizeof(T)];
    std::memcpy(b, &v, sizeof(T));
    out.insert(out.end(), b, b + sizeof(T));
  }
  static void str(std::vector<uint8_t> &out, const std::string &s) {
    pod(out, static_cast<uint64_t>(s.size()));
    out.insert(out.end(), s.begin(), s.end());
  }

private:
  uint64_t align(uint64_t v) const { return (v + alignment - 1) / alignment * alignment; }

  std::vector<uint8_t> kv_;
  uint64_t n_kv_ = 0;
  std::vector<Tensor> tensors_;
  std::mt19937 rng_{std::random_device{}()};
};

} // namespace wo::gguf::test
