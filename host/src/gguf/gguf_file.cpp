#include "gguf/gguf_file.hpp"

#include "gguf/format_sniff.hpp"
#include "gguf/model_location.hpp"
#include "gguf/utf8_check.hpp"

#include <worker/ggml_types.hpp>

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <cstring>

namespace wo::gguf {

std::string hex(uint64_t v) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "0x%" PRIx64, v);
  return buf;
}

namespace {

// Bytes per element of scalar value types; 0 for string/array/unknown.
uint64_t scalar_size(uint32_t t) {
  switch (t) {
  case WO_VALUE_U8:
  case WO_VALUE_I8:
  case WO_VALUE_BOOL: return 1;
  case WO_VALUE_U16:
  case WO_VALUE_I16: return 2;
  case WO_VALUE_U32:
  case WO_VALUE_I32:
  case WO_VALUE_F32: return 4;
  case WO_VALUE_U64:
  case WO_VALUE_I64:
  case WO_VALUE_F64: return 8;
  default: return 0;
  }
}

// Printable form of a name that may not be valid UTF-8 or may be huge.
std::string printable(std::string_view s) {
  std::string out = "'";
  size_t n = std::min<size_t>(s.size(), 80);
  for (size_t i = 0; i < n; ++i) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    if (c >= 0x20 && c < 0x7f && c != '\\')
      out += static_cast<char>(c);
    else {
      char b[8];
      std::snprintf(b, sizeof b, "\\x%02x", c);
      out += b;
    }
  }
  if (n < s.size()) out += "...";
  return out + "'";
}

} // namespace

// Reads and validates the header. Every failure names the item, expected, found and offset.
class Parser {
public:
  Parser(File &f, const OpenOptions &opts) : f_(f), opts_(opts), d_(f.data_), n_(f.size_) {}

  void run() {
    check_magic();
    f_.version_ = u32(4, "GGUF version");
    if (f_.version_ == 1)
      fail("GGUF version at offset 0x4: expected 2 or 3, found 1 (version 1 is obsolete; re-convert the "
           "model)");
    if (f_.version_ != 2 && f_.version_ != 3) {
      uint32_t swapped = __builtin_bswap32(f_.version_);
      if (swapped == 2 || swapped == 3)
        fail("GGUF version at offset 0x4: expected 2 or 3 little-endian, found " +
             std::to_string(f_.version_) + " (a big-endian GGUF, version " + std::to_string(swapped) +
             "; only little-endian files are supported)");
      fail("GGUF version at offset 0x4: expected 2 or 3, found " + std::to_string(f_.version_));
    }
    pos_ = 8;
    const uint64_t n_tensors = u64(pos_, "tensor count");
    pos_ += 8;
    if (n_tensors > opts_.max_tensors)
      fail("tensor count at offset 0x8: expected at most " + std::to_string(opts_.max_tensors) + ", found " +
           std::to_string(n_tensors));
    const uint64_t n_kv = u64(pos_, "metadata count");
    pos_ += 8;
    // Each key/value takes at least 8 (key length) + 4 (type) + 1 bytes.
    if (n_kv > (n_ - std::min(n_, pos_)) / 13)
      fail("metadata count at offset 0x10: expected at most " + std::to_string((n_ - pos_) / 13) +
           " (what the remaining " + std::to_string(n_ - pos_) + " bytes can hold), found " +
           std::to_string(n_kv));
    f_.kvs_.reserve(n_kv);
    for (uint64_t i = 0; i < n_kv; ++i)
      read_kv(i);
    read_alignment();
    // Each tensor info takes at least 8 + 4 + 8 + 4 + 8 bytes.
    if (n_tensors > (n_ - std::min(n_, pos_)) / 32)
      fail("tensor count at offset 0x8: " + std::to_string(n_tensors) + " tensor infos cannot fit in the " +
           std::to_string(n_ - std::min(n_, pos_)) + " bytes left after the metadata at offset " + hex(pos_));
    f_.tensors_.reserve(n_tensors);
    for (uint64_t i = 0; i < n_tensors; ++i)
      read_tensor_info(i);
    const uint64_t a = f_.alignment_;
    f_.data_offset_ = (pos_ + a - 1) / a * a;
    check_tensor_data();
  }

private:
  [[noreturn]] void fail(const std::string &msg) const {
    throw Error(WO_ERR_FORMAT, f_.source_ + ": " + msg);
  }

