// Instantiates the shared CUDA kernels for every type quant-ggml serves.
#include "ggml_codec.hpp"

#include "quant_common/type_ops.cuh"

namespace wo::quant {

const TypeOps *GgmlCodec::ops(uint32_t type) {
  using namespace wo::quant::dev;
  static const TypeOps table[] = {
      make_plain_type_ops<DecF32>(), make_plain_type_ops<DecF16>(), make_plain_type_ops<DecBF16>(),
      make_type_ops<DecQ4_0>(),      make_type_ops<DecQ4_1>(),      make_type_ops<DecQ5_0>(),
      make_type_ops<DecQ5_1>(),      make_type_ops<DecQ8_0>(),      make_type_ops<DecQ4_K>(),
      make_type_ops<DecQ5_K>(),      make_type_ops<DecQ6_K>(),
  };
  for (const auto &t : table)
    if (t.type == type) return &t;
  return nullptr;
}

} // namespace wo::quant

// Trace builds (WORKER_CTA_TRACE): the GEMV kernels' per-CTA ring, for bench (worker/cta_trace.cuh).
WO_CTA_TRACE_EXPORT(wo_cta_trace_dump_linear)
