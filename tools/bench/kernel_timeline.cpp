#include "kernel_timeline.hpp"

#include "stats.hpp"

#include <cupti.h>
#include <cxxabi.h>
#include <dlfcn.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <map>
#include <mutex>
#include <stdexcept>

namespace wo::bench {
namespace {

// The entry points bench uses, resolved from the library opened at run time.
struct Cupti {
  decltype(&cuptiActivityRegisterCallbacks) register_callbacks = nullptr;
  decltype(&cuptiActivityEnable) enable = nullptr;
  decltype(&cuptiActivityDisable) disable = nullptr;
  decltype(&cuptiActivityFlushAll) flush_all = nullptr;
  decltype(&cuptiActivityGetNextRecord) next_record = nullptr;
  decltype(&cuptiGetTimestamp) timestamp = nullptr;
  decltype(&cuptiGetResultString) result_string = nullptr;
};
Cupti g_api;

// Records arrive on CUPTI's thread as well as on flush; kept raw until collect() reads them.
std::mutex g_mu;
std::vector<KernelSpan> g_spans;

// "void ns::(anonymous namespace)::name<ns::A, (ns::Mode)1, 2>(params)" -> "name<A, (Mode)1, 2>":
// the template arguments tell a codec's kernels apart (the same grid serves several weights).
std::string short_name(const char *mangled) {
  if (!mangled) return "?";
  int st = 0;
  char *d = abi::__cxa_demangle(mangled, nullptr, nullptr, &st);
  std::string s = st == 0 && d ? d : mangled;
  std::free(d);
  for (const std::string anon = "(anonymous namespace)::"; s.find(anon) != std::string::npos;)
    s.erase(s.find(anon), anon.size());
  // Cut the parameter list: the first '(' at template depth 0 that does not open a cast.
  int depth = 0;
  size_t cut = s.size();
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '<') ++depth;
    if (s[i] == '>') --depth;
    if (s[i] == '(' && depth == 0) {
      cut = i;
      break;
    }
  }
  s.resize(cut);
  if (s.rfind("void ", 0) == 0) s.erase(0, 5);
  // Drop namespace qualifiers everywhere ("a::b::c" -> "c").
  std::string out;
  for (size_t i = 0; i < s.size();) {
    size_t j = i;
    while (j < s.size() && (std::isalnum(static_cast<unsigned char>(s[j])) || s[j] == '_'))
      ++j;
    if (j > i && s.compare(j, 2, "::") == 0) {
      i = j + 2; // a qualifier
      continue;
    }
    if (j == i) ++j;
    out.append(s, i, j - i);
    i = j;
  }
  return out;
}

void CUPTIAPI buffer_requested(uint8_t **buffer, size_t *size, size_t *max_records) {
  constexpr size_t kBytes = size_t{8} << 20;
  *buffer = static_cast<uint8_t *>(std::aligned_alloc(8, kBytes));
  *size = *buffer ? kBytes : 0;
  *max_records = 0; // as many as fit
}

void CUPTIAPI buffer_completed(CUcontext, uint32_t, uint8_t *buffer, size_t, size_t valid) {
  CUpti_Activity *rec = nullptr;
  std::vector<KernelSpan> got;
  while (g_api.next_record(buffer, valid, &rec) == CUPTI_SUCCESS) {
    if (rec->kind != CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL && rec->kind != CUPTI_ACTIVITY_KIND_KERNEL)
      continue;
    // start, end, the grid and the name sit at the same offsets in every kernel record version
    // since CUDA 11; the header's newest layout reads them.
    const auto *k = reinterpret_cast<const CUpti_ActivityKernel10 *>(rec);
    KernelSpan s;
    s.name = short_name(k->name);
    s.grid = static_cast<int64_t>(k->gridX) * k->gridY * k->gridZ;
    s.start = k->start, s.end = k->end;
    got.push_back(std::move(s));
  }
  std::free(buffer);
  std::lock_guard<std::mutex> lock(g_mu);
  g_spans.insert(g_spans.end(), got.begin(), got.end());
}

void cupti_check(CUptiResult r, const char *what) {
  if (r == CUPTI_SUCCESS) return;
  const char *msg = nullptr;
  if (g_api.result_string) g_api.result_string(r, &msg);
  throw std::runtime_error(std::string("CUPTI ") + what + ": " + (msg ? msg : "error " + std::to_string(r)));
}

