// Conformance checks every plugin's test suite runs. Each function records GoogleTest failures
// (EXPECT-style, naming the plugin, the field and the values) and returns, so one call reports
// every broken invariant at once. Wrap in ASSERT_NO_FATAL_FAILURE / check HasFailure() as needed.
//
//   auto p = wo::testing::LoadedPlugin::load(wo::testing::plugin_path("quant-ggml"));
//   wo::testing::expect_descriptor_invariants(p.descriptor(), WO_PLUGIN_QUANT);
//   wo::testing::expect_version_negotiation(p.entry());
//   wo::testing::expect_quant_cpu_conformance(
//       static_cast<const wo_quant_v1 *>(p.descriptor()->vtable), {{8 /*Q8_0*/, 0.01}, ...});
#pragma once

#include <worker/sdk.h>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace wo::testing {

// ---- every plugin --------------------------------------------------------------------------
// struct_size covers wo_plugin; abi_major is this SDK's; kind is `kind`; name is non-empty and
// printable; version is non-empty; the vtable is non-NULL, its struct_size is at least the v1
// struct, and every required function pointer is set (the same rules the host's registry applies).
// Quant: n_types > 0, every type a valid, distinct ggml type id.
void expect_descriptor_invariants(const wo_plugin *p, wo_plugin_kind kind);

// The handshake: the current ABI is served; a newer minor (the host grew additively) is still
// served, with the same name; another major (older or newer) gets NULL.
void expect_version_negotiation(wo_plugin_entry_fn entry);

// ---- quant codecs (CPU reference) ----------------------------------------------------------
// For each type the codec lists: quantize n_rows random rows (normal values, per-row scales from
// 0.01 to 100, fresh from `seed`), dequantize, and require finite output whose relative L2 error
// per row (||x - x'|| / ||x||) is at most max_rel_error[type]; dequantizing the same bytes twice
// gives identical floats. A listed type without a bound is a failure (say what you promise).
void expect_quant_cpu_conformance(const wo_quant_v1 *q, const std::map<uint32_t, double> &max_rel_error,
                                  uint32_t seed = 20261122, int64_t n_rows = 8);

// Errors are statuses with a message, not crashes: an unknown type id and (for block types) a row
// length that is not a multiple of the block are refused by quantize_rows and dequantize_rows
// with a non-OK status and a non-empty last_error().
void expect_quant_rejects_bad_arguments(const wo_quant_v1 *q);

// ---- tokenizers ----------------------------------------------------------------------------
// encode through the C ABI, growing the buffer when the plugin answers BUFFER_TOO_SMALL.
// Throws std::runtime_error with the plugin's last_error on failure.
std::vector<int32_t> encode(const wo_tokenizer_v1 *t, wo_tokenizer_instance *inst, const std::string &text,
                            uint32_t flags = 0);
// Concatenated token_bytes of ids. Throws std::runtime_error on failure.
std::string decode(const wo_tokenizer_v1 *t, const wo_tokenizer_instance *inst, const std::vector<int32_t> &ids);

// For each text: every id is in [0, vocab_size) and decode(encode(text, flags)) == text. The
// first encode is asked with capacity 0, so the BUFFER_TOO_SMALL retry path is exercised too.
void expect_tokenizer_round_trip(const wo_tokenizer_v1 *t, wo_tokenizer_instance *inst,
                                 const std::vector<std::string> &texts, uint32_t flags = 0);

// ---- architectures -------------------------------------------------------------------------
// probe scores 0, without crashing, for a model of an unknown architecture and for one without
// any metadata: a plugin must never claim a model it cannot serve.
void expect_arch_refuses_foreign_models(const wo_arch_v1 *a);

} // namespace wo::testing
