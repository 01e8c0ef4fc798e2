// The host's one GGUF reader: memory-mapped, zero-copy, strict.
//
// File::open maps a model (a path, `file:/path`, or `ram:NAME` for a POSIX shared-memory segment)
// and validates the whole header before anything else may look at it: magic, version (2 or 3),
// counts, every string/array length against the bytes left, UTF-8 and uniqueness of key and tensor
// names, dims and element counts, known type ids, whole blocks per row, aligned data offsets, and
// every tensor's bytes inside the file and disjoint from the others. A failure throws wo::Error
// whose text names the item, what was expected, what was found, and the byte offset.
//
// After open, the File is immutable: every view it hands out (names, values, tensor bytes) points
// into the mapping and stays valid for the File's lifetime.
#pragma once

#include <worker/sdk.h>
#include <worker/sdk.hpp>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace wo::gguf {

class MappedRegion; // model_location.hpp

struct OpenOptions {
  uint64_t max_tensors = 10000; // more tensors than this is an error (a corrupt count, usually)
  std::string model_root;       // when set, the model must resolve (realpath) inside this folder
};

struct TensorInfo {
  std::string name;
  uint32_t type = 0;            // ggml type id (see worker/ggml_types.hpp)
  uint32_t n_dims = 0;          // 1..4
  int64_t ne[4] = {1, 1, 1, 1}; // ne[0] is the row length; unused dims are 1
  uint64_t offset = 0;          // absolute file offset of the data
  uint64_t nbytes = 0;          // bytes of the data
  uint64_t nb1 = 0;             // bytes of one row (ne[0] elements)
  uint64_t info_offset = 0;     // file offset of this tensor's info record (for messages)

  uint64_t n_elements() const {
    return static_cast<uint64_t>(ne[0]) * static_cast<uint64_t>(ne[1]) * static_cast<uint64_t>(ne[2]) *
           static_cast<uint64_t>(ne[3]);
  }
};

// A metadata value: a view into the mapped file.
struct Value {
  wo_value_type type = WO_VALUE_U8;
  uint64_t offset = 0;                    // file offset of the payload (after the type tag)
  const uint8_t *data = nullptr;          // scalar: its bytes; string: its chars; array: first element
  uint64_t len = 0;                       // string: bytes; array: number of elements; scalar: byte size
  wo_value_type array_type = WO_VALUE_U8; // arrays only
  std::vector<std::string_view> strings;  // arrays of strings only: every element

  bool is_integer() const; // u8..i32, u64, i64 (not bool)
  bool is_float() const { return type == WO_VALUE_F32 || type == WO_VALUE_F64; }
  bool is_array() const { return type == WO_VALUE_ARRAY; }
  std::string_view str() const { return {reinterpret_cast<const char *>(data), static_cast<size_t>(len)}; }
  // Integer value widened; `negative` tells whether the u64 view is meaningful.
  void widen(int64_t &i64, uint64_t &u64, bool &negative) const;
  double as_double() const; // floats and integers
  bool as_bool() const { return data[0] != 0; }
};

struct KeyValue {
  std::string_view key;
  uint64_t offset = 0; // file offset of the key's length field
  Value value;
};

class File {
public:
  // Resolve, map and validate a model. Throws wo::Error: WO_ERR_INVALID_ARGUMENT for a bad location
  // (`..`, outside --model-root, bad ram: name), WO_ERR_IO (missing, unreadable, directory),
  // WO_ERR_FORMAT (not GGUF, or a GGUF that fails validation).
  static std::unique_ptr<File> open(const std::string &location, const OpenOptions &opts = {});

  // Validate bytes that the caller keeps alive for the File's lifetime (fuzzing, tests).
  static std::unique_ptr<File> parse(const uint8_t *data, uint64_t size, const OpenOptions &opts = {},
                                     const std::string &source = "<memory>");

  ~File();
  File(const File &) = delete;
  File &operator=(const File &) = delete;

  const std::string &source() const { return source_; } // the location as given
  uint32_t version() const { return version_; }
  uint64_t alignment() const { return alignment_; }
  uint64_t data_offset() const { return data_offset_; }
  uint64_t size() const { return size_; }
  const uint8_t *bytes() const { return data_; }

  const std::vector<TensorInfo> &tensors() const { return tensors_; }
  const TensorInfo *find_tensor(std::string_view name) const;
  const uint8_t *tensor_data(const TensorInfo &t) const { return data_ + t.offset; }

  // ---- metadata ----
  const std::vector<KeyValue> &metadata() const { return kvs_; }
  const Value *find(std::string_view key) const; // nullptr when absent
  bool has(std::string_view key) const { return find(key) != nullptr; }

  // Typed getters: throw WO_ERR_NOT_FOUND when absent, WO_ERR_TYPE_MISMATCH when of another type
  // (integers of any width/sign convert when the value fits; floats also accept integers).
  std::string_view get_string(std::string_view key) const;
  int64_t get_int(std::string_view key) const;
  uint64_t get_uint(std::string_view key) const;
  double get_float(std::string_view key) const;
  bool get_bool(std::string_view key) const;
  // An array value; when elem_type >= 0 its elements must be of that type.
  const Value &get_array(std::string_view key, int elem_type = -1) const;

  // Same, but std::nullopt when the key is absent (a wrong type still throws).
  std::optional<std::string_view> find_string(std::string_view key) const;
  std::optional<int64_t> find_int(std::string_view key) const;
  std::optional<double> find_float(std::string_view key) const;
  std::optional<bool> find_bool(std::string_view key) const;

  // general.architecture (throws WO_ERR_NOT_FOUND when absent).
  std::string architecture() const;
  // "{arch}.suffix", e.g. arch_key("context_length") -> "llama.context_length".
  std::string arch_key(std::string_view suffix) const;

private:
  File() = default;
  void parse_all(const OpenOptions &opts);

  std::string source_;
  std::unique_ptr<MappedRegion> mapping_;
  const uint8_t *data_ = nullptr;
  uint64_t size_ = 0;
  uint32_t version_ = 0;
  uint64_t alignment_ = 32;
  uint64_t data_offset_ = 0;
  std::vector<KeyValue> kvs_;
  std::unordered_map<std::string_view, size_t> kv_index_;
  std::vector<TensorInfo> tensors_;
  std::unordered_map<std::string_view, size_t> tensor_index_;

  friend class Parser;
};

// "0x1a2b": how messages print offsets and sizes.
std::string hex(uint64_t v);

} // namespace wo::gguf
