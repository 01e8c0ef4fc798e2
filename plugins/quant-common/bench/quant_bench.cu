// GEMV bandwidth benchmark of the codec plugins, loaded from their .so like the host loads them.
//
// For each type/shape: weight bytes / GEMV time (n_tokens = 1), as a fraction of the device-to-
// device cudaMemcpy bandwidth measured in the same run ((read + write) bytes / time). Each timing
// replays a CUDA graph of 50 GEMVs that cycle over enough copies of the weight to exceed the L2
// cache, so bytes really come from HBM; the median of 15 replays is reported. Also prints prefill
// (n_tokens = 512) throughput at 4096x4096.
//
//   quant_bench [plugin_dir]      (default: $WORKER_PLUGIN_DIR, else the build's plugins/)
//   WORKER_QUANT_GEMV=1|2|3 quant_bench   measures that GEMV variant (linear_kernels.cuh,
//   gemv_variant(): 1 FP32 one row per warp, 2 multi-row, 3 int8-activation dp4a)
//   WORKER_BENCH_CASES="Q4_K:9216x3072 MXFP4"   only the cases whose "TYPE:ROWSxCOLS" contains one
//   of the words (for profiling one shape under ncu)
#include "quant_common/device_test_host.hpp"
#include "quant_common/random_blocks.hpp"

#include <worker/bench_timing.hpp>
#include <worker/ggml_types.hpp>
#include <worker/sdk.h>

#include <dlfcn.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

namespace {

using namespace wo::quant;

const wo_quant_v1 *load_codec(const std::string &path) {
  void *lib = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!lib) throw std::runtime_error("dlopen " + path + ": " + dlerror());
  auto *alias = static_cast<const void *const *>(dlsym(lib, WORKER_PLUGIN_ENTRY_NAME));
  if (!alias) throw std::runtime_error(path + ": no " WORKER_PLUGIN_ENTRY_NAME);
  const wo_plugin *d =
      reinterpret_cast<wo_plugin_entry_fn>(*alias)(WORKER_SDK_ABI_MAJOR, WORKER_SDK_ABI_MINOR);
  if (!d) throw std::runtime_error(path + ": refused ABI");
  return static_cast<const wo_quant_v1 *>(d->vtable);
}

using wo::bench::graph_us_per_call;
using wo::bench::time_ms;

double copy_bandwidth(cudaStream_t s) {
  const size_t bytes = 512ull << 20;
  void *src = nullptr, *dst = nullptr;
  cuda_ok(cudaMalloc(&src, bytes), "cudaMalloc");
  cuda_ok(cudaMalloc(&dst, bytes), "cudaMalloc");
  cuda_ok(cudaMemset(src, 1, bytes), "memset");
  const float ms =
      time_ms(s, 15, [&] { cuda_ok(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, s), "copy"); });
  cudaFree(src);
  cudaFree(dst);
  return 2.0 * bytes / (ms * 1e-3);
}

struct Case {
  uint32_t type;
  int64_t rows, cols;
  int experts = 0, used = 0; // > 0: linear_id over `used` of `experts` matrices (one token)
};

// linear_id over c.used of c.experts matrices per call, one token. Call i of a graph picks experts
// 4i.. (mod experts), so a graph of 50 calls reads every expert's bytes from HBM (32 x 4.4 MB for
// GPT-OSS exceeds the L2); bytes per call = used x one expert's matrix.
void bench_experts(const wo_quant_v1 *q, DeviceTestHost &dev, const Case &c, double copy_bw) {
  const uint64_t expert_bytes = wo::ggml::row_bytes(c.type, c.cols) * c.rows;
  const uint64_t bytes = expert_bytes * c.experts;
  const auto raw = random_blocks(c.type, c.rows * c.experts, c.cols, 4321 + c.type);
  void *w = nullptr;
  cuda_ok(cudaMalloc(&w, bytes), "cudaMalloc experts");
  cuda_ok(cudaMemcpy(w, raw.data(), bytes, cudaMemcpyHostToDevice), "upload");
  wo_tensor t{};
  t.struct_size = sizeof(wo_tensor);
  t.ggml_type = c.type;
  t.name = "bench.experts";
  t.n_dims = 3;
  t.ne[0] = c.cols;
  t.ne[1] = c.rows;
  t.ne[2] = c.experts;
  t.ne[3] = 1;
  t.nb1 = wo::ggml::row_bytes(c.type, c.cols);
  t.nbytes = bytes;
  t.data = w;
  const int per_graph = 50;
  std::vector<int32_t> ids(static_cast<size_t>(per_graph) * c.used);
  for (size_t i = 0; i < ids.size(); ++i)
    ids[i] = static_cast<int32_t>(i % c.experts);
  int32_t *d_ids = nullptr;
  float *x = nullptr, *y = nullptr;
  cuda_ok(cudaMalloc(&d_ids, ids.size() * sizeof(int32_t)), "cudaMalloc ids");
  cuda_ok(cudaMemcpy(d_ids, ids.data(), ids.size() * sizeof(int32_t), cudaMemcpyHostToDevice), "upload ids");
  cuda_ok(cudaMalloc(&x, c.cols * sizeof(float)), "cudaMalloc x");
  cuda_ok(cudaMalloc(&y, static_cast<size_t>(c.used) * c.rows * sizeof(float)), "cudaMalloc y");
  cuda_ok(cudaMemset(x, 0x3c, c.cols * sizeof(float)), "memset x");
  const double us = graph_us_per_call(dev.stream(), per_graph, [&](int i) {
    if (q->linear_id(dev.host(), &t, x, WO_DTYPE_F32, 1, y, WO_DTYPE_F32, 1, d_ids + i * c.used, c.used) !=
        WO_OK)
      throw std::runtime_error(q->last_error());
  });
  const double bw = static_cast<double>(expert_bytes) * c.used / (us * 1e-6);
  std::printf("%-6s %7lldx%-6lld %10.2f %10.2f %10.1f %8.1f%%  (linear_id, %d of %d experts)\n",
              wo::ggml::type_name(c.type), static_cast<long long>(c.rows), static_cast<long long>(c.cols),
              expert_bytes * c.used / 1048576.0, us, bw / 1e9, 100.0 * bw / copy_bw, c.used, c.experts);
  cudaFree(x);
  cudaFree(y);
  cudaFree(d_ids);
  cudaFree(w);
}

} // namespace

