/*
 * worker-orcd plugin SDK — the C ABI between the host and its plugins.
 *
 * Why C: plugins may be built by other compilers, at other times, against other standard
 * libraries than the host. Nothing here is a C++ type; no exception, allocator or std:: object
 * crosses this boundary. Every call returns a wo_status; the text of the last failure is fetched
 * from the instance (or, for stateless codecs, from the calling thread).
 *
 * Versioning: WORKER_SDK_ABI_MAJOR must match exactly; MINOR is additive (new fields are appended
 * to structs, new function pointers are appended to vtables). Every struct that crosses the
 * boundary begins with `struct_size` so each side can tell which fields the other one knows:
 * read a field only when `struct_size >= offsetof(field) + sizeof(field)` (WO_HAS_FIELD).
 *
 * Entry: every plugin exports exactly one symbol, `worker_plugin_entry`, in the ELF section
 * WORKER_PLUGIN_SECTION (sdk.hpp's WORKER_PLUGIN macro does this with Boost.DLL), so the host can
 * list candidates without running their code. The host calls it with its ABI version; the plugin
 * returns its descriptor, or NULL when it cannot work with that host.
 */
#ifndef WORKER_SDK_H
#define WORKER_SDK_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define WORKER_SDK_ABI_MAJOR 1u
#define WORKER_SDK_ABI_MINOR                                                                                 \
  9u /* 1.1: wo_arch_v1.decode_step; 1.2: linear_multi; 1.3: linear_swiglu;                                  \
        1.4: linear_fused; 1.5: WO_LINEAR_GLU, wo_linear_fusion.glu_up; 1.6: linear_id_settled;              \
        1.7: linear_id_glu, wo_expert_glu; 1.8: linear_fused stacks of mixed types;                          \
        1.9: wo_linear_fusion.x_staged, y_staged */

/* The exported entry's name and the ELF section that lists it. */
#define WORKER_PLUGIN_ENTRY_NAME "worker_plugin_entry"
#define WORKER_PLUGIN_SECTION_NAME "worker"

/* True when a struct of (claimed) size `sz` contains member `field` of type `T`. */
#define WO_HAS_FIELD(T, sz, field) ((size_t)(sz) >= offsetof(T, field) + sizeof(((T *)0)->field))

/* ---------------------------------------------------------------------------------------------
 * Status codes
 * ------------------------------------------------------------------------------------------- */
typedef int32_t wo_status;
#define WO_OK 0
#define WO_ERR_INVALID_ARGUMENT 1 /* a caller-supplied value is out of range */
#define WO_ERR_NOT_FOUND 2        /* key, tensor or id absent */
#define WO_ERR_TYPE_MISMATCH 3    /* metadata value of another type than asked */
#define WO_ERR_UNSUPPORTED 4      /* valid request this plugin does not implement */
#define WO_ERR_OUT_OF_MEMORY 5    /* device (VRAM) allocation failed; the job may be retried */
#define WO_ERR_BUFFER_TOO_SMALL 6 /* output capacity too small; the needed size is reported */
#define WO_ERR_CUDA 7             /* a CUDA or cuBLAS call failed */
#define WO_ERR_FORMAT 8           /* model / tokenizer data is malformed */
#define WO_ERR_IO 9               /* a file could not be read */
#define WO_ERR_INTERNAL 10        /* a bug: an invariant was violated */
#define WO_ERR_NO_DEVICE 11       /* a device operation was asked on a host without a GPU */

/* ---------------------------------------------------------------------------------------------
 * Plugin kinds, log levels, data types
 * ------------------------------------------------------------------------------------------- */
typedef int32_t wo_plugin_kind;
#define WO_PLUGIN_ARCHITECTURE 1
#define WO_PLUGIN_QUANT 2
#define WO_PLUGIN_TOKENIZER 3

typedef int32_t wo_log_level;
#define WO_LOG_DEBUG 0
#define WO_LOG_INFO 1
#define WO_LOG_WARN 2
#define WO_LOG_ERROR 3

/* Element type of activations (device buffers that are not weights). */
typedef int32_t wo_dtype;
#define WO_DTYPE_F32 0
#define WO_DTYPE_F16 1
#define WO_DTYPE_I32 2

