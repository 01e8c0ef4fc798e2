// The sdk.hpp helpers that every plugin uses at the struct_size boundary: reading a host's
// wo_arch_config of any age, and writing into a caller's struct of any age.
#include <worker/env_switch.hpp>
#include <worker/sdk.hpp>

#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <utility>
#include <vector>

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

namespace {

// A host with only `linear` (what wo::linear_multi falls back to), recording each call.
struct Calls {
  std::vector<std::pair<const wo_tensor *, void *>> linear;
  int multi = 0;
  int fail_at = -1; // the linear call (0-based) that fails
};
Calls *g_calls = nullptr;
wo_status count_linear(void *, const wo_tensor *w, const void *, wo_dtype, void *y, wo_dtype, int64_t) {
  const int i = static_cast<int>(g_calls->linear.size());
  g_calls->linear.emplace_back(w, y);
  return i == g_calls->fail_at ? WO_ERR_CUDA : WO_OK;
}
wo_status count_multi(void *, int32_t, const wo_tensor *const *, const void *, wo_dtype, void *const *,
                      wo_dtype, int64_t) {
  ++g_calls->multi;
  return WO_OK;
}

TEST(LinearMulti, OlderHostsGetOneLinearPerWeightAndNewerOnesOneCall) {
  Calls calls;
  g_calls = &calls;
  wo_tensor t[3]{};
  const wo_tensor *w[3] = {&t[0], &t[1], &t[2]};
  float out[3][4];
  void *y[3] = {out[0], out[1], out[2]};
  const float x[4] = {1, 2, 3, 4};

  wo_host older{};
  older.struct_size = static_cast<uint32_t>(offsetof(wo_host, linear_multi)); // a 1.1 host
  older.linear = count_linear;
  older.linear_multi = count_multi; // past its struct_size: must not be called
  ASSERT_EQ(wo::linear_multi(&older, 3, w, x, WO_DTYPE_F32, y, WO_DTYPE_F32, 1), WO_OK);
  ASSERT_EQ(calls.linear.size(), 3u);
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(calls.linear[i].first, w[i]) << "call " << i;
    EXPECT_EQ(calls.linear[i].second, y[i]) << "call " << i;
  }
  EXPECT_EQ(calls.multi, 0);

  // A failure stops at that weight and is returned.
  calls = Calls{};
  calls.fail_at = 1;
  EXPECT_EQ(wo::linear_multi(&older, 3, w, x, WO_DTYPE_F32, y, WO_DTYPE_F32, 1), WO_ERR_CUDA);
  EXPECT_EQ(calls.linear.size(), 2u);

  wo_host newer = older;
  newer.struct_size = sizeof(wo_host);
  calls = Calls{};
  ASSERT_EQ(wo::linear_multi(&newer, 3, w, x, WO_DTYPE_F32, y, WO_DTYPE_F32, 1), WO_OK);
  EXPECT_EQ(calls.multi, 1);
  EXPECT_TRUE(calls.linear.empty());
  g_calls = nullptr;
}

} // namespace

