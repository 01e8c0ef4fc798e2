// CPU quantizers: straightforward round-to-nearest encoders written for this project (tools and
// tests need real-format blocks; they need not match other implementations bit for bit, only
// decode correctly and keep the error near what the format allows).
#include "quant_common/block_layouts.hpp"
#include "quant_common/cpu_codec.hpp"
#include "quant_common/scalar_convert.hpp"

#include <worker/ggml_types.hpp>
#include <worker/sdk.hpp>

#include <algorithm>
#include <cmath>

namespace wo::quant {
namespace {

void store_u16(uint8_t *p, uint16_t v) {
  p[0] = static_cast<uint8_t>(v & 0xff);
  p[1] = static_cast<uint8_t>(v >> 8);
}
void store_u32(uint8_t *p, uint32_t v) {
  for (int i = 0; i < 4; ++i)
    p[i] = static_cast<uint8_t>(v >> (8 * i));
}

int clampi(long v, int lo, int hi) { return static_cast<int>(std::min<long>(hi, std::max<long>(lo, v))); }

// Symmetric block with levels q - zero, q in [0, 2*zero-1]: the scale maps the element of largest
// magnitude (with its sign) to -zero, which uses the one extra negative level.
float symmetric_scale(const float *x, int n, int zero) {
  float vmax = 0.0f, amax = 0.0f;
  for (int i = 0; i < n; ++i)
    if (std::fabs(x[i]) > amax) {
      amax = std::fabs(x[i]);
      vmax = x[i];
    }
  return vmax / static_cast<float>(-zero);
}

void q_sym_nibbles(const float *x, uint8_t *b, int zero) { // Q4_0 (zero 8) and Q5_0 (zero 16)
  const uint16_t dh = float_to_half(symmetric_scale(x, 32, zero));
  const float d = half_to_float(dh);
  const float id = d != 0.0f ? 1.0f / d : 0.0f;
  store_u16(b, dh);
  uint8_t *qs = b + (zero == 8 ? 2 : 6);
  uint32_t qh = 0;
  for (int j = 0; j < 16; ++j) {
    const int q0 = clampi(std::lround(x[j] * id) + zero, 0, 2 * zero - 1);
    const int q1 = clampi(std::lround(x[j + 16] * id) + zero, 0, 2 * zero - 1);
    qs[j] = static_cast<uint8_t>((q0 & 0x0f) | ((q1 & 0x0f) << 4));
    qh |= static_cast<uint32_t>((q0 >> 4) & 1) << j;
    qh |= static_cast<uint32_t>((q1 >> 4) & 1) << (j + 16);
  }
  if (zero == 16) store_u32(b + 2, qh);
}

void q_affine_nibbles(const float *x, uint8_t *b, int levels) { // Q4_1 (15) and Q5_1 (31)
  float lo = x[0], hi = x[0];
  for (int i = 1; i < 32; ++i) {
    lo = std::min(lo, x[i]);
    hi = std::max(hi, x[i]);
  }
  const uint16_t dh = float_to_half((hi - lo) / static_cast<float>(levels));
  const uint16_t mh = float_to_half(lo);
  const float d = half_to_float(dh), m = half_to_float(mh);
  const float id = d != 0.0f ? 1.0f / d : 0.0f;
  store_u16(b, dh);
  store_u16(b + 2, mh);
  uint8_t *qs = b + (levels == 15 ? 4 : 8);
  uint32_t qh = 0;
  for (int j = 0; j < 16; ++j) {
    const int q0 = clampi(std::lround((x[j] - m) * id), 0, levels);
    const int q1 = clampi(std::lround((x[j + 16] - m) * id), 0, levels);
    qs[j] = static_cast<uint8_t>((q0 & 0x0f) | ((q1 & 0x0f) << 4));
    qh |= static_cast<uint32_t>((q0 >> 4) & 1) << j;
    qh |= static_cast<uint32_t>((q1 >> 4) & 1) << (j + 16);
  }
  if (levels == 31) store_u32(b + 4, qh);
}

void q_q8_0(const float *x, uint8_t *b) {
  float amax = 0.0f;
  for (int i = 0; i < 32; ++i)
    amax = std::max(amax, std::fabs(x[i]));
  const uint16_t dh = float_to_half(amax / 127.0f);
  const float d = half_to_float(dh);
  const float id = d != 0.0f ? 1.0f / d : 0.0f;
  store_u16(b, dh);
  for (int j = 0; j < 32; ++j)
    b[2 + j] = static_cast<uint8_t>(static_cast<int8_t>(clampi(std::lround(x[j] * id), -127, 127)));
}

// Q4_K / Q5_K: eight 32-value sub-blocks, each x ~ d*sc*q - dmin*m with 6-bit sc, m.
void q_k_affine(const float *x, uint8_t *b, int levels) {
  float scale[8], minv[8];
  for (int s = 0; s < 8; ++s) {
    float lo = x[32 * s], hi = x[32 * s];
    for (int l = 1; l < 32; ++l) {
      lo = std::min(lo, x[32 * s + l]);
      hi = std::max(hi, x[32 * s + l]);
    }
    lo = std::min(lo, 0.0f); // the min term is subtracted: keep it >= 0
    scale[s] = (hi - lo) / static_cast<float>(levels);
    minv[s] = -lo;
  }
  const float max_scale = *std::max_element(scale, scale + 8);
  const float max_min = *std::max_element(minv, minv + 8);
  const uint16_t dh = float_to_half(max_scale / 63.0f), mh = float_to_half(max_min / 63.0f);
  const float d = half_to_float(dh), dmin = half_to_float(mh);
  uint8_t sc[8], mq[8];
  for (int s = 0; s < 8; ++s) {
    sc[s] = static_cast<uint8_t>(d > 0 ? clampi(std::lround(scale[s] / d), 0, 63) : 0);
    mq[s] = static_cast<uint8_t>(dmin > 0 ? clampi(std::lround(minv[s] / dmin), 0, 63) : 0);
  }
  store_u16(b, dh);
  store_u16(b + 2, mh);
  uint8_t *scales = b + 4;
  std::fill(scales, scales + 12, uint8_t{0});
  for (int j = 0; j < 8; ++j) { // inverse of k_scale_min
    if (j < 4) {
      scales[j] |= sc[j];
      scales[j + 4] |= mq[j];
    } else {
      scales[j + 4] = static_cast<uint8_t>((sc[j] & 0x0f) | ((mq[j] & 0x0f) << 4));
      scales[j - 4] |= static_cast<uint8_t>((sc[j] >> 4) << 6);
      scales[j] |= static_cast<uint8_t>((mq[j] >> 4) << 6);
    }
  }
  uint8_t *qh = levels == 31 ? b + 16 : nullptr;
  uint8_t *qs = levels == 31 ? b + 48 : b + 16;
  if (qh) std::fill(qh, qh + 32, uint8_t{0});
  std::fill(qs, qs + 128, uint8_t{0});
  for (int s = 0; s < 8; ++s) {
    const float ds = d * sc[s], ms = dmin * mq[s];
    const float id = ds != 0.0f ? 1.0f / ds : 0.0f;
    const int group = s / 2, high = s % 2;
    for (int l = 0; l < 32; ++l) {
      const int q = clampi(std::lround((x[32 * s + l] + ms) * id), 0, levels);
      qs[32 * group + l] |= static_cast<uint8_t>((q & 0x0f) << (4 * high));
      if (qh) qh[l] |= static_cast<uint8_t>(((q >> 4) & 1) << (2 * group + high));
    }
  }
}

// Q6_K: sixteen 16-value sub-blocks with int8 scales, x ~ d*sc*(q-32).
void q_q6_k(const float *x, uint8_t *b) {
  float scale[16];
  for (int s = 0; s < 16; ++s) {
    float amax = 0.0f;
    for (int l = 0; l < 16; ++l)
      amax = std::max(amax, std::fabs(x[16 * s + l]));
    scale[s] = amax / 31.0f;
  }
  const uint16_t dh = float_to_half(*std::max_element(scale, scale + 16) / 127.0f);
  const float d = half_to_float(dh);
  int8_t sc[16];
  for (int s = 0; s < 16; ++s)
    sc[s] = static_cast<int8_t>(d > 0 ? clampi(std::lround(scale[s] / d), 0, 127) : 0);
  uint8_t *ql = b, *qh = b + 128;
  std::fill(b, b + 192, uint8_t{0});
  for (int s = 0; s < 16; ++s)
    b[192 + s] = static_cast<uint8_t>(sc[s]);
  store_u16(b + 208, dh);
  for (int v = 0; v < 256; ++v) {
    const int n = v / 128, r = v % 128, quarter = r / 32, l = r % 32;
    const int s = n * 8 + 2 * quarter + l / 16;
    const float ds = d * sc[s];
    const int q = clampi(ds != 0.0f ? std::lround(x[v] / ds) : 0, -32, 31) + 32;
    ql[n * 64 + l + (quarter & 1) * 32] |= static_cast<uint8_t>((q & 0x0f) << (quarter < 2 ? 0 : 4));
    qh[n * 32 + l] |= static_cast<uint8_t>((q >> 4) << (2 * quarter));
  }
}

void q_mxfp4(const float *x, uint8_t *b) {
  float amax = 0.0f;
  for (int i = 0; i < 32; ++i)
    amax = std::max(amax, std::fabs(x[i]));
  int e = 0;
  if (amax > 0.0f) e = std::clamp(static_cast<int>(std::floor(std::log2(amax))) - 2 + 127, 0, 254);
  b[0] = static_cast<uint8_t>(e);
  const float d = e8m0_to_float_half(static_cast<uint8_t>(e));
  for (int j = 0; j < 16; ++j) {
    uint8_t codes[2];
    for (int h = 0; h < 2; ++h) {
      const float v = x[j + 16 * h];
      unsigned best = 0;
      float best_err = INFINITY;
      for (unsigned c = 0; c < 16; ++c) {
        const float err = std::fabs(static_cast<float>(mxfp4_value(c)) * d - v);
        if (err < best_err) {
          best_err = err;
          best = c;
        }
      }
      codes[h] = static_cast<uint8_t>(best);
    }
    b[1 + j] = static_cast<uint8_t>(codes[0] | (codes[1] << 4));
  }
}

} // namespace

void quantize_rows(uint32_t type, const float *src, int64_t n_rows, int64_t row_len, void *dst) {
  check_row_len(type, row_len, "quantize_rows");
  if (n_rows < 0 || (n_rows > 0 && (!src || !dst)))
    throw Error(WO_ERR_INVALID_ARGUMENT,
                "quantize_rows: expected n_rows >= 0 and non-null buffers, found n_rows=" +
                    std::to_string(n_rows));
  const uint64_t n = static_cast<uint64_t>(n_rows) * static_cast<uint64_t>(row_len);
  auto *out = static_cast<uint8_t *>(dst);
  switch (type) {
  case wo::ggml::F32: std::memcpy(dst, src, n * sizeof(float)); return;
  case wo::ggml::F16:
    for (uint64_t i = 0; i < n; ++i)
      store_u16(out + 2 * i, float_to_half(src[i]));
    return;
  case wo::ggml::BF16:
    for (uint64_t i = 0; i < n; ++i)
      store_u16(out + 2 * i, float_to_bf16(src[i]));
    return;
  default: break;
  }
  const auto *ti = wo::ggml::type_info(type);
  const uint64_t n_blocks = n / ti->block_elems;
  for (uint64_t i = 0; i < n_blocks; ++i) {
    const float *x = src + i * ti->block_elems;
    uint8_t *b = out + i * ti->block_bytes;
    switch (type) {
    case wo::ggml::Q4_0: q_sym_nibbles(x, b, 8); break;
    case wo::ggml::Q5_0: q_sym_nibbles(x, b, 16); break;
    case wo::ggml::Q4_1: q_affine_nibbles(x, b, 15); break;
    case wo::ggml::Q5_1: q_affine_nibbles(x, b, 31); break;
    case wo::ggml::Q8_0: q_q8_0(x, b); break;
    case wo::ggml::Q4_K: q_k_affine(x, b, 15); break;
    case wo::ggml::Q5_K: q_k_affine(x, b, 31); break;
    case wo::ggml::Q6_K: q_q6_k(x, b); break;
    case wo::ggml::MXFP4: q_mxfp4(x, b); break;
    default: throw Error(WO_ERR_INTERNAL, "quantize_rows: no encoder for " + type_label(type));
    }
  }
}

} // namespace wo::quant