/* Kinds of device memory, for the host's VRAM accounting. */
typedef int32_t wo_vram_kind;
#define WO_VRAM_WEIGHTS 0
#define WO_VRAM_KV_CACHE 1
#define WO_VRAM_SCRATCH 2

/* GGUF metadata value types; the numbers are GGUF's own. */
typedef int32_t wo_value_type;
#define WO_VALUE_U8 0
#define WO_VALUE_I8 1
#define WO_VALUE_U16 2
#define WO_VALUE_I16 3
#define WO_VALUE_U32 4
#define WO_VALUE_I32 5
#define WO_VALUE_F32 6
#define WO_VALUE_BOOL 7
#define WO_VALUE_STRING 8
#define WO_VALUE_ARRAY 9
#define WO_VALUE_U64 10
#define WO_VALUE_I64 11
#define WO_VALUE_F64 12

/* A byte string; not necessarily NUL-terminated. */
typedef struct wo_str {
  const char *data;
  uint64_t len;
} wo_str;

/* A metadata value. Scalars are widened: integer types and BOOL fill both `i64` and `u64`
 * (`is_negative` tells whether the u64 view is meaningful), F32/F64 fill `f64`. Strings fill
 * `str`. Arrays fill `array_type`/`array_len`; numeric arrays also `array_data` (elements packed
 * little-endian exactly as stored in the file, possibly unaligned); string arrays are read element
 * by element with wo_host.meta_array_str. Pointers stay valid for the life of the model. */
typedef struct wo_value {
  uint32_t struct_size;
  wo_value_type type;
  int64_t i64;
  uint64_t u64;
  int32_t is_negative;
  double f64;
  wo_str str;
  wo_value_type array_type;
  uint64_t array_len;
  const void *array_data;
} wo_value;

/* ---------------------------------------------------------------------------------------------
 * Tensors: a weight owned by the host. `data` is the device copy (NULL on a host without a device
 * or before upload); `host_data` the bytes in the memory-mapped file (valid while the model is
 * loaded). ne[0] is the row length (GGUF order); nb1 is the byte stride between rows.
 * ------------------------------------------------------------------------------------------- */
typedef struct wo_tensor {
  uint32_t struct_size;
  uint32_t ggml_type;
  const char *name;
  uint32_t n_dims;
  int64_t ne[4];
  uint64_t nbytes;
  uint64_t nb1;
  void *data;
  const void *host_data;
} wo_tensor;

/* ---------------------------------------------------------------------------------------------
 * Host services: what the host offers every plugin instance. Device members are NULL / return
 * WO_ERR_NO_DEVICE on a host without a GPU (e.g. `worker-orcd tokenize`).
 * ------------------------------------------------------------------------------------------- */
typedef struct wo_linear_fusion wo_linear_fusion; /* 1.4, defined below */
typedef struct wo_expert_glu wo_expert_glu;       /* 1.7, defined below */
typedef struct wo_host wo_host;
struct wo_host {
  uint32_t struct_size;
  uint32_t abi_major, abi_minor;
  void *ctx; /* passed back as the first argument of every service */

  void (*log)(void *ctx, wo_log_level level, const char *msg);

  /* GGUF metadata of the model being served. */
  wo_status (*meta_get)(void *ctx, const char *key, wo_value *out);
  wo_status (*meta_array_str)(void *ctx, const char *key, uint64_t index, wo_str *out);

  /* Weights by GGUF tensor name; NULL when absent. */
  const wo_tensor *(*tensor)(void *ctx, const char *name);

  /* Accounted device memory. Returns WO_ERR_OUT_OF_MEMORY (never aborts) when it does not fit. */
  wo_status (*vram_alloc)(void *ctx, size_t bytes, wo_vram_kind kind, void **out);
  void (*vram_free)(void *ctx, void *ptr);

  /* The engine's one CUDA stream (cudaStream_t) and cuBLAS handle (cublasHandle_t). */
  void *cuda_stream;
  void *cublas_handle;

  /* A reusable device scratch buffer of at least `bytes`, valid until the next scratch call.
   * May reallocate: never call it while a CUDA graph is being captured. */
  wo_status (*scratch)(void *ctx, size_t bytes, void **out);

