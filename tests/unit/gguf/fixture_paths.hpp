// Where the tests find the project's fixtures (env var first, then the build's default).
#pragma once

#include <cstdlib>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

namespace wo::gguf::test {

inline std::string fixtures_dir() {
  const char *e = std::getenv("WORKER_FIXTURES_DIR");
  return e && *e ? e : WORKER_FIXTURES_DIR_DEFAULT;
}
inline std::string tokenizer_fixtures_dir() {
  const char *e = std::getenv("WORKER_TOKENIZER_FIXTURES_DIR");
  return e && *e ? e : WORKER_TOKENIZER_FIXTURES_DIR_DEFAULT;
}
inline const std::vector<std::string> &fixture_models() {
  static const std::vector<std::string> m = {"llama-tiny-Q8_0", "llama-tiny-Q4_K_M", "phi3-tiny-Q4_K_M",
                                             "gpt2-tiny-Q8_0"};
  return m;
}
inline std::string model_path(const std::string &name) {
  return fixtures_dir() + "/models/" + name + ".gguf";
}

inline std::vector<uint8_t> read_all(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(in), {});
}
inline void write_all(const std::string &path, const std::vector<uint8_t> &bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char *>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
}

} // namespace wo::gguf::test
