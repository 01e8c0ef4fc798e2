// `worker-orcd inspect MODEL [--json] [--tensors] [--plugin-dir DIR] [--model-root DIR]`:
// what a user reaches for first when a model does not load. Validates the GGUF (the same reader
// the server uses), then prints a summary and which plugins would serve the model.
#include "cli/command.hpp"
#include "gguf/gguf_file.hpp"
#include "gguf/host_meta.hpp"
#include "gguf/model_summary.hpp"
#include "plugins/registry.hpp"

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

namespace {

// Which plugins would serve the model: the same selection the server makes at startup (probe
// scores over the metadata, a codec per tensor type), with what is missing said in words.
std::optional<wo::gguf::PluginReport>
resolve_plugins(const wo::gguf::File &file, const wo::gguf::ModelSummary &s, const std::string &plugin_dir) {
  wo::gguf::PluginReport rep;
  wo::plugins::Registry reg;
  const std::string dir = plugin_dir.empty() ? wo::plugins::Registry::default_dir() : plugin_dir;
  reg.scan(dir);
  wo::gguf::MetaHost meta(file, [](wo_log_level, const char *) {});
  try {
    if (const wo_plugin *a = reg.select_architecture(meta.host())) rep.architecture = a->name;
  } catch (const std::exception &e) {
    rep.missing.push_back(std::string("architecture: ") + e.what());
  }
  try {
    wo_tokenizer_config cfg{};
    cfg.struct_size = sizeof(cfg);
    if (const wo_plugin *t = reg.select_tokenizer(meta.host(), &cfg)) rep.tokenizer = t->name;
  } catch (const std::exception &e) {
    rep.missing.push_back(std::string("tokenizer: ") + e.what());
  }
  for (const wo::gguf::TypeStat &t : s.types) {
    try {
      if (const wo_plugin *q = reg.quant_for_type(t.type)) {
        rep.quant[t.name] = q->name;
        continue;
      }
      std::string example;
      for (const auto &ti : file.tensors())
        if (ti.type == t.type) {
          example = ti.name;
          break;
        }
      rep.missing.push_back("quant: no accepted plugin in " + dir + " serves type " + t.name + " (" +
                            std::to_string(t.count) + " tensors, e.g. '" + example + "')");
    } catch (const std::exception &e) {
      rep.missing.push_back(std::string("quant: ") + e.what());
    }
  }
  return rep;
}

const char *kUsage =
    "usage: worker-orcd inspect MODEL [--json] [--tensors] [--plugin-dir DIR] [--model-root DIR] "
    "[--max-tensors N]\n"
    "  MODEL           a path, file:/path, or ram:NAME (POSIX shared memory)\n"
    "  --json          machine-readable output\n"
    "  --tensors       also list every tensor (name, type, shape, offset, bytes)\n"
    "  --plugin-dir    where to look for plugins (default: <dir of worker-orcd>/../plugins)\n"
    "  --model-root    reject a model that resolves outside DIR\n"
    "  --max-tensors   reject files declaring more than N tensors (default 10000)\n";

int inspect_main(int argc, char **argv) {
  std::string model, plugin_dir, model_root;
  bool json = false, tensors = false;
  uint64_t max_tensors = wo::gguf::OpenOptions{}.max_tensors;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--help" || a == "-h") {
      std::fputs(kUsage, stdout);
      return 0;
    } else if (a == "--json")
      json = true;
    else if (a == "--tensors")
      tensors = true;
    else if ((a == "--plugin-dir" || a == "--model-root") && i + 1 < argc)
      (a == "--plugin-dir" ? plugin_dir : model_root) = argv[++i];
    else if (a == "--max-tensors" && i + 1 < argc) {
      const char *v = argv[++i];
      char *end = nullptr;
      max_tensors = std::strtoull(v, &end, 10);
      if (!*v || *end || *v == '-') {
        std::fprintf(stderr, "inspect: --max-tensors: expected a non-negative integer, found '%s'\n", v);
        return 1;
      }
    } else if (a.rfind("--plugin-dir=", 0) == 0)
      plugin_dir = a.substr(13);
    else if (a.rfind("--model-root=", 0) == 0)
      model_root = a.substr(13);
    else if (a.rfind("-", 0) != 0 && model.empty())
      model = a;
    else {
      std::fprintf(stderr, "inspect: unexpected argument '%s' (argument %d)\n%s", a.c_str(), i, kUsage);
      return 1;
    }
  }
  if (model.empty()) {
    std::fprintf(stderr, "inspect: expected a MODEL argument, found none\n%s", kUsage);
    return 1;
  }
  try {
    wo::gguf::OpenOptions opts;
    opts.model_root = model_root;
    opts.max_tensors = max_tensors;
    auto file = wo::gguf::File::open(model, opts);
    wo::gguf::ModelSummary summary = wo::gguf::summarize(*file);
    std::optional<wo::gguf::PluginReport> plugins = resolve_plugins(*file, summary, plugin_dir);
    std::string out = json ? wo::gguf::summary_json(*file, summary, plugins, tensors)
                           : wo::gguf::summary_text(*file, summary, plugins, tensors);
    std::fwrite(out.data(), 1, out.size(), stdout);
    return 0;
  } catch (const std::exception &e) {
    std::fprintf(stderr, "inspect: %s\n", e.what());
    return 1;
  }
}

} // namespace

WORKER_CLI_COMMAND("inspect", "validate a GGUF model and describe it (--json, --tensors)", inspect_main);
