// linear_id for many tokens (MoE prefill): group the (token, slot) problems by expert, then one
// tensor-core GEMM launch over all experts.
//
// Why: the GEMV path reads an expert's weight once per problem, so 512 tokens x 4 slots read each
// expert's matrices ~64 times (gpt-oss pp512 ran at 638 tok/s). Here each CTA takes a 128-row slice
// of one expert's matrix and up to 64 of the problems routed to that expert: the weight tile is
// decoded once into shared memory as FP16 and multiplied with the problems' activations by WMMA
// with FP32 accumulation, the same precision as the dense dequantize + cuBLAS path. The
// activations are gathered into pair order and converted to FP16 once per call (x is re-read by
// every row slice: as FP32 it was 8x the weight bytes a CTA reads, most of the L2 traffic).
//
// The grouping runs on the device (group_by_expert_kernel in cuda_linear.cu writes the tile list),
// so there is no host round trip and the three launches stay capturable. The tile list's length is only
// known on the device: the GEMM grid is sized for the worst case and spare CTAs exit at once.
#pragma once

#include "quant_common/cp_async.cuh"
#include "quant_common/cuda_ops.hpp"
#include "quant_common/device_decoders.cuh"
#include "quant_common/linear_kernels.cuh"
#include "quant_common/mxfp4_half.cuh"

#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <mma.h>

#include <type_traits>

