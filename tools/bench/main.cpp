// bench: the figures users trust. Loads a model in the engine and reports load time (cold and warm
// file cache), VRAM by category, time to first token, prefill and decode speed with inter-token
// latency, and the decode floor (weight bytes read per token / HBM bandwidth measured in the same
// run). `--http URL` measures the same things as a client of the running worker sees them.
//
//   bench --model M [--plugin-dir D] [--json] [--n-decode 256] [--prompts 16,128,512,2048]
//         [--depths 0,2048] [--reps 3] [--profile-steps N] [--profile-prefill N] [--timeline N]
//   bench --http http://127.0.0.1:8080 [--n-decode 256] [--reps 5] [--json]
#include "http_bench.hpp"
#include "stats.hpp"
#if WORKER_BENCH_TIMELINE
#include "kernel_timeline.hpp"
#endif

#include "engine/engine.hpp"
#include "gguf/gguf_file.hpp"
#include "plugins/registry.hpp"
#include "sampling/gpu_sampler.hpp"

#include <worker/env_switch.hpp>
#include <worker/sdk.hpp>

#include <cuda_profiler_api.h>
#include <cuda_runtime.h>
#include <dirent.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <functional>
#include <memory>
#include <random>
#include <sstream>
#include <string>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;
using wo::bench::median;
using wo::bench::percentile;

struct Options {
  std::string model, plugin_dir, http;
  bool json = false;
  int gpu = 0;
  int n_decode = 256;
  int reps = 3;
  std::vector<int> prompts = {16, 128, 512, 2048};
  std::vector<int> depths = {0, 2048}; // decode from an empty context and at 2048 (the perf goals' points)
  int profile_steps = 0;    // > 0: only decode N tokens at the first depth between cudaProfilerStart/Stop
  int profile_prefill = 0;  // > 0: only prefill N tokens (after one unprofiled warm-up) in the profiled range
  int timeline = 0;         // > 0: only decode N tokens at the first depth and print their kernel timeline
  int timeline_prefill = 0; // > 0: only prefill N tokens (--reps times) and print their kernel timeline
  int timeline_rows = 24;   // rows of the timeline's class table and of its in-order listing
  wo::sampling::SamplingParams decode = greedy(); // --sample: the decode steps' sampler (TTFT stays greedy)

  static wo::sampling::SamplingParams greedy() {
    wo::sampling::SamplingParams p;
    p.temperature = 0;
    return p;
  }
};

std::vector<std::string> split_commas(const std::string &s) {
  std::vector<std::string> f;
  std::stringstream ss(s);
  for (std::string x; std::getline(ss, x, ',');)
    f.push_back(x);
  return f;
}

// --sample T,K,P,M: temperature, top-k, top-p, min-p (as a request's fields; T = 0 is greedy).
wo::sampling::SamplingParams parse_sampling(const std::string &s) {
  const std::vector<std::string> f = split_commas(s);
  if (f.size() != 4)
    throw std::runtime_error("--sample: expected T,K,P,M (temperature, top-k, top-p, min-p), found '" + s +
                             "'");
  wo::sampling::SamplingParams p;
  p.temperature = std::stof(f[0]);
  p.top_k = std::stoi(f[1]);
  p.top_p = std::stof(f[2]);
  p.min_p = std::stof(f[3]);
  return p;
}

std::vector<int> parse_list(const std::string &s) {
  std::vector<int> v;
  for (const std::string &x : split_commas(s))
    v.push_back(std::stoi(x));
  return v;
}

double secs_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

void check(cudaError_t e, const char *what) {
  if (e != cudaSuccess) throw std::runtime_error(std::string(what) + ": " + cudaGetErrorString(e));
}

