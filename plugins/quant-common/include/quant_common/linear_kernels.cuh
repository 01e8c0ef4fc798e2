// GEMV, dequantize and scalar kernels templated on a block decoder (device_decoders.cuh) and their
// launchers; type_ops.cuh bundles them (with grouped_gemm.cuh) into a codec's TypeOps.
//
// Decode GEMV (one token per problem, variant 3, the default): gemv_int8x_kernel stages the
// activations once per CTA in shared memory as two int8 terms (int8x_dots.cuh) and multiplies the
// integer weight codes with dp4a; see its comment.
//
// GEMV (variant 1, and several tokens): one warp per weight row; lanes walk the row's (block, part) pairs so
// a warp's loads cover consecutive bytes of the row; each decoded part is multiplied with up to NT tokens
// (the weight is read once per NT tokens); FP32 accumulation, warp-shuffle reduction. The same kernel serves
// linear_id: the problem index selects token, slot and (through ids) the expert's matrix.
#pragma once

#include "quant_common/device_decoders.cuh"
#include "quant_common/gemv_common.cuh"
#include "quant_common/unit_gemv.cuh"

#include <worker/pdl.cuh>
#include <worker/rms_norm.cuh>

#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdlib>

namespace wo::quant::dev {

// acc[t] += row w's dot with token t's activations over the (block, part) pairs first, first +
// stride, ... of the row: a warp's lanes (gemv_kernel) or a CTA's threads (gemv_wide_kernel) walk
// consecutive parts, so their loads cover consecutive bytes. Each part adds its four-value groups
// in order, one expression each: the kernels that share this walk share its bits.
template <class D, int NT>
__device__ __forceinline__ void row_parts_dot(const GemvParams &p, const Problem &q, const uint8_t *w,
                                              int64_t first, int stride, float (&acc)[NT]) {
  const int64_t n_parts = p.cols / D::QK * D::PARTS;
#pragma unroll 2
  for (int64_t i = first; i < n_parts; i += stride) {
    const int64_t blk = i / D::PARTS;
    const int part = static_cast<int>(i % D::PARTS);
    float v[D::V];
    D::decode(w + blk * D::BYTES, part, v);
#pragma unroll
    for (int g = 0; g < D::V / 4; ++g) {
      const int64_t s = blk * D::QK + D::start(part, g);
#pragma unroll
      for (int t = 0; t < NT; ++t) {
        if (t < q.ntok) {
          const float4 xv = load_x4(p.x, q.x_off + t * p.cols + s, p.x_f16);
          acc[t] += v[4 * g] * xv.x + v[4 * g + 1] * xv.y + v[4 * g + 2] * xv.z + v[4 * g + 3] * xv.w;
        }
      }
    }
  }
}

template <class D, int NT>
__global__ void __launch_bounds__(kGemvWarps * 32) gemv_kernel(const GemvParams p) {
  wo::pdl::enter(); // launched with pdl::launch (decode path)
  const int lane = threadIdx.x % 32;
  const int64_t row = static_cast<int64_t>(blockIdx.x) * kGemvWarps + threadIdx.x / 32;
  if (row >= p.rows) return;
  for (int64_t prob = blockIdx.y;; prob += gridDim.y) {
    Problem q;
    if (!resolve<NT>(p, prob, q)) return;
    if (q.bad_expert) { // an id outside [0, n_expert): make the bug visible instead of reading out of bounds
      if (lane == 0) store_y(p.y, q.y_off + row, __int_as_float(0x7fc00000), p.y_f16);
      continue;
    }
    float acc[NT];
#pragma unroll
    for (int t = 0; t < NT; ++t)
      acc[t] = 0.0f;
    row_parts_dot<D, NT>(p, q, q.w + row * p.row_bytes, lane, 32, acc);
#pragma unroll
    for (int t = 0; t < NT; ++t) {
      const float s = warp_sum(acc[t]);
      if (lane == 0 && t < q.ntok) store_y(p.y, q.y_off + t * p.rows + row, s, p.y_f16);
    }
  }
}

// Few rows of a plain float type (F32, F16, BF16), one token: one CTA per row, its 256 threads
// striding over the row's parts, then a fixed-order reduction (warp shuffles, then the 8 warp sums
// in order). Why: GPT-OSS's router (32 x 2880 F32) ran 8 CTAs of variant 1, each lane walking 11
// parts with two loads in flight: 8.8 us per layer (ncu), 7% of a decode step.
constexpr int kWideThreads = 256;
template <class D> __global__ void __launch_bounds__(kWideThreads) gemv_wide_kernel(const GemvParams p) {
  __shared__ float warp_sums[kWideThreads / 32];
  wo::pdl::enter(); // launched with pdl::launch (decode path)
  const int64_t row = blockIdx.x;
  for (int64_t prob = blockIdx.y;; prob += gridDim.y) {
    Problem q;
    if (!resolve<1>(p, prob, q)) return;
    if (q.bad_expert) { // an id outside [0, n_expert): make the bug visible
      if (threadIdx.x == 0) store_y(p.y, q.y_off + row, __int_as_float(0x7fc00000), p.y_f16);
      continue;
    }
    float accs[1] = {0.0f};
    row_parts_dot<D, 1>(p, q, q.w + row * p.row_bytes, threadIdx.x, kWideThreads, accs);
    const float acc = warp_sum(accs[0]);
    __syncthreads(); // the previous problem's sums are read
    if (threadIdx.x % 32 == 0) warp_sums[threadIdx.x / 32] = acc;
    __syncthreads();
    if (threadIdx.x == 0) {
      float sum = 0.0f;
#pragma unroll
      for (int w8 = 0; w8 < kWideThreads / 32; ++w8)
        sum += warp_sums[w8];
      store_y(p.y, q.y_off + row, sum, p.y_f16);
    }
  }
}

// The register bound of a gemv_int8x_kernel instance (below). Plain instances (one weight): up to
// 128 registers where the CTA's threads allow (the wide instance keeps 64), and the launch sizes
// its grid by the CTAs that then fit an SM (wo::occupancy::ctas_per_sm). Why: bounded to 64 (four 8-warp CTAs
// per SM) ptxas issued a lane's four Q5_0 parts' twenty 2-byte loads in two rounds, twelve before
// the first dp4a and eight after it: two L2 latencies on each row's chain where one CTA per SM runs
// anyway (Qwen2.5's o projection: 112 CTAs). Free, it takes 80 registers and issues all twenty
// first (cuobjdump -sass). Stacked instances keep the bound: freed too, their q/k/v pass issues all
// its loads first as well and gains at depth 0, but loses at 2048 (H100, one call, decode tok/s at
// depth 0 / 2048: bounded 1673.3/1532.1, 1670.9/1529.2; plain free 1682.0/1531.4, 1680.1/1527.6;
// stacked free 1686.0/1516.4, 1689.0/1521.0; both 1697.9/1510.8, 1694.8/1509.6).
template <int kWarps, Int8xMode M> constexpr int int8x_max_regs() {
  constexpr int fit = 65536 / (kWarps * 32) / 8 * 8; // one CTA per SM
  constexpr int bound = 65536 / (kWarps * 32 * ((kInt8xCtasPerSm * kInt8xWarps) / kWarps)) / 8 * 8;
  return M == Int8xMode::Plain ? (fit < 128 ? fit : 128) : bound;
}

// Variant 3 (one token per problem). Why: at batch 1 a GEMV must stream weights at HBM speed, and
// the FP32 kernels above spend most of their time on instructions, not bytes: per 4-bit weight an
// integer-to-float conversion (quarter rate), a scale multiply, an FMA and 8 bytes of FP32
// activation loads. Here each CTA first stages the token's activations in shared memory (scale per
// 32, hi/lo int8 terms, sums per 16; cols <= kInt8xMaxCols), then each warp walks whole rows
// (grid-stride, so CTAs ~ 4 per SM and the staging is paid once per CTA, not per row) and each
// lane reduces one part of a block with dp4a: ~0.5 instruction per weight. FP32 accumulation of
// the per-part sums, warp-shuffle reduction as in variant 1.
// ksplit > 1 (int8x_split, from the row length only, so a stacked or SwiGLU pass splits its rows
// as the separate GEMVs do and keeps their bits): that many warps share a row, each taking every
// ksplit-th strip of 32 parts, and the row's sum adds their warp sums in warp order (shared
// memory). Why: a long row on few rows (Qwen's Q6_K down projection, 896 x 4864: 304 parts) took
// three dependent rounds of loads per warp, and at one warp per row its 896 warps cannot hide
// them: ~16 us of a ~35 us layer in the decode graph (bench --timeline). ksplit = 1 is the
// one-warp walk, bit for bit.
// DB != D (Stacked only): a mixed stack whose segments from seg.alt on are of type DB (Qwen2.5's
// Q5_0 q and k with a Q8_0 v); a warp's row is of one type, so the branch is uniform per warp, and
// each row's dot is the one its type's own launch computes (the same staging, split and sum).
template <class D, Int8xMode M, int kTerms, int kWarps, class DB = D>
__global__ void __launch_bounds__(kWarps * 32) __maxnreg__((int8x_max_regs<kWarps, M>()))
    gemv_int8x_kernel(const GemvParams p, const Segments seg, const Fusion fu, const int ksplit) {
  constexpr bool kMixed = !std::is_same_v<D, DB>;
  static_assert(!kMixed || M == Int8xMode::Stacked, "a mixed stack is a Stacked pass");
  extern __shared__ __align__(16) uint8_t smem[];
  __shared__ float warp_part[2][kWarps]; // ksplit > 1: the row's warp sums (gate's, up's)
  __shared__ float first_add[kWarps][2]; // early: the bias and the residual of the warp's first row
  auto *hi = reinterpret_cast<int8_t *>(smem);
  int8_t *lo = hi + p.cols;
  auto *scale = reinterpret_cast<float *>(smem + 2 * p.cols);
  float *sum16 = scale + p.cols / 32;
  const XQ xq{hi, lo, scale, sum16};
  WO_CTA_SCOPE(wo::cta_trace::kInt8xGemv, p.rows);
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  const int sub = warp % ksplit;                                             // this warp's strips of the row
  const int rows_per_cta = kWarps / ksplit;                                  // rows a CTA takes per round
  const int64_t first_row = static_cast<int64_t>(blockIdx.x) * rows_per_cta; // uniform per CTA
  const int64_t row_stride = static_cast<int64_t>(gridDim.x) * rows_per_cta;
  const int64_t n_parts_d = p.cols / D::QK * XDot<D>::PARTS; // (a mixed stack's rows: per type)
  // Launched with pdl::launch: while the previous kernel finishes, ask L2 for each warp's first
  // row (plain linear only: an expert's rows depend on ids an earlier kernel writes).
  if (!p.ids) {
    const int64_t row = first_row + warp / ksplit;
    void *y;
    int64_t yi;
    bool alt = false;
    const uint8_t *w = M == Int8xMode::Stacked ? segment_row<kMixed>(seg, p.row_bytes, row, y, yi, &alt)
                                               : p.w + row * p.row_bytes;
    const uint64_t row_bytes = kMixed && alt ? seg.alt_row_bytes : p.row_bytes;
    if (row < p.rows)
      for (uint64_t off = static_cast<uint64_t>(sub * 32 + lane) * 128; off < row_bytes;
           off += static_cast<uint64_t>(ksplit) * 32 * 128) {
        wo::pdl::prefetch_l2(w + off);
        if (M == Int8xMode::Swiglu) wo::pdl::prefetch_l2(seg.w[1] + row * p.row_bytes + off);
      }
  }
  // Early reads (gemv_common.cuh): the norm weights and the bias of the warp's first row (its lane 0
  // of sub 0 stores it) before the wait, that row's residual after it.
  const int64_t row_first = first_row + warp / ksplit;
  const bool stores_first = fu.early && lane == 0 && sub == 0 && row_first < p.rows;
  float *norm_copy = reinterpret_cast<float *>(smem + align16(int8x_smem_bytes(p.cols)));
  const float *norm_w = fu.early && fu.norm_w ? norm_copy : fu.norm_w;
  if (fu.early && fu.norm_w) copy_norm_w(fu.norm_w, p.cols, norm_copy);
  if (stores_first && fu.bias) cp_async4(&first_add[warp][0], fu.bias + row_first);
  wo::pdl::enter();
  WO_CTA_WAITED();
  for (int64_t prob = blockIdx.y;; prob += gridDim.y) {
    Problem q;
    if (!resolve<1>(p, prob, q)) return; // the same for the whole CTA
    if (stores_first && fu.accumulate && !q.bad_expert) {
      void *y = p.y;
      int64_t yi = q.y_off + row_first;
      bool alt = false;
      if (M == Int8xMode::Stacked) (void)segment_row<kMixed>(seg, p.row_bytes, row_first, y, yi, &alt);
      cp_async4(&first_add[warp][1], static_cast<const float *>(y) + yi);
    }
    cp_async_commit();
    __syncthreads();    // the previous problem's readers are done with the stage
    cp_async_wait<0>(); // this thread's early reads (its norm weights' copy among them) have landed
    __shared__ float late_part[wo::rmsnorm::kThreads / 32];
    stage_x_int8<kTerms>(p, q.x_off, hi, lo, scale, sum16, norm_w, fu.norm_eps, fu.glu_up,
                         fu.norm_late ? late_part : nullptr, fu.x_staged);
    __syncthreads();
    WO_CTA_MARK(1); // (trace builds) x staged
    const float late_inv = late_inv_rms(fu.norm_late, late_part, p.cols, fu.norm_eps);
    // Rounds are uniform across the CTA (ksplit > 1 meets at a barrier per round); a row past the
    // end is computed on the last row and not stored.
    for (int64_t r0 = first_row; r0 < p.rows; r0 += row_stride) {
      const int64_t row_want = r0 + warp / ksplit;
      const bool valid = row_want < p.rows;
      if (!valid && ksplit == 1) continue; // no barrier to meet
      const int64_t row = valid ? row_want : p.rows - 1;
      if (q.bad_expert) {
        if (lane == 0 && sub == 0 && valid) store_y(p.y, q.y_off + row, __int_as_float(0x7fc00000), p.y_f16);
        continue;
      }
      void *y = p.y;
      int64_t yi = q.y_off + row;
      bool alt = false;
      const uint8_t *w = M == Int8xMode::Stacked ? segment_row<kMixed>(seg, p.row_bytes, row, y, yi, &alt)
                                                 : q.w + row * p.row_bytes;
      // The warp's dot of weight row wr (of type decltype(tag)::type) with the staged x: its strips
      // of 32 parts, kInt8xUnroll parts per lane per step, all loads issued before any is used:
      // rows are short (896 columns = 112 Q8_0 parts), so a lane past the end re-reads the row's
      // last block (an L1 hit) and drops it instead of leaving a remainder loop that serializes the
      // loads. PARTS divides 32, so a lane's part within its blocks is the same at every step and
      // its blocks advance by a fixed count: 32-bit block indices, no division per part. (With
      // 64-bit part indices divided per part, index math and predicates were ~400 of the ~460
      // instructions a warp spent on a 896-column Q5_0 row, 16 of them dp4a: ncu source counters,
      // Qwen2.5's q/k/v pass, H100; the warp's chain, not memory, is what the pass waits on.)
      const int step = 32 * ksplit;
      const auto row_dot = [&](auto tag, const uint8_t *wr) {
        using T = typename decltype(tag)::type;
        using X = XDot<T>;
        static_assert(32 % X::PARTS == 0, "a lane's part is the same in every strip");
        const int n_parts = static_cast<int>(kMixed ? p.cols / T::QK * X::PARTS : n_parts_d);
        const int first = 32 * sub + lane, part = first % X::PARTS;
        const int last_blk = n_parts / X::PARTS - 1, blk_step = step / X::PARTS;
        float acc = 0.0f;
        for (int i0 = first; i0 < n_parts; i0 += step * kInt8xUnroll) {
          const int blk0 = i0 / X::PARTS;
#pragma unroll
          for (int u = 0; u < kInt8xUnroll; ++u) {
            const int blk = min(blk0 + blk_step * u, last_blk);
            const float v = X::template dot<kTerms>(wr + static_cast<int64_t>(blk) * T::BYTES, part, xq,
                                                    blk * (T::QK / 32));
            acc += i0 + step * u < n_parts ? v : 0.0f;
          }
        }
        return warp_sum(acc);
      };
      float acc = kMixed && alt ? row_dot(TypeTag<DB>{}, w) : row_dot(TypeTag<D>{}, w);
      if (r0 == first_row) WO_CTA_MARK(2); // (trace builds) warp 0's first dot summed
      float up = M == Int8xMode::Swiglu ? row_dot(TypeTag<D>{}, seg.w[1] + row * p.row_bytes) : 0.0f;
      if (fu.norm_late) acc = __fmul_rn(acc, late_inv), up = __fmul_rn(up, late_inv);
      if (ksplit > 1) { // the row's warp sums in warp order (gate's and up's alike)
        if (lane == 0) warp_part[0][warp] = acc, warp_part[1][warp] = up;
        __syncthreads();
        if (sub == 0) {
          acc = warp_part[0][warp], up = warp_part[1][warp];
          for (int k = 1; k < ksplit; ++k)
            acc += warp_part[0][warp + k], up += warp_part[1][warp + k];
        }
        __syncthreads(); // read before the next round writes
      }
      if (M == Int8xMode::Swiglu) acc = wo::swiglu::apply(acc, up); // as the swiglu kernel computes it
      if (lane == 0 && sub == 0 && valid) { // linear_fused's epilogue: the same float adds add_bias
                                            // and the residual add make
        const bool first = fu.early && r0 == first_row; // row_first: its bias and residual are here
        if (fu.bias) acc = __fadd_rn(acc, first ? first_add[warp][0] : fu.bias[row]);
        if (fu.accumulate)
          acc = __fadd_rn(first ? first_add[warp][1] : static_cast<const float *>(y)[yi], acc);
        store_y(y, yi, acc, p.y_f16);
        if (r0 == first_row) WO_CTA_MARK(3); // (trace builds) warp 0's first row stored
      }
    }
  }
}

// Variant 4 (opt-in, NOT yet run on a device): variant 3 plus the two fixes docs/perf.md names
// first. (a) Before staging x, each warp asks L2 for the lines of its first rows
// (prefetch.global.L2, a hint), so the weight fetch overlaps the staging instead of following it.
// (b) A warp splits into 32/L lane groups, one row each (shuffle reduction inside the group), so
// rows with few parts (Q4_K/Q6_K at 1024 columns) keep all kInt8xUnroll slots of every lane busy.

template <class D, int L>
__global__ void __launch_bounds__(kInt8xWarps * 32, kInt8xCtasPerSm)
    gemv_int8x_groups_kernel(const GemvParams p) {
  using X = XDot<D>;
  constexpr int G = 32 / L; // rows per warp at a time
  extern __shared__ __align__(16) uint8_t smem[];
  auto *hi = reinterpret_cast<int8_t *>(smem);
  int8_t *lo = hi + p.cols;
  auto *scale = reinterpret_cast<float *>(smem + 2 * p.cols);
  float *sum16 = scale + p.cols / 32;
  const XQ xq{hi, lo, scale, sum16};
  const int lane = threadIdx.x % 32, sub = lane % L, grp = lane / L;
  const int64_t first = (static_cast<int64_t>(blockIdx.x) * kInt8xWarps + threadIdx.x / 32) * G;
  const int64_t stride = static_cast<int64_t>(gridDim.x) * kInt8xWarps * G;
  const int64_t n_parts = p.cols / D::QK * X::PARTS;
  if (!p.ids && first + grp < p.rows) // plain linear: the weights are known before the wait
    for (uint64_t off = static_cast<uint64_t>(sub) * 128; off < p.row_bytes; off += L * 128)
      wo::pdl::prefetch_l2(p.w + (first + grp) * p.row_bytes + off);
  wo::pdl::enter();
  for (int64_t prob = blockIdx.y;; prob += gridDim.y) {
    Problem q;
    if (!resolve<1>(p, prob, q)) return; // the same for the whole CTA
    if (p.ids && !q.bad_expert && first + grp < p.rows) {
      const uint8_t *w = q.w + (first + grp) * p.row_bytes;
      for (uint64_t off = static_cast<uint64_t>(sub) * 128; off < p.row_bytes; off += L * 128)
        wo::pdl::prefetch_l2(w + off);
    }
    __syncthreads(); // the previous problem's readers are done with the stage
    stage_x_int8<2>(p, q.x_off, hi, lo, scale, sum16); // (opt-in variant 4: two terms)
    __syncthreads();
    for (int64_t rb = first; rb < p.rows; rb += stride) { // uniform per warp: shuffles stay converged
      const int64_t row = rb + grp;
      const bool valid = row < p.rows;
      if (q.bad_expert) {
        if (sub == 0 && valid) store_y(p.y, q.y_off + row, __int_as_float(0x7fc00000), p.y_f16);
        continue;
      }
      const uint8_t *w = q.w + (valid ? row : p.rows - 1) * p.row_bytes; // tail groups: computed, not stored
      float acc = 0.0f;
      for (int64_t i0 = sub; i0 < n_parts; i0 += static_cast<int64_t>(L) * kInt8xUnroll) {
#pragma unroll
        for (int u = 0; u < kInt8xUnroll; ++u) {
          const int64_t i = min(i0 + L * u, n_parts - 1);
          const int64_t blk = i / X::PARTS;
          const float v = X::dot(w + blk * D::BYTES, static_cast<int>(i % X::PARTS), xq, blk * (D::QK / 32));
          acc += i0 + L * u < n_parts ? v : 0.0f;
        }
      }
#pragma unroll
      for (int o = L / 2; o > 0; o >>= 1)
        acc += __shfl_xor_sync(0xffffffffu, acc, o);
      if (sub == 0 && valid) store_y(p.y, q.y_off + row, acc, p.y_f16);
    }
  }
}

template <class D> __global__ void dequant_kernel(const DequantParams p) {
  const int64_t n_parts = p.cols / D::QK * D::PARTS;
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= n_parts) return;
  const int64_t blk = i / D::PARTS;
  const int part = static_cast<int>(i % D::PARTS);
  for (int64_t r = blockIdx.y; r < p.n_rows; r += gridDim.y) {
    const int64_t src = p.ids ? p.ids[r] : p.row0 + r;
    float v[D::V];
    if (src < 0 || src >= p.n_src_rows) {
#pragma unroll
      for (int k = 0; k < D::V; ++k)
        v[k] = __int_as_float(0x7fc00000);
    } else {
      D::decode(p.w + src * p.row_bytes + blk * D::BYTES, part, v);
    }
#pragma unroll
    for (int g = 0; g < D::V / 4; ++g) {
      const int64_t o = r * p.cols + blk * D::QK + D::start(part, g);
      if (p.out_f16) {
        store_half4(static_cast<__half *>(p.out) + o, v[4 * g], v[4 * g + 1], v[4 * g + 2], v[4 * g + 3]);
      } else {
        *reinterpret_cast<float4 *>(static_cast<float *>(p.out) + o) =
            make_float4(v[4 * g], v[4 * g + 1], v[4 * g + 2], v[4 * g + 3]);
      }
    }
  }
}

