// quantize -> dequantize on fresh random rows stays within a per-type bound, and malformed requests
// are refused with messages that name what was expected and found.
#include "quant_common/cpu_codec.hpp"
#include "test_util.hpp"

#include <worker/ggml_types.hpp>
#include <worker/sdk.hpp>

#include <gtest/gtest.h>

namespace wo::quant {
namespace {

using namespace wo::quant::testing;

struct Bound {
  uint32_t type;
  double max_rel_l2; // relative L2 error bound on N(0,1) rows (format resolution + margin)
};

class RoundTrip : public ::testing::TestWithParam<Bound> {};

TEST_P(RoundTrip, FreshRandomRowsStayWithinBound) {
  const Bound b = GetParam();
  const uint64_t seed = fresh_seed();
  SCOPED_TRACE("seed " + std::to_string(seed) + " (replay with WORKER_TEST_SEED)");
  const int64_t rows = 7, cols = 768;
  const auto src = normal_floats(static_cast<size_t>(rows * cols), seed);
  std::vector<uint8_t> q(wo::ggml::row_bytes(b.type, cols) * rows);
  quantize_rows(b.type, src.data(), rows, cols, q.data());
  std::vector<float> back(src.size());
  dequantize_rows(b.type, q.data(), rows, cols, back.data());
  const double err = rel_l2(back.data(), src.data(), src.size());
  EXPECT_LE(err, b.max_rel_l2) << type_label(b.type);
  if (b.type != wo::ggml::F32) {
    EXPECT_GT(err, 0.0) << "a lossy format reproduced random data exactly";
  }

  // Re-quantizing exactly representable values must not drift by more than the bound either.
  std::vector<uint8_t> q2(q.size());
  quantize_rows(b.type, back.data(), rows, cols, q2.data());
  std::vector<float> back2(src.size());
  dequantize_rows(b.type, q2.data(), rows, cols, back2.data());
  EXPECT_LE(rel_l2(back2.data(), back.data(), back.size()), b.max_rel_l2) << type_label(b.type);
}

INSTANTIATE_TEST_SUITE_P(AllTypes, RoundTrip,
                         ::testing::Values(Bound{wo::ggml::F32, 0.0}, Bound{wo::ggml::F16, 4e-4},
                                           Bound{wo::ggml::BF16, 3e-3}, Bound{wo::ggml::Q4_0, 0.12},
                                           Bound{wo::ggml::Q4_1, 0.11}, Bound{wo::ggml::Q5_0, 0.06},
                                           Bound{wo::ggml::Q5_1, 0.055}, Bound{wo::ggml::Q8_0, 0.008},
                                           Bound{wo::ggml::Q4_K, 0.11}, Bound{wo::ggml::Q5_K, 0.055},
                                           Bound{wo::ggml::Q6_K, 0.03}, Bound{wo::ggml::MXFP4, 0.16}),
                         [](const auto &info) { return std::string(wo::ggml::type_name(info.param.type)); });

TEST(RowLength, NonBlockMultipleIsRejectedWithTheBlockSize) {
  std::vector<float> src(300, 1.0f), dst(300);
  std::vector<uint8_t> q(1024);
  try {
    dequantize_rows(wo::ggml::Q4_K, q.data(), 1, 300, dst.data());
    FAIL() << "a Q4_K row of 300 elements was accepted";
  } catch (const Error &e) {
    EXPECT_EQ(e.status(), WO_ERR_FORMAT);
    const std::string msg = e.what();
    EXPECT_NE(msg.find("300"), std::string::npos) << msg;
    EXPECT_NE(msg.find("256"), std::string::npos) << msg;
    EXPECT_NE(msg.find("Q4_K"), std::string::npos) << msg;
  }
  EXPECT_THROW(quantize_rows(wo::ggml::Q8_0, src.data(), 1, 33, q.data()), Error);
  EXPECT_THROW(check_row_len(wo::ggml::MXFP4, 0, "t"), Error);
  EXPECT_NO_THROW(check_row_len(wo::ggml::F16, 3, "t"));
}

TEST(RowLength, UnknownTypeIsUnsupported) {
  try {
    check_row_len(wo::ggml::Q2_K, 256, "tensor 'blk.0.x'");
    FAIL() << "Q2_K accepted";
  } catch (const Error &e) {
    EXPECT_EQ(e.status(), WO_ERR_UNSUPPORTED);
    EXPECT_NE(std::string(e.what()).find("Q2_K"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("blk.0.x"), std::string::npos) << e.what();
  }
}

} // namespace
} // namespace wo::quant