// Device-to-device copy bandwidth (read + write bytes per second), median of 20 copies of 1 GiB.
double measure_copy_bandwidth() {
  const size_t bytes = size_t{1} << 30;
  void *a = nullptr, *b = nullptr;
  check(cudaMalloc(&a, bytes), "cudaMalloc a");
  check(cudaMalloc(&b, bytes), "cudaMalloc b");
  check(cudaMemset(a, 1, bytes), "memset");
  cudaEvent_t e0, e1;
  check(cudaEventCreate(&e0), "event");
  check(cudaEventCreate(&e1), "event");
  std::vector<double> bw;
  for (int i = 0; i < 23; ++i) {
    check(cudaEventRecord(e0), "record");
    check(cudaMemcpyAsync(b, a, bytes, cudaMemcpyDeviceToDevice), "copy");
    check(cudaEventRecord(e1), "record");
    check(cudaEventSynchronize(e1), "sync");
    float ms = 0;
    check(cudaEventElapsedTime(&ms, e0, e1), "elapsed");
    if (i >= 3) bw.push_back(2.0 * static_cast<double>(bytes) / (ms * 1e-3));
  }
  cudaEventDestroy(e0);
  cudaEventDestroy(e1);
  cudaFree(a);
  cudaFree(b);
  return median(bw);
}

// Weight bytes one decode step reads: every matrix once, the LM head included; the embedding
// table only when it doubles as the LM head; MoE experts only for the experts a token uses.
double weight_bytes_per_token(const std::string &model) {
  auto f = wo::gguf::File::open(model);
  const std::string arch = f->architecture();
  const bool has_output = f->find_tensor("output.weight") != nullptr;
  double n_expert = 1;
  for (const auto &t : f->tensors())
    if (t.name.find("_exps.") != std::string::npos && t.n_dims == 3) n_expert = static_cast<double>(t.ne[2]);
  const double n_used = f->has(arch + ".expert_used_count")
                            ? static_cast<double>(f->get_int(arch + ".expert_used_count"))
                            : 1.0;
  double sum = 0;
  for (const auto &t : f->tensors()) {
    double b = static_cast<double>(t.nbytes);
    if (t.name == "token_embd.weight" && has_output) continue;
    if (t.name.find("_exps.") != std::string::npos) b *= n_used / n_expert;
    sum += b;
  }
  return sum;
}

struct Bench {
  const Options &o;
  std::unique_ptr<wo::engine::Engine> engine;
  std::unique_ptr<wo::sampling::GpuSampler> sampler;
  const std::string plugin_dir; // the engine's (--plugin-dir or the registry's default)
  // WORKER_RUN_AHEAD=0: decode steps queued after the host's wait for the token before them, as the
  // worker then queues them (generation/engine_backend.cpp).
  const bool run_ahead = !wo::env_switched_off("WORKER_RUN_AHEAD");
  std::mt19937 rng{1234};
  std::mt19937_64 draws{42}; // the sampler's uniforms (--sample), as the worker draws them
  double next_u() { return wo::sampling::uniform_from_bits(draws()); }

  std::vector<int32_t> random_prompt(int n) {
    std::uniform_int_distribution<int32_t> d(
        0, static_cast<int32_t>(std::min<int64_t>(engine->vocab_size(), 30000) - 1));
    std::vector<int32_t> ids(static_cast<size_t>(n));
    for (auto &x : ids)
      x = d(rng);
    return ids;
  }

  void make_sampler() {
    const wo_host *h = engine->host();
    sampler = std::make_unique<wo::sampling::GpuSampler>(
        engine->vocab_size(), engine->stream(),
        [h](size_t bytes) -> void * {
          void *p = nullptr;
          return h->vram_alloc(h->ctx, bytes, WO_VRAM_SCRATCH, &p) == WO_OK ? p : nullptr;
        },
        [h](void *p) { h->vram_free(h->ctx, p); });
  }

  // Prefill n tokens from position 0 and choose the first token. Seconds: TTFT, the prefill alone
  // (forward + wait), and the host's enqueue of the forward. `before` runs just before the forward
  // (a timeline's mark).
  struct Prefill {
    double total, prefill, enqueue;
  };
  Prefill ttft(int n, const std::function<void()> &before = {}) {
    auto ids = random_prompt(n);
    engine->begin_session(n + 8);
    wo::sampling::SamplingParams greedy;
    greedy.temperature = 0;
    engine->synchronize();
    if (before) before();
    auto t0 = Clock::now();
    engine->forward(ids.data(), n, 0, false);
    const double enqueue = secs_since(t0);
    engine->synchronize();
    double prefill = secs_since(t0);
    sampler->reset();
    sampler->sample(engine->logits_device(), greedy, 0);
    sampler->fetch_id();
    double total = secs_since(t0);
    engine->end_session();
    return {total, prefill, enqueue};
  }

