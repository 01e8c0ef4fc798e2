// `worker-orcd dump-tensor MODEL TENSOR --out FILE`: the tensor dequantized on the CPU, written as
// float32 little-endian, row-major as GGUF stores it (ne[0] fastest). F32/F16/BF16 are converted by
// the host; other types through their quant plugin's CPU reference (dequantize_rows), found with
// the plugin registry (--plugin-dir, default <dir of worker-orcd>/../plugins).
#include "cli/command.hpp"
#include "gguf/gguf_file.hpp"
#include "gguf/native_dequant.hpp"
#include "plugins/registry.hpp"

#include <worker/ggml_types.hpp>

#include <algorithm>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

namespace {

const char *kUsage =
    "usage: worker-orcd dump-tensor MODEL TENSOR --out FILE [--plugin-dir DIR] [--model-root DIR]\n"
    "  writes TENSOR as float32 little-endian, row-major (ne[0] fastest)\n";

// Dequantize rows [row0, row0 + n_rows) of t into dst.
using RowsFn = void (*)(const wo::gguf::File &, const wo::gguf::TensorInfo &, uint64_t, uint64_t, float *);

void native_rows(const wo::gguf::File &f, const wo::gguf::TensorInfo &t, uint64_t row0, uint64_t n_rows,
                 float *dst) {
  wo::gguf::dequantize_native(t.type, f.tensor_data(t) + row0 * t.nb1,
                              n_rows * static_cast<uint64_t>(t.ne[0]), dst);
}

// The codec's CPU reference, when a quant plugin in the registry serves the type.
const wo_quant_v1 *g_codec = nullptr;
void codec_rows(const wo::gguf::File &f, const wo::gguf::TensorInfo &t, uint64_t row0, uint64_t n_rows,
                float *dst) {
  wo_status s = g_codec->dequantize_rows(t.type, f.tensor_data(t) + row0 * t.nb1,
                                         static_cast<int64_t>(n_rows), t.ne[0], dst);
  if (s != WO_OK) {
    const char *why = g_codec->last_error ? g_codec->last_error() : nullptr;
    throw wo::Error(s, "tensor '" + t.name + "': dequantize_rows of rows [" + std::to_string(row0) + ", " +
                           std::to_string(row0 + n_rows) + ") failed: " + wo::status_name(s) +
                           (why && *why ? std::string(": ") + why : std::string()));
  }
}

int dump_main(int argc, char **argv) {
  std::string model, tensor, out, plugin_dir, model_root;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--help" || a == "-h") {
      std::fputs(kUsage, stdout);
      return 0;
    } else if ((a == "--out" || a == "-o") && i + 1 < argc)
      out = argv[++i];
    else if (a == "--plugin-dir" && i + 1 < argc)
      plugin_dir = argv[++i];
    else if (a == "--model-root" && i + 1 < argc)
      model_root = argv[++i];
    else if (a.rfind("-", 0) != 0 && model.empty())
      model = a;
    else if (a.rfind("-", 0) != 0 && tensor.empty())
      tensor = a;
    else {
      std::fprintf(stderr, "dump-tensor: unexpected argument '%s' (argument %d)\n%s", a.c_str(), i, kUsage);
      return 1;
    }
  }
  if (model.empty() || tensor.empty() || out.empty()) {
    std::fprintf(stderr, "dump-tensor: expected MODEL, TENSOR and --out FILE\n%s", kUsage);
    return 1;
  }
  try {
    wo::gguf::OpenOptions opts;
    opts.model_root = model_root;
    auto file = wo::gguf::File::open(model, opts);
    const wo::gguf::TensorInfo *t = file->find_tensor(tensor);
    if (!t) {
      std::fprintf(stderr,
                   "dump-tensor: %s: tensor '%s' not found (the model has %zu tensors; list them with "
                   "`worker-orcd inspect --tensors`)\n",
                   model.c_str(), tensor.c_str(), file->tensors().size());
      return 1;
    }
    RowsFn rows = nullptr;
    wo::plugins::Registry reg; // keeps the codec's library loaded while rows are converted
    if (wo::gguf::is_native_type(t->type))
      rows = native_rows;
    else {
      const std::string dir = plugin_dir.empty() ? wo::plugins::Registry::default_dir() : plugin_dir;
      reg.scan(dir);
      if (const wo_plugin *q = reg.quant_for_type(t->type)) {
        g_codec = wo::plugins::Registry::quant(q);
        if (g_codec->dequantize_rows) rows = codec_rows;
      }
      if (!rows) {
        std::fprintf(stderr,
                     "dump-tensor: %s: tensor '%s' has type %s; expected F32, F16, BF16 or a type that an "
                     "accepted quant plugin with a CPU reference in %s serves, found none "
                     "(see `worker-orcd plugins --plugin-dir %s`)\n",
                     model.c_str(), tensor.c_str(), wo::ggml::type_info(t->type)->name, dir.c_str(),
                     dir.c_str());
        return 1;
      }
    }
    std::unique_ptr<FILE, int (*)(FILE *)> fp(std::fopen(out.c_str(), "wb"), std::fclose);
    if (!fp) {
      std::perror(("dump-tensor: cannot open output '" + out + "'").c_str());
      return 1;
    }
    // Bounded chunks of rows keep memory flat for large tensors.
    const uint64_t n_rows = t->n_elements() / static_cast<uint64_t>(t->ne[0]);
    const uint64_t chunk = std::max<uint64_t>(1, (1u << 22) / static_cast<uint64_t>(t->ne[0]));
    std::vector<float> buf;
    for (uint64_t r = 0; r < n_rows; r += chunk) {
      const uint64_t n = std::min(chunk, n_rows - r);
      buf.resize(n * static_cast<uint64_t>(t->ne[0]));
      rows(*file, *t, r, n, buf.data());
      if (std::fwrite(buf.data(), sizeof(float), buf.size(), fp.get()) != buf.size()) {
        std::perror(("dump-tensor: writing '" + out + "' failed").c_str());
        return 1;
      }
    }
    if (std::fclose(fp.release()) != 0) {
      std::perror(("dump-tensor: closing '" + out + "' failed").c_str());
      return 1;
    }
    return 0;
  } catch (const std::exception &e) {
    std::fprintf(stderr, "dump-tensor: %s\n", e.what());
    return 1;
  }
}

} // namespace

WORKER_CLI_COMMAND("dump-tensor", "write one tensor dequantized to float32 (--out FILE)", dump_main);
