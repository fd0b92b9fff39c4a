// The one macro each through which every CUDA runtime and cuBLAS return code goes (STYLE.md):
// OPTIMUS_CUDA_CHECK(call), OPTIMUS_CUBLAS_CHECK(call), and OPTIMUS_CUDA_LAUNCH_CHECK() after a
// kernel launch (launches return nothing; the error waits in cudaGetLastError). A failure throws
// std::runtime_error saying which call, where, what was expected, what came back, and what to do.
// (NCCL's macro, OPTIMUS_NCCL_CHECK, is in comm/nccl_communicator.h.)
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime.h>

namespace optimus::core::cuda::detail {

[[noreturn]] void cuda_failed(cudaError_t code, const char* call, const char* file, int line);
[[noreturn]] void cublas_failed(cublasStatus_t status, const char* call, const char* file, int line);

}  // namespace optimus::core::cuda::detail

#define OPTIMUS_CUDA_CHECK(call)                                                                 \
  do {                                                                                           \
    const cudaError_t optimus_cuda_code_ = (call);                                               \
    if (optimus_cuda_code_ != cudaSuccess) {                                                     \
      ::optimus::core::cuda::detail::cuda_failed(optimus_cuda_code_, #call, __FILE__, __LINE__); \
    }                                                                                            \
  } while (0)

#define OPTIMUS_CUBLAS_CHECK(call)                                                                     \
  do {                                                                                                 \
    const cublasStatus_t optimus_cublas_status_ = (call);                                              \
    if (optimus_cublas_status_ != CUBLAS_STATUS_SUCCESS) {                                             \
      ::optimus::core::cuda::detail::cublas_failed(optimus_cublas_status_, #call, __FILE__, __LINE__); \
    }                                                                                                  \
  } while (0)

/// After each kernel launch: a bad launch configuration (or an earlier asynchronous fault) shows here.
#define OPTIMUS_CUDA_LAUNCH_CHECK() OPTIMUS_CUDA_CHECK(cudaGetLastError())
