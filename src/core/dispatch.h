// Backend dispatch for the ops: every op's CPU implementation in core/cpu/ starts with
//   OPTIMUS_DISPATCH(ctx, cuda::op_name(ctx, ...the same arguments...));
// which, for a CUDA context, runs the CUDA implementation (core/cuda/cuda_ops.h) and returns; for a
// CPU context it does nothing and the CPU code below it runs. In a build without the CUDA backend
// the CUDA call is not compiled, and a CUDA context (which such a build cannot make) gets one clear
// sentence instead of device memory being read on the host.
#pragma once

#include <stdexcept>
#include <string>

#include "core/context.h"

namespace optimus::core::detail {

[[noreturn]] inline void no_cuda_backend(const char* op) {
  throw std::runtime_error(std::string(op) +
                           ": got a CUDA context, but this build has no CUDA backend (configured with "
                           "OPTIMUS_CUDA=OFF or without a CUDA toolkit); rebuild with the CUDA toolkit or use the CPU "
                           "device");
}

}  // namespace optimus::core::detail

#if defined(OPTIMUS_WITH_CUDA)
#define OPTIMUS_DISPATCH(ctx, cuda_call)                 \
  do {                                                   \
    if ((ctx).device == ::optimus::core::Device::cuda) { \
      cuda_call;                                         \
      return;                                            \
    }                                                    \
  } while (0)
#else
#define OPTIMUS_DISPATCH(ctx, cuda_call)                                                                   \
  do {                                                                                                     \
    if ((ctx).device == ::optimus::core::Device::cuda) ::optimus::core::detail::no_cuda_backend(__func__); \
  } while (0)
#endif
