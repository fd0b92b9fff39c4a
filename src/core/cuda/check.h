// The one macro through which every CUDA runtime and cuBLAS return code goes (STYLE.md):
// OPTIMUS_CUDA_CHECK(call), the type of the code choosing the check and the message, and
// OPTIMUS_CUDA_LAUNCH_CHECK() after a kernel launch (launches return nothing; the error waits in
// cudaGetLastError). A failure throws std::runtime_error saying which call, where, what was
// expected, what came back, and what to do (core::call_failed).
// (NCCL's macro, OPTIMUS_NCCL_CHECK, is in comm/nccl_communicator.h.)
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime.h>

namespace optimus::core::cuda::detail {

[[noreturn]] void failed(cudaError_t code, const char* call, const char* file, int line);
[[noreturn]] void failed(cublasStatus_t status, const char* call, const char* file, int line);

inline bool succeeded(cudaError_t code) {
  return code == cudaSuccess;
}
inline bool succeeded(cublasStatus_t status) {
  return status == CUBLAS_STATUS_SUCCESS;
}

}  // namespace optimus::core::cuda::detail

/// Runs `call`, a CUDA runtime or a cuBLAS call, and throws if it did not succeed.
#define OPTIMUS_CUDA_CHECK(call)                                                              \
  do {                                                                                        \
    const auto optimus_cuda_status_ = (call);                                                 \
    if (!::optimus::core::cuda::detail::succeeded(optimus_cuda_status_)) {                    \
      ::optimus::core::cuda::detail::failed(optimus_cuda_status_, #call, __FILE__, __LINE__); \
    }                                                                                         \
  } while (0)

/// After each kernel launch: a bad launch configuration (or an earlier asynchronous fault) shows here.
#define OPTIMUS_CUDA_LAUNCH_CHECK() OPTIMUS_CUDA_CHECK(cudaGetLastError())
