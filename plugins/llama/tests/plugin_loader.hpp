// Loads the built llama.so the way the host does (its one exported entry alias) for the tests.
#pragma once

#include <worker/sdk.h>

#include <gtest/gtest.h>

#include <dlfcn.h>

#include <cstdlib>
#include <string>

namespace wo::llama::test {

inline std::string llama_plugin_path() {
  const char *dir = std::getenv("WORKER_PLUGIN_DIR");
  return std::string(dir && *dir ? dir : WORKER_PLUGIN_DIR_DEFAULT) + "/llama.so";
}

// The plugin's wo_arch_v1, or nullptr with a test failure naming the path and dlerror().
inline const wo_arch_v1 *load_llama_vtable() {
  static void *lib = nullptr;
  if (!lib) lib = dlopen(llama_plugin_path().c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    ADD_FAILURE() << "dlopen " << llama_plugin_path() << ": " << dlerror();
    return nullptr;
  }
  // Boost.DLL's alias is a variable holding the entry function's address.
  void *sym = dlsym(lib, WORKER_PLUGIN_ENTRY_NAME);
  if (!sym) {
    ADD_FAILURE() << llama_plugin_path() << ": no symbol " << WORKER_PLUGIN_ENTRY_NAME;
    return nullptr;
  }
  auto entry = *reinterpret_cast<wo_plugin_entry_fn *>(sym);
  const wo_plugin *d = entry(WORKER_SDK_ABI_MAJOR, WORKER_SDK_ABI_MINOR);
  if (!d || d->kind != WO_PLUGIN_ARCHITECTURE) {
    ADD_FAILURE() << llama_plugin_path() << ": expected an architecture descriptor";
    return nullptr;
  }
  return static_cast<const wo_arch_v1 *>(d->vtable);
}

} // namespace wo::llama::test
