// Stand-ins for the CUDA backend in a CPU-only build: they say that it is not built. (The ops and
// the copy helpers need none: core/dispatch.h compiles their CUDA calls only with the backend.)
#include <stdexcept>
#include <string>

#include "core/context.h"
#include "core/cuda/device_memory.h"

namespace optimus::core {

bool cuda_backend_built() {
  return false;
}
int cuda_device_count() {
  return 0;
}
std::vector<std::string> cuda_bus_ids() {
  return {};
}
std::string cuda_device_report() {
  return "no GPU: this build has no CUDA backend (configured with OPTIMUS_CUDA=OFF or no CUDA toolkit found)";
}
Context cuda_context(MemoryLedger&, int device_index, CudaOptions) {
  throw std::runtime_error("cuda_context(" + std::to_string(device_index) +
                           "): this build has no CUDA backend (configured with OPTIMUS_CUDA=OFF or without a CUDA "
                           "toolkit); rebuild with the CUDA toolkit or use the CPU device");
}
void* device_alloc_zeroed(size_t) {
  throw std::runtime_error("a CUDA buffer was requested but this build has no CUDA backend; use --device cpu");
}
void device_zero(void*, size_t) {
  throw std::runtime_error("a CUDA buffer was requested but this build has no CUDA backend; use --device cpu");
}
void device_free(void*) noexcept {}
int device_current() {
  throw std::runtime_error("a CUDA buffer was requested but this build has no CUDA backend; use --device cpu");
}

}  // namespace optimus::core
