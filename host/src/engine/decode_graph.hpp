// CUDA graphs of the decode step (issue 11).
//
// Why: one decode token is 300–700 small kernels; launched one by one, the host's launch cost
// exceeds their run time at batch 1 and the GPU idles between them. The architecture's
// decode_step (SDK 1.1) reads the token id and its position from device memory and takes no
// argument that depends on the position, so one capture replays at every position below its
// bound. Bounds are buckets (256, 512, 1024, ... capped at the session's n_ctx) so attention grids
// stay sized to the context in use. Captures live until the session ends (they hold its KV cache
// and scratch addresses).
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

  // Writes pos to d_pos and replays the capture for (bound_for(pos), token), capturing it first
  // when missing. False (with the reason in `why`) when the step could not be captured or
  // launched; nothing is left enqueued then and the caller runs the step without a graph.
  bool run(const int32_t *token, int64_t pos, int64_t n_ctx, int32_t *d_pos, const Step &step,
           std::string &why);

  void clear(); // destroys every capture (session end)
  size_t captures() const { return execs_.size(); }

private:
  cudaStream_t stream_;
  std::map<std::pair<int64_t, const int32_t *>, cudaGraphExec_t> execs_;
};

} // namespace wo::engine
