// Flat buckets, one all-reduce each, for the gradients a predicate picks.
#include "model/gradient_bucket.h"

#include <algorithm>
#include <utility>
#include <vector>

#include "core/ops.h"
#include "core/tensor.h"

namespace optimus::model {

void sum_gradients(ParamSet& params, const core::Context& ctx, comm::Communicator& group,
                   const std::function<bool(ParamKind)>& which, int64_t bucket_floats) {
  // The buckets: runs of picked tensors [first, last) whose sizes add up to at most the limit.
  std::vector<std::pair<size_t, size_t>> buckets;
  int64_t largest = 0, filled = 0;
  for (size_t k = 0; k < params.tensors.size(); ++k) {
    if (!which(params.tensors[k].info.kind)) continue;
    const int64_t n = params.tensors[k].grad.numel();
    if (buckets.empty() || (bucket_floats > 0 && filled > 0 && filled + n > bucket_floats)) {
      buckets.emplace_back(k, k);
      filled = 0;
    }
    buckets.back().second = k + 1;
    filled += n;
    largest = std::max(largest, filled);
  }
  core::Buffer bucket(*ctx.ledger, core::MemoryCategory::communication, {largest}, ctx.device);
  for (const auto& [first, last] : buckets) {
    int64_t at = 0;
    for (size_t k = first; k < last; ++k) {
      const auto& t = params.tensors[k];
      if (!which(t.info.kind)) continue;
      core::copy_on_device(ctx, bucket.data() + at, t.grad.data(), t.grad.numel());
      at += t.grad.numel();
    }
    group.all_reduce(bucket.data(), at);
    at = 0;
    for (size_t k = first; k < last; ++k) {
      auto& t = params.tensors[k];
      if (!which(t.info.kind)) continue;
      core::copy_on_device(ctx, t.grad.data(), bucket.data() + at, t.grad.numel());
      at += t.grad.numel();
    }
  }
}

}  // namespace optimus::model