  // One decode step as the worker queues it (generation/engine_backend.cpp): the forward of the
  // device's last id at `pos`, the sampler's kernels and the new id's publication; its ticket.
  int queue_step(int64_t pos) {
    engine->forward(sampler->device_id(), 1, pos, false, true);
    return sampler->sample_request(engine->logits_device(), o.decode, next_u());
  }

  // Waits for `ticket`'s token and queues the step at `pos` (pos < 0: none) in the worker's order:
  // before the wait with run-ahead, after it without. Returns the queued step's ticket (-1: none);
  // `got`, if given, the time the token reached the host.
  int wait_and_queue(int ticket, int64_t pos, Clock::time_point *got = nullptr) {
    const int next = run_ahead && pos >= 0 ? queue_step(pos) : -1;
    sampler->wait_id(ticket);
    if (got) *got = Clock::now();
    return run_ahead || pos < 0 ? next : queue_step(pos);
  }

  // Decode after a prompt of `depth` tokens: 8 warm-up steps (graph captures made), then `steps`
  // measured ones, queued as the worker queues them: one step ahead of the host's wait for the
  // previous token (WORKER_RUN_AHEAD=0: after it). at_step(i) runs on the host before measured
  // step i is queued, and at_step(steps) after the last one has finished. The session stays open
  // for the caller. Returns the depth used (depth 0 = a one-token prompt, as decode()).
  template <class F> int measured_decode(int depth_arg, int steps, F &&at_step) {
    const int depth = std::max(depth_arg, 1);
    auto ids = random_prompt(depth);
    engine->begin_session(depth + steps + 16);
    sampler->reset();
    engine->forward(ids.data(), depth, 0, false);
    int ticket = sampler->sample_request(engine->logits_device(), o.decode, next_u());
    for (int i = 0; i < 8 + steps; ++i) {
      if (i >= 8) at_step(i - 8);
      ticket = wait_and_queue(ticket, depth + i);
    }
    sampler->wait_id(ticket);
    engine->synchronize();
    at_step(steps);
    return depth;
  }

  // For a profiler (ncu --profile-from-start off): `steps` decode steps inside the profiled range.
  void profile_decode(int depth_arg, int steps) {
    const int depth = measured_decode(depth_arg, steps, [&](int i) {
      if (i == 0) check(cudaProfilerStart(), "cudaProfilerStart");
      if (i == steps) check(cudaProfilerStop(), "cudaProfilerStop");
    });
    std::printf("profiled %d decode steps at depth %d (decode graphs captured: %zu)\n", steps, depth,
                engine->decode_graphs());
    engine->end_session();
  }

#if WORKER_BENCH_TIMELINE
  // The kernel timeline (CUPTI) of `steps` decode steps: a mark before each step's launch and one
  // after the last (period - span is the host's wait between steps).
  void timeline_decode(wo::bench::KernelTimeline &tl, int depth_arg, int steps) {
    std::vector<uint64_t> marks;
    const int depth = measured_decode(depth_arg, steps, [&](int) { marks.push_back(tl.now()); });
    const auto spans = tl.collect(marks.front());
    std::printf("timeline of %d decode steps at depth %d (decode graphs captured: %zu)\n", steps, depth,
                engine->decode_graphs());
    wo::bench::KernelTimeline::report(stdout, spans, marks, o.timeline_rows);
    cta_trace_dump();
    engine->end_session();
  }

  // WORKER_CTA_TRACE_OUT=dir: the loaded plugins of a trace build (cmake -DWORKER_CTA_TRACE=ON) write
  // their per-CTA rings there, one file per plugin and ring, for tools/device/cta_trace.py. Each
  // ring is a translation unit's (sdk/include/worker/cta_trace.cuh): its dump function is looked up
  // in the plugin already loaded (RTLD_NOLOAD), not through the SDK, which a timing build leaves alone.
  void cta_trace_dump() {
    const char *out = std::getenv("WORKER_CTA_TRACE_OUT");
    if (!out) return;
    DIR *d = opendir(plugin_dir.c_str());
    if (!d) return;
    while (dirent *e = readdir(d)) {
      const std::string name = e->d_name;
      if (name.size() < 4 || name.substr(name.size() - 3) != ".so") continue;
      void *h = dlopen((plugin_dir + "/" + name).c_str(), RTLD_NOW | RTLD_NOLOAD);
      if (!h) continue;
      for (const char *sym : {"wo_cta_trace_dump_attention", "wo_cta_trace_dump_linear"}) {
        auto fn = reinterpret_cast<int (*)(const char *)>(dlsym(h, sym));
        if (!fn) continue;
        const std::string path = std::string(out) + "/" + name + "." + sym + ".bin";
        std::printf("cta trace: %s %s -> %d\n", name.c_str(), sym, fn(path.c_str()));
      }
      dlclose(h);
    }
    closedir(d);
  }

