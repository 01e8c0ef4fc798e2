// What a dependent step between kernels costs: a chain of tiny kernels in a CUDA graph (with and
// without PDL, the way a decode step's kernels follow each other) against the same steps inside one
// persistent kernel that separates them with a software grid barrier (an atomic count per step,
// polled with acquire loads).
//
// Each step reads the whole activation row the previous step wrote (`cols` floats, every CTA, as
// the GEMVs' staging does), reduces it and writes its share of the next row. One CTA of 512
// threads per SM, held there by `smem` KiB of dynamic shared memory (150: no second CTA fits, as
// with the unit GEMV; 0: the next kernel's CTAs may start beside the previous one's).
//
// Why: a persistent per-layer kernel was the route docs/perf.md named for Qwen2.5's decode goal
// (fewer kernel boundaries per layer). It only pays if its barriers are cheaper than the
// boundaries they replace; this measures both on the device at hand.
//
//   boundary_bench [--cols 896,4864] [--smem 150]
#include <worker/bench_timing.hpp>

#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <string>
#include <vector>

namespace {

using wo::bench::timing_ok;

constexpr int kThreads = 512;
constexpr int kSteps = 240; // steps per graph or per persistent launch

// The previous step's row read by this CTA and reduced; thread 0 of each warp holds its warp's sum.
__device__ __forceinline__ float read_row(const float *in, int cols) {
  float s = 0.0f;
  for (int c = threadIdx.x; c < cols; c += blockDim.x)
    s += __ldcg(in + c);
#pragma unroll
  for (int o = 16; o > 0; o >>= 1)
    s += __shfl_xor_sync(0xffffffffu, s, o);
  return s;
}

// This CTA's rows of the next row, from the warp sums (so every step depends on the last).
__device__ __forceinline__ void write_rows(float s, float *out, int cols, int rows_per_cta) {
  __shared__ float warp_sums[kThreads / 32];
  if (threadIdx.x % 32 == 0) warp_sums[threadIdx.x / 32] = s;
  __syncthreads();
  const int r = static_cast<int>(blockIdx.x) * rows_per_cta + static_cast<int>(threadIdx.x);
  if (static_cast<int>(threadIdx.x) < rows_per_cta && r < cols)
    out[r] = warp_sums[threadIdx.x % (kThreads / 32)] * 0.5f + 1.0f;
}

__global__ void __launch_bounds__(kThreads)
    step_kernel(const float *in, float *out, int cols, int rows_per_cta) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;" ::: "memory");
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
  write_rows(read_row(in, cols), out, cols, rows_per_cta);
}

// Every CTA arrives (release) and waits until all gridDim.x of this step have (acquire). The CTAs
// must all be resident: one per SM, grid = SMs.
__device__ __forceinline__ void grid_barrier(unsigned *count, unsigned target) {
  __syncthreads();
  if (threadIdx.x == 0) {
    asm volatile("red.release.gpu.global.add.u32 [%0], 1;" ::"l"(count) : "memory");
    unsigned v = 0;
    do
      asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(count) : "memory");
    while (v < target);
  }
  __syncthreads();
}

__global__ void __launch_bounds__(kThreads)
    persistent_kernel(float *rows, int cols, int rows_per_cta, int steps, unsigned *count) {
  for (int i = 0; i < steps; ++i) {
    const float *in = rows + (i % 2) * cols;
    float *out = rows + ((i + 1) % 2) * cols;
    write_rows(read_row(in, cols), out, cols, rows_per_cta);
    grid_barrier(count, static_cast<unsigned>(i + 1) * gridDim.x);
  }
}

std::vector<int> parse_list(const std::string &s) {
  std::vector<int> v;
  std::stringstream ss(s);
  for (std::string item; std::getline(ss, item, ',');) {
    char *end = nullptr;
    const long n = std::strtol(item.c_str(), &end, 10);
    if (item.empty() || *end != '\0' || n < 0 || n > 1 << 20) {
      std::fprintf(stderr, "boundary_bench: expected a list of whole numbers, found '%s'\n", s.c_str());
      std::exit(2);
    }
    v.push_back(static_cast<int>(n));
  }
  return v;
}

} // namespace

