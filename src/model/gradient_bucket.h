// Summing parameter gradients over a group of ranks in one call: the tensors a predicate picks are
// packed into one flat bucket, all-reduced once, and unpacked. 2D sums its column-replicated
// parameters' gradients down the grid's column this way; 1D with sequence parallelism sums its
// LayerNorms' over the p ranks (each rank saw only its slice of the rows).
#pragma once

#include <functional>

#include "comm/communicator.h"
#include "core/context.h"
#include "model/param_set.h"
#include "model/params.h"

namespace optimus::model {

/// Every gradient of a tensor whose kind `which` picks becomes its sum over `group`, by one
/// all-reduce of a bucket recorded as communication memory while it lives. Collective over group.
void sum_gradients(ParamSet& params, const core::Context& ctx, comm::Communicator& group,
                   const std::function<bool(ParamKind)>& which);

}  // namespace optimus::model
