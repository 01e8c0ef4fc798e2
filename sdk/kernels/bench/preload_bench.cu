// Whether a decode GEMV chain gets faster when each kernel's weights land in shared memory before
// its PDL wait, copied by the bulk-copy engine (cp.async.bulk, no registers held) while the kernel
// before it still runs, instead of streaming after the wait.
//
// Why: Qwen2.5-0.5B's decode step moves ~190 MB in ~655 us (0.3 TB/s): its GEMVs are chains of
// latencies, not of bytes. Each one waits for the previous kernel, stages the activation row, and
// only then meets most of its weights' DRAM round trips. A layer's weights (~9 MB) are ~70 KB per
// SM, so a GEMV's whole slice fits in shared memory, and the bytes of the next kernel could be in
// flight during this one. boundary_bench measured the boundaries themselves (~1.3 us with PDL);
// this measures the rest of a GEMV's chain under the two ways of getting its weights.
//
// Every step is a GEMV y = W x on 4-bit weights (16-byte rows of 32 nibbles, values n - 8) and the
// activations quantized to int8 per 32 (the codecs' staging in miniature: every CTA reads the whole
// row from L2 and quantizes it into shared memory). Each step's weights are its own (a Qwen layer's
// shapes, 24 layers, ~180 MB: DRAM, not L2). Both variants compute the same bits, checked.
//
// - stream: one CTA of 16 warps per SM (150 KiB of shared memory holds the SM, as the unit GEMV
//   does), each warp's first row loaded into registers before the wait and each next row loaded
//   while the current one is summed.
// - preload: CTAs of 8 warps with only the shared memory they use (two fit an SM: the next
//   kernel's CTAs start beside this one's); one thread copies the CTA's whole row slice into shared
//   memory before the wait, and the dots read it there. `trigger` says when the next kernel may
//   launch: "early" before the wait (it starts preloading while this one runs), "late" after it
//   (as wo::pdl::enter does: at most one kernel ahead).
// - preload-solo: the same kernel held to one CTA per SM (150 KiB), so nothing starts beside.
//
//   preload_bench [--layers 24] [--terms 2] [--carveout -1 (the driver's)]
#include <worker/bench_timing.hpp>

#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

using wo::bench::timing_ok;

constexpr int kStreamThreads = 512;
constexpr int kPreloadThreads = 256;
constexpr size_t kHoldSmem = 150 * 1024; // one CTA per SM
constexpr size_t kPairSmem = 113 * 1024; // the most two CTAs of one SM may each have
constexpr int kActFloats = 16384;

struct Shape {
  const char *name;
  int rows, cols;
};
// A Qwen2.5-0.5B layer's projections (q/k/v stacked, gate/up stacked), in step order.
constexpr Shape kLayer[] = {{"qkv", 1152, 896}, {"o", 896, 896}, {"gate/up", 9728, 896}, {"down", 896, 4864}};

__host__ __device__ inline int round128(int n) { return (n + 127) / 128 * 128; }
__host__ __device__ inline int row_bytes(int cols) { return cols / 2; }
// The staging: the mbarrier's line, 2 terms per value, 16 bytes of scale and sums per 32.
__host__ __device__ inline int terms_bytes(int cols) { return round128(2 * cols); }
__host__ __device__ inline size_t stage_bytes(int cols) {
  return static_cast<size_t>(128 + terms_bytes(cols) + round128(cols / 32 * 16));
}

__device__ __forceinline__ void pdl_wait() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}
__device__ __forceinline__ void pdl_trigger() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}

// Packs the low bytes of four ints.
__device__ __forceinline__ unsigned pack4(int a, int b, int c, int d) {
  return (a & 0xff) | (b & 0xff) << 8 | (c & 0xff) << 16 | static_cast<unsigned>(d & 0xff) << 24;
}

