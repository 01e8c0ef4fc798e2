// Plugin registry: finds `.so` plugins in a directory, checks them before and after loading,
// negotiates the ABI and selects plugins for a model by score (DESIGN §3).
//
// Why a registry that never throws while scanning: a bad file in the plugin directory must not
// stop the worker from serving with the good ones; it is recorded with its reason, logged, and
// shown by `worker-orcd plugins`.
#pragma once

#include <worker/sdk.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace wo::plugins {

// One `.so` found in a scanned directory, accepted or not.
struct Candidate {
  std::string path;
  std::string name;    // descriptor name ("" when the plugin never described itself)
  std::string kind;    // "architecture" | "quant" | "tokenizer" | ""
  std::string version; // the plugin's own version
  std::string abi;     // "MAJOR.MINOR" the plugin was built against, "" when unknown
  bool accepted = false;
  std::string reason; // why it was rejected; empty when accepted
};

class Registry {
public:
  Registry();
  ~Registry();
  Registry(Registry &&) noexcept;
  Registry &operator=(Registry &&) noexcept;
  Registry(const Registry &) = delete;
  Registry &operator=(const Registry &) = delete;

  // <dir of /proc/self/exe>/../plugins
  static std::string default_dir();

  // Adds every `*.so` of dir (sorted by file name) as a candidate. Never throws for a bad plugin
  // or a missing directory: each problem becomes a rejected Candidate (or a logged event).
  void scan(const std::string &dir);

  const std::vector<Candidate> &candidates() const;
  // Accepted plugins of one kind, in scan order.
  std::vector<const wo_plugin *> accepted(wo_plugin_kind kind) const;
  // Accepted plugin by name or nullptr.
  const wo_plugin *find(const std::string &name) const;

  // Selection by score: the highest probe wins. Throws wo::Error(WO_ERR_NOT_FOUND) when no plugin
  // scores above 0 and wo::Error(WO_ERR_INVALID_ARGUMENT) on a tie for the top score; messages
  // name the model facts (general.architecture, tokenizer.ggml.model/.pre) and the plugins.
  const wo_plugin *select_architecture(const wo_host *host) const;
  const wo_plugin *select_tokenizer(const wo_host *host, const wo_tokenizer_config *cfg) const;
  // The accepted quant plugin listing ggml_type; nullptr when none does; throws
  // wo::Error(WO_ERR_INVALID_ARGUMENT) when two do (naming both).
  const wo_plugin *quant_for_type(uint32_t ggml_type) const;

  // Checked vtable casts: throw wo::Error(WO_ERR_INVALID_ARGUMENT) when p is null, of another
  // kind, or its vtable is smaller than the v1 struct.
  static const wo_arch_v1 *arch(const wo_plugin *p);
  static const wo_quant_v1 *quant(const wo_plugin *p);
  static const wo_tokenizer_v1 *tokenizer(const wo_plugin *p);

  // "architecture" / "quant" / "tokenizer", "" for an unknown kind.
  static std::string kind_name(wo_plugin_kind kind);

private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

} // namespace wo::plugins
