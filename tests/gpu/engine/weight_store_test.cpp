// The weights arena's layout (no device needed): the small F32 tensors (norm weights, biases) share
// one leading range, the one the engine asks L2 to keep, and every tensor still has its own
// 256-aligned, non-overlapping place inside an arena of exactly the sum of the aligned sizes.
#include "engine/weight_store.hpp"
#include "fixture_paths.hpp"

#include <worker/ggml_types.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <utility>
#include <vector>

namespace {

using wo::engine::align_up;
using wo::engine::kTensorAlignment;
using wo::engine::pinned_tensor_max_bytes;
using wo::engine::WeightStore;

class WeightStoreLayout : public ::testing::TestWithParam<std::string> {};

TEST_P(WeightStoreLayout, SmallF32TensorsLeadAndNothingOverlaps) {
  const auto file = wo::gguf::File::open(wo::gguf::test::model_path(GetParam()));
  const WeightStore ws(*file);
  const auto &all = ws.all();
  ASSERT_FALSE(all.empty());
  uint64_t aligned_sum = 0;
  size_t small = 0;
  std::vector<std::pair<uint64_t, uint64_t>> ranges; // [offset, offset + aligned size)
  uint64_t last_small = 0, last_other = 0;
  bool any_small = false, any_other = false;
  for (size_t i = 0; i < all.size(); ++i) {
    const wo_tensor *t = all[i];
    const uint64_t off = ws.offset(i), size = align_up(t->nbytes, kTensorAlignment);
    aligned_sum += size;
    EXPECT_EQ(off % kTensorAlignment, 0u) << t->name;
    EXPECT_LE(off + size, ws.arena_bytes()) << t->name;
    ranges.push_back({off, off + size});
    const bool is_small =
        t->ggml_type == wo::ggml::F32 && t->nbytes > 0 && t->nbytes <= pinned_tensor_max_bytes();
    if (is_small) {
      ++small;
      EXPECT_LE(off + size, ws.pinned_bytes()) << t->name << " belongs to the pinned range";
      if (any_small) {
        EXPECT_GT(off, last_small) << t->name << ": file order within the range";
      }
      last_small = off, any_small = true;
    } else if (t->nbytes > 0) {
      EXPECT_GE(off, ws.pinned_bytes()) << t->name << " is outside the pinned range";
      if (any_other) {
        EXPECT_GT(off, last_other) << t->name << ": file order after the range";
      }
      last_other = off, any_other = true;
    }
  }
  EXPECT_EQ(ws.arena_bytes(), aligned_sum);
  EXPECT_EQ(ws.pinned_tensors(), small);
  EXPECT_GT(small, 0u) << "every fixture model has F32 norm weights";
  EXPECT_GE(ws.pinned_bytes(), small * kTensorAlignment);
  std::sort(ranges.begin(), ranges.end());
  for (size_t i = 1; i < ranges.size(); ++i)
    EXPECT_LE(ranges[i - 1].second, ranges[i].first) << "tensors overlap at offset " << ranges[i].first;
}

INSTANTIATE_TEST_SUITE_P(Fixtures, WeightStoreLayout, ::testing::ValuesIn(wo::gguf::test::fixture_models()));

} // namespace
