// Load one built plugin `.so` for a test, the way the host does (Boost.DLL, RTLD_NOW), without the
// host's registry: a third party can test their plugin before any worker-orcd exists.
//
//   auto plugin = wo::testing::LoadedPlugin::load(wo::testing::plugin_path("quant-ggml"));
//   const wo_plugin *d = plugin.descriptor();          // entry(this SDK's major, minor)
#pragma once

#include <worker/sdk.h>

#include <cstdlib>
#include <memory>
#include <string>

namespace wo::testing {

class LoadedPlugin {
public:
  // Throws std::runtime_error naming the path when the file cannot be loaded or has no
  // worker_plugin_entry alias.
  static LoadedPlugin load(const std::string &path);

  LoadedPlugin(LoadedPlugin &&) noexcept;
  LoadedPlugin &operator=(LoadedPlugin &&) noexcept;
  ~LoadedPlugin();

  wo_plugin_entry_fn entry() const { return entry_; }
  // entry(WORKER_SDK_ABI_MAJOR, WORKER_SDK_ABI_MINOR); may be NULL.
  const wo_plugin *descriptor() const { return entry_(WORKER_SDK_ABI_MAJOR, WORKER_SDK_ABI_MINOR); }
  const std::string &path() const { return path_; }

private:
  LoadedPlugin() = default;
  struct Lib;
  std::unique_ptr<Lib> lib_;
  wo_plugin_entry_fn entry_ = nullptr;
  std::string path_;
};

// Where the project's plugins are: $WORKER_PLUGIN_DIR, else the build's plugin folder
// (WORKER_PLUGIN_DIR_DEFAULT, defined for tests by worker_add_test).
inline std::string plugin_dir() {
  if (const char *e = std::getenv("WORKER_PLUGIN_DIR"); e && *e) return e;
#ifdef WORKER_PLUGIN_DIR_DEFAULT
  return WORKER_PLUGIN_DIR_DEFAULT;
#else
  return "plugins";
#endif
}
// <plugin_dir()>/<name>.so
inline std::string plugin_path(const std::string &name) { return plugin_dir() + "/" + name + ".so"; }

} // namespace wo::testing
