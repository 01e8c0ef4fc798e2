// `worker-orcd run`: the developer's way to see what a model computes, with no HTTP in between.
// Loads the model exactly as `serve` does, runs the prompt in one pass (argmax at every position,
// top-5 at the last), then continues greedily for --n tokens. `--json` is what the reference
// checks read; `--logits-out` writes the last prompt position's logits as float32 little-endian.
// CUDA builds only: a CPU-only build has no engine and so no `run` command.
#if defined(WORKER_WITH_CUDA)

#include "cli/command.hpp"
#include "engine/engine.hpp"

#include <worker/sdk.hpp>

#include <cuda_runtime_api.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

namespace {

const char *kUsage =
    "usage: worker-orcd run --model M (--prompt TEXT | --prompt-ids 1,2,3) [--n 24] [--json]\n"
    "                       [--logits-out FILE] [--plugin-dir D] [--gpu-device N] [--vram-budget-mb N]\n"
    "                       [--n-ctx N] [--kv-cache-size-mb N] [--tokenizer-json F] [--unfused]\n"
    "                       [--step N --step-logits-out FILE]\n"
    "  --model           GGUF model: a path, file:/path or ram:NAME\n"
    "  --prompt          prompt text, tokenized with the model's special tokens (BOS as its metadata says)\n"
    "  --prompt-ids      prompt as comma-separated token ids (no tokenizer involved)\n"
    "  --n               greedy continuation length (default 24; 0 = prompt only)\n"
    "  --json            print {prompt_ids, argmax_per_position, top5, ids} as JSON\n"
    "  --logits-out      write the last prompt position's logits (float32 little-endian) to FILE\n"
    "  --plugin-dir      plugin folder (default: <exe>/../plugins)\n"
    "  --gpu-device      CUDA device index (default 0)\n"
    "  --vram-budget-mb  refuse to load when the VRAM plan exceeds this many MiB\n"
    "  --n-ctx           session capacity in tokens (default: the model's context, capped)\n"
    "  --kv-cache-size-mb cap on the KV cache\n"
    "  --tokenizer-json  use this tokenizer.json instead of the GGUF vocabulary\n"
    "  --unfused         run the architecture's plain, unfused kernels (debugging)\n"
    "  --step-logits-out write the logits generated token --step (default 0) is chosen from, as the\n"
    "                    server's WORKER_DEBUG_STEP_LOGITS=STEP:FILE does (float32 little-endian)\n";

struct RunArgs {
  wo::engine::EngineOptions engine;
  std::string prompt;
  bool have_prompt = false;
  std::vector<int32_t> prompt_ids;
  bool have_ids = false;
  int64_t n = 24;
  bool json = false;
  std::string logits_out;
  int64_t step = 0;
  std::string step_logits_out;
};

// Strict integer parsing: the whole text, in range, or a message naming the option and value.
bool parse_int(const std::string &opt, const std::string &text, int64_t lo, int64_t hi, int64_t &out) {
  errno = 0;
  char *end = nullptr;
  long long v = std::strtoll(text.c_str(), &end, 10);
  if (text.empty() || *end != '\0' || errno == ERANGE || v < lo || v > hi) {
    std::fprintf(stderr, "run: %s: expected an integer in %lld..%lld, found '%s'\n", opt.c_str(),
                 static_cast<long long>(lo), static_cast<long long>(hi), text.c_str());
    return false;
  }
  out = v;
  return true;
}

bool parse_ids(const std::string &text, std::vector<int32_t> &out) {
  size_t start = 0;
  while (start <= text.size()) {
    size_t comma = text.find(',', start);
    std::string item = text.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    int64_t v = 0;
    if (!parse_int("--prompt-ids item " + std::to_string(out.size()), item, 0, INT32_MAX, v)) return false;
    out.push_back(static_cast<int32_t>(v));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return !out.empty();
}

// Returns 0 to go on, 1 on a bad command line, 2 for --help (exit 0).
int parse_args(int argc, char **argv, RunArgs &a) {
  for (int i = 1; i < argc; ++i) {
    std::string k = argv[i];
    if (k == "--help" || k == "-h") return 2;
    if (k == "--json") {
      a.json = true;
      continue;
    }
    if (k == "--unfused") {
      a.engine.arch_flags |= WO_ARCH_UNFUSED;
      continue;
    }
    if (i + 1 >= argc) {
      std::fprintf(stderr, "run: %s: expected a value after it, found the end of the command line\n",
                   k.c_str());
      return 1;
    }
    std::string v = argv[++i];
    int64_t n = 0;
    if (k == "--model")
      a.engine.model = v;
    else if (k == "--prompt") {
      a.prompt = v;
      a.have_prompt = true;
    } else if (k == "--prompt-ids") {
      if (!parse_ids(v, a.prompt_ids)) return 1;
      a.have_ids = true;
    } else if (k == "--n") {
      if (!parse_int(k, v, 0, 1 << 20, a.n)) return 1;
    } else if (k == "--logits-out")
      a.logits_out = v;
    else if (k == "--step-logits-out")
      a.step_logits_out = v;
    else if (k == "--step") {
      if (!parse_int(k, v, 0, 1 << 20, a.step)) return 1;
    } else if (k == "--plugin-dir")
      a.engine.plugin_dir = v;
    else if (k == "--tokenizer-json")
      a.engine.tokenizer_json = v;
    else if (k == "--gpu-device") {
      if (!parse_int(k, v, 0, 1023, n)) return 1;
      a.engine.gpu_device = static_cast<int>(n);
    } else if (k == "--vram-budget-mb") {
      if (!parse_int(k, v, 1, int64_t{1} << 30, n)) return 1;
      a.engine.vram_budget_bytes = static_cast<uint64_t>(n) << 20;
    } else if (k == "--n-ctx") {
      if (!parse_int(k, v, 1, int64_t{1} << 24, a.engine.n_ctx)) return 1;
    } else if (k == "--kv-cache-size-mb") {
      if (!parse_int(k, v, 1, int64_t{1} << 30, a.engine.kv_cache_mb)) return 1;
    } else {
      std::fprintf(stderr, "run: unknown option '%s' (argument %d)\n%s", k.c_str(), i - 1, kUsage);
      return 1;
    }
  }
  if (a.engine.model.empty()) {
    std::fprintf(stderr, "run: --model: expected a model, found none\n%s", kUsage);
    return 1;
  }
  if (!a.step_logits_out.empty() && a.step >= std::max<int64_t>(a.n, 1)) {
    std::fprintf(stderr, "run: --step: expected a generated token index below --n %lld, found %lld\n",
                 static_cast<long long>(a.n), static_cast<long long>(a.step));
    return 1;
  }
  if (a.have_prompt == a.have_ids) {
    std::fprintf(stderr, "run: expected exactly one of --prompt and --prompt-ids, found %s\n%s",
                 a.have_prompt ? "both" : "neither", kUsage);
    return 1;
  }
  return 0;
}

// First index of the largest value (ties go to the lower id, as a stable rule).
int32_t argmax(const float *v, int64_t n) {
  int64_t best = 0;
  for (int64_t i = 1; i < n; ++i)
    if (v[i] > v[best]) best = i;
  return static_cast<int32_t>(best);
}

std::vector<std::pair<int32_t, float>> top_k(const std::vector<float> &v, size_t k) {
  std::vector<int32_t> idx(v.size());
  for (size_t i = 0; i < v.size(); ++i)
    idx[i] = static_cast<int32_t>(i);
  k = std::min(k, v.size());
  std::partial_sort(idx.begin(), idx.begin() + static_cast<std::ptrdiff_t>(k), idx.end(),
                    [&](int32_t a, int32_t b) { return v[a] > v[b] || (v[a] == v[b] && a < b); });
  std::vector<std::pair<int32_t, float>> out;
  for (size_t i = 0; i < k; ++i)
    out.emplace_back(idx[i], v[idx[i]]);
  return out;
}

void write_ids(rapidjson::Writer<rapidjson::StringBuffer> &w, const char *key,
               const std::vector<int32_t> &ids) {
  w.Key(key);
  w.StartArray();
  for (int32_t id : ids)
    w.Int(id);
  w.EndArray();
}

int run_main(int argc, char **argv) {
  RunArgs a;
  int pr = parse_args(argc, argv, a);
  if (pr == 2) {
    std::fputs(kUsage, stdout);
    return 0;
  }
  if (pr != 0) return 1;
  try {
    wo::engine::Engine engine;
    engine.load(a.engine);
    const int64_t n_vocab = engine.vocab_size();
    std::vector<int32_t> prompt = a.have_ids ? a.prompt_ids : engine.tokenize(a.prompt, true, true);
    if (prompt.empty()) throw wo::Error(WO_ERR_INVALID_ARGUMENT, "--prompt: the text encodes to no tokens");
    const int64_t need = static_cast<int64_t>(prompt.size()) + std::max<int64_t>(a.n, 1);
    if (need > engine.info().n_ctx)
      throw wo::Error(WO_ERR_INVALID_ARGUMENT,
                      "prompt (" + std::to_string(prompt.size()) + " tokens) + --n " + std::to_string(a.n) +
                          " exceeds the context of " + std::to_string(engine.info().n_ctx) + " tokens");
    // The whole planned context, as serve reserves it: the decode graphs then have the same
    // context buckets, hence the same attention splits, and this command's ids are the stream's.
    engine.begin_session();

    // Prompt in n_batch chunks with every position's logits: argmax per position.
    const int64_t n_batch = a.engine.n_batch;
    std::vector<int32_t> argmax_pos;
    std::vector<float> last;
    for (int64_t pos = 0; pos < static_cast<int64_t>(prompt.size()); pos += n_batch) {
      const int64_t chunk = std::min<int64_t>(n_batch, static_cast<int64_t>(prompt.size()) - pos);
      engine.forward(prompt.data() + pos, chunk, pos, true);
      std::vector<float> rows = engine.all_logits_host();
      for (int64_t r = 0; r < chunk; ++r)
        argmax_pos.push_back(argmax(rows.data() + r * n_vocab, n_vocab));
      last.assign(rows.end() - n_vocab, rows.end());
    }
    if (!a.logits_out.empty()) {
      std::ofstream f(a.logits_out, std::ios::binary);
      f.write(reinterpret_cast<const char *>(last.data()),
              static_cast<std::streamsize>(last.size() * sizeof(float)));
      if (!f)
        throw wo::Error(WO_ERR_IO, "--logits-out '" + a.logits_out + "': cannot write " +
                                       std::to_string(last.size() * sizeof(float)) + " bytes");
    }
    const auto top5 = top_k(last, 5);

    // Greedy continuation.
    std::vector<int32_t> ids;
    int64_t pos = static_cast<int64_t>(prompt.size());
    // The continuation starts as serve's does: the prompt again with only the last row's logits
    // (the LM head then runs as a GEMV, not as the all-rows GEMM above, which rounds otherwise).
    engine.forward(prompt.data(), static_cast<int64_t>(prompt.size()), 0, false);
    // --step-logits-out: the logits generated token `step` is chosen from (the server's debug dump).
    const auto dump_step = [&](int64_t i) {
      if (!a.step_logits_out.empty() && i == a.step) engine.dump_logits(a.step_logits_out);
    };
    dump_step(0);
    int32_t next = argmax(engine.logits_host().data(), n_vocab);
    // Decode as `serve` does, the id in device memory, so the step replays the same CUDA graph and
    // computes the same logits (this command is the reference the HTTP stream is checked against).
    const wo_host *h = engine.host();
    void *d_next = nullptr;
    if (const wo_status st = h->vram_alloc(h->ctx, sizeof(int32_t), WO_VRAM_SCRATCH, &d_next); st != WO_OK)
      throw wo::Error(st, std::string("run: 4 bytes of device memory for the decode token: ") +
                              wo::status_name(st));
    for (int64_t i = 0; i < a.n; ++i) {
      ids.push_back(next);
      if (i + 1 == a.n) break;
      // The stream is idle here (logits_host synchronized it), so a plain copy cannot race.
      if (const cudaError_t e = cudaMemcpy(d_next, &next, sizeof next, cudaMemcpyHostToDevice);
          e != cudaSuccess)
        throw wo::Error(WO_ERR_CUDA, std::string("run: token upload: ") + cudaGetErrorString(e));
      engine.forward(static_cast<const int32_t *>(d_next), 1, pos++, false, /*ids_on_device=*/true);
      dump_step(i + 1);
      std::vector<float> l = engine.logits_host();
      next = argmax(l.data(), n_vocab);
    }
    h->vram_free(h->ctx, d_next);
    engine.end_session();

    if (a.json) {
      rapidjson::StringBuffer sb;
      rapidjson::Writer<rapidjson::StringBuffer> w(sb);
      w.StartObject();
      write_ids(w, "prompt_ids", prompt);
      write_ids(w, "argmax_per_position", argmax_pos);
      w.Key("top5");
      w.StartArray();
      for (const auto &[id, logit] : top5) {
        w.StartArray();
        w.Int(id);
        w.Double(static_cast<double>(logit));
        w.EndArray();
      }
      w.EndArray();
      write_ids(w, "ids", ids);
      w.EndObject();
      std::printf("%s\n", sb.GetString());
    } else {
      auto print_ids = [](const char *label, const std::vector<int32_t> &v) {
        std::printf("%s:", label);
        for (int32_t id : v)
          std::printf(" %d", id);
        std::printf("\n");
      };
      print_ids("prompt_ids", prompt);
      print_ids("argmax_per_position", argmax_pos);
      std::printf("top5:");
      for (const auto &[id, logit] : top5)
        std::printf(" %d:%.4f", id, static_cast<double>(logit));
      std::printf("\n");
      print_ids("ids", ids);
      std::string text;
      for (int32_t id : ids)
        text += engine.token_bytes(id);
      std::printf("text: %s\n", text.c_str());
    }
    return 0;
  } catch (const std::exception &e) {
    std::fprintf(stderr, "run: %s\n", e.what());
    return 1;
  }
}

} // namespace

WORKER_CLI_COMMAND("run", "load a model and print its greedy continuation of a prompt (--json, --logits-out)",
                   run_main);

#endif // WORKER_WITH_CUDA