  // The kernel timeline of `reps` prefills of n tokens (after one warm-up; each its own "step", the
  // first token's sampling kernels included): with the host's enqueue time of each forward, it says whether a
  // short prompt's prefill waits on the GPU or on the launches (idle stretches inside the span, enqueue ~ the
  // span).
  void timeline_prefill(wo::bench::KernelTimeline &tl, int n, int reps) {
    std::vector<uint64_t> marks;
    std::vector<double> enqueue_ms, total_ms;
    for (int i = 0; i <= reps; ++i) {
      const Prefill r = ttft(n, [&] {
        if (i > 0) marks.push_back(tl.now());
      });
      if (i > 0) enqueue_ms.push_back(r.enqueue * 1e3), total_ms.push_back(r.prefill * 1e3);
    }
    marks.push_back(tl.now());
    const auto spans = tl.collect(marks.front());
    std::printf("timeline of %d prefills of %d tokens: host enqueue %.3f ms, enqueue + wait %.3f ms "
                "(medians)\n",
                reps, n, median(enqueue_ms), median(total_ms));
    wo::bench::KernelTimeline::report(stdout, spans, marks, o.timeline_rows);
  }
#endif

  // For a profiler: one warm-up prefill of n tokens (cuBLAS handles, workspaces), then one inside
  // the profiled range.
  void profile_prefill(int n) {
    for (int i = 0; i < 2; ++i) {
      auto ids = random_prompt(n);
      engine->begin_session(n + 8);
      if (i == 1) check(cudaProfilerStart(), "cudaProfilerStart");
      engine->forward(ids.data(), n, 0, false);
      engine->synchronize();
      if (i == 1) check(cudaProfilerStop(), "cudaProfilerStop");
      engine->end_session();
    }
    std::printf("profiled one prefill of %d tokens\n", n);
  }

  // Decode n_decode tokens after a prompt of `depth` tokens, the way the worker does: sample on
  // the device, copy the id, feed it back, one step queued ahead of the host's wait for the
  // token before it (WORKER_RUN_AHEAD=0: after it). Per-token latencies in ms: the time between
  // consecutive tokens reaching the host (the first from the prompt's token).
  // Depth 0 (llama-bench's tg at an empty context) starts from a one-token prompt: a forward needs
  // at least one token.
  std::vector<double> decode(int depth_arg) {
    const int depth = std::max(depth_arg, 1);
    auto ids = random_prompt(depth);
    engine->begin_session(depth + o.n_decode + 8);
    sampler->reset();
    engine->forward(ids.data(), depth, 0, false);
    sampler->sample(engine->logits_device(), o.decode, next_u());
    sampler->fetch_id();
    std::vector<double> lat;
    auto t0 = Clock::now();
    int ticket = o.n_decode > 0 ? queue_step(depth) : -1;
    for (int i = 0; i < o.n_decode; ++i) {
      Clock::time_point t1;
      ticket = wait_and_queue(ticket, i + 1 < o.n_decode ? depth + i + 1 : -1, &t1);
      lat.push_back(std::chrono::duration<double, std::milli>(t1 - t0).count());
      t0 = t1;
    }
    engine->end_session();
    return lat;
  }
};

struct Llamacpp {
  const char *name;
  double pp512, tg128;
};

// llama.cpp CUDA on the same H100 with files of these shapes (llama-bench, batch 1; tools issue).
const Llamacpp *llamacpp_figures(const std::string &arch) {
  static const Llamacpp qwen{"Qwen2.5-0.5B Q4_K_M", 39700, 844}, phi{"Phi-3-mini Q4_K_M", 14400, 334},
      oss{"GPT-OSS-20B MXFP4", 9900, 340};
  if (arch == "qwen2") return &qwen;
  if (arch == "phi3") return &phi;
  if (arch == "gpt-oss" || arch == "gptoss") return &oss;
  return nullptr;
}

