// Device memory for Buffers, and the CUDA probe. Implemented by device.cu when the CUDA backend is
// built, and by no_cuda.cpp (which reports that it is not) otherwise.
#pragma once

#include <cstddef>

namespace optimus::core {

/// cudaMalloc + cudaMemset(0); throws std::runtime_error with the CUDA error's text on failure.
void* device_alloc_zeroed(size_t bytes);
/// cudaMemset(0) of a block from device_alloc_zeroed, on the legacy default stream (as
/// device_alloc_zeroed's); throws std::runtime_error with the CUDA error's text on failure.
void device_zero(void* p, size_t bytes);
/// cudaFree; never throws.
void device_free(void* p) noexcept;
/// The calling thread's current GPU (cudaGetDevice), where device_alloc_zeroed allocates.
int device_current();

}  // namespace optimus::core