  /* Math on weights, routed by w->ggml_type to the quant codec that owns the type, so that
   * architecture plugins never see a quantization format.
   *   linear:       y[t][r] = sum_c W[r][c] * x[t][c]   for t < n_tokens (row-major activations)
   *   gather_rows:  out[i][:] = W[ids[i]][:]            (ids in device memory)
   *   linear_id:    for a 3-D weight [cols, rows, n_expert]: for token t and slot k < n_slots,
   *                 y[t][k][:] = W[ids[t*n_slots+k]] · x[t][x_slots == 1 ? 0 : k][:]
   *                 (ids in device memory; x_slots is 1 or n_slots). */
  wo_status (*linear)(void *ctx, const wo_tensor *w, const void *x, wo_dtype x_type, void *y, wo_dtype y_type,
                      int64_t n_tokens);
  wo_status (*gather_rows)(void *ctx, const wo_tensor *w, const int32_t *ids, int64_t n, void *out,
                           wo_dtype out_type);
  wo_status (*linear_id)(void *ctx, const wo_tensor *w, const void *x, wo_dtype x_type, int64_t x_slots,
                         void *y, wo_dtype y_type, int64_t n_tokens, const int32_t *ids, int64_t n_slots);

  /* Debug tracing (e.g. expert routing). `trace_enabled` is non-zero when the host records;
   * plugins skip the work otherwise. `data` is host memory. */
  int32_t trace_enabled;
  void (*trace)(void *ctx, const char *name, const void *data, size_t bytes);

  /* 1.2 (check WO_HAS_FIELD and NULL): y[i] = linear(w[i], x) for i < n (1..WO_LINEAR_MULTI_MAX),
   * the same activations into several weights (q/k/v, gate/up). The results equal n linear calls;
   * the host asks the codec for one launch when every weight has the same type and shape class
   * and otherwise makes the n calls itself. */
  wo_status (*linear_multi)(void *ctx, int32_t n, const wo_tensor *const *w, const void *x, wo_dtype x_type,
                            void *const *y, wo_dtype y_type, int64_t n_tokens);

  /* 1.3 (check WO_HAS_FIELD and NULL): the SwiGLU feed-forward's first half in one pass,
   * y[t][r] = silu(gate_r . x_t) * (up_r . x_t) with silu(g) = g / (1 + exp(-g)); gate and up have
   * one type and shape (rows of one length), y has gate's row count per token. Optional: it
   * answers WO_ERR_UNSUPPORTED with nothing enqueued when no single pass serves these weights or
   * this n_tokens, and the caller then runs two linears and its own swiglu. */
  wo_status (*linear_swiglu)(void *ctx, const wo_tensor *gate, const wo_tensor *up, const void *x,
                             wo_dtype x_type, void *y, wo_dtype y_type, int64_t n_tokens);

  /* 1.4 (check WO_HAS_FIELD and NULL): a projection with the work around it folded into the same
   * pass (see wo_linear_fusion): op WO_LINEAR_STACK is linear_multi (n = 1: linear), op
   * WO_LINEAR_SWIGLU is linear_swiglu (n = 2, w = {gate, up}, output y[0]). `fusion` may be NULL
   * (nothing folded). Optional: WO_ERR_UNSUPPORTED with nothing enqueued when no single pass serves
   * the request (another n_tokens, type or shape); the caller then runs the steps itself. From 1.8
   * a WO_LINEAR_STACK may mix types (q and k of one type, v of another), for codecs that have such
   * a pass. */
  wo_status (*linear_fused)(void *ctx, int32_t op, int32_t n, const wo_tensor *const *w, const void *x,
                            wo_dtype x_type, void *const *y, wo_dtype y_type, int64_t n_tokens,
                            const wo_linear_fusion *fusion);

