// Conformance of a codec .so through the C ABI alone, the way the host sees it: descriptor,
// version negotiation, bit-exact dequantization of the fixture goldens of every served type,
// quantize round trips, and clear refusals (check_tensor, unsupported types, bad row lengths).
#include "plugin_under_test.hpp"
#include "test_util.hpp"

#include <worker/ggml_types.hpp>

#include <gtest/gtest.h>
#include <rapidjson/document.h>

#include <algorithm>
#include <cstring>
#include <set>

namespace wo::quant::testing {
namespace {

bool served(uint32_t t) { return std::count(kPlugin.types.begin(), kPlugin.types.end(), t) > 0; }

uint32_t type_by_name(const std::string &name) {
  for (uint32_t id = 0; id < wo::ggml::kTypeCount; ++id)
    if (wo::ggml::type_name(id) && name == wo::ggml::type_name(id)) return id;
  return UINT32_MAX;
}

class Conformance : public ::testing::Test {
protected:
  LoadedCodec plugin;
  const wo_quant_v1 *q = plugin.codec();
};

TEST_F(Conformance, DescriptorDescribesAQuantCodec) {
  const wo_plugin *d = plugin.descriptor();
  ASSERT_NE(d, nullptr) << plugin.path() << " refused the current ABI";
  EXPECT_GE(d->struct_size, sizeof(wo_plugin));
  EXPECT_EQ(d->abi_major, WORKER_SDK_ABI_MAJOR);
  EXPECT_EQ(d->kind, WO_PLUGIN_QUANT);
  EXPECT_STREQ(d->name, kPlugin.name);
  ASSERT_NE(d->version, nullptr);
  EXPECT_GT(std::strlen(d->version), 0u);
  ASSERT_NE(q, nullptr);
  EXPECT_GE(q->struct_size, sizeof(wo_quant_v1));
  EXPECT_TRUE(q->dequantize_rows && q->quantize_rows && q->check_tensor && q->last_error);
#ifdef WORKER_WITH_CUDA
  EXPECT_TRUE(q->linear && q->gather_rows && q->linear_id) << "a CUDA build must offer the GPU entry points";
#else
  EXPECT_TRUE(!q->linear && !q->gather_rows && !q->linear_id)
      << "a CPU-only build must leave GPU entries NULL";
#endif
  std::set<uint32_t> listed(q->types, q->types + q->n_types);
  EXPECT_EQ(listed.size(), q->n_types) << "duplicate type ids";
  EXPECT_EQ(listed, std::set<uint32_t>(kPlugin.types.begin(), kPlugin.types.end()));
}

TEST_F(Conformance, NegotiatesOnlyTheSameMajor) {
  EXPECT_NE(plugin.entry()(WORKER_SDK_ABI_MAJOR, WORKER_SDK_ABI_MINOR + 3), nullptr) << "newer minor refused";
  EXPECT_EQ(plugin.entry()(WORKER_SDK_ABI_MAJOR + 1, 0), nullptr);
  EXPECT_EQ(plugin.entry()(WORKER_SDK_ABI_MAJOR - 1, 0), nullptr);
}

TEST_F(Conformance, DequantizesEveryServedGoldenBitExact) {
  const auto bytes = read_file(fixtures_dir() + "/quant/index.json");
  rapidjson::Document doc;
  doc.Parse(reinterpret_cast<const char *>(bytes.data()), bytes.size());
  ASSERT_TRUE(doc.IsArray());
  int checked = 0;
  for (const auto &e : doc.GetArray()) {
    const uint32_t type = type_by_name(e["type"].GetString());
    if (!served(type)) continue;
    const std::string base = fixtures_dir() + "/quant/" + e["file_prefix"].GetString();
    SCOPED_TRACE(base);
    const int64_t rows = e["rows"].GetInt64(), cols = e["cols"].GetInt64();
    const auto raw = read_file(base + ".raw.bin");
    const auto want = read_array<uint32_t>(base + ".deq.f32");
    std::vector<uint32_t> got(want.size());
    ASSERT_EQ(q->dequantize_rows(type, raw.data(), rows, cols, reinterpret_cast<float *>(got.data())), WO_OK)
        << q->last_error();
    EXPECT_TRUE(got == want) << "dequantized values differ from the golden";
    ++checked;
  }
  EXPECT_GT(checked, 0) << "no golden of a served type was found";
}

TEST_F(Conformance, QuantizeRoundTripOnFreshRows) {
  const uint64_t seed = fresh_seed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  for (uint32_t type : kPlugin.types) {
    SCOPED_TRACE(wo::ggml::type_name(type));
    const int64_t rows = 3, cols = 512;
    const auto src = normal_floats(rows * cols, seed + type, 0.5f);
    std::vector<uint8_t> buf(wo::ggml::row_bytes(type, cols) * rows);
    ASSERT_EQ(q->quantize_rows(type, src.data(), rows, cols, buf.data()), WO_OK) << q->last_error();
    std::vector<float> back(src.size());
    ASSERT_EQ(q->dequantize_rows(type, buf.data(), rows, cols, back.data()), WO_OK) << q->last_error();
    EXPECT_LE(rel_l2(back.data(), src.data(), src.size()), 0.16);
  }
}

TEST_F(Conformance, RefusesTypesItDoesNotServe) {
  float out[256];
  std::vector<uint8_t> in(1024);
  const uint32_t foreign = served(wo::ggml::MXFP4) ? wo::ggml::Q4_K : wo::ggml::MXFP4;
  EXPECT_EQ(q->dequantize_rows(foreign, in.data(), 1, 256, out), WO_ERR_UNSUPPORTED);
  EXPECT_NE(std::string(q->last_error()).find(wo::ggml::type_name(foreign)), std::string::npos)
      << q->last_error();
  EXPECT_EQ(q->dequantize_rows(wo::ggml::Q2_K, in.data(), 1, 256, out), WO_ERR_UNSUPPORTED);
}

wo_tensor tensor_of(uint32_t type, int64_t cols, int64_t rows) {
  wo_tensor t{};
  t.struct_size = sizeof t;
  t.ggml_type = type;
  t.name = "blk.3.ffn_down.weight";
  t.n_dims = 2;
  t.ne[0] = cols;
  t.ne[1] = rows;
  t.ne[2] = t.ne[3] = 1;
  t.nb1 = wo::ggml::row_bytes(type, cols);
  t.nbytes = t.nb1 * rows;
  return t;
}

TEST_F(Conformance, CheckTensorAcceptsWholeBlocksAndExplainsOtherShapes) {
  for (uint32_t type : kPlugin.types) {
    const auto *ti = wo::ggml::type_info(type);
    SCOPED_TRACE(ti->name);
    wo_tensor ok = tensor_of(type, 4 * ti->block_elems * 8, 7);
    EXPECT_EQ(q->check_tensor(&ok), WO_OK) << q->last_error();
    if (ti->block_elems == 1) continue;
    wo_tensor bad = tensor_of(type, 912, 7);
    bad.nb1 = bad.nbytes = 0;
    EXPECT_EQ(q->check_tensor(&bad), WO_ERR_FORMAT);
    const std::string msg = q->last_error();
    EXPECT_NE(msg.find("blk.3.ffn_down.weight"), std::string::npos) << msg;
    EXPECT_NE(msg.find(std::to_string(912)), std::string::npos) << msg;
    EXPECT_NE(msg.find(std::to_string(ti->block_elems)), std::string::npos) << msg;
    wo_tensor bad_stride = tensor_of(type, 4 * ti->block_elems, 7);
    bad_stride.nb1 += 2;
    EXPECT_EQ(q->check_tensor(&bad_stride), WO_ERR_FORMAT);
    EXPECT_NE(std::string(q->last_error()).find("nb1"), std::string::npos) << q->last_error();
  }
  EXPECT_NE(q->check_tensor(nullptr), WO_OK);
}

TEST_F(Conformance, BadRowLengthIsAStatusNotACrash) {
  for (uint32_t type : kPlugin.types) {
    const auto *ti = wo::ggml::type_info(type);
    if (ti->block_elems == 1) continue;
    std::vector<float> f(1024);
    std::vector<uint8_t> b(2048);
    EXPECT_EQ(q->quantize_rows(type, f.data(), 1, ti->block_elems + 1, b.data()), WO_ERR_FORMAT);
    EXPECT_EQ(q->dequantize_rows(type, b.data(), 1, ti->block_elems - 1, f.data()), WO_ERR_FORMAT);
    EXPECT_GT(std::strlen(q->last_error()), 0u);
  }
}

} // namespace
} // namespace wo::quant::testing
