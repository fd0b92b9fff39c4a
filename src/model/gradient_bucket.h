// Summing parameter gradients over a group of ranks in a few calls: the tensors a predicate picks
// are packed into flat buckets, each all-reduced once and unpacked. 2D sums its column-replicated
// parameters' gradients down the grid's column this way; 1D with sequence parallelism sums its
// LayerNorms' over the p ranks (each rank saw only its slice of the rows); data parallelism sums
// every gradient over the model copies.
#pragma once

#include <functional>

#include "comm/communicator.h"
#include "core/context.h"
#include "model/param_set.h"
#include "model/params.h"

namespace optimus::model {

/// Every gradient of a tensor whose kind `which` picks becomes its sum over `group`: the tensors, in
/// their order, are packed into buckets of at most `bucket_floats` floats (0: one bucket for all; a
/// tensor larger than the limit goes alone), one all-reduce each. The bucket is recorded as
/// communication memory while it lives. Collective over group.
void sum_gradients(ParamSet& params, const core::Context& ctx, comm::Communicator& group,
                   const std::function<bool(ParamKind)>& which, int64_t bucket_floats = 0);

}  // namespace optimus::model