  /* 1.6 (check WO_HAS_FIELD and NULL): linear_id, with the promise that `ids` were written by a
   * launch at least two before this one on the stream, not by the one right before it (gpt-oss's
   * up and down projections read the router's choice, made before the gate projection). The codec
   * may then read the ids, and start loading the chosen experts' weights, while the previous
   * launch still runs (programmatic dependent launch: every launch of the SDK kernels and codecs
   * waits on its predecessor before it lets its successor start, so the launch before that one
   * has finished). The same results as linear_id. */
  wo_status (*linear_id_settled)(void *ctx, const wo_tensor *w, const void *x, wo_dtype x_type,
                                 int64_t x_slots, void *y, wo_dtype y_type, int64_t n_tokens,
                                 const int32_t *ids, int64_t n_slots);

  /* 1.7 (check WO_HAS_FIELD and NULL): a mixture-of-experts feed-forward's first half in one pass:
   * two linear_id calls (gate and up: 3-D weights of one type and shape, every slot reading the
   * token's x) and the gated activation of wo_expert_glu, y[t][k][r] = act(g, u). Optional: it
   * answers WO_ERR_UNSUPPORTED with nothing enqueued when no single pass serves the request (another
   * n_tokens, type or shape); the caller then runs the steps itself. The same bits as the steps. */
  wo_status (*linear_id_glu)(void *ctx, const wo_tensor *gate, const wo_tensor *up, const void *x,
                             wo_dtype x_type, void *y, wo_dtype y_type, int64_t n_tokens, const int32_t *ids,
                             int64_t n_slots, const wo_expert_glu *glu);
};
#define WO_LINEAR_MULTI_MAX 4

/* linear_fused's operations. */
#define WO_LINEAR_STACK 0  /* y[i] = W_i x for i < n (1..WO_LINEAR_MULTI_MAX) */
#define WO_LINEAR_SWIGLU 1 /* n = 2, w = {gate, up}: y[0][r] = silu(gate_r . x) * (up_r . x) */
#define WO_LINEAR_GLU 2    /* 1.5: n = 1: y[0] = W a with a[c] = silu(x[c]) * fusion->glu_up[c] */

/* 1.4: what linear_fused folds into a projection of one token, so that a decode step needs no
 * separate norm, bias or residual kernels around it.
 *   prologue: norm_weight != NULL: the weights read rmsnorm(x) * norm_weight instead of x, i.e.
 *             x[c] / sqrt(mean_c(x^2) + norm_eps) * norm_weight[c] (F32 x; norm_weight F32
 *             [row length], device);
 *   epilogue: y[r] = (accumulate ? y[r] : 0) + (W_r . x + (bias ? bias[r] : 0)) (F32 y; bias F32
 *             [rows], device; bias only with one weight; neither with WO_LINEAR_SWIGLU).
 * A codec that folds these computes what the host's separate steps would (rms_norm, then the
 * projection, then add_bias and the residual add): the epilogue exactly; the prologue exactly or
 * within float rounding, where the codec applies the row's 1/sqrt(mean(x^2) + eps) to its dot
 * products rather than to x (the same value; quant-ggml and quant-mxfp4 do, unless
 * WORKER_NORM_LATE=0). */
struct wo_linear_fusion {
  uint32_t struct_size;
  const float *norm_weight;
  float norm_eps;
  const float *bias;
  int32_t accumulate;
  /* 1.5, op WO_LINEAR_GLU only: the up projection's values (F32 [row length], device); x holds the
   * gate's (F32), and the weights read x[c] / (1 + expf(-x[c])) * glu_up[c], the SDK swiglu
   * kernel's expression, so the down projection needs no SwiGLU kernel before it. Not with
   * norm_weight. Hosts pass WO_LINEAR_GLU only to codecs built against SDK >= 1.5. */
  const float *glu_up;
  /* 1.9, optional: x as staged int8 terms (worker/staged_x.cuh: hi, lo, a record per 32; device,
   * 16-byte aligned), written by x's producer (the SDK attention kernels' AttentionParams::
   * staged_out), so that the one-token int8 GEMVs copy the terms instead of quantizing x. A hint:
   * x must hold the same values, and a codec may read x instead. Not with norm_weight or glu_up. */
  const void *x_staged;
  /* 1.9, optional, op WO_LINEAR_SWIGLU with one token and F32 y: the output row also as staged int8
   * terms at y_staged (worker/staged_x.hpp; device, 16-byte aligned), for the next projection's
   * x_staged. Not a hint: a codec that cannot write it returns WO_ERR_UNSUPPORTED, nothing
   * enqueued, and the caller asks again without it. */
  void *y_staged;
};