// The row `in` (cols floats, written by the previous step) quantized per 32 into shared memory:
// for each 8 values, the even positions' int8 terms then the odd ones' (the order the nibble dots
// take), and per 32 its scale and the terms' sums. kTerms == 2 adds a second term per value, the
// rounding left by the first in steps of 1/254 (the codecs' default staging, ~FP16 precision).
// Ends with a barrier.
template <int kTerms>
__device__ __forceinline__ void stage_x(const float *in, int cols, uint4 *xq, float4 *xm) {
  const int n8 = cols / 8;
  for (int base = 0; base < n8; base += blockDim.x) {
    const int c8 = base + static_cast<int>(threadIdx.x);
    const bool on = c8 < n8; // whole groups of 4 lanes (cols % 32 == 0)
    float v[8] = {};
    if (on) {
      const float4 a = __ldcg(reinterpret_cast<const float4 *>(in) + 2 * c8);
      const float4 b = __ldcg(reinterpret_cast<const float4 *>(in) + 2 * c8 + 1);
      v[0] = a.x, v[1] = a.y, v[2] = a.z, v[3] = a.w, v[4] = b.x, v[5] = b.y, v[6] = b.z, v[7] = b.w;
    }
    float amax = 0.0f;
#pragma unroll
    for (int i = 0; i < 8; ++i)
      amax = fmaxf(amax, fabsf(v[i]));
    amax = fmaxf(amax, __shfl_xor_sync(0xffffffffu, amax, 1));
    amax = fmaxf(amax, __shfl_xor_sync(0xffffffffu, amax, 2));
    const float inv = amax > 0.0f ? 127.0f / amax : 0.0f;
    int q[8], r[8] = {}, qs = 0, rs = 0;
#pragma unroll
    for (int i = 0; i < 8; ++i) {
      const float t = v[i] * inv;
      q[i] = __float2int_rn(t);
      if (kTerms == 2) r[i] = __float2int_rn((t - static_cast<float>(q[i])) * 254.0f);
      qs += q[i], rs += r[i];
    }
    qs += __shfl_xor_sync(0xffffffffu, qs, 1);
    qs += __shfl_xor_sync(0xffffffffu, qs, 2);
    if (kTerms == 2) {
      rs += __shfl_xor_sync(0xffffffffu, rs, 1);
      rs += __shfl_xor_sync(0xffffffffu, rs, 2);
    }
    if (on) {
      xq[c8] = make_uint4(pack4(q[0], q[2], q[4], q[6]), pack4(q[1], q[3], q[5], q[7]),
                          pack4(r[0], r[2], r[4], r[6]), pack4(r[1], r[3], r[5], r[7]));
      if (threadIdx.x % 4 == 0)
        xm[c8 / 4] =
            make_float4(amax / 127.0f, static_cast<float>(qs), static_cast<float>(rs) / 254.0f, 0.0f);
    }
  }
  __syncthreads();
}

// Lane's share of one row's dot: its 16-byte groups k = lane, lane + 32, ... (32 weights each).
template <int K, int kTerms>
__device__ __forceinline__ float row_dot(const uint4 (&w)[K], int n16, const uint4 *xq, const float4 *xm) {
  const int lane = threadIdx.x % 32;
  float acc = 0.0f;
#pragma unroll
  for (int k = 0; k < K; ++k) {
    const int g = lane + 32 * k;
    if (g < n16) {
      const unsigned ws[4] = {w[k].x, w[k].y, w[k].z, w[k].w};
      int s = 0, t = 0;
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        const uint4 x = xq[4 * g + i];
        const int even = static_cast<int>(ws[i] & 0x0f0f0f0fu),
                  odd = static_cast<int>(ws[i] >> 4 & 0x0f0f0f0fu);
        s = __dp4a(even, static_cast<int>(x.x), s);
        s = __dp4a(odd, static_cast<int>(x.y), s);
        if (kTerms == 2) {
          t = __dp4a(even, static_cast<int>(x.z), t);
          t = __dp4a(odd, static_cast<int>(x.w), t);
        }
      }
      const float4 m = xm[g];
      float d = static_cast<float>(s) - 8.0f * m.y;
      if (kTerms == 2) d += static_cast<float>(t) * (1.0f / 254.0f) - 8.0f * m.z;
      acc = fmaf(m.x, d, acc);
    }
  }
#pragma unroll
  for (int o = 16; o > 0; o >>= 1)
    acc += __shfl_xor_sync(0xffffffffu, acc, o);
  return acc;
}

template <int K> __device__ __forceinline__ void load_row(uint4 (&w)[K], const uint4 *row, int n16) {
  const int lane = threadIdx.x % 32;
#pragma unroll
  for (int k = 0; k < K; ++k)
    w[k] = lane + 32 * k < n16 ? __ldg(row + lane + 32 * k) : make_uint4(0, 0, 0, 0);
}

__device__ __forceinline__ float out_scale(int cols) {
  return 0.02f * rsqrtf(static_cast<float>(cols) / 896.0f);
}

struct StepArgs {
  const uint8_t *w;
  const float *in;
  float *out;
  int rows, cols, rows_per_cta;
};