int main(int argc, char **argv) try {
  if (!cuda_device_present()) {
    std::printf("quant_bench: no CUDA device\n");
    return 0;
  }
  const char *env = std::getenv("WORKER_PLUGIN_DIR");
  const std::string dir = argc > 1 ? argv[1] : (env && *env ? env : WORKER_PLUGIN_DIR_DEFAULT);
  const wo_quant_v1 *ggml = load_codec(dir + "/quant-ggml.so");
  const wo_quant_v1 *mxfp4 = load_codec(dir + "/quant-mxfp4.so");
  DeviceTestHost dev;
  cudaDeviceProp prop{};
  cuda_ok(cudaGetDeviceProperties(&prop, 0), "props");
  const double copy_bw = copy_bandwidth(dev.stream());
  std::printf("device: %s, L2 %d MiB\n", prop.name, prop.l2CacheSize >> 20);
  std::printf("D2D cudaMemcpy bandwidth (read+write): %.1f GB/s\n", copy_bw / 1e9);
  const char *variant = std::getenv("WORKER_QUANT_GEMV");
  std::printf("GEMV kernel variant (WORKER_QUANT_GEMV): %s\n\n", variant && *variant ? variant : "(default)");
  std::printf("%-6s %14s %10s %10s %10s %9s\n", "type", "rows x cols", "MiB", "us/GEMV", "GB/s", "of copy");

  const Case cases[] = {
      {wo::ggml::Q4_K, 4096, 4096},
      {wo::ggml::Q4_K, 151936, 1024},
      {wo::ggml::Q6_K, 4096, 4096},
      {wo::ggml::Q6_K, 151936, 1024},
      {wo::ggml::Q8_0, 4096, 4096},
      {wo::ggml::Q8_0, 151936, 896},
      {wo::ggml::Q5_0, 4096, 4096},
      {wo::ggml::Q5_0, 151936, 896},
      {wo::ggml::MXFP4, 4096, 4096},
      {wo::ggml::MXFP4, 151936, 896},
      {wo::ggml::MXFP4, 2880, 2880},
      {wo::ggml::Q4_0, 4096, 4096},
      {wo::ggml::F16, 4096, 4096},
      {wo::ggml::Q5_K, 4096, 4096},
      // The decode projections of the three spec shapes (rows x cols as the models hold them):
      // Qwen2.5-0.5B q/o, k/v, gate/up, down; Phi-3-mini qkv, o, gate+up, down, LM head;
      // GPT-OSS-20B q, o, one expert's gate+up, LM head.
      {wo::ggml::Q5_0, 896, 896},
      {wo::ggml::Q5_0, 128, 896},
      {wo::ggml::Q5_0, 4864, 896},
      {wo::ggml::Q5_0, 9728, 896}, // gate and up stacked (linear_swiglu's pass)
      {wo::ggml::Q8_0, 896, 896},  // Qwen's Q5_0 shapes in Q8_0: the cost of the fifth bits' decode
      {wo::ggml::Q8_0, 9728, 896},
      {wo::ggml::Q4_K, 896, 4864},
      {wo::ggml::Q6_K, 896, 4864},
      {wo::ggml::Q4_K, 9216, 3072},
      {wo::ggml::Q4_K, 3072, 3072},
      {wo::ggml::Q4_K, 16384, 3072},
      {wo::ggml::Q4_K, 3072, 8192},
      {wo::ggml::Q6_K, 3072, 8192},
      {wo::ggml::Q6_K, 32064, 3072},
      {wo::ggml::Q8_0, 4096, 2880},
      {wo::ggml::Q8_0, 2880, 4096},
      {wo::ggml::MXFP4, 5760, 2880},
      {wo::ggml::Q8_0, 201088, 2880},
      // GPT-OSS-20B's expert GEMVs as decode runs them: linear_id, 4 of 32 experts per call
      // (gate, up and down are each 2880x2880 per expert).
      {wo::ggml::MXFP4, 2880, 2880, 32, 4},
  };
  const char *only = std::getenv("WORKER_BENCH_CASES");
  const auto selected = [&](const Case &c) {
    if (!only || !*only) return true;
    const std::string name = std::string(wo::ggml::type_name(c.type)) + ":" + std::to_string(c.rows) + "x" +
                             std::to_string(c.cols) +
                             (c.experts ? "x" + std::to_string(c.experts) + "ids" : "");
    std::string words = only;
    for (size_t at = 0; at < words.size();) {
      const size_t end = std::min(words.find(' ', at), words.size());
      if (end > at && name.find(words.substr(at, end - at)) != std::string::npos) return true;
      at = end + 1;
    }
    return false;
  };
  for (const Case &c : cases) {
    if (!selected(c)) continue;
    const wo_quant_v1 *q = c.type == wo::ggml::MXFP4 ? mxfp4 : ggml;
    if (c.experts) {
      bench_experts(q, dev, c, copy_bw);
      continue;
    }
    const uint64_t bytes = wo::ggml::row_bytes(c.type, c.cols) * c.rows;
    const int copies = static_cast<int>(std::max<uint64_t>(1, (3ull * prop.l2CacheSize + bytes - 1) / bytes));
    const auto raw = random_blocks(c.type, c.rows, c.cols, 1234 + c.type);
    std::vector<void *> w(copies);
    std::vector<wo_tensor> t(copies);
    for (int i = 0; i < copies; ++i) {
      cuda_ok(cudaMalloc(&w[i], bytes), "cudaMalloc weights");
      cuda_ok(cudaMemcpy(w[i], raw.data(), bytes, cudaMemcpyHostToDevice), "upload");
      t[i] = wo_tensor{};
      t[i].struct_size = sizeof(wo_tensor);
      t[i].ggml_type = c.type;
      t[i].name = "bench.weight";
      t[i].n_dims = 2;
      t[i].ne[0] = c.cols;
      t[i].ne[1] = c.rows;
      t[i].ne[2] = t[i].ne[3] = 1;
      t[i].nb1 = wo::ggml::row_bytes(c.type, c.cols);
      t[i].nbytes = bytes;
      t[i].data = w[i];
    }
    float *x = nullptr, *y = nullptr;
    cuda_ok(cudaMalloc(&x, 512 * c.cols * sizeof(float)), "cudaMalloc x");
    cuda_ok(cudaMalloc(&y, 512 * c.rows * sizeof(float)), "cudaMalloc y");
    // Non-zero activations (every float 0x3c3c3c3c = 0.0115), so no kernel takes a zero shortcut.
    cuda_ok(cudaMemset(x, 0x3c, 512 * c.cols * sizeof(float)), "memset x");

    const double us = graph_us_per_call(dev.stream(), 50, [&](int i) {
      if (q->linear(dev.host(), &t[i % copies], x, WO_DTYPE_F32, y, WO_DTYPE_F32, 1) != WO_OK)
        throw std::runtime_error(q->last_error());
    });
    const double bw = bytes / (us * 1e-6);
    std::printf("%-6s %7lldx%-6lld %10.2f %10.2f %10.1f %8.1f%%\n", wo::ggml::type_name(c.type),
                static_cast<long long>(c.rows), static_cast<long long>(c.cols), bytes / 1048576.0, us,
                bw / 1e9, 100.0 * bw / copy_bw);

    if (c.rows == 4096 && c.cols == 4096) { // prefill: dequantize to FP16 + cuBLAS
      const float gms = time_ms(dev.stream(), 5, [&] {
        if (q->linear(dev.host(), &t[0], x, WO_DTYPE_F32, y, WO_DTYPE_F32, 512) != WO_OK)
          throw std::runtime_error(q->last_error());
      });
      std::printf("%-6s %7lldx%-6lld n=512 prefill: %.3f ms, %.1f TFLOP/s\n", wo::ggml::type_name(c.type),
                  static_cast<long long>(c.rows), static_cast<long long>(c.cols), gms,
                  2.0 * 512 * c.rows * c.cols / (gms * 1e-3) / 1e12);
    }
    cudaFree(x);
    cudaFree(y);
    for (void *p : w)
      cudaFree(p);
  }
  return 0;
} catch (const std::exception &e) {
  std::fprintf(stderr, "quant_bench: %s\n", e.what());
  return 1;
}
