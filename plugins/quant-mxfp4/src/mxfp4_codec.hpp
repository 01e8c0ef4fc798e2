// quant-mxfp4 serves MXFP4: 32 E2M1 values sharing one E8M0 exponent byte (17-byte blocks).
#pragma once

#include "quant_common/cuda_ops.hpp"

#include <worker/ggml_types.hpp>

#include <cstdint>

namespace wo::quant {

struct Mxfp4Codec {
  static constexpr const char *kName = "quant-mxfp4";
  static const uint32_t *types() {
    static const uint32_t t[] = {wo::ggml::MXFP4};
    return t;
  }
  static uint32_t n_types() { return 1; }
  static const TypeOps *ops(uint32_t type); // mxfp4_type_ops.cu
};

} // namespace wo::quant
