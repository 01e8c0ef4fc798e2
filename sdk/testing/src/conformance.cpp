#include <worker/testing/conformance.hpp>
#include <worker/testing/fake_host.hpp>

#include <worker/ggml_types.hpp>

#include <gtest/gtest.h>

#include <cctype>
#include <cmath>
#include <cstring>
#include <random>
#include <set>
#include <stdexcept>

namespace wo::testing {
namespace {

std::string type_label(uint32_t type) {
  const auto *info = wo::ggml::type_info(type);
  return std::string(info && info->valid ? info->name : "invalid") + " (" + std::to_string(type) + ")";
}

template <class V> uint32_t vtable_size(const void *vtable) {
  uint32_t size = 0;
  std::memcpy(&size, vtable, sizeof(size));
  return size;
}

#define WO_EXPECT_FN(vt, field) EXPECT_NE((vt)->field, nullptr) << who << ": required function pointer " #field " is NULL"

void expect_arch_vtable(const std::string &who, const wo_arch_v1 *v) {
  WO_EXPECT_FN(v, probe);
  WO_EXPECT_FN(v, plan);
  WO_EXPECT_FN(v, create);
  WO_EXPECT_FN(v, destroy);
  WO_EXPECT_FN(v, session_begin);
  WO_EXPECT_FN(v, session_end);
  WO_EXPECT_FN(v, forward);
  WO_EXPECT_FN(v, last_error);
}

void expect_quant_vtable(const std::string &who, const wo_quant_v1 *v) {
  EXPECT_GT(v->n_types, 0u) << who << ": a quant codec must serve at least one ggml type";
  WO_EXPECT_FN(v, types);
  WO_EXPECT_FN(v, dequantize_rows);
  WO_EXPECT_FN(v, last_error);
  if (!v->types) return;
  std::set<uint32_t> seen;
  for (uint32_t i = 0; i < v->n_types; ++i) {
    const auto *info = wo::ggml::type_info(v->types[i]);
    EXPECT_TRUE(info && info->valid) << who << ": types[" << i << "] = " << v->types[i]
                                     << " is not a valid ggml type id";
    EXPECT_TRUE(seen.insert(v->types[i]).second) << who << ": types[" << i << "] = " << type_label(v->types[i])
                                                 << " is listed twice";
  }
}

void expect_tokenizer_vtable(const std::string &who, const wo_tokenizer_v1 *v) {
  WO_EXPECT_FN(v, probe);
  WO_EXPECT_FN(v, create);
  WO_EXPECT_FN(v, destroy);
  WO_EXPECT_FN(v, encode);
  WO_EXPECT_FN(v, token_bytes);
  WO_EXPECT_FN(v, special_ids);
  WO_EXPECT_FN(v, is_eog);
  WO_EXPECT_FN(v, vocab_size);
  WO_EXPECT_FN(v, kind);
  WO_EXPECT_FN(v, last_error);
}
#undef WO_EXPECT_FN

std::string quant_error(const wo_quant_v1 *q) {
  const char *e = q->last_error ? q->last_error() : nullptr;
  return e ? e : "(no last_error)";
}

} // namespace

void expect_descriptor_invariants(const wo_plugin *p, wo_plugin_kind kind) {
  ASSERT_NE(p, nullptr) << "the entry returned NULL for this SDK's own ABI " << WORKER_SDK_ABI_MAJOR << "."
                        << WORKER_SDK_ABI_MINOR;
  ASSERT_GE(p->struct_size, sizeof(wo_plugin))
      << "descriptor struct_size " << p->struct_size << " is smaller than sizeof(wo_plugin) " << sizeof(wo_plugin);
  const std::string who = std::string("plugin '") + (p->name ? p->name : "(NULL name)") + "'";
  EXPECT_EQ(p->abi_major, WORKER_SDK_ABI_MAJOR) << who << ": abi_major";
  EXPECT_GE(p->abi_minor, 0u) << who;
  EXPECT_EQ(p->kind, kind) << who << ": kind (1 architecture, 2 quant, 3 tokenizer)";
  ASSERT_NE(p->name, nullptr) << "descriptor name is NULL";
  EXPECT_GT(std::strlen(p->name), 0u) << "descriptor name is empty";
  for (const char *c = p->name; *c; ++c)
    EXPECT_TRUE(std::isgraph(static_cast<unsigned char>(*c)))
        << who << ": name has a non-printable or space character at offset " << (c - p->name);
  ASSERT_NE(p->version, nullptr) << who << ": version is NULL";
  EXPECT_GT(std::strlen(p->version), 0u) << who << ": version is empty";
  ASSERT_NE(p->vtable, nullptr) << who << ": vtable is NULL";
  const uint32_t vsize = vtable_size<void>(p->vtable);
  switch (p->kind) {
  case WO_PLUGIN_ARCHITECTURE:
    ASSERT_GE(vsize, sizeof(wo_arch_v1)) << who << ": wo_arch_v1 struct_size";
    expect_arch_vtable(who, static_cast<const wo_arch_v1 *>(p->vtable));
    break;
  case WO_PLUGIN_QUANT:
    ASSERT_GE(vsize, sizeof(wo_quant_v1)) << who << ": wo_quant_v1 struct_size";
    expect_quant_vtable(who, static_cast<const wo_quant_v1 *>(p->vtable));
    break;
  case WO_PLUGIN_TOKENIZER:
    ASSERT_GE(vsize, sizeof(wo_tokenizer_v1)) << who << ": wo_tokenizer_v1 struct_size";
    expect_tokenizer_vtable(who, static_cast<const wo_tokenizer_v1 *>(p->vtable));
    break;
  default: ADD_FAILURE() << who << ": unknown kind " << p->kind;
  }
}

void expect_version_negotiation(wo_plugin_entry_fn entry) {
  ASSERT_NE(entry, nullptr);
  const wo_plugin *cur = entry(WORKER_SDK_ABI_MAJOR, WORKER_SDK_ABI_MINOR);
  ASSERT_NE(cur, nullptr) << "entry(" << WORKER_SDK_ABI_MAJOR << ", " << WORKER_SDK_ABI_MINOR
                          << ") returned NULL: the plugin refuses the SDK it was built with";
  const std::string name = cur->name ? cur->name : "";
  for (uint32_t minor : {WORKER_SDK_ABI_MINOR + 1, WORKER_SDK_ABI_MINOR + 100}) {
    const wo_plugin *newer = entry(WORKER_SDK_ABI_MAJOR, minor);
    EXPECT_NE(newer, nullptr) << "plugin '" << name << "': a host of ABI " << WORKER_SDK_ABI_MAJOR << "." << minor
                              << " (newer minor, additive) must still be served";
    if (newer) {
      EXPECT_STREQ(newer->name, cur->name) << "the descriptor's name changed with the host's minor";
    }
  }
  for (uint32_t major : {WORKER_SDK_ABI_MAJOR + 1, WORKER_SDK_ABI_MAJOR - 1, 0xffffffffu}) {
    if (major == WORKER_SDK_ABI_MAJOR) continue;
    EXPECT_EQ(entry(major, 0), nullptr) << "plugin '" << name << "': a host of ABI major " << major
                                        << " must get NULL (this plugin speaks " << WORKER_SDK_ABI_MAJOR << ")";
  }
}

void expect_quant_cpu_conformance(const wo_quant_v1 *q, const std::map<uint32_t, double> &max_rel_error,
                                  uint32_t seed, int64_t n_rows) {
  ASSERT_NE(q, nullptr);
  ASSERT_NE(q->dequantize_rows, nullptr) << "dequantize_rows is required";
  ASSERT_NE(q->quantize_rows, nullptr) << "quantize_rows is NULL: the round trip needs the codec's quantizer";
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::uniform_real_distribution<float> log_scale(std::log(0.01f), std::log(100.0f));
  for (uint32_t i = 0; i < q->n_types; ++i) {
    const uint32_t type = q->types[i];
    SCOPED_TRACE("ggml type " + type_label(type));
    const auto *info = wo::ggml::type_info(type);
    ASSERT_TRUE(info && info->valid);
    auto bound = max_rel_error.find(type);
    if (bound == max_rel_error.end()) {
      ADD_FAILURE() << "the codec lists " << type_label(type) << " but the test gave no error bound for it";
      continue;
    }
    const int64_t be = info->block_elems;
    const int64_t row_len = be * std::max<int64_t>(1, 512 / be);
    const size_t row_bytes = static_cast<size_t>(row_len / be) * info->block_bytes;
    std::vector<float> x(static_cast<size_t>(n_rows * row_len));
    for (int64_t r = 0; r < n_rows; ++r) {
      const float scale = std::exp(log_scale(rng));
      for (int64_t c = 0; c < row_len; ++c) x[r * row_len + c] = normal(rng) * scale;
    }
    std::vector<uint8_t> packed(row_bytes * static_cast<size_t>(n_rows));
    ASSERT_EQ(q->quantize_rows(type, x.data(), n_rows, row_len, packed.data()), WO_OK)
        << "quantize_rows(" << n_rows << " rows of " << row_len << "): " << quant_error(q);
    std::vector<float> y(x.size(), std::nanf("")), y2(x.size(), 0.0f);
    ASSERT_EQ(q->dequantize_rows(type, packed.data(), n_rows, row_len, y.data()), WO_OK)
        << "dequantize_rows: " << quant_error(q);
    ASSERT_EQ(q->dequantize_rows(type, packed.data(), n_rows, row_len, y2.data()), WO_OK)
        << "dequantize_rows (second call): " << quant_error(q);
    EXPECT_EQ(std::memcmp(y.data(), y2.data(), y.size() * sizeof(float)), 0)
        << "dequantize_rows is not deterministic: the same bytes gave different floats";
    for (int64_t r = 0; r < n_rows; ++r) {
      double err2 = 0, ref2 = 0;
      bool finite = true;
      for (int64_t c = 0; c < row_len; ++c) {
        const double a = x[r * row_len + c], b = y[r * row_len + c];
        finite = finite && std::isfinite(b);
        err2 += (a - b) * (a - b);
        ref2 += a * a;
      }
      EXPECT_TRUE(finite) << "row " << r << ": dequantized values are not all finite";
      const double rel = std::sqrt(err2 / ref2);
      EXPECT_LE(rel, bound->second) << "row " << r << " (" << row_len << " values): relative L2 error " << rel
                                    << " exceeds the bound " << bound->second;
    }
  }
}

void expect_quant_rejects_bad_arguments(const wo_quant_v1 *q) {
  ASSERT_NE(q, nullptr);
  std::vector<float> f(4096, 0.5f);
  std::vector<uint8_t> bytes(16384, 0);
  const uint32_t bogus = 0x7fffffffu;
  if (q->dequantize_rows) {
    EXPECT_NE(q->dequantize_rows(bogus, bytes.data(), 1, 32, f.data()), WO_OK)
        << "dequantize_rows accepted the unknown type id " << bogus;
    EXPECT_STRNE(quant_error(q).c_str(), "") << "a failed call must leave a message in last_error()";
  }
  if (q->quantize_rows) {
    EXPECT_NE(q->quantize_rows(bogus, f.data(), 1, 32, bytes.data()), WO_OK)
        << "quantize_rows accepted the unknown type id " << bogus;
  }
  for (uint32_t i = 0; i < q->n_types; ++i) {
    const auto *info = wo::ggml::type_info(q->types[i]);
    if (!info || info->block_elems <= 1) continue;
    const int64_t bad_len = info->block_elems + 1;
    SCOPED_TRACE("ggml type " + type_label(q->types[i]) + ", row_len " + std::to_string(bad_len));
    if (q->dequantize_rows) {
      EXPECT_NE(q->dequantize_rows(q->types[i], bytes.data(), 1, bad_len, f.data()), WO_OK)
          << "dequantize_rows accepted a row length that is not a multiple of the block";
      EXPECT_STRNE(quant_error(q).c_str(), "");
    }
    if (q->quantize_rows) {
      EXPECT_NE(q->quantize_rows(q->types[i], f.data(), 1, bad_len, bytes.data()), WO_OK)
          << "quantize_rows accepted a row length that is not a multiple of the block";
    }
  }
}

std::vector<int32_t> encode(const wo_tokenizer_v1 *t, wo_tokenizer_instance *inst, const std::string &text,
                            uint32_t flags) {
  std::vector<int32_t> ids(text.size() + 8);
  size_t n = 0;
  wo_status s = t->encode(inst, text.data(), text.size(), flags, ids.data(), ids.size(), &n);
  if (s == WO_ERR_BUFFER_TOO_SMALL) {
    ids.resize(n);
    s = t->encode(inst, text.data(), text.size(), flags, ids.data(), ids.size(), &n);
  }
  if (s != WO_OK) {
    const char *e = t->last_error(inst);
    throw std::runtime_error("encode of " + std::to_string(text.size()) + " bytes failed with status " +
                             std::to_string(s) + ": " + (e ? e : ""));
  }
  ids.resize(n);
  return ids;
}

std::string decode(const wo_tokenizer_v1 *t, const wo_tokenizer_instance *inst, const std::vector<int32_t> &ids) {
  std::string out;
  for (size_t i = 0; i < ids.size(); ++i) {
    wo_str s{};
    if (wo_status st = t->token_bytes(inst, ids[i], &s); st != WO_OK) {
      const char *e = t->last_error(inst);
      throw std::runtime_error("token_bytes(" + std::to_string(ids[i]) + ") at position " + std::to_string(i) +
                               " failed with status " + std::to_string(st) + ": " + (e ? e : ""));
    }
    out.append(s.data ? s.data : "", s.data ? s.len : 0);
  }
  return out;
}

void expect_tokenizer_round_trip(const wo_tokenizer_v1 *t, wo_tokenizer_instance *inst,
                                 const std::vector<std::string> &texts, uint32_t flags) {
  ASSERT_NE(t, nullptr);
  ASSERT_NE(inst, nullptr);
  const int64_t vocab = t->vocab_size(inst);
  ASSERT_GT(vocab, 0) << "vocab_size";
  for (const auto &text : texts) {
    SCOPED_TRACE("text \"" + text + "\"");
    // capacity 0 first: a plugin must report the count and BUFFER_TOO_SMALL (or OK for no ids).
    size_t n = 0;
    const wo_status first = t->encode(inst, text.data(), text.size(), flags, nullptr, 0, &n);
    if (first == WO_OK) {
      EXPECT_EQ(n, 0u) << "encode with capacity 0 returned OK but reported " << n << " ids";
    } else {
      EXPECT_EQ(first, WO_ERR_BUFFER_TOO_SMALL) << "encode with capacity 0: " << t->last_error(inst);
    }
    std::vector<int32_t> ids;
    try {
      ids = encode(t, inst, text, flags);
    } catch (const std::exception &e) {
      ADD_FAILURE() << e.what();
      continue;
    }
    if (first == WO_ERR_BUFFER_TOO_SMALL) {
      EXPECT_EQ(ids.size(), n) << "the count reported for capacity 0";
    }
    for (size_t i = 0; i < ids.size(); ++i)
      EXPECT_TRUE(ids[i] >= 0 && ids[i] < vocab) << "id " << ids[i] << " at position " << i
                                                 << " is outside [0, " << vocab << ")";
    try {
      EXPECT_EQ(decode(t, inst, ids), text) << "decode(encode(text)) differs from the text";
    } catch (const std::exception &e) {
      ADD_FAILURE() << e.what();
    }
  }
}

void expect_arch_refuses_foreign_models(const wo_arch_v1 *a) {
  ASSERT_NE(a, nullptr);
  ASSERT_NE(a->probe, nullptr);
  FakeHost empty;
  EXPECT_EQ(a->probe(empty.host()), 0) << "probe claimed a model that has no metadata at all";
  FakeHost foreign;
  foreign.set_str("general.architecture", "no-such-architecture-xyzzy");
  EXPECT_EQ(a->probe(foreign.host()), 0) << "probe claimed general.architecture = 'no-such-architecture-xyzzy'";
}

} // namespace wo::testing
