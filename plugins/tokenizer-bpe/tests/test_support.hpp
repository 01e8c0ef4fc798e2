// Fixture access shared by the tokenizer tests and the benchmark.
#pragma once

#include "tokenizer.hpp"

#include "gguf/gguf_file.hpp"
#include "gguf/host_meta.hpp"

#include <array>
#include <memory>
#include <string>
#include <vector>

namespace wo::tok::testing {

std::string fixtures_dir();           // env WORKER_FIXTURES_DIR or the compile-time default
std::string tokenizer_fixtures_dir(); // env WORKER_TOKENIZER_FIXTURES_DIR or the default

// A GGUF opened with its device-less host, and the tokenizer built from its metadata.
struct GgufTokenizer {
  std::unique_ptr<gguf::File> file;
  std::unique_ptr<gguf::MetaHost> host;
  std::unique_ptr<Tokenizer> tok;
};
std::unique_ptr<GgufTokenizer> load_gguf(const std::string &path);
// Loaded once per process (the big vocabularies take a while under sanitizers).
const GgufTokenizer &cached_gguf(const std::string &path);
const Tokenizer &cached_hf_json(const std::string &path);

// reference/tokenize/<vocab>.json: one entry per text, ids for the four flag combinations
// indexed by (add_special ? 2 : 0) + (parse_special ? 1 : 0).
struct RefEntry {
  std::string name, text;
  std::array<std::vector<int32_t>, 4> ids;
  std::array<std::string, 4> detokenized;
};
std::vector<RefEntry> load_reference(const std::string &path);

// vocab/<vocab>.gguf.inp / .out pairs.
struct VocabCase {
  std::string text;
  std::vector<int32_t> ids;
};
std::vector<VocabCase> load_vocab_cases(const std::string &gguf_path);

std::string read_file(const std::string &path);
bool file_exists(const std::string &path);

} // namespace wo::tok::testing
