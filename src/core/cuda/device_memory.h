// Device memory for Buffers, and the CUDA probe. Implemented by device.cu when the CUDA backend is
// built, and by no_cuda.cpp (which reports that it is not) otherwise.
#pragma once

#include <cstddef>

namespace optimus::core {

/// cudaMalloc + cudaMemset(0); throws std::runtime_error with the CUDA error's text on failure.
void* device_alloc_zeroed(size_t bytes);
/// cudaFree; never throws.
void device_free(void* p) noexcept;

}  // namespace optimus::core
