// The part of a stage every stage has alike.
#include "model/stage.h"

namespace optimus::model {

Stage::Stage(const GPTConfig& config, const core::Context& ctx, uint32_t seed, Recompute recompute)
    : config_(config), ctx_(ctx), seed_(seed), recompute_(recompute) {
  config_.validate();
}

void Stage::create_params(const std::function<ShardSpec(const ParamInfo&)>& spec) {
  params_ = ParamSet::create(config_, ctx_, spec, seed_);
  weights_ = ModelParams::values(params_);
  grads_ = ModelParams::grads(params_);
}

}  // namespace optimus::model
