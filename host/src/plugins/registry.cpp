#include "plugins/registry.hpp"

#include "observe/log.hpp"
#include "plugins/elf_check.hpp"

#include <worker/ggml_types.hpp>
#include <worker/sdk.hpp>

// library_info.hpp in Boost 1.74 uses these without including them.
#include <string>
#include <vector>

#include <boost/dll/library_info.hpp>
#include <boost/dll/shared_library.hpp>

#include <dlfcn.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <functional>
#include <system_error>

namespace wo::plugins {
namespace fs = std::filesystem;

namespace {

std::string abi_string(uint32_t major, uint32_t minor) {
  return std::to_string(major) + "." + std::to_string(minor);
}

const std::string kHostAbi = abi_string(WORKER_SDK_ABI_MAJOR, WORKER_SDK_ABI_MINOR);

// The function pointers each kind's v1 vtable must set (the first NULL one, or empty).
#define WO_REQUIRE_FN(field)                                                                                 \
  do {                                                                                                       \
    if (!v->field) return #field;                                                                            \
  } while (0)

std::string missing_fn(const wo_arch_v1 *v) {
  WO_REQUIRE_FN(probe);
  WO_REQUIRE_FN(plan);
  WO_REQUIRE_FN(create);
  WO_REQUIRE_FN(destroy);
  WO_REQUIRE_FN(session_begin);
  WO_REQUIRE_FN(session_end);
  WO_REQUIRE_FN(forward);
  WO_REQUIRE_FN(last_error);
  return {};
}
std::string missing_fn(const wo_quant_v1 *v) {
  if (v->n_types == 0) return "types (n_types is 0: the codec serves no type)";
  WO_REQUIRE_FN(types);
  WO_REQUIRE_FN(dequantize_rows);
  WO_REQUIRE_FN(last_error);
  return {};
}
std::string missing_fn(const wo_tokenizer_v1 *v) {
  WO_REQUIRE_FN(probe);
  WO_REQUIRE_FN(create);
  WO_REQUIRE_FN(destroy);
  WO_REQUIRE_FN(encode);
  WO_REQUIRE_FN(token_bytes);
  WO_REQUIRE_FN(special_ids);
  WO_REQUIRE_FN(is_eog);
  WO_REQUIRE_FN(vocab_size);
  WO_REQUIRE_FN(kind);
  WO_REQUIRE_FN(last_error);
  return {};
}
#undef WO_REQUIRE_FN

const char *vtable_name(wo_plugin_kind kind) {
  switch (kind) {
  case WO_PLUGIN_ARCHITECTURE: return "wo_arch_v1";
  case WO_PLUGIN_QUANT: return "wo_quant_v1";
  case WO_PLUGIN_TOKENIZER: return "wo_tokenizer_v1";
  default: return "vtable";
  }
}

size_t vtable_min_size(wo_plugin_kind kind) {
  switch (kind) {
  case WO_PLUGIN_ARCHITECTURE: return offsetof(wo_arch_v1, decode_step); // 1.0's fields; 1.1 appended
  case WO_PLUGIN_QUANT: return offsetof(wo_quant_v1, linear_multi);      // 1.0's fields; 1.2 appended
  case WO_PLUGIN_TOKENIZER: return sizeof(wo_tokenizer_v1);
  default: return 0;
  }
}

// Why the vtable is unusable, or empty. Reads only what struct_size says is there.
std::string vtable_problem(wo_plugin_kind kind, const void *vtable) {
  if (!vtable) return "descriptor vtable is NULL";
  uint32_t size = 0;
  std::memcpy(&size, vtable, sizeof(size));
  if (size < vtable_min_size(kind))
    return std::string(vtable_name(kind)) + " struct_size " + std::to_string(size) + " is smaller than the " +
           std::to_string(vtable_min_size(kind)) + " bytes of its v1 fields";
  std::string missing;
  switch (kind) {
  case WO_PLUGIN_ARCHITECTURE: missing = missing_fn(static_cast<const wo_arch_v1 *>(vtable)); break;
  case WO_PLUGIN_QUANT: missing = missing_fn(static_cast<const wo_quant_v1 *>(vtable)); break;
  case WO_PLUGIN_TOKENIZER: missing = missing_fn(static_cast<const wo_tokenizer_v1 *>(vtable)); break;
  default: break;
  }
  if (!missing.empty()) return std::string(vtable_name(kind)) + "." + missing + " is NULL but required";
  return {};
}

// A metadata string for error messages, or "(absent)".
std::string meta_fact(const wo_host *host, const char *key) {
  if (!host || !host->meta_get) return "(no metadata)";
  wo_value v = wo::empty_value();
  if (host->meta_get(host->ctx, key, &v) != WO_OK) return "(absent)";
  if (v.type != WO_VALUE_STRING) return std::string("(a ") + wo::value_type_name(v.type) + ")";
  return "'" + std::string(v.str.data ? v.str.data : "", v.str.data ? v.str.len : 0) + "'";
}

std::string type_label(uint32_t ggml_type) {
  const auto *info = wo::ggml::type_info(ggml_type);
  return std::string(info ? info->name : "unknown type") + " (" + std::to_string(ggml_type) + ")";
}

} // namespace

struct Registry::Impl {
  struct Loaded {
    boost::dll::shared_library lib; // keeps the code mapped for the registry's life
    const wo_plugin *desc = nullptr;
    std::string path;
  };
  std::vector<Candidate> candidates;
  std::vector<Loaded> loaded; // accepted plugins, in scan order
  std::vector<std::string> dirs;

