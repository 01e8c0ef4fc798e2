// Where a model comes from (spec WORK-3030, ML-2010..2012, ML-8010/8011): a plain path, `file:/path`,
// or `ram:NAME`, a POSIX shared-memory segment another process staged. Resolving checks the name
// (no `..` components; ram names only letters, digits, '-', '_'), the --model-root containment
// (after symlinks), and gives missing, unreadable and directory their own messages.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

namespace wo::gguf {

struct ModelLocation {
  enum class Kind { path, shm };
  Kind kind = Kind::path;
  std::string text; // as given, for messages
  std::string path; // Kind::path: the file path (file: prefix removed)
  std::string shm;  // Kind::shm: the segment name without the leading '/'
};

// Parse without touching the file system. Throws wo::Error(WO_ERR_INVALID_ARGUMENT).
ModelLocation parse_location(const std::string &text);

// A read-only mapping of a whole file or segment.
class MappedRegion {
public:
  MappedRegion(const uint8_t *data, uint64_t size) : data_(data), size_(size) {}
  ~MappedRegion();
  MappedRegion(const MappedRegion &) = delete;
  MappedRegion &operator=(const MappedRegion &) = delete;
  const uint8_t *data() const { return data_; }
  uint64_t size() const { return size_; }

private:
  const uint8_t *data_;
  uint64_t size_;
};

// Resolve and map. An empty file maps to size 0 (data() non-null). model_root empty = no check.
// Throws wo::Error (WO_ERR_INVALID_ARGUMENT / WO_ERR_IO).
std::unique_ptr<MappedRegion> map_location(const ModelLocation &loc, const std::string &model_root);

} // namespace wo::gguf
