// One flat bucket, one all-reduce, for the gradients a predicate picks; and the data-parallel sum
// of whole blocks, started as the backward pass finishes them.
#include "model/gradient_bucket.h"

#include <chrono>
#include <utility>
#include <vector>

#include "core/ops.h"
#include "core/tensor.h"

namespace optimus::model {

void sum_gradients(ParamSet& params, const core::Context& ctx, comm::Communicator& group,
                   const std::function<bool(ParamKind)>& which) {
  int64_t total = 0;
  bool any = false;
  for (const auto& t : params.tensors) {
    if (which(t.info.kind)) total += t.grad.numel(), any = true;
  }
  if (!any) return;
  core::Buffer bucket(*ctx.ledger, core::MemoryCategory::communication, {total}, ctx.device);
  int64_t at = 0;
  for (const auto& t : params.tensors) {
    if (!which(t.info.kind)) continue;
    core::copy_on_device(ctx, bucket.data() + at, t.grad.data(), t.grad.numel());
    at += t.grad.numel();
  }
  group.all_reduce(bucket.data(), total);
  at = 0;
  for (auto& t : params.tensors) {
    if (!which(t.info.kind)) continue;
    core::copy_on_device(ctx, t.grad.data(), bucket.data() + at, t.grad.numel());
    at += t.grad.numel();
  }
}

GradientSum::GradientSum(ParamSet& params, comm::Communicator& group, bool overlap)
    : params_(params), group_(group), overlap_(overlap) {
  // Runs of consecutive tensors with the same layer: one per block, and wte+wpe, ln_f outside them.
  const auto& tensors = params.tensors;
  for (size_t first = 0; first < tensors.size();) {
    size_t last = first + 1;
    while (last < tensors.size() && tensors[last].info.layer == tensors[first].info.layer) ++last;
    const int layer = tensors[first].info.layer;
    if (layer < 0) {
      rest_.emplace_back(first, last);
    } else {
      if (blocks_.size() <= static_cast<size_t>(layer)) blocks_.resize(static_cast<size_t>(layer) + 1);
      blocks_[static_cast<size_t>(layer)] = {first, last};
    }
    first = last;
  }
}

void GradientSum::start(size_t first, size_t last) {
  const auto [offset, count] = params_.grad_range(first, last);
  in_flight_.push_back(group_.start_all_reduce(params_.grads.data() + offset, count));
  if (!overlap_) in_flight_.back().wait();
}

namespace {

double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

void GradientSum::block_ready(int l) {
  const auto t0 = std::chrono::steady_clock::now();
  for (auto& r : in_flight_) r.done();  // moves the earlier blocks' sums on
  const auto [first, last] = blocks_.at(static_cast<size_t>(l));
  start(first, last);
  blocked_ms_ += ms_since(t0);
}

void GradientSum::all_ready() {
  const auto t0 = std::chrono::steady_clock::now();
  for (const auto& [first, last] : rest_) start(first, last);
  for (auto& r : in_flight_) r.wait();
  in_flight_.clear();
  blocked_ms_ += ms_since(t0);
}

double GradientSum::take_blocked_ms() {
  return std::exchange(blocked_ms_, 0.0);
}

}  // namespace optimus::model
