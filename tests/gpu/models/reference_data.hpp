// The golden references of tests/fixtures/reference/<model>/reference.json (see the fixtures
// README): prompts, per-position top-20 logits, the last position's full logits file, the greedy
// continuation and, for gpt-oss, the router's expert choices.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace wo::testing {

struct RoutedToken {
  double gap = 0;               // router logit gap between the k-th and (k+1)-th expert
  std::vector<int32_t> experts; // selected experts, descending router logit
};
// [layer][token]
using Routing = std::vector<std::vector<RoutedToken>>;

struct ReferencePrompt {
  std::string name;
  std::vector<int32_t> tokens;
  std::string logits_file; // relative to the reference folder
  double logits_std = 0;
  int32_t logits_argmax = -1;
  std::vector<std::vector<std::pair<int32_t, float>>> topk; // [position][rank] = (id, logit)
  std::vector<int32_t> greedy;
  Routing routing_prompt; // empty unless the model routes experts
  Routing routing_greedy;
};

struct Reference {
  std::string dir;        // the folder holding reference.json
  std::string model_file; // e.g. "llama-tiny-Q8_0.gguf" (basename)
  std::string arch;
  int64_t n_vocab = 0;
  std::vector<ReferencePrompt> prompts;
};

// Throws std::runtime_error naming the file and the key when the JSON is not as expected.
Reference load_reference(const std::string &dir);

// Folders under `root` holding a reference.json (sorted; "tokenize" has none and is skipped).
std::vector<std::string> reference_dirs(const std::string &root);

// Raw float32 little-endian file; empty when the file does not exist.
std::vector<float> read_f32(const std::string &path);

} // namespace wo::testing
