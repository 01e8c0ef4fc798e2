// positions[t] = pos0 + t on the device (see positions.cu).
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

namespace wo::gpt {
cudaError_t fill_positions(int32_t *positions, int64_t pos0, int64_t n, cudaStream_t stream);
} // namespace wo::gpt
