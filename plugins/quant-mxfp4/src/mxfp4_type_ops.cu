// Instantiates the shared CUDA kernels for MXFP4.
#include "mxfp4_codec.hpp"

#include "quant_common/type_ops.cuh"

namespace wo::quant {

const TypeOps *Mxfp4Codec::ops(uint32_t type) {
  static const TypeOps mxfp4 = dev::make_type_ops<dev::DecMXFP4>();
  return type == mxfp4.type ? &mxfp4 : nullptr;
}

} // namespace wo::quant

// Trace builds (WORKER_CTA_TRACE): the GEMV kernels' per-CTA ring, for bench (worker/cta_trace.cuh).
WO_CTA_TRACE_EXPORT(wo_cta_trace_dump_linear)