namespace {

int g_swiglu_calls = 0;
wo_status count_swiglu(void *, const wo_tensor *, const wo_tensor *, const void *, wo_dtype, void *, wo_dtype,
                       int64_t) {
  ++g_swiglu_calls;
  return WO_OK;
}

// linear_swiglu is optional: a 1.2 host (or one without the service) answers WO_ERR_UNSUPPORTED
// without calling anything, so the architecture runs its own two linears and swiglu.
TEST(LinearSwiglu, OlderHostsAnswerUnsupportedAndNewerOnesCallTheService) {
  wo_tensor g{}, u{};
  float x[4] = {1, 2, 3, 4}, y[4] = {};
  wo_host older{};
  older.struct_size = static_cast<uint32_t>(offsetof(wo_host, linear_swiglu)); // a 1.2 host
  older.linear_swiglu = count_swiglu; // past its struct_size: must not be called
  g_swiglu_calls = 0;
  EXPECT_EQ(wo::linear_swiglu(&older, &g, &u, x, WO_DTYPE_F32, y, WO_DTYPE_F32, 1), WO_ERR_UNSUPPORTED);
  EXPECT_EQ(g_swiglu_calls, 0);
  wo_host none = older;
  none.struct_size = sizeof(wo_host);
  none.linear_swiglu = nullptr;
  EXPECT_EQ(wo::linear_swiglu(&none, &g, &u, x, WO_DTYPE_F32, y, WO_DTYPE_F32, 1), WO_ERR_UNSUPPORTED);
  wo_host newer = older;
  newer.struct_size = sizeof(wo_host);
  EXPECT_EQ(wo::linear_swiglu(&newer, &g, &u, x, WO_DTYPE_F32, y, WO_DTYPE_F32, 1), WO_OK);
  EXPECT_EQ(g_swiglu_calls, 1);
}

const wo_expert_glu *g_glu_seen = nullptr;
int g_glu_calls = 0;
wo_status count_glu(void *, const wo_tensor *, const wo_tensor *, const void *, wo_dtype, void *, wo_dtype,
                    int64_t, const int32_t *, int64_t, const wo_expert_glu *glu) {
  ++g_glu_calls;
  g_glu_seen = glu;
  return WO_OK;
}

// linear_id_glu (1.7) is optional: a 1.6 host (or one without the service) answers
// WO_ERR_UNSUPPORTED without calling anything, so gpt-oss runs its two linear_id calls and
// swiglu_oai; a newer host gets the activation as the helper built it (struct_size set).
TEST(LinearIdGlu, OlderHostsAnswerUnsupportedAndNewerOnesGetTheActivation) {
  wo_tensor g{}, u{};
  float x[4] = {1, 2, 3, 4}, y[4] = {}, gb[2] = {}, ub[2] = {};
  int32_t ids[2] = {0, 1};
  const wo_expert_glu glu = wo::expert_glu(WO_GLU_CLAMPED, 1.702f, 7.0f, gb, ub);
  EXPECT_EQ(glu.struct_size, sizeof(wo_expert_glu));
  wo_host older{};
  older.struct_size = static_cast<uint32_t>(offsetof(wo_host, linear_id_glu)); // a 1.6 host
  older.linear_id_glu = count_glu; // past its struct_size: must not be called
  g_glu_calls = 0;
  EXPECT_EQ(wo::linear_id_glu(&older, &g, &u, x, WO_DTYPE_F32, y, WO_DTYPE_F32, 1, ids, 2, glu),
            WO_ERR_UNSUPPORTED);
  EXPECT_EQ(g_glu_calls, 0);
  wo_host none = older;
  none.struct_size = sizeof(wo_host);
  none.linear_id_glu = nullptr;
  EXPECT_EQ(wo::linear_id_glu(&none, &g, &u, x, WO_DTYPE_F32, y, WO_DTYPE_F32, 1, ids, 2, glu),
            WO_ERR_UNSUPPORTED);
  wo_host newer = older;
  newer.struct_size = sizeof(wo_host);
  EXPECT_EQ(wo::linear_id_glu(&newer, &g, &u, x, WO_DTYPE_F32, y, WO_DTYPE_F32, 1, ids, 2, glu), WO_OK);
  ASSERT_EQ(g_glu_calls, 1);
  EXPECT_EQ(g_glu_seen, &glu);
  EXPECT_EQ(g_glu_seen->kind, WO_GLU_CLAMPED);
  EXPECT_EQ(g_glu_seen->limit, 7.0f);
  EXPECT_EQ(g_glu_seen->gate_bias, gb);
  EXPECT_EQ(g_glu_seen->up_bias, ub);
}

int g_fused_calls = 0;
wo_linear_fusion g_fusion_seen{};
wo_status record_fused(void *, int32_t, int32_t, const wo_tensor *const *, const void *, wo_dtype,
                       void *const *, wo_dtype, int64_t, const wo_linear_fusion *f) {
  ++g_fused_calls;
  g_fusion_seen = f ? *f : wo_linear_fusion{};
  return WO_OK;
}

// linear_fused is optional: a 1.3 host (or one without the service) answers WO_ERR_UNSUPPORTED
// without calling anything, so the architecture runs the norm, projection and adds apart; a 1.4
// host gets the request with the fusion as the helpers built it.
TEST(LinearFused, OlderHostsAnswerUnsupportedAndNewerOnesGetTheFusion) {
  wo_tensor t{};
  const wo_tensor *w[1] = {&t};
  float x[4] = {1, 2, 3, 4}, y[4] = {}, g[4] = {1, 1, 1, 1}, b[4] = {};
  void *ys[1] = {y};
  const wo_linear_fusion norm = wo::fusion_norm(g, 1e-6f);
  wo_host older{};
  older.struct_size = static_cast<uint32_t>(offsetof(wo_host, linear_fused)); // a 1.3 host
  older.linear_fused = record_fused; // past its struct_size: must not be called
  g_fused_calls = 0;
  EXPECT_EQ(wo::linear_fused(&older, WO_LINEAR_STACK, 1, w, x, WO_DTYPE_F32, ys, WO_DTYPE_F32, 1, &norm),
            WO_ERR_UNSUPPORTED);
  EXPECT_EQ(g_fused_calls, 0);
  wo_host none = older;
  none.struct_size = sizeof(wo_host);
  none.linear_fused = nullptr;
  EXPECT_EQ(wo::linear_fused(&none, WO_LINEAR_STACK, 1, w, x, WO_DTYPE_F32, ys, WO_DTYPE_F32, 1, &norm),
            WO_ERR_UNSUPPORTED);
  wo_host newer = older;
  newer.struct_size = sizeof(wo_host);
  ASSERT_EQ(wo::linear_fused(&newer, WO_LINEAR_STACK, 1, w, x, WO_DTYPE_F32, ys, WO_DTYPE_F32, 1, &norm),
            WO_OK);
  EXPECT_EQ(g_fused_calls, 1);
  EXPECT_EQ(g_fusion_seen.struct_size, sizeof(wo_linear_fusion));
  EXPECT_EQ(g_fusion_seen.norm_weight, g);
  EXPECT_EQ(g_fusion_seen.norm_eps, 1e-6f);
  EXPECT_EQ(g_fusion_seen.bias, nullptr);
  EXPECT_EQ(g_fusion_seen.accumulate, 0);
  const wo_linear_fusion res = wo::fusion_residual(b);
  ASSERT_EQ(wo::linear_fused(&newer, WO_LINEAR_STACK, 1, w, x, WO_DTYPE_F32, ys, WO_DTYPE_F32, 1, &res),
            WO_OK);
  EXPECT_EQ(g_fusion_seen.norm_weight, nullptr);
  EXPECT_EQ(g_fusion_seen.bias, b);
  EXPECT_EQ(g_fusion_seen.accumulate, 1);
}

int g_id_calls = 0, g_id_settled_calls = 0;
wo_status record_id(void *, const wo_tensor *, const void *, wo_dtype, int64_t, void *, wo_dtype, int64_t,
                    const int32_t *, int64_t) {
  ++g_id_calls;
  return WO_OK;
}
wo_status record_id_settled(void *, const wo_tensor *, const void *, wo_dtype, int64_t, void *, wo_dtype,
                            int64_t, const int32_t *, int64_t) {
  ++g_id_settled_calls;
  return WO_OK;
}

// linear_id_settled (1.6) is a promise about the ids, not a different result: on a 1.5 host, or a
// host without the service, the helper makes the plain linear_id call; a 1.6 host gets the promise.
TEST(LinearIdSettled, OlderHostsGetPlainLinearIdAndNewerOnesThePromise) {
  wo_tensor t{};
  float x[4] = {}, y[4] = {};
  int32_t ids[1] = {0};
  const auto call = [&](const wo_host &h) {
    return wo::linear_id_settled(&h, &t, x, WO_DTYPE_F32, 1, y, WO_DTYPE_F32, 1, ids, 1);
  };
  wo_host older{};
  older.struct_size = static_cast<uint32_t>(offsetof(wo_host, linear_id_settled)); // a 1.5 host
  older.linear_id = record_id;
  older.linear_id_settled = record_id_settled; // past its struct_size: must not be called
  g_id_calls = g_id_settled_calls = 0;
  EXPECT_EQ(call(older), WO_OK);
  EXPECT_EQ(g_id_calls, 1);
  EXPECT_EQ(g_id_settled_calls, 0);
  wo_host none = older;
  none.struct_size = sizeof(wo_host);
  none.linear_id_settled = nullptr;
  EXPECT_EQ(call(none), WO_OK);
  EXPECT_EQ(g_id_calls, 2);
  EXPECT_EQ(g_id_settled_calls, 0);
  wo_host newer = older;
  newer.struct_size = sizeof(wo_host);
  EXPECT_EQ(call(newer), WO_OK);
  EXPECT_EQ(g_id_calls, 2);
  EXPECT_EQ(g_id_settled_calls, 1);
  wo_host bare{};
  bare.struct_size = static_cast<uint32_t>(offsetof(wo_host, linear_id_settled));
  EXPECT_EQ(call(bare), WO_ERR_UNSUPPORTED) << "no linear_id at all";
}

// row_view: the gate and up halves of a fused [gate; up] matrix, and refusals.
TEST(RowView, SlicesRowsOfA2dMatrixAndRefusesWhatItCannotSlice) {
  std::vector<uint8_t> dev(10 * 34), host(10 * 34);
  wo_tensor t{};
  t.struct_size = sizeof(t);
  t.ggml_type = 8; // Q8_0: 34 bytes a row of 32
  t.name = "blk.0.ffn_up.weight";
  t.n_dims = 2;
  t.ne[0] = 32, t.ne[1] = 10, t.ne[2] = t.ne[3] = 1;
  t.nb1 = 34;
  t.nbytes = 340;
  t.data = dev.data();
  t.host_data = host.data();
  const wo_tensor up = wo::row_view(t, 5, 5);
  EXPECT_EQ(up.struct_size, sizeof(wo_tensor));
  EXPECT_EQ(up.ne[0], 32);
  EXPECT_EQ(up.ne[1], 5);
  EXPECT_EQ(up.nbytes, 170u);
  EXPECT_EQ(up.nb1, 34u);
  EXPECT_EQ(up.data, dev.data() + 170);
  EXPECT_EQ(up.host_data, host.data() + 170);
  EXPECT_STREQ(up.name, t.name);
  EXPECT_EQ(wo::row_view(t, 0, 5).data, dev.data());
  wo_tensor no_device = t;
  no_device.data = nullptr;
  EXPECT_EQ(wo::row_view(no_device, 5, 5).data, nullptr);
  EXPECT_EQ(wo::row_view(t, 6, 5).struct_size, 0u) << "past the last row";
  EXPECT_EQ(wo::row_view(t, -1, 2).struct_size, 0u);
  EXPECT_EQ(wo::row_view(t, 0, 0).struct_size, 0u);
  wo_tensor no_stride = t;
  no_stride.nb1 = 0;
  EXPECT_EQ(wo::row_view(no_stride, 0, 5).struct_size, 0u);
  wo_tensor three_d = t;
  three_d.n_dims = 3;
  EXPECT_EQ(wo::row_view(three_d, 0, 5).struct_size, 0u);
}

} // namespace