/* 1.7: linear_id_glu's activation. For token t, slot k, expert e = ids[t n_slots + k] and row r:
 *   g = gate[e]_r . x_t + (gate_bias ? gate_bias[e][r] : 0), u likewise with up and up_bias
 *   (F32 [n_expert][rows], device; both or neither);
 *   WO_GLU_SILU:    y = g / (1 + exp(-g)) * u                          (the SDK swiglu kernel)
 *   WO_GLU_CLAMPED: g' = min(g, limit), u' = clamp(u, -limit, limit),
 *                   y = g' / (1 + exp(-alpha g')) * (u' + 1)          (gpt-oss; swiglu_oai) */
#define WO_GLU_SILU 0
#define WO_GLU_CLAMPED 1
struct wo_expert_glu {
  uint32_t struct_size;
  int32_t kind; /* WO_GLU_SILU or WO_GLU_CLAMPED */
  float alpha, limit;
  const float *gate_bias, *up_bias;
};

/* ---------------------------------------------------------------------------------------------
 * Architecture plugins: turn tokens into logits.
 * ------------------------------------------------------------------------------------------- */
typedef struct wo_arch_instance wo_arch_instance;

typedef struct wo_arch_config {
  uint32_t struct_size;
  int64_t n_ctx;   /* KV-cache capacity in tokens for a session */
  int64_t n_batch; /* most tokens one forward call processes (prefill chunk) */
  uint32_t flags;  /* WO_ARCH_* */
} wo_arch_config;
#define WO_ARCH_UNFUSED 1u /* run the plain, unfused kernels (debugging) */

/* Sizes the host needs before it allocates anything (VRAM plan). */
typedef struct wo_arch_plan {
  uint32_t struct_size;
  int64_t n_vocab;
  int64_t n_ctx_train;
  int64_t n_embd;
  int64_t n_layer;
  uint64_t kv_bytes_per_token; /* KV cache bytes per token of context */
  uint64_t scratch_bytes;      /* activations for n_batch tokens (excluding logits) */
} wo_arch_plan;

/* forward flags */
#define WO_FWD_LOGITS_ALL 1u       /* write logits for every token, else only the last */
#define WO_FWD_TOKENS_ON_DEVICE 2u /* `tokens` points to device memory */

typedef struct wo_arch_v1 {
  uint32_t struct_size;
  /* 0 = cannot serve this model; higher wins. Reads metadata only. */
  int32_t (*probe)(const wo_host *host);
  /* Sizes for cfg, from metadata alone (no allocation). */
  wo_status (*plan)(const wo_host *host, const wo_arch_config *cfg, wo_arch_plan *out);
  /* Build an instance over the host's uploaded weights. Allocates no KV cache yet. */
  wo_status (*create)(const wo_host *host, const wo_arch_config *cfg, wo_arch_instance **out);
  void (*destroy)(wo_arch_instance *inst);
  /* A session owns the KV cache and scratch for up to n_ctx tokens; end frees them. */
  wo_status (*session_begin)(wo_arch_instance *inst, int64_t n_ctx);
  void (*session_end)(wo_arch_instance *inst);
  /* Process n_tokens starting at position pos (0 restarts the sequence); logits: device,
   * float32, [n_out][n_vocab] with n_out = n_tokens or 1 (see flags). Enqueued on the host's
   * stream; the host synchronizes. */
  wo_status (*forward)(wo_arch_instance *inst, const int32_t *tokens, int64_t n_tokens, int64_t pos,
                       float *logits, uint32_t flags);
  const char *(*last_error)(const wo_arch_instance *inst);

  /* ---- SDK 1.1 (optional: NULL, or absent from an older plugin's struct_size) ----
   * One decode token that the host can capture in a CUDA graph and replay at every position:
   * the token id is the device int32 at `token`, its position the device int32 at `pos`
   * (0 <= *pos < pos_bound <= the session's n_ctx); logits as forward with one token. pos_bound
   * only sizes launch grids, so one capture serves every position below it. The call must not
   * synchronize, allocate, copy from host memory, or pass the position (or anything derived from
   * it) as a kernel argument. It may fail with WO_ERR_INVALID_ARGUMENT when it cannot run
   * capturable (e.g. while tracing); the host then uses forward. */
  wo_status (*decode_step)(wo_arch_instance *inst, const int32_t *token, const int32_t *pos,
                           int64_t pos_bound, float *logits);
} wo_arch_v1;

