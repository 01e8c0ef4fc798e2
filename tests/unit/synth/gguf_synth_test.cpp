// gguf-synth presets must reproduce the real files' tensor inventory (the official counts per type
// are in the tools issue), and what it writes must be a valid GGUF our reader accepts.
#include "gguf/gguf_file.hpp"
#include "presets.hpp"
#include "quant_common/cpu_codec.hpp"
#include "value_stats.hpp"

#include <worker/ggml_types.hpp>

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <map>
#include <vector>

using wo::synth::make_preset;

namespace {

std::map<std::string, int> type_counts(const wo::synth::Preset &p) {
  std::map<std::string, int> c;
  for (const auto &t : p.tensors)
    c[wo::ggml::type_info(t.ggml_type)->name]++;
  return c;
}

// What a forward pass sees: every tensor decodes to finite values, and each matrix to weights
// centred on zero with the preset's standard deviation (first ~64k weights of each, enough for
// 10% even on the tiny presets' 64x64 matrices).
void expect_preset_spread(const wo::gguf::File &f, const wo::synth::Preset &p) {
  for (size_t i = 0; i < p.tensors.size(); ++i) {
    const auto &want = p.tensors[i];
    const auto &ti = f.tensors()[i];
    SCOPED_TRACE(want.name);
    const int64_t rows = static_cast<int64_t>(ti.n_elements() / static_cast<uint64_t>(ti.ne[0]));
    const int64_t n_rows = std::min<int64_t>(rows, std::max<int64_t>(1, 65536 / ti.ne[0]));
    std::vector<float> w(static_cast<size_t>(n_rows * ti.ne[0]));
    wo::quant::dequantize_rows(ti.type, f.tensor_data(ti), n_rows, ti.ne[0], w.data());
    const auto s = wo::synth::testing::value_stats(w.data(), w.size());
    EXPECT_EQ(s.non_finite, 0u);
    if (want.fill == wo::synth::Fill::norm_gain) {
      EXPECT_NEAR(s.mean, 1.0, 0.05);
    } else if (w.size() >= 1024) {
      EXPECT_NEAR(s.std / want.scale, 1.0, 0.1);
      EXPECT_LT(std::abs(s.mean) / want.scale, 0.1);
    }
  }
}

std::string plugin_dir() {
  const char *env = std::getenv("WORKER_PLUGIN_DIR");
  return env ? env : WORKER_PLUGIN_DIR_DEFAULT;
}

} // namespace

TEST(GgufSynthPresets, Qwen25HalfBMatchesOfficialInventory) {
  auto p = make_preset("qwen2.5-0.5b-q4_k_m");
  EXPECT_EQ(p.tensors.size(), 291u);
  std::map<std::string, int> want = {{"F32", 121}, {"Q5_0", 133}, {"Q8_0", 13}, {"Q4_K", 12}, {"Q6_K", 12}};
  EXPECT_EQ(type_counts(p), want);
}

TEST(GgufSynthPresets, Phi3MiniMatchesOfficialInventory) {
  auto p = make_preset("phi-3-mini-4k-q4_k_m");
  EXPECT_EQ(p.tensors.size(), 195u);
  std::map<std::string, int> want = {{"F32", 65}, {"Q4_K", 81}, {"Q5_K", 32}, {"Q6_K", 17}};
  EXPECT_EQ(type_counts(p), want);
}

TEST(GgufSynthPresets, GptOss20BMatchesOfficialInventory) {
  auto p = make_preset("gpt-oss-20b-mxfp4");
  EXPECT_EQ(p.tensors.size(), 459u);
  std::map<std::string, int> want = {{"F32", 289}, {"Q8_0", 98}, {"MXFP4", 72}};
  EXPECT_EQ(type_counts(p), want);
}

TEST(GgufSynthPresets, UnknownPresetNamesTheKnownOnes) {
  try {
    make_preset("nope");
    FAIL() << "expected an error";
  } catch (const std::exception &e) {
    EXPECT_NE(std::string(e.what()).find("qwen2.5-0.5b-q4_k_m"), std::string::npos) << e.what();
  }
}

// Write the tiny presets with the real tool, read them back with the host's strict reader and
// decode every tensor with the quant plugins' CPU dequantizer.
TEST(GgufSynthTool, TinyPresetsWriteValidFiles) {
  namespace fs = std::filesystem;
  const std::string exe = std::string(WORKER_BUILD_DIR) + "/bin/gguf-synth";
  if (!fs::exists(plugin_dir() + "/quant-ggml.so") || !fs::exists(plugin_dir() + "/quant-mxfp4.so"))
    GTEST_SKIP() << "quant plugins not built in " << plugin_dir();
  for (const std::string preset : {"tiny-qwen2-q4_k_m", "tiny-gpt-oss-mxfp4"}) {
    const std::string out = (fs::temp_directory_path() / ("synth-" + preset + ".gguf")).string();
    const std::string cmd = exe + " --preset " + preset + " --out " + out +
                            " --threads 2 --seed 7 --plugin-dir " + plugin_dir() + " > /dev/null";
    ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
    auto f = wo::gguf::File::open(out);
    auto p = make_preset(preset);
    ASSERT_EQ(f->tensors().size(), p.tensors.size());
    for (size_t i = 0; i < p.tensors.size(); ++i) {
      EXPECT_EQ(f->tensors()[i].name, p.tensors[i].name);
      EXPECT_EQ(f->tensors()[i].type, p.tensors[i].ggml_type);
    }
    EXPECT_EQ(f->architecture(), p.arch);
    expect_preset_spread(*f, p);
    // Same seed, same bytes: reproducible whatever the thread count.
    const std::string out2 = out + ".2";
    const std::string cmd2 = exe + " --preset " + preset + " --out " + out2 +
                             " --threads 1 --seed 7 --plugin-dir " + plugin_dir() + " > /dev/null";
    ASSERT_EQ(std::system(cmd2.c_str()), 0);
    EXPECT_EQ(std::system(("cmp -s " + out + " " + out2).c_str()), 0) << "output depends on the thread count";
    fs::remove(out);
    fs::remove(out2);
  }
}