  const Loaded *loaded_of(const wo_plugin *p) const {
    for (const auto &l : loaded)
      if (l.desc == p) return &l;
    return nullptr;
  }
  std::string label(const wo_plugin *p) const {
    const Loaded *l = loaded_of(p);
    return "'" + std::string(p->name) + "' (" + (l ? l->path : std::string("?")) + ")";
  }
  std::string dirs_text() const {
    std::string s;
    for (const auto &d : dirs)
      s += (s.empty() ? "" : ", ") + d;
    return s.empty() ? "(no directory scanned)" : s;
  }

  void consider(const std::string &path);
  void reject(Candidate &c) {
    wo::observe::warn("plugin_rejected", {{"path", c.path}, {"name", c.name}, {"reason", c.reason}});
    candidates.push_back(c);
  }
};

void Registry::Impl::consider(const std::string &path) {
  Candidate c;
  c.path = path;

  // 1. Look before loading: a plugin lists its entry in the ELF section "worker".
  if (std::string problem = elf_problem(path); !problem.empty()) {
    c.reason = "not a loadable plugin: " + problem;
    return reject(c);
  }
  std::vector<std::string> symbols;
  try {
    symbols = boost::dll::library_info(path).symbols(WORKER_PLUGIN_SECTION_NAME);
  } catch (const std::exception &e) {
    c.reason = std::string("not a loadable plugin: reading its ELF symbols failed: ") + e.what();
    return reject(c);
  }
  if (std::find(symbols.begin(), symbols.end(), WORKER_PLUGIN_ENTRY_NAME) == symbols.end()) {
    c.reason = std::string("not a worker plugin: no '") + WORKER_PLUGIN_ENTRY_NAME +
               "' symbol in ELF section '" + WORKER_PLUGIN_SECTION_NAME + "' (found " +
               std::to_string(symbols.size()) +
               " symbols there; plugins export their entry with WORKER_PLUGIN from worker/sdk.hpp)";
    return reject(c);
  }

  // 2. Load. RTLD_NOW: an unresolved symbol fails here, with a message, not mid-inference.
  Loaded l;
  l.path = path;
  std::error_code ec;
  l.lib.load(path, ec, boost::dll::load_mode::rtld_now | boost::dll::load_mode::rtld_local);
  if (ec || !l.lib.is_loaded()) {
    const char *why = dlerror(); // Boost keeps only an errno-like code; dlerror has the loader's text
    c.reason = "unloadable: dlopen failed: " + std::string(why  ? why
                                                           : ec ? ec.message().c_str()
                                                                : "unknown error");
    return reject(c);
  }
  wo_plugin_entry_fn entry = nullptr;
  try {
    if (!l.lib.has(WORKER_PLUGIN_ENTRY_NAME)) throw std::runtime_error("symbol not found by dlsym");
    const void *slot = l.lib.get<const void *>(WORKER_PLUGIN_ENTRY_NAME);
    entry = reinterpret_cast<wo_plugin_entry_fn>(reinterpret_cast<intptr_t>(slot));
  } catch (const std::exception &e) {
    c.reason = std::string("unloadable: resolving '") + WORKER_PLUGIN_ENTRY_NAME + "' failed: " + e.what();
    return reject(c);
  }
  if (!entry) {
    c.reason =
        std::string("not a worker plugin: its '") + WORKER_PLUGIN_ENTRY_NAME + "' alias points to NULL";
    return reject(c);
  }

  // 3. Negotiate. The entry is C, but a careless plugin may still throw: never let it through.
  const wo_plugin *d = nullptr;
  try {
    d = entry(WORKER_SDK_ABI_MAJOR, WORKER_SDK_ABI_MINOR);
  } catch (...) {
    c.reason = "entry threw a C++ exception across the C ABI (host ABI " + kHostAbi + ")";
    return reject(c);
  }
  if (!d) {
    c.reason = "entry returned NULL for host ABI " + kHostAbi + " (the plugin does not serve this host)";
    return reject(c);
  }
  // 4. Validate, reading only the fields the descriptor's struct_size covers.
  if (WO_HAS_FIELD(wo_plugin, d->struct_size, abi_minor)) c.abi = abi_string(d->abi_major, d->abi_minor);
  if (!WO_HAS_FIELD(wo_plugin, d->struct_size, vtable)) {
    c.reason = "descriptor struct_size " + std::to_string(d->struct_size) + " is smaller than the " +
               std::to_string(offsetof(wo_plugin, vtable) + sizeof(void *)) +
               " bytes of the v1 wo_plugin fields";
    return reject(c);
  }
  c.name = d->name ? d->name : "";
  c.kind = Registry::kind_name(d->kind);
  c.version = d->version ? d->version : "";
  if (d->abi_major != WORKER_SDK_ABI_MAJOR) {
    c.reason = "ABI major mismatch: plugin built against SDK " + c.abi + ", host speaks " + kHostAbi +
               " (the major version must match; rebuild the plugin)";
    return reject(c);
  }
  if (c.kind.empty()) {
    c.reason =
        "unknown plugin kind " + std::to_string(d->kind) + " (expected 1 architecture, 2 quant, 3 tokenizer)";
    return reject(c);
  }
  if (c.name.empty()) {
    c.reason =
        "descriptor name is " + std::string(d->name ? "empty" : "NULL") + " (a unique name is required)";
    return reject(c);
  }
  if (std::string problem = vtable_problem(d->kind, d->vtable); !problem.empty()) {
    c.reason = problem;
    return reject(c);
  }
  for (const auto &other : loaded)
    if (c.name == other.desc->name) {
      c.reason = "duplicate name '" + c.name + "': already provided by " + other.path;
      return reject(c);
    }

  c.accepted = true;
  l.desc = d;
  loaded.push_back(std::move(l));
  wo::observe::info(
      "plugin_accepted",
      {{"path", c.path}, {"name", c.name}, {"kind", c.kind}, {"version", c.version}, {"abi", c.abi}});
  candidates.push_back(c);
}

Registry::Registry() : impl_(std::make_unique<Impl>()) {}
Registry::~Registry() = default;
Registry::Registry(Registry &&) noexcept = default;
Registry &Registry::operator=(Registry &&) noexcept = default;

std::string Registry::default_dir() {
  std::error_code ec;
  fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (ec) return "plugins";
  return (exe.parent_path().parent_path() / "plugins").string();
}

void Registry::scan(const std::string &dir) {
  impl_->dirs.push_back(dir);
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) {
    wo::observe::warn("plugin_dir_missing",
                      {{"dir", dir}, {"reason", ec ? ec.message() : "not a directory"}});
    return;
  }
  std::vector<std::string> paths;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const fs::path &p = it->path();
    std::error_code fec;
    if (p.extension() == ".so" && fs::is_regular_file(p, fec)) paths.push_back(p.string());
  }
  if (ec) wo::observe::warn("plugin_dir_unreadable", {{"dir", dir}, {"reason", ec.message()}});
  std::sort(paths.begin(), paths.end());
  wo::observe::info("plugin_scan", {{"dir", dir}, {"candidates", static_cast<uint64_t>(paths.size())}});
  for (const auto &p : paths) {
    try {
      impl_->consider(p);
    } catch (const std::exception &e) { // e.g. bad_alloc: still one bad file, not a dead worker
      Candidate c;
      c.path = p;
      c.reason = std::string("unloadable: ") + e.what();
      impl_->reject(c);
    }
  }
}

