// Backend dispatch for the ops: every op's CPU implementation in core/cpu/ starts with
//   OPTIMUS_DISPATCH(ctx, cost, cuda::op_name(ctx, ...the same arguments...));
// where `cost` is the op's OpCost from its sizes (core/op_ledger.h). It records the cost in the
// context's op ledger, when it has one, on every device; then a meta context returns (its ops only
// record), a CUDA context runs the CUDA implementation (core/cuda/cuda_ops.h) and returns, and a
// CPU context falls through to the CPU code below it, timed into the context's clock when it has
// one (from the dispatch to the end of the op's function). In a build without the CUDA backend the CUDA
// call is not compiled, and a CUDA context (which such a build cannot make) gets one clear sentence
// instead of device memory being read on the host.
#pragma once

#include <stdexcept>
#include <string>

#include "core/context.h"
#include "core/op_ledger.h"

namespace optimus::core {

/// Adds `cost` to the context's op ledger (nothing when it has none), and returns the timer of the
/// op's CPU code: it adds the time to the end of the caller's scope to the context's clock, when
/// the context is a CPU one with a clock.
[[nodiscard]] inline OpStopwatch record_op(const Context& ctx, const OpCost& cost) {
  if (ctx.ops != nullptr) ctx.ops->record(cost);
  return OpStopwatch(ctx.device == Device::cpu ? ctx.clock : nullptr, cost.kind);
}

/// The same context without its op ledger and clock: for the ops that an op's CPU code calls after
/// it has recorded (and is timing) its whole cost itself (attention's products, layernorm_backward's
/// pieces).
inline Context unrecorded(const Context& ctx) {
  Context quiet = ctx;
  quiet.ops = nullptr;
  quiet.clock = nullptr;
  return quiet;
}

namespace detail {

[[noreturn]] inline void no_cuda_backend(const char* op) {
  throw std::runtime_error(std::string(op) +
                           ": got a CUDA context, but this build has no CUDA backend (configured with "
                           "OPTIMUS_CUDA=OFF or without a CUDA toolkit); rebuild with the CUDA toolkit or use the CPU "
                           "device");
}

}  // namespace detail

}  // namespace optimus::core

/// A CUDA context runs cuda_call and returns from the calling function; any other falls through.
#if defined(OPTIMUS_WITH_CUDA)
#define OPTIMUS_DISPATCH_CUDA(ctx, cuda_call)            \
  do {                                                   \
    if ((ctx).device == ::optimus::core::Device::cuda) { \
      cuda_call;                                         \
      return;                                            \
    }                                                    \
  } while (0)
#else
#define OPTIMUS_DISPATCH_CUDA(ctx, cuda_call)                                                              \
  do {                                                                                                     \
    if ((ctx).device == ::optimus::core::Device::cuda) ::optimus::core::detail::no_cuda_backend(__func__); \
  } while (0)
#endif

/// Records the op's cost, then: meta returns, CUDA runs cuda_call and returns, the CPU falls through
/// (timed to the end of the function). A statement of the function's body, at its top: it declares
/// the timer.
#define OPTIMUS_DISPATCH(ctx, cost, cuda_call)                                                         \
  const ::optimus::core::OpStopwatch optimus_op_stopwatch = ::optimus::core::record_op((ctx), (cost)); \
  if ((ctx).device == ::optimus::core::Device::meta) return;                                           \
  OPTIMUS_DISPATCH_CUDA(ctx, cuda_call)