// The warm-up decode's prompt (graph captures, sampler buffers) before the measured runs.
constexpr int kWarmupDepth = 32;

int run_engine_bench(const Options &o) {
  wo::engine::EngineOptions eo;
  eo.model = o.model;
  eo.plugin_dir = o.plugin_dir.empty() ? wo::plugins::Registry::default_dir() : o.plugin_dir;
  eo.gpu_device = o.gpu;
  int max_ctx = 0;
  for (int p : o.prompts)
    max_ctx = std::max(max_ctx, p + 16);
  for (int d : o.depths)
    max_ctx = std::max(max_ctx, d + o.n_decode + 16);
  max_ctx = std::max(max_ctx, kWarmupDepth + o.n_decode + 16); // the warm-up decode
  max_ctx = std::max(max_ctx, o.profile_prefill + 16);
  max_ctx = std::max(max_ctx, o.timeline_prefill + 16);
  if (o.timeline > 0 || o.profile_steps > 0)
    max_ctx = std::max(max_ctx, (o.depths.empty() ? 128 : o.depths.front()) +
                                    std::max(o.timeline, o.profile_steps) + 32);
  eo.n_ctx = max_ctx;
  eo.residency_interval_s = 0;

  // Cold load: drop the file's pages from the page cache first (best effort).
  int fd = ::open(o.model.c_str(), O_RDONLY);
  if (fd >= 0) {
    ::fdatasync(fd);
    ::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
    ::close(fd);
  }
#if WORKER_BENCH_TIMELINE
  // Kernel records on before the context and the graphs exist (CUPTI's advice).
  std::unique_ptr<wo::bench::KernelTimeline> timeline;
  if (o.timeline > 0 || o.timeline_prefill > 0) timeline = std::make_unique<wo::bench::KernelTimeline>();
#else
  if (o.timeline > 0 || o.timeline_prefill > 0)
    throw std::runtime_error("--timeline: this bench was built without CUPTI's headers (cupti_activity.h)");
#endif
  check(cudaSetDevice(o.gpu), "cudaSetDevice");
  check(cudaFree(nullptr), "CUDA context");
  auto t0 = Clock::now();
  {
    wo::engine::Engine cold;
    cold.load(eo);
  }
  double load_cold = secs_since(t0);
  Bench b{o, std::make_unique<wo::engine::Engine>(), nullptr, eo.plugin_dir};
  t0 = Clock::now();
  b.engine->load(eo);
  double load_warm = secs_since(t0);
  b.make_sampler();
  if (o.profile_prefill > 0) {
    b.profile_prefill(o.profile_prefill);
    return 0;
  }
#if WORKER_BENCH_TIMELINE
  if (timeline && o.timeline_prefill > 0) {
    b.timeline_prefill(*timeline, o.timeline_prefill, std::max(o.reps, 1));
    return 0;
  }
  if (timeline) {
    b.timeline_decode(*timeline, o.depths.empty() ? 128 : o.depths.front(), o.timeline);
    return 0;
  }
#endif
  if (o.profile_steps > 0) {
    b.profile_decode(o.depths.empty() ? 128 : o.depths.front(), o.profile_steps);
    return 0;
  }
  const auto info = b.engine->info();
  const auto vram = b.engine->vram();
  const double bw = measure_copy_bandwidth();
  const double wbytes = weight_bytes_per_token(o.model);
  // Decode reads weights once per token: floor time = bytes / bandwidth. The copy figure counts
  // the read and the write, i.e. the bytes HBM moves per second, which a pure read can also reach
  // (the llama.cpp fractions use the same definition). Sessions up to 2026-11-23 divided
  // the bandwidth by 2 here and so printed twice the fraction.
  const double floor_tps = bw / wbytes;

  struct Row {
    int n;
    double ttft_ms, prefill_tps;
  };
  std::vector<Row> rows;
  // Warm-up: one prefill of every measured length first (the GEMM kernels a length selects load on
  // first use: with --reps 2 that one call was half the median of pp512).
  for (int n : o.prompts)
    b.ttft(n);
  for (int n : o.prompts) {
    std::vector<double> tt, pf;
    for (int r = 0; r < o.reps; ++r) {
      const auto f = b.ttft(n);
      tt.push_back(f.total * 1e3);
      pf.push_back(n / f.prefill);
    }
    rows.push_back({n, median(tt), median(pf)});
  }
  struct Dec {
    int depth;
    double tps, med, p95, first; // first: the first step's latency (a graph capture at a new bucket)
  };
  std::vector<Dec> decs;
  b.decode(kWarmupDepth); // warm-up
  for (int d : o.depths) {
    auto lat = b.decode(d);
    double total = 0;
    for (double x : lat)
      total += x;
    decs.push_back(
        {d, lat.size() / (total * 1e-3), median(lat), percentile(lat, 95), lat.empty() ? 0.0 : lat.front()});
  }
  const Llamacpp *ref = llamacpp_figures(info.architecture);
  const uint64_t MB = 1 << 20;
  if (o.json) {
    std::printf(
        "{\"model\":\"%s\",\"architecture\":\"%s\",\"quant_kind\":\"%s\",\"gpu\":\"%s\","
        "\"load_s\":{\"cold\":%.3f,\"warm\":%.3f},"
        "\"vram_bytes\":{\"weights\":%llu,\"kv_cache\":%llu,\"scratch\":%llu,\"total\":%llu},"
        "\"copy_bandwidth_gbs\":%.1f,\"weight_bytes_per_token\":%.0f,\"decode_floor_tps\":%.1f,\"prefill\":[",
        o.model.c_str(), info.architecture.c_str(), info.quant_kind.c_str(), info.gpu_name.c_str(), load_cold,
        load_warm, static_cast<unsigned long long>(vram.current[0]),
        static_cast<unsigned long long>(vram.current[1]), static_cast<unsigned long long>(vram.current[2]),
        static_cast<unsigned long long>(vram.total_current), bw / 1e9, wbytes, floor_tps);
    for (size_t i = 0; i < rows.size(); ++i)
      std::printf("%s{\"prompt_tokens\":%d,\"ttft_ms\":%.3f,\"prefill_tps\":%.1f}", i ? "," : "", rows[i].n,
                  rows[i].ttft_ms, rows[i].prefill_tps);
    std::printf("],\"decode\":[");
    for (size_t i = 0; i < decs.size(); ++i)
      std::printf("%s{\"depth\":%d,\"tokens\":%d,\"tps\":%.1f,\"itl_ms_median\":%.4f,\"itl_ms_p95\":%.4f,"
                  "\"floor_fraction\":%.3f,\"itl_ms_first\":%.4f}",
                  i ? "," : "", decs[i].depth, o.n_decode, decs[i].tps, decs[i].med, decs[i].p95,
                  decs[i].tps / floor_tps, decs[i].first);
    std::printf("]");
    if (ref)
      std::printf(",\"llamacpp\":{\"name\":\"%s\",\"pp512\":%.0f,\"tg128\":%.0f}", ref->name, ref->pp512,
                  ref->tg128);
    std::printf("}\n");
    return 0;
  }
  std::printf("model %s (%s, %s) on %s\n", o.model.c_str(), info.architecture.c_str(),
              info.quant_kind.c_str(), info.gpu_name.c_str());
  std::printf("load            cold %.2f s   warm %.2f s\n", load_cold, load_warm);
  std::printf("VRAM            weights %llu MiB   KV %llu MiB   scratch %llu MiB   total %llu MiB\n",
              static_cast<unsigned long long>(vram.current[0] / MB),
              static_cast<unsigned long long>(vram.current[1] / MB),
              static_cast<unsigned long long>(vram.current[2] / MB),
              static_cast<unsigned long long>(vram.total_current / MB));
  std::printf("bandwidth       D2D copy %.0f GB/s; weights read per token %.1f MB; decode floor %.0f tok/s\n",
              bw / 1e9, wbytes / 1e6, floor_tps);
  std::printf("\n%-14s %12s %14s\n", "prompt tokens", "TTFT ms", "prefill tok/s");
  for (const auto &r : rows)
    std::printf("%-14d %12.2f %14.0f\n", r.n, r.ttft_ms, r.prefill_tps);
  std::printf("\n%-8s %10s %12s %12s %12s %12s\n", "depth", "tok/s", "ITL med ms", "ITL p95 ms", "of floor",
              "first ms");
  for (const auto &d : decs)
    std::printf("%-8d %10.1f %12.3f %12.3f %11.0f%% %12.3f\n", d.depth, d.tps, d.med, d.p95,
                100.0 * d.tps / floor_tps, d.first);
  if (ref) {
    double pp512 = 0;
    for (const auto &r : rows)
      if (r.n == 512) pp512 = r.prefill_tps;
    std::printf(
        "\nvs llama.cpp (%s, same H100 class): pp512 %.0f vs %.0f tok/s (x%.2f); decode %.0f vs %.0f tok/s "
        "(x%.2f)\n",
        ref->name, pp512, ref->pp512, pp512 / ref->pp512, decs.empty() ? 0.0 : decs[0].tps, ref->tg128,
        decs.empty() ? 0.0 : decs[0].tps / ref->tg128);
  }
  return 0;
}

} // namespace

