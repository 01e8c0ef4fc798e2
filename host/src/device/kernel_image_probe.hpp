// Whether this build's device code can run on the current device (see kernel_image_probe.cu).
#pragma once

#include <cuda_runtime_api.h>

namespace wo::device {

cudaError_t kernel_image_available();

} // namespace wo::device
