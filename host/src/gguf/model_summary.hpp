// What `worker-orcd inspect` tells a user about a model: a summary computed from the GGUF alone
// (sizes, hyperparameters, tokenizer, per-type tensor counts and bytes, a recognizable quant label,
// the estimated VRAM), plus the plugins that would serve it, which the CLI fills from the registry.
#pragma once

#include "gguf/gguf_file.hpp"

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <variant>
#include <vector>

namespace wo::gguf {

struct TypeStat {
  uint32_t type = 0;
  std::string name; // "Q4_K"
  uint64_t count = 0;
  uint64_t bytes = 0;
};

using HparamValue = std::variant<int64_t, uint64_t, double, bool, std::string>;

struct ModelSummary {
  std::string source;
  uint64_t file_size = 0;
  uint32_t version = 0;
  uint64_t alignment = 0;
  std::string architecture; // "" when general.architecture is absent
  std::string name;         // general.name, "" when absent
  // Scalar `{arch}.*` keys with the prefix removed ("context_length", "attention.head_count").
  std::vector<std::pair<std::string, HparamValue>> hparams;
  std::string tokenizer_model; // tokenizer.ggml.model
  std::string tokenizer_pre;   // tokenizer.ggml.pre
  uint64_t vocab_size = 0;     // entries of tokenizer.ggml.tokens (else {arch}.vocab_size)
  uint64_t tensor_count = 0;
  std::vector<TypeStat> types; // most tensors first, then by name
  std::string file_type;       // general.file_type as llama.cpp names it ("Q4_K_M"), or the dominant type
  std::string quant_kind;      // quant_kind(f): "Q4_K_M", "Q8_0", "MXFP4" (what /health reports)
  std::string quant_label;     // "Q4_K_M mix: Q4_K×13, Q6_K×3, F32×5"
  uint64_t weight_bytes = 0;
  uint64_t kv_cache_bytes = 0; // FP16 K and V for every layer at the model's context length
  uint64_t context_length = 0;
  uint64_t estimated_vram_bytes = 0; // weights + KV cache (spec ML-5011)
};

// Which plugins would serve the model (filled by the CLI from the plugin registry).
struct PluginReport {
  std::string architecture;                 // "" when none
  std::string tokenizer;                    // "" when none
  std::map<std::string, std::string> quant; // type name -> plugin name, for every type served
  std::vector<std::string> missing;         // one sentence per thing nothing serves
};

ModelSummary summarize(const File &f);

// The model's quantization as users name it, the value /health, /metrics and `inspect` report:
// llama.cpp's general.file_type name without the "_MOE" suffix ("MXFP4_MOE" names the rule
// "experts in MXFP4, the rest in Q8_0"; the quantization is MXFP4), else the quantized type holding
// the most bytes, else "F32".
std::string quant_kind(const File &f);

// llama.cpp's name of a general.file_type value ("Q4_K_M"), or "" when unknown.
const char *file_type_name(int64_t file_type);

// JSON keys: version, alignment, file_size, architecture, name, hparams, tokenizer{model, pre,
// vocab_size}, tensor_count, tensor_types{type: count}, tensor_bytes{type: bytes}, file_type,
// quant_kind, quant_label, weight_bytes, kv_cache_bytes, context_length, estimated_vram_bytes, plugins
// {architecture, tokenizer, quant{type: plugin}}, missing[]; with `with_tensors`, tensors[] of
// {name, type, shape, offset, bytes}. Plugin values are null when unknown.
std::string summary_json(const File &f, const ModelSummary &s, const std::optional<PluginReport> &plugins,
                         bool with_tensors);

// The same, for people.
std::string summary_text(const File &f, const ModelSummary &s, const std::optional<PluginReport> &plugins,
                         bool with_tensors);

} // namespace wo::gguf