/* ---------------------------------------------------------------------------------------------
 * Quant plugins: codecs for ggml tensor types. Stateless; errors are per calling thread.
 * ------------------------------------------------------------------------------------------- */
typedef struct wo_quant_v1 {
  uint32_t struct_size;
  uint32_t n_types;
  const uint32_t *types; /* ggml type ids served */

  /* CPU reference: rows are row_len elements, stored one after another. */
  wo_status (*dequantize_rows)(uint32_t type, const void *src, int64_t n_rows, int64_t row_len, float *dst);
  /* CPU quantizer (tools/gguf-synth). Need not match other implementations bit for bit. */
  wo_status (*quantize_rows)(uint32_t type, const float *src, int64_t n_rows, int64_t row_len, void *dst);
  /* Load-time check that the codec can serve this weight (shape, alignment). */
  wo_status (*check_tensor)(const wo_tensor *w);

  /* GPU (NULL in a build without CUDA). Enqueued on host->cuda_stream. */
  wo_status (*gather_rows)(const wo_host *host, const wo_tensor *w, const int32_t *ids, int64_t n, void *out,
                           wo_dtype out_type);
  wo_status (*linear)(const wo_host *host, const wo_tensor *w, const void *x, wo_dtype x_type, void *y,
                      wo_dtype y_type, int64_t n_tokens);
  /* Optional (may be NULL): see wo_host.linear_id. */
  wo_status (*linear_id)(const wo_host *host, const wo_tensor *w, const void *x, wo_dtype x_type,
                         int64_t x_slots, void *y, wo_dtype y_type, int64_t n_tokens, const int32_t *ids,
                         int64_t n_slots);

  /* Text of this thread's last failure in this plugin. */
  const char *(*last_error)(void);

  /* 1.2, optional (may be NULL or absent): wo_host.linear_multi for weights that all have one of
   * this codec's types, in one launch. WO_ERR_UNSUPPORTED (nothing enqueued) when the codec has no
   * such path for these weights or this n_tokens; the host then makes n linear calls. */
  wo_status (*linear_multi)(const wo_host *host, int32_t n, const wo_tensor *const *w, const void *x,
                            wo_dtype x_type, void *const *y, wo_dtype y_type, int64_t n_tokens);

  /* 1.3, optional (may be NULL or absent): wo_host.linear_swiglu for gate and up of one of this
   * codec's types. WO_ERR_UNSUPPORTED (nothing enqueued) when the codec has no single pass for them. */
  wo_status (*linear_swiglu)(const wo_host *host, const wo_tensor *gate, const wo_tensor *up, const void *x,
                             wo_dtype x_type, void *y, wo_dtype y_type, int64_t n_tokens);

  /* 1.4, optional (may be NULL or absent): wo_host.linear_fused for weights of this codec's types.
   * WO_ERR_UNSUPPORTED (nothing enqueued) when the codec has no single pass for the request.
   * 1.8: a WO_LINEAR_STACK's weights may have different types (all of this codec's); a codec built
   * against 1.8 or later checks every weight's type and declines a mix it has no pass for. The
   * host sends such stacks only to those codecs. */
  wo_status (*linear_fused)(const wo_host *host, int32_t op, int32_t n, const wo_tensor *const *w,
                            const void *x, wo_dtype x_type, void *const *y, wo_dtype y_type, int64_t n_tokens,
                            const wo_linear_fusion *fusion);

  /* 1.6, optional (may be NULL or absent): wo_host.linear_id_settled; the host calls linear_id
   * where a codec has none. */
  wo_status (*linear_id_settled)(const wo_host *host, const wo_tensor *w, const void *x, wo_dtype x_type,
                                 int64_t x_slots, void *y, wo_dtype y_type, int64_t n_tokens,
                                 const int32_t *ids, int64_t n_slots);

  /* 1.7, optional (may be NULL or absent): wo_host.linear_id_glu for gate and up of one of this
   * codec's types. WO_ERR_UNSUPPORTED (nothing enqueued) when the codec has no single pass for them. */
  wo_status (*linear_id_glu)(const wo_host *host, const wo_tensor *gate, const wo_tensor *up, const void *x,
                             wo_dtype x_type, void *y, wo_dtype y_type, int64_t n_tokens, const int32_t *ids,
                             int64_t n_slots, const wo_expert_glu *glu);
} wo_quant_v1;

