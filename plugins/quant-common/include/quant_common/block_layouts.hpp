// Facts about the block layouts that both the CPU codecs and the CUDA decoders use.
#pragma once

#include "quant_common/scalar_convert.hpp"

#include <cstdint>

namespace wo::quant {

// MXFP4 code -> twice its E2M1 value {0,1,2,3,4,6,8,12, 0,-1,-2,-3,-4,-6,-8,-12}, so the block
// scale is 2^(e-128). The eight magnitudes are packed as nibbles of one constant: a register-only
// lookup on the device, no table in memory.
QC_HD int mxfp4_value(unsigned code) {
  const int mag = static_cast<int>((0xC8643210u >> (4u * (code & 7u))) & 0x0fu);
  return (code & 8u) ? -mag : mag;
}

// Q4_K / Q5_K: the 12 scale bytes pack eight 6-bit sub-block scales and eight 6-bit mins.
// Sub-blocks 0..3 use the low 6 bits of bytes j and j+4; sub-blocks 4..7 take their low 4 bits
// from byte j+4 (scale low nibble, min high nibble) and their top 2 bits from bytes j-4 and j.
QC_HD void k_scale_min(int j, const uint8_t *q, uint8_t &sc, uint8_t &m) {
  if (j < 4) {
    sc = q[j] & 63;
    m = q[j + 4] & 63;
  } else {
    sc = static_cast<uint8_t>((q[j + 4] & 0x0f) | ((q[j - 4] >> 6) << 4));
    m = static_cast<uint8_t>((q[j + 4] >> 4) | ((q[j] >> 6) << 4));
  }
}

} // namespace wo::quant
