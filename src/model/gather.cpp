// Gathering shards into canonical tensors.
#include "model/gather.h"

#include <stdexcept>

namespace optimus::model {

std::vector<float> gather_canonical(const ParamTensor& t, const float* data, comm::Communicator& comm,
                                    const SpecOfRank& spec_of) {
  const int64_t n = t.spec.local_numel();
  std::vector<float> all(static_cast<size_t>(n) * static_cast<size_t>(comm.size()));
  comm.all_gather(all.data(), data, n);
  std::vector<float> full(static_cast<size_t>(t.spec.canonical.numel()));
  for (int k = 0; k < comm.size(); ++k) {
    const ShardSpec spec = spec_of(t.info, k);
    if (spec.local_numel() != n)
      throw std::logic_error("gather_canonical: shards of " + t.info.name + " differ in size");
    if (!spec.owner) continue;  // a replicated copy: its owner's copy is the one placed
    place_in_canonical(full.data(), all.data() + static_cast<size_t>(k) * static_cast<size_t>(n), spec);
  }
  return full;
}

}  // namespace optimus::model