// Plain types whose rows are not a multiple of 8 elements: element by element (rare, small).
template <class D> __global__ void gemv_scalar_kernel(const GemvParams p) {
  const int lane = threadIdx.x % 32;
  const int64_t row = static_cast<int64_t>(blockIdx.x) * kGemvWarps + threadIdx.x / 32;
  if (row >= p.rows) return;
  const uint8_t *w = p.w + row * p.row_bytes;
  for (int64_t t = blockIdx.y; t < p.n_tokens; t += gridDim.y) {
    float acc = 0.0f;
    for (int64_t c = lane; c < p.cols; c += 32)
      acc += D::scalar(w, c) * load_x1(p.x, t * p.cols + c, p.x_f16);
    acc = warp_sum(acc);
    if (lane == 0) store_y(p.y, t * p.rows + row, acc, p.y_f16);
  }
}

template <class D> __global__ void dequant_scalar_kernel(const DequantParams p) {
  const int64_t c = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (c >= p.cols) return;
  for (int64_t r = blockIdx.y; r < p.n_rows; r += gridDim.y) {
    const int64_t src = p.ids ? p.ids[r] : p.row0 + r;
    const float v =
        (src < 0 || src >= p.n_src_rows) ? __int_as_float(0x7fc00000) : D::scalar(p.w + src * p.row_bytes, c);
    store_y(p.out, r * p.cols + c, v, p.out_f16);
  }
}

