// Tokenizer metadata for generated models, so that text prompts work on them.
#pragma once

#include "gguf_writer.hpp"

#include <string>

namespace wo::synth {

// Copy the tokenizer.* keys of a GGUF file, or build them from a Hugging Face tokenizer.json
// (+ tokenizer_config.json beside it). `source` empty: a byte-level vocabulary of 256 byte
// tokens plus <|endoftext|>. The vocabulary is padded with [PAD<i>] (type UNUSED) to n_vocab,
// as llama.cpp's converter pads; a source larger than n_vocab is an error.
void add_tokenizer(GgufWriter &w, const std::string &source, int64_t n_vocab, const std::string &default_pre);

} // namespace wo::synth
