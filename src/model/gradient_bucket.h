// Summing parameter gradients over a group of ranks in one call: the tensors a predicate picks are
// packed into a flat bucket, all-reduced once and unpacked. 2D sums its column-replicated
// parameters' gradients down the grid's column this way; 1D with sequence parallelism sums its
// LayerNorms' over the p ranks (each rank saw only its slice of the rows). Data parallelism sums
// every gradient over the model copies with GradientSum: block by block during the backward pass,
// each block's gradients one range of the flat gradient buffer, summed in place.
#pragma once

#include <functional>
#include <utility>
#include <vector>

#include "comm/communicator.h"
#include "core/context.h"
#include "model/gradient_listener.h"
#include "model/param_set.h"
#include "model/params.h"

namespace optimus::model {

/// Every gradient of a tensor whose kind `which` picks becomes its sum over `group`: the tensors, in
/// their order, are packed into one bucket, all-reduced once and unpacked. The bucket is recorded as
/// communication memory while it lives. Collective over group.
void sum_gradients(ParamSet& params, const core::Context& ctx, comm::Communicator& group,
                   const std::function<bool(ParamKind)>& which);

/// Sums a stage's gradients over `group` (the data-parallel group: the ranks that hold the same
/// shard in the other model copies) as its backward pass completes them. The buckets are the
/// blocks: block l's tensors are consecutive in ParamSet::grads, so block_ready(l) starts one
/// all-reduce of that range, in place; all_ready() starts the rest (wte and wpe, ln_f) and waits
/// for everything. With `overlap` the all-reduces stay in flight while the backward pass goes on
/// (each block_ready also polls the ones in flight, which is what moves them on in Open MPI);
/// without, each is waited for as soon as it is started. The calls and the sums are the same, so
/// the gradients are bitwise the same either way. Install it with the stage's
/// set_gradient_listener; collective over group in each backward pass that ends a step.
class GradientSum final : public GradientListener {
 public:
  GradientSum(ParamSet& params, comm::Communicator& group, bool overlap);

  void block_ready(int l) override;
  void all_ready() override;

  /// The time spent inside block_ready and all_ready (starting the sums, polling and waiting for
  /// them) since the last call, in ms: what the sums cost the backward pass.
  double take_blocked_ms();

 private:
  /// Starts the all-reduce of tensors [first, last); waits for it without overlap.
  void start(size_t first, size_t last);

  ParamSet& params_;
  comm::Communicator& group_;
  bool overlap_;
  std::vector<std::pair<size_t, size_t>> blocks_;  // block l's tensors [first, last)
  std::vector<std::pair<size_t, size_t>> rest_;    // the tensors outside the blocks, as runs
  std::vector<comm::Request> in_flight_;
  double blocked_ms_ = 0;
};

}  // namespace optimus::model