// False (nothing launched) when the int8 kernel cannot take the shape: too many columns for the
// shared-memory stage, or 16-byte loads that the weight's alignment does not allow; for a mixed
// stack (DB, seg.alt) also two types that split their rows differently (each row must be split as
// its type's own launch splits it, for the same bits).
template <class D, class DB = D>
bool launch_int8x(const GemvParams &p, cudaStream_t s, const Segments &seg = {}, const Fusion &fu = {}) {
  constexpr bool kMixed = !std::is_same_v<D, DB>;
  if (p.cols > kInt8xMaxCols || p.cols % 32 != 0) return false;
  if (kMixed && (!seg.mixed() || seg.swiglu || seg.alt < 1)) return false;
  if (XDot<D>::kAligned16) {
    if (reinterpret_cast<uintptr_t>(p.w) % 16 != 0 || p.row_bytes % 16 != 0 || p.expert_bytes % 16 != 0)
      return false;
    for (int i = 0; i < (kMixed ? seg.alt : seg.n); ++i)
      if (reinterpret_cast<uintptr_t>(seg.w[i]) % 16 != 0) return false;
  }
  if constexpr (kMixed) {
    if (XDot<DB>::kAligned16) {
      if (seg.alt_row_bytes % 16 != 0) return false;
      for (int i = seg.alt; i < seg.n; ++i)
        if (reinterpret_cast<uintptr_t>(seg.w[i]) % 16 != 0) return false;
    }
    if (int8x_split(p.cols / D::QK * XDot<D>::PARTS) != int8x_split(p.cols / DB::QK * XDot<DB>::PARTS))
      return false;
  }
  const int64_t problems = p.ids ? p.n_tokens * p.n_slots : p.n_tokens;
  if (gemv_variant() == 4 && seg.n == 0 &&
      !fu.any()) { // lane groups; linear_multi/linear_fused need variant 3
    // lanes per row: the widest group that still fills 3/4 of its slots
    const int64_t n_parts = p.cols / D::QK * XDot<D>::PARTS;
    const int lanes = n_parts >= 32 * kInt8xUnroll * 3 / 4   ? 32
                      : n_parts >= 16 * kInt8xUnroll * 3 / 4 ? 16
                                                             : 8;
    const int64_t rows_per_cta = kInt8xWarps * (32 / lanes);
    const dim3 grid(static_cast<unsigned>(std::min<int64_t>((p.rows + rows_per_cta - 1) / rows_per_cta,
                                                            int8x_ctas_per_sm() * device_sm_count())),
                    grid_y(problems));
    const size_t smem = int8x_smem_bytes(p.cols);
    const auto kernel = lanes == 32   ? gemv_int8x_groups_kernel<D, 32>
                        : lanes == 16 ? gemv_int8x_groups_kernel<D, 16>
                                      : gemv_int8x_groups_kernel<D, 8>;
    (void)wo::pdl::launch(kernel, grid, kInt8xWarps * 32, smem, s, p);
    return true;
  }
  const int ksplit = int8x_split(p.cols / D::QK * XDot<D>::PARTS);
  // More rows than one 8-warp CTA per SM takes: CTAs of kInt8xWarpsWide warps, one per SM, so that
  // each SM stages x once rather than once per CTA (Qwen's 896 x 4864 Q6_K down projection: 448
  // CTAs of 2 rows, 3-4 per SM, each staging 4864 activations).
  const auto ctas_of = [&](int warps) { // CTAs of `warps` warps that the rows need
    const int64_t rows_per_cta = warps / ksplit;
    return (p.rows + rows_per_cta - 1) / rows_per_cta;
  };
  // Wide only while its CTAs still cover 3/4 of the SMs: a stack of 1152 rows of one warp each (Qwen2.5's
  // mixed q/k/v) would otherwise run 36 CTAs on 36 SMs instead of 144 over all of them.
  const bool wide = int8x_wide() && ctas_of(kInt8xWarps) > device_sm_count() &&
                    4 * ctas_of(kInt8xWarpsWide) >= 3 * device_sm_count();
  const bool stacked = seg.n > 0 && !seg.swiglu;
  const bool fit = !wide && stacked && int8x_fit() && ctas_of(kInt8xWarps) > device_sm_count() &&
                   ctas_of(kInt8xWarpsFit) <= device_sm_count();
  const int warps = wide ? kInt8xWarpsWide : fit ? kInt8xWarpsFit : kInt8xWarps;
  // A failed launch is left for the caller's cudaGetLastError check.
  const auto kernel = with_act_terms([&](auto terms) {
    constexpr int kT = decltype(terms)::value;
    const auto of_width = [&](auto width) {
      constexpr int kW = decltype(width)::value;
      if constexpr (kMixed)
        return gemv_int8x_kernel<D, Int8xMode::Stacked, kT, kW, DB>;
      else
        return seg.n == 0   ? gemv_int8x_kernel<D, Int8xMode::Plain, kT, kW>
               : seg.swiglu ? gemv_int8x_kernel<D, Int8xMode::Swiglu, kT, kW>
                            : gemv_int8x_kernel<D, Int8xMode::Stacked, kT, kW>;
    };
    using Kernel = decltype(of_width(std::integral_constant<int, kInt8xWarps>{}));
    if (fit) { // stacked passes only (the other modes have no instance of this width)
      constexpr int kW = kInt8xWarpsFit;
      if constexpr (kMixed)
        return Kernel{gemv_int8x_kernel<D, Int8xMode::Stacked, kT, kW, DB>};
      else
        return Kernel{gemv_int8x_kernel<D, Int8xMode::Stacked, kT, kW>};
    }
    return wide ? of_width(std::integral_constant<int, kInt8xWarpsWide>{})
                : of_width(std::integral_constant<int, kInt8xWarps>{});
  });
  const size_t smem = align16(int8x_smem_bytes(p.cols)) + norm_copy_bytes(fu, p.cols);
  // One wave: CTAs per SM as many as the instance's registers and shared memory let fit, at most
  // int8x_ctas_per_sm() (a plain instance may hold more registers than four CTAs per SM allow).
  // (kInt8xCtasPerSm where the runtime cannot say)
  const int fit_sm = wo::occupancy::ctas_per_sm(kernel, warps * 32, smem);
  const int64_t per_sm = wide ? 1 : std::min(int8x_ctas_per_sm(), fit_sm > 0 ? fit_sm : kInt8xCtasPerSm);
  const dim3 grid(static_cast<unsigned>(std::min<int64_t>(ctas_of(warps), per_sm * device_sm_count())),
                  grid_y(problems));
  (void)wo::pdl::launch(kernel, grid, warps * 32, smem, s, p, seg, fu, ksplit);
  return true;
}

