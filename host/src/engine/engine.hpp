// The engine: one GGUF model on one GPU for the engine's whole lifetime (spec M0-W-1001).
//
// load() runs the startup sequence: CUDA device check -> GGUF open -> plugin selection (architecture,
// a quant codec for every tensor type, tokenizer) -> VRAM plan (throws before allocating anything
// when the model does not fit) -> chunked upload with model_load_progress events -> architecture
// instance. After that, callers tokenize, open a session (the KV cache for n_ctx tokens), run
// forward passes and read logits. The engine is the wo_host every plugin sees: metadata, weights
// with device pointers, accounted VRAM, the stream and cuBLAS handle, scratch, and linear /
// gather_rows / linear_id routed by ggml type to the quant plugin that owns the type.
//
// Threading: one thread drives an Engine at a time (the HTTP server runs one job at a time). The
// residency monitor runs on its own thread and only reads the weight list.
//
// Errors: wo::Error (sdk.hpp). status() == WO_ERR_OUT_OF_MEMORY means VRAM did not fit (the plan at
// load, or a session's KV cache / scratch later: the engine stays usable, the job may be retried);
// WO_ERR_CUDA a device failure; anything else a model / plugin / argument problem. Messages name
// what was expected, what was found and where (tensor, key, device, model path).
#pragma once

#include "device/vram_accounting.hpp"

