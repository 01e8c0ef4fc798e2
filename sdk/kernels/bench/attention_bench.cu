// Decode attention latency: one query per call through rope_kv_attention (the one-launch decode
// path the llama and gpt plugins take), at the three spec shapes and several depths.
//
// Each timing replays a CUDA graph of `layers` calls, one per layer's KV cache, with as many
// layers as it takes for the caches to exceed the L2 cache twice (so keys come from HBM, as in a
// real step), and reports the median over 15 replays: microseconds per call and the K/V bytes the
// call reads divided by that time. Consecutive calls overlap only through PDL, as they would in a
// decode step.
//
//   attention_bench [--shapes qwen,phi3,oss-full,oss-window] [--depths 128,2048,8192]
#include <worker/bench_timing.hpp>
#include <worker/kernels.hpp>

#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace {

namespace k = wo::kernels;

void cuda_ok(cudaError_t e, const char *what) {
  if (e != cudaSuccess) throw std::runtime_error(std::string(what) + ": " + cudaGetErrorString(e));
}

struct Shape {
  const char *name;
  int32_t n_heads, n_kv_heads, head_dim;
  bool biases, sinks;
  int64_t window;
};
const Shape kShapes[] = {
    {"qwen", 14, 2, 64, true, false, 0},        // Qwen2.5-0.5B
    {"phi3", 32, 32, 96, false, false, 0},      // Phi-3-mini
    {"oss-full", 64, 8, 64, true, true, 0},     // GPT-OSS-20B, full-attention layers
    {"oss-window", 64, 8, 64, true, true, 128}, // GPT-OSS-20B, sliding-window layers
};

std::vector<std::string> split_list(const std::string &s) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  for (std::string item; std::getline(ss, item, ',');)
    if (!item.empty()) out.push_back(item);
  return out;
}

template <class T> T *device_random(size_t n, std::mt19937 &rng, float sd) {
  std::normal_distribution<float> d(0.0f, sd);
  std::vector<T> h(n);
  for (auto &x : h)
    x = static_cast<T>(d(rng));
  T *p = nullptr;
  cuda_ok(cudaMalloc(&p, n * sizeof(T)), "cudaMalloc");
  cuda_ok(cudaMemcpy(p, h.data(), n * sizeof(T), cudaMemcpyHostToDevice), "upload");
  return p;
}