const std::vector<Candidate> &Registry::candidates() const { return impl_->candidates; }

std::vector<const wo_plugin *> Registry::accepted(wo_plugin_kind kind) const {
  std::vector<const wo_plugin *> out;
  for (const auto &l : impl_->loaded)
    if (l.desc->kind == kind) out.push_back(l.desc);
  return out;
}

const wo_plugin *Registry::find(const std::string &name) const {
  for (const auto &l : impl_->loaded)
    if (name == l.desc->name) return l.desc;
  return nullptr;
}

namespace {

struct Scored {
  const wo_plugin *p;
  int32_t score;
};

// Highest score wins; none above 0 and ties are errors whose text the caller completes.
const wo_plugin *pick(const std::vector<Scored> &scored, const std::string &what, const std::string &facts,
                      const std::string &dirs, const std::function<std::string(const wo_plugin *)> &label) {
  if (scored.empty())
    throw wo::Error(WO_ERR_NOT_FOUND,
                    "no " + what + " plugin is installed (scanned: " + dirs + "); model: " + facts);
  const Scored *best = nullptr;
  for (const auto &s : scored)
    if (!best || s.score > best->score) best = &s;
  if (best->score <= 0) {
    std::string probed;
    for (const auto &s : scored)
      probed += (probed.empty() ? "" : ", ") + std::string(s.p->name) + "=" + std::to_string(s.score);
    throw wo::Error(WO_ERR_NOT_FOUND, "no " + what + " plugin serves this model (" + facts +
                                          "); probe scores: " + probed + " (scanned: " + dirs + ")");
  }
  for (const auto &s : scored)
    if (&s != best && s.score == best->score)
      throw wo::Error(WO_ERR_INVALID_ARGUMENT, what + " plugins " + label(best->p) + " and " + label(s.p) +
                                                   " both score " + std::to_string(best->score) +
                                                   " for this model (" + facts +
                                                   "); remove one of them from the plugin directory");
  return best->p;
}

} // namespace

