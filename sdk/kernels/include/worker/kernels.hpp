// Shared CUDA building blocks for architecture plugins (plugins/llama, plugins/gpt).
//
// Conventions (why: one set of rules so plugins can chain kernels without adapters):
// - Every pointer is device memory; every call is enqueued on `stream` and never synchronizes
//   or allocates, so a decode step built from these calls can be captured in a CUDA graph.
// - Activations are FP32, row-major: a "row" is one token. The KV cache is FP16.
// - Every function validates its arguments (cudaErrorInvalidValue when a size is out of range)
//   and returns the launch status (cudaGetLastError), so callers check one value per call.
// - Option structs (RopeParams, AttentionParams) only grow at the end; default-initialise them.
#pragma once

#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>

namespace wo::kernels {

// ---- normalisation -----------------------------------------------------------------------------

// y[r][c] = x[r][c] / sqrt(mean_c(x[r]^2) + eps) * w[c]   (w == nullptr: no scale).
// y may alias x.
cudaError_t rms_norm(const float *x, const float *w, float *y, int64_t n_rows, int64_t n_cols, float eps,
                     cudaStream_t stream);

// y[r][c] = (x[r][c] - mean) / sqrt(var + eps) * w[c] + b[c]   (w, b may be nullptr).
// y may alias x.
cudaError_t layer_norm(const float *x, const float *w, const float *b, float *y, int64_t n_rows,
                       int64_t n_cols, float eps, cudaStream_t stream);

// ---- elementwise -------------------------------------------------------------------------------

// y[r][c] += b[c]. `row_stride` is the distance in floats between rows of y (0 = n_cols), so a
// bias can be added to a slice of a fused buffer (e.g. the q part of a [q;k;v] row).
cudaError_t add_bias(float *y, const float *b, int64_t n_rows, int64_t n_cols, cudaStream_t stream,
                     int64_t row_stride = 0);

// y[i] = a[i] + b[i]. y may alias a or b (residual add: add(x, x, delta, n)).
cudaError_t add(float *y, const float *a, const float *b, int64_t n, cudaStream_t stream);

// y[i] = x[i] * s. y may alias x.
cudaError_t scale(const float *x, float *y, float s, int64_t n, cudaStream_t stream);

// out[r][c] = silu(gate[r][c]) * up[r][c] with silu(g) = g / (1 + exp(-g)).
// gate/up rows are `in_stride` floats apart (0 = n_cols), so the fused [gate; up] output of one
// linear (phi3 ffn_up) is served by gate = buf, up = buf + n_cols, in_stride = 2 * n_cols.
// out is contiguous [n_rows][n_cols]; it may alias gate when in_stride == n_cols.
cudaError_t swiglu(const float *gate, const float *up, float *out, int64_t n_rows, int64_t n_cols,
                   cudaStream_t stream, int64_t in_stride = 0);

// Per-row bias rows chosen by ids (the experts' biases): row r adds gate[ids[r]] / up[ids[r]].
struct IndexedBias {
  const float *gate = nullptr, *up = nullptr; // [n_b][n_cols]
  const int32_t *ids = nullptr;               // [n_rows]; nullptr: no bias
  // The caller's promise that ids were written two or more launches back (as linear_id_settled's):
  // the kernel reads them and its first bias rows before its PDL wait, overlapping the launch
  // before it instead of paying two dependent loads after.
  bool settled = false;
};

// gpt-oss's clamped SwiGLU: g = min(gate, limit); u = clamp(up, -limit, limit);
// out = g * sigmoid(alpha * g) * (u + 1). Same layout rules as swiglu. With bias.ids, gate and up
// first get their indexed bias rows added (exactly the values add_bias_indexed would store).
cudaError_t swiglu_oai(const float *gate, const float *up, float *out, int64_t n_rows, int64_t n_cols,
                       float alpha, float limit, cudaStream_t stream, int64_t in_stride = 0,
                       IndexedBias bias = {});

// y[i] = 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))). y may alias x.
cudaError_t gelu_tanh(const float *x, float *y, int64_t n, cudaStream_t stream);

// Row-wise softmax: y[r][:] = softmax(x[r][:]). y may alias x.
cudaError_t softmax_rows(const float *x, float *y, int64_t n_rows, int64_t n_cols, cudaStream_t stream);

// out[r] = index of the largest x[r][c] (the lowest index on ties).
cudaError_t argmax_rows(const float *x, int32_t *out, int64_t n_rows, int64_t n_cols, cudaStream_t stream);

// out[i] = start + i: the positions of a run of tokens (RoPE, learned position embeddings).
cudaError_t fill_positions(int32_t *out, int64_t n, int32_t start, cudaStream_t stream);

// ---- rotary position embedding -----------------------------------------------------------------

enum class RopeMode : int32_t {
  Norm = 0, // rotate adjacent pairs (2i, 2i+1)            (llama GGUF files)
  Neox = 2, // rotate pairs (i, i + n_dims/2)              (qwen2, phi3, gpt-oss)
};

// ggml's rope semantics: for pair index i < n_dims/2 at position p,
//   theta_extrap = p * freq_base^(-2i/n_dims), theta_interp = freq_scale * theta_extrap;
//   without YaRN (ext_factor == 0): theta = theta_interp, magnitude attn_factor;
//   with YaRN: ramp over the correction dims [lo, hi] derived from beta_fast/beta_slow and
//   n_ctx_orig mixes interp/extrap, and the magnitude is attn_factor * (1 + 0.1 ln(1/freq_scale)).
// Dimensions n_dims..head_dim-1 pass through unchanged.
struct RopeParams {
  int32_t n_dims = 0; // rotated dims per head (rope.dimension_count); 0 = head_dim
  RopeMode mode = RopeMode::Norm;
  float freq_base = 10000.0f;
  float freq_scale = 1.0f; // 1 / rope.scaling.factor
  float ext_factor = 0.0f; // YaRN: 1 enables the ramp, 0 disables it
  float attn_factor = 1.0f;
  float beta_fast = 32.0f;
  float beta_slow = 1.0f;
  int32_t n_ctx_orig = 0; // rope.scaling.original_context_length (or context_length)
};

// Rotate, in place, x[t][h][0..head_dim) for t < n_tokens, h < n_heads, at positions[t]
// (device int32). Token rows are `token_stride` floats apart (0 = n_heads * head_dim), so q and k
// can be rotated inside a fused [q;k;v] buffer.
cudaError_t rope(float *x, int64_t n_tokens, int32_t n_heads, int32_t head_dim, const int32_t *positions,
                 const RopeParams &p, cudaStream_t stream, int64_t token_stride = 0);

// ---- KV cache ----------------------------------------------------------------------------------

// One layer's cache is [pos][n_kv_heads][head_dim] FP16 for K and the same for V. Writes the rows
// of k[t] / v[t] (FP32, each [n_kv_heads][head_dim], token rows `src_stride` floats apart,
// 0 = n_kv_heads * head_dim) to positions pos0 + t, or to positions[t] when `positions` (device
// int32 [n_tokens]) is given: then pos0 is ignored and nothing depends on the host's idea of the
// position, so the call can sit in a CUDA graph replayed at every position.
cudaError_t kv_write(const float *k, const float *v, __half *k_cache, __half *v_cache, int64_t pos0,
                     int64_t n_tokens, int32_t n_kv_heads, int32_t head_dim, cudaStream_t stream,
                     int64_t src_stride = 0, const int32_t *positions = nullptr);

// ---- L2 hints ------------------------------------------------------------------------------------

// Byte ranges of device memory (null / zero-sized entries: none).
struct L2Ranges {
  static constexpr int kMax = 4;
  const void *p[kMax] = {};
  uint64_t bytes[kMax] = {};
};
// Asks L2 for the ranges' lines on `blocks` blocks and returns: a hint, nothing waits for the data
// and nothing is written. For a side stream of a decode graph (forked after a kernel, joined before
// the graph ends), so that weights a later kernel reads arrive while the chain leaves DRAM idle.
// cudaErrorInvalidValue: blocks outside 1..4096, a range without a pointer or over 4 GiB.
cudaError_t l2_prefetch(const L2Ranges &ranges, int blocks, cudaStream_t stream);

// ---- fused kernels (the plain ones above stay the reference and the WO_ARCH_UNFUSED path) ------

// Residual add fused with the next norm: x[r] += delta[r]; y[r] = rms_norm(x[r]) * w.
// y must not alias x or delta.
cudaError_t add_rms_norm(float *x, const float *delta, const float *w, float *y, int64_t n_rows,
                         int64_t n_cols, float eps, cudaStream_t stream);

// Bias, RoPE and the KV-cache write of one layer's fresh q/k/v in one pass:
//   q[t][h] = rope(q[t][h] + q_bias[h])                 (in place; attention reads it next)
//   k_cache[positions[t]] = fp16(rope(k[t] + k_bias))   (k itself is left unchanged)
//   v_cache[positions[t]] = fp16(v[t] + v_bias)
// Biases may be nullptr. Token rows of q are q_stride floats apart, of k and v kv_stride
// (0 = contiguous), so a fused [q;k;v] row works as well as three buffers.
struct QkvRopeCache {
  float *q = nullptr;
  const float *k = nullptr;
  const float *v = nullptr;
  int64_t q_stride = 0;
  int64_t kv_stride = 0;
  const float *q_bias = nullptr;
  const float *k_bias = nullptr;
  const float *v_bias = nullptr;
  __half *k_cache = nullptr; // one layer's cache, [pos][n_kv_heads][head_dim]
  __half *v_cache = nullptr;
  const int32_t *positions = nullptr; // device int32 [n_tokens]: RoPE positions and cache rows
  int32_t n_heads = 0;
  int32_t n_kv_heads = 0;
  int32_t head_dim = 0; // even
  // The caller's promise that positions were written two or more launches back (a decode graph's
  // position is written before its replay): rope_kv_attention's one-query kernel then reads them,
  // picks its keys and computes its RoPE factors before its PDL wait.
  bool positions_settled = false;
};
cudaError_t rope_kv_write(const QkvRopeCache &a, int64_t n_tokens, const RopeParams &p, cudaStream_t stream);

// ---- attention ---------------------------------------------------------------------------------

struct AttentionParams {
  int64_t n_tokens = 0;         // queries in this call
  int64_t pos0 = 0;             // position of the first query; query t sits at pos0 + t
  int64_t n_kv = 0;             // keys in the cache to consider (positions 0..n_kv-1), normally pos0+n_tokens
  int32_t n_heads = 0;          // query heads
  int32_t n_kv_heads = 0;       // KV heads; n_heads % n_kv_heads == 0 (GQA: head h reads kv head h / group)
  int32_t head_dim = 0;         // 1..256
  float scale = 0.0f;           // score scale, usually 1/sqrt(head_dim)
  bool causal = true;           // query at position p sees keys <= p
  int64_t window = 0;           // sliding window W > 0: query p sees keys p-W+1..p (0 = unlimited)
  const float *sinks = nullptr; // optional device float[n_heads]: a logit per head that joins the
                                // softmax denominator without a value (gpt-oss)
  int64_t q_stride = 0;         // floats between query token rows (0 = n_heads * head_dim)
  int64_t out_stride = 0;       // floats between output token rows (0 = n_heads * head_dim)
  // Optional device workspace for splitting the keys over several blocks (flash-decoding), which
  // decode (few queries, long context) needs to fill the GPU. nullptr / too small: no split.
  // Size it with attention_workspace_floats() for the largest call (it depends on n_tokens,
  // n_heads and head_dim only), and clear it once before the first call
  // (attention_workspace_clear): it starts with the counters by which the last split of a decode
  // call knows to merge (every call leaves them at zero again), or, for head_dim <= 64, the epochs
  // that tag each call's split states (every call advances them). Use it for attention only, from
  // one stream, for calls of one (n_heads, n_kv_heads, head_dim): one model's layers (a call of
  // another shape may leave counters that one reads as epochs, or the reverse: clear it between).
  // Clearing it again later is allowed (between jobs), never during a call.
  float *workspace = nullptr;
  int64_t workspace_floats = 0;
  // Optional device int32 [n_tokens]: query t sits at positions[t] (consecutive) and the cache
  // holds keys 0..positions[n_tokens-1]. pos0 and n_kv are then only upper bounds
  // (positions[t] <= pos0 + t, n_kv >= positions[last] + 1) that size the launch, so one call,
  // captured in a CUDA graph, serves every position up to the bound.
  const int32_t *positions = nullptr;
  // Optional device bytes (worker/staged_x.hpp: row_bytes(n_heads * head_dim), 16-byte aligned;
  // n_heads * head_dim a multiple of 32, else the call is refused with cudaErrorInvalidValue): with
  // one query, the output row also as the int8 GEMVs' staged terms, for the projection after
  // attention (wo_linear_fusion::x_staged), written by the kernel that writes the row (a stage_row
  // launch after it where no kernel of this family can). Ignored for other query counts.
  void *staged_out = nullptr;
};

// The row x[0..cols) as the int8 GEMVs' staged terms (worker/staged_x.cuh) at staged (cols % 32 == 0,
// 16-byte aligned): the producer side for rows no kernel stages itself, and the tests' reference.
cudaError_t stage_row(const float *x, void *staged, int64_t cols, cudaStream_t stream);

// Floats of workspace that lets attention() split keys for up to n_tokens queries of n_heads
// heads of head_dim (0 when it never splits for such calls).
int64_t attention_workspace_floats(int64_t n_tokens, int32_t n_heads, int32_t head_dim);

// The leading 32-bit words of such a workspace that hold the split counters or epochs (see
// AttentionParams::workspace); the rest holds the split states. For tests that start the epochs
// elsewhere than at zero (their wrap).
int64_t attention_workspace_counter_words(int32_t n_heads);

// Zeroes a new workspace of workspace_floats floats on the stream, once, before its first
// attention call (nullptr with 0 floats: nothing to do).
cudaError_t attention_workspace_clear(float *workspace, int64_t workspace_floats, cudaStream_t stream);

// out[t][h][:] = softmax_j(scale * q[t][h] . K[j][h/g]) · V[j][h/g] over the visible keys j.
// q: FP32 [n_tokens][n_heads][head_dim]; k_cache/v_cache: one layer's FP16 cache (see kv_write);
// out: FP32 [n_tokens][n_heads][head_dim] (must not alias q). One kernel family serves prefill
// and decode.
cudaError_t attention(const float *q, const __half *k_cache, const __half *v_cache, float *out,
                      const AttentionParams &p, cudaStream_t stream);

// rope_kv_write(a, p.n_tokens, rp) then attention(a.q, a.k_cache, a.v_cache, out, p) with q read
// at a.q_stride: for one causal query that the decode kernel serves, one launch that rotates the
// queries as it loads them (a.q is left unrotated) and writes the new K/V rows from the block that
// reads them; otherwise the two kernels. The same output bits and cache contents either way.
cudaError_t rope_kv_attention(const QkvRopeCache &a, const RopeParams &rp, float *out,
                              const AttentionParams &p, cudaStream_t stream);

// ---- mixture of experts (gpt-oss) --------------------------------------------------------------

// Per row: pick the k largest logits (ties: lower index), write their ids in descending order,
// and weights = softmax over those k logits. ids/weights are [n_rows][k]. k <= 32, n_cols <= 1024.
// bias (optional, [n_cols]) is added to every row first, as add_bias would; logits stay unchanged.
cudaError_t topk_softmax(const float *logits, int32_t *ids, float *weights, int64_t n_rows, int64_t n_cols,
                         int32_t k, cudaStream_t stream, const float *bias = nullptr);

// One token's routing in one launch (gpt-oss decode), instead of rms_norm, the router GEMV and
// topk_softmax:
//   h = rms_norm(x) * norm_w                  (rms_norm's bits; stored for the experts)
//   logits[e] = sum_c w[e][c] h[c]            (the F32 router GEMV's partition and order: its bits)
//   ids, weights = topk_softmax(logits, k, bias)
// One block per expert; the last block to finish picks. counter: a device unsigned that is zero
// before the first call and that every call leaves zero (clear it once, like the attention
// workspace). moe_route_fits says whether a shape takes it (n_embd a multiple of 8 up to
// 4096, n_expert <= 128, k <= 32, 16-byte aligned rows); cudaErrorInvalidValue otherwise.
struct MoeRoute {
  const float *x = nullptr;      // [n_embd], the residual stream
  const float *norm_w = nullptr; // [n_embd]
  float eps = 0.0f;
  const float *w = nullptr;    // router weight, F32 [n_expert][n_embd]
  const float *bias = nullptr; // optional [n_expert]; the logits are stored without it
  float *h = nullptr;          // [n_embd] out
  float *logits = nullptr;     // [n_expert] out
  int32_t *ids = nullptr;      // [k] out
  float *weights = nullptr;    // [k] out
  unsigned *counter = nullptr;
  int32_t n_embd = 0, n_expert = 0, k = 0;
};
bool moe_route_fits(const MoeRoute &r);
cudaError_t moe_route(const MoeRoute &r, cudaStream_t stream);

// y[r][c] += b[ids[r]][c]: a per-row choice among bias rows (expert biases); b is [n_b][n_cols].
cudaError_t add_bias_indexed(float *y, const float *b, const int32_t *ids, int64_t n_rows, int64_t n_cols,
                             cudaStream_t stream);

// out[t][c] (+)= sum_k w[t][k] * y[t][k][c]; accumulate adds to out, else overwrites it. With bias
// (and ids, [n_tokens][k]), y[t][k] is read as y[t][k] + bias[ids[t][k]], as add_bias_indexed
// would have stored it. settled: w and ids were written two or more launches back (see
// IndexedBias::settled), so they and the bias rows are read before the PDL wait.
cudaError_t weighted_sum_slots(const float *y, const float *w, float *out, int64_t n_tokens, int32_t k,
                               int64_t n_cols, bool accumulate, cudaStream_t stream,
                               const float *bias = nullptr, const int32_t *ids = nullptr,
                               bool settled = false);

} // namespace wo::kernels