namespace wo::quant::dev {

constexpr int kGroupThreads = 256; // 8 warps: 4 along rows (TM/4 each) x 2 along problems (32 each)
template <class D, int TM_, int KMIN> struct GroupTile {
  static constexpr int TM = TM_, TN = kGroupTileProblems;
  static constexpr int FM = TM / 64;                      // 16-row fragments per warp (4 warps on rows)
  static constexpr int KT = D::QK >= KMIN ? D::QK : KMIN; // columns per step: whole blocks
  static constexpr int LD = KT + 8;                       // FP16 row pitch (pads bank conflicts away)
  static constexpr int LDO = TM + 4;                      // FP32 pitch of the output staging
  // Raw weight bytes of one row per step, copied from a 16-byte aligned start so the decoders see
  // the same address alignment as in global memory.
  static constexpr int kChunkBytes = KT / D::QK * D::BYTES;
  static constexpr int kRawWords = (kChunkBytes + 15 + 3) / 4;
  static constexpr int kRawPitch = (kRawWords * 4 + 15) / 16 * 16;
  static constexpr size_t kRawBytes = static_cast<size_t>(TM) * kRawPitch;
  static constexpr size_t kXBytes = static_cast<size_t>(TN) * LD * 2,
                          kWBytes = static_cast<size_t>(TM) * LD * 2;
  static constexpr size_t kOperandBytes = 2 * kRawBytes + 2 * kXBytes + kWBytes;
  static constexpr size_t kOutBytes = static_cast<size_t>(TN) * LDO * 4;
  static constexpr size_t kSmem = kOperandBytes > kOutBytes ? kOperandBytes : kOutBytes;
};

// grid.x: TM-row slices of one expert matrix; grid.y: tiles (worst-case count, see above).
// tiles[4*i] = {expert, first pair, pairs (<= TN), 0}; pairs[j] is the problem t*n_slots+k whose
// FP16 activations are row j of x16 (gathered in pair order by the grouping step).
//
// Per step of KT columns: the next step's raw weight bytes and activations are in flight
// (cp.async, double-buffered) while this step's weight bytes are decoded to FP16 and multiplied.
template <class D, int TM, int KMIN>
__global__ void __launch_bounds__(kGroupThreads)
    grouped_gemm_kernel(const GemvParams p, const __half *x16, const int32_t *pairs, const int32_t *tiles,
                        const int32_t *n_tiles) {
  using T = GroupTile<D, TM, KMIN>;
  namespace wmma = nvcuda::wmma;
  const int tile = static_cast<int>(blockIdx.y);
  if (tile >= *n_tiles) return;
  const int expert = tiles[4 * tile], begin = tiles[4 * tile + 1], count = tiles[4 * tile + 2];
  const int64_t row0 = static_cast<int64_t>(blockIdx.x) * T::TM;

  extern __shared__ __align__(128) uint8_t smem[];
  // Buffer b's raw weight bytes and activations (arithmetic, not arrays: no local-memory spills).
  const auto raw = [&](int b) { return smem + b * T::kRawBytes; };
  const auto sx = [&](int b) { return reinterpret_cast<__half *>(smem + 2 * T::kRawBytes + b * T::kXBytes); };
  auto *sw = reinterpret_cast<__half *>(smem + 2 * T::kRawBytes + 2 * T::kXBytes);
  const uint8_t *w = p.w + static_cast<uint64_t>(expert) * p.expert_bytes;
  const __half *xt = x16 + static_cast<int64_t>(begin) * p.cols;

  // Row r's weight bytes of step k0 in global memory: rows past the weight's end re-read its last
  // row (computed, never stored). The raw buffer holds them from the 16-byte aligned start below.
  const auto chunk_src = [&](int r, int64_t k0) {
    return w + min(row0 + r, p.rows - 1) * p.row_bytes + k0 / D::QK * D::BYTES;
  };
  // Enqueue step k0's operands into buffer b: problems past the tile's count and columns past the
  // row's end are 0.
  const auto issue = [&](int64_t k0, int b) {
    const int kt = static_cast<int>(min(static_cast<int64_t>(T::KT), p.cols - k0));
    const int chunk = kt / D::QK * D::BYTES;
    for (int i = threadIdx.x; i < T::TM * T::kRawWords; i += kGroupThreads) {
      const int r = i / T::kRawWords, wd = i % T::kRawWords;
      const uint8_t *src = chunk_src(r, k0);
      const uint8_t *aligned =
          reinterpret_cast<const uint8_t *>(reinterpret_cast<uintptr_t>(src) & ~uintptr_t{15});
      if (aligned + wd * 4 < src + chunk) cp_async4(raw(b) + r * T::kRawPitch + wd * 4, aligned + wd * 4);
    }
    for (int i = threadIdx.x; i < T::TN * (T::KT / 8); i += kGroupThreads) {
      const int n = i / (T::KT / 8), c = (i % (T::KT / 8)) * 8;
      __half *dst = sx(b) + n * T::LD + c;
      if (n < count && c < kt)
        cp_async16(dst, xt + n * p.cols + k0 + c);
      else
        *reinterpret_cast<uint4 *>(dst) = make_uint4(0, 0, 0, 0);
    }
    cp_async_commit();
  };

  const int warp = threadIdx.x / 32, wm = warp % 4, wn = warp / 4;
  wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc[T::FM][2];
#pragma unroll
  for (int i = 0; i < T::FM; ++i)
#pragma unroll
    for (int f = 0; f < 2; ++f)
      wmma::fill_fragment(acc[i][f], 0.0f);

  constexpr int kPartsPerRow = T::KT / D::QK * D::PARTS;
  issue(0, 0);
  int b = 0;
  for (int64_t k0 = 0; k0 < p.cols; k0 += T::KT, b ^= 1) {
    const bool more = k0 + T::KT < p.cols;
    if (more) issue(k0 + T::KT, b ^ 1); // its buffers' readers finished before the last barrier
    if (more)
      cp_async_wait<1>();
    else
      cp_async_wait<0>();
    __syncthreads();
    const int kt = static_cast<int>(min(static_cast<int64_t>(T::KT), p.cols - k0));
    if constexpr (std::is_same_v<D, DecMXFP4>) { // whole blocks through prmt and f16x2 (mxfp4_half.cuh)
      constexpr int kBlocksPerRow = T::KT / 32;
      for (int i = threadIdx.x; i < T::TM * kBlocksPerRow; i += kGroupThreads) {
        const int r = i / kBlocksPerRow, blk = i % kBlocksPerRow;
        uint32_t h[16] = {};
        if (blk * 32 < kt) {
          const uintptr_t src = reinterpret_cast<uintptr_t>(chunk_src(r, k0));
          mxfp4_block_to_half(reinterpret_cast<const uint32_t *>(raw(b) + r * T::kRawPitch),
                              static_cast<int>(src & 15) + blk * D::BYTES, h);
        }
        auto *dst = reinterpret_cast<uint4 *>(sw + r * T::LD + blk * 32);
#pragma unroll
        for (int j = 0; j < 4; ++j)
          dst[j] = make_uint4(h[4 * j], h[4 * j + 1], h[4 * j + 2], h[4 * j + 3]);
      }
    } else {
      for (int i = threadIdx.x; i < T::TM * kPartsPerRow; i += kGroupThreads) {
        const int r = i / kPartsPerRow, j = i % kPartsPerRow, blk = j / D::PARTS, part = j % D::PARTS;
        __half *dst = sw + r * T::LD + blk * D::QK;
        float v[D::V];
        if (blk * D::QK < kt) {
          const uintptr_t src = reinterpret_cast<uintptr_t>(chunk_src(r, k0));
          D::decode(raw(b) + r * T::kRawPitch + (src & 15) + blk * D::BYTES, part, v);
        } else {
#pragma unroll
          for (int e = 0; e < D::V; ++e)
            v[e] = 0.0f;
        }
#pragma unroll
        for (int g = 0; g < D::V / 4; ++g)
          store_half4(dst + D::start(part, g), v[4 * g], v[4 * g + 1], v[4 * g + 2], v[4 * g + 3]);
      }
    }
    __syncthreads();
#pragma unroll
    for (int kk = 0; kk < T::KT; kk += 16) {
      wmma::fragment<wmma::matrix_a, 16, 16, 16, __half, wmma::row_major> a[T::FM];
#pragma unroll
      for (int i = 0; i < T::FM; ++i)
        wmma::load_matrix_sync(a[i], sw + (wm * 16 * T::FM + i * 16) * T::LD + kk, T::LD);
#pragma unroll
      for (int f = 0; f < 2; ++f) {
        wmma::fragment<wmma::matrix_b, 16, 16, 16, __half, wmma::col_major> bf;
        wmma::load_matrix_sync(bf, sx(b) + (wn * 32 + f * 16) * T::LD + kk, T::LD);
#pragma unroll
        for (int i = 0; i < T::FM; ++i)
          wmma::mma_sync(acc[i][f], a[i], bf, acc[i][f]);
      }
    }
    __syncthreads(); // sw and this step's buffers are free for the next issue / decode
  }

  // Stage the result (column n = one problem) and write each problem's rows contiguously.
  auto *so = reinterpret_cast<float *>(smem);
#pragma unroll
  for (int i = 0; i < T::FM; ++i)
#pragma unroll
    for (int f = 0; f < 2; ++f)
      wmma::store_matrix_sync(so + (wn * 32 + f * 16) * T::LDO + wm * 16 * T::FM + i * 16, acc[i][f], T::LDO,
                              wmma::mem_col_major);
  __syncthreads();
  for (int i = threadIdx.x; i < T::TN * T::TM; i += kGroupThreads) {
    const int n = i / T::TM, r = i % T::TM;
    if (n < count && row0 + r < p.rows)
      store_y(p.y, static_cast<int64_t>(pairs[begin + n]) * p.rows + row0 + r, so[n * T::LDO + r], p.y_f16);
  }
}

template <class D, int TM, int KMIN>
int launch_grouped_tile(const GemvParams &p, const void *x16, const int32_t *pairs, const int32_t *tiles,
                        const int32_t *n_tiles, int64_t max_tiles, cudaStream_t stream) {
  using T = GroupTile<D, TM, KMIN>;
  if (T::kSmem > 48 * 1024) { // past the default: opt in to the larger shared memory size
    static const cudaError_t attr =
        cudaFuncSetAttribute(grouped_gemm_kernel<D, TM, KMIN>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                             static_cast<int>(T::kSmem));
    if (attr != cudaSuccess) return static_cast<int>(attr);
  }
  const dim3 grid(static_cast<unsigned>((p.rows + T::TM - 1) / T::TM), static_cast<unsigned>(max_tiles));
  grouped_gemm_kernel<D, TM, KMIN>
      <<<grid, kGroupThreads, T::kSmem, stream>>>(p, static_cast<const __half *>(x16), pairs, tiles, n_tiles);
  return static_cast<int>(cudaGetLastError());
}

// 128-row tiles with 128-column steps: on the H200, gpt-oss pp512 6.8k tok/s against 6.2k for
// 64 x 64 tiles (x re-reads per weight byte and barriers per column both halve).
template <class D>
int launch_grouped(const GemvParams &p, const void *x16, const int32_t *pairs, const int32_t *tiles,
                   const int32_t *n_tiles, int64_t max_tiles, void *stream) {
  return launch_grouped_tile<D, 128, 128>(p, x16, pairs, tiles, n_tiles, max_tiles,
                                          static_cast<cudaStream_t>(stream));
}

} // namespace wo::quant::dev