template <class D> void launch_gemv(const GemvParams &p, int nt, void *stream) {
  const auto s = static_cast<cudaStream_t>(stream);
  const int64_t problems = p.ids ? p.n_tokens * p.n_slots : (p.n_tokens + nt - 1) / nt;
  const dim3 grid(static_cast<unsigned>((p.rows + kGemvWarps - 1) / kGemvWarps), grid_y(problems));
  const dim3 block(kGemvWarps * 32);
  if constexpr (has_xdot<D>()) {
    if (gemv_variant() == 5 && nt == 1 && unit_weight<D>(p.rows, p.row_bytes) && launch_units<D>(p, s))
      return;
    if (gemv_variant() >= 3 && nt == 1 && launch_int8x<D>(p, s)) return;
  }
  if constexpr (!has_xdot<D>()) { // plain float types: few rows get a CTA each (gemv_wide_kernel)
    if (nt == 1 && p.rows < static_cast<int64_t>(kGemvWarps) * device_sm_count() &&
        p.cols / D::QK * D::PARTS >= kWideThreads) {
      (void)wo::pdl::launch(gemv_wide_kernel<D>, dim3(static_cast<unsigned>(p.rows), grid.y), kWideThreads, 0,
                            s, p);
      return;
    }
  }
  switch (nt) { // a failed launch is left for the caller's cudaGetLastError check
  case 1: (void)wo::pdl::launch(gemv_kernel<D, 1>, grid, block, 0, s, p); break;
  case 2: (void)wo::pdl::launch(gemv_kernel<D, 2>, grid, block, 0, s, p); break;
  case 4: (void)wo::pdl::launch(gemv_kernel<D, 4>, grid, block, 0, s, p); break;
  default: (void)wo::pdl::launch(gemv_kernel<D, 8>, grid, block, 0, s, p); break;
  }
}

