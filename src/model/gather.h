// Gather and scatter between shards and canonical tensors, for any layout (DESIGN §6): the tests
// compare stages on canonical tensors, and checkpoints are written and read in canonical form.
#pragma once

#include <functional>
#include <vector>

#include "comm/communicator.h"
#include "model/param_set.h"

namespace optimus::model {

/// The shard spec of parameter `info` on rank `rank` of the layout.
using SpecOfRank = std::function<ShardSpec(const ParamInfo& info, int rank)>;

/// The canonical tensor of `t` on every rank of `comm`: each rank's local `data` (a buffer shaped
/// like t's shard: its value, gradient or an optimizer moment) is all-gathered and placed by its
/// rank's spec; of replicated copies, the owner's is placed. Every rank's shard of a tensor has
/// the same size in the layouts of this project.
std::vector<float> gather_canonical(const ParamTensor& t, const float* data, comm::Communicator& comm,
                                    const SpecOfRank& spec_of);

}  // namespace optimus::model
