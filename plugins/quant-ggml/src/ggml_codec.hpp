// quant-ggml serves the plain float types and ggml's block formats.
#pragma once

#include "quant_common/cuda_ops.hpp"

#include <worker/ggml_types.hpp>

#include <cstdint>

namespace wo::quant {

struct GgmlCodec {
  static constexpr const char *kName = "quant-ggml";
  static const uint32_t *types() {
    static const uint32_t t[] = {wo::ggml::F32,  wo::ggml::F16,  wo::ggml::BF16, wo::ggml::Q4_0,
                                 wo::ggml::Q4_1, wo::ggml::Q5_0, wo::ggml::Q5_1, wo::ggml::Q8_0,
                                 wo::ggml::Q4_K, wo::ggml::Q5_K, wo::ggml::Q6_K};
    return t;
  }
  static uint32_t n_types() { return 11; }
  // The CUDA launchers of one type (ggml_type_ops.cu); NULL when not served.
  static const TypeOps *ops(uint32_t type);
};

} // namespace wo::quant