void run(const Shape &sh, int64_t depth, size_t l2_bytes) {
  std::mt19937 rng(1234);
  const int64_t hd = sh.head_dim, QD = sh.n_heads * hd, KVD = sh.n_kv_heads * hd, n_ctx = depth + 1;
  const size_t layer_bytes = 2 * static_cast<size_t>(n_ctx) * KVD * sizeof(__half);
  const int layers =
      static_cast<int>(std::clamp<size_t>((2 * l2_bytes + layer_bytes - 1) / layer_bytes, 4, 64));

  std::vector<__half *> kc(layers), vc(layers);
  std::vector<float *> qkv(layers), outs(layers);
  for (int l = 0; l < layers; ++l) {
    kc[l] = device_random<__half>(n_ctx * KVD, rng, 1.0f);
    vc[l] = device_random<__half>(n_ctx * KVD, rng, 1.0f);
    qkv[l] = device_random<float>(QD + 2 * KVD, rng, 1.0f);
    cuda_ok(cudaMalloc(&outs[l], QD * sizeof(float)), "cudaMalloc out");
  }
  float *qb = device_random<float>(QD + 2 * KVD, rng, 0.3f);
  float *sinks = device_random<float>(sh.n_heads, rng, 1.0f);
  int32_t *pos = nullptr;
  const int32_t p = static_cast<int32_t>(depth);
  cuda_ok(cudaMalloc(&pos, sizeof(int32_t)), "cudaMalloc pos");
  cuda_ok(cudaMemcpy(pos, &p, sizeof(int32_t), cudaMemcpyHostToDevice), "upload pos");
  const int64_t ws_floats = k::attention_workspace_floats(1, sh.n_heads, sh.head_dim);
  float *ws = nullptr;
  cuda_ok(cudaMalloc(&ws, ws_floats * sizeof(float)), "cudaMalloc ws");
  cudaStream_t s;
  cuda_ok(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "stream");
  cuda_ok(k::attention_workspace_clear(ws, ws_floats, s), "ws clear");

  k::RopeParams rp;
  rp.mode = k::RopeMode::Neox;
  const auto call = [&](int l) {
    k::QkvRopeCache a;
    a.q = qkv[l], a.k = qkv[l] + QD, a.v = qkv[l] + QD + KVD;
    a.q_stride = a.kv_stride = QD + 2 * KVD;
    if (sh.biases) a.q_bias = qb, a.k_bias = qb + QD, a.v_bias = qb + QD + KVD;
    a.k_cache = kc[l], a.v_cache = vc[l];
    a.positions = pos;
    a.positions_settled = true;
    a.n_heads = sh.n_heads, a.n_kv_heads = sh.n_kv_heads, a.head_dim = sh.head_dim;
    k::AttentionParams ap;
    ap.n_tokens = 1, ap.pos0 = depth, ap.n_kv = n_ctx;
    ap.n_heads = sh.n_heads, ap.n_kv_heads = sh.n_kv_heads, ap.head_dim = sh.head_dim;
    ap.scale = 1.0f / std::sqrt(static_cast<float>(hd));
    ap.window = sh.window;
    ap.sinks = sh.sinks ? sinks : nullptr;
    ap.q_stride = QD + 2 * KVD;
    ap.workspace = ws, ap.workspace_floats = ws_floats;
    ap.positions = pos;
    cuda_ok(k::rope_kv_attention(a, rp, outs[l], ap, s), "rope_kv_attention");
  };

  const double us = wo::bench::graph_us_per_call(s, layers, call);
  const int64_t keys = sh.window > 0 ? std::min<int64_t>(sh.window, n_ctx) : n_ctx;
  const double bytes = 2.0 * static_cast<double>(keys) * KVD * sizeof(__half);
  std::printf("%-11s depth %6lld  %3d layers  %8.2f us/call  %7.1f GB/s  (K+V %.2f MB)\n", sh.name,
              static_cast<long long>(depth), layers, us, bytes / us / 1e3, bytes / 1e6);

  cuda_ok(cudaStreamDestroy(s), "stream destroy");
  for (int l = 0; l < layers; ++l) {
    cuda_ok(cudaFree(kc[l]), "free");
    cuda_ok(cudaFree(vc[l]), "free");
    cuda_ok(cudaFree(qkv[l]), "free");
    cuda_ok(cudaFree(outs[l]), "free");
  }
  for (void *q : {static_cast<void *>(qb), static_cast<void *>(sinks), static_cast<void *>(pos),
                  static_cast<void *>(ws)})
    cuda_ok(cudaFree(q), "free");
}

} // namespace

int main(int argc, char **argv) {
  std::string shapes = "qwen,phi3,oss-full,oss-window", depths = "128,2048,8192";
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string a = argv[i];
    if (a == "--shapes")
      shapes = argv[i + 1];
    else if (a == "--depths")
      depths = argv[i + 1];
    else {
      std::fprintf(stderr, "attention_bench: unknown option %s (expected --shapes or --depths)\n", a.c_str());
      return 2;
    }
  }
  try {
    int dev = 0, l2 = 0;
    cuda_ok(cudaGetDevice(&dev), "cudaGetDevice");
    cuda_ok(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, dev), "L2 size");
    for (const std::string &name : split_list(shapes)) {
      const Shape *sh = nullptr;
      for (const Shape &c : kShapes)
        if (name == c.name) sh = &c;
      if (!sh) {
        std::fprintf(stderr,
                     "attention_bench: unknown shape '%s' (expected qwen, phi3, oss-full, oss-window)\n",
                     name.c_str());
        return 2;
      }
      for (const std::string &d : split_list(depths))
        run(*sh, std::stoll(d), static_cast<size_t>(l2));
    }
  } catch (const std::exception &e) {
    std::fprintf(stderr, "attention_bench: %s\n", e.what());
    return 1;
  }
  return 0;
}
