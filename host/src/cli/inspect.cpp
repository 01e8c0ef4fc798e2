// `worker-orcd inspect MODEL [--json] [--tensors] [--plugin-dir DIR] [--model-root DIR]`:
// what a user reaches for first when a model does not load. Validates the GGUF (the same reader
// the server uses), then prints a summary and which plugins would serve the model.
#include "cli/command.hpp"
#include "gguf/gguf_file.hpp"
#include "gguf/model_summary.hpp"

#include <cstdio>
#include <cstring>
#include <string>

namespace {

// Which plugins would serve the model. Empty until the plugin registry exists in this build.
std::optional<wo::gguf::PluginReport> resolve_plugins(const wo::gguf::File &, const std::string &) {
  return std::nullopt;
}

const char *kUsage =
    "usage: worker-orcd inspect MODEL [--json] [--tensors] [--plugin-dir DIR] [--model-root DIR]\n"
    "  MODEL           a path, file:/path, or ram:NAME (POSIX shared memory)\n"
    "  --json          machine-readable output\n"
    "  --tensors       also list every tensor (name, type, shape, offset, bytes)\n"
    "  --plugin-dir    where to look for plugins (default: the build's plugin folder)\n"
    "  --model-root    reject a model that resolves outside DIR\n";

int inspect_main(int argc, char **argv) {
  std::string model, plugin_dir, model_root;
  bool json = false, tensors = false;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--help" || a == "-h") {
      std::fputs(kUsage, stdout);
      return 0;
    } else if (a == "--json") json = true;
    else if (a == "--tensors") tensors = true;
    else if ((a == "--plugin-dir" || a == "--model-root") && i + 1 < argc) (a == "--plugin-dir" ? plugin_dir : model_root) = argv[++i];
    else if (a.rfind("--plugin-dir=", 0) == 0) plugin_dir = a.substr(13);
    else if (a.rfind("--model-root=", 0) == 0) model_root = a.substr(13);
    else if (a.rfind("-", 0) != 0 && model.empty()) model = a;
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
    auto file = wo::gguf::File::open(model, opts);
    wo::gguf::ModelSummary summary = wo::gguf::summarize(*file);
    std::optional<wo::gguf::PluginReport> plugins = resolve_plugins(*file, plugin_dir);
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
