// A GGUF v3 writer for generated models: metadata of every GGUF value type, tensor infos, and a
// data section that many threads fill in place (the file is sized first, then each tensor's bytes
// are written with pwrite at their final offset — no second pass, no copy of the whole model).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <variant>
#include <vector>

namespace wo::synth {

struct MetaArray {
  uint32_t elem_type; // GGUF value type of the elements
  std::vector<std::string> strings;
  std::vector<uint8_t> raw; // numeric elements, packed little-endian
  uint64_t count = 0;
};

// One metadata value: (GGUF type id, payload).
struct MetaValue {
  uint32_t type;
  std::variant<uint64_t, int64_t, double, bool, std::string, MetaArray> v;
};

struct TensorSpec {
  std::string name;
  uint32_t ggml_type;
  std::vector<int64_t> ne; // ne[0] = row length
  uint64_t nbytes = 0;     // filled by plan()
  uint64_t offset = 0;     // relative to the data section, filled by plan()
};

class GgufWriter {
public:
  explicit GgufWriter(uint64_t alignment = 32) : alignment_(alignment) {}

  void set(const std::string &key, MetaValue value); // replaces an existing key, keeps order
  void set_str(const std::string &key, const std::string &v);
  void set_u32(const std::string &key, uint32_t v);
  void set_i32(const std::string &key, int32_t v);
  void set_f32(const std::string &key, float v);
  void set_bool(const std::string &key, bool v);
  void set_str_array(const std::string &key, std::vector<std::string> v);
  void set_i32_array(const std::string &key, const std::vector<int32_t> &v);
  void set_f32_array(const std::string &key, const std::vector<float> &v);
  bool has(const std::string &key) const;

  void add_tensor(const std::string &name, uint32_t ggml_type, std::vector<int64_t> ne);
  const std::vector<TensorSpec> &tensors() const { return tensors_; }

  // Lay out the file: compute tensor sizes/offsets and the header bytes. Throws on a row length
  // that is not a multiple of its type's block size.
  void plan();
  uint64_t file_size() const { return data_start_ + data_bytes_; }
  uint64_t data_start() const { return data_start_; }

  // Create `path` at its final size and write the header. Tensor data is then written with
  // write_tensor_chunk from any thread.
  void open(const std::string &path);
  void write_at(uint64_t file_offset, const void *data, size_t bytes) const;
  void close();

private:
  uint64_t alignment_;
  std::vector<std::pair<std::string, MetaValue>> meta_;
  std::vector<TensorSpec> tensors_;
  std::vector<uint8_t> header_;
  uint64_t data_start_ = 0, data_bytes_ = 0;
  int fd_ = -1;
};

} // namespace wo::synth
