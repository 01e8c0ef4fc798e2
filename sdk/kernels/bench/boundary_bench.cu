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
// Flagged rows (the last three columns): every value travels with its step's number in one 8-byte
// store, so a reader knows a value is this step's without any fence, count or grid completion; it
// re-reads the words whose flag is not yet the one it expects. "flagged" chains PDL kernels that
// release their dependents at once and never wait on the grid before them; "flagged+wait" reads
// and reduces the same way but waits on the grid before writing (what a kernel that also reads
// other inputs of earlier kernels, or writes buffers they read, would do); "flagged persistent" is
// one kernel whose steps are separated only by the flags.
//
//   boundary_bench [--cols 896,4864] [--smem 150] [--sleep 0]   (--sleep: ns between a reader's sweeps)
#include <worker/bench_timing.hpp>

#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <sstream>
#include <string>
#include <utility>
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
    out[r] = warp_sums[threadIdx.x % (kThreads / 32)] / static_cast<float>(cols) + 1.0f;
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

// A flagged row: the value's bits in the low word, the step's flag in the high word, written and
// read as one 64-bit access (single-copy atomic, so a reader never sees one without the other).
__device__ __forceinline__ void store_flagged(unsigned long long *p, float v, unsigned flag) {
  const unsigned long long w = (static_cast<unsigned long long>(flag) << 32) | __float_as_uint(v);
  asm volatile("st.relaxed.gpu.global.b64 [%0], %1;" ::"l"(p), "l"(w) : "memory");
}

__device__ __forceinline__ unsigned long long load_flagged(const unsigned long long *p) {
  unsigned long long w;
  asm volatile("ld.relaxed.gpu.global.b64 %0, [%1];" : "=l"(w) : "l"(p) : "memory");
  return w;
}

constexpr int kFlaggedPerThread = 16; // rows up to 16 x 512 values

// Nanoseconds a reader sleeps between sweeps over its stale words (--sleep): polling threads load
// the same L2 lines the writers are storing to.
__device__ unsigned g_poll_sleep_ns = 0;

// The previous step's flagged row: every word loaded at once, then the stale ones again until each
// holds `flag`; reduced as read_row does.
__device__ __forceinline__ float read_row_flagged(const unsigned long long *in, int cols, unsigned flag) {
  unsigned long long w[kFlaggedPerThread];
#pragma unroll
  for (int k = 0; k < kFlaggedPerThread; ++k) {
    const int c = static_cast<int>(threadIdx.x) + k * kThreads;
    w[k] = c < cols ? load_flagged(in + c) : static_cast<unsigned long long>(flag) << 32;
  }
  for (bool stale = true; stale;) {
    stale = false;
#pragma unroll
    for (int k = 0; k < kFlaggedPerThread; ++k)
      if (static_cast<unsigned>(w[k] >> 32) != flag) {
        w[k] = load_flagged(in + threadIdx.x + k * kThreads);
        stale = true;
      }
    if (stale && g_poll_sleep_ns) __nanosleep(g_poll_sleep_ns);
  }
  float s = 0.0f;
#pragma unroll
  for (int k = 0; k < kFlaggedPerThread; ++k)
    s += __uint_as_float(static_cast<unsigned>(w[k]));
#pragma unroll
  for (int o = 16; o > 0; o >>= 1)
    s += __shfl_xor_sync(0xffffffffu, s, o);
  return s;
}

__device__ __forceinline__ void write_rows_flagged(float s, unsigned long long *out, int cols,
                                                   int rows_per_cta, unsigned flag) {
  __shared__ float warp_sums[kThreads / 32];
  if (threadIdx.x % 32 == 0) warp_sums[threadIdx.x / 32] = s;
  __syncthreads();
  const int r = static_cast<int>(blockIdx.x) * rows_per_cta + static_cast<int>(threadIdx.x);
  if (static_cast<int>(threadIdx.x) < rows_per_cta && r < cols)
    store_flagged(out + r, warp_sums[threadIdx.x % (kThreads / 32)] / static_cast<float>(cols) + 1.0f, flag);
}