int main(int argc, char **argv) try {
  std::vector<int> cols_list{896, 4864}, smem_list{150};
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if ((a == "--cols" || a == "--smem") && i + 1 < argc) {
      (a == "--cols" ? cols_list : smem_list) = parse_list(argv[++i]);
    } else {
      std::fprintf(stderr, "usage: boundary_bench [--cols 896,4864] [--smem 150]  (unknown '%s')\n",
                   a.c_str());
      return 2;
    }
  }
  const cudaDeviceProp prop = wo::bench::current_device();
  const int sms = prop.multiProcessorCount;
  std::printf("%s, %d SMs; one CTA of %d threads per SM, %d steps per graph or launch\n", prop.name, sms,
              kThreads, kSteps);
  std::printf("%6s %6s %14s %14s %16s   (us per step)\n", "cols", "smem", "graph", "graph+PDL",
              "grid barrier");
  cudaStream_t s;
  timing_ok(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "stream");
  for (const int smem_kib : smem_list)
    for (const int cols : cols_list) {
      const size_t smem = static_cast<size_t>(smem_kib) * 1024;
      timing_ok(cudaFuncSetAttribute(step_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                     static_cast<int>(smem)),
                "shared memory attribute");
      timing_ok(cudaFuncSetAttribute(persistent_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                     static_cast<int>(smem)),
                "shared memory attribute");
      float *rows = nullptr;
      unsigned *count = nullptr;
      timing_ok(cudaMalloc(&rows, 2 * static_cast<size_t>(cols) * sizeof(float)), "malloc rows");
      timing_ok(cudaMemset(rows, 0, 2 * static_cast<size_t>(cols) * sizeof(float)), "memset rows");
      timing_ok(cudaMalloc(&count, sizeof(unsigned)), "malloc count");
      const int rows_per_cta = (cols + sms - 1) / sms;
      double graph_us[2];
      for (int pdl = 0; pdl < 2; ++pdl)
        graph_us[pdl] = wo::bench::graph_us_per_call(s, kSteps, [&](int i) {
          cudaLaunchAttribute attr{};
          attr.id = cudaLaunchAttributeProgrammaticStreamSerialization;
          attr.val.programmaticStreamSerializationAllowed = 1;
          cudaLaunchConfig_t cfg{};
          cfg.gridDim = dim3(static_cast<unsigned>(sms));
          cfg.blockDim = dim3(kThreads);
          cfg.dynamicSmemBytes = smem;
          cfg.stream = s;
          cfg.attrs = &attr;
          cfg.numAttrs = static_cast<unsigned>(pdl);
          timing_ok(cudaLaunchKernelEx(&cfg, step_kernel, static_cast<const float *>(rows + (i % 2) * cols),
                                       rows + ((i + 1) % 2) * cols, cols, rows_per_cta),
                    "step launch");
        });
      const float ms = wo::bench::time_ms(s, 15, [&] {
        timing_ok(cudaMemsetAsync(count, 0, sizeof(unsigned), s), "memset count");
        persistent_kernel<<<sms, kThreads, smem, s>>>(rows, cols, rows_per_cta, kSteps, count);
        timing_ok(cudaGetLastError(), "persistent launch");
      });
      std::printf("%6d %6d %14.2f %14.2f %16.2f\n", cols, smem_kib, graph_us[0], graph_us[1],
                  ms * 1e3 / kSteps);
      timing_ok(cudaFree(rows), "free rows");
      timing_ok(cudaFree(count), "free count");
    }
  timing_ok(cudaStreamDestroy(s), "stream destroy");
  return 0;
} catch (const std::exception &e) {
  std::fprintf(stderr, "boundary_bench: %s\n", e.what());
  return 1;
}