template <int K, int kTerms> __global__ void __launch_bounds__(kStreamThreads, 1) stream_kernel(StepArgs a) {
  extern __shared__ __align__(128) unsigned char smem[];
  uint4 *xq = reinterpret_cast<uint4 *>(smem + 128);
  float4 *xm = reinterpret_cast<float4 *>(smem + 128 + terms_bytes(a.cols));
  const int warp = threadIdx.x / 32, warps = blockDim.x / 32, n16 = a.cols / 32;
  const int r0 = blockIdx.x * a.rows_per_cta, nrows = min(a.rows_per_cta, a.rows - r0);
  const uint4 *rows = reinterpret_cast<const uint4 *>(a.w + static_cast<size_t>(r0) * row_bytes(a.cols));
  uint4 cur[K];
  if (warp < nrows) load_row(cur, rows + static_cast<size_t>(warp) * n16, n16); // weights: before the wait
  pdl_wait();
  pdl_trigger();
  stage_x<kTerms>(a.in, a.cols, xq, xm);
  for (int lr = warp; lr < nrows; lr += warps) {
    uint4 next[K] = {};
    if (lr + warps < nrows) load_row(next, rows + static_cast<size_t>(lr + warps) * n16, n16);
    const float y = row_dot<K, kTerms>(cur, n16, xq, xm);
    if (threadIdx.x % 32 == 0) a.out[r0 + lr] = y * out_scale(a.cols);
#pragma unroll
    for (int k = 0; k < K; ++k)
      cur[k] = next[k];
  }
}

__device__ __forceinline__ void bar_wait(uint32_t bar) {
  uint32_t done = 0;
  do
    asm volatile(
        "{\n .reg .pred p;\n mbarrier.try_wait.parity.shared::cta.b64 p, [%1], 0;\n selp.u32 %0, 1, 0, p;\n}"
        : "=r"(done)
        : "r"(bar)
        : "memory");
  while (!done);
}

template <int K, int kTerms, bool kEarly>
__global__ void __launch_bounds__(kPreloadThreads, 2) preload_kernel(StepArgs a) {
  extern __shared__ __align__(128) unsigned char smem[];
  uint4 *xq = reinterpret_cast<uint4 *>(smem + 128);
  float4 *xm = reinterpret_cast<float4 *>(smem + 128 + terms_bytes(a.cols));
  const uint4 *ws = reinterpret_cast<const uint4 *>(smem + stage_bytes(a.cols));
  const int warp = threadIdx.x / 32, warps = blockDim.x / 32, n16 = a.cols / 32;
  const int r0 = blockIdx.x * a.rows_per_cta, nrows = min(a.rows_per_cta, a.rows - r0);
  const uint32_t bar = static_cast<uint32_t>(__cvta_generic_to_shared(smem));
  const uint32_t bytes = static_cast<uint32_t>(nrows) * static_cast<uint32_t>(row_bytes(a.cols));
  if (threadIdx.x == 0) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" ::"r"(bar) : "memory");
    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(bar), "r"(bytes) : "memory");
    const uint8_t *src = a.w + static_cast<size_t>(r0) * row_bytes(a.cols);
    const uint32_t dst = static_cast<uint32_t>(__cvta_generic_to_shared(ws));
    for (uint32_t off = 0; off < bytes; off += 16384) {
      const uint32_t n = min(16384u, bytes - off);
      asm volatile(
          "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];" ::"r"(
              dst + off),
          "l"(src + off), "r"(n), "r"(bar)
          : "memory");
    }
  }
  if (kEarly) pdl_trigger();
  pdl_wait();
  if (!kEarly) pdl_trigger();
  stage_x<kTerms>(a.in, a.cols, xq, xm); // its barrier also orders the mbarrier's init before the waits
  bar_wait(bar);
  for (int lr = warp; lr < nrows; lr += warps) {
    uint4 w[K];
#pragma unroll
    for (int k = 0; k < K; ++k)
      w[k] = (threadIdx.x % 32) + 32 * k < n16
                 ? ws[static_cast<size_t>(lr) * n16 + (threadIdx.x % 32) + 32 * k]
                 : make_uint4(0, 0, 0, 0);
    const float y = row_dot<K, kTerms>(w, n16, xq, xm);
    if (threadIdx.x % 32 == 0) a.out[r0 + lr] = y * out_scale(a.cols);
  }
}

__global__ void fill_kernel(uint32_t *p, size_t n, uint32_t seed) {
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<size_t>(gridDim.x) * blockDim.x) {
    uint32_t h = static_cast<uint32_t>(i) * 0x9e3779b9u ^ seed;
    h ^= h >> 16, h *= 0x85ebca6bu, h ^= h >> 13, h *= 0xc2b2ae35u, h ^= h >> 16;
    p[i] = h;
  }
}

