// Event timing for the benchmark programs (sdk/kernels/bench/, the codecs' quant_bench): the median
// of timed replays, the microseconds per call of a CUDA graph of calls, and the current device's
// properties. Header-only host code; CUDA errors throw std::runtime_error naming the step.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <stdexcept>
#include <string>
#include <vector>

namespace wo::bench {

inline void timing_ok(cudaError_t e, const char *what) {
  if (e != cudaSuccess) throw std::runtime_error(std::string(what) + ": " + cudaGetErrorString(e));
}

// The current device's properties (name, multiProcessorCount, l2CacheSize) for a bench's setup.
inline cudaDeviceProp current_device() {
  int dev = 0;
  timing_ok(cudaGetDevice(&dev), "device");
  cudaDeviceProp prop{};
  timing_ok(cudaGetDeviceProperties(&prop, dev), "device properties");
  return prop;
}

inline float median(std::vector<float> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// Median milliseconds of `reps` replays of `fn` after 3 warm-up calls (each replay timed by events
// on the stream).
template <class F> float time_ms(cudaStream_t s, int reps, F &&fn) {
  cudaEvent_t a, b;
  timing_ok(cudaEventCreate(&a), "event");
  timing_ok(cudaEventCreate(&b), "event");
  for (int i = 0; i < 3; ++i)
    fn(); // warm-up
  std::vector<float> ms;
  for (int i = 0; i < reps; ++i) {
    timing_ok(cudaEventRecord(a, s), "record");
    fn();
    timing_ok(cudaEventRecord(b, s), "record");
    timing_ok(cudaEventSynchronize(b), "sync");
    float t = 0;
    timing_ok(cudaEventElapsedTime(&t, a, b), "elapsed");
    ms.push_back(t);
  }
  timing_ok(cudaEventDestroy(a), "event destroy");
  timing_ok(cudaEventDestroy(b), "event destroy");
  return median(ms);
}

// Microseconds per call of `call(i)` (i < per_graph), captured as one CUDA graph of per_graph calls
// and replayed (median of 15).
template <class F> double graph_us_per_call(cudaStream_t s, int per_graph, F &&call) {
  cudaGraph_t graph;
  cudaGraphExec_t exec;
  timing_ok(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal), "capture");
  for (int i = 0; i < per_graph; ++i)
    call(i);
  timing_ok(cudaStreamEndCapture(s, &graph), "end capture");
  timing_ok(cudaGraphInstantiate(&exec, graph, 0), "instantiate");
  const float ms = time_ms(s, 15, [&] { timing_ok(cudaGraphLaunch(exec, s), "graph launch"); });
  timing_ok(cudaGraphExecDestroy(exec), "graph exec destroy");
  timing_ok(cudaGraphDestroy(graph), "graph destroy");
  return ms * 1e3 / per_graph;
}

} // namespace wo::bench
