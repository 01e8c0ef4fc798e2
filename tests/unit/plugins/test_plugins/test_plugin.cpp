// One source, many purpose-built plugins for the registry tests. Compile definitions choose the
// plugin's name, kind, score and which way it misbehaves (TP_MODE), so each case is a real `.so`
// exercised through the same loader path as a production plugin.
//
//   TP_NAME   descriptor name            TP_KIND   1 architecture, 2 quant, 3 tokenizer (or bogus)
//   TP_SCORE  probe score on a match     TP_MATCH  value of general.architecture /
//                                                  tokenizer.ggml.model this plugin claims
//   TP_MODE   see the list below
#include <worker/sdk.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#define TP_GOOD 0
#define TP_ABI_MAJOR_2 1      // descriptor says abi_major 2 (built against a future SDK)
#define TP_RETURN_NULL 2      // entry returns NULL
#define TP_NEWER_MINOR 3      // abi_minor + 1 with larger descriptor and vtable structs
#define TP_SMALL_STRUCT 4     // descriptor struct_size too small for the v1 fields
#define TP_NULL_VTABLE 5      // vtable pointer NULL
#define TP_SMALL_VTABLE 6     // vtable struct_size too small
#define TP_MISSING_FN 7       // a required function pointer is NULL
#define TP_THROWS 8           // entry throws a C++ exception
#define TP_UNDEFINED_SYMBOL 9 // references a symbol no library defines: dlopen(RTLD_NOW) fails
#define TP_LOSSY 10           // quant codec that drops precision (conformance must catch it)
#define TP_IGNORES_VERSION 11 // serves any host ABI (conformance must catch it)

#ifndef TP_MODE
#define TP_MODE TP_GOOD
#endif
#ifndef TP_SCORE
#define TP_SCORE 10
#endif
#ifndef TP_MATCH
#define TP_MATCH "tiny"
#endif

// Each variant uses only its own kind's functions; the others are unused by design.
#pragma GCC diagnostic ignored "-Wunused-function"

