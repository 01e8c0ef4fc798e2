// The expert-routing trace the engine's model harness compares with the reference: only when the
// host records (trace_enabled), the chosen ids are copied to the host (a sync per layer, fine
// for a debug mode) and handed over as one "routing.L<layer>" blob of int32 [tokens][k] per
// forward call, so prefill chunking does not change what the host sees.
#include "device_ops.hpp"

#include <string>

namespace wo::gpt {

bool routing_trace_enabled(const Instance &inst) {
  const wo_host *h = inst.host;
  return inst.hp.family == Family::GptOss && WO_HAS_FIELD(wo_host, h->struct_size, trace) && h->trace_enabled &&
         h->trace;
}

void begin_routing_trace(Instance &inst) {
  inst.routing_trace.assign(static_cast<size_t>(inst.hp.n_layer), {});
}

void record_routing(Instance &inst, const int32_t *ids, int64_t count, int64_t il, cudaStream_t stream) {
  std::vector<int32_t> &dst = inst.routing_trace.at(static_cast<size_t>(il));
  const size_t at = dst.size();
  dst.resize(at + static_cast<size_t>(count));
  cuda_ok(cudaMemcpyAsync(dst.data() + at, ids, static_cast<size_t>(count) * sizeof(int32_t),
                          cudaMemcpyDeviceToHost, stream),
          "routing trace copy", il);
  cuda_ok(cudaStreamSynchronize(stream), "routing trace sync", il);
}

void end_routing_trace(Instance &inst) {
  const wo_host *h = inst.host;
  for (size_t il = 0; il < inst.routing_trace.size(); ++il) {
    const std::string name = "routing.L" + std::to_string(il);
    const std::vector<int32_t> &ids = inst.routing_trace[il];
    h->trace(h->ctx, name.c_str(), ids.data(), ids.size() * sizeof(int32_t));
  }
  inst.routing_trace.clear();
}

} // namespace wo::gpt