// Step `step` of a graph of `steps`: reads flag base + step, writes base + step + 1. `base` lives
// in device memory so that every replay of the captured graph uses new flags; the last step moves
// it on (every earlier step read it before the last step could see their rows).
template <bool kWaitBeforeWrite>
__global__ void __launch_bounds__(kThreads)
    flagged_step_kernel(const unsigned long long *in, unsigned long long *out, int cols, int rows_per_cta,
                        unsigned *base, int step, int steps) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
  const unsigned b = *static_cast<volatile unsigned *>(base);
  const float s = read_row_flagged(in, cols, b + static_cast<unsigned>(step));
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  if (kWaitBeforeWrite) asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
  write_rows_flagged(s, out, cols, rows_per_cta, b + static_cast<unsigned>(step) + 1u);
  if (step == steps - 1 && blockIdx.x == 0 && threadIdx.x == 0)
    *static_cast<volatile unsigned *>(base) = b + static_cast<unsigned>(steps);
}

__global__ void __launch_bounds__(kThreads)
    flagged_persistent_kernel(unsigned long long *rows, int cols, int rows_per_cta, int steps,
                              unsigned base) {
  for (int i = 0; i < steps; ++i) {
    const unsigned long long *in = rows + (i % 2) * cols;
    unsigned long long *out = rows + ((i + 1) % 2) * cols;
    write_rows_flagged(read_row_flagged(in, cols, base + static_cast<unsigned>(i)), out, cols, rows_per_cta,
                       base + static_cast<unsigned>(i) + 1u);
  }
}