  // Fails unless [at, at + len) lies inside the file.
  void need(uint64_t at, uint64_t len, const std::string &what) const {
    if (at > n_ || len > n_ - at)
      fail(what + " at offset " + hex(at) + ": expected " + std::to_string(len) + " bytes, found " +
           std::to_string(at > n_ ? 0 : n_ - at) + " before the end of the file (size " + hex(n_) + ")");
  }
  uint32_t u32(uint64_t at, const std::string &what) const {
    need(at, 4, what);
    uint32_t v;
    std::memcpy(&v, d_ + at, 4);
    return v;
  }
  uint64_t u64(uint64_t at, const std::string &what) const {
    need(at, 8, what);
    uint64_t v;
    std::memcpy(&v, d_ + at, 8);
    return v;
  }
  // A GGUF string at pos_: u64 length then bytes. Advances pos_.
  std::string_view str(const std::string &what) {
    const uint64_t at = pos_;
    const uint64_t len = u64(at, what + " length");
    if (len > n_ - (at + 8))
      fail(what + " at offset " + hex(at) + ": length " + std::to_string(len) +
           " runs past the end of the file (" + std::to_string(n_ - (at + 8)) + " bytes left)");
    pos_ = at + 8 + len;
    return {reinterpret_cast<const char *>(d_ + at + 8), static_cast<size_t>(len)};
  }
  void check_name(std::string_view s, const std::string &what, uint64_t at) const {
    if (s.empty()) fail(what + " at offset " + hex(at) + ": expected a non-empty name, found an empty one");
    // Names cross the C ABI as NUL-terminated strings: an embedded NUL would make two names equal.
    if (size_t nul = s.find('\0'); nul != std::string_view::npos)
      fail(what + " " + printable(s) + " at offset " + hex(at) +
           ": expected no NUL bytes, found one at index " + std::to_string(nul));
    size_t bad = utf8_invalid_at(s);
    if (bad != std::string_view::npos)
      fail(what + " " + printable(s) + " at offset " + hex(at) +
           ": expected valid UTF-8, found an invalid byte at index " + std::to_string(bad));
  }

  void check_magic() {
    if (n_ == 0) fail("file is empty (0 bytes), expected a GGUF file starting with magic 'GGUF'");
    if (n_ >= 4 && std::memcmp(d_, "GGUF", 4) == 0) return;
    std::string foreign = describe_foreign_format(d_, n_);
    if (!foreign.empty()) fail("not a GGUF file: this is " + foreign);
    std::string found;
    for (uint64_t i = 0; i < std::min<uint64_t>(n_, 4); ++i) {
      char b[4];
      std::snprintf(b, sizeof b, "%02x", d_[i]);
      found += (i ? " " : "") + std::string(b);
    }
    if (n_ < 4)
      fail("magic at offset 0x0: expected 'GGUF' (47 47 55 46), found only " + std::to_string(n_) +
           " bytes (" + found + ")");
    fail("magic at offset 0x0: expected 'GGUF' (47 47 55 46), found " + found + " (not a GGUF file)");
  }