// The tuning switches every kernel, codec and adapter reads: a number is taken whole and in range,
// anything else falls back (no "5x" read as 5, no clamping); a switch is off only for exactly "0".
TEST(EnvSwitch, TakesWholeNumbersInRangeAndFallsBackOnAnythingElse) {
  const char *name = "WO_TEST_ENV_INT";
  const auto with = [&](const char *value) {
    if (value)
      setenv(name, value, 1);
    else
      unsetenv(name);
    return wo::env_int(name, 1, 8, -7);
  };
  EXPECT_EQ(with(nullptr), -7);
  EXPECT_EQ(with(""), -7);
  EXPECT_EQ(with("5"), 5);
  EXPECT_EQ(with("1"), 1);
  EXPECT_EQ(with("8"), 8);
  EXPECT_EQ(with("0"), -7);  // below the range
  EXPECT_EQ(with("9"), -7);  // above it: not clamped to 8
  EXPECT_EQ(with("5x"), -7); // trailing characters
  EXPECT_EQ(with("x5"), -7);
  EXPECT_EQ(with("-3"), -7);
  unsetenv(name);
}

TEST(EnvSwitch, IsOffOnlyForExactlyZero) {
  const char *name = "WO_TEST_ENV_SWITCH";
  unsetenv(name);
  EXPECT_FALSE(wo::env_switched_off(name));
  for (const char *on : {"1", "", "00", "0 ", "off"}) {
    setenv(name, on, 1);
    EXPECT_FALSE(wo::env_switched_off(name)) << '"' << on << '"';
  }
  setenv(name, "0", 1);
  EXPECT_TRUE(wo::env_switched_off(name));
  unsetenv(name);
}