// One step kernel on every SM (one CTA each, `smem` bytes of dynamic shared memory) on s, as a
// programmatic dependent of the launch before it or not.
template <class... Params, class... Args>
cudaError_t launch_step(void (*kernel)(Params...), bool pdl, int sms, size_t smem, cudaStream_t s,
                        Args &&...args) {
  cudaLaunchAttribute attr{};
  attr.id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attr.val.programmaticStreamSerializationAllowed = 1;
  cudaLaunchConfig_t cfg{};
  cfg.gridDim = dim3(static_cast<unsigned>(sms));
  cfg.blockDim = dim3(kThreads);
  cfg.dynamicSmemBytes = smem;
  cfg.stream = s;
  cfg.attrs = &attr;
  cfg.numAttrs = pdl ? 1 : 0;
  return cudaLaunchKernelEx(&cfg, kernel, std::forward<Args>(args)...);
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
  std::vector<int> cols_list{896, 4864}, smem_list{150}, sleep_list{0};
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if ((a == "--cols" || a == "--smem" || a == "--sleep") && i + 1 < argc) {
      (a == "--cols" ? cols_list : a == "--smem" ? smem_list : sleep_list) = parse_list(argv[++i]);
    } else {
      std::fprintf(stderr,
                   "usage: boundary_bench [--cols 896,4864] [--smem 150] [--sleep 0]  (unknown '%s')\n",
                   a.c_str());
      return 2;
    }
  }
  const cudaDeviceProp prop = wo::bench::current_device();
  const int sms = prop.multiProcessorCount;
  std::printf("%s, %d SMs; one CTA of %d threads per SM, %d steps per graph or launch\n", prop.name, sms,
              kThreads, kSteps);
  std::printf("%6s %6s %6s %10s %10s %13s %9s %13s %19s   (us per step)\n", "cols", "smem", "sleep", "graph",
              "graph+PDL", "grid barrier", "flagged", "flagged+wait", "flagged persistent");
  cudaStream_t s;
  timing_ok(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "stream");
  for (const int sleep_ns : sleep_list)
    for (const int smem_kib : smem_list)
      for (const int cols : cols_list) {
        const unsigned sleep_u = static_cast<unsigned>(sleep_ns);
        timing_ok(cudaMemcpyToSymbol(g_poll_sleep_ns, &sleep_u, sizeof sleep_u), "poll sleep");
        const size_t smem = static_cast<size_t>(smem_kib) * 1024;
        timing_ok(cudaFuncSetAttribute(step_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                       static_cast<int>(smem)),
                  "shared memory attribute");
        for (const void *k : {reinterpret_cast<const void *>(persistent_kernel),
                              reinterpret_cast<const void *>(flagged_step_kernel<false>),
                              reinterpret_cast<const void *>(flagged_step_kernel<true>),
                              reinterpret_cast<const void *>(flagged_persistent_kernel)})
          timing_ok(
              cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(smem)),
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
            timing_ok(launch_step(step_kernel, pdl != 0, sms, smem, s,
                                  static_cast<const float *>(rows + (i % 2) * cols),
                                  rows + ((i + 1) % 2) * cols, cols, rows_per_cta),
                      "step launch");
          });
        const float ms = wo::bench::time_ms(s, 15, [&] {
          timing_ok(cudaMemsetAsync(count, 0, sizeof(unsigned), s), "memset count");
          persistent_kernel<<<sms, kThreads, smem, s>>>(rows, cols, rows_per_cta, kSteps, count);
          timing_ok(cudaGetLastError(), "persistent launch");
        });
        // The flagged modes: rows of 64-bit words, zeroed so that flag 0 (the first step's) is valid.
        unsigned long long *flagged = nullptr;
        unsigned *base = nullptr;
        const size_t flagged_bytes = 2 * static_cast<size_t>(cols) * sizeof(unsigned long long);
        timing_ok(cudaMalloc(&flagged, flagged_bytes), "malloc flagged rows");
        timing_ok(cudaMalloc(&base, sizeof(unsigned)), "malloc base");
        double flagged_us[2];
        for (int wait = 0; wait < 2; ++wait) {
          timing_ok(cudaMemset(flagged, 0, flagged_bytes), "memset flagged rows");
          timing_ok(cudaMemset(base, 0, sizeof(unsigned)), "memset base");
          flagged_us[wait] = wo::bench::graph_us_per_call(s, kSteps, [&](int i) {
            const unsigned long long *in = flagged + (i % 2) * cols;
            unsigned long long *out = flagged + ((i + 1) % 2) * cols;
            timing_ok(launch_step(wait ? flagged_step_kernel<true> : flagged_step_kernel<false>, true, sms,
                                  smem, s, in, out, cols, rows_per_cta, base, i, kSteps),
                      "flagged step launch");
          });
        }
        timing_ok(cudaMemset(flagged, 0, flagged_bytes), "memset flagged rows");
        unsigned persistent_base = 0;
        const float flagged_ms = wo::bench::time_ms(s, 15, [&] {
          flagged_persistent_kernel<<<sms, kThreads, smem, s>>>(flagged, cols, rows_per_cta, kSteps,
                                                                persistent_base);
          timing_ok(cudaGetLastError(), "flagged persistent launch");
          persistent_base += kSteps;
        });
        std::printf("%6d %6d %6d %10.2f %10.2f %13.2f %9.2f %13.2f %19.2f\n", cols, smem_kib, sleep_ns,
                    graph_us[0], graph_us[1], ms * 1e3 / kSteps, flagged_us[0], flagged_us[1],
                    flagged_ms * 1e3 / kSteps);
        // Every mode iterates the same map from zeros to its fixed point: the rows must agree.
        std::vector<float> plain(cols);
        std::vector<unsigned long long> words(cols);
        timing_ok(cudaMemcpy(plain.data(), rows, cols * sizeof(float), cudaMemcpyDeviceToHost), "copy rows");
        timing_ok(
            cudaMemcpy(words.data(), flagged, cols * sizeof(unsigned long long), cudaMemcpyDeviceToHost),
            "copy flagged rows");
        float worst = 0.0f;
        for (int c = 0; c < cols; ++c) {
          const unsigned bits = static_cast<unsigned>(words[static_cast<size_t>(c)]);
          float v;
          std::memcpy(&v, &bits, sizeof v);
          worst = std::max(worst, std::fabs(v - plain[static_cast<size_t>(c)]));
        }
        if (!(worst <= 1e-5f)) {
          std::fprintf(stderr,
                       "boundary_bench: the flagged rows left the plain rows' values by %g (expected 0)\n",
                       static_cast<double>(worst));
          return 1;
        }
        timing_ok(cudaFree(flagged), "free flagged rows");
        timing_ok(cudaFree(base), "free base");
        timing_ok(cudaFree(rows), "free rows");
        timing_ok(cudaFree(count), "free count");
      }
  timing_ok(cudaStreamDestroy(s), "stream destroy");
  return 0;
} catch (const std::exception &e) {
  std::fprintf(stderr, "boundary_bench: %s\n", e.what());
  return 1;
}
