#include "gguf_writer.hpp"

#include <worker/ggml_types.hpp>
#include <worker/sdk.hpp>

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <unistd.h>

namespace wo::synth {
namespace {

constexpr uint32_t kString = 8, kArray = 9;

template <class T> void put(std::vector<uint8_t> &b, T v) {
  uint8_t tmp[sizeof(T)];
  std::memcpy(tmp, &v, sizeof(T));
  b.insert(b.end(), tmp, tmp + sizeof(T));
}

void put_str(std::vector<uint8_t> &b, const std::string &s) {
  put<uint64_t>(b, s.size());
  b.insert(b.end(), s.begin(), s.end());
}

size_t scalar_size(uint32_t t) {
  switch (t) {
  case 0: case 1: case 7: return 1;
  case 2: case 3: return 2;
  case 4: case 5: case 6: return 4;
  case 10: case 11: case 12: return 8;
  default: return 0;
  }
}

void put_scalar(std::vector<uint8_t> &b, uint32_t type, const MetaValue &mv) {
  auto as_u = [&]() -> uint64_t {
    if (auto p = std::get_if<uint64_t>(&mv.v)) return *p;
    if (auto p = std::get_if<int64_t>(&mv.v)) return static_cast<uint64_t>(*p);
    if (auto p = std::get_if<bool>(&mv.v)) return *p ? 1 : 0;
    throw Error(WO_ERR_INVALID_ARGUMENT, "gguf writer: integer value expected");
  };
  switch (type) {
  case 0: put<uint8_t>(b, static_cast<uint8_t>(as_u())); break;
  case 1: put<int8_t>(b, static_cast<int8_t>(as_u())); break;
  case 2: put<uint16_t>(b, static_cast<uint16_t>(as_u())); break;
  case 3: put<int16_t>(b, static_cast<int16_t>(as_u())); break;
  case 4: put<uint32_t>(b, static_cast<uint32_t>(as_u())); break;
  case 5: put<int32_t>(b, static_cast<int32_t>(as_u())); break;
  case 6: put<float>(b, static_cast<float>(std::get<double>(mv.v))); break;
  case 7: put<uint8_t>(b, static_cast<uint8_t>(as_u())); break;
  case 10: put<uint64_t>(b, as_u()); break;
  case 11: put<int64_t>(b, static_cast<int64_t>(as_u())); break;
  case 12: put<double>(b, std::get<double>(mv.v)); break;
  default: throw Error(WO_ERR_INVALID_ARGUMENT, "gguf writer: bad scalar type " + std::to_string(type));
  }
}

} // namespace

void GgufWriter::set(const std::string &key, MetaValue value) {
  for (auto &kv : meta_)
    if (kv.first == key) {
      kv.second = std::move(value);
      return;
    }
  meta_.emplace_back(key, std::move(value));
}
void GgufWriter::set_str(const std::string &k, const std::string &v) { set(k, {kString, v}); }
void GgufWriter::set_u32(const std::string &k, uint32_t v) { set(k, {4, uint64_t{v}}); }
void GgufWriter::set_i32(const std::string &k, int32_t v) { set(k, {5, int64_t{v}}); }
void GgufWriter::set_f32(const std::string &k, float v) { set(k, {6, double{v}}); }
void GgufWriter::set_bool(const std::string &k, bool v) { set(k, {7, v}); }
void GgufWriter::set_str_array(const std::string &k, std::vector<std::string> v) {
  MetaArray a;
  a.elem_type = kString;
  a.count = v.size();
  a.strings = std::move(v);
  set(k, {kArray, std::move(a)});
}
void GgufWriter::set_i32_array(const std::string &k, const std::vector<int32_t> &v) {
  MetaArray a;
  a.elem_type = 5;
  a.count = v.size();
  a.raw.resize(v.size() * 4);
  std::memcpy(a.raw.data(), v.data(), a.raw.size());
  set(k, {kArray, std::move(a)});
}
void GgufWriter::set_f32_array(const std::string &k, const std::vector<float> &v) {
  MetaArray a;
  a.elem_type = 6;
  a.count = v.size();
  a.raw.resize(v.size() * 4);
  std::memcpy(a.raw.data(), v.data(), a.raw.size());
  set(k, {kArray, std::move(a)});
}
bool GgufWriter::has(const std::string &key) const {
  for (const auto &kv : meta_)
    if (kv.first == key) return true;
  return false;
}

void GgufWriter::add_tensor(const std::string &name, uint32_t ggml_type, std::vector<int64_t> ne) {
  tensors_.push_back({name, ggml_type, std::move(ne), 0, 0});
}

void GgufWriter::plan() {
  set(std::string("general.alignment"), MetaValue{4, uint64_t{alignment_}});
  uint64_t off = 0;
  for (auto &t : tensors_) {
    const auto *ti = wo::ggml::type_info(t.ggml_type);
    if (!ti) throw Error(WO_ERR_INVALID_ARGUMENT, "tensor '" + t.name + "': unknown ggml type " + std::to_string(t.ggml_type));
    if (t.ne.empty() || t.ne[0] % ti->block_elems != 0)
      throw Error(WO_ERR_INVALID_ARGUMENT, "tensor '" + t.name + "': row length " +
                                               std::to_string(t.ne.empty() ? 0 : t.ne[0]) + " is not a multiple of " +
                                               ti->name + "'s block of " + std::to_string(ti->block_elems));
    uint64_t rows = 1;
    for (size_t i = 1; i < t.ne.size(); ++i) rows *= static_cast<uint64_t>(t.ne[i]);
    t.nbytes = wo::ggml::row_bytes(t.ggml_type, t.ne[0]) * rows;
    off = (off + alignment_ - 1) / alignment_ * alignment_;
    t.offset = off;
    off += t.nbytes;
  }
  data_bytes_ = off;

  std::vector<uint8_t> &b = header_;
  b.clear();
  put<uint32_t>(b, 0x46554747u); // "GGUF"
  put<uint32_t>(b, 3);
  put<uint64_t>(b, tensors_.size());
  put<uint64_t>(b, meta_.size());
  for (const auto &[key, mv] : meta_) {
    put_str(b, key);
    put<uint32_t>(b, mv.type);
    if (mv.type == kString) {
      put_str(b, std::get<std::string>(mv.v));
    } else if (mv.type == kArray) {
      const auto &a = std::get<MetaArray>(mv.v);
      put<uint32_t>(b, a.elem_type);
      put<uint64_t>(b, a.count);
      if (a.elem_type == kString) {
        for (const auto &s : a.strings) put_str(b, s);
      } else {
        if (a.raw.size() != a.count * scalar_size(a.elem_type))
          throw Error(WO_ERR_INTERNAL, "gguf writer: array '" + key + "' has a wrong byte size");
        b.insert(b.end(), a.raw.begin(), a.raw.end());
      }
    } else {
      put_scalar(b, mv.type, mv);
    }
  }
  for (const auto &t : tensors_) {
    put_str(b, t.name);
    put<uint32_t>(b, static_cast<uint32_t>(t.ne.size()));
    for (int64_t d : t.ne) put<uint64_t>(b, static_cast<uint64_t>(d));
    put<uint32_t>(b, t.ggml_type);
    put<uint64_t>(b, t.offset);
  }
  data_start_ = (b.size() + alignment_ - 1) / alignment_ * alignment_;
  b.resize(data_start_, 0);
}

void GgufWriter::open(const std::string &path) {
  fd_ = ::open(path.c_str(), O_CREAT | O_TRUNC | O_WRONLY, 0644);
  if (fd_ < 0) throw Error(WO_ERR_IO, "cannot create '" + path + "': " + std::strerror(errno));
  if (::ftruncate(fd_, static_cast<off_t>(file_size())) != 0)
    throw Error(WO_ERR_IO, "cannot size '" + path + "' to " + std::to_string(file_size()) + " bytes: " +
                               std::strerror(errno));
  write_at(0, header_.data(), header_.size());
}

void GgufWriter::write_at(uint64_t file_offset, const void *data, size_t bytes) const {
  const auto *p = static_cast<const uint8_t *>(data);
  while (bytes > 0) {
    ssize_t n = ::pwrite(fd_, p, bytes, static_cast<off_t>(file_offset));
    if (n < 0) {
      if (errno == EINTR) continue;
      throw Error(WO_ERR_IO, std::string("write failed at offset ") + std::to_string(file_offset) + ": " +
                                 std::strerror(errno));
    }
    p += n;
    bytes -= static_cast<size_t>(n);
    file_offset += static_cast<uint64_t>(n);
  }
}

void GgufWriter::close() {
  if (fd_ >= 0 && ::close(fd_) != 0) {
    fd_ = -1;
    throw Error(WO_ERR_IO, std::string("closing the output failed: ") + std::strerror(errno));
  }
  fd_ = -1;
}

} // namespace wo::synth
