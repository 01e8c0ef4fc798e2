// `worker-orcd inspect --json` and `dump-tensor`, run as the built binary on the fixture models
// and compared with the facts of tests/fixtures (README and reference.json, written by llama.cpp's
// tools, not by this reader).
#include "fixture_paths.hpp"
#include "gguf/gguf_file.hpp"
#include "gguf/model_summary.hpp"
#include "gguf/native_dequant.hpp"
#include "gguf_builder.hpp"
#include "run_command.hpp"

#include <worker/ggml_types.hpp>

#include <gtest/gtest.h>
#include <rapidjson/document.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <map>
#include <random>
#include <unistd.h>

namespace wo::gguf {
namespace {

using namespace test;
namespace fs = std::filesystem;

std::string binary() { return std::string(WORKER_BUILD_DIR) + "/bin/worker-orcd"; }

// Runs the worker binary with args (already shell-quoted); stdout captured, stderr to err_file.
wo::test::CommandResult run(const std::string &args, const std::string &err_file = "/dev/null") {
  return wo::test::run_command("'" + binary() + "' " + args + " 2>'" + err_file + "'");
}

std::string tmp_path(const std::string &name) {
  return (fs::temp_directory_path() / ("gguf-inspect-" + std::to_string(::getpid()) + "-" + name)).string();
}

// Per-type counts from the issue (= the fixture README).
const std::map<std::string, std::map<std::string, uint64_t>> kTypeCounts = {
    {"llama-tiny-Q8_0", {{"Q8_0", 16}, {"F32", 5}}},
    {"llama-tiny-Q4_K_M", {{"Q6_K", 3}, {"F32", 5}, {"Q4_K", 13}}},
    {"phi3-tiny-Q4_K_M", {{"Q8_0", 2}, {"F32", 5}, {"Q5_0", 6}, {"Q4_K", 1}, {"Q6_K", 1}}},
    {"gpt2-tiny-Q8_0", {{"F32", 19}, {"Q8_0", 9}}},
};

class InspectFixture : public ::testing::TestWithParam<std::string> {
protected:
  void SetUp() override {
    if (::access(binary().c_str(), X_OK) != 0) GTEST_SKIP() << "worker-orcd not built at " << binary();
  }
};

TEST_P(InspectFixture, JsonMatchesTheFixtureFacts) {
  const std::string name = GetParam();
  wo::test::CommandResult r = run("inspect --json '" + model_path(name) + "'");
  ASSERT_EQ(r.status, 0) << r.out;
  rapidjson::Document d;
  ASSERT_FALSE(d.Parse(r.out.c_str()).HasParseError()) << r.out;

  const auto ref_text = read_all(fixtures_dir() + "/reference/" + name + "/reference.json");
  rapidjson::Document ref;
  ASSERT_FALSE(ref.Parse(reinterpret_cast<const char *>(ref_text.data()), ref_text.size()).HasParseError());
  const auto &meta = ref["metadata"];
  const std::string arch = ref["arch"].GetString();

  EXPECT_EQ(d["version"].GetUint(), 3u);
  EXPECT_EQ(d["alignment"].GetUint(), 32u);
  EXPECT_EQ(d["file_size"].GetUint64(), ref["model_bytes"].GetUint64());
  EXPECT_EQ(std::string(d["architecture"].GetString()), arch);
  EXPECT_EQ(std::string(d["name"].GetString()), meta["general.name"].GetString());
  EXPECT_EQ(std::string(d["tokenizer"]["model"].GetString()), meta["tokenizer.ggml.model"].GetString());
  EXPECT_EQ(std::string(d["tokenizer"]["pre"].GetString()), meta["tokenizer.ggml.pre"].GetString());
  EXPECT_EQ(d["tokenizer"]["vocab_size"].GetUint64(), ref["n_vocab"].GetUint64());

  // Every `{arch}.*` key of the reference appears in hparams with the same value.
  const auto &hp = d["hparams"];
  int checked = 0;
  for (auto it = meta.MemberBegin(); it != meta.MemberEnd(); ++it) {
    std::string key = it->name.GetString();
    if (key.rfind(arch + ".", 0) != 0) continue;
    std::string suffix = key.substr(arch.size() + 1);
    ASSERT_TRUE(hp.HasMember(suffix.c_str())) << suffix;
    const auto &got = hp[suffix.c_str()];
    if (it->value.IsNumber()) {
      ASSERT_TRUE(got.IsNumber()) << suffix;
      EXPECT_NEAR(got.GetDouble(), it->value.GetDouble(), 1e-9 * std::fabs(it->value.GetDouble())) << suffix;
    } else if (it->value.IsString()) {
      EXPECT_EQ(std::string(got.GetString()), it->value.GetString()) << suffix;
    }
    ++checked;
  }
  EXPECT_GE(checked, 5); // gpt2 has the fewest: 6

  // Exact per-type tensor counts: the table and the reference's agree with the output.
  const auto &types = d["tensor_types"];
  const auto &expected = kTypeCounts.at(name);
  EXPECT_EQ(types.MemberCount(), expected.size());
  uint64_t total = 0;
  for (const auto &[type, count] : expected) {
    ASSERT_TRUE(types.HasMember(type.c_str())) << type;
    EXPECT_EQ(types[type.c_str()].GetUint64(), count) << type;
    EXPECT_EQ(ref["tensor_type_counts"][type.c_str()].GetUint64(), count) << type;
    total += count;
  }
  EXPECT_EQ(d["tensor_count"].GetUint64(), total);

  // estimated_vram_bytes = weights + 2 (K,V) x n_layer x n_ctx x n_head_kv x head_dim x 2 bytes.
  auto f = File::open(model_path(name));
  uint64_t weights = 0;
  for (const auto &t : f->tensors())
    weights += t.nbytes;
  const uint64_t n_layer = meta[(arch + ".block_count").c_str()].GetUint64();
  const uint64_t n_ctx = meta[(arch + ".context_length").c_str()].GetUint64();
  const uint64_t n_head = meta[(arch + ".attention.head_count").c_str()].GetUint64();
  const std::string kv_key = arch + ".attention.head_count_kv";
  const uint64_t n_head_kv = meta.HasMember(kv_key.c_str()) ? meta[kv_key.c_str()].GetUint64() : n_head;
  const uint64_t head_dim = meta[(arch + ".embedding_length").c_str()].GetUint64() / n_head;
  EXPECT_EQ(d["weight_bytes"].GetUint64(), weights);
  EXPECT_EQ(d["estimated_vram_bytes"].GetUint64(), weights + 2 * n_layer * n_ctx * n_head_kv * head_dim * 2);

  // A label users recognise, and the keys consumers rely on: the fixtures are named after their
  // llama.cpp file type ("llama-tiny-Q4_K_M").
  EXPECT_EQ(std::string(d["quant_kind"].GetString()), name.substr(name.rfind('-') + 1));
  const std::string label = d["quant_label"].GetString();
  EXPECT_EQ(label.rfind(name.substr(name.rfind('-') + 1), 0), 0u) << label;
  for (const auto &[type, count] : expected)
    EXPECT_NE(label.find(type + "\u00d7" + std::to_string(count)), std::string::npos) << label;
  // Plugins (whatever this build's plugin folder holds): every type has a codec or is named as
  // missing, and so do the architecture and the tokenizer.
  const auto &plugins = d["plugins"];
  ASSERT_TRUE(plugins["quant"].IsObject());
  ASSERT_TRUE(d["missing"].IsArray());
  std::string missing;
  for (const auto &m : d["missing"].GetArray())
    missing += std::string(m.GetString()) + "\n";
  for (const auto &[type, count] : expected)
    EXPECT_TRUE(plugins["quant"].HasMember(type.c_str()) ||
                missing.find("type " + type + " ") != std::string::npos)
        << type << "\n"
        << missing;
  EXPECT_TRUE(plugins["architecture"].IsString() || missing.find("architecture: ") != std::string::npos)
      << missing;
  EXPECT_TRUE(plugins["tokenizer"].IsString() || missing.find("tokenizer: ") != std::string::npos) << missing;
  if (plugins["architecture"].IsString()) {
    EXPECT_EQ(missing.find("architecture: "), std::string::npos) << missing;
  }
  EXPECT_FALSE(d.HasMember("tensors"));
}

TEST_P(InspectFixture, TensorsListEveryTensor) {
  wo::test::CommandResult r = run("inspect --json --tensors '" + model_path(GetParam()) + "'");
  ASSERT_EQ(r.status, 0);
  rapidjson::Document d;
  ASSERT_FALSE(d.Parse(r.out.c_str()).HasParseError());
  auto f = File::open(model_path(GetParam()));
  const auto &ts = d["tensors"];
  ASSERT_EQ(ts.Size(), f->tensors().size());
  for (rapidjson::SizeType i = 0; i < ts.Size(); ++i) {
    const TensorInfo &t = f->tensors()[i];
    EXPECT_EQ(std::string(ts[i]["name"].GetString()), t.name);
    EXPECT_EQ(std::string(ts[i]["type"].GetString()), ggml::type_info(t.type)->name);
    EXPECT_EQ(ts[i]["shape"].Size(), t.n_dims);
    EXPECT_EQ(ts[i]["offset"].GetUint64(), t.offset);
    EXPECT_EQ(ts[i]["bytes"].GetUint64(), t.nbytes);
  }
}

TEST_P(InspectFixture, BrokenCopiesExitWithOneAndAMessage) {
  const auto bytes = read_all(model_path(GetParam()));
  auto f = File::parse(bytes.data(), bytes.size());
  const std::string copy = tmp_path(GetParam() + ".gguf"), err = tmp_path(GetParam() + ".err");
  const uint64_t cuts[] = {2, 20, f->data_offset() / 2, f->data_offset() + 1, bytes.size() - 1};
  for (uint64_t n : cuts) {
    write_all(copy, std::vector<uint8_t>(bytes.begin(), bytes.begin() + static_cast<long>(n)));
    wo::test::CommandResult r = run("inspect --json '" + copy + "'", err);
    EXPECT_EQ(r.status, 1) << "cut at " << n;
    EXPECT_TRUE(r.out.empty()) << r.out;
    auto msg = read_all(err);
    std::string text(msg.begin(), msg.end());
    EXPECT_NE(text.find("inspect: " + copy), std::string::npos) << text;
  }
  std::vector<uint8_t> bad(bytes);
  const uint32_t v1 = 1;
  std::memcpy(bad.data() + 4, &v1, 4);
  write_all(copy, bad);
  wo::test::CommandResult r = run("inspect '" + copy + "'", err);
  EXPECT_EQ(r.status, 1);
  std::remove(copy.c_str());
  std::remove(err.c_str());
}

INSTANTIATE_TEST_SUITE_P(Models, InspectFixture, ::testing::ValuesIn(fixture_models()), [](const auto &info) {
  std::string n = info.param;
  for (char &c : n)
    if (!isalnum(static_cast<unsigned char>(c))) c = '_';
  return n;
});

TEST(InspectSummary, VocabOnlyFileHasNoTensorsAndAKvEstimate) {
  auto f = File::open(fixtures_dir() + "/vocab/ggml-vocab-phi-3.gguf");
  ModelSummary s = summarize(*f);
  EXPECT_EQ(s.tensor_count, 0u);
  EXPECT_EQ(s.weight_bytes, 0u);
  EXPECT_EQ(s.quant_label, "no tensors");
  EXPECT_EQ(s.vocab_size, 32064u);
  EXPECT_EQ(s.architecture, "phi3");
  const std::string json = summary_json(*f, s, std::nullopt, true);
  rapidjson::Document d;
  ASSERT_FALSE(d.Parse(json.c_str()).HasParseError());
  EXPECT_EQ(d["tensors"].Size(), 0u);
}

TEST(InspectSummary, PluginReportIsRendered) {
  auto f = File::open(model_path("llama-tiny-Q4_K_M"));
  ModelSummary s = summarize(*f);
  PluginReport p;
  p.architecture = "llama";
  p.quant = {{"Q4_K", "quant-ggml"}, {"F32", "quant-ggml"}};
  p.missing = {"no quant plugin serves Q6_K (3 tensors, e.g. 'output.weight')"};
  rapidjson::Document d;
  ASSERT_FALSE(d.Parse(summary_json(*f, s, p, false).c_str()).HasParseError());
  EXPECT_STREQ(d["plugins"]["architecture"].GetString(), "llama");
  EXPECT_TRUE(d["plugins"]["tokenizer"].IsNull());
  EXPECT_STREQ(d["plugins"]["quant"]["Q4_K"].GetString(), "quant-ggml");
  EXPECT_EQ(d["missing"].Size(), 1u);
  EXPECT_EQ(s.quant_label.rfind("Q4_K_M mix: ", 0), 0u) << s.quant_label;
}

// quant_kind: llama.cpp's file type name; "_MOE" (a mix rule, not a quantization) is dropped; without
// general.file_type the quantized type holding the most bytes decides, and F32 when none is quantized.
std::string kind_of(std::optional<uint32_t> file_type,
                    const std::vector<std::pair<uint32_t, uint64_t>> &tensors) {
  GgufBuilder b;
  b.kv_str("general.architecture", "gpt-oss");
  if (file_type) b.kv_u32("general.file_type", *file_type);
  int i = 0;
  for (const auto &[type, blocks] : tensors) {
    const auto *ti = ggml::type_info(type);
    b.tensor("t" + std::to_string(i++), {static_cast<uint64_t>(ti->block_elems) * blocks}, type,
             static_cast<uint64_t>(ti->block_bytes) * blocks);
  }
  const std::vector<uint8_t> bytes = b.build();
  auto f = File::parse(bytes.data(), bytes.size(), {}, "kind.gguf");
  EXPECT_EQ(summarize(*f).quant_kind, quant_kind(*f));
  return quant_kind(*f);
}

TEST(InspectSummary, QuantKindNamesTheQuantizationUsersKnow) {
  EXPECT_EQ(kind_of(38, {{ggml::MXFP4, 64}, {ggml::Q8_0, 8}, {ggml::F32, 4}}), "MXFP4"); // MXFP4_MOE
  EXPECT_EQ(kind_of(15, {{ggml::Q4_K, 8}, {ggml::Q6_K, 8}}), "Q4_K_M");
  EXPECT_EQ(kind_of(7, {{ggml::Q8_0, 8}}), "Q8_0");
  // No file type: the quantized type with the most bytes (Q6_K: 8 x 210 > 9 x 144 Q4_K bytes).
  EXPECT_EQ(kind_of(std::nullopt, {{ggml::Q4_K, 9}, {ggml::Q6_K, 8}, {ggml::F32, 4096}}), "Q6_K");
  EXPECT_EQ(kind_of(std::nullopt, {{ggml::F32, 16}}), "F32");
}

// ---- dump-tensor ----

// Independent reference for binary16: (-1)^s 2^(e-15) (1 + m/1024), subnormals m 2^-24.
double half_reference(uint16_t h) {
  const int s = h >> 15, e = (h >> 10) & 31, m = h & 1023;
  double v = e == 0 ? std::ldexp(m, -24) : e == 31 ? (m ? NAN : INFINITY) : std::ldexp(1024 + m, e - 25);
  return s ? -v : v;
}

TEST(NativeDequant, HalfToFloatIsExactForEveryValue) {
  for (uint32_t h = 0; h < 65536; ++h) {
    const double want = half_reference(static_cast<uint16_t>(h));
    const float got = half_to_float(static_cast<uint16_t>(h));
    if (std::isnan(want)) {
      EXPECT_TRUE(std::isnan(got)) << h;
      continue;
    }
    ASSERT_EQ(static_cast<double>(got), want) << "half bits " << h;
    if (want == 0) {
      EXPECT_EQ(std::signbit(got), (h >> 15) != 0);
    }
  }
}

TEST(DumpTensor, WritesF32F16Bf16AsFloat32RowMajor) {
  if (::access(binary().c_str(), X_OK) != 0) GTEST_SKIP() << "worker-orcd not built";
  std::mt19937 rng(std::random_device{}());
  std::normal_distribution<float> nd(0.f, 3.f);
  GgufBuilder b;
  b.kv_str("general.architecture", "llama");
  const int64_t cols = 48, rows = 5;
  b.tensor("f32", {cols, rows}, ggml::F32, cols * rows * 4);
  b.tensor("f16", {cols, rows}, ggml::F16, cols * rows * 2);
  b.tensor("bf16", {cols, rows, 2}, ggml::BF16, cols * rows * 2 * 2);
  // Replace the random bytes by random finite values of each type.
  std::vector<float> f32(cols * rows), want16(cols * rows), wantbf(cols * rows * 2);
  std::vector<uint8_t> raw32(f32.size() * 4), raw16(want16.size() * 2), rawbf(wantbf.size() * 2);
  for (size_t i = 0; i < f32.size(); ++i) {
    f32[i] = nd(rng);
    std::memcpy(raw32.data() + 4 * i, &f32[i], 4);
    uint16_t h = static_cast<uint16_t>(rng() & 0xffff);
    if (((h >> 10) & 31) == 31) h &= 0xbfff; // keep it finite
    want16[i] = static_cast<float>(half_reference(h));
    std::memcpy(raw16.data() + 2 * i, &h, 2);
  }
  for (size_t i = 0; i < wantbf.size(); ++i) {
    float x = nd(rng);
    uint32_t bits;
    std::memcpy(&bits, &x, 4);
    uint16_t top = static_cast<uint16_t>(bits >> 16);
    bits = static_cast<uint32_t>(top) << 16;
    std::memcpy(&wantbf[i], &bits, 4);
    std::memcpy(rawbf.data() + 2 * i, &top, 2);
  }
  auto bytes = b.build();
  std::memcpy(bytes.data() + b.data_offset + b.tensor_rel[0], raw32.data(), raw32.size());
  std::memcpy(bytes.data() + b.data_offset + b.tensor_rel[1], raw16.data(), raw16.size());
  std::memcpy(bytes.data() + b.data_offset + b.tensor_rel[2], rawbf.data(), rawbf.size());
  const std::string model = tmp_path("dump.gguf"), out = tmp_path("dump.f32");
  write_all(model, bytes);
  const std::vector<std::pair<std::string, const std::vector<float> *>> cases = {
      {"f32", &f32}, {"f16", &want16}, {"bf16", &wantbf}};
  for (const auto &[name, want] : cases) {
    wo::test::CommandResult r = run("dump-tensor '" + model + "' " + name + " --out '" + out + "'");
    ASSERT_EQ(r.status, 0) << name;
    auto got = read_all(out);
    ASSERT_EQ(got.size(), want->size() * 4) << name;
    for (size_t i = 0; i < want->size(); ++i) {
      float g;
      std::memcpy(&g, got.data() + 4 * i, 4);
      ASSERT_EQ(g, (*want)[i]) << name << "[" << i << "]"; // conversions are exact
    }
  }
  wo::test::CommandResult missing = run("dump-tensor '" + model + "' nope --out '" + out + "'");
  EXPECT_EQ(missing.status, 1);
  std::remove(model.c_str());
  std::remove(out.c_str());
}

// Quantized types go through their quant plugin's CPU reference: the fixture's raw blocks, put in
// a GGUF, must dump to llama.cpp's dequantized values (tests/fixtures/quant). Tolerance: 1e-6
// relative (+1e-7 absolute): implementations may order the scale multiplications differently.
TEST(DumpTensor, QuantTypesMatchTheGoldensThroughTheirCodec) {
  if (::access(binary().c_str(), X_OK) != 0) GTEST_SKIP() << "worker-orcd not built";
  const auto index_text = read_all(fixtures_dir() + "/quant/index.json");
  rapidjson::Document index;
  ASSERT_FALSE(
      index.Parse(reinterpret_cast<const char *>(index_text.data()), index_text.size()).HasParseError());
  const std::string model = tmp_path("quant.gguf"), out = tmp_path("quant.f32"), err = tmp_path("quant.err");
  int served = 0, unserved = 0;
  for (const auto &e : index.GetArray()) {
    const std::string prefix = e["file_prefix"].GetString(), type_name = e["type"].GetString();
    uint32_t type = UINT32_MAX;
    for (uint32_t id = 0; id < ggml::kTypeCount; ++id)
      if (ggml::type_info(id) && type_name == ggml::type_info(id)->name) type = id;
    ASSERT_NE(type, UINT32_MAX) << type_name;
    const uint64_t rows = e["rows"].GetUint64(), cols = e["cols"].GetUint64();
    const auto raw = read_all(fixtures_dir() + "/quant/" + prefix + ".raw.bin");
    const auto deq = read_all(fixtures_dir() + "/quant/" + prefix + ".deq.f32");
    ASSERT_EQ(raw.size(), ggml::row_bytes(type, static_cast<int64_t>(cols)) * rows) << prefix;
    ASSERT_EQ(deq.size(), rows * cols * 4) << prefix;
    GgufBuilder b;
    b.tensor("w", {cols, rows}, type, raw.size());
    auto bytes = b.build();
    std::memcpy(bytes.data() + b.data_offset, raw.data(), raw.size());
    write_all(model, bytes);
    wo::test::CommandResult r = run("dump-tensor '" + model + "' w --out '" + out + "' --plugin-dir '" +
                                        std::string(WORKER_PLUGIN_DIR_DEFAULT) + "'",
                                    err);
    if (r.status != 0) {
      auto msg = read_all(err);
      std::string text(msg.begin(), msg.end());
      EXPECT_NE(text.find("found none"), std::string::npos)
          << prefix << ": " << text; // only "no codec" may fail
      ++unserved;
      continue;
    }
    ++served;
    auto got = read_all(out);
    ASSERT_EQ(got.size(), deq.size()) << prefix;
    for (size_t i = 0; i < rows * cols; ++i) {
      float g, w;
      std::memcpy(&g, got.data() + 4 * i, 4);
      std::memcpy(&w, deq.data() + 4 * i, 4);
      ASSERT_NEAR(g, w, 1e-6 * std::fabs(w) + 1e-7) << prefix << " element " << i;
    }
  }
  std::remove(model.c_str());
  std::remove(out.c_str());
  std::remove(err.c_str());
  if (served == 0)
    GTEST_SKIP() << "no quant plugin in " << WORKER_PLUGIN_DIR_DEFAULT << " (" << unserved << " cases)";
}

} // namespace
} // namespace wo::gguf
