#include "test_support.hpp"

#include <rapidjson/document.h>

#include <cstdlib>
#include <fstream>
#include <map>
#include <mutex>
#include <sstream>
#include <stdexcept>

namespace wo::tok::testing {

std::string fixtures_dir() {
  const char *e = std::getenv("WORKER_FIXTURES_DIR");
  return e && *e ? e : WORKER_FIXTURES_DIR_DEFAULT;
}

std::string tokenizer_fixtures_dir() {
  const char *e = std::getenv("WORKER_TOKENIZER_FIXTURES_DIR");
  return e && *e ? e : WORKER_TOKENIZER_FIXTURES_DIR_DEFAULT;
}

std::string read_file(const std::string &path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw std::runtime_error("cannot open fixture '" + path + "'");
  std::ostringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

bool file_exists(const std::string &path) { return std::ifstream(path).good(); }

std::unique_ptr<GgufTokenizer> load_gguf(const std::string &path) {
  auto g = std::make_unique<GgufTokenizer>();
  g->file = gguf::File::open(path);
  g->host = std::make_unique<gguf::MetaHost>(*g->file, [](wo_log_level, const char *) {});
  g->tok = Tokenizer::from_gguf(HostView(g->host->host()));
  return g;
}

const GgufTokenizer &cached_gguf(const std::string &path) {
  static std::mutex mu;
  static std::map<std::string, std::unique_ptr<GgufTokenizer>> cache;
  std::lock_guard<std::mutex> lock(mu);
  auto &slot = cache[path];
  if (!slot) slot = load_gguf(path);
  return *slot;
}

const Tokenizer &cached_hf_json(const std::string &path) {
  static std::mutex mu;
  static std::map<std::string, std::unique_ptr<Tokenizer>> cache;
  std::lock_guard<std::mutex> lock(mu);
  auto &slot = cache[path];
  if (!slot) slot = Tokenizer::from_hf_json(path);
  return *slot;
}

std::vector<RefEntry> load_reference(const std::string &path) {
  const std::string text = read_file(path);
  rapidjson::Document d;
  d.Parse(text.data(), text.size());
  if (d.HasParseError() || !d.IsObject() || !d.HasMember("entries"))
    throw std::runtime_error("bad reference file " + path);
  std::vector<RefEntry> out;
  for (const auto &e : d["entries"].GetArray()) {
    RefEntry r;
    r.name = e["name"].GetString();
    r.text.assign(e["text"].GetString(), e["text"].GetStringLength());
    for (int k = 0; k < 4; ++k) {
      std::string key = std::string("add_special_") + ((k & 2) ? "true" : "false") + "__parse_special_" +
                        ((k & 1) ? "true" : "false");
      const auto &res = e[key.c_str()];
      for (const auto &id : res["ids"].GetArray())
        r.ids[k].push_back(id.GetInt());
      r.detokenized[k].assign(res["detokenized"].GetString(), res["detokenized"].GetStringLength());
    }
    out.push_back(std::move(r));
  }
  return out;
}

std::vector<VocabCase> load_vocab_cases(const std::string &gguf_path) {
  const std::string inp = read_file(gguf_path + ".inp");
  const std::string outp = read_file(gguf_path + ".out");
  const std::string sep = "\n__ggml_vocab_test__\n";
  std::vector<std::string> texts;
  size_t pos = 0;
  for (;;) {
    size_t at = inp.find(sep, pos);
    if (at == std::string::npos) break;
    texts.push_back(inp.substr(pos, at - pos));
    pos = at + sep.size();
  }
  std::vector<VocabCase> cases;
  std::istringstream lines(outp);
  std::string line;
  for (const auto &t : texts) {
    if (!std::getline(lines, line))
      throw std::runtime_error("fewer .out lines than .inp cases in " + gguf_path);
    VocabCase c;
    c.text = t;
    std::istringstream ids(line);
    int32_t id;
    while (ids >> id)
      c.ids.push_back(id);
    cases.push_back(std::move(c));
  }
  return cases;
}

} // namespace wo::tok::testing
