// A stage's parameters: for each canonical parameter, the shard this rank holds (its spec), its
// values and its gradients, in the canonical order. Initialisation draws each local element's
// canonical value (model/params.h), so every layout starts from the same model.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "core/context.h"
#include "core/tensor.h"
#include "model/params.h"
#include "model/shard.h"

namespace optimus::model {

struct ParamTensor {
  ParamInfo info;
  ShardSpec spec;
  core::Buffer value;  // local shard, spec.local_shape()
  core::Buffer grad;   // same shape
};

struct ParamSet {
  std::vector<ParamTensor> tensors;  // canonical order
  core::Context ctx;                 // the backend and ledger the tensors live on

  /// One tensor per canonical parameter of `config`, sharded by `spec_of`, allocated on the
  /// context's device and ledger (values as parameters, gradients as gradients), and initialised
  /// from Philox under `seed` (drawn on the host, then copied to the device: the same bits on both).
  static ParamSet create(const GPTConfig& config, const core::Context& ctx,
                         const std::function<ShardSpec(const ParamInfo&)>& spec_of, uint32_t seed);

  ParamTensor& at(const std::string& name);
  const ParamTensor& at(const std::string& name) const;
  float* value(const std::string& name) { return at(name).value.data(); }
  float* grad(const std::string& name) { return at(name).grad.data(); }

  void zero_grads();
  /// Σ grad² over the shards this rank owns (the rank's share of the squared gradient norm).
  double owned_grad_sum_squares(const core::Context& ctx) const;
  /// Multiplies every gradient by s.
  void scale_grads(const core::Context& ctx, float s);
};

}  // namespace optimus::model
