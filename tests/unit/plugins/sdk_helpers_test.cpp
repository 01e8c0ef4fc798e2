// The sdk.hpp helpers that every plugin uses at the struct_size boundary: reading a host's
// wo_arch_config of any age, and writing into a caller's struct of any age.
#include <worker/sdk.hpp>

#include <gtest/gtest.h>

#include <cstddef>
#include <cstring>

namespace {

TEST(ReadArchConfig, NullGivesTheDefaults) {
  const wo_arch_config c = wo::read_arch_config(nullptr, 384);
  EXPECT_EQ(c.struct_size, sizeof(wo_arch_config));
  EXPECT_EQ(c.n_ctx, 0);
  EXPECT_EQ(c.n_batch, 384);
  EXPECT_EQ(c.flags, 0u);
}

TEST(ReadArchConfig, ReadsOnlyTheFieldsAnOlderHostSent) {
  wo_arch_config host{};
  host.n_ctx = 4096, host.n_batch = 64, host.flags = WO_ARCH_UNFUSED;
  host.struct_size = static_cast<uint32_t>(offsetof(wo_arch_config, n_batch)); // knows n_ctx only
  wo_arch_config c = wo::read_arch_config(&host, 512);
  EXPECT_EQ(c.n_ctx, 4096);
  EXPECT_EQ(c.n_batch, 512) << "n_batch lies past the host's struct_size";
  EXPECT_EQ(c.flags, 0u) << "flags lie past the host's struct_size";
  host.struct_size = sizeof host;
  c = wo::read_arch_config(&host, 512);
  EXPECT_EQ(c.n_batch, 64);
  EXPECT_EQ(c.flags, WO_ARCH_UNFUSED);
  host.n_batch = 0; // "not set": the plugin's default
  EXPECT_EQ(wo::read_arch_config(&host, 512).n_batch, 512);
}

TEST(WriteSized, WritesOnlyWhatTheCallersStructHolds) {
  wo_arch_plan ours{};
  ours.n_vocab = 151936, ours.n_ctx_train = 32768, ours.n_embd = 896, ours.n_layer = 24;
  ours.kv_bytes_per_token = 12288, ours.scratch_bytes = 1 << 20;

  // An older caller that knows the fields up to n_embd: the rest of its memory stays untouched.
  wo_arch_plan older;
  std::memset(&older, 0xab, sizeof older);
  older.struct_size = static_cast<uint32_t>(offsetof(wo_arch_plan, n_layer));
  wo::write_sized(&older, ours);
  EXPECT_EQ(older.struct_size, offsetof(wo_arch_plan, n_layer));
  EXPECT_EQ(older.n_vocab, 151936);
  EXPECT_EQ(older.n_embd, 896);
  wo_arch_plan untouched;
  std::memset(&untouched, 0xab, sizeof untouched);
  EXPECT_EQ(older.n_layer, untouched.n_layer);
  EXPECT_EQ(older.scratch_bytes, untouched.scratch_bytes);

  // A newer caller (a larger struct_size) and one that left it 0 get all our fields, and
  // struct_size says how many bytes were written.
  wo_arch_plan newer{};
  newer.struct_size = sizeof(wo_arch_plan) + 64;
  wo::write_sized(&newer, ours);
  EXPECT_EQ(newer.struct_size, sizeof(wo_arch_plan));
  EXPECT_EQ(newer.scratch_bytes, 1u << 20);
  wo_arch_plan zero{};
  wo::write_sized(&zero, ours);
  EXPECT_EQ(zero.struct_size, sizeof(wo_arch_plan));
  EXPECT_EQ(zero.n_layer, 24);
}

} // namespace
