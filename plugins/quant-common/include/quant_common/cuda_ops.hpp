// The CUDA framework shared by the quant plugins, seen from plain C++ (no CUDA types here).
//
// A codec plugin instantiates `make_type_ops<Decoder>()` (linear_kernels.cuh) for each type it
// serves and hands the resulting TypeOps to run_linear / run_gather / run_linear_id, which
// validate the request, pick GEMV (n_tokens <= kGemvMaxTokens) or dequantize-to-FP16 + cuBLAS GEMM,
// launch on host->cuda_stream and turn CUDA failures into wo::Error(WO_ERR_CUDA, ...).
#pragma once

#include <worker/env_switch.hpp>
#include <worker/sdk.h>

#include <cstdint>

namespace wo::quant {

// Up to this many tokens, linear runs quantized GEMV kernels (weights read once per 2 or 4
// tokens); above it, rows are dequantized to an FP16 scratch in chunks and multiplied with cuBLAS.
// Measured on the H100 (tools/device/gemv_sweep.sh TTFT=1): the multi-token GEMV is instruction
// bound, so at 8 tokens Phi-3's K-quant prefill took 15.6 ms with it against 9.8 ms with cuBLAS
// (16 tokens: 25.2 vs 9.9 ms); at 2-4 tokens it still wins (5.8 vs 9.6 ms).
constexpr int64_t kGemvMaxTokens = 4;
// From this many tokens linear_id groups problems by expert and runs the grouped GEMM
// (grouped_gemm.cuh); below, one GEMV per (token, slot). GPT-OSS-20B on the H100: per-problem GEMVs
// win at 8 tokens (16.2 vs 20.6 ms), the grouped GEMM at 16 (25.5 vs 28.7 ms).
constexpr int64_t kGroupedMinTokens = 12;
// Tuning switches (read once): WORKER_GEMV_MAX_TOKENS moves linear's GEMV/GEMM crossover,
// WORKER_GROUPED_MIN_TOKENS the token count from which linear_id runs the grouped GEMM. Both
// default to the constants here; they exist to measure crossovers on a device, not for users.
int64_t gemv_max_tokens();
int64_t grouped_min_tokens();
// Most bytes of FP16 weight scratch one GEMM chunk may use.
constexpr uint64_t kGemmScratchBytes = 64ull << 20;
// The grouped GEMM's tiles: 128 weight rows x this many problems of one expert.
constexpr int kGroupTileProblems = 64;
// The grouping kernel counts problems per expert in shared memory: at most this many experts.
constexpr int64_t kGroupMaxExperts = 4096;

// linear_multi: up to kMaxSegments weights of one type and row length read as one stack of rows;
// rows [end[i-1], end[i]) (end[-1] = 0) are weight i's, read from w[i] and written to y[i].
// linear_swiglu (swiglu set, n = 2): w[0] is gate and w[1] up, one shape; row r of the output
// (GemvParams::y) is silu(gate_r . x) * (up_r . x), both dots in the same warp.
// A mixed stack (linear_fused, SDK 1.8): segments [alt, n) are of the type's stack partner
// (TypeOps::stack_partner), with rows of alt_row_bytes; GemvParams::row_bytes is the first type's.
constexpr int kMaxSegments = WO_LINEAR_MULTI_MAX;
struct Segments {
  int n = 0; // 0: a single weight (GemvParams::w and y)
  bool swiglu = false;
  const uint8_t *w[kMaxSegments] = {};
  void *y[kMaxSegments] = {};
  int64_t end[kMaxSegments] = {};
  // (last: the fields above keep the offsets the kernels were tuned with)
  int alt = kMaxSegments; // the first segment of the partner type; kMaxSegments (or n): none
  uint64_t alt_row_bytes = 0;
  bool mixed() const { return alt < n; }
  int64_t rows(int i) const { return end[i] - (i ? end[i - 1] : 0); } // weight i's row count
};

// linear_fused's prologue and epilogue for the one-token int8 GEMV (see wo_linear_fusion): the
// staged activations are rmsnorm(x) * norm_w (worker/rms_norm.cuh's arithmetic, so the bits equal
// the norm kernel's), and each output is (accumulate ? y : 0) + (dot + bias[row]). A third kernel
// argument of its own (GemvParams stays small, see there).
struct Fusion {
  const float *norm_w = nullptr;
  float norm_eps = 0.0f;
  const float *bias = nullptr;
  bool accumulate = false;
  const float *glu_up = nullptr; // WO_LINEAR_GLU: the weights read silu(x) * glu_up (SDK 1.5)
  // linear_id_glu (SDK 1.7, Segments::swiglu with ids): the activation and the experts' biases
  // ([n_expert][rows], both or neither) added to gate's and up's dots before it.
  bool glu_clamped = false; // WO_GLU_CLAMPED (else WO_GLU_SILU)
  float glu_alpha = 0.0f, glu_limit = 0.0f;
  const float *gate_bias = nullptr, *up_bias = nullptr;
  // The norm's weights and the bias read before the PDL wait, the residual right after it (the
  // early reads, gemv_common.cuh); false (WORKER_GEMV_EARLY=0): where the prologue and epilogue
  // use them. The same values either way, so the same bits.
  bool early = true;
  // With norm_w: the int8 GEMVs stage x * norm_w and scale each dot by 1/rms (gemv_common.cuh's
  // norm_late; WORKER_NORM_LATE=0: they stage the normalized row, the separate kernels' bits).
  bool norm_late = false;
  // SDK 1.9: x as staged int8 terms (worker/staged_x.cuh), written by x's producer; the one-token
  // int8 GEMVs copy it instead of quantizing x. A hint: fused_pass drops it where it does not apply
  // (a norm or SwiGLU prologue, F16 x), and x stays valid either way.
  const uint8_t *x_staged = nullptr;
  // SDK 1.9, linear_swiglu's one token: its output row also staged (the down projection's x_staged).
  uint8_t *y_staged = nullptr;
  bool any() const { return norm_w || bias || accumulate || glu_up; }
};

// One GEMV problem set: for every "problem" p (token group, or token*slot for linear_id) and row r,
// y[p][r] = W_e[r] . x[p]. Pointers are device pointers.
struct GemvParams {
  const uint8_t *w;      // first weight row (expert 0)
  uint64_t row_bytes;    // nb1
  uint64_t expert_bytes; // byte stride between experts (linear_id)
  int64_t rows, cols;
  const void *x;
  bool x_f16;
  void *y;
  bool y_f16;
  int64_t n_tokens;
  // linear_id only (ids == nullptr for plain linear):
  const int32_t *ids;
  int64_t n_slots, x_slots, n_expert;
  bool ids_settled = false; // ids written at least two launches back (linear_id_settled)
  // linear_multi's Segments travel as a separate kernel argument, not in here: with them inside
  // (216 bytes), nvcc 13.0 addressed this parameter through a base register and dropped the
  // expert_bytes offset from linear_id's weight pointer (every slot read expert 0's rows; caught
  // by GpuCodec.LinearIdMatchesPerExpertLinear).
};
static_assert(sizeof(GemvParams) <= 128,
              "GemvParams is a kernel argument: keep it small (see the note above)");

// Dequantize n_rows rows (row ids[i], or row0 + i when ids is null) into out[i][cols].
struct DequantParams {
  const uint8_t *w;
  uint64_t row_bytes;
  int64_t cols;
  int64_t n_src_rows; // rows in the weight, for bounds checks of ids
  const int32_t *ids;
  int64_t row0, n_rows;
  void *out;
  bool out_f16;
};

struct TypeOps {
  uint32_t type;
  int block_elems; // the kernels' block (8 for the plain types' vector path)
  // Launchers (enqueue only; the caller checks cudaGetLastError). tokens_per_pass is 1, 2, 4 or 8.
  void (*gemv)(const GemvParams &p, int tokens_per_pass, void *stream);
  void (*dequant)(const DequantParams &p, void *stream);
  // Scalar fallbacks for plain types whose rows are not a multiple of block_elems; NULL otherwise.
  void (*gemv_scalar)(const GemvParams &p, void *stream);
  void (*dequant_scalar)(const DequantParams &p, void *stream);
  // linear_id over problems grouped by expert: x16 (FP16 activations in pair order), pairs, tiles
  // and n_tiles are written on the device by the grouping step; the grid covers max_tiles.
  // Returns the launch's cudaError_t.
  int (*grouped)(const GemvParams &p, const void *x16, const int32_t *pairs, const int32_t *tiles,
                 const int32_t *n_tiles, int64_t max_tiles, void *stream);
  // One-token GEMV over seg's stacked weights (or p's one weight when seg.n == 0) with fusion's
  // prologue and epilogue, in one launch; false (nothing launched) when this type or shape has no
  // such kernel (the caller then takes another path).
  bool (*gemv_multi)(const GemvParams &p, const Segments &seg, const Fusion &fusion, void *stream);
  // The second type a stack of this type may end with in gemv_multi's one launch (Segments::alt);
  // kNoStackPartner: none.
  uint32_t stack_partner;
};
constexpr uint32_t kNoStackPartner = 0xffffffffu;

// The wo_quant_v1 GPU entry points on one type's ops. Throw wo::Error.
void run_linear(const TypeOps &ops, const wo_host *host, const wo_tensor *w, const void *x, wo_dtype x_type,
                void *y, wo_dtype y_type, int64_t n_tokens);
// linear_multi: y[i] = W_i x for n weights of ops' type in one launch. False when there is no
// one-launch path for them (n_tokens != 1, different row lengths, a type or shape without the
// int8 GEMV); nothing is enqueued then.
bool run_linear_multi(const TypeOps &ops, const wo_host *host, int32_t n, const wo_tensor *const *w,
                      const void *x, wo_dtype x_type, void *const *y, wo_dtype y_type, int64_t n_tokens);
// linear_swiglu: y = silu(gate x) * (up x) in one launch. False (nothing enqueued) when there is no
// such path (n_tokens != 1, gate and up of different shapes, a type or shape without the int8 GEMV).
bool run_linear_swiglu(const TypeOps &ops, const wo_host *host, const wo_tensor *gate, const wo_tensor *up,
                       const void *x, wo_dtype x_type, void *y, wo_dtype y_type, int64_t n_tokens);
// linear_fused (op WO_LINEAR_STACK or WO_LINEAR_SWIGLU, fusion may be null) in one launch. False
// (nothing enqueued) when there is no such path: n_tokens != 1, weights of different types or
// row lengths, a type or shape without the int8 GEMV, a norm over a row rms_norm.cuh's partition
// does not take, F16 activations with a norm or accumulation, a bias with several weights.
bool run_linear_fused(const TypeOps &ops, const wo_host *host, int32_t op, int32_t n,
                      const wo_tensor *const *w, const void *x, wo_dtype x_type, void *const *y,
                      wo_dtype y_type, int64_t n_tokens, const wo_linear_fusion *fusion);
void run_gather(const TypeOps &ops, const wo_host *host, const wo_tensor *w, const int32_t *ids, int64_t n,
                void *out, wo_dtype out_type);
// linear_id_glu: the experts' gate, up and activation in one launch. False (nothing enqueued) when
// there is no such path (n_tokens != 1, gate and up of different shapes, a type or shape the
// whole-block GEMV does not take).
bool run_linear_id_glu(const TypeOps &ops, const wo_host *host, const wo_tensor *gate, const wo_tensor *up,
                       const void *x, wo_dtype x_type, void *y, wo_dtype y_type, int64_t n_tokens,
                       const int32_t *ids, int64_t n_slots, const wo_expert_glu *glu);
// ids_settled: wo_host.linear_id_settled's promise (the unit GEMV then reads the ids and issues
// the experts' first weight chunks before waiting on the previous launch).
void run_linear_id(const TypeOps &ops, const wo_host *host, const wo_tensor *w, const void *x,
                   wo_dtype x_type, int64_t x_slots, void *y, wo_dtype y_type, int64_t n_tokens,
                   const int32_t *ids, int64_t n_slots, bool ids_settled = false);

} // namespace wo::quant