  // Reads a value of type `type` whose payload starts at pos_; `depth` bounds nested arrays.
  Value read_value(uint32_t type, const std::string &what, int depth) {
    Value v;
    v.type = static_cast<wo_value_type>(type);
    v.offset = pos_;
    v.data = d_ + std::min(pos_, n_);
    if (uint64_t sz = scalar_size(type)) {
      need(pos_, sz, what);
      v.len = sz;
      pos_ += sz;
      return v;
    }
    if (type == WO_VALUE_STRING) {
      std::string_view s = str(what);
      v.data = reinterpret_cast<const uint8_t *>(s.data());
      v.len = s.size();
      return v;
    }
    if (type != WO_VALUE_ARRAY)
      fail(what + " at offset " + hex(pos_ - 4) + ": expected a value type 0..12, found " +
           std::to_string(type));
    const uint64_t at = pos_;
    const uint32_t et = u32(at, what + " array element type");
    const uint64_t len = u64(at + 4, what + " array length");
    pos_ = at + 12;
    v.array_type = static_cast<wo_value_type>(et);
    v.len = len;
    v.data = d_ + std::min(pos_, n_);
    const uint64_t left = n_ - std::min(n_, pos_);
    if (uint64_t sz = scalar_size(et)) {
      if (len > left / sz)
        fail(what + " at offset " + hex(at) + ": array of " + std::to_string(len) + " " +
             value_type_name(et) + " needs " +
             (len > UINT64_MAX / sz ? "more than 2^64" : std::to_string(len * sz)) + " bytes, found " +
             std::to_string(left) + " before the end of the file");
      pos_ += len * sz;
      return v;
    }
    if (et == WO_VALUE_STRING) {
      if (len > left / 8)
        fail(what + " at offset " + hex(at) + ": array of " + std::to_string(len) +
             " strings cannot fit in the " + std::to_string(left) +
             " bytes left (8 bytes per length at least)");
      v.strings.reserve(len);
      for (uint64_t i = 0; i < len; ++i)
        v.strings.push_back(str(what + "[" + std::to_string(i) + "]"));
      return v;
    }
    if (et == WO_VALUE_ARRAY) {
      if (depth >= 4)
        fail(what + " at offset " + hex(at) +
             ": expected arrays nested at most 4 deep, found deeper nesting");
      if (len > left / 12)
        fail(what + " at offset " + hex(at) + ": array of " + std::to_string(len) +
             " arrays cannot fit in the " + std::to_string(left) + " bytes left");
      for (uint64_t i = 0; i < len; ++i)
        read_value(WO_VALUE_ARRAY, what + "[" + std::to_string(i) + "]", depth + 1);
      return v;
    }
    fail(what + " at offset " + hex(at) + ": expected an array element type 0..12, found " +
         std::to_string(et));
  }

  void read_kv(uint64_t i) {
    KeyValue kv;
    kv.offset = pos_;
    kv.key = str("metadata key #" + std::to_string(i));
    check_name(kv.key, "metadata key #" + std::to_string(i), kv.offset);
    const std::string what = "metadata key " + printable(kv.key);
    if (f_.kv_index_.count(kv.key))
      fail(what + " at offset " + hex(kv.offset) +
           ": expected unique keys, found a second one (first at offset " +
           hex(f_.kvs_[f_.kv_index_[kv.key]].offset) + ")");
    const uint32_t type = u32(pos_, what + " value type");
    pos_ += 4;
    kv.value = read_value(type, what, 0);
    f_.kv_index_.emplace(kv.key, f_.kvs_.size());
    f_.kvs_.push_back(std::move(kv));
  }

  void read_alignment() {
    const Value *v = f_.find("general.alignment");
    if (!v) return;
    const KeyValue &kv = f_.kvs_[f_.kv_index_.at("general.alignment")];
    if (v->type != WO_VALUE_U32)
      fail("metadata key 'general.alignment' at offset " + hex(kv.offset) + ": expected type u32, found " +
           value_type_name(v->type));
    uint32_t a;
    std::memcpy(&a, v->data, 4);
    if (a == 0 || (a & (a - 1)) != 0)
      fail("metadata key 'general.alignment' at offset " + hex(kv.offset) +
           ": expected a power of two, found " + std::to_string(a));
    f_.alignment_ = a;
  }

