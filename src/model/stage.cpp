// The part of a stage every stage has alike.
#include "model/stage.h"

#include "model/gradient_listener.h"

namespace optimus::model {

Stage::Stage(const GPTConfig& config, const core::Context& ctx, uint32_t seed, const StageOptions& options)
    : config_(config), ctx_(ctx), seed_(seed), recompute_(options.recompute), values_(options.values) {
  config_.validate();
}

void Stage::create_params(const std::function<ShardSpec(const ParamInfo&)>& spec) {
  params_ = ParamSet::create(config_, ctx_, spec, seed_, values_);
  weights_ = ModelParams::values(params_);
  grads_ = ModelParams::grads(params_);
}

core::DropoutSpec Stage::dropout_spec(int layer, core::DropoutSite site) const {
  return model::dropout_spec(config_, acts_, seed_, layer, site);
}

float* Stage::residual(int l) const {
  return l == 0 ? acts_.encoded.data() : acts_.outputs[static_cast<size_t>(l - 1)].data();
}

void Stage::block_ready(int l) const {
  if (listener_ != nullptr && acts_.last_part) listener_->block_ready(l);
}

void Stage::all_ready() const {
  if (listener_ != nullptr && acts_.last_part) listener_->all_ready();
}

}  // namespace optimus::model