const wo_plugin *Registry::select_architecture(const wo_host *host) const {
  std::vector<Scored> scored;
  for (const wo_plugin *p : accepted(WO_PLUGIN_ARCHITECTURE))
    scored.push_back({p, arch(p)->probe(host)});
  std::string facts = "general.architecture=" + meta_fact(host, "general.architecture");
  return pick(scored, "architecture", facts, impl_->dirs_text(),
              [this](const wo_plugin *p) { return impl_->label(p); });
}

const wo_plugin *Registry::select_tokenizer(const wo_host *host, const wo_tokenizer_config *cfg) const {
  std::vector<Scored> scored;
  for (const wo_plugin *p : accepted(WO_PLUGIN_TOKENIZER))
    scored.push_back({p, tokenizer(p)->probe(host, cfg)});
  std::string facts;
  if (cfg && WO_HAS_FIELD(wo_tokenizer_config, cfg->struct_size, tokenizer_json) && cfg->tokenizer_json)
    facts = "tokenizer.json='" + std::string(cfg->tokenizer_json) + "'";
  else
    facts = "tokenizer.ggml.model=" + meta_fact(host, "tokenizer.ggml.model") +
            ", tokenizer.ggml.pre=" + meta_fact(host, "tokenizer.ggml.pre");
  return pick(scored, "tokenizer", facts, impl_->dirs_text(),
              [this](const wo_plugin *p) { return impl_->label(p); });
}

const wo_plugin *Registry::quant_for_type(uint32_t ggml_type) const {
  const wo_plugin *found = nullptr;
  for (const wo_plugin *p : accepted(WO_PLUGIN_QUANT)) {
    const wo_quant_v1 *q = quant(p);
    for (uint32_t i = 0; i < q->n_types; ++i)
      if (q->types[i] == ggml_type) {
        if (found)
          throw wo::Error(WO_ERR_INVALID_ARGUMENT,
                          "ggml type " + type_label(ggml_type) +
                              " is served by two quant plugins: " + impl_->label(found) + " and " +
                              impl_->label(p) + "; remove one of them from the plugin directory");
        found = p;
        break;
      }
  }
  return found;
}

namespace {
template <class V> const V *checked_vtable(const wo_plugin *p, wo_plugin_kind kind) {
  if (!p)
    throw wo::Error(WO_ERR_INVALID_ARGUMENT,
                    std::string("expected a ") + vtable_name(kind) + " plugin, found NULL");
  if (p->kind != kind)
    throw wo::Error(WO_ERR_INVALID_ARGUMENT, "plugin '" + std::string(p->name ? p->name : "") +
                                                 "': expected kind " + Registry::kind_name(kind) +
                                                 ", found kind " + std::to_string(p->kind));
  if (std::string problem = vtable_problem(kind, p->vtable); !problem.empty())
    throw wo::Error(WO_ERR_INVALID_ARGUMENT,
                    "plugin '" + std::string(p->name ? p->name : "") + "': " + problem);
  return static_cast<const V *>(p->vtable);
}
} // namespace

const wo_arch_v1 *Registry::arch(const wo_plugin *p) {
  return checked_vtable<wo_arch_v1>(p, WO_PLUGIN_ARCHITECTURE);
}
const wo_quant_v1 *Registry::quant(const wo_plugin *p) {
  return checked_vtable<wo_quant_v1>(p, WO_PLUGIN_QUANT);
}
const wo_tokenizer_v1 *Registry::tokenizer(const wo_plugin *p) {
  return checked_vtable<wo_tokenizer_v1>(p, WO_PLUGIN_TOKENIZER);
}

std::string Registry::kind_name(wo_plugin_kind kind) {
  switch (kind) {
  case WO_PLUGIN_ARCHITECTURE: return "architecture";
  case WO_PLUGIN_QUANT: return "quant";
  case WO_PLUGIN_TOKENIZER: return "tokenizer";
  default: return "";
  }
}

} // namespace wo::plugins
