// Loads the built gpt.so the way the host does (its one exported entry, ABI handshake) so the
// tests exercise the real C boundary, not the C++ inside.
#pragma once

#include <worker/sdk.h>

#include <dlfcn.h>

#include <cstdlib>
#include <stdexcept>
#include <string>

namespace wo::gpt::testing {

class GptPlugin {
public:
  GptPlugin() {
    const char *env = std::getenv("WORKER_PLUGIN_DIR");
    const std::string path = std::string(env && *env ? env : WORKER_PLUGIN_DIR_DEFAULT) + "/gpt.so";
    lib_ = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!lib_) throw std::runtime_error("dlopen " + path + ": " + dlerror());
    // Boost.DLL's alias is a variable holding the entry function's address.
    void *sym = dlsym(lib_, WORKER_PLUGIN_ENTRY_NAME);
    if (!sym) throw std::runtime_error(path + " exports no " WORKER_PLUGIN_ENTRY_NAME);
    entry_ = *reinterpret_cast<wo_plugin_entry_fn *>(sym);
    desc_ = entry_(WORKER_SDK_ABI_MAJOR, WORKER_SDK_ABI_MINOR);
    if (!desc_) throw std::runtime_error(path + " refused ABI " + std::to_string(WORKER_SDK_ABI_MAJOR));
    vt_ = static_cast<const wo_arch_v1 *>(desc_->vtable);
  }
  ~GptPlugin() {
    if (lib_) dlclose(lib_);
  }
  GptPlugin(const GptPlugin &) = delete;
  GptPlugin &operator=(const GptPlugin &) = delete;

  wo_plugin_entry_fn entry() const { return entry_; }
  const wo_plugin &desc() const { return *desc_; }
  const wo_arch_v1 &vt() const { return *vt_; }

private:
  void *lib_ = nullptr;
  wo_plugin_entry_fn entry_ = nullptr;
  const wo_plugin *desc_ = nullptr;
  const wo_arch_v1 *vt_ = nullptr;
};

} // namespace wo::gpt::testing
