// Encode throughput (MB/s of UTF-8 input, one thread) of the byte-level BPE tokenizers on
//  - 1 MB of English prose: the license texts and copyright files installed under /usr/share
//    (available offline), concatenated until 1 MB, and
//  - 1 MB of mixed CJK / kana / Hangul / emoji text from a fixed-seed generator,
// for the qwen2 and gpt-oss vocabularies (GGUF), plus the hf-json backend on the same texts.
// Steady state: the piece cache is warm after the first iteration, as in a serving process.
#include "test_support.hpp"
#include "utf8_text.hpp"

#include <benchmark/benchmark.h>

#include <algorithm>
#include <filesystem>
#include <random>

namespace {

using wo::tok::Tokenizer;
namespace t = wo::tok::testing;

constexpr size_t kSize = 1 << 20;

bool valid_utf8(const std::string &s) {
  try {
    wo::tok::require_utf8(s, "file");
    return true;
  } catch (...) {
    return false;
  }
}

const std::string &english_prose() {
  static const std::string text = [] {
    std::vector<std::string> files;
    for (const char *dir : {"/usr/share/common-licenses", "/usr/share/doc"}) {
      std::error_code ec;
      for (auto it = std::filesystem::recursive_directory_iterator(dir, ec);
           !ec && it != std::filesystem::recursive_directory_iterator(); it.increment(ec)) {
        const auto &p = it->path();
        if (!it->is_regular_file(ec)) continue;
        const std::string name = p.filename().string();
        if (p.parent_path().string() == "/usr/share/common-licenses" || name == "copyright")
          files.push_back(p.string());
      }
    }
    std::sort(files.begin(), files.end());
    std::string s;
    for (const auto &f : files) {
      if (s.size() >= kSize) break;
      std::string body = t::read_file(f);
      if (valid_utf8(body)) s += body;
    }
    if (s.empty()) s = "The quick brown fox jumps over the lazy dog. ";
    while (s.size() < kSize)
      s += s; // only if the system has too little text
    s.resize(kSize);
    while (!valid_utf8(s))
      s.pop_back(); // do not cut a character
    return s;
  }();
  return text;
}

void append_cp(std::string &s, uint32_t cp) {
  if (cp < 0x80)
    s += static_cast<char>(cp);
  else if (cp < 0x800)
    s += {static_cast<char>(0xC0 | (cp >> 6)), static_cast<char>(0x80 | (cp & 0x3F))};
  else if (cp < 0x10000)
    s += {static_cast<char>(0xE0 | (cp >> 12)), static_cast<char>(0x80 | ((cp >> 6) & 0x3F)),
          static_cast<char>(0x80 | (cp & 0x3F))};
  else
    s += {static_cast<char>(0xF0 | (cp >> 18)), static_cast<char>(0x80 | ((cp >> 12) & 0x3F)),
          static_cast<char>(0x80 | ((cp >> 6) & 0x3F)), static_cast<char>(0x80 | (cp & 0x3F))};
}

const std::string &cjk_emoji() {
  static const std::string text = [] {
    std::mt19937 rng(20240601);
    std::string s;
    const char *ascii[] = {" GPU", " token", " 2024", " OK", " AI", " model"};
    while (s.size() < kSize) {
      for (int run = 5 + rng() % 25; run > 0; --run) {
        switch (rng() % 10) {
        case 0: append_cp(s, 0x3041 + rng() % 0x56); break;  // hiragana
        case 1: append_cp(s, 0x30A1 + rng() % 0x5A); break;  // katakana
        case 2: append_cp(s, 0xAC00 + rng() % 2000); break;  // Hangul syllables (common part)
        case 3: append_cp(s, 0x1F600 + rng() % 0x50); break; // emoticons
        default: append_cp(s, 0x4E00 + rng() % 3500); break; // frequent CJK ideographs
        }
      }
      switch (rng() % 6) {
      case 0: s += "\xEF\xBC\x8C"; break; // ，
      case 1: s += "\xE3\x80\x82"; break; // 。
      case 2: s += ascii[rng() % 6]; break;
      case 3: s += "\n"; break;
      default: break;
      }
    }
    while (s.size() > kSize || !valid_utf8(s))
      s.pop_back();
    return s;
  }();
  return text;
}

void run(benchmark::State &state, const Tokenizer &tok, const std::string &text) {
  std::vector<int32_t> ids;
  tok.encode(text, false, false, ids); // warm the piece cache
  for (auto _ : state) {
    tok.encode(text, false, false, ids);
    benchmark::DoNotOptimize(ids.data());
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * static_cast<int64_t>(text.size()));
  state.counters["tokens"] = static_cast<double>(ids.size());
  state.counters["bytes/token"] =
      static_cast<double>(text.size()) / static_cast<double>(std::max<size_t>(1, ids.size()));
}

const Tokenizer &gguf(const char *file) {
  return *t::cached_gguf(t::tokenizer_fixtures_dir() + "/" + file).tok;
}
const Tokenizer &json(const char *dir) {
  return t::cached_hf_json(t::tokenizer_fixtures_dir() + "/" + dir + "/tokenizer.json");
}

void BM_Qwen2_English(benchmark::State &s) { run(s, gguf("qwen2-tiny-vocab.gguf"), english_prose()); }
void BM_Qwen2_CjkEmoji(benchmark::State &s) { run(s, gguf("qwen2-tiny-vocab.gguf"), cjk_emoji()); }
void BM_GptOss_English(benchmark::State &s) { run(s, gguf("gpt-oss-tiny-vocab.gguf"), english_prose()); }
void BM_GptOss_CjkEmoji(benchmark::State &s) { run(s, gguf("gpt-oss-tiny-vocab.gguf"), cjk_emoji()); }
void BM_HfJsonQwen_English(benchmark::State &s) { run(s, json("qwen"), english_prose()); }
void BM_HfJsonGptOss_CjkEmoji(benchmark::State &s) { run(s, json("gpt-oss"), cjk_emoji()); }

BENCHMARK(BM_Qwen2_English)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Qwen2_CjkEmoji)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_GptOss_English)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_GptOss_CjkEmoji)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_HfJsonQwen_English)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_HfJsonGptOss_CjkEmoji)->Unit(benchmark::kMillisecond);

} // namespace

BENCHMARK_MAIN();