// The second type a stack of type D may end with in one launch (Segments::alt; linear_fused, SDK
// 1.8), or void. Only pairs a quantizer writes and a measurement backs: llama.cpp's Q4_K_M of a
// model whose rows are not a multiple of 256 (Qwen2.5-0.5B, 896 columns) stores q and k as Q5_0
// and v as Q8_0 in half of the layers, which took two launches per layer (the v pass ~3.5 us).
template <class D> struct StackPartner { using type = void; };
template <> struct StackPartner<DecQ5_0> { using type = DecQ8_0; };
template <class D> constexpr uint32_t stack_partner_type() {
  if constexpr (std::is_void_v<typename StackPartner<D>::type>)
    return kNoStackPartner;
  else
    return StackPartner<D>::type::kType;
}

// A mixed stack in one launch: variant 3's kernel with both types' dots, where no segment is
// variant 5's (a stack goes to one kernel; variant 5 would be another kernel for its segments).
template <class D>
bool launch_gemv_multi_mixed(const GemvParams &p, const Segments &seg, const Fusion &fu, cudaStream_t s) {
  using DB = typename StackPartner<D>::type;
  if constexpr (std::is_void_v<DB>) {
    return false;
  } else {
    if (p.ids || seg.swiglu || (gemv_variant() != 3 && gemv_variant() != 5)) return false;
    if (gemv_variant() == 5)
      for (int i = 0; i < seg.n; ++i)
        if (i < seg.alt ? unit_weight<D>(seg.rows(i), p.row_bytes)
                        : unit_weight<DB>(seg.rows(i), seg.alt_row_bytes))
          return false;
    return launch_int8x<D, DB>(p, s, seg, fu);
  }
}

