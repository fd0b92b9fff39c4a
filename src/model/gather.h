// Gather and scatter between shards and canonical tensors, for any layout: the tests
// compare stages on canonical tensors, and checkpoints are written and read in canonical form.
// Canonical tensors are host vectors. A shard may live on a GPU: the versions that take a Context
// stage it through host memory, and the gathers run on a host communicator (the World's MPI one),
// whatever communicator the model computes with.
#pragma once

#include <functional>
#include <vector>

#include "comm/communicator.h"
#include "core/context.h"
#include "model/param_set.h"

namespace optimus::model {

/// The shard spec of parameter `info` on rank `rank` of the layout.
using SpecOfRank = std::function<ShardSpec(const ParamInfo& info, int rank)>;

/// The canonical tensor of `t` on every rank of `host_comm`: each rank's local `data` (a buffer
/// shaped like t's shard: its value, gradient or an optimizer moment) is all-gathered and placed
/// by its rank's spec; of replicated copies, the owner's is placed. Every rank's shard of a tensor
/// has the same size in the layouts of this project. `data` is in the memory of `ctx` (copied to
/// the host first when that is a GPU); `host_comm` takes host buffers (an MpiCommunicator). A meta
/// `ctx` has no values to gather: a core::ConfigError says so.
std::vector<float> gather_canonical(const core::Context& ctx, const ParamTensor& t, const float* data,
                                    comm::Communicator& host_comm, const SpecOfRank& spec_of);
/// The same for `data` in host memory.
std::vector<float> gather_canonical(const ParamTensor& t, const float* data, comm::Communicator& host_comm,
                                    const SpecOfRank& spec_of);

/// The canonical tensor of `t` on rank `root` of `host_comm` only (an empty vector elsewhere), for
/// writing a checkpoint: the owners' shards are broadcast one at a time and the root places each.
/// A rank holds one shard besides its own (the root the canonical tensor too), where
/// gather_canonical holds every rank's shard and the canonical tensor on every rank (and MPI's
/// all-gather may take a buffer of that size more). `data` and `ctx` as for gather_canonical.
std::vector<float> gather_canonical_on(int root, const core::Context& ctx, const ParamTensor& t, const float* data,
                                       comm::Communicator& host_comm, const SpecOfRank& spec_of);

/// local (spec.local_shape(), in the memory of `ctx`) = the elements of `canonical_data` (the full
/// canonical tensor, host memory) that the spec holds; 0 in padding. For loading checkpoints.
void scatter_to_shard(const core::Context& ctx, float* local, const float* canonical_data, const ShardSpec& spec);

}  // namespace optimus::model
