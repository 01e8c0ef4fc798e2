// Token sampling on the GPU: logits never leave the device; only the chosen id crosses to the
// host. Same rules as filter_ref.hpp (the CPU reference the tests compare against).
#pragma once

#include "sampling/sampling_params.hpp"

#include <cuda_runtime.h>

#include <cstdint>
#include <functional>

namespace wo::sampling {

class GpuSampler {
public:
  using Alloc = std::function<void *(size_t bytes)>; // returns nullptr when VRAM is exhausted
  using Free = std::function<void(void *)>;

  // Allocates its buffers for a vocabulary of n_vocab through `alloc` (the host's VRAM
  // accounting). Throws wo::Error(WO_ERR_OUT_OF_MEMORY / WO_ERR_CUDA) on failure.
  GpuSampler(int64_t n_vocab, cudaStream_t stream, Alloc alloc, Free free);
  ~GpuSampler();
  GpuSampler(const GpuSampler &) = delete;
  GpuSampler &operator=(const GpuSampler &) = delete;

  // Forget the generated history (repetition penalty) for a new job.
  void reset();

  // Enqueue the choice of the next id from `logits` (device, n_vocab floats, left unchanged),
  // with `u` a uniform number in [0, 1) for the draw (ignored when greedy). The id is written to
  // device_id() and joins the history. No host synchronization.
  void sample(const float *logits, const SamplingParams &params, double u);

  const int32_t *device_id() const { return d_id_; }

  // The last chosen id on the host (waits for the stream).
  int32_t fetch_id() { return wait_id(request_id()); }

  // The same in two halves, so that a decode loop can queue the next step before it waits for this
  // token (run-ahead: the step that reads device_id() is queued behind the copy, and the host's
  // wait, token handling and launches overlap the GPU's work instead of leaving it idle between
  // steps). request_id queues the last chosen id's write to a pinned host slot and returns its
  // ticket; wait_id waits for that write only. Up to kIdSlots may be in flight.
  static constexpr int kIdSlots = 2;
  int request_id();
  int32_t wait_id(int ticket);

  // sample() then request_id() in one: the same id, history and ticket. Greedy publishes the id
  // from its choosing kernel (no publication kernel after it); other paths queue request_id's.
  int sample_request(const float *logits, const SamplingParams &params, double u);

  // The paths that skip the vocabulary sort: top-k requests whose candidates fit one block (the
  // sorted path's draws, id for id), and requests without top-k (the same distribution, drawn in id
  // order; top-p's nucleus by a select on the keys' bits). false sorts everything
  // (WORKER_SAMPLER_FAST=0, and the tests that compare).
  void set_fast_paths(bool on) { fast_paths_ = on; }

private:
  // sample()'s kernels; given h_slot (the mapped slot's device address), greedy's last kernel also
  // writes the id there and draw returns true; the other paths return false.
  bool draw(const float *logits, const SamplingParams &params, double u, int32_t *h_slot);
  // The next slot's ticket: its id's write (the publication kernel, unless the id is already on its
  // way there) and the event that marks it written.
  int publish(bool launch_kernel);

  int64_t n_vocab_;
  cudaStream_t stream_;
  Free free_;
  float *d_keys_ = nullptr, *d_keys_sorted_ = nullptr;
  int32_t *d_vals_ = nullptr, *d_vals_sorted_ = nullptr;
  uint8_t *d_seen_ = nullptr;
  int32_t *d_id_ = nullptr;
  unsigned *d_ticket_ = nullptr; // greedy's last-block ticket (argmax_kernel), zero between launches
  void *d_temp_ = nullptr;
  void *d_nucleus_ = nullptr; // top-p without sorting: histogram, select state, per-chunk sums
  size_t temp_bytes_ = 0;
  int32_t *h_id_ = nullptr;                  // pinned and mapped, kIdSlots
  int32_t *h_id_dev_ = nullptr;              // its device address
  cudaEvent_t copied_[kIdSlots] = {nullptr}; // each slot's id written
  int next_slot_ = 0;
  bool fast_paths_ = true;
};

} // namespace wo::sampling
