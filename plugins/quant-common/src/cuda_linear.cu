// The GPU entry points shared by the codecs: validation, GEMV vs GEMM choice, cuBLAS for prefill,
// error reporting. Type-specific work happens in the TypeOps launchers (linear_kernels.cuh).
#include "quant_common/cpu_codec.hpp"
#include "quant_common/cuda_ops.hpp"
#include "quant_common/linear_kernels.cuh"

#include <worker/env_switch.hpp>
#include <worker/ggml_types.hpp>
#include <worker/rms_norm.cuh>
#include <worker/sdk.hpp>
#include <worker/staged_x.hpp>

#include <cublas_v2.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdlib>
#include <string>

namespace wo::quant {
namespace {

std::string describe(const wo_tensor *w) {
  std::string s = "tensor '" + std::string(w && w->name ? w->name : "?") + "' (" +
                  type_label(w ? w->ggml_type : 9999u) + ", ne=[";
  for (uint32_t i = 0; w && i < std::max<uint32_t>(1, w->n_dims) && i < 4; ++i)
    s += (i ? "," : "") + std::to_string(w->ne[i]);
  return s + "])";
}

void check_cuda(cudaError_t e, const std::string &what) {
  if (e != cudaSuccess)
    throw Error(WO_ERR_CUDA, what + ": " + cudaGetErrorName(e) + " (" + cudaGetErrorString(e) + ")");
}

// `what` is a callable building the message: the decode path must not pay for strings.
template <class W> void check_launch(const W &what) {
  const cudaError_t e = cudaGetLastError();
  if (e != cudaSuccess) check_cuda(e, what() + ": kernel launch");
}

// `what` is a callable building the message, as for check_launch.
template <class W> void check_cublas(cublasStatus_t s, const W &what) {
  if (s != CUBLAS_STATUS_SUCCESS)
    throw Error(WO_ERR_CUDA, what() + ": cuBLAS status " + std::to_string(static_cast<int>(s)));
}

// A host service's status; `what` is a callable building the message, as for check_launch.
template <class W> void check_host(wo_status s, const W &what) {
  if (s != WO_OK) check(s, what());
}

struct Shape {
  int64_t cols, rows; // rows of one matrix (one expert for 3-D weights)
  uint64_t row_bytes;
};

// w's shape, w being of `type` (the kernels it was routed to).
Shape weight_shape_as(uint32_t type, const wo_tensor *w, const char *op, bool experts) {
  if (!w) throw Error(WO_ERR_INVALID_ARGUMENT, std::string(op) + ": weight tensor is NULL");
  if (w->ggml_type != type)
    throw Error(WO_ERR_INTERNAL,
                std::string(op) + ": " + describe(w) + " routed to the " + type_label(type) + " kernels");
  if (!w->data)
    throw Error(WO_ERR_INVALID_ARGUMENT,
                std::string(op) + ": " + describe(w) + " has no device copy (data is NULL)");
  Shape s{w->ne[0], 1, 0};
  for (uint32_t i = 1; i < std::min<uint32_t>(w->n_dims, 4); ++i)
    if (!experts || i < 2) s.rows *= w->ne[i];
  if (s.cols <= 0 || !wo::ggml::is_row_valid(w->ggml_type, s.cols))
    check_row_len(w->ggml_type, s.cols, std::string(op) + ": " + describe(w));
  s.row_bytes = w->nb1 ? w->nb1 : wo::ggml::row_bytes(w->ggml_type, s.cols);
  if (s.row_bytes < wo::ggml::row_bytes(w->ggml_type, s.cols))
    throw Error(WO_ERR_FORMAT, std::string(op) + ": " + describe(w) + ": nb1 " + std::to_string(w->nb1) +
                                   " is smaller than a row (" +
                                   std::to_string(wo::ggml::row_bytes(w->ggml_type, s.cols)) + " bytes)");
  return s;
}

Shape weight_shape(const TypeOps &ops, const wo_tensor *w, const char *op, bool experts) {
  return weight_shape_as(ops.type, w, op, experts);
}

void check_dtype(wo_dtype t, const char *what, const char *op) {
  if (t != WO_DTYPE_F32 && t != WO_DTYPE_F16)
    throw Error(WO_ERR_UNSUPPORTED, std::string(op) + ": " + what +
                                        " type must be F32 (0) or F16 (1), found " + std::to_string(t));
}

void check_aligned(const void *p, size_t a, const char *what, const char *op) {
  if (!p) throw Error(WO_ERR_INVALID_ARGUMENT, std::string(op) + ": " + what + " is NULL");
  if (reinterpret_cast<uintptr_t>(p) % a != 0)
    throw Error(WO_ERR_INVALID_ARGUMENT, std::string(op) + ": " + what + " must be " + std::to_string(a) +
                                             "-byte aligned, found address ending in 0x" +
                                             std::to_string(reinterpret_cast<uintptr_t>(p) % 256));
}

bool vector_path(const TypeOps &ops, int64_t cols) { return cols % ops.block_elems == 0; }

int tokens_per_pass(int64_t n) { return n <= 1 ? 1 : n == 2 ? 2 : n <= 4 ? 4 : 8; }

// x16[j] = FP16 of the activation row of problem pairs[j] (one CTA per listed pair).
__global__ void gather_x16_kernel(GemvParams p, const int32_t *pairs, const int32_t *counters, __half *x16) {
  const int64_t j = blockIdx.x;
  if (j >= counters[1]) return;
  const int64_t src = dev::problem_x_off(p, pairs[j]);
  for (int64_t c = static_cast<int64_t>(threadIdx.x) * 4; c < p.cols;
       c += static_cast<int64_t>(blockDim.x) * 4) {
    const float4 v = dev::load_x4(p.x, src + c, p.x_f16); // FP16 input: an exact round trip
    dev::store_half4(x16 + j * p.cols + c, v.x, v.y, v.z, v.w);
  }
}

__global__ void f32_to_f16_kernel(const float *x, __half *y, int64_t n) {
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x)
    y[i] = __float2half_rn(x[i]);
}

uint64_t align256(uint64_t v) { return (v + 255) & ~uint64_t{255}; }

// Counting sort of linear_id's problems by expert, one CTA (problems <= n_batch * slots):
// pairs[] lists problem indices expert by expert; tiles[4*i] = {expert, first pair, count <= TN, 0};
// counters = {tiles, pairs listed}.
// Problems whose id is outside [0, n_expert) get NaN rows here (the GEMV path's behaviour) and no
// tile. The order inside one expert's run depends on atomics, which changes nothing numerically:
// each output column of the GEMM depends on its own problem only.
__global__ void group_by_expert_kernel(GemvParams p, int32_t *pairs, int32_t *tiles, int32_t *counters) {
  extern __shared__ int32_t counts[]; // [n_expert] counts, then [n_expert] next free slot
  int32_t *cursor = counts + p.n_expert;
  const int64_t n_probs = p.n_tokens * p.n_slots;
  for (int64_t e = threadIdx.x; e < p.n_expert; e += blockDim.x)
    counts[e] = 0;
  __syncthreads();
  for (int64_t i = threadIdx.x; i < n_probs; i += blockDim.x) {
    const int32_t e = p.ids[i];
    if (e >= 0 && e < p.n_expert) atomicAdd(&counts[e], 1);
  }
  __syncthreads();
  if (threadIdx.x == 0) { // experts are few (<= kGroupMaxExperts): a serial scan is cheapest
    int32_t off = 0, t = 0;
    for (int64_t e = 0; e < p.n_expert; ++e) {
      const int32_t c = counts[e];
      cursor[e] = off;
      for (int32_t j = 0; j < c; j += kGroupTileProblems) {
        tiles[4 * t] = static_cast<int32_t>(e);
        tiles[4 * t + 1] = off + j;
        tiles[4 * t + 2] = min(kGroupTileProblems, c - j);
        tiles[4 * t + 3] = 0;
        ++t;
      }
      off += c;
    }
    counters[0] = t;
    counters[1] = off;
  }
  __syncthreads();
  for (int64_t i = threadIdx.x; i < n_probs; i += blockDim.x) {
    const int32_t e = p.ids[i];
    if (e >= 0 && e < p.n_expert) {
      pairs[atomicAdd(&cursor[e], 1)] = static_cast<int32_t>(i);
    } else {
      for (int64_t r = 0; r < p.rows; ++r)
        dev::store_y(p.y, i * p.rows + r, __int_as_float(0x7fc00000), p.y_f16);
    }
  }
}

// Y = W X for many tokens: dequantize row chunks to FP16 scratch, cuBLAS GEMM with FP32 compute.
// `what` builds the call's description only for an error message: a short prompt's prefill is bound
// by the host's time per linear (docs/perf.md), strings included.
template <class W>
void gemm_path(const TypeOps &ops, const wo_host *host, const wo_tensor *w, const Shape &sh, const void *x,
               wo_dtype x_type, void *y, wo_dtype y_type, int64_t n, const W &what) {
  if (!host->cublas_handle) throw Error(WO_ERR_NO_DEVICE, what() + ": the host offers no cuBLAS handle");
  auto handle = static_cast<cublasHandle_t>(host->cublas_handle);
  auto stream = static_cast<cudaStream_t>(host->cuda_stream);
  check_cublas(cublasSetStream(handle, stream), [&] { return what() + ": cublasSetStream"; });
  const float alpha = 1.0f, beta = 0.0f;
  const cudaDataType_t yt = y_type == WO_DTYPE_F16 ? CUDA_R_16F : CUDA_R_32F;
  const size_t y_elem = y_type == WO_DTYPE_F16 ? 2 : 4;

  // F32 weights with F32 activations need no conversion: exact FP32 GEMM straight on the weight.
  if (w->ggml_type == wo::ggml::F32 && x_type == WO_DTYPE_F32 &&
      sh.row_bytes == static_cast<uint64_t>(sh.cols) * 4) {
    check_cublas(cublasGemmEx(handle, CUBLAS_OP_T, CUBLAS_OP_N, static_cast<int>(sh.rows),
                              static_cast<int>(n), static_cast<int>(sh.cols), &alpha, w->data, CUDA_R_32F,
                              static_cast<int>(sh.cols), x, CUDA_R_32F, static_cast<int>(sh.cols), &beta, y,
                              yt, static_cast<int>(sh.rows), CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
                 [&] { return what() + ": cublasGemmEx (F32)"; });
    return;
  }

  const uint64_t x16_bytes = x_type == WO_DTYPE_F16 ? 0 : align256(static_cast<uint64_t>(n) * sh.cols * 2);
  const int64_t chunk_rows = std::max<int64_t>(
      1, std::min<int64_t>(sh.rows,
                           static_cast<int64_t>(kGemmScratchBytes / (static_cast<uint64_t>(sh.cols) * 2))));
  void *scratch = nullptr;
  if (!host->scratch) throw Error(WO_ERR_NO_DEVICE, what() + ": the host offers no scratch service");
  const uint64_t scratch_bytes = x16_bytes + static_cast<uint64_t>(chunk_rows) * sh.cols * 2;
  check_host(host->scratch(host->ctx, scratch_bytes, &scratch),
             [&] { return what() + ": scratch of " + std::to_string(scratch_bytes) + " bytes"; });
  const void *x16 = x;
  if (x16_bytes) {
    auto *dst = static_cast<__half *>(scratch);
    const int64_t total = n * sh.cols;
    const unsigned blocks = static_cast<unsigned>(std::min<int64_t>((total + 255) / 256, 4096));
    f32_to_f16_kernel<<<blocks, 256, 0, stream>>>(static_cast<const float *>(x), dst, total);
    check_launch([&] { return what() + ": activation conversion"; });
    x16 = dst;
  }
  auto *wbuf = reinterpret_cast<__half *>(static_cast<char *>(scratch) + x16_bytes);
  for (int64_t r0 = 0; r0 < sh.rows; r0 += chunk_rows) {
    const int64_t cr = std::min(chunk_rows, sh.rows - r0);
    DequantParams dp{
        static_cast<const uint8_t *>(w->data), sh.row_bytes, sh.cols, sh.rows, nullptr, r0, cr, wbuf, true};
    (vector_path(ops, sh.cols) ? ops.dequant : ops.dequant_scalar)(dp, stream);
    check_launch(
        [&] { return what() + ": dequantize rows " + std::to_string(r0) + ".." + std::to_string(r0 + cr); });
    check_cublas(
        cublasGemmEx(handle, CUBLAS_OP_T, CUBLAS_OP_N, static_cast<int>(cr), static_cast<int>(n),
                     static_cast<int>(sh.cols), &alpha, wbuf, CUDA_R_16F, static_cast<int>(sh.cols), x16,
                     CUDA_R_16F, static_cast<int>(sh.cols), &beta, static_cast<char *>(y) + r0 * y_elem, yt,
                     static_cast<int>(sh.rows), CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
        [&] {
          return what() + ": cublasGemmEx rows " + std::to_string(r0) + ".." + std::to_string(r0 + cr);
        });
  }
}

// WORKER_MOE_GROUPED=0: linear_id always takes the per-problem GEMV path (debugging switch).
bool grouped_enabled() {
  static const bool on = !wo::env_switched_off("WORKER_MOE_GROUPED");
  return on;
}

int64_t max_group_tiles(int64_t n_probs, int64_t n_expert) {
  return (n_probs + kGroupTileProblems - 1) / kGroupTileProblems + n_expert;
}

// Many tokens: group the problems by expert on the device, gather their activations as FP16 in
// that order, then one grouped GEMM launch (grouped_gemm.cuh). Scratch: the sorted problem list,
// the worst-case tile list, two counters and the FP16 activations.
template <class W>
void grouped_path(const TypeOps &ops, const wo_host *host, const GemvParams &p, const W &what) {
  const int64_t n_probs = p.n_tokens * p.n_slots;
  const int64_t max_tiles = max_group_tiles(n_probs, p.n_expert);
  const uint64_t pairs_bytes = align256(static_cast<uint64_t>(n_probs) * 4);
  const uint64_t tiles_bytes = align256(static_cast<uint64_t>(max_tiles) * 16);
  const uint64_t x16_bytes = align256(static_cast<uint64_t>(n_probs) * static_cast<uint64_t>(p.cols) * 2);
  const uint64_t bytes = pairs_bytes + tiles_bytes + 256 + x16_bytes;
  if (!host->scratch) throw Error(WO_ERR_NO_DEVICE, what() + ": the host offers no scratch service");
  void *scratch = nullptr;
  check_host(host->scratch(host->ctx, bytes, &scratch),
             [&] { return what() + ": scratch of " + std::to_string(bytes) + " bytes"; });
  char *base = static_cast<char *>(scratch);
  auto *pairs = reinterpret_cast<int32_t *>(base);
  auto *tiles = reinterpret_cast<int32_t *>(base + pairs_bytes);
  auto *counters = reinterpret_cast<int32_t *>(base + pairs_bytes + tiles_bytes);
  auto *x16 = reinterpret_cast<__half *>(base + pairs_bytes + tiles_bytes + 256);
  const auto stream = static_cast<cudaStream_t>(host->cuda_stream);
  group_by_expert_kernel<<<1, 1024, static_cast<size_t>(p.n_expert) * 8, stream>>>(p, pairs, tiles, counters);
  check_launch([&] { return what() + ": grouping by expert"; });
  gather_x16_kernel<<<static_cast<unsigned>(n_probs), 256, 0, stream>>>(p, pairs, counters, x16);
  check_launch([&] { return what() + ": FP16 activation gather"; });
  const cudaError_t e =
      static_cast<cudaError_t>(ops.grouped(p, x16, pairs, tiles, counters, max_tiles, stream));
  if (e != cudaSuccess) check_cuda(e, what() + ": grouped expert GEMM launch");
}

} // namespace

int64_t gemv_max_tokens() {
  static const int64_t v = env_int("WORKER_GEMV_MAX_TOKENS", 0, INT64_MAX, kGemvMaxTokens);
  return v;
}

int64_t grouped_min_tokens() {
  static const int64_t v = env_int("WORKER_GROUPED_MIN_TOKENS", 0, INT64_MAX, kGroupedMinTokens);
  return v;
}

void run_linear(const TypeOps &ops, const wo_host *host, const wo_tensor *w, const void *x, wo_dtype x_type,
                void *y, wo_dtype y_type, int64_t n_tokens) {
  if (!host) throw Error(WO_ERR_INVALID_ARGUMENT, "linear: host is NULL");
  const Shape sh = weight_shape(ops, w, "linear", false);
  const auto what = [&] { return "linear on " + describe(w) + " with n_tokens=" + std::to_string(n_tokens); };
  check_dtype(x_type, "x", "linear");
  check_dtype(y_type, "y", "linear");
  if (n_tokens < 0) throw Error(WO_ERR_INVALID_ARGUMENT, what() + ": n_tokens must be >= 0");
  if (n_tokens == 0) return;
  const bool vec = vector_path(ops, sh.cols);
  if (!vec && !ops.gemv_scalar)
    throw Error(WO_ERR_FORMAT,
                what() + ": row length is not a multiple of " + std::to_string(ops.block_elems));
  check_aligned(x, vec ? (x_type == WO_DTYPE_F16 ? 8 : 16) : 4, "x", "linear");
  check_aligned(y, 4, "y", "linear");
  GemvParams p{static_cast<const uint8_t *>(w->data),
               sh.row_bytes,
               0,
               sh.rows,
               sh.cols,
               x,
               x_type == WO_DTYPE_F16,
               y,
               y_type == WO_DTYPE_F16,
               n_tokens,
               nullptr,
               1,
               1,
               1};
  if (!vec) {
    ops.gemv_scalar(p, host->cuda_stream);
  } else if (n_tokens <= gemv_max_tokens()) {
    ops.gemv(p, tokens_per_pass(n_tokens), host->cuda_stream);
  } else {
    gemm_path(ops, host, w, sh, x, x_type, y, y_type, n_tokens, what);
    return;
  }
  check_launch(what);
}

namespace {
// wo_linear_fusion as far as the caller's struct_size reaches (NULL: nothing folded).
Fusion read_fusion(const wo_linear_fusion *f) {
  Fusion fu;
  if (!f) return fu;
  if (WO_HAS_FIELD(wo_linear_fusion, f->struct_size, norm_weight)) fu.norm_w = f->norm_weight;
  if (WO_HAS_FIELD(wo_linear_fusion, f->struct_size, norm_eps)) fu.norm_eps = f->norm_eps;
  if (WO_HAS_FIELD(wo_linear_fusion, f->struct_size, bias)) fu.bias = f->bias;
  if (WO_HAS_FIELD(wo_linear_fusion, f->struct_size, accumulate)) fu.accumulate = f->accumulate != 0;
  if (WO_HAS_FIELD(wo_linear_fusion, f->struct_size, glu_up)) fu.glu_up = f->glu_up;
  if (WO_HAS_FIELD(wo_linear_fusion, f->struct_size, x_staged))
    fu.x_staged = static_cast<const uint8_t *>(f->x_staged);
  if (WO_HAS_FIELD(wo_linear_fusion, f->struct_size, y_staged))
    fu.y_staged = static_cast<uint8_t *>(f->y_staged);
  fu.early = dev::gemv_early();
  fu.norm_late = fu.norm_w && dev::norm_late();
  return fu;
}
} // namespace

// The one entry behind linear_multi, linear_swiglu and linear_fused: `op_name` names the caller's
// service in messages, which are built only on failure (the decode path makes no strings).
static bool fused_pass(const TypeOps &ops, const wo_host *host, int32_t op, int32_t n,
                       const wo_tensor *const *w, const void *x, wo_dtype x_type, void *const *y,
                       wo_dtype y_type, int64_t n_tokens, const Fusion &fu, const char *op_name) {
  if (!host) throw Error(WO_ERR_INVALID_ARGUMENT, std::string(op_name) + ": host is NULL");
  if (op != WO_LINEAR_STACK && op != WO_LINEAR_SWIGLU && op != WO_LINEAR_GLU)
    throw Error(WO_ERR_INVALID_ARGUMENT, std::string(op_name) +
                                             ": op expected WO_LINEAR_STACK (0), WO_LINEAR_SWIGLU (1) or "
                                             "WO_LINEAR_GLU (2), found " +
                                             std::to_string(op));
  const bool swiglu = op == WO_LINEAR_SWIGLU;
  if ((op == WO_LINEAR_GLU) != (fu.glu_up != nullptr) || (op == WO_LINEAR_GLU && (n != 1 || fu.norm_w)))
    throw Error(WO_ERR_INVALID_ARGUMENT,
                std::string(op_name) +
                    ": glu_up goes with op WO_LINEAR_GLU, one weight and no norm; found op " +
                    std::to_string(op) + ", " + std::to_string(n) + " weights, glu_up " +
                    (fu.glu_up ? "set" : "NULL") + ", norm " + (fu.norm_w ? "set" : "NULL"));
  if (n < 1 || n > kMaxSegments || !w || !y || (swiglu && n != 2))
    throw Error(WO_ERR_INVALID_ARGUMENT, std::string(op_name) + ": expected " +
                                             (swiglu ? std::string("2 weights (gate, up)")
                                                     : "1.." + std::to_string(kMaxSegments) + " weights") +
                                             " and non-NULL arrays, found n=" + std::to_string(n));
  for (int32_t i = 0; i < n; ++i)
    if (!w[i])
      throw Error(WO_ERR_INVALID_ARGUMENT,
                  std::string(op_name) + ": weight " + std::to_string(i) + " is NULL");
  if (!x) throw Error(WO_ERR_INVALID_ARGUMENT, std::string(op_name) + ": x is NULL");
  if ((fu.bias && (n != 1 || swiglu)) || (fu.accumulate && swiglu))
    throw Error(WO_ERR_INVALID_ARGUMENT, std::string(op_name) +
                                             ": a bias needs exactly one weight and op WO_LINEAR_STACK, "
                                             "accumulate op WO_LINEAR_STACK; found op " +
                                             std::to_string(op) + " with " + std::to_string(n) + " weights");
  check_dtype(x_type, "x", op_name);
  check_dtype(y_type, "y", op_name);
  if (n_tokens != 1 || !ops.gemv_multi) return false;
  if (((fu.norm_w || fu.glu_up) && x_type != WO_DTYPE_F32) ||
      ((fu.bias || fu.accumulate) && y_type != WO_DTYPE_F32))
    return false;
  if (fu.glu_up && reinterpret_cast<uintptr_t>(fu.glu_up) % 16 != 0) return false; // float4 loads
  Segments seg;
  Shape first{};
  for (int32_t i = 0; i < n; ++i) {
    // A stack of ops' type, which may end in a run of its partner type (SDK 1.8: one launch for
    // Qwen2.5's Q5_0 q, k and Q8_0 v); any other mix runs apart.
    const bool alt = w[i]->ggml_type != ops.type;
    if (alt && (i == 0 || op != WO_LINEAR_STACK || ops.stack_partner == kNoStackPartner ||
                w[i]->ggml_type != ops.stack_partner))
      return false;
    if (!alt && seg.alt < i) return false; // the first type after the partner's run
    const Shape sh = weight_shape_as(alt ? ops.stack_partner : ops.type, w[i], op_name, false);
    if (alt && seg.alt > i) seg.alt = i, seg.alt_row_bytes = sh.row_bytes;
    if (i == 0)
      first = sh;
    else if (sh.cols != first.cols || sh.row_bytes != (alt ? seg.alt_row_bytes : first.row_bytes) ||
             (swiglu && sh.rows != first.rows))
      return false;
    if (!alt && !vector_path(ops, sh.cols)) return false;
    seg.w[i] = static_cast<const uint8_t *>(w[i]->data);
    seg.end[i] = (i ? seg.end[i - 1] : 0) + sh.rows;
    if (swiglu) continue; // one output: y[0]
    if (!y[i])
      throw Error(WO_ERR_INVALID_ARGUMENT,
                  std::string(op_name) + ": output " + std::to_string(i) + " is NULL");
    check_aligned(y[i], 4, "y", op_name);
    seg.y[i] = y[i];
  }
  if (!y[0]) throw Error(WO_ERR_INVALID_ARGUMENT, std::string(op_name) + ": output 0 is NULL");
  check_aligned(y[0], 4, "y", op_name);
  if (fu.norm_w && (!wo::rmsnorm::fits(first.cols) || reinterpret_cast<uintptr_t>(fu.norm_w) % 16 != 0))
    return false; // the norm kernel's register partition is what the prologue reproduces
  const int64_t rows = swiglu ? first.rows : seg.end[n - 1];
  seg.n = (n == 1 && !swiglu) ? 0 : n; // one weight: the plain kernel with the fusion
  seg.swiglu = swiglu;
  GemvParams p{};
  p.w = seg.w[0];
  p.rows = rows;
  p.cols = first.cols;
  p.row_bytes = first.row_bytes;
  check_aligned(x, x_type == WO_DTYPE_F16 ? 8 : 16, "x", op_name);
  p.x = x;
  p.x_f16 = x_type == WO_DTYPE_F16;
  p.y = y[0];
  p.y_f16 = y_type == WO_DTYPE_F16;
  p.n_tokens = 1;
  p.n_slots = p.x_slots = p.n_expert = 1;
  // A staged output only from linear_swiglu's unit GEMV (launch_units decides whether its grid can).
  if (fu.y_staged && (!swiglu || p.y_f16 || !wo::staged::fits(rows) ||
                      reinterpret_cast<uintptr_t>(fu.y_staged) % 16 != 0 || !wo::staged::enabled()))
    return false;
  Fusion f = fu;
  if (f.x_staged && (f.norm_w || f.glu_up || p.x_f16 || !wo::staged::fits(p.cols) ||
                     reinterpret_cast<uintptr_t>(f.x_staged) % 16 != 0 || !wo::staged::enabled()))
    f.x_staged = nullptr; // a hint only: x is read instead
  if (!ops.gemv_multi(p, seg, f, host->cuda_stream)) return false;
  check_launch([&] {
    std::string names;
    for (int32_t i = 0; i < n; ++i)
      names += (i ? ", " : "") + describe(w[i]);
    return std::string(op_name) + " on " + names;
  });
  return true;
}

bool run_linear_multi(const TypeOps &ops, const wo_host *host, int32_t n, const wo_tensor *const *w,
                      const void *x, wo_dtype x_type, void *const *y, wo_dtype y_type, int64_t n_tokens) {
  if (n == 1) { // one weight, nothing folded: not a one-launch case of its own
    check_dtype(x_type, "x", "linear_multi");
    check_dtype(y_type, "y", "linear_multi");
    return false;
  }
  return fused_pass(ops, host, WO_LINEAR_STACK, n, w, x, x_type, y, y_type, n_tokens, Fusion{},
                    "linear_multi");
}

bool run_linear_swiglu(const TypeOps &ops, const wo_host *host, const wo_tensor *gate, const wo_tensor *up,
                       const void *x, wo_dtype x_type, void *y, wo_dtype y_type, int64_t n_tokens) {
  if (!gate || !up || !x || !y)
    throw Error(WO_ERR_INVALID_ARGUMENT, "linear_swiglu: gate, up, x or y is NULL");
  const wo_tensor *w[2] = {gate, up};
  void *const ys[2] = {y, nullptr};
  return fused_pass(ops, host, WO_LINEAR_SWIGLU, 2, w, x, x_type, ys, y_type, n_tokens, Fusion{},
                    "linear_swiglu");
}

bool run_linear_fused(const TypeOps &ops, const wo_host *host, int32_t op, int32_t n,
                      const wo_tensor *const *w, const void *x, wo_dtype x_type, void *const *y,
                      wo_dtype y_type, int64_t n_tokens, const wo_linear_fusion *fusion) {
  const Fusion fu = read_fusion(fusion);
  if (op == WO_LINEAR_STACK && n == 1 && !fu.any()) return false; // a plain linear: the caller's own call
  return fused_pass(ops, host, op, n, w, x, x_type, y, y_type, n_tokens, fu, "linear_fused");
}

void run_gather(const TypeOps &ops, const wo_host *host, const wo_tensor *w, const int32_t *ids, int64_t n,
                void *out, wo_dtype out_type) {
  if (!host) throw Error(WO_ERR_INVALID_ARGUMENT, "gather_rows: host is NULL");
  const Shape sh = weight_shape(ops, w, "gather_rows", false);
  const auto what = [&] { return "gather_rows on " + describe(w) + " with n=" + std::to_string(n); };
  check_dtype(out_type, "out", "gather_rows");
  if (n < 0) throw Error(WO_ERR_INVALID_ARGUMENT, what() + ": n must be >= 0");
  if (n == 0) return;
  if (!ids) throw Error(WO_ERR_INVALID_ARGUMENT, what() + ": ids is NULL");
  const bool vec = vector_path(ops, sh.cols);
  if (!vec && !ops.dequant_scalar)
    throw Error(WO_ERR_FORMAT,
                what() + ": row length is not a multiple of " + std::to_string(ops.block_elems));
  check_aligned(out, vec ? (out_type == WO_DTYPE_F16 ? 8 : 16) : 4, "out", "gather_rows");
  DequantParams dp{static_cast<const uint8_t *>(w->data),
                   sh.row_bytes,
                   sh.cols,
                   sh.rows,
                   ids,
                   0,
                   n,
                   out,
                   out_type == WO_DTYPE_F16};
  (vec ? ops.dequant : ops.dequant_scalar)(dp, host->cuda_stream);
  check_launch(what);
}

namespace {
// A 3-D expert weight must hold all its experts' rows (nbytes, where the host says it).
template <class W>
void check_expert_bytes(const wo_tensor *w, const Shape &sh, int64_t n_expert, const W &where) {
  if (w->nbytes && w->nbytes < static_cast<uint64_t>(n_expert) * sh.rows * sh.row_bytes)
    throw Error(WO_ERR_FORMAT, where() + ": nbytes " + std::to_string(w->nbytes) +
                                   " is less than experts*rows*nb1 = " +
                                   std::to_string(static_cast<uint64_t>(n_expert) * sh.rows * sh.row_bytes));
}

// linear_id's problem set over expert weight w (x and y aligned for the vector loads).
GemvParams expert_problems(const wo_tensor *w, const Shape &sh, int64_t n_expert, const void *x,
                           wo_dtype x_type, void *y, wo_dtype y_type, int64_t n_tokens, const int32_t *ids,
                           int64_t n_slots, int64_t x_slots, const char *op) {
  check_aligned(x, x_type == WO_DTYPE_F16 ? 8 : 16, "x", op);
  check_aligned(y, 4, "y", op);
  return GemvParams{static_cast<const uint8_t *>(w->data),
                    sh.row_bytes,
                    sh.rows * sh.row_bytes,
                    sh.rows,
                    sh.cols,
                    x,
                    x_type == WO_DTYPE_F16,
                    y,
                    y_type == WO_DTYPE_F16,
                    n_tokens,
                    ids,
                    n_slots,
                    x_slots,
                    n_expert};
}
} // namespace

void run_linear_id(const TypeOps &ops, const wo_host *host, const wo_tensor *w, const void *x,
                   wo_dtype x_type, int64_t x_slots, void *y, wo_dtype y_type, int64_t n_tokens,
                   const int32_t *ids, int64_t n_slots, bool ids_settled) {
  if (!host) throw Error(WO_ERR_INVALID_ARGUMENT, "linear_id: host is NULL");
  const Shape sh = weight_shape(ops, w, "linear_id", true);
  const auto what = [&] {
    return "linear_id on " + describe(w) + " with n_tokens=" + std::to_string(n_tokens) +
           ", n_slots=" + std::to_string(n_slots) + ", x_slots=" + std::to_string(x_slots);
  };
  check_dtype(x_type, "x", "linear_id");
  check_dtype(y_type, "y", "linear_id");
  const int64_t n_expert = w->n_dims >= 3 ? w->ne[2] : 1;
  if (n_tokens < 0 || n_slots <= 0 || (x_slots != 1 && x_slots != n_slots))
    throw Error(WO_ERR_INVALID_ARGUMENT,
                what() + ": expected n_tokens >= 0, n_slots >= 1 and x_slots 1 or n_slots");
  check_expert_bytes(w, sh, n_expert, what);
  if (n_tokens == 0) return;
  if (!ids) throw Error(WO_ERR_INVALID_ARGUMENT, what() + ": ids is NULL");
  if (!vector_path(ops, sh.cols))
    throw Error(WO_ERR_UNSUPPORTED,
                what() + ": row length must be a multiple of " + std::to_string(ops.block_elems));
  GemvParams p =
      expert_problems(w, sh, n_expert, x, x_type, y, y_type, n_tokens, ids, n_slots, x_slots, "linear_id");
  p.ids_settled = ids_settled;
  // Grouped GEMM for many tokens, unless the tile grid would pass CUDA's grid.y limit.
  if (n_tokens >= grouped_min_tokens() && ops.grouped && grouped_enabled() && n_expert <= kGroupMaxExperts &&
      max_group_tiles(n_tokens * n_slots, n_expert) <= 65535) {
    grouped_path(ops, host, p, what);
    return;
  }
  ops.gemv(p, 1, host->cuda_stream);
  check_launch(what);
}

bool run_linear_id_glu(const TypeOps &ops, const wo_host *host, const wo_tensor *gate, const wo_tensor *up,
                       const void *x, wo_dtype x_type, void *y, wo_dtype y_type, int64_t n_tokens,
                       const int32_t *ids, int64_t n_slots, const wo_expert_glu *glu) {
  constexpr const char *kOp = "linear_id_glu";
  if (!host) throw Error(WO_ERR_INVALID_ARGUMENT, "linear_id_glu: host is NULL");
  if (!gate || !up || !x || !y || !ids || !glu)
    throw Error(WO_ERR_INVALID_ARGUMENT, "linear_id_glu: expected gate, up, x, y, ids and glu, found a NULL");
  const bool has_kind = WO_HAS_FIELD(wo_expert_glu, glu->struct_size, kind),
             has_params = WO_HAS_FIELD(wo_expert_glu, glu->struct_size, limit),
             has_bias = WO_HAS_FIELD(wo_expert_glu, glu->struct_size, up_bias);
  const int32_t kind = has_kind ? glu->kind : -1;
  if (kind != WO_GLU_SILU && kind != WO_GLU_CLAMPED)
    throw Error(WO_ERR_INVALID_ARGUMENT,
                "linear_id_glu: glu->kind expected WO_GLU_SILU (0) or WO_GLU_CLAMPED (1), "
                "found " +
                    std::to_string(kind) + " (struct_size " + std::to_string(glu->struct_size) + ")");
  if (kind == WO_GLU_CLAMPED && !has_params)
    throw Error(WO_ERR_INVALID_ARGUMENT, "linear_id_glu: WO_GLU_CLAMPED needs alpha and limit; struct_size " +
                                             std::to_string(glu->struct_size) + " ends before them");
  const float *gate_bias = has_bias ? glu->gate_bias : nullptr, *up_bias = has_bias ? glu->up_bias : nullptr;
  if ((gate_bias == nullptr) != (up_bias == nullptr))
    throw Error(WO_ERR_INVALID_ARGUMENT, "linear_id_glu: expected both biases or neither, found gate_bias " +
                                             std::string(gate_bias ? "set" : "NULL") + ", up_bias " +
                                             (up_bias ? "set" : "NULL"));
  check_dtype(x_type, "x", kOp);
  check_dtype(y_type, "y", kOp);
  if (n_slots <= 0)
    throw Error(WO_ERR_INVALID_ARGUMENT,
                "linear_id_glu: n_slots expected >= 1, found " + std::to_string(n_slots));
  const Shape g = weight_shape(ops, gate, kOp, true), u = weight_shape(ops, up, kOp, true);
  const int64_t n_expert = gate->n_dims >= 3 ? gate->ne[2] : 1;
  if (up->ggml_type != gate->ggml_type || u.cols != g.cols || u.rows != g.rows ||
      u.row_bytes != g.row_bytes || (up->n_dims >= 3 ? up->ne[2] : 1) != n_expert)
    return false; // the host routes one type; other shapes run apart
  for (const wo_tensor *w : {gate, up})
    check_expert_bytes(w, g, n_expert, [&] { return std::string(kOp) + " on " + describe(w); });
  if (n_tokens != 1 || !ops.gemv_multi || !vector_path(ops, g.cols)) return false;
  const GemvParams p = expert_problems(gate, g, n_expert, x, x_type, y, y_type, 1, ids, n_slots, 1, kOp);
  Segments seg;
  seg.n = 2;
  seg.swiglu = true;
  seg.w[0] = static_cast<const uint8_t *>(gate->data);
  seg.w[1] = static_cast<const uint8_t *>(up->data);
  seg.end[0] = g.rows;
  seg.end[1] = 2 * g.rows;
  seg.y[0] = y;
  Fusion fu;
  fu.glu_clamped = kind == WO_GLU_CLAMPED;
  fu.glu_alpha = fu.glu_clamped ? glu->alpha : 0.0f;
  fu.glu_limit = fu.glu_clamped ? glu->limit : 0.0f;
  fu.gate_bias = gate_bias;
  fu.up_bias = up_bias;
  if (!ops.gemv_multi(p, seg, fu, host->cuda_stream)) return false;
  check_launch([&] {
    return std::string(kOp) + " on " + describe(gate) + ", " + describe(up) +
           " with n_slots=" + std::to_string(n_slots);
  });
  return true;
}

} // namespace wo::quant