  void read_tensor_info(uint64_t i) {
    TensorInfo t;
    t.info_offset = pos_;
    std::string_view name = str("tensor #" + std::to_string(i) + " name");
    check_name(name, "tensor #" + std::to_string(i) + " name", t.info_offset);
    const std::string what = "tensor " + printable(name);
    if (f_.tensor_index_.count(name))
      fail(what + " at offset " + hex(t.info_offset) +
           ": expected unique tensor names, found a second one (first at offset " +
           hex(f_.tensors_[f_.tensor_index_[name]].info_offset) + ")");
    t.name = std::string(name);
    const uint64_t dims_at = pos_;
    t.n_dims = u32(pos_, what + " n_dims");
    pos_ += 4;
    if (t.n_dims < 1 || t.n_dims > 4)
      fail(what + " n_dims at offset " + hex(dims_at) + ": expected 1..4, found " + std::to_string(t.n_dims));
    uint64_t elems = 1;
    for (uint32_t k = 0; k < t.n_dims; ++k) {
      const uint64_t at = pos_;
      const uint64_t ne = u64(pos_, what + " ne[" + std::to_string(k) + "]");
      pos_ += 8;
      if (ne < 1 || ne > static_cast<uint64_t>(INT64_MAX))
        fail(what + " ne[" + std::to_string(k) + "] at offset " + hex(at) + ": expected 1.." +
             std::to_string(INT64_MAX) + ", found " + std::to_string(ne));
      if (elems > static_cast<uint64_t>(INT64_MAX) / ne)
        fail(what + " ne[" + std::to_string(k) + "] at offset " + hex(at) +
             ": element count overflows int64 (" + std::to_string(elems) + " x " + std::to_string(ne) + ")");
      elems *= ne;
      t.ne[k] = static_cast<int64_t>(ne);
    }
    const uint64_t type_at = pos_;
    t.type = u32(pos_, what + " type");
    pos_ += 4;
    const ggml::TypeInfo *ti = ggml::type_info(t.type);
    if (!ti) {
      const bool removed = t.type < ggml::kTypeCount;
      fail(what + " type at offset " + hex(type_at) + ": expected a known ggml type id, found " +
           std::to_string(t.type) +
           (removed ? std::string(" (") + ggml::detail::kTypes[t.type].name + ", removed from the format)"
                    : ""));
    }
    if (t.ne[0] % ti->block_elems != 0)
      fail(what + " ne[0] at offset " + hex(dims_at + 4) + ": expected a multiple of " +
           std::to_string(ti->block_elems) + " (the " + ti->name + " block size), found " +
           std::to_string(t.ne[0]));
    t.nb1 = static_cast<uint64_t>(t.ne[0]) / ti->block_elems * ti->block_bytes;
    const uint64_t rows = elems / static_cast<uint64_t>(t.ne[0]);
    if (t.nb1 != 0 && rows > UINT64_MAX / t.nb1)
      fail(what + " at offset " + hex(t.info_offset) + ": byte size overflows 64 bits");
    t.nbytes = t.nb1 * rows;
    const uint64_t off_at = pos_;
    t.offset = u64(pos_, what + " data offset");
    pos_ += 8;
    if (t.offset % f_.alignment_ != 0)
      fail(what + " data offset at offset " + hex(off_at) + ": expected a multiple of the alignment " +
           std::to_string(f_.alignment_) + ", found " + hex(t.offset));
    // The index is keyed by the name's bytes in the mapping, which never move.
    f_.tensor_index_.emplace(name, f_.tensors_.size());
    f_.tensors_.push_back(std::move(t));
  }