enum class Variant { Stream, PreloadEarly, PreloadLate, PreloadSolo };
const char *variant_name(Variant v) {
  switch (v) {
  case Variant::Stream: return "stream";
  case Variant::PreloadEarly: return "preload, early trigger";
  case Variant::PreloadLate: return "preload, late trigger";
  case Variant::PreloadSolo: return "preload-solo";
  }
  return "?";
}

using KernelFn = void (*)(StepArgs);
template <int K, int T> KernelFn pick_kt(Variant v) {
  switch (v) {
  case Variant::Stream: return stream_kernel<K, T>;
  case Variant::PreloadEarly: return preload_kernel<K, T, true>;
  case Variant::PreloadLate:
  case Variant::PreloadSolo: return preload_kernel<K, T, false>;
  }
  return nullptr;
}
template <int K> KernelFn pick_k(Variant v, int terms) {
  return terms == 2 ? pick_kt<K, 2>(v) : pick_kt<K, 1>(v);
}
KernelFn pick(Variant v, int cols, int terms) {
  switch ((cols / 32 + 31) / 32) { // 16-byte loads per lane per row: cols up to 8192
  case 1: return pick_k<1>(v, terms);
  case 2: return pick_k<2>(v, terms);
  case 3: return pick_k<3>(v, terms);
  case 4: return pick_k<4>(v, terms);
  case 5: return pick_k<5>(v, terms);
  case 6: return pick_k<6>(v, terms);
  case 7: return pick_k<7>(v, terms);
  case 8: return pick_k<8>(v, terms);
  }
  return nullptr;
}

struct Step {
  Shape shape;
  const uint8_t *w;
};

// The launch of step i of `steps` (activations ping-pong between act[0] and act[1]); false where the
// variant cannot hold the shape.
bool launch(const std::vector<Step> &steps, int i, Variant v, int terms, int sms, float *const act[2],
            cudaStream_t s, bool dry) {
  const Shape sh = steps[i].shape;
  const int rows_per_cta = (sh.rows + sms - 1) / sms;
  const int grid = (sh.rows + rows_per_cta - 1) / rows_per_cta;
  const bool stream = v == Variant::Stream;
  size_t smem = stage_bytes(sh.cols);
  if (!stream) smem += static_cast<size_t>(rows_per_cta) * row_bytes(sh.cols);
  if (!stream && smem > kPairSmem) return false;
  if (stream || v == Variant::PreloadSolo) smem = kHoldSmem;
  if (dry) return true;
  cudaLaunchAttribute attr{};
  attr.id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attr.val.programmaticStreamSerializationAllowed = 1;
  cudaLaunchConfig_t cfg{};
  cfg.gridDim = dim3(static_cast<unsigned>(grid));
  cfg.blockDim = dim3(stream ? kStreamThreads : kPreloadThreads);
  cfg.dynamicSmemBytes = smem;
  cfg.stream = s;
  cfg.attrs = &attr;
  cfg.numAttrs = 1;
  const StepArgs a{steps[i].w, act[i % 2], act[(i + 1) % 2], sh.rows, sh.cols, rows_per_cta};
  timing_ok(cudaLaunchKernelEx(&cfg, pick(v, sh.cols, terms), a), "step launch");
  return true;
}

// carveout >= 0: every kernel asks for that percentage of shared memory (one configuration for all).
void allow_smem(int cols, int terms, int carveout) {
  for (const Variant v : {Variant::Stream, Variant::PreloadEarly, Variant::PreloadLate}) {
    timing_ok(cudaFuncSetAttribute(pick(v, cols, terms), cudaFuncAttributeMaxDynamicSharedMemorySize,
                                   static_cast<int>(kHoldSmem)),
              "shared memory attribute");
    if (carveout >= 0)
      timing_ok(cudaFuncSetAttribute(pick(v, cols, terms), cudaFuncAttributePreferredSharedMemoryCarveout,
                                     carveout),
                "carveout attribute");
  }
}

} // namespace

