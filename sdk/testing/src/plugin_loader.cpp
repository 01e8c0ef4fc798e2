#include <worker/testing/plugin_loader.hpp>

#include <boost/dll/shared_library.hpp>

#include <dlfcn.h>

#include <cstdint>
#include <stdexcept>
#include <system_error>

namespace wo::testing {

struct LoadedPlugin::Lib {
  boost::dll::shared_library lib;
};

LoadedPlugin LoadedPlugin::load(const std::string &path) {
  LoadedPlugin p;
  p.path_ = path;
  p.lib_ = std::make_unique<Lib>();
  std::error_code ec;
  p.lib_->lib.load(path, ec, boost::dll::load_mode::rtld_now | boost::dll::load_mode::rtld_local);
  if (ec || !p.lib_->lib.is_loaded()) {
    const char *why = dlerror(); // Boost keeps only an errno-like code; dlerror has the loader's text
    throw std::runtime_error("plugin '" + path + "': dlopen failed: " +
                             (why ? std::string(why) : ec ? ec.message() : std::string("unknown error")));
  }
  if (!p.lib_->lib.has(WORKER_PLUGIN_ENTRY_NAME))
    throw std::runtime_error("plugin '" + path + "': expected the symbol '" WORKER_PLUGIN_ENTRY_NAME
                             "' (export it with WORKER_PLUGIN), found none");
  const void *slot = p.lib_->lib.get<const void *>(WORKER_PLUGIN_ENTRY_NAME);
  p.entry_ = reinterpret_cast<wo_plugin_entry_fn>(reinterpret_cast<intptr_t>(slot));
  if (!p.entry_) throw std::runtime_error("plugin '" + path + "': the '" WORKER_PLUGIN_ENTRY_NAME "' alias is NULL");
  return p;
}

LoadedPlugin::LoadedPlugin(LoadedPlugin &&) noexcept = default;
LoadedPlugin &LoadedPlugin::operator=(LoadedPlugin &&) noexcept = default;
LoadedPlugin::~LoadedPlugin() = default;

} // namespace wo::testing
