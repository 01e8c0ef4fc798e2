#include "engine/decode_graph.hpp"

#include <worker/pdl.cuh>

#include <chrono>
#include <limits>

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
                       std::string &why, Made *made) {
  using Clock = std::chrono::steady_clock;
  const auto ms_since = [](Clock::time_point t) {
    return std::chrono::duration<double, std::milli>(Clock::now() - t).count();
  };
  const int64_t bound = bound_for(pos, n_ctx);
  const auto key = std::make_pair(bound_for(pos, std::numeric_limits<int64_t>::max()), token);
  Exec &x = execs_[key];
  if (!x.current) {
    const auto t0 = Clock::now();
    // Thread-local mode: the residency monitor's thread may call CUDA while this one captures.
    cudaError_t e = cudaStreamBeginCapture(stream_, cudaStreamCaptureModeThreadLocal);
    if (e != cudaSuccess) {
      if (!x.exec) execs_.erase(key);
      why = "cudaStreamBeginCapture: " + cuda_text(e);
      return false;
    }
    const bool ok = step(token, d_pos, bound);
    cudaGraph_t graph = nullptr;
    e = cudaStreamEndCapture(stream_, &graph); // always ends the capture, even after a failed step
    if (!ok || e != cudaSuccess || !graph) {
      if (graph) cudaGraphDestroy(graph);
      cudaGetLastError(); // capture errors are not sticky; leave none behind for the next call
      if (!x.exec) execs_.erase(key);
      why = !ok ? "decode_step failed during capture" : "cudaStreamEndCapture: " + cuda_text(e);
      return false;
    }
    const double capture_ms = ms_since(t0);
    const auto t1 = Clock::now();
    bool updated = false;
    if (x.exec) { // an earlier session's: take the new capture in place if the kernels are the same
      cudaGraphExecUpdateResultInfo info{};
      updated = cudaGraphExecUpdate(x.exec, graph, &info) == cudaSuccess;
      if (!updated) { // another topology: the executable is unusable, make a new one
        cudaGetLastError();
        cudaGraphExecDestroy(x.exec);
        x.exec = nullptr;
      }
    }
    if (!updated) {
      e = cudaGraphInstantiate(&x.exec, graph, 0);
      if (e != cudaSuccess) {
        cudaGraphDestroy(graph);
        cudaGetLastError();
        x.exec = nullptr;
        execs_.erase(key);
        why = "cudaGraphInstantiate: " + cuda_text(e);
        return false;
      }
    }
    cudaGraphDestroy(graph);
    x.current = true;
    updates_ += updated ? 1 : 0;
    if (made) *made = Made{true, updated, bound, capture_ms, ms_since(t1)};
  }
  cudaError_t e = write_position(d_pos, static_cast<int32_t>(pos), stream_);
  if (e == cudaSuccess) e = cudaGraphLaunch(x.exec, stream_);
  if (e != cudaSuccess) {
    why = "decode graph launch (bound " + std::to_string(bound) + "): " + cuda_text(e);
    return false;
  }
  return true;
}

void DecodeGraphs::end_session() {
  // Kept: the executables this session used. The others (a bucket it never reached, a token
  // address it never passed) go, so the set stays one session's, whatever callers pass.
  for (auto it = execs_.begin(); it != execs_.end();) {
    if (it->second.current) {
      it->second.current = false;
      ++it;
    } else {
      if (it->second.exec) cudaGraphExecDestroy(it->second.exec);
      it = execs_.erase(it);
    }
  }
}

size_t DecodeGraphs::captures() const {
  size_t n = 0;
  for (const auto &kv : execs_)
    n += kv.second.current ? 1 : 0;
  return n;
}

void DecodeGraphs::clear() {
  for (auto &kv : execs_)
    if (kv.second.exec) cudaGraphExecDestroy(kv.second.exec);
  execs_.clear();
}

} // namespace wo::engine
