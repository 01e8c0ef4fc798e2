// A kernel that exists only to ask the runtime whether this build's device code can run on the
// selected GPU: cudaFuncGetAttributes fails with cudaErrorNoKernelImageForDevice when the fatbin
// has no SASS or PTX for its compute capability, which is a clearer startup error than the first
// launch failing mid-request.
#include "device/kernel_image_probe.hpp"

namespace wo::device {

namespace {
__global__ void probe_kernel(int *p) {
  if (p) *p = 1;
}
} // namespace

cudaError_t kernel_image_available() {
  cudaFuncAttributes attr{};
  return cudaFuncGetAttributes(&attr, probe_kernel);
}

} // namespace wo::device