int main(int argc, char **argv) {
  Options o;
  wo::bench::HttpBenchOptions h;
  try {
    for (int i = 1; i < argc; ++i) {
      std::string a = argv[i];
      auto value = [&]() -> std::string {
        if (i + 1 >= argc) throw std::runtime_error("option " + a + " needs a value");
        return argv[++i];
      };
      if (a == "--help" || a == "-h") {
        std::printf(
            "usage: bench --model M [--plugin-dir D] [--gpu-device N] [--json] [--n-decode 256]\n"
            "             [--prompts 16,128,512,2048] [--depths 0,2048] [--reps 3]\n"
            "             [--profile-steps N]  (decode N tokens at the first depth inside\n"
            "              cudaProfilerStart/Stop, for ncu --profile-from-start off)\n"
            "             [--profile-prefill N]  (one prefill of N tokens inside the same range)\n"
            "             [--timeline N] [--timeline-rows 24]  (decode N tokens at the first depth and\n"
            "              print their kernels as they ran: busy and exposed time per kernel; CUPTI;\n"
            "              with WORKER_CTA_TRACE_OUT=dir a trace build's per-CTA records go to dir)\n"
            "             [--timeline-prefill N]  (the same for --reps prefills of N tokens, with the\n"
            "              host's enqueue time: launch-bound or GPU-bound)\n"
            "             [--sample T,K,P,M]  (decode with temperature T, top-k K, top-p P, min-p M\n"
            "              instead of greedy; 0.8,40,0.95,0.05 as a chat request might)\n"
            "       bench --http http://127.0.0.1:PORT [--n-decode 256] [--reps 5] [--prompt TEXT] "
            "[--json]\n");
        return 0;
      } else if (a == "--model")
        o.model = value();
      else if (a == "--plugin-dir")
        o.plugin_dir = value();
      else if (a == "--gpu-device")
        o.gpu = std::stoi(value());
      else if (a == "--json")
        o.json = h.json = true;
      else if (a == "--n-decode")
        o.n_decode = h.max_tokens = std::stoi(value());
      else if (a == "--prompts")
        o.prompts = parse_list(value());
      else if (a == "--depths")
        o.depths = parse_list(value());
      else if (a == "--reps")
        o.reps = h.requests = std::stoi(value());
      else if (a == "--profile-steps")
        o.profile_steps = std::stoi(value());
      else if (a == "--profile-prefill")
        o.profile_prefill = std::stoi(value());
      else if (a == "--timeline")
        o.timeline = std::stoi(value());
      else if (a == "--timeline-prefill")
        o.timeline_prefill = std::stoi(value());
      else if (a == "--timeline-rows")
        o.timeline_rows = std::stoi(value());
      else if (a == "--http")
        o.http = h.url = value();
      else if (a == "--prompt")
        h.prompt = value();
      else if (a == "--sample")
        o.decode = parse_sampling(value());
      else
        throw std::runtime_error("unknown option '" + a + "' (see --help)");
    }
    if (!o.http.empty()) return wo::bench::run_http_bench(h);
    if (o.model.empty()) throw std::runtime_error("--model or --http is required (see --help)");
    return run_engine_bench(o);
  } catch (const std::exception &e) {
    std::fprintf(stderr, "bench: %s\n", e.what());
    return 1;
  }
}
