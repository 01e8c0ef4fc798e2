// The expert-routing traces the engine's model harness compares with the reference. Only when the
// host records (trace_enabled): ids are copied to the host (a sync per layer, fine for a debug
// mode) and handed over as one blob of int32 [tokens][k] per layer and forward call, so prefill
// chunking does not change what the host sees:
//   routing.L<layer>          the experts chosen: top-k of the router logits plus their bias;
//   routing_prebias.L<layer>  top-k of the router logits before the bias. The fixtures'
//                             reference.json `routing_*` fields hold this one (llama.cpp's
//                             "ffn_moe_logits" tensor precedes the bias add), while llama.cpp's
//                             own selection, like ours, uses the biased logits.
#include "device_ops.hpp"

#include <string>

namespace wo::gpt {

bool routing_trace_enabled(const Instance &inst) {
  const wo_host *h = inst.host;
  return inst.hp.family == Family::GptOss && WO_HAS_FIELD(wo_host, h->struct_size, trace) &&
         h->trace_enabled && h->trace;
}

void begin_routing_trace(Instance &inst) {
  inst.routing_trace.assign(static_cast<size_t>(inst.hp.n_layer), {});
  inst.routing_prebias_trace.assign(static_cast<size_t>(inst.hp.n_layer), {});
}

void record_routing(Instance &inst, RoutingTrace which, const int32_t *ids, int64_t count, int64_t il,
                    cudaStream_t stream) {
  auto &per_layer = which == RoutingTrace::Chosen ? inst.routing_trace : inst.routing_prebias_trace;
  std::vector<int32_t> &dst = per_layer.at(static_cast<size_t>(il));
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
    const std::string chosen = "routing.L" + std::to_string(il),
                      prebias = "routing_prebias.L" + std::to_string(il);
    h->trace(h->ctx, chosen.c_str(), inst.routing_trace[il].data(),
             inst.routing_trace[il].size() * sizeof(int32_t));
    h->trace(h->ctx, prebias.c_str(), inst.routing_prebias_trace[il].data(),
             inst.routing_prebias_trace[il].size() * sizeof(int32_t));
  }
  inst.routing_trace.clear();
  inst.routing_prebias_trace.clear();
}

} // namespace wo::gpt