namespace {

thread_local std::string g_error;

// ---- metadata match shared by arch and tokenizer probes ----
int32_t score_for(const wo_host *host, const char *key) {
  if (!host || !host->meta_get) return 0;
  wo_value v = wo::empty_value();
  if (host->meta_get(host->ctx, key, &v) != WO_OK || v.type != WO_VALUE_STRING) return 0;
  return std::string(v.str.data, v.str.len) == TP_MATCH ? TP_SCORE : 0;
}

// ---- architecture: probes only; the registry never runs a forward ----
struct wo_arch_instance_impl {};
int32_t arch_probe(const wo_host *host) { return score_for(host, "general.architecture"); }
wo_status arch_plan(const wo_host *, const wo_arch_config *, wo_arch_plan *) { return WO_ERR_UNSUPPORTED; }
wo_status arch_create(const wo_host *, const wo_arch_config *, wo_arch_instance **) {
  return WO_ERR_UNSUPPORTED;
}
void arch_destroy(wo_arch_instance *) {}
wo_status arch_session_begin(wo_arch_instance *, int64_t) { return WO_ERR_UNSUPPORTED; }
void arch_session_end(wo_arch_instance *) {}
wo_status arch_forward(wo_arch_instance *, const int32_t *, int64_t, int64_t, float *, uint32_t) {
  return WO_ERR_UNSUPPORTED;
}
const char *arch_last_error(const wo_arch_instance *) { return "test plugin: not implemented"; }

// ---- quant: Q8_0 (blocks of 32: fp16 scale + 32 int8) ----
constexpr uint32_t kQ8_0 = 8;
constexpr int64_t kBlock = 32;
constexpr size_t kBlockBytes = 34;

uint16_t to_half(float f) { // round to nearest even; finite normal range is all this codec needs
  uint32_t x;
  std::memcpy(&x, &f, 4);
  const uint32_t sign = (x >> 16) & 0x8000u;
  int32_t exp = static_cast<int32_t>((x >> 23) & 0xff) - 127 + 15;
  uint32_t mant = x & 0x7fffffu;
  if (exp <= 0) return static_cast<uint16_t>(sign); // tiny scales flush to zero
  if (exp >= 31) return static_cast<uint16_t>(sign | 0x7c00u);
  uint32_t h = sign | (static_cast<uint32_t>(exp) << 10) | (mant >> 13);
  const uint32_t rest = mant & 0x1fffu;
  if (rest > 0x1000u || (rest == 0x1000u && (h & 1u))) ++h;
  return static_cast<uint16_t>(h);
}
float from_half(uint16_t h) {
  const uint32_t sign = (h & 0x8000u) << 16, exp = (h >> 10) & 0x1f, mant = h & 0x3ffu;
  if (exp == 0) return (sign ? -1.0f : 1.0f) * std::ldexp(static_cast<float>(mant), -24);
  uint32_t x = sign | ((exp == 31 ? 255 : exp - 15 + 127) << 23) | (mant << 13);
  float f;
  std::memcpy(&f, &x, 4);
  return f;
}

const uint32_t kTypes[] = {kQ8_0};

wo_status check_args(uint32_t type, int64_t row_len) {
  if (type != kQ8_0) {
    g_error = "type " + std::to_string(type) + " is not served (expected Q8_0 = 8)";
    return WO_ERR_UNSUPPORTED;
  }
  if (row_len <= 0 || row_len % kBlock) {
    g_error = "row_len " + std::to_string(row_len) + " is not a positive multiple of 32";
    return WO_ERR_INVALID_ARGUMENT;
  }
  return WO_OK;
}

wo_status q_dequantize(uint32_t type, const void *src, int64_t n_rows, int64_t row_len, float *dst) {
  if (wo_status s = check_args(type, row_len); s != WO_OK) return s;
  const auto *p = static_cast<const uint8_t *>(src);
  for (int64_t b = 0; b < n_rows * row_len / kBlock; ++b, p += kBlockBytes) {
    uint16_t dh;
    std::memcpy(&dh, p, 2);
    const float d = from_half(dh);
    for (int64_t i = 0; i < kBlock; ++i)
      dst[b * kBlock + i] = d * static_cast<float>(static_cast<int8_t>(p[2 + i]));
  }
  return WO_OK;
}

wo_status q_quantize(uint32_t type, const float *src, int64_t n_rows, int64_t row_len, void *dst) {
  if (wo_status s = check_args(type, row_len); s != WO_OK) return s;
  auto *p = static_cast<uint8_t *>(dst);
  for (int64_t b = 0; b < n_rows * row_len / kBlock; ++b, p += kBlockBytes) {
    const float *x = src + b * kBlock;
    float amax = 0;
    for (int64_t i = 0; i < kBlock; ++i)
      amax = std::fmax(amax, std::fabs(x[i]));
    const uint16_t dh = to_half(amax / 127.0f);
    std::memcpy(p, &dh, 2);
    const float d = from_half(dh);
    for (int64_t i = 0; i < kBlock; ++i) {
      float q = d > 0 ? std::nearbyint(x[i] / d) : 0.0f;
#if TP_MODE == TP_LOSSY
      q = std::trunc(q / 16.0f) * 16.0f; // keeps 4 of 8 bits: a broken codec
#endif
      p[2 + i] = static_cast<uint8_t>(static_cast<int8_t>(std::fmax(-127.0f, std::fmin(127.0f, q))));
    }
  }
  return WO_OK;
}
wo_status q_check(const wo_tensor *) { return WO_OK; }
const char *q_last_error() { return g_error.c_str(); }

// ---- tokenizer: one token per byte (0..255), plus <s> = 256 and </s> = 257 ----
struct Tok {
  std::string error;
};
int32_t tok_probe(const wo_host *host, const wo_tokenizer_config *) {
  return score_for(host, "tokenizer.ggml.model");
}
wo_status tok_create(const wo_host *, const wo_tokenizer_config *, wo_tokenizer_instance **out) {
  *out = reinterpret_cast<wo_tokenizer_instance *>(new Tok());
  return WO_OK;
}
void tok_destroy(wo_tokenizer_instance *inst) { delete reinterpret_cast<Tok *>(inst); }
wo_status tok_encode(wo_tokenizer_instance *inst, const char *text, size_t len, uint32_t flags, int32_t *out,
                     size_t cap, size_t *n_out) {
  std::vector<int32_t> ids;
  if (flags & WO_TOK_ADD_SPECIAL) ids.push_back(256);
  for (size_t i = 0; i < len; ++i) {
    if ((flags & WO_TOK_PARSE_SPECIAL) && len - i >= 3 && std::memcmp(text + i, "<s>", 3) == 0) {
      ids.push_back(256), i += 2;
      continue;
    }
    if ((flags & WO_TOK_PARSE_SPECIAL) && len - i >= 4 && std::memcmp(text + i, "</s>", 4) == 0) {
      ids.push_back(257), i += 3;
      continue;
    }
    ids.push_back(static_cast<unsigned char>(text[i]));
  }
  *n_out = ids.size();
  if (ids.size() > cap) {
    reinterpret_cast<Tok *>(inst)->error =
        "need " + std::to_string(ids.size()) + " ids, capacity " + std::to_string(cap);
    return WO_ERR_BUFFER_TOO_SMALL;
  }
  std::copy(ids.begin(), ids.end(), out);
  return WO_OK;
}
const char kBytes[] = {
#define B(i) static_cast<char>(i)
#define B8(i) B(i), B(i + 1), B(i + 2), B(i + 3), B(i + 4), B(i + 5), B(i + 6), B(i + 7)
#define B64(i) B8(i), B8(i + 8), B8(i + 16), B8(i + 24), B8(i + 32), B8(i + 40), B8(i + 48), B8(i + 56)
    B64(0), B64(64), B64(128), B64(192)};
wo_status tok_token_bytes(const wo_tokenizer_instance *inst, int32_t id, wo_str *out) {
  if (id >= 0 && id < 256)
    *out = {kBytes + id, 1};
  else if (id == 256)
    *out = {"<s>", 3};
  else if (id == 257)
    *out = {"</s>", 4};
  else {
    const_cast<Tok *>(reinterpret_cast<const Tok *>(inst))->error =
        "id " + std::to_string(id) + " outside [0, 258)";
    return WO_ERR_INVALID_ARGUMENT;
  }
  return WO_OK;
}
wo_status tok_special_ids(const wo_tokenizer_instance *, wo_special_ids *out) {
  *out = {sizeof(wo_special_ids), 256, 257, -1, -1, -1, 1, 0};
  return WO_OK;
}
int32_t tok_is_eog(const wo_tokenizer_instance *, int32_t id) { return id == 257; }
int64_t tok_vocab_size(const wo_tokenizer_instance *) { return 258; }
const char *tok_kind(const wo_tokenizer_instance *) { return "test-bytes"; }
const char *tok_last_error(const wo_tokenizer_instance *inst) {
  return reinterpret_cast<const Tok *>(inst)->error.c_str();
}

// ---- vtables; TP_NEWER_MINOR wraps them in larger structs with a field this host does not know ----
template <class V> struct Grown {
  V v1;
  void (*added_in_next_minor)(void);
};
void added_fn() {}

#if TP_KIND == WO_PLUGIN_ARCHITECTURE
using Vtable = wo_arch_v1;
Vtable make_vtable() {
  // struct_size of a plugin built against SDK 1.0 (before decode_step): the host must still take it.
  return {offsetof(wo_arch_v1, decode_step),
          arch_probe,
          arch_plan,
          arch_create,
          arch_destroy,
          arch_session_begin,
          arch_session_end,
          arch_forward,
          arch_last_error,
          nullptr};
}
#elif TP_KIND == WO_PLUGIN_TOKENIZER
using Vtable = wo_tokenizer_v1;
Vtable make_vtable() {
  return {sizeof(wo_tokenizer_v1), tok_probe,  tok_create,     tok_destroy, tok_encode,    tok_token_bytes,
          tok_special_ids,         tok_is_eog, tok_vocab_size, tok_kind,    tok_last_error};
}
#else // quant, and the bogus kinds (they carry a quant vtable)
using Vtable = wo_quant_v1;
Vtable make_vtable() {
  return {sizeof(wo_quant_v1), 1,       kTypes,  q_dequantize, q_quantize, q_check, nullptr, nullptr, nullptr,
          q_last_error,        nullptr, nullptr, nullptr,      nullptr,    nullptr};
}
#endif

Grown<Vtable> make_grown() {
  Grown<Vtable> g{make_vtable(), added_fn};
  g.v1.struct_size = sizeof(Grown<Vtable>);
#if TP_MODE == TP_SMALL_VTABLE
  g.v1.struct_size = sizeof(uint32_t) + sizeof(void *);
#endif
#if TP_MODE == TP_MISSING_FN
#if TP_KIND == WO_PLUGIN_TOKENIZER
  g.v1.encode = nullptr;
#elif TP_KIND == WO_PLUGIN_ARCHITECTURE
  g.v1.forward = nullptr;
#else
  g.v1.dequantize_rows = nullptr;
#endif
#endif
#if TP_MODE != TP_NEWER_MINOR && TP_MODE != TP_SMALL_VTABLE
  g.v1.struct_size = sizeof(Vtable);
#endif
  return g;
}
const Grown<Vtable> kVtable = make_grown();

struct GrownDescriptor {
  wo_plugin v1;
  const char *added_field; // a newer SDK's descriptor field
};

GrownDescriptor make_descriptor() {
  GrownDescriptor d{wo::make_descriptor(TP_KIND, TP_NAME, "1.2.3", &kVtable), "future"};
#if TP_MODE == TP_ABI_MAJOR_2
  d.v1.abi_major = 2;
#elif TP_MODE == TP_NEWER_MINOR
  d.v1.struct_size = sizeof(GrownDescriptor);
  d.v1.abi_minor = WORKER_SDK_ABI_MINOR + 1;
#elif TP_MODE == TP_SMALL_STRUCT
  d.v1.struct_size = offsetof(wo_plugin, vtable);
#elif TP_MODE == TP_NULL_VTABLE
  d.v1.vtable = nullptr;
#endif
  return d;
}
const GrownDescriptor kDescriptor = make_descriptor();

#if TP_MODE == TP_UNDEFINED_SYMBOL
extern "C" int wo_test_symbol_that_no_library_defines(void);
#endif

const wo_plugin *entry(uint32_t host_major, uint32_t host_minor) {
#if TP_MODE == TP_RETURN_NULL
  (void)host_major, (void)host_minor;
  return nullptr;
#elif TP_MODE == TP_THROWS
  (void)host_major, (void)host_minor;
  throw std::runtime_error("test plugin: entry throws");
#elif TP_MODE == TP_UNDEFINED_SYMBOL
  (void)host_minor;
  return wo_test_symbol_that_no_library_defines() == static_cast<int>(host_major) ? &kDescriptor.v1 : nullptr;
#elif TP_MODE == TP_IGNORES_VERSION || TP_MODE == TP_ABI_MAJOR_2
  (void)host_major, (void)host_minor;
  return &kDescriptor.v1;
#else
  return wo::negotiate(&kDescriptor.v1, host_major, host_minor);
#endif
}

} // namespace

WORKER_PLUGIN(entry)
