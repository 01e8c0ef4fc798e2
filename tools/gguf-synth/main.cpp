// gguf-synth: write a valid GGUF with seeded random weights in the exact tensor names, shapes and
// quant mix of a real model, so speed can be measured at real size without shipping the model.
//
//   gguf-synth --preset NAME --out FILE [--seed N] [--tokenizer-from GGUF_OR_TOKENIZER_JSON]
//              [--threads N] [--plugin-dir DIR]
#include "gguf_writer.hpp"
#include "plugins/registry.hpp"
#include "presets.hpp"
#include "rows.hpp"
#include "tokenizer_meta.hpp"

#include <worker/ggml_types.hpp>
#include <worker/sdk.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace {

using namespace wo::synth;

void usage(FILE *to) {
  std::fprintf(
      to, "usage: gguf-synth --preset NAME --out FILE [--seed N] [--tokenizer-from GGUF_OR_TOKENIZER_JSON]\n"
          "                  [--threads N] [--plugin-dir DIR]\n\n"
          "Writes a GGUF with seeded random weights and the tensor names, shapes and quant mix of a real\n"
          "model. Quantized tensors are made directly as random blocks whose dequantized weights have\n"
          "the spread of the float fill (mean 0, the preset's standard deviation); each type must be\n"
          "served by a quant plugin (--plugin-dir, default <exe dir>/../plugins). Without\n"
          "--tokenizer-from the vocabulary is 256 byte-level tokens plus <|endoftext|>, padded to the\n"
          "preset's size.\n\npresets:\n");
  for (const auto &n : preset_names())
    std::fprintf(to, "  %-22s %s\n", n.c_str(), make_preset(n).description.c_str());
}

struct Options {
  std::string preset, out, tokenizer_from, plugin_dir;
  uint64_t seed = 1;
  unsigned threads = std::max(1u, std::thread::hardware_concurrency());
};

uint64_t parse_u64(const std::string &opt, const std::string &v) {
  char *end = nullptr;
  errno = 0;
  unsigned long long x = std::strtoull(v.c_str(), &end, 10);
  if (v.empty() || *end || errno || v[0] == '-')
    throw wo::Error(WO_ERR_INVALID_ARGUMENT,
                    "option " + opt + ": expected a non-negative integer, found '" + v + "'");
  return x;
}

// One unit of work: rows [row0, row0+n) of tensor `t`.
struct Chunk {
  size_t t;
  int64_t row0, n;
};

