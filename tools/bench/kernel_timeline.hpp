// Kernel timeline of decode steps as they really run: graph replay, PDL overlap and all (ncu
// serializes kernels, so its per-kernel times hide what overlaps and show launch gaps that a
// replay does not have). CUPTI's concurrent-kernel activity records give every kernel's start (its
// first CTA) and end (its last CTA); a kernel's *exposed* time is how far its end moves the step's
// latest end, i.e. what it adds to the chain a token waits on; stretches where no kernel runs are
// reported as idle. libcupti is opened at run time
// (dlopen), so bench runs where it is missing and only --timeline needs it.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

namespace wo::bench {

struct KernelSpan {
  std::string name; // demangled, namespaces and template arguments dropped
  int64_t grid = 0; // blocks
  uint64_t start = 0, end = 0;
};

class KernelTimeline {
public:
  // Loads libcupti and enables kernel records; call before the CUDA context does the work to be
  // traced (graphs instantiated earlier are traced too, but enabling first is CUPTI's advice).
  // Throws std::runtime_error naming the libraries it tried when none loads.
  KernelTimeline();
  ~KernelTimeline();
  KernelTimeline(const KernelTimeline &) = delete;
  KernelTimeline &operator=(const KernelTimeline &) = delete;

  // Host timestamp in CUPTI's clock: a step's kernels start after the mark taken before its launch.
  uint64_t now() const;
  // Flushes the records and returns every kernel that started at or after `from`, by start.
  std::vector<KernelSpan> collect(uint64_t from);

  // Prints, for the steps that begin at the given marks (kernels of step i start in [marks[i],
  // marks[i + 1])): per-step span and period, then per (kernel, grid) class the count per step and
  // the median over steps of its summed duration and exposed time, largest exposed first; `top` rows.
  static void report(std::FILE *out, const std::vector<KernelSpan> &spans, const std::vector<uint64_t> &marks,
                     int top);

private:
  void *lib_ = nullptr;
};

} // namespace wo::bench
