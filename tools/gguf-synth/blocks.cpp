#include "blocks.hpp"

#include "quant_common/scalar_convert.hpp"
#include "rng.hpp"

#include <worker/ggml_types.hpp>
#include <worker/sdk.hpp>

#include <algorithm>
#include <cmath>

namespace wo::synth {
namespace {

namespace G = wo::ggml;
using wo::quant::float_to_half;
using wo::quant::half_to_float;
using wo::quant::load_u16;

// Every block starts as random bytes: the codes are uniform over their levels. The few header
// bytes that become scales are random too until overwritten, so each block's scale jitter and
// sign are taken from them (no second generator call, and the chunk stays one stream).

void store_u16(uint8_t *p, uint16_t v) {
  p[0] = static_cast<uint8_t>(v & 0xff);
  p[1] = static_cast<uint8_t>(v >> 8);
}

// A per-block scale factor in [0.5, 1.5) from 15 random bits, divided by its RMS sqrt(13/12) so
// that jittered blocks keep the tensor's variance at scale^2. Real quantizers give scales that
// vary from block to block; kernels that mix up blocks' scales then show it.
float jitter(uint32_t bits15) { return (0.5f + static_cast<float>(bits15) * (1.0f / 32768.0f)) * 0.9607689f; }

// Mean of k^2 over uniform integer k in [lo, hi]: E[c^2] of a code, or of a sub-block scale.
double mean_sq(int lo, int hi) {
  double s = 0;
  for (int k = lo; k <= hi; ++k)
    s += static_cast<double>(k) * k;
  return s / (hi - lo + 1);
}

// Q4_0 / Q5_0: value (q - zero) * d. The sign of d is random (the real quantizer's is the sign of
// the block's largest element), which cancels the codes' -0.5 mean.
void symmetric(uint8_t *b, uint64_t n_blocks, size_t block_bytes, float scale, int zero) {
  const float base = scale / static_cast<float>(std::sqrt(mean_sq(-zero, zero - 1)));
  for (uint64_t i = 0; i < n_blocks; ++i, b += block_bytes) {
    const uint16_t r = load_u16(b);
    const float d = base * jitter(r >> 1u);
    store_u16(b, float_to_half((r & 1u) ? -d : d));
  }
}

// Q4_1 / Q5_1: value q * d + m with q in [0, levels]; m = -d * levels / 2 centres each block.
void affine(uint8_t *b, uint64_t n_blocks, size_t block_bytes, float scale, int levels) {
  const float base = scale / static_cast<float>(std::sqrt(mean_sq(0, levels) - levels * levels / 4.0));
  for (uint64_t i = 0; i < n_blocks; ++i, b += block_bytes) {
    const uint16_t dh = float_to_half(base * jitter(load_u16(b) >> 1u));
    store_u16(b, dh);
    store_u16(b + 2, float_to_half(-half_to_float(dh) * static_cast<float>(levels) * 0.5f));
  }
}

// Q8_0: the random bytes are the codes, except -128 becomes 0: the real quantizer never writes
// -128 (it clamps to +-127), so kernels need not handle it. The sign of d is random as for Q4_0.
void q8_0(uint8_t *b, uint64_t n_blocks, float scale) {
  const double sum_sq = mean_sq(-127, 127) * 255.0; // 256 byte values, two of them give code 0
  const float base = scale / static_cast<float>(std::sqrt(sum_sq / 256.0));
  for (uint64_t i = 0; i < n_blocks; ++i, b += 34) {
    const uint16_t r = load_u16(b);
    const float d = base * jitter(r >> 1u);
    store_u16(b, float_to_half((r & 1u) ? -d : d));
    for (int j = 2; j < 34; ++j)
      b[j] = b[j] == 0x80 ? 0 : b[j];
  }
}

// Q4_K / Q5_K: value d*sc*q - dmin*m per 32-element sub-block. The 6-bit scales sc are drawn from
// [32, 63] (away from 0, where real sub-blocks rarely sit) and the mins set to m = sc with
// dmin = d * levels/2, so every sub-block is d*sc*(q - levels/2): centred, like a real tensor.
void k_affine(uint8_t *b, uint64_t n_blocks, size_t block_bytes, float scale, int levels) {
  const float base =
      scale / static_cast<float>(std::sqrt(mean_sq(32, 63) * (mean_sq(0, levels) - levels * levels / 4.0)));
  for (uint64_t i = 0; i < n_blocks; ++i, b += block_bytes) {
    uint8_t *scales = b + 4;
    uint64_t bits = 0; // 8 x 5 random bits, from the scale bytes before they are written
    for (int k = 0; k < 8; ++k)
      bits |= static_cast<uint64_t>(scales[k]) << (8 * k);
    uint8_t sc[8];
    for (int s = 0; s < 8; ++s)
      sc[s] = static_cast<uint8_t>(32 + ((bits >> (5 * s)) & 31));
    const uint16_t dh = float_to_half(base * jitter(load_u16(b) >> 1u));
    store_u16(b, dh);
    store_u16(b + 2, float_to_half(half_to_float(dh) * static_cast<float>(levels) * 0.5f));
    // The packing that quant_common's k_scale_min reads back, with m = sc.
    for (int j = 0; j < 4; ++j) {
      const uint8_t hi = static_cast<uint8_t>((sc[j + 4] >> 4) << 6);
      scales[j] = static_cast<uint8_t>(sc[j] | hi);
      scales[j + 4] = static_cast<uint8_t>(sc[j] | hi);
      scales[j + 8] = static_cast<uint8_t>((sc[j + 4] & 0x0f) | ((sc[j + 4] & 0x0f) << 4));
    }
  }
}

// Q6_K: value d*sc*(q - 32), 16 sub-blocks with int8 scales. |sc| is drawn from [64, 127] with a
// random sign, which cancels the codes' -0.5 mean (real Q6_K scales are signed too).
void q6_k(uint8_t *b, uint64_t n_blocks, float scale) {
  const float base = scale / static_cast<float>(std::sqrt(mean_sq(64, 127) * mean_sq(-32, 31)));
  for (uint64_t i = 0; i < n_blocks; ++i, b += 210) {
    for (int s = 0; s < 16; ++s) {
      const uint8_t r = b[192 + s];
      const int mag = 64 + (r & 63);
      b[192 + s] = static_cast<uint8_t>(static_cast<int8_t>((r & 0x80) ? -mag : mag));
    }
    store_u16(b + 208, float_to_half(base * jitter(load_u16(b + 208) >> 1u)));
  }
}

// MXFP4: value code * 2^(e-128) (codes hold twice the E2M1 value, mean square 34.25). The shared
// exponent is a power of two, so blocks take e_lo or e_lo + 1 with the probability that makes the
// mean of 4^(e-128) equal scale^2 / 34.25.
void mxfp4(uint8_t *b, uint64_t n_blocks, float scale) {
  const double target = static_cast<double>(scale) * scale / 34.25;
  const double k = std::floor(std::log2(target) / 2.0);
  const double p = (target / std::pow(4.0, k) - 1.0) / 3.0; // P(e_lo + 1), in [0, 1)
  const int e_lo = std::clamp(static_cast<int>(k) + 128, 2, 253);
  const unsigned up = static_cast<unsigned>(std::lround(p * 256.0));
  for (uint64_t i = 0; i < n_blocks; ++i, b += 17)
    b[0] = static_cast<uint8_t>(e_lo + (b[0] < up ? 1 : 0));
}

} // namespace

bool blocks_supported(uint32_t type) {
  switch (type) {
  case G::Q4_0:
  case G::Q4_1:
  case G::Q5_0:
  case G::Q5_1:
  case G::Q8_0:
  case G::Q4_K:
  case G::Q5_K:
  case G::Q6_K:
  case G::MXFP4: return true;
  default: return false;
  }
}

void fill_blocks(const SynthTensor &t, uint64_t seed, size_t index, int64_t row0, int64_t n_rows,
                 uint8_t *out) {
  const auto *ti = G::type_info(t.ggml_type);
  if (!ti || !blocks_supported(t.ggml_type))
    throw Error(WO_ERR_UNSUPPORTED, "tensor '" + t.name + "': gguf-synth makes no blocks of type " +
                                        (ti ? ti->name : std::to_string(t.ggml_type)));
  const uint64_t n_blocks = static_cast<uint64_t>(n_rows) * static_cast<uint64_t>(t.ne[0]) / ti->block_elems;
  const size_t bb = ti->block_bytes;
  Rng rng(chunk_seed(seed, index, row0));
  rng.fill_bytes(out, n_blocks * bb);
  switch (t.ggml_type) {
  case G::Q4_0: symmetric(out, n_blocks, bb, t.scale, 8); break;
  case G::Q5_0: symmetric(out, n_blocks, bb, t.scale, 16); break;
  case G::Q4_1: affine(out, n_blocks, bb, t.scale, 15); break;
  case G::Q5_1: affine(out, n_blocks, bb, t.scale, 31); break;
  case G::Q8_0: q8_0(out, n_blocks, t.scale); break;
  case G::Q4_K: k_affine(out, n_blocks, bb, t.scale, 15); break;
  case G::Q5_K: k_affine(out, n_blocks, bb, t.scale, 31); break;
  case G::Q6_K: q6_k(out, n_blocks, t.scale); break;
  case G::MXFP4: mxfp4(out, n_blocks, t.scale); break;
  default: break;
  }
}

} // namespace wo::synth
