// Shape presets: the tensor names, shapes and quant mix of real GGUF files (llama.cpp's
// Q4_K_M / MXFP4_MOE rules), filled with seeded random values by gguf-synth.
#pragma once

#include "gguf_writer.hpp"

#include <functional>
#include <string>
#include <vector>

namespace wo::synth {

// How gguf-synth fills a tensor.
enum class Fill {
  normal,    // N(0, scale^2)
  norm_gain, // 1 + U(-scale, scale): RMSNorm/LayerNorm weights
};

struct SynthTensor {
  std::string name;
  uint32_t ggml_type;
  std::vector<int64_t> ne;
  Fill fill = Fill::normal;
  float scale = 1.0f;
};

struct Preset {
  std::string name;
  std::string description;
  std::string arch;
  int64_t n_vocab = 0;
  std::string default_pre; // tokenizer.ggml.pre of the real model (for --tokenizer-from tokenizer.json)
  std::vector<SynthTensor> tensors;
  // Architecture metadata (general.* and {arch}.*), applied to the writer.
  std::function<void(GgufWriter &)> metadata;
};

const std::vector<std::string> &preset_names();
// Throws wo::Error naming the known presets when `name` is unknown.
Preset make_preset(const std::string &name);

} // namespace wo::synth
