// The layout of one token's activation row staged as the int8 GEMVs' terms (SDK 1.9): what a
// producer writes and a codec copies. The arithmetic that fills it, and why, is in staged_x.cuh;
// this header has no CUDA dependency, so that plugins built without CUDA can size the buffer.
//
// A row of `cols` values (cols % 32 == 0; 16-byte aligned base):
//   bytes [0, cols)          hi terms, int8, in column order
//   bytes [cols, 2 cols)     lo terms
//   bytes [2 cols, ...)      one Record per group of 32: its scale and, per 16-value half, the sums
//                            of its hi and lo terms packed as an int16 pair (pack_half)
#pragma once

#include <worker/env_switch.hpp>

#include <cstdint>

#if defined(__CUDACC__)
#define WO_STAGED_HD __host__ __device__
#else
#define WO_STAGED_HD
#endif

namespace wo::staged {

constexpr int kGroup = 32;
constexpr float kLoSteps = 254.0f; // lo counts 1/254ths of a scale step
constexpr float kInvLoSteps = 1.0f / 254.0f;
// Round to nearest even by adding and subtracting 1.5 x 2^23 (|t| < 2^22): the sum's low mantissa
// bits are the integer, with full-rate FADDs instead of the conversion unit.
constexpr float kRoundMagic = 12582912.0f;
constexpr int kRoundMagicBits = 0x4B400000;

struct Record {
  float scale;
  uint32_t half[2]; // pack_half(hi sum, lo sum) of values 0..15 and 16..31
  uint32_t unused;  // 0
};
static_assert(sizeof(Record) == 16, "records are 16-byte loads");

WO_STAGED_HD constexpr bool fits(int64_t cols) { return cols > 0 && cols % kGroup == 0; }
WO_STAGED_HD constexpr int64_t lo_offset(int64_t cols) { return cols; }
WO_STAGED_HD constexpr int64_t record_offset(int64_t cols, int64_t group) {
  return 2 * cols + group * static_cast<int64_t>(sizeof(Record));
}
WO_STAGED_HD constexpr int64_t row_bytes(int64_t cols) { return record_offset(cols, cols / kGroup); }

// Two term sums of 16 values (|sum| <= 16 x 127) as one word.
WO_STAGED_HD inline uint32_t pack_half(int hs, int ls) {
  return (static_cast<uint32_t>(hs) & 0xffffu) | (static_cast<uint32_t>(ls) << 16);
}
WO_STAGED_HD inline void unpack_half(uint32_t w, int &hs, int &ls) {
  hs = static_cast<int16_t>(w & 0xffffu);
  ls = static_cast<int>(w) >> 16;
}

// Whether producers stage rows and codecs copy them: WORKER_STAGED_X=0 turns both off (A/B; the
// same bits either way). One reader for the adapters, the codecs and their tests, read once.
inline bool enabled() {
  static const bool v = !env_switched_off("WORKER_STAGED_X");
  return v;
}

} // namespace wo::staged
