#include "device/cuda_check.hpp"

namespace wo::device {

std::string cuda_error_text(cudaError_t err, const std::string &what) {
  return what + " failed: " + cudaGetErrorName(err) + " (" + cudaGetErrorString(err) + ")";
}

std::string cublas_error_text(cublasStatus_t st, const std::string &what) {
  return what + " failed: cuBLAS status " + std::to_string(static_cast<int>(st));
}

} // namespace wo::device
