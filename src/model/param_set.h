// A stage's parameters: for each canonical parameter, the shard this rank holds (its spec), its
// values and its gradients, in the canonical order. Initialisation draws each local element's
// canonical value (model/params.h), so every layout starts from the same model.
#pragma once

#include <functional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "comm/communicator.h"
#include "core/context.h"
#include "core/tensor.h"
#include "model/params.h"
#include "model/shard.h"

namespace optimus::model {

struct ParamTensor {
  ParamInfo info;
  ShardSpec spec;
  core::Buffer value;     // local shard, spec.local_shape()
  core::BufferView grad;  // same shape, its place in ParamSet::grads
};

struct ParamSet {
  std::vector<ParamTensor> tensors;  // canonical order
  /// Each tensor's place in `tensors`, by canonical name: made once by create, so a lookup does
  /// not grow with the model (a search of 12·L + 5 names at every lookup is quadratic in L).
  std::unordered_map<std::string, size_t> position;
  core::Context ctx;  // the backend and ledger the tensors live on
  /// Every tensor's gradient, one after another in canonical order: one buffer, so zeroing and
  /// scaling are one op each, and a block's gradients (its tensors are consecutive in the
  /// canonical order) are one range that data parallelism sums in place (grad_range).
  core::Buffer grads;

  /// One tensor per canonical parameter of `config`, sharded by `spec_of`, allocated on the
  /// context's device and ledger (values as parameters, gradients as gradients), and initialised
  /// from Philox under `seed` (for a GPU drawn on the host, then copied: the same bits on both) —
  /// or, with InitialValues::loaded, left unset for a checkpoint's values.
  static ParamSet create(const GPTConfig& config, const core::Context& ctx,
                         const std::function<ShardSpec(const ParamInfo&)>& spec_of, uint32_t seed,
                         InitialValues values = InitialValues::drawn);

  /// The tensor of a canonical name, through `position`; std::out_of_range for a name the model
  /// does not have. Stages resolve their names once (model/named_params.h).
  ParamTensor& at(const std::string& name);
  const ParamTensor& at(const std::string& name) const;

  /// The range of `grads` that holds tensors [first, last): {offset, count} in floats.
  std::pair<int64_t, int64_t> grad_range(size_t first, size_t last) const;

  void zero_grads();
  /// Σ grad² over the shards this rank owns (the rank's share of the squared gradient norm).
  double owned_grad_sum_squares(const core::Context& ctx) const;
  /// Multiplies every gradient by s.
  void scale_grads(const core::Context& ctx, float s);
};

/// values (spec.local_shape(), host memory) = the initial value of each local element's canonical
/// element, 0 in padding: run by run (model::ShardRows), the rows in parallel. What ParamSet::create
/// draws into each shard, the same in every layout; with ShardSpec::whole, the canonical tensor.
void draw_shard(float* values, const ParamInfo& info, const ShardSpec& spec, uint32_t seed);

/// Clips the gradients to a global norm of max_norm as torch.nn.utils.clip_grad_norm_ does
/// (scaled by max_norm / (norm + 1e-6) when that is below 1; max_norm <= 0: no clipping) and
/// returns the norm before clipping. The norm counts every canonical element once: each rank's
/// owned shards, summed over `model_group`, the ranks that hold one model between them (one
/// all-reduce of a double), or nullptr when one rank holds the whole model.
float clip_grad_norm(ParamSet& params, const core::Context& ctx, comm::Communicator* model_group, float max_norm);

}  // namespace optimus::model
