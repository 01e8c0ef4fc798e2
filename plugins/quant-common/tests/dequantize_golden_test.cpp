// CPU dequantization must reproduce every block golden of the fixtures bit for bit
// (tests/fixtures/quant/index.json: raw blocks from ggml's quantizers, values from its dequantizers).
#include "quant_common/cpu_codec.hpp"
#include "test_util.hpp"

#include <worker/ggml_types.hpp>

#include <gtest/gtest.h>
#include <rapidjson/document.h>

#include <cstring>
#include <set>

namespace wo::quant {
namespace {

using namespace wo::quant::testing;

uint32_t type_by_name(const std::string &name) {
  for (uint32_t id = 0; id < wo::ggml::kTypeCount; ++id) {
    const char *n = wo::ggml::type_name(id);
    if (n && name == n) return id;
  }
  return UINT32_MAX;
}

struct Golden {
  std::string prefix, type;
  int64_t rows, cols, row_bytes;
};

std::vector<Golden> load_index() {
  const std::string path = fixtures_dir() + "/quant/index.json";
  const auto bytes = read_file(path);
  rapidjson::Document doc;
  doc.Parse(reinterpret_cast<const char *>(bytes.data()), bytes.size());
  if (doc.HasParseError() || !doc.IsArray()) throw std::runtime_error(path + ": expected a JSON array");
  std::vector<Golden> out;
  for (const auto &e : doc.GetArray())
    out.push_back({e["file_prefix"].GetString(), e["type"].GetString(), e["rows"].GetInt64(),
                   e["cols"].GetInt64(), e["row_bytes"].GetInt64()});
  return out;
}

TEST(DequantizeGolden, EveryFixtureBlockIsBitExact) {
  const auto index = load_index();
  ASSERT_GE(index.size(), 22u) << "the fixture index lists fewer goldens than the README";
  std::set<std::string> types_seen;
  for (const auto &g : index) {
    SCOPED_TRACE(g.prefix);
    const uint32_t type = type_by_name(g.type);
    ASSERT_TRUE(cpu_supports(type)) << g.type;
    const std::string base = fixtures_dir() + "/quant/" + g.prefix;
    const auto raw = read_file(base + ".raw.bin");
    const auto want = read_array<uint32_t>(base + ".deq.f32");
    ASSERT_EQ(raw.size(), static_cast<size_t>(g.rows * g.row_bytes));
    ASSERT_EQ(static_cast<int64_t>(wo::ggml::row_bytes(type, g.cols)), g.row_bytes);
    ASSERT_EQ(want.size(), static_cast<size_t>(g.rows * g.cols));
    std::vector<float> got(want.size());
    dequantize_rows(type, raw.data(), g.rows, g.cols, got.data());
    size_t mismatches = 0;
    for (size_t i = 0; i < got.size(); ++i) {
      uint32_t bits;
      std::memcpy(&bits, &got[i], 4);
      if (bits != want[i] && mismatches++ < 5) {
        float w;
        std::memcpy(&w, &want[i], 4);
        ADD_FAILURE() << "element " << i << " (row " << i / g.cols << ", col " << i % g.cols << "): got "
                      << got[i] << " want " << w;
      }
    }
    EXPECT_EQ(mismatches, 0u) << g.prefix << ": elements differing from the golden";
    types_seen.insert(g.type);
  }
  for (const char *t : {"MXFP4", "Q4_0", "Q5_0", "Q8_0", "Q4_K", "Q5_K", "Q6_K", "F16"})
    EXPECT_TRUE(types_seen.count(t)) << "no golden checked for " << t;
}

// The GEMV references of the goldens are consistent with the exact dequantization (checks the
// fixture reading path the GPU tests share).
TEST(DequantizeGolden, GemvReferenceMatchesDequantizedRows) {
  for (const auto &g : load_index()) {
    SCOPED_TRACE(g.prefix);
    const std::string base = fixtures_dir() + "/quant/" + g.prefix;
    const auto raw = read_file(base + ".raw.bin");
    const auto x = read_array<float>(base + ".x.f32");
    const auto y = read_array<double>(base + ".y.f64");
    ASSERT_EQ(x.size(), static_cast<size_t>(g.cols));
    ASSERT_EQ(y.size(), static_cast<size_t>(g.rows));
    std::vector<float> w(static_cast<size_t>(g.rows * g.cols));
    dequantize_rows(type_by_name(g.type), raw.data(), g.rows, g.cols, w.data());
    double num = 0, den = 0;
    for (int64_t r = 0; r < g.rows; ++r) {
      double acc = 0;
      for (int64_t c = 0; c < g.cols; ++c)
        acc += static_cast<double>(w[r * g.cols + c]) * x[c];
      num += (acc - y[r]) * (acc - y[r]);
      den += y[r] * y[r];
    }
    EXPECT_LE(std::sqrt(num / std::max(den, 1e-300)), 1e-12);
  }
}

} // namespace
} // namespace wo::quant