#include <worker/sdk.h>

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace wo::engine {

struct EngineOptions {
  std::string model;          // GGUF location: path, file:/path or ram:NAME
  std::string plugin_dir;     // folder of plugin .so files (required)
  std::string tokenizer_json; // optional tokenizer.json overriding the GGUF vocabulary
  std::string model_root;     // when set, the model must resolve inside this folder
  int gpu_device = 0;
  // Session capacity in tokens. 0: the model's context length, capped by kv_cache_mb and, when
  // both are non-zero, by max_tokens_in + max_tokens_out (the longest job the worker accepts).
  int64_t n_ctx = 0;
  int64_t kv_cache_mb = 0;             // --kv-cache-size-mb: cap on the KV cache (0 = no cap)
  int64_t max_tokens_in = 0;           // --max-tokens-in (see n_ctx; 0 = no cap)
  int64_t n_batch = 512;               // most tokens one forward call processes
  uint64_t vram_budget_bytes = 0;      // cap on the VRAM plan (0 = free device memory only)
  size_t upload_chunk_bytes = 1 << 20; // bounded upload chunk (pinned double buffer of this size)
  uint32_t arch_flags = 0;             // WO_ARCH_* (e.g. WO_ARCH_UNFUSED; also WORKER_ARCH_UNFUSED=1)
  bool trace = false;                  // record plugin traces (e.g. gpt-oss routing)
  int residency_interval_s = 60;       // background residency check period (0 = off)
  int64_t max_tokens_out = 0;          // --max-tokens-out (see n_ctx; 0 = no cap)
  // Decode (one device-resident token, position known) replays a CUDA graph of the architecture's
  // decode_step when it has one (SDK 1.1). WORKER_CUDA_GRAPHS=0 in the environment turns it off
  // (debugging: every kernel launched one by one, as forward does).
  bool cuda_graphs = true;
  // wo_host.linear_multi asks the codec for one launch over q/k/v (gate/up); false (or
  // WORKER_LINEAR_MULTI=0) makes one linear call per weight, a debugging switch.
  bool linear_multi = true;
  // wo_host.linear_swiglu (and linear_fused's WO_LINEAR_SWIGLU) asks the codec for gate, up and
  // SiLU in one pass: the whole-block GEMV's groups hold gate's rows and up's, and its epilogue
  // writes silu(gate) * up, the bits of the stacked GEMV plus the swiglu kernel (H100: Qwen
  // decode +4%, Phi-3 +2%; docs/perf.md). false (or WORKER_LINEAR_SWIGLU=0) answers
  // WO_ERR_UNSUPPORTED and the architecture runs its own path, a debugging switch.
  bool linear_swiglu = true;
  // wo_host.linear_fused asks the codec to fold the norm before a one-token projection and the
  // bias and residual add after it into the projection's pass (SDK 1.4); false (or
  // WORKER_LINEAR_FUSED=0) answers WO_ERR_UNSUPPORTED and the architecture runs the separate
  // kernels, which compute the same bits (a debugging switch).
  bool linear_fused = true;
  // linear_fused's WO_LINEAR_STACK over weights of two types of one codec (SDK 1.8; Qwen2.5's
  // Q5_0 q, k and Q8_0 v in one launch instead of two) for codecs built against 1.8 or later;
  // false (or WORKER_MIXED_STACK=0) answers WO_ERR_UNSUPPORTED for such a stack and the
  // architecture runs one pass per run of one type (the same bits), a debugging switch.
  bool mixed_stack = true;
  // linear_fused's op WO_LINEAR_GLU (SDK 1.5: the SwiGLU folded into the down projection's
  // staging, the same bits as the swiglu kernel first); false answers WO_ERR_UNSUPPORTED. Correct
  // on the H100 (GPU tests pass) but slower: every CTA recomputes silu over the whole row (H100,
  // one machine, two runs each: Qwen 963 vs 1006 tok/s, Phi-3 480 vs 481), so off;
  // WORKER_LINEAR_GLU=1.
  bool linear_glu = false;
  // wo_host.linear_id_glu (SDK 1.7) asks the codec for the experts' gate, up and activation in one
  // pass (gpt-oss decode); false (or WORKER_LINEAR_ID_GLU=0) answers WO_ERR_UNSUPPORTED and the
  // architecture runs two linear_id calls and its activation kernel (the same bits).
  bool linear_id_glu = true;
};

struct PluginUse {
  std::string kind; // "architecture" | "quant" | "tokenizer"
  std::string name;
  std::string version;
};

struct ModelInfo {
  std::string model_ref;      // the location as given
  std::string architecture;   // general.architecture, e.g. "qwen2"
  std::string quant_kind;     // e.g. "Q4_K_M", "Q8_0", "MXFP4" (from general.file_type / tensor types)
  std::string tokenizer_kind; // "gguf-bpe", "gguf-spm", "hf-json"
  int64_t vocab_size = 0;     // rows of the logits
  int64_t context_length = 0; // the model's trained context (metadata)
  int64_t n_ctx = 0;          // the session capacity the engine planned for
  std::vector<PluginUse> plugins;
  uint64_t vram_weights = 0, vram_kv = 0, vram_scratch = 0, vram_total = 0; // planned bytes
  int sm_major = 0, sm_minor = 0;
  int cuda_runtime_version = 0; // cudaRuntimeGetVersion, e.g. 13000
  int gpu_device = 0;
  std::string gpu_name;
};

// The VRAM plan computed before any allocation (spec M0-W-1020).
struct VramPlan {
  uint64_t weights = 0;  // sum of 256-aligned tensor sizes
  uint64_t kv_cache = 0; // kv_bytes_per_token * n_ctx
  uint64_t scratch = 0;  // the architecture's activations for n_batch tokens
  uint64_t logits = 0;   // n_batch * n_vocab * 4
  uint64_t margin = 0;   // cuBLAS workspace, allocator granularity
  uint64_t total() const { return weights + kv_cache + scratch + logits + margin; }
};

struct ResidencyReport {
  bool ok = true;
  uint64_t checked = 0;       // weight allocations inspected
  std::string failure;        // first failure: tensor, what cudaPointerGetAttributes said
  uint64_t periodic_runs = 0; // last_residency(): periodic checks done so far (0 = the load-time one)
};

class Engine {
public:
  Engine();
  ~Engine(); // unloads
  Engine(const Engine &) = delete;
  Engine &operator=(const Engine &) = delete;

  // Load the one model of this engine. A second call (even after unload) throws
  // WO_ERR_INVALID_ARGUMENT: one model per engine lifetime.
  void load(const EngineOptions &opts);
  bool loaded() const;
  // Free everything on the device (weights, KV cache, scratch, staging); plugins are released.
  void unload();

  ModelInfo info() const;
  const VramPlan &plan() const;
  wo::device::VramStats vram() const;
  ResidencyReport check_residency() const;
  // The latest periodic check (EngineOptions.residency_interval_s), or the check made at load when
  // the monitor has not run yet. Cheap and thread-safe: no CUDA call (for /health).
  ResidencyReport last_residency() const;

  // ---- tokenizer (CPU only) ----
  std::vector<int32_t> tokenize(const std::string &text, bool add_special, bool parse_special) const;
  std::string token_bytes(int32_t id) const; // raw bytes of one token
  bool is_eog(int32_t id) const;
  wo_special_ids special_ids() const;
  int64_t vocab_size() const;

  // ---- sessions: a session owns the KV cache (and grows scratch) for up to n_ctx tokens ----
  // n_ctx 0 = the planned capacity; more than planned throws WO_ERR_INVALID_ARGUMENT. Throws
  // WO_ERR_OUT_OF_MEMORY when the KV cache cannot be allocated (nothing stays allocated).
  void begin_session(int64_t n_ctx = 0);
  void end_session(); // frees the KV cache; idempotent
  bool in_session() const;
  int64_t session_ctx() const;

  // Run n tokens at positions pos..pos+n-1 (pos 0 restarts the sequence). One token on the device
  // without all_logits (decode) replays a CUDA graph when available (EngineOptions.cuda_graphs). Prompts
  // longer than n_batch are split into n_batch chunks. all_logits: keep logits for every token (then
  // n must be <= n_batch); otherwise only the last token's row. ids are host memory unless
  // ids_on_device.
  // Enqueued on stream(); does not synchronize (logits_host does).
  void forward(const int32_t *ids, int64_t n, int64_t pos, bool all_logits, bool ids_on_device = false);
  int64_t logits_rows() const; // rows the last forward wrote
  // Decode graphs captured in this session (0: decode runs without graphs).
  size_t decode_graphs() const;
  // Captures, over the engine's life, that updated an earlier session's executable graph in place
  // instead of instantiating one.
  size_t decode_graph_updates() const;
  // Device float32 [logits_rows()][vocab_size()], valid until the next forward.
  const float *logits_device() const;
  // Synchronizes the stream. row -1 = the last row; otherwise 0 <= row < logits_rows().
  std::vector<float> logits_host(int64_t row = -1) const;
  // Every row, [logits_rows()][vocab_size()] (synchronizes).
  std::vector<float> all_logits_host() const;
  // Writes logits_host() (the last row) to `path` as float32 little-endian: the debugging dump
  // `run --step-logits-out` and the server's WORKER_DEBUG_STEP_LOGITS compare bit for bit.
  void dump_logits(const std::string &path) const;

  cudaStream_t stream() const;
  void synchronize() const; // waits for the stream; throws WO_ERR_CUDA naming the failure

  // The host services plugins see (tests, conformance).
  const wo_host *host() const;

  // Traces recorded when EngineOptions.trace: name -> blobs in call order.
  const std::map<std::string, std::vector<std::vector<uint8_t>>> &traces() const;
  void clear_traces();

  class Impl;

private:
  std::unique_ptr<Impl> impl_;
};

} // namespace wo::engine