int run(const Options &o) {
  Preset preset = make_preset(o.preset);
  GgufWriter w;
  preset.metadata(w);
  add_tokenizer(w, o.tokenizer_from, preset.n_vocab, preset.default_pre);
  for (const auto &t : preset.tensors)
    w.add_tensor(t.name, t.ggml_type, t.ne);
  w.plan();

  for (const auto &t : preset.tensors)
    if (std::string why = cannot_generate(t); !why.empty()) throw wo::Error(WO_ERR_UNSUPPORTED, why);

  // The blocks are made here, not by the plugins, but the file is for the worker: refuse types
  // that no quant plugin would load.
  wo::plugins::Registry reg;
  reg.scan(o.plugin_dir.empty() ? wo::plugins::Registry::default_dir() : o.plugin_dir);
  for (const auto &t : preset.tensors)
    if (t.ggml_type != wo::ggml::F32 && !reg.quant_for_type(t.ggml_type))
      throw wo::Error(WO_ERR_NOT_FOUND, std::string("no quant plugin serves type ") +
                                            wo::ggml::type_info(t.ggml_type)->name + " (tensor '" + t.name +
                                            "')");

  // Chunks of about kChunkBytes of output each: small enough to stay in a core's L2 between
  // being made and being copied out by pwrite, large enough that a syscall per chunk is noise.
  // The plan depends on the shapes only, and each chunk seeds its own generator, so the bytes do
  // not depend on --threads.
  constexpr uint64_t kChunkBytes = uint64_t{1} << 20;
  std::vector<Chunk> chunks;
  for (size_t i = 0; i < preset.tensors.size(); ++i) {
    const auto &t = preset.tensors[i];
    int64_t rows = 1;
    for (size_t d = 1; d < t.ne.size(); ++d)
      rows *= t.ne[d];
    const uint64_t rb = wo::ggml::row_bytes(t.ggml_type, t.ne[0]);
    const int64_t per = static_cast<int64_t>(std::max<uint64_t>(1, kChunkBytes / rb));
    for (int64_t r = 0; r < rows; r += per)
      chunks.push_back({i, r, std::min(per, rows - r)});
  }

  w.open(o.out);
  auto t0 = std::chrono::steady_clock::now();
  std::atomic<size_t> next{0};
  std::mutex err_mu;
  std::string err;
  auto worker = [&]() {
    std::vector<uint8_t> bytes;
    std::vector<float> scratch;
    for (size_t c; (c = next.fetch_add(1)) < chunks.size();) {
      const Chunk &ch = chunks[c];
      const auto &t = preset.tensors[ch.t];
      const uint64_t rb = wo::ggml::row_bytes(t.ggml_type, t.ne[0]);
      bytes.resize(static_cast<size_t>(rb * ch.n));
      try {
        generate_rows(t, o.seed, ch.t, ch.row0, ch.n, bytes.data(), scratch);
        w.write_at(w.data_start() + w.tensors()[ch.t].offset + rb * static_cast<uint64_t>(ch.row0),
                   bytes.data(), bytes.size());
      } catch (const std::exception &e) {
        std::lock_guard<std::mutex> lk(err_mu);
        err = e.what();
        next = chunks.size();
      }
    }
  };
  std::vector<std::thread> pool;
  for (unsigned i = 0; i < o.threads; ++i)
    pool.emplace_back(worker);
  for (auto &th : pool)
    th.join();
  w.close();
  if (!err.empty()) throw wo::Error(WO_ERR_INTERNAL, err);
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();

  std::map<std::string, int> counts;
  for (const auto &t : preset.tensors)
    counts[wo::ggml::type_info(t.ggml_type)->name]++;
  std::string mix;
  for (const auto &[n, c] : counts)
    mix += (mix.empty() ? "" : ", ") + n + "x" + std::to_string(c);
  std::printf("wrote %s: preset %s, %zu tensors (%s), %.2f GB in %.2f s (%.2f GB/s, %u threads)\n",
              o.out.c_str(), o.preset.c_str(), preset.tensors.size(), mix.c_str(),
              static_cast<double>(w.file_size()) / 1e9, secs,
              static_cast<double>(w.file_size()) / 1e9 / std::max(secs, 1e-9), o.threads);
  return 0;
}

} // namespace

int main(int argc, char **argv) {
  Options o;
  try {
    for (int i = 1; i < argc; ++i) {
      std::string a = argv[i];
      auto value = [&]() -> std::string {
        if (i + 1 >= argc) throw wo::Error(WO_ERR_INVALID_ARGUMENT, "option " + a + " needs a value");
        return argv[++i];
      };
      if (a == "--help" || a == "-h") {
        usage(stdout);
        return 0;
      } else if (a == "--preset")
        o.preset = value();
      else if (a == "--out")
        o.out = value();
      else if (a == "--seed")
        o.seed = parse_u64(a, value());
      else if (a == "--tokenizer-from")
        o.tokenizer_from = value();
      else if (a == "--plugin-dir")
        o.plugin_dir = value();
      else if (a == "--threads") {
        uint64_t n = parse_u64(a, value());
        if (n < 1 || n > 1024)
          throw wo::Error(WO_ERR_INVALID_ARGUMENT,
                          "option --threads: expected 1..1024, found " + std::to_string(n));
        o.threads = static_cast<unsigned>(n);
      } else
        throw wo::Error(WO_ERR_INVALID_ARGUMENT, "unknown option '" + a + "' (see --help)");
    }
    if (o.preset.empty() || o.out.empty())
      throw wo::Error(WO_ERR_INVALID_ARGUMENT, "--preset and --out are required (see --help)");
    return run(o);
  } catch (const std::exception &e) {
    std::fprintf(stderr, "gguf-synth: %s\n", e.what());
    return 1;
  }
}
