// The reader on the real-format fixture models: they open; truncated copies and copies with a
// corrupted header field give a clean WO_ERR_FORMAT (never a crash; CI runs this under ASan).
#include "fixture_paths.hpp"
#include "gguf/gguf_file.hpp"

#include <worker/ggml_types.hpp>

#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <set>

namespace wo::gguf {
namespace {

using namespace test;

class FixtureModel : public ::testing::TestWithParam<std::string> {};

// Parse an exact-size heap copy, so ASan sees any read past the end.
void expect_clean_rejection(const std::vector<uint8_t> &bytes, const std::string &what) {
  std::vector<uint8_t> copy(bytes);
  try {
    File::parse(copy.empty() ? nullptr : copy.data(), copy.size(), {}, what);
    ADD_FAILURE() << what << ": accepted";
  } catch (const Error &e) {
    EXPECT_EQ(e.status(), WO_ERR_FORMAT) << what << ": " << e.what();
    EXPECT_NE(std::string(e.what()).find(what), std::string::npos) << e.what();
  }
}

TEST_P(FixtureModel, OpensAndEveryTensorLiesInsideTheFile) {
  auto f = File::open(model_path(GetParam()));
  EXPECT_EQ(f->version(), 3u);
  EXPECT_EQ(f->alignment(), 32u);
  ASSERT_FALSE(f->tensors().empty());
  for (const TensorInfo &t : f->tensors()) {
    EXPECT_GE(t.offset, f->data_offset()) << t.name;
    EXPECT_LE(t.offset + t.nbytes, f->size()) << t.name;
    EXPECT_EQ(t.offset % f->alignment(), 0u) << t.name;
    EXPECT_EQ(t.nbytes, ggml::row_bytes(t.type, t.ne[0]) * (t.n_elements() / t.ne[0])) << t.name;
    EXPECT_EQ(f->find_tensor(t.name), &t);
  }
}

TEST_P(FixtureModel, TruncatedCopiesFailCleanly) {
  const auto bytes = read_all(model_path(GetParam()));
  auto f = File::parse(bytes.data(), bytes.size());
  // The header, key by key and tensor info by tensor info, then points in the data.
  std::set<uint64_t> cuts = {0, 1, 3, 4, 5, 7, 8, 12, 16, 20, 23, 24, 25, 31};
  for (const KeyValue &kv : f->metadata()) {
    cuts.insert(kv.offset + 3);
    cuts.insert(kv.offset + 8 + kv.key.size() / 2);
    cuts.insert(kv.value.offset + 1);
  }
  for (const TensorInfo &t : f->tensors()) {
    cuts.insert(t.info_offset + 5);
    cuts.insert(t.info_offset + 8 + t.name.size() + 2);
    cuts.insert(t.offset + t.nbytes - 1);
  }
  cuts.insert(f->data_offset() - 1);
  cuts.insert(bytes.size() - 1);
  // Keep the run short under ASan: every fixed header cut, then an even sample of the rest.
  std::vector<uint64_t> all(cuts.begin(), cuts.end());
  std::vector<uint64_t> picked(all.begin(), all.begin() + 14);
  const size_t rest = all.size() - 14, want = 26;
  for (size_t k = 0; k < want && k < rest; ++k)
    picked.push_back(all[14 + k * rest / std::min(rest, want)]);
  size_t tried = 0;
  for (uint64_t n : picked) {
    if (n >= bytes.size()) continue;
    std::vector<uint8_t> cut(bytes.begin(), bytes.begin() + static_cast<long>(n));
    expect_clean_rejection(cut, GetParam() + " cut at " + std::to_string(n));
    ++tried;
  }
  EXPECT_GE(tried, 38u);
}

TEST_P(FixtureModel, CorruptedHeaderFieldsFailCleanly) {
  const auto bytes = read_all(model_path(GetParam()));
  auto f = File::parse(bytes.data(), bytes.size());
  auto patched = [&](uint64_t at, const void *v, size_t n) {
    std::vector<uint8_t> b(bytes);
    std::memcpy(b.data() + at, v, n);
    return b;
  };
  const uint32_t v1 = 1, v9 = 9, bad_type = 77, removed = 5, dims7 = 7;
  const uint64_t huge = 0xfffffffffffff000ull, one = 1;
  const std::string m = GetParam();
  expect_clean_rejection(patched(0, "GGML", 4), m + " magic");
  expect_clean_rejection(patched(4, &v1, 4), m + " version 1");
  expect_clean_rejection(patched(4, &v9, 4), m + " version 9");
  expect_clean_rejection(patched(8, &huge, 8), m + " tensor count");
  expect_clean_rejection(patched(16, &huge, 8), m + " kv count");
  const KeyValue &k0 = f->metadata().front();
  expect_clean_rejection(patched(k0.offset, &huge, 8), m + " key length");
  expect_clean_rejection(patched(k0.value.offset - 4, &bad_type, 4), m + " value type");
  // The tokens array: its length.
  for (const KeyValue &kv : f->metadata())
    if (kv.value.is_array()) {
      expect_clean_rejection(patched(kv.value.offset + 4, &huge, 8),
                             m + " array length of " + std::string(kv.key));
      break;
    }
  const TensorInfo &t = f->tensors()[f->tensors().size() / 2];
  const uint64_t dims_at = t.info_offset + 8 + t.name.size();
  const uint64_t type_at = dims_at + 4 + 8 * t.n_dims;
  expect_clean_rejection(patched(dims_at, &dims7, 4), m + " n_dims");
  expect_clean_rejection(patched(dims_at + 4, &huge, 8), m + " ne[0]");
  expect_clean_rejection(patched(type_at, &bad_type, 4), m + " type id");
  expect_clean_rejection(patched(type_at, &removed, 4), m + " removed type id");
  const uint64_t rel = t.offset - f->data_offset();
  const uint64_t misaligned = rel + 1, past = bytes.size();
  expect_clean_rejection(patched(type_at + 4, &misaligned, 8), m + " misaligned offset");
  expect_clean_rejection(patched(type_at + 4, &past, 8), m + " offset past end");
  // Pointing a tensor at its neighbour's bytes makes them overlap.
  const TensorInfo &other = f->tensors()[0].name == t.name ? f->tensors()[1] : f->tensors()[0];
  const uint64_t other_rel = other.offset - f->data_offset();
  if (t.nbytes + other_rel <= bytes.size() - f->data_offset())
    expect_clean_rejection(patched(type_at + 4, &other_rel, 8), m + " overlapping offset");
  // A duplicate tensor name: give the second tensor the first one's name when lengths match.
  for (size_t i = 1; i < f->tensors().size(); ++i) {
    const TensorInfo &a = f->tensors()[0], &b = f->tensors()[i];
    if (a.name.size() == b.name.size()) {
      expect_clean_rejection(patched(b.info_offset + 8, a.name.data(), a.name.size()), m + " duplicate name");
      break;
    }
  }
  (void)one;
}

TEST_P(FixtureModel, RandomHeaderByteFlipsNeverCrash) {
  const auto bytes = read_all(model_path(GetParam()));
  auto f = File::parse(bytes.data(), bytes.size());
  const uint64_t header_end = f->data_offset();
  std::mt19937_64 rng(std::random_device{}());
  int rejected = 0;
  for (int i = 0; i < 20; ++i) {
    std::vector<uint8_t> b(bytes);
    for (int k = 0; k < 4; ++k)
      b[rng() % header_end] ^= static_cast<uint8_t>(1u << (rng() % 8));
    try {
      File::parse(b.data(), b.size());
    } catch (const Error &e) {
      EXPECT_EQ(e.status(), WO_ERR_FORMAT) << e.what();
      ++rejected;
    }
  }
  SUCCEED() << rejected << " of 20 flipped copies rejected";
}

INSTANTIATE_TEST_SUITE_P(Models, FixtureModel, ::testing::ValuesIn(fixture_models()), [](const auto &info) {
  std::string n = info.param;
  for (char &c : n)
    if (!isalnum(static_cast<unsigned char>(c))) c = '_';
  return n;
});

// Vocab-only GGUFs: metadata and no tensors.
TEST(GgufVocabOnly, OpenWithTokensAndNoTensors) {
  struct V {
    std::string path;
    std::string arch;
    uint64_t n_vocab;
  };
  const std::vector<V> files = {
      {fixtures_dir() + "/vocab/ggml-vocab-gpt-2.gguf", "gpt2", 50257},
      {fixtures_dir() + "/vocab/ggml-vocab-llama-spm.gguf", "llama", 32000},
      {fixtures_dir() + "/vocab/ggml-vocab-phi-3.gguf", "phi3", 32064},
      {tokenizer_fixtures_dir() + "/qwen2-tiny-vocab.gguf", "qwen2", 151936},
      {tokenizer_fixtures_dir() + "/gpt-oss-tiny-vocab.gguf", "gpt-oss", 201088},
  };
  for (const V &v : files) {
    auto f = File::open(v.path);
    EXPECT_TRUE(f->tensors().empty()) << v.path;
    EXPECT_EQ(f->architecture(), v.arch) << v.path;
    const Value &toks = f->get_array("tokenizer.ggml.tokens", WO_VALUE_STRING);
    EXPECT_EQ(toks.len, v.n_vocab) << v.path;
    EXPECT_EQ(toks.strings.size(), v.n_vocab) << v.path;
    if (f->has("tokenizer.ggml.merges")) {
      EXPECT_GT(f->get_array("tokenizer.ggml.merges", WO_VALUE_STRING).len, 0u);
    }
  }
}

} // namespace
} // namespace wo::gguf
