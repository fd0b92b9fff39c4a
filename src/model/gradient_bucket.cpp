// One flat bucket, one all-reduce, for the gradients a predicate picks.
#include "model/gradient_bucket.h"

#include "core/ops.h"
#include "core/tensor.h"

namespace optimus::model {

void sum_gradients(ParamSet& params, const core::Context& ctx, comm::Communicator& group,
                   const std::function<bool(ParamKind)>& which) {
  int64_t n = 0;
  for (const auto& t : params.tensors)
    if (which(t.info.kind)) n += t.grad.numel();
  core::Buffer bucket(*ctx.ledger, core::MemoryCategory::communication, {n}, ctx.device);
  int64_t at = 0;
  for (const auto& t : params.tensors) {
    if (!which(t.info.kind)) continue;
    core::copy_on_device(ctx, bucket.data() + at, t.grad.data(), t.grad.numel());
    at += t.grad.numel();
  }
  group.all_reduce(bucket.data(), n);
  at = 0;
  for (auto& t : params.tensors) {
    if (!which(t.info.kind)) continue;
    core::copy_on_device(ctx, t.grad.data(), bucket.data() + at, t.grad.numel());
    at += t.grad.numel();
  }
}

}  // namespace optimus::model