template <class F> void resolve(void *lib, const char *sym, F &out) {
  out = reinterpret_cast<F>(dlsym(lib, sym));
  if (!out) throw std::runtime_error(std::string("libcupti has no symbol ") + sym);
}

} // namespace

KernelTimeline::KernelTimeline() {
  // The toolkit's own library first, then where CUDA installs keep it.
  const char *candidates[] = {"libcupti.so.13", "libcupti.so",
                              "/usr/local/cuda/extras/CUPTI/lib64/libcupti.so",
                              "/usr/local/cuda/lib64/libcupti.so"};
  std::string tried;
  for (const char *c : candidates) {
    lib_ = dlopen(c, RTLD_NOW | RTLD_LOCAL);
    if (lib_) break;
    tried += std::string(tried.empty() ? "" : ", ") + c;
  }
  if (!lib_)
    throw std::runtime_error("--timeline needs CUPTI: expected libcupti from the CUDA toolkit, tried " +
                             tried + " (set LD_LIBRARY_PATH to its folder)");
  resolve(lib_, "cuptiActivityRegisterCallbacks", g_api.register_callbacks);
  resolve(lib_, "cuptiActivityEnable", g_api.enable);
  resolve(lib_, "cuptiActivityDisable", g_api.disable);
  resolve(lib_, "cuptiActivityFlushAll", g_api.flush_all);
  resolve(lib_, "cuptiActivityGetNextRecord", g_api.next_record);
  resolve(lib_, "cuptiGetTimestamp", g_api.timestamp);
  resolve(lib_, "cuptiGetResultString", g_api.result_string);
  cupti_check(g_api.register_callbacks(buffer_requested, buffer_completed), "register buffers");
  // Concurrent records: kernels are not serialized, so PDL overlap shows as it runs.
  cupti_check(g_api.enable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL),
              "enable kernel records (expected a CUDA device and a driver this libcupti supports)");
}

