// The GGUF side of the wo_host services: metadata and tensor lookup over a File, in the C ABI's
// terms. The engine's full host fills its wo_host with these; MetaHost is a complete wo_host for
// commands that have no device (inspect, tokenize): device services answer WO_ERR_NO_DEVICE.
#pragma once

#include "gguf/gguf_file.hpp"

#include <worker/sdk.h>

#include <functional>
#include <string>
#include <unordered_map>

namespace wo::gguf {

// wo_host.meta_get semantics (sdk.h): integers and bools fill i64 + u64 + is_negative, floats f64,
// strings str, arrays array_type/array_len (+ array_data for non-string arrays). `out->struct_size`
// tells which fields the caller knows; only those are written. WO_ERR_NOT_FOUND when absent,
// WO_ERR_INVALID_ARGUMENT for null arguments.
wo_status meta_get(const File &f, const char *key, wo_value *out);

// wo_host.meta_array_str: element i of an array of strings. WO_ERR_NOT_FOUND (no key),
// WO_ERR_TYPE_MISMATCH (not an array of strings), WO_ERR_INVALID_ARGUMENT (i out of range).
wo_status meta_array_str(const File &f, const char *key, uint64_t i, wo_str *out);

// The tensor as the ABI sees it: host_data points into the mapping, data (device) is NULL.
// `name` points at t.name, so t must outlive the result.
wo_tensor to_wo_tensor(const File &f, const TensorInfo &t);

// A fully populated wo_host over one File, for device-less commands. Not copyable or movable
// (plugins keep the wo_host pointer and the wo_tensor pointers it returns).
class MetaHost {
public:
  // Messages plugins log go to `log` (default: the narration log, event "plugin_log").
  using LogFn = std::function<void(wo_log_level, const char *)>;
  explicit MetaHost(const File &f, LogFn log = {});
  MetaHost(const MetaHost &) = delete;
  MetaHost &operator=(const MetaHost &) = delete;

  const wo_host *host() const { return &host_; }
  const File &file() const { return file_; }
  // Same as host()->tensor: NULL when absent.
  const wo_tensor *tensor(const char *name) const;
  // What wo_host.log does: the LogFn given, else the narration log.
  void log_message(wo_log_level level, const char *msg) const;

private:
  const File &file_;
  LogFn log_;
  wo_host host_{};
  std::unordered_map<std::string, wo_tensor> tensors_; // node-based: stable addresses
};

} // namespace wo::gguf
