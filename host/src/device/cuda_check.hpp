// Turning CUDA / cuBLAS failures into wo::Error(WO_ERR_CUDA) whose text says which call failed,
// the error's name and description, and where.
#pragma once

#include <worker/sdk.hpp>

#include <cublas_api.h>
#include <cuda_runtime_api.h>

#include <string>

namespace wo::device {

// "cudaMalloc(weights 'blk.0.attn_q.weight', 4096 bytes) failed: cudaErrorMemoryAllocation (out of
// memory)".
std::string cuda_error_text(cudaError_t err, const std::string &what);
std::string cublas_error_text(cublasStatus_t st, const std::string &what);

inline void cuda_check(cudaError_t err, const std::string &what) {
  if (err != cudaSuccess) throw Error(WO_ERR_CUDA, cuda_error_text(err, what));
}
inline void cublas_check(cublasStatus_t st, const std::string &what) {
  if (st != CUBLAS_STATUS_SUCCESS) throw Error(WO_ERR_CUDA, cublas_error_text(st, what));
}

} // namespace wo::device
