// CUDA graphs of the decode step (issue 11).
//
// Why: one decode token is 300–700 small kernels; launched one by one, the host's launch cost
// exceeds their run time at batch 1 and the GPU idles between them. The architecture's
// decode_step (SDK 1.1) reads the token id and its position from device memory and takes no
// argument that depends on the position, so one capture replays at every position below its
// bound. Bounds are buckets (256, 512, 1024, ... capped at the session's n_ctx) so attention grids
// stay sized to the context in use.
//
// Captures hold the session's KV cache and scratch addresses, so a new session never replays one
// as it is: its first step at a bucket captures the step again. But the executable graph of that
// bucket is kept from session to session and updated in place (cudaGraphExecUpdate: the same
// kernels, new parameters and grids) instead of instantiated anew; only a step whose kernels
// differ (another topology) is instantiated again. Why: every job is a session, and instantiating
// (and uploading) a decode step's ~150-node graph put 1-3 ms on each job's second token.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <utility>

namespace wo::engine {

class DecodeGraphs {
public:
  // The architecture's decode step, enqueued on the stream being captured.
  using Step = std::function<bool(const int32_t *token, const int32_t *pos, int64_t pos_bound)>;

  explicit DecodeGraphs(cudaStream_t stream) : stream_(stream) {}
  ~DecodeGraphs() { clear(); }
  DecodeGraphs(const DecodeGraphs &) = delete;
  DecodeGraphs &operator=(const DecodeGraphs &) = delete;

  // The smallest bucket above pos: 256 << k, capped at n_ctx.
  static int64_t bound_for(int64_t pos, int64_t n_ctx);

  // What run() did to make the step's graph, when it made one (for the engine's log).
  struct Made {
    bool made = false;    // false: an executable of this session replayed
    bool updated = false; // an earlier session's executable took the new capture in place
    int64_t bound = 0;
    double capture_ms = 0; // the step's kernels enqueued under capture
    double build_ms = 0;   // cudaGraphExecUpdate, or cudaGraphInstantiate
  };

  // Writes pos to d_pos and replays the capture for (bound_for(pos), token), capturing it first
  // when this session has none. False (with the reason in `why`) when the step could not be
  // captured or launched; nothing is left enqueued then and the caller runs the step without a
  // graph.
  bool run(const int32_t *token, int64_t pos, int64_t n_ctx, int32_t *d_pos, const Step &step,
           std::string &why, Made *made = nullptr);

  // Session end: no executable may replay until its bucket is captured again (they hold the
  // session's addresses); those this session used stay, to be updated by the next session's
  // captures, the rest are destroyed.
  void end_session();
  void clear();                               // destroys every executable
  size_t captures() const;                    // executables made or updated in this session
  size_t updates() const { return updates_; } // captures taken in place by an earlier executable

private:
  struct Exec {
    cudaGraphExec_t exec = nullptr;
    bool current = false; // captured in this session
  };
  cudaStream_t stream_;
  // Keyed by the uncapped bucket (256 << k) and the token's address: sessions of different n_ctx
  // share an executable per bucket.
  std::map<std::pair<int64_t, const int32_t *>, Exec> execs_;
  size_t updates_ = 0;
};

} // namespace wo::engine
