// Variant 5 of the one-token GEMV (the default for Q4_K, Q5_K, Q6_K, Q8_0, Q5_0 and MXFP4 weights of
// kUnitMinBytes and more; smaller ones keep variant 3): whole blocks per lane.
//
// Why: variant 3 (gemv_int8x_kernel) gives each lane one 8-32 weight part of a block and spends
// 9-16 instructions per weight (ncu, H100: 0.57 instructions issued per cycle per scheduler, DRAM
// 28% busy on a 15 MB Q4_K GEMV): it is bound by instruction issue, not by bytes. Here:
//
// - A warp owns a group of rows_per_group consecutive rows (or, in the tiled grid, a CTA owns one
//   run of rows and its warps take the run's chunks in turn; see UnitGrid). Rows are contiguous, so
//   the group is one run of blocks, cut into units of U blocks (unit_dots.cuh). The warp copies the
//   group in chunks of 32 units into shared memory with coalesced 16-byte cp.async (every warp
//   instruction covers 512 contiguous bytes; no registers wait on memory), double-buffered so the
//   next chunk lands while lane l computes unit l of this one from U * BYTES / A vector loads at
//   compile-time offsets. (Lanes loading their own units from global memory touched ~32 lines per
//   instruction and waited on latency: ncu, 28% of DRAM bandwidth on a 15 MB Q4_K GEMV.) A unit may
//   end in the next row: each block's dot is stored by its index in the group.
// - The activations are staged once per CTA as in variant 3 (the same int8 terms), swizzled so
//   lanes reading different column blocks hit different banks.
// - Each row's sum is a fixed tree over its blocks' dots (8 lanes per row, lane s adds blocks
//   s, s+8, ... in order, then a 3-step shuffle), so a row's bits depend only on its own bytes and
//   x: not on rows_per_group, the grid, or whether the row was stacked with others (linear_multi
//   and the separate linears agree bit for bit, as do linear_fused and the separate norm with
//   WORKER_NORM_LATE=0; by default the fused norm scales the dots, see gemv_common.cuh).
// - linear_fused's norm prologue and bias/residual epilogue, linear_multi's stacked weights and
//   linear_id's experts as in variant 3.
// - linear_swiglu (Int8xMode::Swiglu): a warp's group is gate's rows r0..r0+wr then up's same
//   rows, one run of 2 wr rows whose chunks copy from two places (the halves meet on a unit and a
//   copy boundary), so the grid, chunks and loads in flight are the stacked [gate; up] GEMV's.
//   The epilogue reduces row r of each half in one lane and writes silu(gate) * up
//   (worker/swiglu.cuh): the bits of the stacked GEMV and the swiglu kernel, without the swiglu
//   launch or the 2 x n_ff intermediate. (A first cut that ran gate's group and then up's as two
//   groups halved the groups per launch: Qwen 1290 -> 1218 tok/s, Phi-3 530 -> 505.)
#pragma once

#include "quant_common/cp_async.cuh"
#include "quant_common/gemv_common.cuh"
#include "quant_common/unit_dots.cuh"

#include <worker/staged_x.cuh>

#include <type_traits>
#include <utility>

