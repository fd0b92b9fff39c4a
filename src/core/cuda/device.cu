// CUDA device set-up: the probe that says whether (and which) GPUs are usable, and the device
// allocations behind Buffers. On a machine without a driver, cudaGetDeviceCount returns
// cudaErrorInsufficientDriver (or cudaErrorNoDevice); we turn that into "no GPU" and a sentence.
#include <cuda_runtime.h>

#include <stdexcept>
#include <string>

#include "core/context.h"
#include "core/cuda/device_memory.h"

namespace optimus::core {

bool cuda_backend_built() {
  return true;
}

int cuda_device_count() {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    cudaGetLastError();  // clear the sticky error so later calls start clean
    return 0;
  }
  return n;
}

std::string cuda_device_report() {
  int n = 0;
  cudaError_t err = cudaGetDeviceCount(&n);
  if (err != cudaSuccess) {
    cudaGetLastError();
    std::string why = err == cudaErrorInsufficientDriver ? "CUDA driver is missing or too old"
                      : err == cudaErrorNoDevice         ? "no CUDA-capable device is present"
                                                         : cudaGetErrorString(err);
    return std::string("no GPU: ") + why + " (" + cudaGetErrorName(err) + "); the CPU backend will be used";
  }
  if (n == 0) return "no GPU: the CUDA runtime found no device; the CPU backend will be used";
  std::string s = std::to_string(n) + (n == 1 ? " GPU:" : " GPUs:");
  for (int d = 0; d < n; ++d) {
    cudaDeviceProp p{};
    if (cudaGetDeviceProperties(&p, d) == cudaSuccess) {
      s += " [" + std::to_string(d) + "] " + p.name + " (sm_" + std::to_string(p.major) + std::to_string(p.minor) +
           ", " + std::to_string(p.totalGlobalMem >> 20) + " MiB)";
    }
  }
  return s;
}

void* device_alloc_zeroed(size_t bytes) {
  void* p = nullptr;
  cudaError_t err = cudaMalloc(&p, bytes);
  if (err == cudaSuccess) err = cudaMemset(p, 0, bytes);
  if (err != cudaSuccess) {
    if (p != nullptr) cudaFree(p);
    throw std::runtime_error("cudaMalloc of " + std::to_string(bytes) + " bytes failed: " + cudaGetErrorString(err));
  }
  return p;
}

void device_free(void* p) noexcept {
  cudaFree(p);
}

}  // namespace optimus::core