  void check_tensor_data() {
    auto &ts = f_.tensors_;
    if (ts.empty()) {
      f_.data_offset_ = std::min(f_.data_offset_, n_); // vocab-only files may end before the padding
      return;
    }
    if (f_.data_offset_ > n_)
      fail("data section: expected to start at offset " + hex(f_.data_offset_) +
           " (after the tensor infos, aligned to " + std::to_string(f_.alignment_) + "), found file size " +
           hex(n_));
    std::vector<size_t> order(ts.size());
    for (size_t i = 0; i < ts.size(); ++i) {
      order[i] = i;
      TensorInfo &t = ts[i];
      const uint64_t rel = t.offset;
      if (rel > n_ - f_.data_offset_ || t.nbytes > n_ - f_.data_offset_ - rel) {
        const uint64_t start = f_.data_offset_ + std::min(rel, n_);
        fail("tensor " + printable(t.name) + ": data [" + hex(start) + ", " +
             (t.nbytes > UINT64_MAX - start ? std::string("beyond 2^64") : hex(start + t.nbytes)) +
             ") ends past file size " + hex(n_) + " (info at offset " + hex(t.info_offset) + ")");
      }
      t.offset = f_.data_offset_ + rel;
    }
    std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return ts[a].offset < ts[b].offset; });
    for (size_t k = 1; k < order.size(); ++k) {
      const TensorInfo &p = ts[order[k - 1]], &c = ts[order[k]];
      if (c.offset < p.offset + p.nbytes)
        fail("tensor " + printable(c.name) + ": data [" + hex(c.offset) + ", " + hex(c.offset + c.nbytes) +
             ") overlaps tensor " + printable(p.name) + " data [" + hex(p.offset) + ", " +
             hex(p.offset + p.nbytes) + "); expected disjoint ranges");
    }
  }

  File &f_;
  const OpenOptions &opts_;
  const uint8_t *d_;
  uint64_t n_;
  uint64_t pos_ = 0;
};

// ---------------------------------------------------------------------------------------------

bool Value::is_integer() const {
  return (type >= WO_VALUE_U8 && type <= WO_VALUE_I32) || type == WO_VALUE_U64 || type == WO_VALUE_I64;
}

void Value::widen(int64_t &i64, uint64_t &u64, bool &negative) const {
  auto rd = [&](auto tag) {
    decltype(tag) x;
    std::memcpy(&x, data, sizeof x);
    return x;
  };
  int64_t s = 0;
  uint64_t u = 0;
  bool is_signed = false;
  switch (type) {
  case WO_VALUE_U8:
  case WO_VALUE_BOOL: u = rd(uint8_t{}); break;
  case WO_VALUE_U16: u = rd(uint16_t{}); break;
  case WO_VALUE_U32: u = rd(uint32_t{}); break;
  case WO_VALUE_U64: u = rd(uint64_t{}); break;
  case WO_VALUE_I8: s = rd(int8_t{}), is_signed = true; break;
  case WO_VALUE_I16: s = rd(int16_t{}), is_signed = true; break;
  case WO_VALUE_I32: s = rd(int32_t{}), is_signed = true; break;
  case WO_VALUE_I64: s = rd(int64_t{}), is_signed = true; break;
  default: break;
  }
  if (is_signed) {
    i64 = s;
    u64 = static_cast<uint64_t>(s);
    negative = s < 0;
  } else {
    u64 = u;
    i64 = static_cast<int64_t>(u);
    negative = false;
  }
}

double Value::as_double() const {
  if (type == WO_VALUE_F32) {
    float x;
    std::memcpy(&x, data, 4);
    return x;
  }
  if (type == WO_VALUE_F64) {
    double x;
    std::memcpy(&x, data, 8);
    return x;
  }
  int64_t i;
  uint64_t u;
  bool neg;
  widen(i, u, neg);
  return neg ? static_cast<double>(i) : static_cast<double>(u);
}

// ---------------------------------------------------------------------------------------------

File::~File() = default;

std::unique_ptr<File> File::open(const std::string &location, const OpenOptions &opts) {
  ModelLocation loc = parse_location(location);
  std::unique_ptr<MappedRegion> region = map_location(loc, opts.model_root);
  std::unique_ptr<File> f(new File());
  f->source_ = location;
  f->data_ = region->data();
  f->size_ = region->size();
  f->mapping_ = std::move(region);
  f->parse_all(opts);
  return f;
}

std::unique_ptr<File> File::parse(const uint8_t *data, uint64_t size, const OpenOptions &opts,
                                  const std::string &source) {
  static const uint8_t empty = 0;
  std::unique_ptr<File> f(new File());
  f->source_ = source;
  f->data_ = data ? data : &empty;
  f->size_ = data ? size : 0;
  f->parse_all(opts);
  return f;
}

