// CPU dequantization, one function per block layout. The arithmetic (operand order, what is
// rounded to float when) follows the GGUF/ggml definitions exactly, because the results must equal
// the reference dequantizer bit for bit; the file is compiled without FMA contraction for that
// reason (see CMakeLists.txt).
#include "quant_common/block_layouts.hpp"
#include "quant_common/cpu_codec.hpp"
#include "quant_common/scalar_convert.hpp"

#include <worker/ggml_types.hpp>
#include <worker/sdk.hpp>

namespace wo::quant {
namespace {

using wo::ggml::type_info;

void deq_q4_0(const uint8_t *b, float *y) {
  const float d = half_to_float(load_u16(b));
  const uint8_t *qs = b + 2;
  for (int j = 0; j < 16; ++j) {
    y[j] = static_cast<float>((qs[j] & 0x0f) - 8) * d;
    y[j + 16] = static_cast<float>((qs[j] >> 4) - 8) * d;
  }
}

void deq_q4_1(const uint8_t *b, float *y) {
  const float d = half_to_float(load_u16(b));
  const float m = half_to_float(load_u16(b + 2));
  const uint8_t *qs = b + 4;
  for (int j = 0; j < 16; ++j) {
    y[j] = static_cast<float>(qs[j] & 0x0f) * d + m;
    y[j + 16] = static_cast<float>(qs[j] >> 4) * d + m;
  }
}

void deq_q5_0(const uint8_t *b, float *y) {
  const float d = half_to_float(load_u16(b));
  const uint32_t qh = load_u32(b + 2);
  const uint8_t *qs = b + 6;
  for (int j = 0; j < 16; ++j) {
    const int h0 = static_cast<int>(((qh >> j) << 4) & 0x10);
    const int h1 = static_cast<int>((qh >> (j + 12)) & 0x10);
    y[j] = static_cast<float>(((qs[j] & 0x0f) | h0) - 16) * d;
    y[j + 16] = static_cast<float>(((qs[j] >> 4) | h1) - 16) * d;
  }
}

void deq_q5_1(const uint8_t *b, float *y) {
  const float d = half_to_float(load_u16(b));
  const float m = half_to_float(load_u16(b + 2));
  const uint32_t qh = load_u32(b + 4);
  const uint8_t *qs = b + 8;
  for (int j = 0; j < 16; ++j) {
    const int h0 = static_cast<int>(((qh >> j) << 4) & 0x10);
    const int h1 = static_cast<int>((qh >> (j + 12)) & 0x10);
    y[j] = static_cast<float>((qs[j] & 0x0f) | h0) * d + m;
    y[j + 16] = static_cast<float>((qs[j] >> 4) | h1) * d + m;
  }
}

void deq_q8_0(const uint8_t *b, float *y) {
  const float d = half_to_float(load_u16(b));
  for (int j = 0; j < 32; ++j)
    y[j] = static_cast<float>(static_cast<int8_t>(b[2 + j])) * d;
}

void deq_q4_k(const uint8_t *b, float *y) {
  const float d = half_to_float(load_u16(b));
  const float dmin = half_to_float(load_u16(b + 2));
  const uint8_t *scales = b + 4;
  const uint8_t *q = b + 16;
  for (int j = 0; j < 4; ++j) {
    uint8_t sc, m;
    k_scale_min(2 * j, scales, sc, m);
    const float d1 = d * sc, m1 = dmin * m;
    k_scale_min(2 * j + 1, scales, sc, m);
    const float d2 = d * sc, m2 = dmin * m;
    for (int l = 0; l < 32; ++l)
      y[64 * j + l] = d1 * static_cast<float>(q[l] & 0x0f) - m1;
    for (int l = 0; l < 32; ++l)
      y[64 * j + 32 + l] = d2 * static_cast<float>(q[l] >> 4) - m2;
    q += 32;
  }
}

void deq_q5_k(const uint8_t *b, float *y) {
  const float d = half_to_float(load_u16(b));
  const float dmin = half_to_float(load_u16(b + 2));
  const uint8_t *scales = b + 4;
  const uint8_t *qh = b + 16;
  const uint8_t *ql = b + 48;
  for (int j = 0; j < 4; ++j) {
    uint8_t sc, m;
    k_scale_min(2 * j, scales, sc, m);
    const float d1 = d * sc, m1 = dmin * m;
    k_scale_min(2 * j + 1, scales, sc, m);
    const float d2 = d * sc, m2 = dmin * m;
    const uint8_t u1 = static_cast<uint8_t>(1u << (2 * j)), u2 = static_cast<uint8_t>(2u << (2 * j));
    for (int l = 0; l < 32; ++l)
      y[64 * j + l] = d1 * static_cast<float>((ql[l] & 0x0f) + (qh[l] & u1 ? 16 : 0)) - m1;
    for (int l = 0; l < 32; ++l)
      y[64 * j + 32 + l] = d2 * static_cast<float>((ql[l] >> 4) + (qh[l] & u2 ? 16 : 0)) - m2;
    ql += 32;
  }
}

void deq_q6_k(const uint8_t *b, float *y) {
  const float d = half_to_float(load_u16(b + 208));
  const uint8_t *ql = b;
  const uint8_t *qh = b + 128;
  const int8_t *sc = reinterpret_cast<const int8_t *>(b + 192);
  for (int n = 0; n < 2; ++n) {
    for (int l = 0; l < 32; ++l) {
      const int is = l / 16;
      const int q1 = ((ql[l] & 0x0f) | (((qh[l] >> 0) & 3) << 4)) - 32;
      const int q2 = ((ql[l + 32] & 0x0f) | (((qh[l] >> 2) & 3) << 4)) - 32;
      const int q3 = ((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32;
      const int q4 = ((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32;
      y[l] = d * sc[is] * static_cast<float>(q1);
      y[l + 32] = d * sc[is + 2] * static_cast<float>(q2);
      y[l + 64] = d * sc[is + 4] * static_cast<float>(q3);
      y[l + 96] = d * sc[is + 6] * static_cast<float>(q4);
    }
    y += 128;
    ql += 64;
    qh += 32;
    sc += 8;
  }
}

void deq_mxfp4(const uint8_t *b, float *y) {
  const float d = e8m0_to_float_half(b[0]);
  const uint8_t *qs = b + 1;
  for (int j = 0; j < 16; ++j) {
    y[j] = static_cast<float>(mxfp4_value(qs[j] & 0x0fu)) * d;
    y[j + 16] = static_cast<float>(mxfp4_value(qs[j] >> 4)) * d;
  }
}

using BlockFn = void (*)(const uint8_t *, float *);

BlockFn block_decoder(uint32_t type) {
  switch (type) {
  case wo::ggml::Q4_0: return deq_q4_0;
  case wo::ggml::Q4_1: return deq_q4_1;
  case wo::ggml::Q5_0: return deq_q5_0;
  case wo::ggml::Q5_1: return deq_q5_1;
  case wo::ggml::Q8_0: return deq_q8_0;
  case wo::ggml::Q4_K: return deq_q4_k;
  case wo::ggml::Q5_K: return deq_q5_k;
  case wo::ggml::Q6_K: return deq_q6_k;
  case wo::ggml::MXFP4: return deq_mxfp4;
  default: return nullptr;
  }
}

} // namespace

bool cpu_supports(uint32_t type) {
  return type == wo::ggml::F32 || type == wo::ggml::F16 || type == wo::ggml::BF16 || block_decoder(type);
}

std::string type_label(uint32_t type) {
  const char *n = wo::ggml::type_name(type);
  return n ? std::string(n) : "type " + std::to_string(type);
}

void check_row_len(uint32_t type, int64_t row_len, const std::string &where) {
  const auto *ti = type_info(type);
  if (!ti || !cpu_supports(type))
    throw Error(WO_ERR_UNSUPPORTED,
                where + ": ggml type " + type_label(type) + " is not served by this codec");
  if (row_len <= 0 || row_len % ti->block_elems != 0)
    throw Error(WO_ERR_FORMAT, where + ": row length " + std::to_string(row_len) +
                                   " is not a positive multiple of " + std::to_string(ti->block_elems) +
                                   " (the " + ti->name + " block size)");
}

void dequantize_rows(uint32_t type, const void *src, int64_t n_rows, int64_t row_len, float *dst) {
  check_row_len(type, row_len, "dequantize_rows");
  if (n_rows < 0 || (n_rows > 0 && (!src || !dst)))
    throw Error(WO_ERR_INVALID_ARGUMENT,
                "dequantize_rows: expected n_rows >= 0 and non-null buffers, found n_rows=" +
                    std::to_string(n_rows));
  const uint64_t n = static_cast<uint64_t>(n_rows) * static_cast<uint64_t>(row_len);
  const auto *p = static_cast<const uint8_t *>(src);
  switch (type) {
  case wo::ggml::F32: std::memcpy(dst, src, n * sizeof(float)); return;
  case wo::ggml::F16:
    for (uint64_t i = 0; i < n; ++i)
      dst[i] = half_to_float(load_u16(p + 2 * i));
    return;
  case wo::ggml::BF16:
    for (uint64_t i = 0; i < n; ++i)
      dst[i] = bf16_to_float(load_u16(p + 2 * i));
    return;
  default: break;
  }
  const auto *ti = type_info(type);
  const BlockFn fn = block_decoder(type);
  const uint64_t n_blocks = n / ti->block_elems;
  for (uint64_t i = 0; i < n_blocks; ++i)
    fn(p + i * ti->block_bytes, dst + i * ti->block_elems);
}

} // namespace wo::quant