int main(int argc, char **argv) try {
  int layers = 24, terms = 2, carveout = -1;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    char *end = nullptr;
    if (a == "--layers" && i + 1 < argc &&
        (layers = static_cast<int>(std::strtol(argv[++i], &end, 10))) > 0 && layers <= 96 && *end == '\0')
      continue;
    if (a == "--terms" && i + 1 < argc && (terms = static_cast<int>(std::strtol(argv[++i], &end, 10))) >= 1 &&
        terms <= 2 && *end == '\0')
      continue;
    if (a == "--carveout" && i + 1 < argc &&
        (carveout = static_cast<int>(std::strtol(argv[++i], &end, 10))) >= 0 && carveout <= 100 &&
        *end == '\0')
      continue;
    std::fprintf(stderr,
                 "usage: preload_bench [--layers 1..96] [--terms 1|2] [--carveout 0..100]  (found '%s')\n",
                 a.c_str());
    return 2;
  }
  const cudaDeviceProp prop = wo::bench::current_device();
  const int sms = prop.multiProcessorCount;
  for (const Shape &sh : kLayer)
    allow_smem(sh.cols, terms, carveout);
  cudaStream_t s;
  timing_ok(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "stream");
  float *act[2];
  for (float *&p : act)
    timing_ok(cudaMalloc(&p, kActFloats * sizeof(float)), "malloc activations");
  std::vector<float> x0(kActFloats);
  for (int i = 0; i < kActFloats; ++i)
    x0[i] = std::sin(0.37f * static_cast<float>(i)) + 0.1f * std::cos(5.1f * static_cast<float>(i));

  // Sequences: a whole layer's four steps, then each shape alone (4 x layers steps of it).
  std::vector<std::pair<std::string, std::vector<Shape>>> seqs;
  seqs.push_back({"layer (qkv, o, gate/up, down)", std::vector<Shape>(std::begin(kLayer), std::end(kLayer))});
  for (const Shape &sh : kLayer)
    seqs.push_back({sh.name, std::vector<Shape>(4, sh)});

  std::printf("%s, %d SMs; %d layers of Qwen2.5-0.5B's GEMV shapes, 4-bit weights, %d activation term%s, "
              "graph + PDL, carveout %d\n",
              prop.name, sms, layers, terms, terms == 2 ? "s" : "", carveout);
  std::printf("%-30s %-24s %10s %12s %10s\n", "sequence", "variant", "us/step", "weights GB/s", "same bits");
  for (const auto &[name, pattern] : seqs) {
    std::vector<Step> steps;
    size_t total = 0;
    for (int l = 0; l < layers; ++l)
      for (const Shape &sh : pattern) {
        steps.push_back({sh, nullptr});
        total += static_cast<size_t>(sh.rows) * row_bytes(sh.cols);
      }
    uint8_t *pool = nullptr;
    timing_ok(cudaMalloc(&pool, total), "malloc weights");
    fill_kernel<<<1024, 256, 0, s>>>(reinterpret_cast<uint32_t *>(pool), total / 4, 0x5eedu);
    timing_ok(cudaGetLastError(), "fill launch");
    size_t at = 0;
    for (Step &st : steps) {
      st.w = pool + at;
      at += static_cast<size_t>(st.shape.rows) * row_bytes(st.shape.cols);
    }
    const int n = static_cast<int>(steps.size());
    std::vector<float> first;
    for (const Variant v :
         {Variant::Stream, Variant::PreloadEarly, Variant::PreloadLate, Variant::PreloadSolo}) {
      bool fits = true;
      for (int i = 0; i < n; ++i)
        fits = fits && launch(steps, i, v, terms, sms, act, s, true);
      if (!fits) {
        std::printf("%-30s %-24s %10s\n", name.c_str(), variant_name(v), "no fit");
        continue;
      }
      // One pass from x0 for the bits, then the timing.
      for (float *p : act)
        timing_ok(cudaMemcpyAsync(p, x0.data(), kActFloats * sizeof(float), cudaMemcpyHostToDevice, s), "x0");
      for (int i = 0; i < n; ++i)
        launch(steps, i, v, terms, sms, act, s, false);
      std::vector<float> out(kActFloats);
      timing_ok(
          cudaMemcpyAsync(out.data(), act[n % 2], kActFloats * sizeof(float), cudaMemcpyDeviceToHost, s),
          "result");
      timing_ok(cudaStreamSynchronize(s), "pass");
      if (first.empty()) first = out;
      const bool same = std::memcmp(first.data(), out.data(), out.size() * sizeof(float)) == 0;
      const double us =
          wo::bench::graph_us_per_call(s, n, [&](int i) { launch(steps, i, v, terms, sms, act, s, false); });
      std::printf("%-30s %-24s %10.2f %12.0f %10s\n", name.c_str(), variant_name(v), us,
                  static_cast<double>(total) / n / (us * 1e3), same ? "yes" : "NO");
    }
    timing_ok(cudaFree(pool), "free weights");
  }
  for (float *p : act)
    timing_ok(cudaFree(p), "free activations");
  timing_ok(cudaStreamDestroy(s), "stream destroy");
  return 0;
} catch (const std::exception &e) {
  std::fprintf(stderr, "preload_bench: %s\n", e.what());
  return 1;
}
