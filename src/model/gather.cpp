// Gathering shards into canonical tensors, and scattering them back, through host memory.
#include "model/gather.h"

#include <algorithm>
#include <stdexcept>

#include "core/errors.h"

namespace optimus::model {

std::vector<float> gather_canonical(const core::Context& ctx, const ParamTensor& t, const float* data,
                                    comm::Communicator& host_comm, const SpecOfRank& spec_of) {
  if (ctx.device == core::Device::cpu) return gather_canonical(t, data, host_comm, spec_of);
  if (ctx.device == core::Device::meta) {
    throw core::ConfigError("gather_canonical: " + t.info.name +
                            " is on a meta context, which holds no values to gather (a meta run cannot write a "
                            "checkpoint or be compared tensor by tensor); use a CPU or CUDA context");
  }
  std::vector<float> local(static_cast<size_t>(t.spec.local_numel()));
  core::copy_to_host(ctx, local.data(), data, t.spec.local_numel());
  return gather_canonical(t, local.data(), host_comm, spec_of);
}

std::vector<float> gather_canonical(const ParamTensor& t, const float* data, comm::Communicator& host_comm,
                                    const SpecOfRank& spec_of) {
  const int64_t n = t.spec.local_numel();
  std::vector<float> all(static_cast<size_t>(n) * static_cast<size_t>(host_comm.size()));
  host_comm.all_gather(all.data(), data, n);
  std::vector<float> full(static_cast<size_t>(t.spec.canonical.numel()));
  for (int k = 0; k < host_comm.size(); ++k) {
    const ShardSpec spec = spec_of(t.info, k);
    if (spec.local_numel() != n)
      throw std::logic_error("gather_canonical: shards of " + t.info.name + " differ in size");
    if (!spec.owner) continue;  // a replicated copy: its owner's copy is the one placed
    place_in_canonical(full.data(), all.data() + static_cast<size_t>(k) * static_cast<size_t>(n), spec);
  }
  return full;
}

std::vector<float> gather_canonical_on(int root, const core::Context& ctx, const ParamTensor& t, const float* data,
                                       comm::Communicator& host_comm, const SpecOfRank& spec_of) {
  if (ctx.device == core::Device::meta) return gather_canonical(ctx, t, data, host_comm, spec_of);  // its error
  const int64_t n = t.spec.local_numel();
  std::vector<float> host;  // this rank's shard, copied to the host when it lives on a GPU
  const float* mine = data;
  if (ctx.device != core::Device::cpu) {
    host.resize(static_cast<size_t>(n));
    core::copy_to_host(ctx, host.data(), data, n);
    mine = host.data();
  }
  const bool is_root = host_comm.rank() == root;
  std::vector<float> full(is_root ? static_cast<size_t>(t.spec.canonical.numel()) : 0), shard;
  for (int k = 0; k < host_comm.size(); ++k) {
    const ShardSpec spec = spec_of(t.info, k);
    if (spec.local_numel() != n)
      throw std::logic_error("gather_canonical_on: shards of " + t.info.name + " differ in size");
    if (!spec.owner) continue;  // a replicated copy: its owner's copy is the one placed
    const float* from = mine;
    if (k != root) {  // the root's own shard needs no broadcast
      shard.resize(static_cast<size_t>(n));
      if (k == host_comm.rank()) std::copy_n(mine, n, shard.data());
      host_comm.broadcast(shard.data(), n, k);
      from = shard.data();
    }
    if (is_root) place_in_canonical(full.data(), from, spec);
  }
  return full;
}

void scatter_to_shard(const core::Context& ctx, float* local, const float* canonical_data, const ShardSpec& spec) {
  if (ctx.device == core::Device::cpu) {
    scatter_from_canonical(local, canonical_data, spec);
    return;
  }
  std::vector<float> host(static_cast<size_t>(spec.local_numel()));
  scatter_from_canonical(host.data(), canonical_data, spec);
  core::copy_to_device(ctx, local, host.data(), spec.local_numel());
}

}  // namespace optimus::model