// linear_multi's, linear_swiglu's and linear_fused's one launch: the int8 GEMV (variant 5 for the
// types with unit dots, else variant 3) reads the stacked weights' rows (variant 3 also gate's and
// up's rows in one warp, or a stack that ends in the type's partner) or one weight, with the
// fusion's prologue and epilogue; every other kernel and type declines.
template <class D>
bool launch_gemv_multi(const GemvParams &p, const Segments &seg, const Fusion &fu, void *stream) {
  if constexpr (has_xdot<D>()) {
    // (with ids: linear_id_glu, variant 5 only)
    if (p.n_tokens != 1 || (p.ids && !seg.swiglu) || (seg.n == 0 && !fu.any())) return false;
    const auto s = static_cast<cudaStream_t>(stream);
    if (seg.mixed()) return !fu.y_staged && launch_gemv_multi_mixed<D>(p, seg, fu, s);
    // Variant 5 where each weight alone would run it, variant 3 where none would; a stack only
    // partly variant 5's, or one variant 5 declines, goes back to the host, whose separate
    // linears then sum each row in the order this launch would have.
    if (gemv_variant() == 5) {
      int units = 0;
      for (int i = 0; i < std::max(seg.n, 1); ++i)
        units += unit_weight<D>(seg.n ? seg.rows(i) : p.rows, p.row_bytes);
      if (units == std::max(seg.n, 1)) return launch_units<D>(p, s, seg, fu);
      if (units > 0) return false;
    }
    if (p.ids || fu.y_staged) return false; // (a staged output: the unit GEMV's SwiGLU only)
    if (gemv_variant() == 3 || gemv_variant() == 5) return launch_int8x<D>(p, s, seg, fu);
  }
  return false;
}

template <class D> void launch_dequant(const DequantParams &p, void *stream) {
  const int64_t n_parts = p.cols / D::QK * D::PARTS;
  const dim3 grid(static_cast<unsigned>((n_parts + kDequantThreads - 1) / kDequantThreads), grid_y(p.n_rows));
  dequant_kernel<D><<<grid, kDequantThreads, 0, static_cast<cudaStream_t>(stream)>>>(p);
}

template <class D> void launch_gemv_scalar(const GemvParams &p, void *stream) {
  const dim3 grid(static_cast<unsigned>((p.rows + kGemvWarps - 1) / kGemvWarps), grid_y(p.n_tokens));
  gemv_scalar_kernel<D><<<grid, kGemvWarps * 32, 0, static_cast<cudaStream_t>(stream)>>>(p);
}

template <class D> void launch_dequant_scalar(const DequantParams &p, void *stream) {
  const dim3 grid(static_cast<unsigned>((p.cols + kDequantThreads - 1) / kDequantThreads), grid_y(p.n_rows));
  dequant_scalar_kernel<D><<<grid, kDequantThreads, 0, static_cast<cudaStream_t>(stream)>>>(p);
}

} // namespace wo::quant::dev