/* ---------------------------------------------------------------------------------------------
 * Tokenizer plugins.
 * ------------------------------------------------------------------------------------------- */
typedef struct wo_tokenizer_instance wo_tokenizer_instance;

/* encode flags */
#define WO_TOK_ADD_SPECIAL 1u   /* add BOS/EOS as the model's metadata asks */
#define WO_TOK_PARSE_SPECIAL 2u /* turn special-token text (<|im_start|>...) into its id */

typedef struct wo_tokenizer_config {
  uint32_t struct_size;
  const char *tokenizer_json; /* path of a tokenizer.json, or NULL to build from GGUF metadata */
} wo_tokenizer_config;

/* Special ids, -1 when absent. */
typedef struct wo_special_ids {
  uint32_t struct_size;
  int32_t bos, eos, eot, pad, unk;
  int32_t add_bos, add_eos; /* what ADD_SPECIAL does */
} wo_special_ids;

typedef struct wo_tokenizer_v1 {
  uint32_t struct_size;
  /* Score for this model (GGUF metadata through host, or cfg->tokenizer_json); 0 = cannot. */
  int32_t (*probe)(const wo_host *host, const wo_tokenizer_config *cfg);
  wo_status (*create)(const wo_host *host, const wo_tokenizer_config *cfg, wo_tokenizer_instance **out);
  void (*destroy)(wo_tokenizer_instance *inst);
  /* Encode UTF-8 text. Writes up to `cap` ids; *n_out is the full count. When cap is too small
   * the call returns WO_ERR_BUFFER_TOO_SMALL and the caller retries with *n_out. */
  wo_status (*encode)(wo_tokenizer_instance *inst, const char *text, size_t len, uint32_t flags, int32_t *out,
                      size_t cap, size_t *n_out);
  /* The raw bytes a token stands for (after byte-level / byte-fallback decoding; a special
   * token's own text). Valid for the instance's lifetime. */
  wo_status (*token_bytes)(const wo_tokenizer_instance *inst, int32_t id, wo_str *out);
  wo_status (*special_ids)(const wo_tokenizer_instance *inst, wo_special_ids *out);
  /* Non-zero when `id` ends generation (EOS, EOT and the model's other end-of-generation ids). */
  int32_t (*is_eog)(const wo_tokenizer_instance *inst, int32_t id);
  int64_t (*vocab_size)(const wo_tokenizer_instance *inst);
  /* "gguf-bpe", "gguf-spm", "hf-json" */
  const char *(*kind)(const wo_tokenizer_instance *inst);
  const char *(*last_error)(const wo_tokenizer_instance *inst);
} wo_tokenizer_v1;

/* ---------------------------------------------------------------------------------------------
 * Descriptor and entry point.
 * ------------------------------------------------------------------------------------------- */
typedef struct wo_plugin {
  uint32_t struct_size;
  uint32_t abi_major, abi_minor; /* the SDK the plugin was built against */
  wo_plugin_kind kind;
  const char *name;    /* unique among loaded plugins, e.g. "quant-ggml" */
  const char *version; /* the plugin's own version, e.g. "0.1.0" */
  const void *vtable;  /* wo_arch_v1 / wo_quant_v1 / wo_tokenizer_v1, per kind */
} wo_plugin;

typedef const wo_plugin *(*wo_plugin_entry_fn)(uint32_t host_abi_major, uint32_t host_abi_minor);

#ifdef __cplusplus
}
#endif

#endif /* WORKER_SDK_H */
