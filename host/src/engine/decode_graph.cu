#include "engine/decode_graph.hpp"

#include <worker/pdl.cuh>

namespace wo::engine {
namespace {

// Launched with PDL behind the previous step's last kernel (the sampler's id publication): it
// waits for that grid, hence for the whole previous step, before it writes the position the
// previous replay read.
__global__ void write_position_kernel(int32_t *d_pos, int32_t pos) {
  wo::pdl::enter();
  *d_pos = pos;
}

std::string cuda_text(cudaError_t e) {
  return std::string(cudaGetErrorName(e)) + ": " + cudaGetErrorString(e);
}

// *d_pos = pos on the stream, ahead of the replay that reads it.
cudaError_t write_position(int32_t *d_pos, int32_t pos, cudaStream_t stream) {
  return wo::pdl::launch(write_position_kernel, 1, 1, 0, stream, d_pos, pos);
}

} // namespace

int64_t DecodeGraphs::bound_for(int64_t pos, int64_t n_ctx) {
  int64_t b = 256;
  while (b <= pos && b < n_ctx)
    b *= 2;
  return b < n_ctx ? b : n_ctx;
}

bool DecodeGraphs::run(const int32_t *token, int64_t pos, int64_t n_ctx, int32_t *d_pos, const Step &step,
                       std::string &why) {
  const int64_t bound = bound_for(pos, n_ctx);
  const auto key = std::make_pair(bound, token);
  auto it = execs_.find(key);
  if (it == execs_.end()) {
    // Thread-local mode: the residency monitor's thread may call CUDA while this one captures.
    cudaError_t e = cudaStreamBeginCapture(stream_, cudaStreamCaptureModeThreadLocal);
    if (e != cudaSuccess) {
      why = "cudaStreamBeginCapture: " + cuda_text(e);
      return false;
    }
    const bool ok = step(token, d_pos, bound);
    cudaGraph_t graph = nullptr;
    e = cudaStreamEndCapture(stream_, &graph); // always ends the capture, even after a failed step
    if (!ok || e != cudaSuccess || !graph) {
      if (graph) cudaGraphDestroy(graph);
      cudaGetLastError(); // capture errors are not sticky; leave none behind for the next call
      why = !ok ? "decode_step failed during capture" : "cudaStreamEndCapture: " + cuda_text(e);
      return false;
    }
    cudaGraphExec_t exec = nullptr;
    e = cudaGraphInstantiate(&exec, graph, 0);
    cudaGraphDestroy(graph);
    if (e != cudaSuccess) {
      cudaGetLastError();
      why = "cudaGraphInstantiate: " + cuda_text(e);
      return false;
    }
    it = execs_.emplace(key, exec).first;
  }
  cudaError_t e = write_position(d_pos, static_cast<int32_t>(pos), stream_);
  if (e == cudaSuccess) e = cudaGraphLaunch(it->second, stream_);
  if (e != cudaSuccess) {
    why = "decode graph launch (bound " + std::to_string(bound) + "): " + cuda_text(e);
    return false;
  }
  return true;
}

void DecodeGraphs::clear() {
  for (auto &kv : execs_)
    cudaGraphExecDestroy(kv.second);
  execs_.clear();
}

} // namespace wo::engine
