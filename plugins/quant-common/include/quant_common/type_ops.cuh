// make_type_ops<D>(): the launchers a codec plugin instantiates once per type it serves (GEMV,
// dequantize, grouped MoE GEMM, and for the plain types the element-wise fallbacks).
#pragma once

#include "quant_common/cuda_ops.hpp"
#include "quant_common/grouped_gemm.cuh"
#include "quant_common/linear_kernels.cuh"

namespace wo::quant::dev {

template <class D> TypeOps make_type_ops() {
  return TypeOps{D::kType,
                 D::QK,
                 &launch_gemv<D>,
                 &launch_dequant<D>,
                 nullptr,
                 nullptr,
                 &launch_grouped<D>,
                 &launch_gemv_multi<D>,
                 stack_partner_type<D>()};
}

// Plain types (F32/F16/BF16) also get the element-wise kernels for rows not a multiple of 8.
template <class D> TypeOps make_plain_type_ops() {
  return TypeOps{D::kType,
                 D::QK,
                 &launch_gemv<D>,
                 &launch_dequant<D>,
                 &launch_gemv_scalar<D>,
                 &launch_dequant_scalar<D>,
                 &launch_grouped<D>,
                 &launch_gemv_multi<D>,
                 kNoStackPartner};
}

} // namespace wo::quant::dev