KernelTimeline::~KernelTimeline() {
  if (g_api.disable) {
    g_api.disable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
    g_api.flush_all(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  }
  // The library stays loaded: CUPTI keeps threads and hooks in the process until it exits.
}

uint64_t KernelTimeline::now() const {
  uint64_t t = 0;
  cupti_check(g_api.timestamp(&t), "timestamp");
  return t;
}

std::vector<KernelSpan> KernelTimeline::collect(uint64_t from) {
  cupti_check(g_api.flush_all(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED), "flush");
  std::vector<KernelSpan> out;
  {
    std::lock_guard<std::mutex> lock(g_mu);
    for (const auto &s : g_spans)
      if (s.start >= from) out.push_back(s);
    g_spans.clear();
  }
  std::sort(out.begin(), out.end(),
            [](const KernelSpan &a, const KernelSpan &b) { return a.start < b.start; });
  return out;
}

void KernelTimeline::report(std::FILE *out, const std::vector<KernelSpan> &spans,
                            const std::vector<uint64_t> &marks, int top) {
  struct Step {
    std::vector<const KernelSpan *> k;
    double span_us = 0, lag_us = 0;
  };
  std::vector<Step> steps(marks.size());
  for (const auto &s : spans) {
    auto it = std::upper_bound(marks.begin(), marks.end(), s.start);
    if (it == marks.begin()) continue;
    steps[static_cast<size_t>(it - marks.begin() - 1)].k.push_back(&s);
  }
  steps.erase(std::remove_if(steps.begin(), steps.end(), [](const Step &s) { return s.k.empty(); }),
              steps.end());
  if (steps.empty()) {
    std::fprintf(out, "timeline: no kernel records in the traced steps\n");
    return;
  }
  // Per step: class -> (count, summed duration, summed exposed time), in microseconds.
  struct Acc {
    int n = 0;
    double dur = 0, exposed = 0;
  };
  std::vector<std::map<std::string, Acc>> per_step(steps.size());
  std::vector<double> spans_us, periods_us, lags_us;
  for (size_t i = 0; i < steps.size(); ++i) {
    Step &st = steps[i];
    uint64_t latest = st.k.front()->start;
    for (const KernelSpan *k : st.k) {
      if (k->start > latest) { // nothing ran: the launch of a kernel no earlier one released
        Acc &idle = per_step[i]["(idle: no kernel running)"];
        idle.n += 1;
        idle.exposed += static_cast<double>(k->start - latest) * 1e-3;
        latest = k->start;
      }
      const double exposed = k->end > latest ? static_cast<double>(k->end - latest) * 1e-3 : 0.0;
      latest = std::max(latest, k->end);
      Acc &a = per_step[i][k->name + " [" + std::to_string(k->grid) + "]"];
      a.n += 1;
      a.dur += static_cast<double>(k->end - k->start) * 1e-3;
      a.exposed += exposed;
    }
    st.span_us = static_cast<double>(latest - st.k.front()->start) * 1e-3;
    spans_us.push_back(st.span_us);
    if (i + 1 < steps.size())
      periods_us.push_back(static_cast<double>(steps[i + 1].k.front()->start - st.k.front()->start) * 1e-3);
  }
  for (size_t i = 0; i < steps.size(); ++i) {
    auto it = std::lower_bound(marks.begin(), marks.end(), steps[i].k.front()->start);
    if (it != marks.begin())
      lags_us.push_back(static_cast<double>(steps[i].k.front()->start - *(it - 1)) * 1e-3);
  }
  std::fprintf(
      out,
      "timeline: %zu steps, %zu kernels per step (middle step); median span %.1f us (first kernel "
      "start to last end), period %.1f us (step to step), launch lag %.1f us (host mark to first start)\n",
      steps.size(), steps[steps.size() / 2].k.size(), median(spans_us),
      periods_us.empty() ? 0.0 : median(periods_us), lags_us.empty() ? 0.0 : median(lags_us));
  // Classes over all steps, medians of their per-step sums.
  std::map<std::string, std::vector<Acc>> cls;
  for (const auto &m : per_step)
    for (const auto &[name, a] : m)
      cls[name].push_back(a);
  struct Row {
    std::string name;
    double n, dur, exposed;
  };
  std::vector<Row> rows;
  double total_exposed = 0;
  for (const auto &[name, v] : cls) {
    std::vector<double> n, d, e;
    for (const auto &a : v)
      n.push_back(a.n), d.push_back(a.dur), e.push_back(a.exposed);
    while (n.size() < steps.size()) // a class missing from a step counts zero there
      n.push_back(0), d.push_back(0), e.push_back(0);
    rows.push_back({name, median(n), median(d), median(e)});
    total_exposed += rows.back().exposed;
  }
  std::sort(rows.begin(), rows.end(), [](const Row &a, const Row &b) { return a.exposed > b.exposed; });
  std::fprintf(out, "  %-60s %6s %10s %10s %7s %9s\n", "kernel [blocks]", "n", "busy us", "exposed us",
               "share", "exp/call");
  for (size_t i = 0; i < rows.size() && static_cast<int>(i) < top; ++i) {
    const Row &r = rows[i];
    std::fprintf(out, "  %-60.60s %6.0f %10.1f %10.1f %6.1f%% %9.2f\n", r.name.c_str(), r.n, r.dur, r.exposed,
                 total_exposed > 0 ? 100.0 * r.exposed / total_exposed : 0.0,
                 r.n > 0 ? r.exposed / r.n : 0.0);
  }
  // The middle step's first kernels in order: where each starts against its predecessor's end.
  const Step &mid = steps[steps.size() / 2];
  std::fprintf(out,
               "  middle step, first %d kernels: start / end (us from the first start), overlap with the "
               "latest end before it\n",
               top);
  uint64_t latest = mid.k.front()->start;
  for (size_t i = 0; i < mid.k.size() && static_cast<int>(i) < top; ++i) {
    const KernelSpan *k = mid.k[i];
    const double t0 = static_cast<double>(k->start - mid.k.front()->start) * 1e-3;
    const double t1 = static_cast<double>(k->end - mid.k.front()->start) * 1e-3;
    const double overlap = latest > k->start ? static_cast<double>(latest - k->start) * 1e-3 : 0.0;
    std::fprintf(out, "    %3zu %-52.52s [%5lld] %8.2f %8.2f  overlap %6.2f\n", i, k->name.c_str(),
                 static_cast<long long>(k->grid), t0, t1, i == 0 ? 0.0 : overlap);
    latest = std::max(latest, k->end);
  }
}

} // namespace wo::bench