void File::parse_all(const OpenOptions &opts) { Parser(*this, opts).run(); }

const TensorInfo *File::find_tensor(std::string_view name) const {
  auto it = tensor_index_.find(name);
  return it == tensor_index_.end() ? nullptr : &tensors_[it->second];
}

const Value *File::find(std::string_view key) const {
  auto it = kv_index_.find(key);
  return it == kv_index_.end() ? nullptr : &kvs_[it->second].value;
}

namespace {
[[noreturn]] void mismatch(const File &f, std::string_view key, const char *expected, const Value &v) {
  std::string found = value_type_name(v.type);
  if (v.is_array()) found = std::string("array of ") + value_type_name(v.array_type);
  throw Error(WO_ERR_TYPE_MISMATCH, f.source() + ": metadata key '" + std::string(key) + "' at offset " +
                                        hex(v.offset) + ": expected " + expected + ", found " + found);
}
const Value &require(const File &f, std::string_view key) {
  const Value *v = f.find(key);
  if (!v)
    throw Error(WO_ERR_NOT_FOUND,
                f.source() + ": metadata key '" + std::string(key) + "' is required but absent");
  return *v;
}
} // namespace

std::string_view File::get_string(std::string_view key) const {
  const Value &v = require(*this, key);
  if (v.type != WO_VALUE_STRING) mismatch(*this, key, "string", v);
  return v.str();
}

int64_t File::get_int(std::string_view key) const {
  const Value &v = require(*this, key);
  if (!v.is_integer()) mismatch(*this, key, "integer", v);
  int64_t i;
  uint64_t u;
  bool neg;
  v.widen(i, u, neg);
  if (!neg && u > static_cast<uint64_t>(INT64_MAX))
    throw Error(WO_ERR_TYPE_MISMATCH, source_ + ": metadata key '" + std::string(key) +
                                          "': expected a value that fits int64, found " + std::to_string(u));
  return i;
}

uint64_t File::get_uint(std::string_view key) const {
  const Value &v = require(*this, key);
  if (!v.is_integer()) mismatch(*this, key, "integer", v);
  int64_t i;
  uint64_t u;
  bool neg;
  v.widen(i, u, neg);
  if (neg)
    throw Error(WO_ERR_TYPE_MISMATCH, source_ + ": metadata key '" + std::string(key) +
                                          "': expected a non-negative value, found " + std::to_string(i));
  return u;
}

double File::get_float(std::string_view key) const {
  const Value &v = require(*this, key);
  if (!v.is_float() && !v.is_integer()) mismatch(*this, key, "float", v);
  return v.as_double();
}

bool File::get_bool(std::string_view key) const {
  const Value &v = require(*this, key);
  if (v.type != WO_VALUE_BOOL) mismatch(*this, key, "bool", v);
  return v.as_bool();
}

const Value &File::get_array(std::string_view key, int elem_type) const {
  const Value &v = require(*this, key);
  if (!v.is_array()) mismatch(*this, key, "array", v);
  if (elem_type >= 0 && v.array_type != elem_type) {
    std::string exp = std::string("array of ") + value_type_name(elem_type);
    mismatch(*this, key, exp.c_str(), v);
  }
  return v;
}

std::optional<std::string_view> File::find_string(std::string_view key) const {
  if (!has(key)) return std::nullopt;
  return get_string(key);
}
std::optional<int64_t> File::find_int(std::string_view key) const {
  if (!has(key)) return std::nullopt;
  return get_int(key);
}
std::optional<double> File::find_float(std::string_view key) const {
  if (!has(key)) return std::nullopt;
  return get_float(key);
}
std::optional<bool> File::find_bool(std::string_view key) const {
  if (!has(key)) return std::nullopt;
  return get_bool(key);
}

std::string File::architecture() const { return std::string(get_string("general.architecture")); }

std::string File::arch_key(std::string_view suffix) const {
  return architecture() + "." + std::string(suffix);
}

} // namespace wo::gguf
