// Backend dispatch for the ops: every op's CPU implementation starts with OPTIMUS_CPU_OP(ctx),
// which hands a CUDA context to the CUDA backend. Until that backend has the op, the call fails
// with one clear sentence instead of reading device memory on the host.
#pragma once

#include <stdexcept>
#include <string>

#include "core/context.h"

namespace optimus::core::detail {

[[noreturn]] inline void no_cuda_op(const char* op) {
  throw std::runtime_error(std::string(op) +
                           ": this op has no CUDA implementation in this build; "
                           "run with the CPU device");
}

}  // namespace optimus::core::detail

#define OPTIMUS_CPU_OP(ctx)                                                                          \
  do {                                                                                               \
    if ((ctx).device != ::optimus::core::Device::cpu) ::optimus::core::detail::no_cuda_op(__func__); \
  } while (0)
