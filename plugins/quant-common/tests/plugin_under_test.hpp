// The shared plugin tests (conformance_test.cpp, gpu_linear_test.cu) run against one codec .so;
// each plugin's tests/ folder says which one and what it must serve.
#pragma once

#include <worker/sdk.h>

#include <dlfcn.h>

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace wo::quant::testing {

struct PluginUnderTest {
  const char *file; // "quant-ggml.so", in the build's plugin folder
  const char *name; // descriptor name
  std::vector<uint32_t> types;
};
extern const PluginUnderTest kPlugin;

inline std::string plugin_dir() {
  const char *e = std::getenv("WORKER_PLUGIN_DIR");
  return e && *e ? e : WORKER_PLUGIN_DIR_DEFAULT;
}

// dlopen the plugin and resolve its Boost.DLL alias (a const void* holding the entry address).
class LoadedCodec {
public:
  LoadedCodec() {
    path_ = plugin_dir() + "/" + kPlugin.file;
    lib_ = dlopen(path_.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!lib_) throw std::runtime_error("dlopen " + path_ + ": " + dlerror());
    auto *alias = static_cast<const void *const *>(dlsym(lib_, WORKER_PLUGIN_ENTRY_NAME));
    if (!alias) throw std::runtime_error(path_ + ": no symbol " WORKER_PLUGIN_ENTRY_NAME);
    entry_ = reinterpret_cast<wo_plugin_entry_fn>(*alias);
  }
  ~LoadedCodec() {
    if (lib_) dlclose(lib_);
  }
  LoadedCodec(const LoadedCodec &) = delete;
  LoadedCodec &operator=(const LoadedCodec &) = delete;

  wo_plugin_entry_fn entry() const { return entry_; }
  const wo_plugin *descriptor() const { return entry_(WORKER_SDK_ABI_MAJOR, WORKER_SDK_ABI_MINOR); }
  const wo_quant_v1 *codec() const {
    const wo_plugin *d = descriptor();
    return d ? static_cast<const wo_quant_v1 *>(d->vtable) : nullptr;
  }
  const std::string &path() const { return path_; }

private:
  std::string path_;
  void *lib_ = nullptr;
  wo_plugin_entry_fn entry_ = nullptr;
};

} // namespace wo::quant::testing
