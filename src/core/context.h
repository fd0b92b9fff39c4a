// The Context every op receives: which backend runs it (CPU or CUDA) and which ledger records its
// memory. Ops dispatch on ctx.device; the CUDA fields are filled by the CUDA backend (issue 7).
#pragma once

#include <string>

#include "core/memory_ledger.h"
#include "core/tensor.h"

namespace optimus::core {

struct Context {
  Device device = Device::cpu;
  MemoryLedger* ledger = &MemoryLedger::host();
  void* cuda_stream = nullptr;    // cudaStream_t when device == cuda
  void* cublas_handle = nullptr;  // cublasHandle_t when device == cuda
};

/// A CPU context recording into `ledger` (the process's host ledger by default).
Context cpu_context(MemoryLedger& ledger = MemoryLedger::host());

/// Whether this build has the CUDA backend compiled in.
bool cuda_backend_built();

/// What the CUDA runtime reports about GPUs, as one sentence: "2 GPUs: ...", or why there is none
/// ("no GPU: CUDA driver is missing or too old (cudaErrorInsufficientDriver)"), or that the
/// backend is not built. Never throws.
std::string cuda_device_report();

/// Number of usable GPUs (0 when none, or when the backend is not built).
int cuda_device_count();

}  // namespace optimus::core