namespace wo::quant::dev {

// One CTA of 16 warps per SM rather than two of 8 (the same warps and registers, up to 128 each):
// every CTA stages (reads from L2 and quantizes) the whole activation row, so per SM that is done
// once instead of twice (the H100 phase trace: ~0.8 us for the row's L2 reads, hot lines read by
// every CTA, and ~1 us of quantizing, between the PDL wait and the first dot).
constexpr int kUnitWarps = 16;      // two copies of rms_norm.cuh's 256-thread partition (the fused norm)
constexpr int kUnitCtasPerSm = 1;   // launch bounds: up to 128 registers (Q4_K/Q5_K use ~122)
constexpr int kUnitStages = 2;      // chunks per warp in shared memory: one computed, one landing
constexpr int kUnitReduceLanes = 8; // lanes per row in the reduction (fixed: see above)
constexpr int kUnitMaxRowsPerGroup = 32;
constexpr int kTiledEarlyRows = 64; // tiled CTAs of up to this many rows copy their bias and residual early
// A staged SwiGLU output (Fusion::y_staged): up to this many rows per warp's group and rounds of
// kUnitWarps groups per CTA (Qwen2.5's gate/up: 2 rows, 2 rounds on 20 of 132 CTAs; Phi-3: 4, 1).
constexpr int kStagedMaxRows = 4;
constexpr int kStagedMaxRounds = 2;
constexpr size_t kUnitMaxSmem = 224 * 1024; // one CTA per SM (227 KiB at most)
// Weights below this size stay on variant 3: a few rows per lane finish sooner than whole blocks
// (H100, Q5_0 896x896: 2.5 us against 3.0; at 4864x896, 2.9 MB: 5.1 against 3.7).
constexpr uint64_t kUnitMinBytes = 1 << 20;

// WORKER_UNIT_TILED=0: never the tiled grid (A/B; the same bits either way).
inline bool unit_tiled_enabled() {
  static const bool v = env_int("WORKER_UNIT_TILED", 0, 1, 1) != 0;
  return v;
}

// See unit_grid: ties with uneven warp rounds run on the tiled grid.
// WORKER_UNIT_TILED_TIES: 0 no tie tiled, 1 SwiGLU ties only, 2 (default) plain weights' ties too.
inline int unit_tiled_ties() {
  static const int v = static_cast<int>(env_int("WORKER_UNIT_TILED_TIES", 0, 2, 2));
  return v;
}

// The fewest rows whose bytes are whole 16-byte copies (a tiled run's row count is a multiple).
inline int64_t rows_of_16_bytes(uint64_t row_bytes) {
  int64_t a = 1;
  while ((static_cast<uint64_t>(a) * row_bytes) % 16 != 0)
    ++a;
  return a;
}

// Whether variant 5 is the kernel for a weight of `rows` rows (one expert's matrix for linear_id):
// decided per weight, so a stack of weights runs where each of them would alone.
template <class D> bool unit_weight(int64_t rows, uint64_t row_bytes) {
  // Split types (Q6_K) with rows of no 8-byte multiple only on the tiled grid, whose runs start on
  // 16 bytes: the warp groups' copies would be 4 bytes (Qwen's 896 x 4864 down projection, 3990-byte
  // rows: 56 CTAs, 11.1 us against variant 3's 5.6, ncu). Tiled, that projection (112 CTAs of 8
  // rows) took Qwen 1410.4/1306.0, 1415.3/1307.4 -> 1460.7/1340.3, 1460.4/1331.8 tok/s (H100, one
  // call). A stack of such weights is not tiled (unit_grid declines it), so it goes back to the
  // host's separate linears, each tiled: the bits of the weights alone.
  if constexpr (has_unit<D>())
    if (UnitSplit<UnitDot<D>>::value > 1 && row_bytes % 8 != 0 &&
        !(unit_tiled_enabled() && act_terms() == 2 && rows % rows_of_16_bytes(row_bytes) == 0))
      return false;
  return has_unit<D>() && static_cast<uint64_t>(rows) * row_bytes >= kUnitMinBytes;
}

static_assert(kUnitWarps * 32 % wo::rmsnorm::kThreads == 0,
              "the fused norm prologue uses rms_norm.cuh's partition");

// Shared memory of the staged activations: hi and lo terms and one 16-byte meta record per 32,
// each array in whole 128-byte lines (the swizzles permute inside a line, so a partial last line
// would map outside the array).
__host__ __device__ inline int64_t unit_terms_bytes(int64_t cols) { return (cols + 127) / 128 * 128; }
__host__ __device__ inline size_t unit_stage_bytes(int64_t cols) {
  return static_cast<size_t>(2 * unit_terms_bytes(cols) + (cols / 32 + 7) / 8 * 8 * sizeof(XMeta));
}

// How a GEMV's rows are cut into groups (n_groups == 0: the kernel does not take the shape).
// By warp: a warp owns whole groups of rows_per_group rows and walks their chunks in order.
// Tiled (tiled == true): a group is one CTA's rows_per_group rows (the last CTA's may be fewer), its
// chunks dealt to the CTA's warps in turn (chunk c to warp c % kUnitWarps) and its rows reduced by
// all warps after a barrier: the longest warp's chain of chunks is the CTA's mean, rounded up,
// where whole groups per warp leave some warps idle and others a chain of 1.5x the mean (GPT-OSS's
// expert gate/up: 6 chunks on the longest warp, 3.8 on average).
struct UnitGrid {
  int64_t n_groups = 0;
  int rows_per_group = 0, blocks_per_row = 0, units_per_group = 0; // rows: of each weight (swiglu: 2)
  int copy_bytes = 0; // cp.async size: 16, or 8 / 4 where group starts are only that aligned
  bool tiled = false;
  bool cta_major = false;   // by warp: a CTA's warps take consecutive groups (see gemv_units_kernel)
  int staged_rounds = 0;    // SwiGLU, CTA-major: rounds of kUnitWarps groups per CTA whose rows the
                            // CTA stages into Fusion::y_staged after them (0: nothing staged)
  bool tiled_early = false; // tiled, plain, early reads, one problem, rows_per_group <= kTiledEarlyRows:
                            // the rows' bias and residual copied before the dots (tiled_early_enabled)
  int64_t rows = 0;         // of each weight (tiled: the last group's rows are what is left)
  int64_t part_floats = 0;  // the partial dots' shared memory: per warp x kUnitWarps, or per CTA
  // Tile chunks (tile_w > 0, the kernel's kTiles instances): see unit_tile_w and unit_tile_lanes.
  // lanes_per_row: lane units per row (whole: no unit ends in the next row).
  int tile_w = 0, lanes_per_row = 0;
  // floor(2^32 / blocks_per_row) + 1 where blocks_per_row >= 2: x / blocks_per_row is exactly
  // __umulhi(x, nb_magic) for x * blocks_per_row < 2^32 (the kernel's block columns, see col_first).
  uint32_t nb_magic = 0;
};

// Tile chunks: a chunk is kTileW lane units of 32 / kTileW consecutive rows at the same columns
// instead of 32 consecutive lane units of a run of rows, so the lanes of a warp load the activation
// terms and meta records of at most kTileW column ranges (one shared-memory wavefront per 16-byte
// load) where a run's 32 consecutive units span up to 32 (Phi-3's 3072-column Q4_K rows: 12, two
// wavefronts; Q6_K's 8192-column halves: 32). A timing-only build in which every lane read one
// group's terms (a broadcast) gained Phi-3 12% / 11% and Qwen 4% / 4% decode at depth 0 / 2048
// (H100, docs/perf.md). Each tile row is kTileW units' bytes, copied by kTileW lanes with
// compile-time offsets from one row address. 0: no tile instances for the type.
template <class D> __host__ __device__ constexpr int unit_tile_w() {
  if constexpr (std::is_same_v<D, DecQ4_K> || std::is_same_v<D, DecQ5_K>)
    return 4;                                         // 576 / 704-byte tile rows
  if constexpr (std::is_same_v<D, DecQ6_K>) return 8; // 4 blocks: 840 bytes, 8-byte copies
  return 0;
}
template <class D> __host__ __device__ constexpr int unit_tile_copy() {
  return std::is_same_v<D, DecQ6_K> ? 8 : 16;
}

// The activations of one token, staged for XU<QU> in the given order (staged_index): every thread
// takes part (8 values each; the 4 lanes of a group of 32 hold its values 0..7, 8..15, ...).
// kHalfSums: the meta record's sum32 slot holds the term sums of values 0..15 instead (Q6_K's
// 16-value sub-blocks; see half_sums).
template <int QU, XOrder O, bool kHalfSums, int kTerms>
__device__ __forceinline__ void stage_x_units(const GemvParams &p, int64_t x_off, uint8_t *hi, uint8_t *lo,
                                              XMeta *meta, const float *norm_w, float norm_eps,
                                              const float *glu_up, float *late_part, const uint8_t *staged) {
  const int lane = threadIdx.x % 32, g4 = lane % 4;
  float inv_rms = 0.0f; // linear_fused's norm: the row's 1/rms, as the norm kernel's
  for (int64_t base = 0; base < p.cols; base += static_cast<int64_t>(blockDim.x) * 8) {
    const int64_t c = base + static_cast<int64_t>(threadIdx.x) * 8;
    const bool on = c < p.cols; // whole groups of 4 lanes are on or off (cols % 32 == 0)
    Staged8 s;
    staged8<kTerms, true>(p, x_off, base, c, on, norm_w, norm_eps, inv_rms, glu_up, late_part, staged, s);
    // the other 16-value half's sums (lanes g4 and g4 ^ 2)
    const float sum16 = __shfl_xor_sync(0xffffffffu, s.sum16, 2);
    const int hs16 = __shfl_xor_sync(0xffffffffu, s.hs16, 2), ls16 = __shfl_xor_sync(0xffffffffu, s.ls16, 2);
    uint2 h = make_uint2(s.hw[0], s.hw[1]), l = make_uint2(s.lw[0], s.lw[1]);
    int at_in_group = 8 * g4; // byte offset of this lane's 8 staged bytes in the group's 32
    if constexpr (O == XOrder::Nibbles) {
      // Staged words 2w, 2w+1 interleave values 4w.. (lane w / 2) and 16 + 4w.. (lane 2 + w / 2):
      // lane g4 < 2 builds w = 2 g4 (its word 0, its partner's word 0), lane g4 >= 2 builds
      // w = 2 (g4 - 2) + 1 (its partner's word 1, its own word 1); each sends what the other needs.
      const bool low = g4 < 2;
      const uint32_t ph = __shfl_xor_sync(0xffffffffu, low ? s.hw[1] : s.hw[0], 2);
      const uint32_t pl = __shfl_xor_sync(0xffffffffu, low ? s.lw[1] : s.lw[0], 2);
      const uint32_t ha = low ? s.hw[0] : ph, hb = low ? ph : s.hw[1];
      const uint32_t la = low ? s.lw[0] : pl, lb = low ? pl : s.lw[1];
      h = make_uint2(__byte_perm(ha, hb, 0x5140), __byte_perm(ha, hb, 0x7362));
      l = make_uint2(__byte_perm(la, lb, 0x5140), __byte_perm(la, lb, 0x7362));
      at_in_group = 16 * (g4 % 2) + (low ? 0 : 8); // words 4 (g4 % 2) + (low ? 0 : 2)
    }
    if (on) {
      const int64_t at =
          16 * static_cast<int64_t>(granule_slot<QU>(static_cast<int>(2 * (c / 32) + at_in_group / 16))) +
          at_in_group % 16;
      *reinterpret_cast<uint2 *>(hi + at) = h;
      if (kTerms == 2) *reinterpret_cast<uint2 *>(lo + at) = l; // one term: nothing reads lo
      if (g4 == 0) // values 0..7 of the group: its pair sums are the first half's
        meta[meta_slot(static_cast<int>(c / 32))] =
            XMeta{s.scale, kHalfSums ? __uint_as_float(pack_half_sums(s.hs16, s.ls16)) : s.sum16 + sum16,
                  s.hs16 + hs16, s.ls16 + ls16};
    }
  }
}

// Bytes between a warp's chunk stages: 32 units' bytes, plus 16 readable bytes past the last unit
// for LazyWords (split types).
template <class D> __host__ __device__ constexpr int unit_chunk_stride() {
  return 32 / UnitSplit<UnitDot<D>>::value * UnitDot<D>::BYTES + (UnitSplit<UnitDot<D>>::value > 1 ? 16 : 0);
}

// kTiled: ug.tiled's grid, in instances of its own (plain and SwiGLU, two activation terms). With
// one instance for both grids (a runtime flag) the by-warp path's counts became registers: Q6_K's
// plain instance spilled 28 bytes at its 128-register bound and Phi-3 decode lost 5% (H100, one
// call: 595.8/490.5 -> 561.9/463.9 tok/s at depth 0/2048).
template <class D, Int8xMode M, int kTerms, bool kTiled = false, bool kTiles = false>
__global__ void __launch_bounds__(kUnitWarps * 32, kUnitCtasPerSm)
    gemv_units_kernel(const GemvParams p, const Segments seg, const Fusion fu, const UnitGrid ug) {
  using T = UnitDot<D>;
  using Ld = UnitLoad<D>;
  WO_CTA_SCOPE(M == Int8xMode::Swiglu ? wo::cta_trace::kUnitGemvSwiglu : wo::cta_trace::kUnitGemv, p.rows);
  constexpr int kGroupsPerBlock = D::QK / 32;
  constexpr int kSplit = UnitSplit<T>::value;         // lanes per unit's bytes (Q6_K: 2)
  constexpr int kChunkData = 32 / kSplit * T::BYTES;  // one unit per lane
  constexpr int kChunkBytes = unit_chunk_stride<D>(); // + LazyWords' read-past pad
  extern __shared__ __align__(16) uint8_t smem[];
  uint8_t *hi = smem, *lo = smem + unit_terms_bytes(p.cols);
  auto *meta = reinterpret_cast<XMeta *>(smem + 2 * unit_terms_bytes(p.cols));
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  constexpr int kHalves = M == Int8xMode::Swiglu ? 2 : 1;   // weights in a group: gate and up, or one
  const int wr = ug.rows_per_group, nb = ug.blocks_per_row; // wr: rows of each weight in a group
  const int np = nb * kSplit;                               // partial dots per row
  constexpr bool tiled = kTiled;
  float *part =
      reinterpret_cast<float *>(smem + unit_stage_bytes(p.cols)) + (tiled ? 0 : warp * kHalves * wr * np);
  uint8_t *chunk_buf = smem + unit_stage_bytes(p.cols) + static_cast<size_t>(ug.part_floats) * sizeof(float) +
                       static_cast<size_t>(warp) * kUnitStages * kChunkBytes;
  // The dot's register constants, read back from shared memory so ptxas keeps them in registers
  // (see mxfp4_biased); written before the first staging barrier.
  __shared__ uint32_t held_words[2];
  if (threadIdx.x < 2) held_words[threadIdx.x] = UnitHeld<T>::word(static_cast<int>(threadIdx.x));
  // By warp: groups are dealt across the CTAs first (warp w of CTA c starts at w x gridDim.x + c),
  // so when there are fewer groups than warps every CTA, hence every SM, gets an equal share; a
  // warp walks its groups' chunks 0, 1, ... Tiled: CTA c's group is group c (gridDim.x ==
  // n_groups), warp w walks its chunks w, w + kUnitWarps, ...
  // ug.cta_major (a staged SwiGLU output): warp w of CTA c starts at group c x kUnitWarps + w, so a
  // CTA's warps hold consecutive rows in each round (the same stride: every warp's item count alike).
  const int64_t first_group = tiled          ? blockIdx.x
                              : ug.cta_major ? static_cast<int64_t>(blockIdx.x) * kUnitWarps + warp
                                             : static_cast<int64_t>(warp) * gridDim.x + blockIdx.x;
  const int64_t group_stride = static_cast<int64_t>(gridDim.x) * (tiled ? 1 : kUnitWarps);
  const int c0 = tiled ? warp : 0, c_step = tiled ? kUnitWarps : 1; // the warp's first chunk, its step
  // The group's rows and units: ug's, but for a tiled grid's last CTA, which takes what is left.
  const int wg = tiled ? static_cast<int>(min(static_cast<int64_t>(wr), ug.rows - first_group * wr)) : wr;
  const int units_g =
      tiled ? static_cast<int>(static_cast<int64_t>(ug.units_per_group) * wg / wr) : ug.units_per_group;
  // Tile chunks (kTiles): chunk c is tile tt = c % tpb of band tb = c / tpb (kTileH rows each);
  // rows_g: the group's rows, both halves.
  constexpr int kTileW = kTiles ? unit_tile_w<D>() : 1, kTileH = 32 / kTileW;
  const int upl = ug.lanes_per_row, tpb = kTiles ? upl / kTileW : 1, rows_g = kTiles ? units_g / upl : 0;
  const int chunks = kTiles ? (rows_g + kTileH - 1) / kTileH * tpb : (units_g + 31) / 32;
  int64_t items = 0; // (group, chunk) pairs this warp computes, in order
  if (first_group < ug.n_groups)
    items = tiled ? (c0 < chunks ? (chunks - c0 + c_step - 1) / c_step : 0)
                  : (ug.n_groups - first_group + group_stride - 1) / group_stride * chunks;
  // A warp walks its items with cursors stepped one item at a time: per item a 64-bit division
  // (group, chunk) for the copy and again for the dot, plus the block column (a division by the
  // runtime blocks_per_row), cost ~75 instructions per chunk (SASS), a tenth to a third of the
  // dots' own count.
  struct Cursor {
    int64_t grp; // the item's group
    int c;       // its chunk in the group
    int tb, tt;  // kTiles: the chunk's band and tile (stepped along, no division per item)
  };
  const int tb0 = kTiles ? c0 / tpb : 0, tt0 = kTiles ? c0 % tpb : 0; // the warp's first chunk's
  const int tdq = kTiles ? c_step / tpb : 0, tdr = kTiles ? c_step % tpb : 0;
  const auto start = [&] { return Cursor{first_group, c0, tb0, tt0}; };
  const auto advance = [&](Cursor &k) {
    if constexpr (tiled) {
      if ((k.c += c_step) >= chunks) {
        k.c = c0, k.grp += group_stride, k.tb = tb0, k.tt = tt0;
      } else if constexpr (kTiles) {
        k.tb += tdq, k.tt += tdr;
        if (k.tt >= tpb) k.tt -= tpb, ++k.tb;
      }
    } else if (++k.c == chunks) {
      k.c = 0, k.grp += group_stride, k.tb = 0, k.tt = 0;
    } else if constexpr (kTiles) {
      if (++k.tt == tpb) k.tt = 0, ++k.tb;
    }
  };
  const auto group_base = [&](const uint8_t *w, int64_t row0) {
    void *y;
    int64_t yi;
    return M == Int8xMode::Stacked ? segment_row(seg, p.row_bytes, row0, y, yi) : w + row0 * p.row_bytes;
  };
  // Item `it` (if any) into stage it % kUnitStages: the warp copies the chunk's bytes with
  // coalesced 16-byte cp.async (an 8-byte tail for units of 8-byte multiples), then commits a group
  // (empty past the end, so every wait below counts the same groups).
  static_assert((kUnitStages & (kUnitStages - 1)) == 0, "stage of item it: it & (kUnitStages - 1)");
  // kTiles: tile row (lane / kTileW) of a chunk is copied by kTileW lanes, lane part (lane % kTileW)
  // taking copies part, part + kTileW, ... of the row's kTileCopies, at compile-time offsets.
  constexpr int kTileBytes = kTileW * (T::BYTES / kSplit), kTileCopyBytes = unit_tile_copy<D>();
  constexpr int kTileCopies = kTileBytes / kTileCopyBytes;
  static_assert(!kTiles || kTileBytes % kTileCopyBytes == 0, "a tile row is whole copies");
  const auto issue_tile = [&](const uint8_t *w, uint8_t *dst, int64_t grp, int tb, int tt) {
    const int rho = tb * kTileH + lane / kTileW, part = lane % kTileW; // rho: gate's wg rows, then up's
    if (rho >= rows_g) return;                                         // a short last band
    const uint8_t *row;
    if constexpr (M == Int8xMode::Swiglu) // up's rows from up's own base (w - p.w: linear_id's expert offset)
      row = rho < wg ? group_base(w, grp * wr) + rho * static_cast<int64_t>(p.row_bytes)
                     : seg.w[1] + (w - p.w) + (grp * wr + rho - wg) * static_cast<int64_t>(p.row_bytes);
    else
      row = group_base(w, grp * wr) + rho * static_cast<int64_t>(p.row_bytes);
    const uint8_t *src = row + tt * kTileBytes + part * kTileCopyBytes;
    uint8_t *d = dst + (lane / kTileW) * kTileBytes + part * kTileCopyBytes;
#pragma unroll
    for (int k = 0; k < (kTileCopies + kTileW - 1) / kTileW; ++k)
      if (part + k * kTileW < kTileCopies) {
        if constexpr (kTileCopyBytes == 16)
          cp_async16(d + k * kTileW * 16, src + k * kTileW * 16);
        else
          cp_async8(d + k * kTileW * 8, src + k * kTileW * 8);
      }
  };
  const auto issue = [&](const uint8_t *w, int64_t it, const Cursor &k) {
    if (kTiles && it < items) {
      issue_tile(w, chunk_buf + (it & (kUnitStages - 1)) * kChunkBytes, k.grp, k.tb, k.tt);
    } else if (it < items) {
      const int64_t grp = k.grp;
      const int c = k.c;
      const int64_t at = static_cast<int64_t>(c) * kChunkData; // the chunk's offset in its group
      const uint8_t *src = group_base(w, grp * wr) + at;
      // Swiglu: the group's bytes are gate's wr rows, then up's (from up's own base).
      const auto from = [&](int off) {
        if constexpr (M == Int8xMode::Swiglu) {
          const int64_t half_bytes = wg * static_cast<int64_t>(p.row_bytes);
          // (w - p.w: the expert's offset under linear_id, the same in both weights)
          return at + off < half_bytes ? src + off
                                       : seg.w[1] + (w - p.w) + grp * wr * static_cast<int64_t>(p.row_bytes) +
                                             (at + off - half_bytes);
        } else {
          return src + off;
        }
      };
      const int bytes = min(32, units_g - 32 * c) / kSplit * T::BYTES;
      uint8_t *dst = chunk_buf + (it & (kUnitStages - 1)) * kChunkBytes;
      if (ug.copy_bytes == 16 && bytes == kChunkData) {
        // A whole chunk: every offset a constant (one copy instruction each; the loop below spent
        // ~15 instructions per copy, 9 copies per lane per Q4_K chunk).
        constexpr int kRows = kChunkData / 512, kTail = kChunkData % 512; // kTail % 8 == 0
        // Swiglu: each copy picks its half; otherwise one base per lane and immediate offsets.
        if constexpr (M == Int8xMode::Swiglu) {
#pragma unroll
          for (int i = 0; i < kRows; ++i)
            cp_async16(dst + 16 * lane + 512 * i, from(16 * lane + 512 * i));
        } else {
          const uint8_t *s0 = src + 16 * lane;
          uint8_t *d0 = dst + 16 * lane;
#pragma unroll
          for (int i = 0; i < kRows; ++i)
            cp_async16(d0 + 512 * i, s0 + 512 * i);
        }
        if constexpr (kTail > 0) {
          const int off = 512 * kRows + 16 * lane;
          if (off + 16 <= kChunkData)
            cp_async16(dst + off, from(off));
          else if (off < kChunkData)
            cp_async8(dst + off, from(off));
        }
      } else if (ug.copy_bytes == 16) {
        int off = 16 * lane;
        for (; off + 16 <= bytes; off += 16 * 32)
          cp_async16(dst + off, from(off));
        if (off < bytes) cp_async8(dst + off, from(off)); // bytes % 8 == 0
      } else if (ug.copy_bytes == 8) {
        for (int off = 8 * lane; off < bytes; off += 8 * 32)
          cp_async8(dst + off, from(off));
      } else {
        for (int off = 4 * lane; off < bytes; off += 4 * 32)
          cp_async4(dst + off, from(off));
      }
    }
    cp_async_commit();
  };
  // Launched with pdl::launch: plain and stacked weights do not depend on the previous kernel, so
  // the first chunks are on their way while it finishes. An expert's rows wait for its ids, unless
  // they are settled (linear_id_settled: written two launches back or more, so complete now; read
  // through L2). GPT-OSS decode, the up and down projections: 447 -> 464 tok/s with all three
  // expert launches issuing early (a timing-only experiment), ~1 us of DRAM latency per launch.
  const auto issue_first = [&](const uint8_t *w, Cursor &k) { // items 0 .. kUnitStages - 2 from k
    for (int s = 0; s < kUnitStages - 1; ++s, advance(k))
      issue(w, s, k);
  };
  // Early reads (gemv_common.cuh), one group before the first chunks': the bias of the row this
  // lane stores first (lane 8 r: row r of the warp's first group). The norm weights only go to L2:
  // a shared-memory copy (cols floats) cost Phi-3 2% at depth 2048 (H100 A/B: 587.5/487.6,
  // 586.1/485.4 -> 587.5/475.6, 590.3/479.5), presumably the attention blocks that no longer fit
  // beside the q/k/v pass's CTA.
  __shared__ float first_add[kUnitWarps][32 / kUnitReduceLanes][2]; // that row's bias and residual
  // ug.staged_rounds: the CTA's SwiGLU outputs, round by round, for the staged copy (SwiGLU only)
  __shared__ float act_s[M == Int8xMode::Swiglu ? kStagedMaxRounds * kUnitWarps * kStagedMaxRows : 1];
  const int64_t row_first = first_group * wr + lane / kUnitReduceLanes;
  const bool stores_first = M != Int8xMode::Swiglu && fu.early && !tiled && lane % kUnitReduceLanes == 0 &&
                            lane / kUnitReduceLanes < wr && first_group < ug.n_groups;
  // Tiled (ug.tiled_early, decided by the host): the CTA's rows' bias and residual, one row per
  // thread; the CTA's reduction reads them after its barrier, past a wait for every copy. Without
  // them the epilogue's residual read was one more L2 round trip at the end of the chain (Qwen's
  // Q6_K down projection, 8 rows per CTA).
  __shared__ float tiled_add[2][kTiledEarlyRows]; // bias, residual
  const bool tiled_early = tiled && M == Int8xMode::Plain && ug.tiled_early;
  const int64_t tiled_row = first_group * wr + threadIdx.x;
  if (fu.early && fu.norm_w) prefetch_norm_w(fu.norm_w, p.cols);
  if (stores_first && fu.bias) cp_async4(&first_add[warp][lane / kUnitReduceLanes][0], fu.bias + row_first);
  if (tiled_early && fu.bias && threadIdx.x < wg) cp_async4(&tiled_add[0][threadIdx.x], fu.bias + tiled_row);
  cp_async_commit();
  Cursor ahead = start(); // the next item to issue
  bool first_issued = !p.ids;
  if (!p.ids)
    issue_first(p.w, ahead);
  else if (p.ids_settled) {
    Problem q0;
    if (resolve<1>(p, blockIdx.y, q0)) {
      issue_first(q0.w, ahead);
      first_issued = true;
    }
  }
  // The block column of this lane's first unit in chunk c of a group (groups start on a row):
  // block (32 c + lane) U / kSplit mod blocks_per_row, stepped per item by c_step kStepBlocks mod nb.
  constexpr int kStepBlocks = 32 * T::U / kSplit;
  // x % blocks_per_row by the host's reciprocal (x < 2^12: 15 x 256 + 31 x 8 at most, so exact for
  // any row the shared memory holds): the compiler puts this index math after the PDL wait, where a
  // runtime division cost every warp ~40 instructions on the chain (ncu source counters, H100).
  const auto col_of = [&](uint32_t x) {
    const auto nb = static_cast<uint32_t>(ug.blocks_per_row);
    return static_cast<int>(nb < 2 ? 0u : x - __umulhi(x, ug.nb_magic) * nb);
  };
  const int col_first = col_of(c0 * kStepBlocks + lane * T::U / kSplit);
  const int col_step = col_of(c_step * kStepBlocks);
  wo::pdl::enter();
  WO_CTA_WAITED();
  for (int64_t prob = blockIdx.y;; prob += gridDim.y) {
    Problem q;
    if (!resolve<1>(p, prob, q)) return;       // the same for the whole CTA
    if (!first_issued || prob != blockIdx.y) { // the first chunks of this problem's weights
      ahead = start();
      issue_first(q.w, ahead);
    }
    // Early reads: the residual of the row this lane stores first, one group of its own (always
    // committed, so that the waits below count alike): after the bias's group and the first chunks'.
    if (stores_first && fu.accumulate && !q.bad_expert) {
      void *y = p.y;
      int64_t yi = q.y_off + row_first;
      if (M == Int8xMode::Stacked) (void)segment_row(seg, p.row_bytes, row_first, y, yi);
      cp_async4(&first_add[warp][lane / kUnitReduceLanes][1], static_cast<const float *>(y) + yi);
    }
    if (tiled_early && fu.accumulate && !q.bad_expert && threadIdx.x < wg)
      cp_async4(&tiled_add[1][threadIdx.x], static_cast<const float *>(p.y) + q.y_off + tiled_row);
    cp_async_commit();
    // linear_id_glu's biases: rows of this problem's expert
    const int64_t bias_row0 =
        M == Int8xMode::Swiglu && fu.gate_bias && p.expert_bytes ? (q.w - p.w) / p.expert_bytes * p.rows : 0;
    __syncthreads(); // the previous problem's readers are done with the stage
    __shared__ float late_part[wo::rmsnorm::kThreads / 32];
    stage_x_units<T::QU, UnitOrder<T>::value, UnitHalfSums<T>::value, kTerms>(
        p, q.x_off, hi, lo, meta, fu.norm_w, fu.norm_eps, fu.glu_up, fu.norm_late ? late_part : nullptr,
        fu.x_staged);
    __syncthreads();
    WO_CTA_MARK(1); // (trace builds) x staged
    // The row's 1/rms for the epilogue. Tiled: the last warp (whose chunks are never more than warp
    // 0's) computes it after its dots, while it waits at the CTA's barrier for the others, and
    // leaves it in late_s; computed here, its shuffles and division ran between the staging's
    // barrier and the first chunk's dots on every warp's chain. By warp: here, as each warp's
    // groups end at their own times.
    __shared__ float late_s;
    float late_inv = tiled ? 1.0f : late_inv_rms(fu.norm_late, late_part, p.cols, fu.norm_eps);
    // The group's rows r_first, r_first + r_step, ... (and the 8-lane reductions' neighbours) from
    // part[] into y: linear_fused's epilogue, or SwiGLU. By warp the warp's whole group; tiled the
    // CTA's warps take turns at rows of 4.
    constexpr int kRowsPerPass = 32 / kUnitReduceLanes;
    const int sub = lane % kUnitReduceLanes;
    const auto reduce_rows = [&](int64_t grp, int r_first, int r_step) {
      const int64_t row0 = grp * wr;
      if (q.bad_expert) { // an id outside [0, n_expert): make the bug visible
        if constexpr (tiled) {
          for (int r = lane + 32 * (r_first / kRowsPerPass); r < wg; r += 32 * (r_step / kRowsPerPass))
            store_y(p.y, q.y_off + row0 + r, __int_as_float(0x7fc00000), p.y_f16);
        } else if (lane < wr) { // a warp's group: wr <= 32 rows
          store_y(p.y, q.y_off + row0 + lane, __int_as_float(0x7fc00000), p.y_f16);
        }
        return;
      }
      // Row `row` of the group (wg + r: up's row r under Swiglu) as the fixed tree: lane `sub` of
      // the row's 8 adds dots sub, sub + 8, ... in order, then a 3-step shuffle. The whole warp
      // calls it (the shuffles stay converged); lanes past the group's rows add nothing.
      const auto row_sum = [&](int row, bool on) {
        float acc = 0.0f;
        if (on)
          for (int b = sub; b < np; b += kUnitReduceLanes)
            acc += part[row * np + b];
#pragma unroll
        for (int o = kUnitReduceLanes / 2; o > 0; o >>= 1)
          acc += __shfl_xor_sync(0xffffffffu, acc, o);
        return acc;
      };
      for (int r0 = r_first; r0 < wg; r0 += r_step) { // uniform per warp: the shuffles stay converged
        const int r = r0 + lane / kUnitReduceLanes;
        float acc = row_sum(r, r < wg);
        if (fu.norm_late) acc = __fmul_rn(acc, late_inv);
        if constexpr (M == Int8xMode::Swiglu) { // up's row r: its own sum, in the same tree
          float up = row_sum(wg + r, r < wg);
          if (fu.norm_late) up = __fmul_rn(up, late_inv);
          // as the swiglu (swiglu_oai) kernel computes it from the two GEMVs' outputs (and the biases)
          if (sub == 0 && r < wg) {
            float g = acc;
            if (fu.gate_bias)
              g = g + fu.gate_bias[bias_row0 + row0 + r], up = up + fu.up_bias[bias_row0 + row0 + r];
            const float a = fu.glu_clamped ? wo::swiglu::apply_clamped(g, up, fu.glu_alpha, fu.glu_limit)
                                           : wo::swiglu::apply(g, up);
            store_y(p.y, q.y_off + row0 + r, a, p.y_f16);
            if (ug.staged_rounds) // its round's slot: rows of CTA-major groups are the CTA's in order
              act_s[(grp - first_group) / group_stride * kUnitWarps * wr + warp * wr + r] = a;
          }
          continue;
        }
        if (sub == 0 && r < wg) { // linear_fused's epilogue, as variant 3 writes it
          const int64_t row = row0 + r;
          void *y = p.y;
          int64_t yi = q.y_off + row;
          if (M == Int8xMode::Stacked) (void)segment_row(seg, p.row_bytes, row, y, yi);
          // row_first's bias and residual are in first_add (landed: the item's wait covers the
          // bias's group and the residual's, which precede the second chunk's); a tiled CTA's rows'
          // in tiled_add
          const bool first = fu.early && !tiled && grp == first_group && r0 == 0;
          const float *fa = first_add[warp][lane / kUnitReduceLanes];
          const bool early = first || tiled_early;
          const float early_bias = tiled_early ? tiled_add[0][r] : fa[0];
          const float early_residual = tiled_early ? tiled_add[1][r] : fa[1];
          if (fu.bias) acc = __fadd_rn(acc, early ? early_bias : fu.bias[row]);
          if (fu.accumulate) acc = __fadd_rn(early ? early_residual : static_cast<const float *>(y)[yi], acc);
          store_y(y, yi, acc, p.y_f16);
        }
      }
    };
    const XU<T::QU> xu{hi, lo, meta, {held_words[0], held_words[1]}};
    Cursor cur = start();
    int col_c = col_first; // the lane's first block column in chunk cur.c
    for (int64_t it = 0; it < items; ++it) {
      const int64_t grp = cur.grp;
      const int c = cur.c, col_u = col_c, tb = cur.tb, tt = cur.tt;
      advance(cur);
      col_c = cur.c == c0 ? col_first : col_c + col_step - (col_c + col_step >= nb ? nb : 0);
      issue(q.w, it + kUnitStages - 1, ahead); // into the stage item it - 1 used (its readers synced below)
      advance(ahead);
      cp_async_wait<kUnitStages - 1>(); // item it has landed (this lane's copies) ...
      __syncwarp();                     // ... and every lane's
      // kTiles: lane (i, j) of tile tt of band tb: row tb kTileH + i, lane unit tt kTileW + j of it
      const int rho = tb * kTileH + lane / kTileW, lu = tt * kTileW + lane % kTileW;
      const int u = kTiles ? rho * upl + lu : 32 * c + lane;
      const int col_t = kTiles ? lu * T::U / kSplit : col_u;
      if (!q.bad_expert && (kTiles ? rho < rows_g : u < units_g)) {
        typename Ld::Words words;
        Ld::load(chunk_buf + (it & (kUnitStages - 1)) * kChunkBytes + lane / kSplit * T::BYTES, words);
        if constexpr (kSplit > 1) { // lane part u % kSplit of block u / kSplit (column col_u)
          part[u] = T::template block<kTerms>(words, u % kSplit, xu, col_t * kGroupsPerBlock);
        } else {
          const int first = u * T::U;
          int col = col_t; // the unit's first block column; U <= blocks_per_row
          float d[T::U];
#pragma unroll
          for (int k = 0; k < T::U; ++k) {
            d[k] = T::template block<kTerms>(words, k, xu, col * kGroupsPerBlock);
            col = col + 1 == nb ? 0 : col + 1;
          }
          if constexpr (T::U % 4 == 0) {
            // U / 4 float4 stores (16-byte aligned: groups and tiled runs are whole units,
            // unit_grid). One word store per block had the lanes, U floats apart, on 32 / U
            // banks: 4-way (U = 4) or 8-way (U = 8) conflicts (ncu: 79-84% of MXFP4's and Q8_0's
            // store wavefronts).
#pragma unroll
            for (int k = 0; k < T::U; k += 4)
              *reinterpret_cast<float4 *>(part + first + k) = make_float4(d[k], d[k + 1], d[k + 2], d[k + 3]);
          } else {
#pragma unroll
            for (int k = 0; k < T::U; ++k)
              part[first + k] = d[k];
          }
        }
      }
      __syncwarp(); // part[] complete; the stage may be refilled
      if (tiled || c != chunks - 1) continue;
      reduce_rows(grp, 0, kRowsPerPass);
      __syncwarp(); // the next group overwrites part[]
    }
    if (tiled) { // CTA-uniform
      if (tiled_early)
        cp_async_wait<0>(); // this thread's bias and residual copies (its warp may have no items)
      if (fu.norm_late && warp == kUnitWarps - 1) {
        const float v = late_inv_rms(true, late_part, p.cols, fu.norm_eps); // (the whole warp: shuffles)
        if (lane == 0) late_s = v;
      }
      __syncthreads(); // every warp's dots of the group are in part[], the copies too, late_s
      if (fu.norm_late) late_inv = late_s;
      WO_CTA_MARK(3); // (trace builds) every warp's dots done
      if (first_group < ug.n_groups) reduce_rows(first_group, warp * kRowsPerPass, kUnitWarps * kRowsPerPass);
      WO_CTA_MARK(0); // (trace builds) thread 0's rows stored
    }
    if constexpr (M == Int8xMode::Swiglu)
      if (ug.staged_rounds) { // CTA-uniform: the CTA's SwiGLU rows as staged terms for the next GEMV
        __syncthreads();      // every warp's rows are in act_s
        const int per_round = kUnitWarps * wr / wo::staged::kGroup;          // groups of 32 rows per round
        const int64_t rounds = items / chunks;                               // the same for every warp here
        for (int64_t gi = warp; gi < rounds * per_round; gi += kUnitWarps) { // warp-uniform
          const int64_t k = gi / per_round;
          const int j = static_cast<int>(gi % per_round);
          const int64_t col = (blockIdx.x + k * gridDim.x) * kUnitWarps * wr + wo::staged::kGroup * j + lane;
          const float v[1] = {act_s[k * kUnitWarps * wr + wo::staged::kGroup * j + lane]};
          wo::staged::write_group<1>(v, col, true, fu.y_staged, p.rows);
        }
      }
    cp_async_wait<0>(); // nothing left in flight into the stages
    WO_CTA_MARK(2);     // (trace builds) the problem done
  }
}

// The grid for p (and seg's stacked weights), or n_groups == 0 when the kernel does not take it:
// no unit dot for the type, rows not cut into whole units, weights or groups not 4-byte aligned
// (cp.async), or more shared memory than one CTA per SM may hold (kUnitMaxSmem).
// part_rows: rows of partial dots in shared memory (by warp: kUnitWarps groups' rows; tiled: the
// CTA's), rounded up to whole 16 bytes: the chunk stages after them take 16-byte cp.async (a tiled
// run of 7 rows of 19 blocks, 133 floats, put them off 16 and faulted "misaligned address").
template <class D> int64_t unit_part_floats(int64_t cols, int64_t part_rows) {
  return (part_rows * (cols / D::QK) * UnitSplit<UnitDot<D>>::value + 3) / 4 * 4;
}
template <class D> size_t unit_smem_bytes(int64_t cols, int64_t part_floats) {
  return unit_stage_bytes(cols) + static_cast<size_t>(part_floats) * sizeof(float) +
         static_cast<size_t>(kUnitWarps) * kUnitStages * unit_chunk_stride<D>();
}

// WORKER_UNIT_TILES=0: no tile chunks (A/B; the same bits either way).
inline bool unit_tiles_enabled() {
  static const bool v = env_int("WORKER_UNIT_TILES", 0, 1, 1) != 0;
  return v;
}

// Tile chunks for rows of nb blocks: the type has tile instances (unit_tile_w), two activation
// terms, rows of more than 8 lane units that are whole tiles, and every tile row starts on its
// copy size. Returns the row's lane units, or 0.
template <class D> int unit_tile_lanes(int64_t nb, uint64_t row_bytes, uint64_t align) {
  using T = UnitDot<D>;
  constexpr int ks = UnitSplit<T>::value, w = unit_tile_w<D>();
  if constexpr (w == 0) {
    return 0;
  } else {
    if (!unit_tiles_enabled() || act_terms() != 2 || (nb * ks) % T::U != 0) return 0;
    const int64_t lanes = nb * ks / T::U;
    if (lanes <= 8 || lanes % w != 0 || lanes > (1 << 20) || ((align | row_bytes) % unit_tile_copy<D>()) != 0)
      return 0;
    return static_cast<int>(lanes);
  }
}

// allow_tied_tiled = false: a tie stays by warp (a staged SwiGLU output needs the by-warp grid).
// sms: the GPU's SM count (0: this device's), so that the grids of a GPU model can be checked
// without one (unit_grid_test).
template <class D>
UnitGrid unit_grid(const GemvParams &p, const Segments &seg, bool allow_tiles = true,
                   bool allow_tied_tiled = true, int sms = 0) {
  UnitGrid g;
  if constexpr (has_unit<D>()) {
    using T = UnitDot<D>;
    if (p.cols % D::QK != 0 || p.cols / D::QK < T::U) return g;
    const int64_t nb = p.cols / D::QK;
    // The alignment every group start shares with the weights' bases (cp.async needs 4 at least).
    uint64_t align = reinterpret_cast<uintptr_t>(p.w) | p.expert_bytes;
    for (int i = 0; i < seg.n; ++i)
      align |= reinterpret_cast<uintptr_t>(seg.w[i]);
    const auto copy_bytes = [&](int64_t wr) {
      const uint64_t a = align | (wr * p.row_bytes) | 16;
      return static_cast<int>(a & ~(a - 1)) >= 16 ? 16 : static_cast<int>(a & ~(a - 1));
    };
    const auto rows_divide = [&](int64_t wr) {
      if (seg.n == 0) return p.rows % wr == 0;
      for (int i = 0; i < seg.n; ++i)
        if (seg.rows(i) % wr != 0) return false;
      return true;
    };
    // Rows per group: the fewest lane slots per warp, i.e. (groups per warp) x (chunks per group)
    // over the grid's warps, ties to the smaller group (more warps in flight). linear_id's
    // problems (experts) share the warps: GPT-OSS's 4 experts of 2880 rows x 90 blocks take 8 rows
    // per group (1440 groups of 3 chunks, one round) rather than 4 (2880 groups of 2 chunks, two).
    // linear_swiglu: a group is wr rows of gate and the same wr rows of up (p.rows: gate's).
    const int64_t problems = p.ids ? p.n_tokens * p.n_slots : 1;
    const int64_t warps =
        static_cast<int64_t>(kUnitCtasPerSm) * (sms > 0 ? sms : device_sm_count()) * kUnitWarps;
    const int halves = seg.swiglu ? 2 : 1;
    const int tile_lanes = allow_tiles ? unit_tile_lanes<D>(nb, p.row_bytes, align) : 0;
    // Chunks of a group of `rows` rows (both halves): tiles where they take no more chunks than 32
    // consecutive units would (a short last band leaves lanes idle).
    const auto chunks_of = [&](int64_t rows, bool &tiles) {
      const int64_t plain = (rows * nb * UnitSplit<T>::value / T::U + 31) / 32;
      constexpr int tw = unit_tile_w<D>() > 0 ? unit_tile_w<D>() : 1;
      const int64_t by_tiles = (rows + 32 / tw - 1) / (32 / tw) * (tile_lanes / tw);
      tiles = tile_lanes > 0 && by_tiles <= plain;
      return tiles ? by_tiles : plain;
    };
    int best = 0;
    bool best_tiles = false;
    int64_t best_slots = 0;
    for (int wr = 1; halves * wr <= kUnitMaxRowsPerGroup; wr *= 2) {
      if (unit_smem_bytes<D>(p.cols, unit_part_floats<D>(p.cols, kUnitWarps * halves * wr)) > kUnitMaxSmem)
        break;
      if ((wr * nb) % T::U != 0 || copy_bytes(wr) < 4 || !rows_divide(wr)) continue;
      const int64_t groups = p.rows / wr * problems;
      bool tiles = false;
      const int64_t slots = (groups + warps - 1) / warps * chunks_of(halves * wr, tiles);
      if (best == 0 || slots < best_slots) best = wr, best_slots = slots, best_tiles = tiles;
    }
    // Split types with rows of no 8-byte multiple run tiled or not at all (unit_weight).
    const bool tiled_only = UnitSplit<T>::value > 1 && p.row_bytes % 8 != 0;
    if (best == 0 && !tiled_only) return g;
    g.n_groups = p.rows / std::max(best, 1);
    g.rows_per_group = best;
    g.blocks_per_row = static_cast<int>(nb);
    g.nb_magic = nb >= 2 ? static_cast<uint32_t>((uint64_t{1} << 32) / static_cast<uint64_t>(nb) + 1) : 0u;
    g.units_per_group = static_cast<int>(halves * best * nb * UnitSplit<T>::value / T::U);
    g.copy_bytes = copy_bytes(best);
    g.tile_w = best_tiles ? unit_tile_w<D>() : 0;
    g.lanes_per_row = tile_lanes;
    g.rows = p.rows;
    g.part_floats = unit_part_floats<D>(p.cols, kUnitWarps * halves * best);
    // Tiled instead, where it shortens the longest warp's chain of chunks: a wave of CTAs (one per
    // SM, shared by linear_id's problems), each a run of rows whose count is a multiple of `a` (whole
    // units, 16-byte copies: the last CTA's run, the rest, is aligned alike). Plain and SwiGLU
    // weights (a stack's segments would split runs; runs cut per segment measured even on GPT-OSS's
    // q/k/v, docs/perf.md); not where the CTA's partial dots do not fit (the LM heads: ~1,150 rows
    // per CTA).
    if (unit_tiled_enabled() && act_terms() == 2 && (seg.n == 0 || seg.swiglu)) {
      int a = 1;
      while (a <= 64 && ((a * nb * UnitSplit<T>::value) % T::U != 0 || copy_bytes(a) < 16))
        ++a;
      const int64_t ctas = std::max<int64_t>(1, warps / kUnitWarps / problems);
      const int64_t rows_cta = ((p.rows + ctas - 1) / ctas + a - 1) / a * a;
      const int64_t units = halves * rows_cta * nb * UnitSplit<T>::value / T::U;
      bool tiles = false;
      const int64_t chain = (chunks_of(halves * rows_cta, tiles) + kUnitWarps - 1) / kUnitWarps;
      const int64_t part = unit_part_floats<D>(p.cols, halves * rows_cta);
      // (Also on ties where the tiled grid spreads the rows over more SMs, e.g. Qwen's 896 x 4864 Q4_K
      // down projection on 128 CTAs instead of 56: H100, one call, Qwen 1403.5/1293.8,
      // 1401.5/1296.5 -> 1364.3/1263.4, 1387.7/1276.5, Phi-3 -1%. Not kept.)
      // On a tie, a SwiGLU pass whose warp groups take uneven rounds (more groups than warps, not
      // a multiple: some warps walk one group more than the rest) runs tiled, where a CTA's chunks
      // are dealt to its warps in turn. Qwen2.5's gate/up (2432 groups of 2 x 2 rows on 2112 warps,
      // two rounds for 320 warps; tiled: 128 CTAs of 38 rows, 17 chunks): H100, one call,
      // 1514.7/1343.0, 1512.4/1340.0 -> 1568.3/1376.9, 1566.6/1377.6 tok/s. Where the rounds are even
      // the tie stays by warp: Phi-3's gate/up (2048 groups, one round of 3 tile chunks) lost tiled
      // (617.0/511.9, 617.3/506.5 -> 606.6/500.7, 606.7/502.0), as Qwen's Q4_K down projection (896
      // groups, above) did. Plain weights' uneven ties (Phi-3's Q4_K down projection, 3072
      // groups, and Q6_K LM head, 8016; GPT-OSS's o projection, 2880) measured +1% at depth 0
      // (621.9/508.1, 620.3/506.6 -> 628.4/509.2, 625.5/508.7; 544.6/515.4, 550.9/518.6 ->
      // 553.9/516.6, 554.3/519.3) and run tiled too. WORKER_UNIT_TILED_TIES=1: SwiGLU ties only;
      // =0: every tie by warp.
      const int64_t bw_groups = p.rows / best * problems;
      const bool uneven = bw_groups > warps && bw_groups % warps != 0;
      const bool tie_tiled = allow_tied_tiled &&
                             (seg.swiglu ? unit_tiled_ties() >= 1 : unit_tiled_ties() == 2) &&
                             chain == best_slots && uneven;
      if (a <= 64 && p.rows % a == 0 && (chain < best_slots || tiled_only || tie_tiled) &&
          units <= (1 << 30) && unit_smem_bytes<D>(p.cols, part) <= kUnitMaxSmem) {
        g.tiled = true;
        g.n_groups = (p.rows + rows_cta - 1) / rows_cta;
        g.rows_per_group = static_cast<int>(rows_cta);
        g.units_per_group = static_cast<int>(units);
        g.copy_bytes = 16;
        g.tile_w = tiles ? unit_tile_w<D>() : 0;
        g.part_floats = part;
      }
    }
    if (tiled_only && !g.tiled) return UnitGrid{};
  }
  return g;
}

// Opts the kernel into more than 48 KiB of dynamic shared memory, once per instantiation.
template <class D, Int8xMode M, int kTerms, bool kTiled = false, bool kTiles = false> bool unit_smem_ready() {
  static const bool ok = cudaFuncSetAttribute(gemv_units_kernel<D, M, kTerms, kTiled, kTiles>,
                                              cudaFuncAttributeMaxDynamicSharedMemorySize,
                                              static_cast<int>(kUnitMaxSmem)) == cudaSuccess;
  return ok;
}

// WORKER_TILED_EARLY=0: the tiled grid reads its rows' bias and residual in the epilogue (A/B; the
// same bits either way).
inline bool tiled_early_enabled() {
  static const bool v = !env_switched_off("WORKER_TILED_EARLY");
  return v;
}

inline bool unit_spread() {
  static const bool v = env_int("WORKER_UNIT_SPREAD", 0, 1, 1) != 0;
  return v;
}

// A staged SwiGLU output (Fusion::y_staged): the by-warp grid with its groups dealt CTA-major, where
// each CTA's rounds are kUnitWarps whole groups (every warp the same items, so the CTA meets at one
// barrier after its last) that make whole groups of 32 rows, at most kStagedMaxRows rows per group
// and kStagedMaxRounds rounds. The grid's size and each warp's chain stay the by-warp grid's; which
// CTA holds which rows changes (Qwen2.5's second round: 20 CTAs of 16 groups instead of 320 warps
// spread over all). False where the grid does not allow it.
inline bool staged_grid(const GemvParams &p, const Segments &seg, UnitGrid &g) {
  const int64_t slots = static_cast<int64_t>(kUnitCtasPerSm) * device_sm_count();
  if (!seg.swiglu || p.ids || g.tiled || g.tile_w > 0 || g.rows_per_group > kStagedMaxRows ||
      (kUnitWarps * g.rows_per_group) % wo::staged::kGroup != 0 || g.n_groups % kUnitWarps != 0)
    return false;
  const int64_t cta_rounds = g.n_groups / kUnitWarps;
  const int64_t ctas = std::min(cta_rounds, slots);
  if ((cta_rounds + ctas - 1) / ctas > kStagedMaxRounds) return false;
  g.cta_major = true;
  g.staged_rounds = static_cast<int>((cta_rounds + ctas - 1) / ctas);
  return true;
}

// Launches variant 5 for one-token problems; false (nothing launched) when it does not take them.
// allow_tiles = false: contiguous chunks only (the tests' reference for tile chunks).
template <class D>
bool launch_units(const GemvParams &p, cudaStream_t s, const Segments &seg = {}, const Fusion &fu = {},
                  bool allow_tiles = true) {
  if constexpr (!has_unit<D>()) {
    return false;
  } else {
    // (a staged SwiGLU output needs the by-warp grid's contiguous chunks: staged_grid)
    UnitGrid g = unit_grid<D>(p, seg, allow_tiles && !fu.y_staged, !fu.y_staged);
    if (g.n_groups == 0) return false;
    const int64_t problems = p.ids ? p.n_tokens * p.n_slots : p.n_tokens;
    // (one problem: a second one's copies would land while the first one's rows are still read)
    g.tiled_early = g.tiled && seg.n == 0 && fu.early && problems == 1 &&
                    g.rows_per_group <= kTiledEarlyRows && tiled_early_enabled();
    if (fu.y_staged && !staged_grid(p, seg, g)) return false; // the caller's request goes back unserved
    // linear_id: one wave of CTAs over all its problems (experts), each with at least one group;
    // with groups dealt across CTAs first, every SM gets an equal share (GPT-OSS's 4 x 360 expert
    // groups: 180 full CTAs left 48 SMs with two and 84 with one; now 264 CTAs of 5-6 groups:
    // quant_bench 16.0 -> 14.7 us). Plain GEMVs keep full CTAs (spread, Q4_K 3072x3072 went
    // 5.0 -> 5.25 us). WORKER_UNIT_SPREAD=0: full CTAs for linear_id too.
    const int64_t slots = static_cast<int64_t>(kUnitCtasPerSm) * device_sm_count();
    // Tiled: one CTA per group, a wave by construction (unit_grid).
    const int64_t ctas = g.tiled ? g.n_groups
                         : p.ids && unit_spread()
                             ? std::min<int64_t>(g.n_groups, std::max<int64_t>(1, slots / problems))
                             : std::min<int64_t>((g.n_groups + kUnitWarps - 1) / kUnitWarps, slots);
    const dim3 grid(static_cast<unsigned>(ctas), grid_y(problems));
    const size_t smem = unit_smem_bytes<D>(p.cols, g.part_floats);
    const Int8xMode mode = seg.n == 0   ? Int8xMode::Plain
                           : seg.swiglu ? Int8xMode::Swiglu
                                        : Int8xMode::Stacked;
    const auto [ready, kernel] = with_act_terms([&](auto terms) {
      constexpr int kT = decltype(terms)::value;
      if constexpr (kT == 2 && unit_tile_w<D>() > 0) // tile chunks only with two terms (unit_tile_lanes)
        if (g.tile_w > 0) {
          if (g.tiled)
            return mode == Int8xMode::Plain
                       ? std::make_pair(unit_smem_ready<D, Int8xMode::Plain, kT, true, true>(),
                                        gemv_units_kernel<D, Int8xMode::Plain, kT, true, true>)
                       : std::make_pair(unit_smem_ready<D, Int8xMode::Swiglu, kT, true, true>(),
                                        gemv_units_kernel<D, Int8xMode::Swiglu, kT, true, true>);
          return mode == Int8xMode::Plain
                     ? std::make_pair(unit_smem_ready<D, Int8xMode::Plain, kT, false, true>(),
                                      gemv_units_kernel<D, Int8xMode::Plain, kT, false, true>)
                 : mode == Int8xMode::Swiglu
                     ? std::make_pair(unit_smem_ready<D, Int8xMode::Swiglu, kT, false, true>(),
                                      gemv_units_kernel<D, Int8xMode::Swiglu, kT, false, true>)
                     : std::make_pair(unit_smem_ready<D, Int8xMode::Stacked, kT, false, true>(),
                                      gemv_units_kernel<D, Int8xMode::Stacked, kT, false, true>);
        }
      if constexpr (kT == 2) // the tiled grid only with two terms (unit_grid)
        if (g.tiled)
          return mode == Int8xMode::Plain ? std::make_pair(unit_smem_ready<D, Int8xMode::Plain, kT, true>(),
                                                           gemv_units_kernel<D, Int8xMode::Plain, kT, true>)
                                          : std::make_pair(unit_smem_ready<D, Int8xMode::Swiglu, kT, true>(),
                                                           gemv_units_kernel<D, Int8xMode::Swiglu, kT, true>);
      return mode == Int8xMode::Plain    ? std::make_pair(unit_smem_ready<D, Int8xMode::Plain, kT>(),
                                                          gemv_units_kernel<D, Int8xMode::Plain, kT>)
             : mode == Int8xMode::Swiglu ? std::make_pair(unit_smem_ready<D, Int8xMode::Swiglu, kT>(),
                                                          gemv_units_kernel<D, Int8xMode::Swiglu, kT>)
                                         : std::make_pair(unit_smem_ready<D, Int8xMode::Stacked, kT>(),
                                                          gemv_units_kernel<D, Int8xMode::Stacked, kT>);
    });
    if (!ready) return false;
    // A failed launch is left for the caller's cudaGetLastError check.
    (void)wo::pdl::launch(kernel, grid, kUnitWarps * 32, smem, s, p, seg, fu, g);
    return true;
  }
}

} // namespace wo::quant::dev
